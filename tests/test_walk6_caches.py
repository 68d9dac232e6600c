"""Walk 6, caches: W65 (the zipapp cache, shared by every checkout and venv of a user, handed back an archive of
other sources: a hit is now checked against each input's content and the builder) and W66 (NODEWEAVE_CACHE_DIR
relative or not a folder is refused in one line, exit 2, for every cache: one cache_root, one start-up rule)."""

from __future__ import annotations

import os
import shutil

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE
from nodeweave.targets.zipapp import archive, package_root
from nodeweave.targets.zipapp.cache import cache_file, cached_build


@pytest.fixture
def package(tmp_path, monkeypatch):
    monkeypatch.setenv("NODEWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "src" / "nodeweave"
    shutil.copytree(package_root(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _same_stamp_other_content(path):
    """Another content of the same size and mtime: what a copy with kept times, a restore or a second checkout
    at the same path can leave, and what (size, mtime_ns) could not tell apart."""
    info = path.stat()
    data = path.read_bytes()
    at = next(i for i in range(data.index(b'"""') + 3, len(data)) if data[i:i + 1].isalpha())
    # the module docstring's first letter, its case swapped: still valid Python
    other = data[:at] + data[at:at + 1].swapcase() + data[at + 1:]
    assert len(other) == len(data) and other != data
    path.write_bytes(other)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.parametrize("module", ["entrypoint/hostport.py", "entrypoint/explain.py", "__init__.py"])
def test_a_cached_zipapp_is_always_what_a_fresh_build_makes(package, module):
    cached_build(package)
    _same_stamp_other_content(package / module)
    assert cached_build(package) == archive.build(package)


def test_a_record_of_another_builder_is_not_used(package):
    cached_build(package)
    entry = cache_file(package)
    record = entry.read_text().replace('"builder": "', '"builder": "0', 1)
    entry.write_text(record)
    stale = entry.with_suffix(".pyz")
    stale.write_bytes(stale.read_bytes() + b"\0")  # what another version's build left
    assert cached_build(package) == archive.build(package)


@pytest.mark.parametrize("value, said", [
    ("relative/dir", "is a relative path"), ("~/cache", "starts with a ~ no shell expanded"),
    ("{tmp}/train.py", "is a file, not a folder"), ("/dev/null", "is a device, a pipe or a socket, not a folder"),
    ("{tmp}/train.py/x", "goes through a file")])
@pytest.mark.parametrize("argv", [["render", "all", "--check"], ["render", "entrypoint", "--out", "out"],
                                  ["validate"]])
def test_a_cache_dir_that_cannot_hold_a_cache_is_refused(capsys, tmp_path, monkeypatch, value, said, argv):
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "nodeweave.yaml").write_text("name: team\nnodes: 2\nlauncher:\n  type: torchrun\n  script: train.py\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NODEWEAVE_CACHE_DIR", value.format(tmp=tmp_path))
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and line.startswith(f"nodeweave: error: NODEWEAVE_CACHE_DIR={value.format(tmp=tmp_path)}")
    assert said in line and "accepted: an absolute path of a folder" in line
    assert not (tmp_path / "relative").exists() and not (tmp_path / "out").exists()


def test_every_cache_lives_under_the_one_root(tmp_path, monkeypatch):
    from nodeweave.rendering import memo
    from nodeweave.targets.images import jinja_cache

    monkeypatch.setenv("NODEWEAVE_CACHE_DIR", str(tmp_path / "c"))
    assert jinja_cache.cache_folder() == tmp_path / "c" / "jinja"
    assert cache_file(package_root()).parent == tmp_path / "c" / "zipapp"
    assert memo.cache_root() == tmp_path / "c"

