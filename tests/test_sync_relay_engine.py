"""Relay against real podman containers: forwarded target to target, and fed directly where peers cannot connect.

Containers on one podman network reach each other; a container on an
``--internal`` network reaches only its own network's members (a packet to
it from another network is dropped, one from it to another network is
refused at once), which is how nodes that cannot reach each other look.
The same isolation shows a node whose resident agent the tunnel's head
cannot reach synced over its own exec, then left out of the tunnel. Each
test checks every target's files with the target's own ``sha256sum``.
"""

from __future__ import annotations

import hashlib
import os
import uuid

import pytest

from test_sync_engine import (BASE_IMAGE, dest_dir, expected_sums, image_problem,  # noqa: F401
                              nodeweave, podman, target_sums, workspace)

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.usefixtures("own_digest_cache")]


@pytest.fixture()
def containers():
    """Start containers (name -> podman network) and remove them, and the networks made, afterwards."""
    problem = image_problem()
    if problem:
        pytest.skip(problem)
    tag = uuid.uuid4().hex[:6]
    made_nets, started = [], []

    def start(networks: "list[str | None]", internal: "set[str]" = frozenset()) -> "list[str]":
        names = []
        for i, net in enumerate(networks):
            if net is not None and f"nwrelay-{tag}-{net}" not in made_nets:
                podman("network", "create", *(["--internal"] if net in internal else []), f"nwrelay-{tag}-{net}")
                made_nets.append(f"nwrelay-{tag}-{net}")
            name = f"nwrelay-{tag}-{i}"
            podman("run", "-d", "--name", name, *([f"--network=nwrelay-{tag}-{net}"] if net else []),
                   BASE_IMAGE, "sleep", "infinity")
            started.append(name)
            names.append(name)
        return names

    try:
        yield start
    finally:
        if started:
            podman("rm", "-f", "-t", "0", *started, check=False)
        if made_nets:
            podman("network", "rm", "-f", *made_nets, check=False)


def test_a_big_payload_goes_from_the_source_once_and_target_to_target(containers, workspace):
    (workspace / "data" / "shards.bin").write_bytes(os.urandom(6 << 20))  # past the 4 MiB auto threshold
    names = containers([None] * 4)
    dest = dest_dir()
    rc, data, err = nodeweave(str(workspace), dest, *[f"--to=podman:{c}" for c in names])
    assert rc == 0, err
    relays = [r["relay"] for r in data["targets"]]
    assert relays == [None] + [f"from podman:{c}" for c in names[:-1]], relays  # a chain, in target order
    want = {**expected_sums(workspace),
            "data/shards.bin": hashlib.sha256((workspace / "data" / "shards.bin").read_bytes()).hexdigest()}
    for result, container in zip(data["targets"], names):
        assert result["status"] == "ok" and result["method"] == "stream" and result["group"] == 1, result
        assert result["digest"] == data["source"]["digest"] and result["stamp"]["digest"] == result["digest"]
        assert target_sums(container, dest) == want

    rc, again, err = nodeweave(str(workspace), dest_dir(), *[f"--to=podman:{c}" for c in names], "--no-relay")
    assert rc == 0, err
    assert [r["relay"] for r in again["targets"]] == [None] * 4  # every target fed over its own exec
    assert {r["digest"] for r in again["targets"]} == {data["source"]["digest"]}

    (workspace / "train.py").write_text("print('small edit')\n")  # under the threshold: direct, no hop set-up
    rc, small, err = nodeweave(str(workspace), dest, *[f"--to=podman:{c}" for c in names])
    assert rc == 0, err
    assert [(r["files"], r["relay"]) for r in small["targets"]] == [(1, None)] * 4


def test_targets_that_cannot_reach_each_other_are_fed_directly(containers, workspace):
    # a on podman's default network; b, c on internal network x; d on internal network y.
    a, b, c, d = containers([None, "x", "x", "y"], internal={"x", "y"})
    dest = dest_dir()
    rc, data, err = nodeweave(str(workspace), dest, *[f"--to=podman:{n}" for n in (a, b, c, d)], "--relay")
    assert rc == 0, err
    relays = {r["target"]: r["relay"] for r in data["targets"]}
    assert relays[f"podman:{a}"] is None  # the head: fed by the source
    assert relays[f"podman:{b}"].startswith(f"direct: podman:{a} could not reach it")  # a packet to x is dropped
    assert relays[f"podman:{c}"] == f"from podman:{b}"  # b and c share network x: the relay goes on from b
    assert relays[f"podman:{d}"].startswith(f"direct: podman:{c} could not reach it")  # x cannot route to y
    assert f"relay: podman:{b} was sent the payload direct: podman:{a} could not reach it" in err
    for result, container in zip(data["targets"], (a, b, c, d)):
        assert result["status"] == "ok" and result["digest"] == data["source"]["digest"], result
        assert target_sums(container, dest) == expected_sums(workspace)


def test_a_node_the_head_cannot_reach_takes_its_own_exec_and_is_then_left_out_of_the_tunnel(containers, workspace):
    # a and b on podman's default network, c alone on an internal one: a cannot reach c's resident.
    a, b, c = containers([None, None, "x"], internal={"x"})
    targets = [f"--to=podman:{n}" for n in (a, b, c)]
    rc, data, err = nodeweave(str(workspace), dest_dir(), *targets)
    assert rc == 0, err
    assert [r["channel"] for r in data["targets"]] == ["exec"] * 3  # first contact: each starts its resident
    dest = dest_dir()
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    channels = [r["channel"] for r in data["targets"]]
    assert channels[:2] == ["exec, tunnel head", f"via podman:{a}"]
    assert channels[2].startswith("exec (the tunnel could not: ") and "no resident answered" in channels[2], channels
    assert {r["status"] for r in data["targets"]} == {"ok"} and target_sums(c, dest) == expected_sums(workspace)
    rc, data, err = nodeweave(str(workspace), dest_dir(), *targets)  # marked: no dial timeout this time
    assert rc == 0, err
    assert [r["channel"] for r in data["targets"]] == ["exec, tunnel head", f"via podman:{a}", "exec"]
