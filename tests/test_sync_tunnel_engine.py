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
import subprocess
import sys

import pytest

from test_sync_engine import REPO, dest_dir, expected_sums, nodeweave, podman, target_sums, workspace  # noqa: F401
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


# nodeweave itself, with every tunnel frame of the nodes other than the head held back 1 s: the pump
# threads of a loaded machine, which once let a relayed payload overtake a node's `go` line.
LATE_PUMPS = """
import sys, time
from nodeweave.sync.source.headlink import HeadLink
real_send = HeadLink.send
def late(self, number, kind, data=b""):
    if number != 0:
        time.sleep(1.0)
    return real_send(self, number, kind, data)
HeadLink.send = late
from nodeweave.cli import main
sys.exit(main())
"""


def sync_with_late_pumps(*args: str) -> "tuple[int, dict | None, str]":
    out = subprocess.run([sys.executable, "-c", LATE_PUMPS, "sync", "--json", *args],
                         capture_output=True, text=True, timeout=600, cwd=REPO / "tests")
    try:
        return out.returncode, json.loads(out.stdout), out.stderr
    except ValueError:
        return out.returncode, None, out.stderr


@pytest.mark.parametrize("sync", [nodeweave, sync_with_late_pumps], ids=["as-is", "late-pumps"])
def test_a_big_payload_is_still_relayed_between_nodes_reached_through_the_head(containers, workspace, sync):
    """The payload leaves the source once, into the head's own session, and goes node to node; in one
    attempt, also where the other nodes' lines reach the tunnel late (before, the payload then overtook
    a node's `go`, the relay stood still for IDLE_S and the retry went over plain execs)."""
    three = containers([None] * 3)
    targets = [f"--to=podman:{c}" for c in three]
    assert nodeweave(str(workspace), dest_dir(), *targets)[0] == 0
    (workspace / "data" / "shards.bin").write_bytes(os.urandom(6 << 20))  # past the 4 MiB auto threshold
    dest = dest_dir()
    rc, data, err = sync(str(workspace), dest, *targets)
    assert rc == 0, err
    how = [(t["channel"], t["relay"], t["attempts"], t.get("error")) for t in data["targets"]]
    assert [t["attempts"] for t in data["targets"]] == [1, 1, 1], how
    assert channels(data)[1:] == [f"via podman:{three[0]}"] * 2, how
    assert [t["relay"] for t in data["targets"]] == [None, f"from podman:{three[0]}", f"from podman:{three[1]}"]
    synced(data, three, dest, workspace)


def test_no_relay_leaves_no_agent_running(containers, workspace):
    three = containers([None] * 3)
    rc, data, err = nodeweave(str(workspace), dest_dir(), "--no-relay", *[f"--to=podman:{c}" for c in three])
    assert rc == 0, err
    assert channels(data) == ["exec"] * 3
    assert [resident_state(c) for c in three] == [None, None, None]
