"""``render all --check`` does not rebuild the entrypoint zipapp when nothing it is made of changed (issue 43, class 4).

Building it parsed the check worker's import closure (338 modules) on every call: ~65% of
``render all --check``, 23x a bare interpreter's CPU (14x before the zipapp). The cache keeps the
bytes keyed by every input's (path, size, mtime_ns); each case below changes one kind of input in a
copy of the package and checks that the cached bytes are always what a fresh build makes.
"""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.targets.zipapp import archive, package_root
from nodeweave.targets.zipapp.cache import cache_file, cached_build


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A copy of the nodeweave package (sources only) and a cache folder of the test's own."""
    monkeypatch.setenv("NODEWEAVE_CACHE_DIR", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    copy = tmp_path / "src" / "nodeweave"
    shutil.copytree(package_root(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture
def parses(monkeypatch):
    """How many times ``ast.parse`` ran inside the archive module (each is one module of the closure)."""
    count = []
    real = ast.parse

    def counting(*args, **kwargs):
        count.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(archive.ast, "parse", counting)
    return count


def touch(path: Path, text: "str | None" = None) -> None:
    if text is not None:
        path.write_text(text)
    stamp = path.stat().st_mtime_ns + 10_000_000
    os.utime(path, ns=(stamp, stamp))


def test_a_second_build_of_an_unchanged_tree_parses_nothing(package, parses):
    first = cached_build(package)
    assert len(parses) > 10  # the check worker's closure, parsed once
    parses.clear()
    assert cached_build(package) == first
    assert parses == []
    assert first == archive.build(package)


@pytest.mark.parametrize("change", ["edit-entrypoint", "edit-closure", "new-entrypoint-module", "absent-made"])
def test_any_change_to_an_input_rebuilds(package, change):
    cached_build(package)
    if change == "edit-entrypoint":
        touch(package / "entrypoint" / "errors.py", (package / "entrypoint" / "errors.py").read_text() + "\n# x\n")
    elif change == "edit-closure":
        worker = package / "check" / "worker.py"
        touch(worker, worker.read_text() + "\n# edited\n")
    elif change == "new-entrypoint-module":
        (package / "entrypoint" / "brand_new.py").write_text("X = 1\n")
    else:
        absent = set()
        archive.build(package, absent)
        assert absent, "the closure looked for no missing module: this case tests nothing"
        made = package.parent / sorted(absent)[0]
        made.parent.mkdir(parents=True, exist_ok=True)
        made.write_text("")
    fresh = archive.build(package)
    assert cached_build(package) == fresh


def test_a_damaged_entry_is_rebuilt_and_an_unwritable_folder_only_costs_time(package, tmp_path, monkeypatch):
    good = cached_build(package)
    entry = cache_file(package)
    entry.with_suffix(".pyz").write_bytes(b"garbage")
    assert cached_build(package) == good
    entry.write_text("{not json")
    assert cached_build(package) == good
    monkeypatch.setenv("NODEWEAVE_CACHE_DIR", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("not a folder")
    assert cached_build(package) == good


def test_render_all_check_on_an_unchanged_tree_does_not_parse_the_closure(tmp_path, monkeypatch, parses):
    monkeypatch.setenv("NODEWEAVE_CACHE_DIR", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text("name: nwcache\nimage: {variant: cpu}\nnodes: 2\n"
                                             "launcher: {script: train.py}\n")
    assert main(["render", "all"]) == 0
    parses.clear()
    assert main(["render", "all", "--check"]) == 0
    assert parses == []
