"""A render writes every file and its record, or changes nothing (issue 43, class 3: a regression).

A failed or interrupted ``render all`` (a read-only folder, a full disk, Ctrl-C) left 10 to 29 of
its 31 files new and the rest old, and no ``.nodeweave/rendered.json`` for ``--prune``. Each case
here takes a tree a render wrote, changes the spec so that most files change, stops the next render
part-way, and compares every byte of the tree (hidden files included) with what was there before.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.rendering import plan as plan_module

SRC = Path(__file__).resolve().parents[1] / "src"
SPEC = """name: nwall
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""


def tree(root: Path) -> dict:
    """Every file under ``root`` (hidden ones and leftovers of a stopped write too) and its bytes; folders too."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def rendered(tmp_path, monkeypatch):
    """A project rendered once, then its spec changed so that the next render changes most files."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    assert main(["render", "all"]) == 0
    (tmp_path / "nodeweave.yaml").write_text(SPEC.replace("nodes: 2", "nodes: 3").replace("nwall", "nwall2"))
    return tmp_path


def read_only(folder: Path):
    """Make ``folder`` refuse new files, for root too: the immutable flag (root ignores mode bits)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return lambda: folder.chmod(0o755)
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("root without chattr +i: no way to make a folder read-only here")
    return lambda: subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_read_only_folder_stops_the_render_before_anything_changes(rendered, capsys):
    capsys.readouterr()
    before = tree(rendered)
    undo = read_only(rendered / "manifests" / "job")  # late in the order: compose/, images/, manifests/base first
    try:
        code = main(["render", "all"])
    finally:
        undo()
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert "nothing was written" in captured.err and len(captured.err.strip().splitlines()) == 1, captured.err
    assert "new " not in captured.out and "changed " not in captured.out  # no list of files it did not write
    assert tree(rendered) == before


@pytest.mark.parametrize("stop", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()],
                         ids=["disk-full", "ctrl-c"])
@pytest.mark.parametrize("after", [1, 5, 12])
def test_a_render_stopped_while_files_go_into_place_puts_back_what_was_there(rendered, monkeypatch, stop, after):
    before = tree(rendered)
    real = os.replace
    calls = []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == after:
            raise stop
        return real(src, dst)

    monkeypatch.setattr(plan_module.os, "replace", failing)
    with pytest.raises(type(stop)):
        plan_module.write_rendered(plan_module.render_phase(*_files(rendered), job="nwall2"))
    monkeypatch.setattr(plan_module.os, "replace", real)
    assert len(calls) >= after
    assert tree(rendered) == before


def _files(out: Path):
    from nodeweave.cli.render import _render
    from nodeweave.rendering import wanted_targets
    from nodeweave.spec import load_spec

    spec = load_spec(out / "nodeweave.yaml")
    files, owners, _ = _render(spec, out / "nodeweave.yaml", None, wanted_targets(spec), everything=True)
    return files, out, False, owners


def test_a_render_into_an_empty_folder_that_fails_leaves_it_empty(tmp_path, capsys):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifests").write_text("a file where a folder must go\n")
    before = tree(out)
    code = main(["render", "all", "--spec", str(tmp_path / "nodeweave.yaml"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "nothing was written" in err, err
    assert tree(out) == before  # no compose/, entrypoint/, images/ and no record


def test_a_render_that_succeeds_writes_every_file_and_the_record(rendered, capsys):
    capsys.readouterr()
    assert main(["render", "all"]) == 0
    captured = capsys.readouterr()
    assert "changed" in captured.out
    assert main(["render", "all", "--check"]) == 0
    assert not [p for p in rendered.rglob("*") if p.name.endswith((".tmp", ".old"))]


def test_the_cli_render_as_a_program_is_all_or_nothing_too(rendered):
    """The same through the console script: a real process, its exit code and its one line."""
    before = tree(rendered)
    undo = read_only(rendered / "images")
    try:
        done = subprocess.run([sys.executable, "-c", "import sys; from nodeweave.start import main; sys.exit(main())",
                               "render", "all"], cwd=rendered, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(SRC)})
    finally:
        undo()
    assert done.returncode == 2 and "nothing was written" in done.stderr, done.stderr
    assert tree(rendered) == before
