"""``nodeweave status``'s table: plans that disagree stand out, node output never breaks the markup."""

from __future__ import annotations

import io

from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

from nodeweave.cluster import ClusterOptions, open_backend
from nodeweave.cluster.status import agreement, status_table
from nodeweave.spec import parse_spec

SPEC = "name: st\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"


def row(node, plan_hash, up=True, error=None, gpu=None, platform="same"):
    platform = ("running" if up else "exited (3)") if platform == "same" else platform
    return {"node": node, "reached_as": f"podman:{node}", "platform": platform, "up": up,
            "error": error, "mode": "hold" if up else None, "rank": int(node[-1]) if up else None,
            "plan_hash": plan_hash, "plan_errors": [], "run": None, "now": None, "gpu": gpu}


def local_backend(tmp_path):
    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC)
    return open_backend(parse_spec(SPEC, str(path)), path, ClusterOptions().checked())


def render(rows, tmp_path):
    console = Console(file=io.StringIO(), width=220, color_system=None)
    console.print(status_table(local_backend(tmp_path), rows))
    return console.file.getvalue()


def test_agreeing_and_disagreeing_plans(tmp_path):
    assert agreement([row("node-0", "abc"), row("node-1", "abc")]) is True
    assert agreement([row("node-0", "abc"), row("node-1", "def")]) is False
    assert agreement([row("node-0", None, up=False)]) is None
    assert "plans DISAGREE" in render([row("node-0", "abc"), row("node-1", "def")], tmp_path)


def test_node_text_with_brackets_is_shown_as_it_is(tmp_path):
    gpu = {"tool": "nvidia-smi", "gpus": [{"index": 0, "util_pct": 100.0, "mem_used_mib": 1397.0,
                                            "mem_total_mib": 81559.0}]}
    text = render([row("node-0", "abc", gpu=gpu),
                   row("node-1", None, up=False, error="Error: [ctr] not running", platform=None)], tmp_path)
    assert "[ctr] not running" in text and "100.0% 1.4/80G" in text


def test_a_down_node_the_platform_knows_says_down_not_the_exec_error(tmp_path):
    error = 'Error: no container with name or ID "st-1" found: no such container'
    text = render([row("node-0", "abc"), row("node-1", None, up=False, error=error, platform="missing")], tmp_path)
    assert "down (missing)" in text and "no such container" not in text


def test_long_addresses_are_never_cut(tmp_path):
    long = "ssh+podman:trainer@gpu-node-with-a-long-name.cluster.example.org/llama-pretrain-1"
    rows = [{**row("node-0", "abc"), "reached_as": long}]
    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC)
    backend = open_backend(parse_spec(SPEC, str(path)), path, ClusterOptions().checked())
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(status_table(backend, rows))
    assert long in console.file.getvalue()


def test_a_node_that_sits_out_says_why_beside_its_generation(tmp_path):
    """docs/recovery.md: a left-out node says why on its console and in `nodeweave status`."""
    why = "node 1: it was lost (its connection closed without a report)"
    rows = [{**row("node-0", "abc"), "recovery": {"generation": 1, "role": "member", "reason": None}},
            {**row("node-1", "abc"), "recovery": {"generation": 1, "role": "left out", "reason": why}}]
    text = render(rows, tmp_path)
    assert "generation 1: member" in text and "generation 1: member:" not in text
    assert f"generation 1: left out: {why}" in " ".join(text.split()), text


def test_a_container_podman_has_stopped_but_not_yet_cleaned_up_reads_as_exited_with_its_code(tmp_path):
    """podman reports ``stopped`` from the process's exit until its cleanup ran; docker says ``exited`` at once."""
    from nodeweave.cluster.backends.local import container_state
    from nodeweave.cluster.base import NodeState

    assert container_state("stopped", "143") == container_state("exited", "143")
    assert container_state("stopped", "143").word == "exited (143)"
    assert [container_state(s, "0").word for s in ("running", "created", "stopping", "dead")] == \
        ["running", "created", "stopping", "dead"]
    assert [container_state(s, "0").state for s in ("running", "created", "configured", "stopping", "dead")] == \
        [NodeState.RUNNING, NodeState.CREATED, NodeState.STARTING, NodeState.UNKNOWN, NodeState.ENDED]
    assert container_state("stopped", "1").state.failed and not container_state("stopping", "0").state.failed


