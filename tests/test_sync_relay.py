"""Relay: the chain's planning (pure), and agents forwarding a payload to each other for real.

The agents run as a target runs them (``python3 -I -S -c PROGRAM DEST``, so
they cannot import nodeweave), on this machine, listening on its own
addresses; the test plays the source's part of the protocol line by line.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nodeweave.sync.node import peer
from nodeweave.sync.transport import relay
from nodeweave.sync.node.digest import digest_files
from nodeweave.sync.transport.payload import tar_stream
from nodeweave.sync.transport.session import AGENT_PROGRAM


@pytest.fixture(autouse=True)
def every_address(monkeypatch):
    """These tests play every node on one machine over 127.0.0.1: the override a one-machine run needs
    (the default listens on the route's address only; tests/test_sync_bind.py holds that)."""
    monkeypatch.setenv("NODEWEAVE_SYNC_BIND", "any")


FILES = {"train.py": b"print('hi')\n", "pkg/model.py": b"x = 1\n" * 1000, "data/blob.bin": os.urandom(5 << 20)}
KINDS = {rel: "f" for rel in FILES}
DIRS = ("data", "pkg")


# --- planning (pure) ---------------------------------------------------------------------------

def test_only_addresses_unique_to_one_target_are_tried():
    listens = {"a": {"port": 1, "addrs": ["10.0.0.1", "172.17.0.1", "127.0.0.1", "fe80::1"]},
               "b": {"port": 2, "addrs": ["10.0.0.2", "172.17.0.1", "fd00::2"]},
               "c": {"port": 3, "addrs": ["172.17.0.1"]}, "d": None, "e": {"port": "x", "addrs": ["10.0.0.5"]}}
    assert relay.usable_addresses(listens) == {"a": ["10.0.0.1"], "b": ["10.0.0.2", "fd00::2"]}


def test_a_chain_and_a_tree_with_a_token_per_receiver():
    tokens = iter(f"t{i}" for i in range(10))
    addrs = {m: [f"10.0.0.{i}"] for i, m in enumerate("abcde")}
    chain = relay.plan_chain(list("abcde"), {**addrs, "c": []}, token=lambda: next(tokens))
    assert chain.order == ["a", "b", "d", "e"]  # c has no address anyone can reach: fed by the source
    assert chain.forwards == {"a": ["b"], "b": ["d"], "d": ["e"]}
    assert chain.tokens == {"b": "t0", "d": "t1", "e": "t2"} and "a" not in chain.tokens
    plan = chain.plan("b", {m: {"port": 7} for m in "abcde"}, addrs)
    assert plan == {"accept": "t0", "forward": [{"addrs": ["10.0.0.3"], "port": 7, "token": "t1"}]}
    tree = relay.plan_chain(list("abcde"), addrs, fanout=2)
    assert tree.forwards == {"a": ["b", "c"], "b": ["d", "e"]}
    assert relay.plan_chain(["a", "b"], {}) is None and relay.plan_chain([], addrs) is None


def test_a_failed_hop_makes_the_source_feed_the_rest_of_the_branch():
    chain = relay.plan_chain(list("abcd"), {m: ["10.0.0.9"] for m in "abcd"})
    ok, bad = {"ok": True}, {"ok": False, "error": "unreachable"}
    assert relay.fed_directly(chain, {"a": [ok], "b": [ok], "c": [ok]}) == ["a"]
    assert relay.fed_directly(chain, {"a": [ok], "b": [bad], "c": [ok]}) == ["a", "c"]
    assert relay.fed_directly(chain, {"a": [ok], "c": [ok]}) == ["a", "c"]  # b never reported
    assert relay.fed_directly(chain, {"a": ["nonsense"], "b": [ok], "c": []}) == ["a", "b", "d"]


def test_when_a_group_is_relayed():
    big = relay.RELAY_MIN_BYTES
    assert relay.wanted("auto", 8, big, True) and not relay.wanted("auto", 8, big - 1, True)
    assert not relay.wanted("auto", 8, big, False)  # e.g. ssh hosts: only when asked for
    assert relay.wanted("on", 2, 1, False) and not relay.wanted("on", 1, big, True)
    assert not relay.wanted("off", 8, big, True)


# --- the listener and the handshake ------------------------------------------------------------

def _addr(listener: peer.Listener) -> dict:
    return {"addrs": ["127.0.0.1"], "port": listener.port}


def test_only_a_peer_that_knows_the_token_gets_through_and_the_wait_is_bounded():
    listener = peer.Listener()
    got = {}
    waiter = threading.Thread(target=lambda: got.update(conn=listener.accept("right", time.time() + 10)))
    waiter.start()
    stranger = socket.create_connection(("127.0.0.1", listener.port))
    stranger.sendall(b"GET / HTTP/1.0\r\n\r\n")  # not a relay handshake: dropped, the wait goes on
    with pytest.raises(OSError, match="does not know this hop's token"):
        peer.connect({**_addr(listener), "token": "wrong"})  # and the token never crossed the wire
    conn = peer.connect({**_addr(listener), "token": "right"})
    waiter.join(10)
    conn.sendall(b"payload")
    assert got["conn"].recv(7) == b"payload"
    with pytest.raises(OSError):  # one authenticated peer, then the listener is closed
        socket.create_connection(("127.0.0.1", listener.port), timeout=2)

    lonely, started = peer.Listener(), time.time()
    with pytest.raises(OSError, match="no upstream proved the token"):
        lonely.accept("t", time.time() + 0.5)
    assert time.time() - started < 3


def test_a_hop_to_nowhere_fails_within_its_bound():
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    started = time.time()
    with pytest.raises(OSError, match="127.0.0.1"):
        peer.connect({"addrs": ["127.0.0.1"], "port": port, "token": "t"})
    assert time.time() - started < peer.HOP_S


class _Recorder:
    """A downstream connection that keeps each ``sendall`` as one segment."""

    def __init__(self):
        self.segments: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.segments.append(bytes(data))


def test_the_tee_forwards_whole_chunks_however_small_the_reads():
    payload = os.urandom(3 * peer.CHUNK + 1234)
    out = _Recorder()
    tee = peer.Tee(io.BufferedReader(io.BytesIO(payload)), [out])
    got = []
    while True:
        part = tee.read(512)  # the tar reader's header-sized reads
        if not part:
            break
        assert len(part) <= 512
        got.append(part)
    assert b"".join(got) == payload
    assert b"".join(out.segments) == payload
    assert len(out.segments) <= 5  # chunks, not one segment per 512-byte read


# --- agents forwarding for real ----------------------------------------------------------------

@pytest.fixture()
def src(tmp_path):
    root = tmp_path / "src"
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


class Agent:
    def __init__(self, dest: Path):
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", AGENT_PROGRAM, str(dest)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def say(self, obj: dict, data: bytes = b"", close: bool = False) -> None:
        self.proc.stdin.write((json.dumps(obj) + "\n").encode() + data)
        self.proc.stdin.flush()
        if close:
            self.proc.stdin.close()

    def hear(self) -> dict:
        return json.loads(self.proc.stdout.readline())

    def result(self) -> dict:
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        answer = self.hear()
        assert self.proc.wait(60) == 0, self.proc.stderr.read().decode()
        return answer


def start(tmp_path: Path, sigs: dict, names: str) -> "dict[str, Agent]":
    agents = {n: Agent(tmp_path / n) for n in names}
    for agent in agents.values():
        agent.say({"sigs": sigs, "dirs": list(DIRS), "then": "plan", "stamp": '{"s": 1}\n', "relay": True})
    return agents


def local_only(listen: dict) -> dict:
    """Where a test's agents, all on this machine, reach each other."""
    return {**listen, "addrs": ["127.0.0.1"]}


def test_three_agents_in_a_chain_each_write_check_and_forward(src, tmp_path):
    sigs = digest_files(str(src), sorted(KINDS))
    agents = start(tmp_path, sigs, "abc")
    listens = {n: local_only(a.hear()["listen"]) for n, a in agents.items()}
    chain = relay.plan_chain(list("abc"), {n: listens[n]["addrs"] for n in "abc"})
    for n in "abc":
        agents[n].say({"receive": True, "relay": chain.plan(n, listens, {m: ["127.0.0.1"] for m in "abc"})})
    assert agents["a"].hear() == {"hops": [{"ok": True}]} and agents["b"].hear() == {"hops": [{"ok": True}]}
    agents["b"].say({"go": "peer"}, close=True)
    agents["c"].say({"go": "peer"}, close=True)
    data = b"".join(tar_stream(src, DIRS, tuple(sorted(KINDS)), KINDS))
    agents["a"].say({"go": "stdin"}, data, close=True)
    results = {n: a.result() for n, a in agents.items()}
    for n, result in results.items():
        assert result["errors"] == [] and result["mismatched"] == {} and result["stamp"] == {"s": 1}, n
        assert result["files"] == len(FILES) and (tmp_path / n / "data/blob.bin").read_bytes() == FILES["data/blob.bin"]
    assert results["a"]["forwarded"][0]["error"] is None and results["c"]["forwarded"] == []
    assert results["a"]["forwarded"][0]["bytes"] >= sum(map(len, FILES.values()))


def test_a_wrong_token_is_reported_and_the_source_feeds_that_target_itself(src, tmp_path):
    sigs = digest_files(str(src), sorted(KINDS))
    agents = start(tmp_path, sigs, "ab")
    listens = {n: local_only(a.hear()["listen"]) for n, a in agents.items()}
    agents["a"].say({"receive": True, "relay": {"accept": None, "forward": [{**listens["b"], "token": "guess"}]}})
    agents["b"].say({"receive": True, "relay": {"accept": "the-real-one", "forward": []}})
    (hop,) = agents["a"].hear()["hops"]
    assert not hop["ok"] and "token" in hop["error"]
    data = b"".join(tar_stream(src, DIRS, tuple(sorted(KINDS)), KINDS))
    agents["b"].say({"go": "stdin"}, data, close=True)
    agents["a"].say({"go": "stdin"}, data, close=True)
    for n, agent in agents.items():
        result = agent.result()
        assert result["errors"] == [] and result["mismatched"] == {} and result["stamp"] == {"s": 1}, n


def test_a_downstream_that_dies_does_not_fail_its_upstream_and_a_cut_stream_is_named(src, tmp_path):
    sigs = digest_files(str(src), sorted(KINDS))
    agents = start(tmp_path, sigs, "ab")
    listens = {n: local_only(a.hear()["listen"]) for n, a in agents.items()}
    agents["a"].say({"receive": True, "relay": {"accept": None, "forward": [{**listens["b"], "token": "t"}]}})
    agents["b"].say({"receive": True, "relay": {"accept": "t", "forward": []}})
    assert agents["a"].hear()["hops"] == [{"ok": True}]
    agents["b"].say({"go": "peer"}, close=True)
    data = b"".join(tar_stream(src, DIRS, tuple(sorted(KINDS)), KINDS))
    agents["a"].say({"go": "stdin"}, data[:len(data) // 2])  # the source stalls half way
    time.sleep(0.5)
    agents["b"].proc.kill()  # the downstream dies while the upstream is still receiving
    agents["b"].proc.wait()
    agents["a"].proc.stdin.write(data[len(data) // 2:])
    result = agents["a"].result()
    assert result["errors"] == [] and result["mismatched"] == {} and result["stamp"] == {"s": 1}
    assert result["forwarded"][0]["error"]  # named, and only a note for the upstream

    agents = start(tmp_path / "again", sigs, "ab")  # now the upstream goes away half way
    listens = {n: local_only(a.hear()["listen"]) for n, a in agents.items()}
    agents["a"].say({"receive": True, "relay": {"accept": None, "forward": [{**listens["b"], "token": "t"}]}})
    agents["b"].say({"receive": True, "relay": {"accept": "t", "forward": []}})
    agents["a"].hear()
    agents["b"].say({"go": "peer"}, close=True)
    agents["a"].say({"go": "stdin"}, data[:len(data) // 2])
    time.sleep(0.5)
    agents["a"].proc.kill()
    result = agents["b"].result()
    assert result["cut"] and "the payload was cut" in result["errors"][0] and result["stamp"] is None
    assert result["mismatched"]  # checked against the source all the same: the missing files named


def test_an_agent_reports_addresses_it_can_be_reached_on(tmp_path):
    agent = Agent(tmp_path / "d")
    agent.say({"sigs": {"x": hashlib.sha256(b"x").hexdigest()}, "dirs": [], "then": "plan", "relay": True})
    listen = agent.hear()["listen"]
    agent.proc.kill()
    assert isinstance(listen["port"], int) and listen["port"] > 0
    assert "127.0.0.1" not in listen["addrs"] and "::1" not in listen["addrs"]
    assert set(listen["addrs"]) <= {a for a in _host_addresses()}


def _host_addresses() -> "set[str]":
    if shutil.which("ip") is None:
        pytest.skip("no ip command to compare the agent's addresses with (Debian: apt-get install iproute2)")
    out = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"ip -o addr failed: {out.stderr.strip()[:200]}")
    return {line.split()[3].split("/")[0] for line in out.stdout.splitlines()}
