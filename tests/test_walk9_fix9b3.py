"""Walk 9, part B, rows B24..B29 (issue 43), each fixed as a class:

- a query (``--explain``, ``--status`` or one of their switches typed alone, or no training command) never speaks
  for the node in the job: its refusal is local and never reaches node 0's check-in (B25).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import pytest

from nodeweave.entrypoint.checkin import refusal, wire
from nodeweave.entrypoint.errors import EntrypointError
from nodeweave.entrypoint.planning.settings import FLAGS, parse
from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)
NODE_1 = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "1", "NODEWEAVE_MASTER_ADDR": "127.0.0.1",
          "NODEWEAVE_MASTER_PORT": "31820", "NODEWEAVE_JOB_ID": "q"}
QUERY_ALONE = [flag for flag, (key, _) in FLAGS.items() if key in refusal.QUERY_SWITCHES and key not in
               ("explain", "status")]  # the switches that only shape a query: refused typed alone


def _refused(argv, env):
    try:
        parse(argv, env)
    except EntrypointError as err:
        return err
    raise AssertionError(f"{argv} was not refused")


@pytest.fixture
def told(monkeypatch):
    """Every connection tell_node_0 would make to node 0's exchange, recorded instead of made."""
    calls = []

    def connect(host, port, timeout):
        calls.append((host, port))
        raise wire.ExchangeError("not here")

    monkeypatch.setattr(wire, "connect", connect)
    monkeypatch.setattr(refusal, "_where", lambda settings: ("127.0.0.1", 31821, "q", 31820, "vm", 1))
    return calls


@pytest.mark.parametrize("argv", [[flag] for flag in QUERY_ALONE] + [[flag, "--", "train.py"] for flag in QUERY_ALONE],
                         ids=lambda argv: " ".join(argv))
def test_a_query_refused_is_never_told_to_node_0(told, argv):
    """B25: `--json` (meant `--explain --json`) in node 1's shell told node 0, which refused the whole job."""
    err = _refused(argv, NODE_1)
    assert err.settings is not None
    assert refusal.tell_node_0(err.settings, err, lambda line: None, budget_s=0.5) is False
    assert told == []


def test_a_start_refused_is_still_told_to_node_0(told):
    """B25 (the rule kept): a start (a training command, no query switch) refused on its own tells node 0."""
    err = _refused(["train.py"], dict(NODE_1, NODEWEAVE_PROFILE_OPTIONS="--x"))
    refusal.tell_node_0(err.settings, err, lambda line: None, budget_s=0.5)
    assert told