def test_a_spares_row_shows_its_role_in_the_rank_column(tmp_path):
    """Issue 41: a spare's plan was an error ('node rank 2 ... is not below the node count 2'); its node status
    now carries its role, and the table shows it where a rank would be."""
    from nodeweave.cluster.status import rank_text, row as status_row
    from nodeweave.cluster.base import NodeAnswer

    role = {"kind": "spare", "identity": 2, "rank": None, "why": "waits", "generation": None}
    node = type("N", (), {"name": "st-2", "remote": type("R", (), {"label": "podman:st-2"})()})()
    answer = NodeAnswer(node, {"plan": {"node_rank": 2, "hash": "abc", "errors": [], "role": role}})
    assert status_row(node, answer, "running")["role"] == role
    assert rank_text({"rank": 2, "role": role}) == "spare (2)"
    assert rank_text({"rank": 2, "role": dict(role, kind="training node", rank=1)}) == "1"
    assert rank_text({"rank": 1}) == "1" and rank_text({"rank": None}) == "-"
    assert "spare (2)" in render([row("node-0", "abc"), {**row("node-2", "abc"), "role": role}], tmp_path)


def test_up_waiting_for_a_held_spare_says_it_holds_as_a_spare():
    from nodeweave.cluster.base import NodeAnswer
    from nodeweave.cluster.ready import _describe

    node = type("N", (), {"name": "st-2", "remote": type("R", (), {"label": "podman:st-2"})()})()
    spare = {"kind": "spare", "identity": 2, "rank": None, "why": "waits", "generation": None}
    answer = NodeAnswer(node, {"hold": {"pid": 1}, "plan": {"node_rank": 2, "hash": "abc", "role": spare}})
    assert _describe(answer, "hold") == "holding: spare (container 2), plan abc"
    trained = NodeAnswer(node, {"hold": {"pid": 1}, "plan": {"node_rank": 1, "hash": "abc"}})
    assert _describe(trained, "hold") == "holding: rank 1, plan abc"


def test_up_and_the_not_up_refusal_read_the_platforms_state_not_its_words(tmp_path):
    """One state enum for every backend: ``up``'s wait stops at once on a node whose state says waiting will not
    bring it up (ended, stuck) and names it with the platform's word; a node not made yet is waited for, not
    asked; the "not up" refusal names the absent, created, ended and stuck ones, not one on its way."""
    import pytest

    from nodeweave.cluster.base import NodeState, PlatformState
    from nodeweave.cluster.onbackend import not_up
    from nodeweave.cluster.ready import wait_until_up
    from nodeweave.errors import NodeweaveError

    backend = local_backend(tmp_path)
    seen = {0: PlatformState(NodeState.ABSENT, "missing"), 1: PlatformState(NodeState.ENDED, "exited (3)")}
    backend.states = lambda nodes: {n.index: seen[n.index] for n in nodes}
    nodes = backend.nodes()
    console = Console(file=io.StringIO(), width=200, color_system=None)
    with pytest.raises(NodeweaveError) as failed:
        wait_until_up(backend, nodes, "hold", 60.0, console, ["t.py"], poll=0.01)
    assert str(failed.value).startswith(f"1 of 2 node(s) cannot come up: node-1 ({nodes[1].remote.label}): exited (3)")
    assert f"node-0 ({nodes[0].remote.label}): missing" in console.file.getvalue()  # its word, waited for
    assert not_up(backend, nodes) == {0: "missing", 1: "exited (3)"}
    seen.update({0: PlatformState(NodeState.STARTING, "configured"), 1: PlatformState(NodeState.STUCK, "Failed")})
    assert not_up(backend, nodes) == {1: "Failed"}
    assert [s.failed for s in NodeState] == [s in (NodeState.ENDED, NodeState.STUCK) for s in NodeState]
