"""Two classes the eleventh replay found and the last round took only in part (issue 43, left12c; rows R2 and R3
of /work/wt/replay11-report.md), each walked over the product's own table. Each test fails on the code before its
fix. No container is started: the tools are stood in for, or left off PATH.
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli
from team_folder import make_team
from nodeweave.entrypoint.planning.contract import SETTINGS


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- R3: a spec value every node refuses is refused by validate, through the node's own reader ------------------------

SPEC_ROWS = [row for row in SETTINGS if row.spec]


@pytest.mark.parametrize("row", SPEC_ROWS, ids=[row.key for row in SPEC_ROWS])
def test_r3_every_spec_field_that_becomes_a_variable_is_read_by_the_nodes_own_reader(capsys, team, monkeypatch, row):
    """R3: `launcher.setup: ["source"]` was valid, rendered as NODEWEAVE_SETUP and planned, and every node refused
    that very value. validate reads every field the contract's table renders into a node's variable with the node's
    own reader of that variable: here each row's reader refuses what it is given, and validate must say so, naming
    the row's spec field (a new row of the table is walked here with nothing added)."""
    from nodeweave.entrypoint.errors import UsageError as NodeRefusal

    def refuse(text, what, source):
        raise NodeRefusal(f"{what} {text!r} (from {source}) is refused by this node; accepted: what it reads")

    monkeypatch.setattr(row, "text", lambda value: "as-rendered")
    monkeypatch.setattr(row, "read", refuse)
    code, out, err = run_cli(capsys, "validate")
    assert code == 2, (out, err)
    assert f" {row.spec}: {row.what} 'as-rendered' (from {row.variable}, as every node receives it) is refused by " \
           "this node; accepted: what it reads" in err, err


@pytest.mark.parametrize("field, value, said", [
    ("launcher", {"setup": ["source"]}, "'source' alone does nothing"),
    ("launcher", {"setup": ["module"]}, "'module' alone does nothing"),
    ("network", {"interfaces": ["eth*"]}, "'eth*' holds a glob (*, ? or [)"),
    ("network", {"interfaces": ["ib?"]}, "'ib?' holds a glob (*, ? or [)"),
])
@pytest.mark.parametrize("verb", [("validate",), ("render", "compose", "--dry-run"), ("up", "--dry-run")])
def test_r3_a_value_every_node_refuses_is_refused_by_validate_render_and_up(capsys, team, field, value, said, verb):
    """R3: real values the spec took and every node refused: a setup line that is one word doing nothing alone, and
    an interface written as a glob (`network.interfaces: ["eth*"]` was valid, rendered as NODEWEAVE_INTERFACES=eth*,
    and each node refused it: nothing expands it). validate, render and up --dry-run refuse it, exit 2, naming the
    field and its line."""
    spec = team / "nodeweave.yaml"
    text = spec.read_text()
    if field == "launcher":
        text = text.replace("  script: train.py\n", f"  script: train.py\n  setup: {json.dumps(value['setup'])}\n")
    else:
        text += f"{field}: {json.dumps(value)}\n"
    spec.write_text(text)
    line = next(i for i, written in enumerate(text.splitlines(), 1) if ("setup" in written or "interfaces" in written))
    code, out, err = run_cli(capsys, *verb)
    assert code == 2 and said in err and f"nodeweave.yaml:{line}: {field}." in err, (out, err)
