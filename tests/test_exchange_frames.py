"""Messages longer than the wire's 1 MiB line: frames (``wire.py``), so the job's size caps nothing.

Over real loopback sockets: a frame arrives whole and equal, a receiver takes
no more than its limit (node 0 none at all from the nodes), and
``nodeweave-entrypoint --status`` — a real process asking a real node 0 with
real check-ins — prints every node's fingerprint, variables included, when
the answer is larger than the old limit.
"""

import json
import os
import socket
import subprocess
import threading
import time

import pytest

from nodeweave.entrypoint.checkin.exchange import Hub, ask_status
from nodeweave.entrypoint.checkin.wire import (MAX_MESSAGE, PER_NODE_BYTES, Channel, ExchangeError, encode,
                                               frame_limit, job_token)
from loopback_hub import Cluster, fp
from one_machine import one_machine_env
from test_exchange_processes import ENTRY, SRC, free_port_pair


def test_a_message_that_fits_a_line_is_sent_as_before():
    data = encode({"t": "beat"})
    assert data == b'{"t":"beat"}\n'


def test_a_message_over_a_line_arrives_whole_as_a_frame():
    big = {"t": "verdict", "rows": ["x" * 100] * 30000}  # ~3 MiB
    data = encode(big)
    assert len(data) > 2 * MAX_MESSAGE and data.startswith(b'{"t":"frame","bytes":')
    left, right = socket.socketpair()
    channel = Channel(left, "node 0", limit=frame_limit(300))
    sender = threading.Thread(target=lambda: (right.sendall(data + encode({"t": "beat"})), right.close()))
    sender.start()
    try:
        assert channel.receive(time.monotonic() + 10) == big
        assert channel.receive(time.monotonic() + 10) == {"t": "beat"}  # the line after the frame
    finally:
        sender.join(10)
        channel.close()


def test_a_frame_over_the_receivers_limit_ends_the_connection_naming_both_sizes():
    data = encode({"t": "status", "pad": "y" * (2 * MAX_MESSAGE)})
    left, right = socket.socketpair()
    channel = Channel(left, "node 0")  # the default: a line's size, no larger frame
    right.sendall(data[:200])
    try:
        body = len(data) - data.index(b"\n") - 1
        with pytest.raises(ExchangeError, match=f"announced a message of {body} bytes; this side takes "
                                                f"at most {MAX_MESSAGE}"):
            channel.receive(time.monotonic() + 5)
    finally:
        right.close()
        channel.close()


@pytest.mark.parametrize("size", ["-5", "0", "true", '"many"'])
def test_a_garbled_frame_size_is_refused(size):
    left, right = socket.socketpair()
    channel = Channel(left, "peer", limit=frame_limit(10))
    right.sendall(b'{"t":"frame","bytes":' + size.encode() + b"}\n")
    try:
        with pytest.raises(ExchangeError, match="a frame is a positive size"):
            channel.receive(time.monotonic() + 5)
    finally:
        right.close()
        channel.close()


def test_the_limit_grows_with_the_job():
    assert frame_limit(1) == MAX_MESSAGE + PER_NODE_BYTES
    assert frame_limit(10000) == MAX_MESSAGE + 10000 * PER_NODE_BYTES
    assert frame_limit(None) == MAX_MESSAGE


def test_node_0_takes_no_frame_from_a_node():
    port = free_port_pair()
    hub = Hub(port, job_token({}, "trainer", port), fp(0, 2), lambda line: None)
    try:
        with socket.create_connection(("127.0.0.1", port)) as rude:
            hub.step(0.5)
            rude.sendall(b'{"t":"frame","bytes":%d}\n' % (MAX_MESSAGE + 1))
            for _ in range(20):
                hub.step(0.1)
            assert hub.pending == [] and hub.peers == []
    finally:
        hub.close()


FAT_ENV = {f"NCCL_VAR_{i}": "v" * 1000 for i in range(48)}  # ~50 KB per node: 24 nodes' status passes 1 MiB


def test_status_larger_than_the_old_limit_comes_whole(tmp_path):
    """Real check-ins, then node 0 keeps serving while ``nodeweave-entrypoint --status`` (a process) asks."""
    workers = 23
    cluster = Cluster(workers, changes={rank: {"env": FAT_ENV} for rank in range(1, workers + 1)})
    stop = threading.Event()
    server = threading.Thread(target=lambda: [cluster.hub.step(0.05) for _ in iter(stop.is_set, True)])
    try:
        verdict = cluster.decide()
        assert verdict["decision"] == "start" and cluster.errors == {}
        server.start()
        nnodes = workers + 1
        answer = ask_status("127.0.0.1", cluster.port, "trainer", cluster.hub.token, limit=frame_limit(nnodes))
        assert len(json.dumps(answer)) > MAX_MESSAGE
        assert [n["fp"]["env"] for n in answer["nodes"] if not n["own"]] == [FAT_ENV] * workers
        with pytest.raises(ExchangeError, match="this side takes at most"):  # what the old wire could not pass
            ask_status("127.0.0.1", cluster.port, "trainer", cluster.hub.token)
        out = subprocess.run([*ENTRY, "--status", "--nnodes", str(nnodes), "--master-addr",
                              "127.0.0.1", "--master-port", "29500", "--rdzv-id", "trainer"],
                             capture_output=True, text=True, timeout=30, cwd=tmp_path,
                             env=one_machine_env({"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC),
                                                  "NODEWEAVE_EXCHANGE_PORT": str(cluster.port)}))
        assert out.returncode == 0, out.stderr
        assert len(out.stdout) > MAX_MESSAGE
        status = json.loads(out.stdout)
        assert sorted(n["fp"]["rank"] for n in status["nodes"]) == list(range(nnodes))
        assert all(n["fp"]["env"] == FAT_ENV for n in status["nodes"] if not n["own"])
    finally:
        stop.set()
        if server.is_alive():
            server.join(10)
        cluster.close()
