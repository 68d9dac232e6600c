"""Residents and the tunnel: real agent processes on this machine, the source's side driven by ``Session``.

The head runs as a target runs it (``python3 -I -S -c PROGRAM DEST tunnel``)
and each node's resident is started the way a sync starts it (an exec'd
agent asked to ``keep`` one), each with its own ``TMPDIR`` as separate
containers would have; they reach each other on 127.0.0.1. What is checked:
a session through the head writes, checks and stamps as one over its own
exec; a ticket is taken once, for its DEST, while fresh, and never without
the key; a node that cannot be reached, or a head that dies, ends its
channels with the reason; residents are reused, replaced and end when idle.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from nodeweave.remote.base import Remote
from nodeweave.sync.source import registry
from nodeweave.sync.node.digest import digest_files
from nodeweave.sync.source.headlink import HeadLink
from nodeweave.sync.transport.payload import tar_stream
from nodeweave.sync.node.resident import make_ticket, new_nonce
from nodeweave.sync.transport.session import AGENT_PROGRAM, Request, Session, TransferError
from nodeweave.sync.node.tunnel import FRAME_MAX, F_DATA, F_EXIT, frames, read_frame
from test_sync_relay import DIRS, FILES, KINDS, src  # noqa: F401 - src is a fixture used by name


@pytest.fixture(autouse=True)
def every_address(monkeypatch):
    """These tests play every node on one machine over 127.0.0.1: the override a one-machine run needs
    (the default listens on the route's address only; tests/test_sync_bind.py holds that)."""
    monkeypatch.setenv("NODEWEAVE_SYNC_BIND", "any")


AGENT = [sys.executable, "-I", "-S", "-c", AGENT_PROGRAM]


@dataclass(frozen=True)
class Here(Remote):
    kind = "here"

    def exec_argv(self, argv, stdin=True, tty=False):
        return list(argv)


# --- frames (pure) --------------------------------------------------------------------------------

def test_frames_split_long_data_and_read_back_in_order():
    import io
    blob = os.urandom(FRAME_MAX + 10)
    stream = io.BytesIO(frames(3, F_DATA, blob) + frames(3, F_EXIT, b"{}"))
    first, second, third = read_frame(stream), read_frame(stream), read_frame(stream)
    assert (first[0], first[1], len(first[2])) == (3, F_DATA, FRAME_MAX)
    assert first[2] + second[2] == blob and third == (3, F_EXIT, b"{}") and read_frame(stream) is None


def test_a_cut_or_oversized_frame_is_refused():
    import io
    import struct
    with pytest.raises(ValueError, match="ended inside a frame"):
        read_frame(io.BytesIO(frames(1, F_DATA, b"abcdef")[:-2]))
    with pytest.raises(ValueError, match="longer than"):
        read_frame(io.BytesIO(struct.pack(">HBI", 1, F_DATA, FRAME_MAX + 1)))


def test_a_ticket_is_bound_to_key_nonce_and_dest():
    nonce = new_nonce()
    assert make_ticket("ab" * 32, nonce, "/w") == make_ticket("ab" * 32, nonce, "/w")
    assert len({make_ticket("ab" * 32, nonce, "/w"), make_ticket("cd" * 32, nonce, "/w"),
                make_ticket("ab" * 32, new_nonce(), "/w"), make_ticket("ab" * 32, nonce, "/x")}) == 4


# --- the registry ---------------------------------------------------------------------------------

def test_the_registry_keeps_residents_per_target_and_program_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    a, b = Here("a"), Here("b")
    info = {"port": 4000, "addrs": ["10.0.0.2"], "key": "k" * 64, "program": "p1"}
    registry.update({a: info, b: dict(info, port=4001)}, [])
    assert registry.known([a, b], "p1") == {a: info, b: dict(info, port=4001)}
    assert registry.known([a, b], "p2") == {}  # another nodeweave's agent is not used
    registry.update({b: dict(info, port=4001)}, [b])  # reported by its exec, but the head could not reach it
    assert list(registry.known([a, b], "p1")) == [a]
    registry.update({b: dict(info, port=4001)}, [])  # the same resident again: still skipped for an hour
    assert list(registry.known([a, b], "p1")) == [a]
    registry.update({b: dict(info, port=4002, key="n" * 64)}, [])  # a new one (the container restarted)
    assert registry.known([b], "p1")[b]["port"] == 4002
    path = tmp_path / "nodeweave" / "sync" / "residents.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("not json")
    assert registry.known([a], "p1") == {}


# --- real processes -------------------------------------------------------------------------------

def resident(home: Path, program: str = "p1", idle: float = 60) -> dict:
    """Start (or find) the resident of a node whose TMPDIR is ``home``, as a sync's exec'd agent does."""
    home.mkdir(exist_ok=True)
    request = {"sigs": {}, "dirs": [], "then": "exit", "keep": {"program": program, "idle": idle}}
    out = subprocess.run([*AGENT, str(home / "dest"), "make"], input=(json.dumps(request) + "\n").encode(),
                         capture_output=True, env=dict(os.environ, TMPDIR=str(home)), timeout=30)
    assert out.returncode == 0, out.stderr.decode()
    found = json.loads(out.stdout.splitlines()[0])["resident"]
    assert found and found["program"] == program
    return found


def state(home: Path) -> dict:
    return json.loads((home / f"nodeweave-sync-{os.getuid()}" / "resident.json").read_text())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]


