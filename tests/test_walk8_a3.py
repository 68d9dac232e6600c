"""The eighth walk, part A, rows A22-A31 worked downward (issue 43): one test per class, each failing on the code
before it."""

from __future__ import annotations


import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A30: workspace.host_path judged by sync's SRC rule (and nodeweave's own folders, a file) when the spec is read --

@pytest.mark.parametrize("written", ["/tmp", "/home", "train.py", ".nodeweave", "runs/20261130T010000Z-team"])
def test_workspace_host_path_that_sync_would_refuse_is_refused_at_validate(capsys, team, written):
    (team / ".nodeweave").mkdir()
    (team / "runs" / "20261130T010000Z-team").mkdir(parents=True)
    (team / "w.yaml").write_text((team / "nodeweave.yaml").read_text() + f"workspace: {{host_path: {written}}}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "w.yaml")
    line = one_line(err)
    assert code == EXIT_USAGE and "w.yaml:" in line and "workspace.host_path" in line, (out, err)


def test_workspace_host_path_above_the_spec_is_taken(capsys, team):
    (team / "deploy").mkdir()
    (team / "deploy" / "nodeweave.yaml").write_text((team / "nodeweave.yaml").read_text()
                                                    + "workspace: {host_path: ..}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "deploy/nodeweave.yaml")
    assert code == 0 and "valid" in out, (out, err)
