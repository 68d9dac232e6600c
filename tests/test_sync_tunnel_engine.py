"""Residents and the tunnel against real podman containers: the second sync of a cluster takes one exec.

The first multi-target sync execs into every container; each keeps a
resident agent and the source records it. The next sync execs into the
first container only and reaches the others through it over podman's
network; every target's files are checked with the target's own
``sha256sum``. A container whose resident was killed is synced over its own
exec and gets a new resident; ``--no-relay`` starts none.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from test_sync_engine import dest_dir, expected_sums, nodeweave, podman, target_sums, workspace  # noqa: F401
from test_sync_relay_engine import containers  # noqa: F401 - a fixture, used by name

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.usefixtures("own_digest_cache")]


def resident_state(container: str) -> "dict | None":
    out = podman("exec", container, "sh", "-c", 'cat "${TMPDIR:-/tmp}/nodeweave-sync-$(id -u)/resident.json"',
                 check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def channels(data: dict) -> "list[str]":
    return [t["channel"] for t in data["targets"]]


def synced(data: dict, names: "list[str]", dest: str, src) -> None:
    assert {t["status"] for t in data["targets"]} == {"ok"}, data["targets"]
    assert {t["digest"] for t in data["targets"]} == {data["source"]["digest"]}
    want = expected_sums(src)
    shards = src / "data" / "shards.bin"
    if shards.exists():
        want["data/shards.bin"] = hashlib.sha256(shards.read_bytes()).hexdigest()
    for name in names:
        assert target_sums(name, dest) == want, name


def test_the_second_sync_reaches_every_node_through_the_first(containers, workspace):
    three = containers([None] * 3)
    dest = dest_dir()
    targets = [f"--to=podman:{c}" for c in three]
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert channels(data) == ["exec"] * 3  # nothing known yet: an exec each, and each keeps a resident
    states = [resident_state(c) for c in three]
    assert all(s and s["program"] for s in states)
    (workspace / "train.py").write_text("print('edited')\n")
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert channels(data) == ["exec, tunnel head", f"via podman:{three[0]}", f"via podman:{three[0]}"]
    assert [t["files"] for t in data["targets"]] == [1, 1, 1]
    synced(data, three, dest, workspace)
    assert [resident_state(c)["pid"] for c in three] == [s["pid"] for s in states]  # the same residents served

    podman("exec", three[2], "kill", str(states[2]["pid"]))
    (workspace / "pkg" / "model.py").write_text("x = 2\n")
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert channels(data)[1] == f"via podman:{three[0]}"
    assert channels(data)[2].startswith("exec (the tunnel could not: "), channels(data)
    synced(data, three, dest, workspace)
    assert resident_state(three[2])["pid"] != states[2]["pid"]  # a new one, used from the next sync on
    rc, data, err = nodeweave(str(workspace), dest_dir(), *targets)
    assert rc == 0, err
    assert channels(data)[1:] == [f"via podman:{three[0]}"] * 2


def test_a_big_payload_is_still_relayed_between_nodes_reached_through_the_head(containers, workspace):
    three = containers([None] * 3)
    targets = [f"--to=podman:{c}" for c in three]
    assert nodeweave(str(workspace), dest_dir(), *targets)[0] == 0
    (workspace / "data" / "shards.bin").write_bytes(os.urandom(6 << 20))  # past the 4 MiB auto threshold
    dest = dest_dir()
    rc, data, err = nodeweave(str(workspace), dest, *targets)
    assert rc == 0, err
    assert channels(data)[1:] == [f"via podman:{three[0]}"] * 2
    assert [t["relay"] for t in data["targets"]] == [None, f"from podman:{three[0]}", f"from podman:{three[1]}"]
    synced(data, three, dest, workspace)


def test_no_relay_leaves_no_agent_running(containers, workspace):
    three = containers([None] * 3)
    rc, data, err = nodeweave(str(workspace), dest_dir(), "--no-relay", *[f"--to=podman:{c}" for c in three])
    assert rc == 0, err
    assert channels(data) == ["exec"] * 3
    assert [resident_state(c) for c in three] == [None, None, None]
