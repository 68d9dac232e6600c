"""On a machine without the targets' tools (no podman, docker, kubectl, ssh: the README's test command on a fresh
machine), what is wrong in the folder is still named first: a verb judges its input and notes another job's damaged
record before it asks the machine for the tool, and only then ends with exit 3 for the missing tool.

Every test here runs with PATH holding none of the tools, so none can pass because the machine happens to have one.
"""

from __future__ import annotations

import shutil

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_ENVIRONMENT, EXIT_USAGE

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {type: torchrun, script: train.py}\n"
TOOLS = ("podman", "docker", "podman-compose", "kubectl", "oc", "ssh", "rsync", "sbatch", "srun", "squeue")


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """A job folder on a machine whose PATH holds none of the targets' tools."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "no-tools").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    monkeypatch.delenv("NODEWEAVE_ENGINE", raising=False)
    assert not [tool for tool in TOOLS if shutil.which(tool)]
    return tmp_path


VERBS = [["status"], ["down"], ["stop"], ["logs"], ["exec", "--", "ls"], ["run", "--", "train.py"], ["check"], ["up"],
         ["status", "-t", "kubernetes"], ["down", "-t", "kubernetes"], ["logs", "-t", "kubernetes"]]


@pytest.mark.parametrize("argv", VERBS, ids=" ".join)
def test_a_damaged_record_of_another_job_is_named_before_the_missing_tool(capsys, bare, argv):
    (bare / ".nodeweave" / "old").mkdir(parents=True)
    (bare / ".nodeweave" / "old" / "cluster.json").write_text('{"target": "local", "made": "x"}')
    code, _, err = run_cli(capsys, *argv)
    lines = [line for line in err.splitlines() if line.strip()]
    named = [n for n, line in enumerate(lines) if "another job's record, unread: " in line
             and ".nodeweave/old/cluster.json: field made is \"x\"" in line]
    refused = [n for n, line in enumerate(lines) if line.startswith("nodeweave: error: ")]
    assert code == EXIT_ENVIRONMENT and len(named) == 1 and refused, err
    missing = lines[refused[0]]  # the tool this machine lacks, said after the record
    assert named[0] < refused[0] and ("is not on PATH" in missing or "no container engine" in missing), err


@pytest.mark.parametrize("argv", [["run", "--", "train.py"], ["check"], ["run", "-t", "kubernetes", "--", "train.py"],
                                  ["check", "-t", "kubernetes"]], ids=" ".join)
def test_a_runs_link_is_refused_with_exit_2_before_the_missing_tool(capsys, bare, tmp_path, argv):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (bare / "runs").symlink_to(elsewhere)
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "is a symbolic link" in line and f"--runs-dir {elsewhere}" in line, line
    assert list(elsewhere.iterdir()) == []
