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
