"""Walk 6, run folders: W63 (a sweep whose points have not started yet: every reader of run folders says so in one
line, instead of a header over nothing or compare's --metric note over an empty table)."""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_ENVIRONMENT

SPEC = "name: team\nimage:\n  variant: cpu\nnodes: 2\ngpus_per_node: 1\nlauncher:\n  type: torchrun\n  script: train.py\n"
SWEEP = "20261129T130000Z-team-sweep"


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    folder = tmp_path / "runs" / SWEEP
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text(json.dumps({"job": "team", "points": []}))
    monkeypatch.chdir(tmp_path)
    return folder


def test_logs_of_a_sweep_with_no_point_says_so(capsys, sweep):
    code, out, err = run_cli(capsys, "logs", "--run", "20261129T13")
    assert code == EXIT_ENVIRONMENT and not out.strip(), (out, err)
    assert "is a sweep and none of its points has started yet" in one_line(err)


def test_runs_show_of_a_sweep_with_no_point_says_so(capsys, sweep):
    argv = ["runs", "show", "20261129T13"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and "no --metric" not in err, err
    assert "is a sweep and none of its points has started yet" in one_line(err)
    assert not out.strip(), out  # no empty table
    code, out, err = run_cli(capsys, *argv, "-o", "json")
    assert code == 0 and json.loads(out)["runs"] == []


def test_runs_compare_of_a_sweep_with_no_point_says_so_not_one_run(capsys, sweep):
    code, _, err = run_cli(capsys, "runs", "compare", "20261129T13")
    line = one_line(err)
    assert code == 2 and "nothing to compare yet" in line and "is a sweep and none of its points" in line
    assert "is one run" not in line


@pytest.mark.parametrize("argv", [["runs", "ls"], ["runs", "show", "last"], ["logs", "--run", "last"],
                                  ["dashboard", "--run", "last"]])
def test_a_reader_of_a_linked_runs_folder_says_it_reads_through_the_link(capsys, tmp_path, monkeypatch, argv):
    """W64: one rule, said: runs/ as a link to a bigger disk is never written through (run refuses it, naming
    --runs-dir) and every reader says it reads there, naming the same --runs-dir."""
    from nodeweave.cli.habits.output import runs_parent

    big = tmp_path / "bigdisk"
    big.mkdir()
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "runs").symlink_to(big)
    monkeypatch.chdir(tmp_path)
    assert runs_parent(None, tmp_path / "nodeweave.yaml", writes=False) == tmp_path / "runs"
    note = f"runs/ beside the spec is a symbolic link (to {big}): read there; a run is never written through it: " \
           f"give --runs-dir {big}"
    assert note in capsys.readouterr().err
    code, _, err = run_cli(capsys, *argv)
    assert note in err, (code, err)
    code, _, err = run_cli(capsys, "run", "--dry-run", "--", "train.py")
    assert code == 2 and f"accepted: --runs-dir {big}" in one_line(err)
