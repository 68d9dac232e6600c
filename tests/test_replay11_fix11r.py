"""replay11's rows A3, A16, A20, A21, A22, A25, A27, A30 (issue 43, /work/wt/replay11-report.md), each fixed as a
class and walked here over the product's own table where one exists. Each test fails on the code before its fix. No
container is started.
"""

from __future__ import annotations

import json
import os

import pytest

from cli_run import entrypoint_in_process
from cli_run import in_process as run_cli
from cli_run import one_line
from team_folder import make_job_folder


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- A30: the current folder removed under the entrypoint -----------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--nnodes", "1", "--explain", "--", "train.py"],
    ["--nnodes", "1", "--explain", "--json", "--", "train.py"],
    ["--nnodes", "1", "--launcher", "command", "--", "true"],
    ["--nnodes", "1", "--", "train.py"],
    ["--nnodes", "1", "--status"],
])
def test_the_entrypoint_in_a_removed_folder_says_so_in_nodeweaves_words(tmp_path, monkeypatch, capsys, argv):
    """A30: nodeweave said `the current folder no longer exists ...` (2) for every verb, while the entrypoint in the
    same folder (--explain, a real start) printed a traceback ending in `os.getcwd()` / FileNotFoundError (1)."""
    from nodeweave.entrypoint.errors import CWD_GONE

    gone = tmp_path / "gone"
    gone.mkdir()
    run = entrypoint_in_process(gone, monkeypatch, capsys)
    gone.rmdir()
    code, out, err = run(argv, {"NODEWEAVE_METRICS": "off"})
    assert code == 2, (out, err)
    assert one_line(err) == f"nodeweave-entrypoint: error: {CWD_GONE}"
    if "--json" in argv:
        assert json.loads(out)["errors"] == [{"message": CWD_GONE, "exit_code": 2}]


def test_nodeweave_and_the_entrypoint_share_the_removed_folders_line(tmp_path, monkeypatch, capsys):
    """A30: one rule, one line, for both programs."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    from nodeweave.entrypoint.errors import CWD_GONE

    code, _, err = run_cli(capsys, "validate")
    assert code == 2 and one_line(err).endswith(CWD_GONE)