@pytest.fixture()
def nodes(tmp_path):
    """Homes of nodes whose residents are stopped at the end."""
    homes = []

    def make(name: str) -> Path:
        homes.append(tmp_path / name)
        return homes[-1]
    yield make
    for home in homes:
        try:
            os.kill(int(state(home)["pid"]), signal.SIGTERM)
        except (OSError, ValueError):
            pass


@pytest.fixture()
def head(tmp_path):
    links = []

    def start() -> HeadLink:
        (tmp_path / "head").mkdir(exist_ok=True)
        links.append(HeadLink([*AGENT, str(tmp_path / "head" / "dest"), "tunnel"], Here("head")))
        return links[-1]
    yield start
    for link in links:
        link.close()


def channel_to(link: HeadLink, info: dict, dest: str, nonce: "str | None" = None, key: "str | None" = None):
    nonce = nonce or new_nonce()
    return link.open({"addrs": ["127.0.0.1"], "port": info["port"], "nonce": nonce, "dest": dest,
                      "ticket": make_ticket(key or info["key"], nonce, dest)})


def sync_through(session: Session, src: Path) -> dict:
    sigs = digest_files(str(src), sorted(KINDS))
    manifest = session.open(Request(sigs, list(DIRS), then="plan", stamp='{"s": 1}\n'))
    assert set(manifest.differ) == set(FILES)
    session.say({"receive": True, "delete": [], "rmdirs": []})
    with os.fdopen(session.payload_fd(), "wb") as payload:
        for chunk in tar_stream(src, DIRS, tuple(sorted(KINDS)), KINDS):
            payload.write(chunk)
    return session.finish()


def test_sessions_through_the_head_write_check_and_stamp_like_their_own_exec(nodes, head, src):
    homes = [nodes("n1"), nodes("n2")]
    infos = [resident(h) for h in homes]
    link = head()
    sessions = [Session(Here("head"), "-", dry=False, proc=link.open({"local": True}))]
    sessions += [Session(Here(h.name), str(h / "dest"), dry=False, proc=channel_to(link, i, str(h / "dest")))
                 for h, i in zip(homes, infos)]
    for s in sessions:
        result = sync_through(s, src)
        assert result["errors"] == [] and result["mismatched"] == {} and result["stamp"] == {"s": 1}
    for h in homes:
        assert (h / "dest" / "data" / "blob.bin").read_bytes() == FILES["data/blob.bin"]
    assert (Path(link.proc.args[-2]) / "train.py").read_bytes() == FILES["train.py"]  # the head's own DEST


def test_a_ticket_is_taken_once_for_its_dest_while_fresh_and_never_without_the_key(nodes, head):
    home = nodes("n1")
    info = resident(home)
    link = head()
    dest = str(home / "dest")
    nonce = new_nonce()
    ok = Session(Here("n1"), dest, dry=False, proc=channel_to(link, info, dest, nonce=nonce))
    assert ok.open(Request({}, [], then="exit")).dest_ok
    ok.close()
    stale, other = "%x-%s" % (int(time.time()) - 3600, os.urandom(12).hex()), new_nonce()
    for proc in (channel_to(link, info, dest, nonce=nonce),  # a replay
                 channel_to(link, info, dest, key="ef" * 32),  # a guessed key
                 channel_to(link, info, dest, nonce=stale),  # an hour old
                 link.open({"addrs": ["127.0.0.1"], "port": info["port"], "nonce": other, "dest": "/etc",
                            "ticket": make_ticket(info["key"], other, dest)})):  # another DEST
        with pytest.raises(TransferError) as err:
            Session(Here("n1"), dest, dry=False, proc=proc).open(Request({}, [], then="exit"), timeout=20)
        assert err.value.transient  # over its own exec, a retry can do it
    assert not Path("/etc/.nodeweave-sync.cache").exists()


