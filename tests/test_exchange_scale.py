"""Node 0 at a few hundred nodes: a real ``nodeweave-entrypoint`` as node 0, simulated nodes on loopback.

The other nodes are ``benchmarks/scale_swarm.py``: one process, each simulated
node with its own 127.2.x.y address and check port, speaking the real wire
(challenge, hello with a real fingerprint and HMAC, connect-back, verdict,
beats). Node 0 must give every node the same verdict bytes, relay one node's
failure to all others, raise its own open-file limit to what the job needs
and say what to raise when the hard limit is too low. Also the bounded
outbox: a node that stops reading never holds up the others.
"""

import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

from test_exchange_processes import ENTRY, SRC, free_port_pair
from one_machine import one_machine_env

from nodeweave.entrypoint.checkin.switchboard import Switchboard
from nodeweave.entrypoint.checkin.wire import OUTBOX_MAX, Channel

SWARM = Path(__file__).resolve().parents[1] / "benchmarks" / "scale_swarm.py"


def node_0(tmp_path, nodes, port, launcher="command", limit=None, wait="30"):
    (tmp_path / "torchrun").write_text("#!/bin/sh\nexec sleep 60\n")
    (tmp_path / "torchrun").chmod(0o755)
    (tmp_path / "train.py").write_text("")
    env = one_machine_env({"PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHONPATH": str(SRC), "TMPDIR": str(tmp_path),
                           "NODEWEAVE_WAIT_TIMEOUT": wait})
    command = ["true"] if launcher == "command" else ["train.py"]
    argv = [*ENTRY, "--launcher", launcher, "--nnodes", str(nodes), "--node-rank", "0", "--master-addr",
            "127.0.0.1", "--master-port", str(port), "--", *command]
    preexec = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit)) if limit else None
    return subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec)


def swarm(tmp_path, nodes, port, *extra, launcher="command"):
    argv = [sys.executable, str(SWARM), "--port", str(port + 1), "--nodes", str(nodes), "--ranks", f"1:{nodes}",
            "--launcher", launcher, *extra]
    return subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=str(tmp_path)))


def result(proc, timeout=90):
    out, err = proc.communicate(timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, err[-3000:]
    return json.loads(lines[-1])


def test_two_hundred_nodes_get_the_same_verdict_bytes_and_one_failure_reaches_all(tmp_path):
    port = free_port_pair()
    hub = node_0(tmp_path, 200, port, launcher="torchrun")
    nodes = swarm(tmp_path, 200, port, "--hold", "3", "--fail", "exit", launcher="torchrun")
    try:
        try:
            out = result(nodes)
        except subprocess.TimeoutExpired:
            hub.kill()
            raise AssertionError(hub.communicate()[1] + nodes.communicate()[1])
        assert out["nodes"] == 199 and out["decision"] == "start" and out["identical"], out
        assert out["not_told"] == 0 and out["abort_after"]["max"] < 5, out  # node 0 relayed it to all 198 others
        _, err = hub.communicate(timeout=60)
        assert hub.returncode == 5, err
        assert "check-in: 200 node(s) agree" in err and "node 100 (scale-100) failed: torchrun exited 1" in err, err
        assert "RuntimeError: scale harness" in err and "Traceback" not in err.split("last output:")[0], err
    finally:
        for proc in (hub, nodes):
            if proc.poll() is None:
                proc.kill()


def test_node_0_raises_its_open_file_limit_to_what_the_job_needs(tmp_path):
    """A soft limit of 64 with 150 nodes: without the raise node 0 could not accept them all."""
    port = free_port_pair()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hub = node_0(tmp_path, 150, port, limit=(64, hard))
    nodes = swarm(tmp_path, 150, port)
    try:
        out = result(nodes)
        assert out["decision"] == "start" and out["identical"], out
        _, err = hub.communicate(timeout=60)
        assert hub.returncode == 0 and "check-in: 150 node(s) agree" in err, err
    finally:
        for proc in (hub, nodes):
            if proc.poll() is None:
                proc.kill()


def test_a_hard_limit_too_low_is_named_with_what_to_raise(tmp_path):
    port = free_port_pair()
    hub = node_0(tmp_path, 150, port, limit=(64, 64), wait="4")
    nodes = swarm(tmp_path, 150, port)
    try:
        _, err = hub.communicate(timeout=60)
        assert hub.returncode == 3, err  # the nodes it could not take count as missing: refused, named
        assert "node 0 may open only 64 files (RLIMIT_NOFILE, hard limit 64) but 150 nodes need about 364" in err, err
        assert "--ulimit nofile=364:364" in err and "Traceback" not in err, err
    finally:
        for proc in (hub, nodes):
            if proc.poll() is None:
                proc.kill()
        nodes.communicate(timeout=30)


class FakePeer:
    def __init__(self, sock):
        self.channel = Channel(sock, "peer")
        self.fp = {"rank": 1}


def test_a_node_that_stops_reading_is_dropped_and_never_holds_up_the_others():
    listener = socket.create_server(("127.0.0.1", 0))
    board = Switchboard(listener)
    pairs = [socket.socketpair() for _ in range(2)]
    stalled, reading = (FakePeer(ours) for ours, _ in pairs)
    for peer in (stalled, reading):
        board.watch(peer)
    received = bytearray()
    message = b"x" * (512 * 1024) + b"\n"
    lost, started = [], time.monotonic()
    pairs[1][1].setblocking(False)
    for _ in range(2 * OUTBOX_MAX // len(message)):
        lost += board.post([p for p in (stalled, reading) if p not in lost], message)
        while reading.channel.outbox:  # the reading node keeps up; the stalled one reads nothing
            board.flush_all([reading], time.monotonic() + 0.01)
            try:
                received += pairs[1][1].recv(1 << 20)
            except BlockingIOError:
                pass
    assert time.monotonic() - started < 10  # no send ever waited on the stalled node
    assert lost == [stalled]
    assert stalled.channel.queued <= OUTBOX_MAX
    pairs[1][1].setblocking(True)
    pairs[1][1].settimeout(5)
    expected = (2 * OUTBOX_MAX // len(message)) * len(message)
    while len(received) < expected:
        received += pairs[1][1].recv(1 << 20)
    assert bytes(received) == message * (expected // len(message))
    board.close()
    listener.close()
    for a, b in pairs:
        a.close()
        b.close()


def test_node_0s_slower_beats_still_keep_every_node_in_the_job(monkeypatch):
    """Node 0 beats HUB_BEATS times per LOST_S (fewer than the nodes do): nobody counts anybody gone."""
    from loopback_hub import started_watches

    from nodeweave.entrypoint.checkin import heartbeat

    monkeypatch.setattr(heartbeat, "BEAT_S", 0.2)
    monkeypatch.setattr(heartbeat, "LOST_S", 1.0)
    cluster, hub_watch, links, launchers, logs = started_watches(3)
    try:
        time.sleep(3.5)  # three and a half LOST_S windows
        assert not any(launcher.stopped.is_set() for launcher in launchers.values()), logs
        assert all(not lines for lines in logs.values()), logs
    finally:
        for link in links.values():
            link.finish(0, "torchrun exited 0", [])
        hub_watch.finish(0, "torchrun exited 0", [])
        cluster.close()
