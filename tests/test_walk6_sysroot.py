"""Walk 6, W59: a --sysroot (or NODEWEAVE_SYSROOT) that is no captured tree.

A project folder given by mistake, or /proc itself, was read as a machine with no GPU, no interface and no limits,
and doctor gave it a clean bill (exit 0). One rule (the entrypoint's ``read_sysroot``) judges every way a sysroot
is given: ``doctor --sysroot``, ``NODEWEAVE_SYSROOT`` to doctor and to the entrypoint, ``init --sysroot``; the
accepted form names ``doctor --capture``, not nodeweave's own tests folder. Fails before the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_run import entrypoint, in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE

CAPTURED = Path(__file__).resolve().parent / "fixtures" / "synthetic" / "cpu-only"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\n"
                                             "launcher: {script: train.py}\n")
    (tmp_path / "train.py").write_text("print('training')\n")
    return tmp_path


@pytest.mark.parametrize("how", ["doctor", "doctor-env", "init"])
@pytest.mark.parametrize("where", ["project", "/proc", "/sys/class"])
def test_a_folder_that_is_no_captured_tree_is_refused(project, capsys, monkeypatch, how, where):
    root = str(project) if where == "project" else where
    if how == "doctor-env":
        monkeypatch.setenv("NODEWEAVE_SYSROOT", root)
        argv = ["doctor"]
    else:
        argv = [how, "--sysroot", root] + (["--dry-run", "--out", "fresh.yaml"] if how == "init" else [])
    monkeypatch.chdir(project)
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and root in line and "doctor --capture" in line and "tests/" not in line, line


def test_the_entrypoint_refuses_it_too(project):
    done = entrypoint("--explain", "--", "train.py", env={"PATH": "/usr/bin:/bin", "NODEWEAVE_SYSROOT": str(project),
                                                          "NODE_RANK": "0", "NNODES": "1"})
    assert done.returncode == EXIT_USAGE and "holds no proc/ or sys/" in done.stderr, done.stderr


def test_a_captured_tree_and_the_live_root_are_still_read(capsys):
    code, out, err = run_cli(capsys, "doctor", "--sysroot", str(CAPTURED))
    assert code == 0, err