def test_a_node_nobody_listens_for_ends_its_channel_with_the_reason(head, tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    link = head()
    proc = channel_to(link, {"port": port, "key": "ab" * 32}, str(tmp_path / "x"))
    with pytest.raises(TransferError, match="no resident answered: 127.0.0.1"):
        Session(Here("n1"), str(tmp_path / "x"), dry=False, proc=proc).open(Request({}, [], then="exit"), timeout=20)


# The head as a recorder: it starts a tunnel, then writes down each frame as it comes (channel, kind, data).
RECORDING_HEAD = """
import json, sys
from nodeweave.sync.node.tunnel import TUNNEL_HELLO, read_frame
sys.stdout.buffer.write(TUNNEL_HELLO)
sys.stdout.buffer.flush()
with open(sys.argv[1], "w") as log:
    while (frame := read_frame(sys.stdin.buffer)) is not None:
        log.write(json.dumps([frame[0], frame[1], frame[2][:40].decode(errors="replace")]) + "\\n")
"""


def test_a_line_said_on_one_channel_reaches_the_head_before_what_another_writes_after_it(tmp_path, monkeypatch):
    """A relayed payload goes to the head's own session, which forwards it to a node that waits for its
    ``go`` line first; had the payload's frames taken the link before that line, the head (which hands
    frames on one at a time) would wait on a forward that waits on the line. Channel 1's frames are held
    back here as a pump thread the scheduler starts late would hold them, and its ``go`` still comes first."""
    real_send = HeadLink.send

    def late_for_channel_1(self, number, kind, data=b""):
        if number == 1:
            time.sleep(0.5)
        return real_send(self, number, kind, data)
    monkeypatch.setattr(HeadLink, "send", late_for_channel_1)
    log = tmp_path / "frames.jsonl"
    link = HeadLink([sys.executable, "-c", RECORDING_HEAD, str(log)], Here("head"))
    own, peer_fed = link.open({"local": True}), link.open({"local": True})
    Session(Here("n1"), "/x", dry=False, proc=peer_fed).say({"go": "peer"}, close=True)
    own.stdin.write(b"payload " * 1000)
    own.stdin.close()
    assert own.stdin.closed
    link.close()
    frames_seen = [tuple(json.loads(line)[:2]) + (json.loads(line)[2][:12],) for line in log.read_text().splitlines()]
    data = [f for f in frames_seen if f[1] == F_DATA]
    assert data[0] == (1, F_DATA, '{"go": "peer'), frames_seen
    assert [f[0] for f in data[1:]] == [0] * (len(data) - 1), frames_seen


@pytest.mark.parametrize("script, said, code", [
    ("echo the head broke >&2; exit 7", "it said b''.*the head broke", 7),
    # the launcher's answer where python3 is missing; it then waits for its stdin's end
    ("echo nopython; echo has:tar; cat >/dev/null; exit 0", "it said b'nopython", 255),
])
def test_a_head_that_dies_or_has_no_python_ends_every_channel_with_the_reason(script, said, code):
    link = HeadLink(["sh", "-c", script], Here("head"))
    channels = [link.open({"local": True}), link.open({"local": True})]
    started = time.monotonic()
    for proc in channels:
        with pytest.raises(TransferError, match="did not start a tunnel.*" + said) as err:
            Session(Here("head"), "/x", dry=False, proc=proc).open(Request({}, [], then="exit"), timeout=20)
        assert err.value.transient and proc.wait(5) == code
    assert time.monotonic() - started < 10
    link.close()


def test_a_resident_is_reused_replaced_by_a_newer_program_and_ends_when_idle(nodes):
    home = nodes("n1")
    first = resident(home, "p1")
    assert resident(home, "p1") == first  # reused: same port and key
    old_pid = int(state(home)["pid"])
    second = resident(home, "p2", idle=1)
    assert second["key"] != first["key"] and state(home)["program"] == "p2"
    new_pid = int(state(home)["pid"])
    deadline = time.time() + 60  # a bound: an idle second's end comes late on a loaded machine
    while time.time() < deadline and (alive(old_pid) or alive(new_pid)):
        time.sleep(0.2)
    assert not alive(old_pid), "the older program's resident still runs"
    assert not alive(new_pid), "an idle resident did not end"
