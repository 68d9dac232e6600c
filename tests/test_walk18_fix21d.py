"""walk18a rows fixed by fix21d: a dry run ends as the real verb would, nodeweave's do-nothing flag after `--` stops
everything, down and status wait on the job's lock as the other verbs do, and an up that recreates nothing leaves a
run alone. Each test fails on the code before its fix."""

from __future__ import annotations

from cli_run import in_process as run_cli
from team_folder import flat, proj_folder

import pytest


@pytest.fixture
def proj(tmp_path, monkeypatch):
    return proj_folder(tmp_path, monkeypatch)


# -- class 2: nodeweave's own do-nothing flag after `--`, and another verb's option before it ---------------------
@pytest.mark.parametrize("argv, fixed", [
    (["run", "--", "train.py", "--steps", "1", "--dry-run"], "nodeweave run --dry-run -- train.py --steps 1"),
    (["exec", "--node", "0", "--", "ls", "--dry-run"], "nodeweave exec --node 0 --dry-run -- ls"),
], ids=["run", "exec"])
def test_a_dry_run_flag_after_the_dashes_is_refused_before_anything_starts(proj, capsys, argv, fixed):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "", (out, err)
    said = flat(err)
    assert "--dry-run comes after `--`" in said and "nothing is started" in said and fixed in said, err
    assert not (proj / "runs").exists() and not (proj / ".nodeweave").exists()


def test_another_verbs_option_is_said_as_that_verbs_not_sent_after_the_dashes(proj, capsys):
    code, out, err = run_cli(capsys, "run", "--check", "--dry-run", "--threshold", "10")
    said = flat(err)
    assert code == 2 and "`nodeweave check --threshold 10` first, then `nodeweave run`" in said, err
    assert "go after `--`" not in said
    code, out, err = run_cli(capsys, "exec", "--threshold", "3")
    assert code == 2 and "it is an option of `nodeweave check`" in flat(err), err


# -- class 3: down, its dry run, and status while an up holds the job's lock ---------------------------------------
HOLDER = """import sys, time
from pathlib import Path
from nodeweave.jobstate import hold_job
hold_job(Path(sys.argv[1]), "proj", "up")
print("held", flush=True)
time.sleep(60)
"""


def test_down_and_status_while_up_changes_the_job_say_so(proj, capsys):
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(proj)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for verb in (["down"], ["down", "--dry-run"], ["status"]):
            code, out, err = run_cli(capsys, *verb)
            said = flat(err)
            assert code == 3, (verb, out, err)
            assert f"`nodeweave up` (pid {holder.pid}, since" in said and "is changing job proj's nodes" in said, err
            assert "nothing to take down" not in flat(out + err) and "is not up" not in said, (verb, out, err)
    finally:
        holder.kill()
        holder.wait()
