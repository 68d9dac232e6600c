"""Walk 6, W73: a damaged ``.nodeweave/<job>/cluster.json`` while the cluster may still be up.

The refusal is one line for every verb (the record is read before any flag), so its remedy must serve each verb:
``down`` is told how to take down what runs without the record, never to bring the cluster up again first. The
remedy is then followed to its end: with the file removed, ``down`` with the flags ``up`` was given plans the
take-down. Fails before the fix (the one remedy was "remove the file and run `nodeweave up` again").
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


@pytest.fixture
def damaged(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('the training script')\n")
    record = tmp_path / ".nodeweave" / "team" / "cluster.json"
    record.parent.mkdir(parents=True)
    record.write_text("[]")
    monkeypatch.chdir(tmp_path)
    return record


@pytest.mark.parametrize("argv", [("down", "--dry-run"), ("down", "-t", "kubernetes", "-n", "ml", "--dry-run"),
                                  ("status",), ("stop", "--dry-run")])
def test_a_damaged_record_names_a_way_down_that_is_not_up(damaged, capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and str(damaged) in line, line
    assert "run `nodeweave up` again" not in line, "bringing a cluster up again is no way to take it down"
    assert "remove the file" in line and "`nodeweave down -t TARGET" in line, line


def test_following_the_remedy_takes_down_with_the_flags_up_was_given(damaged, capsys):
    damaged.unlink()
    code, out, err = run_cli(capsys, "down", "-t", "kubernetes", "-n", "ml", "--dry-run")
    assert code == 0 and "kubectl delete -n ml" in out, (out, err)
