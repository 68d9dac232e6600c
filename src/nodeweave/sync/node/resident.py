"""A target's resident agent: left running after a sync so the next one reaches the node without an exec.

Part of the program a target runs (``session.AGENT_PROGRAM``): stdlib only,
Python 3.6-compatible. An exec'd agent asked to ``keep`` one starts it (or
finds the one already there, by a state file only its user can read) and
reports its port, addresses and key over its own exec channel; the source
records them (``registry.py``). The next sync execs into one node only (the
head, ``tunnel.py``), which dials each other node's resident over the
cluster network; the resident forks a child that runs the same agent
session on the connection. So a sync of N held nodes starts one exec.

The head is never given a resident's key: the source gives it a ticket per
sync, node and DEST (HMAC of the key over a fresh nonce and DEST), which the
resident accepts once (an ``O_EXCL`` file per nonce) and only for
``TICKET_S`` after it was made, through the same mutual handshake as the
relay's hops. A resident ends after ``idle`` seconds without a sync, when
its container stops, or when a newer agent program replaces it.
"""

import hashlib
import hmac
import json
import os
import signal
import socket
import struct
import sys
import time

try:  # in the program sent to a target the modules this uses come first
    _answer  # noqa: B018
except NameError:
    from nodeweave.sync.node.peer import HOP_S, Listener, _answer, _recv_exact  # noqa: F401

RESIDENT_MAGIC = b"NWRESID1"
TICKET_S = 600.0  # a ticket's nonce is taken this long after it was made, and once
MAX_CHILDREN = 16  # sessions served at once; further connections are closed at once
HEADER_MAX = 1 << 16


def make_ticket(key, nonce, dest):
    """What the head proves to a resident for one sync of ``dest`` (the key itself never leaves the source)."""
    return hmac.new(key.encode("ascii"), b"ticket\0" + nonce.encode("ascii") + b"\0" + os.fsencode(dest),
                    hashlib.sha256).hexdigest()


def new_nonce():
    return "%x-%s" % (int(time.time()), os.urandom(12).hex())


def _state_dir():
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", "nodeweave-sync-%d" % os.getuid())


def _started(pid):
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat); None when it is gone.

    A zombie counts as gone: where the container's first process reaps
    nobody (``sleep infinity``), an ended resident stays one.
    """
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else fields[19]
    except (OSError, IndexError):
        return None


def _alive(state):
    """Whether the state file's resident still runs (its pid, at the same start time: not a reused pid)."""
    return _started(int(state["pid"])) == state["started"]


def ensure(program, idle, session):
    """The resident of this node for ``program`` (started if none runs): its port, addresses, key.

    ``session(root, stream)`` is what it runs for each connection (agent.py's).
    """
    folder = _state_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if os.stat(folder).st_uid != os.getuid() or os.stat(folder).st_mode & 0o077:
        return None  # somebody else's folder: never trust or write it
    path = os.path.join(folder, "resident.json")
    try:
        with open(path) as f:
            state = json.load(f)
        if _alive(state):
            if state["program"] == program:
                return dict((k, state[k]) for k in ("port", "addrs", "key", "program"))
            os.kill(int(state["pid"]), signal.SIGTERM)  # an older program: this one replaces it
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return _start(folder, path, program, idle, session)


def _start(folder, path, program, idle, session):
    import select
    import warnings
    listener = Listener()
    key = os.urandom(32).hex()
    info = {"port": listener.port, "addrs": listener.addresses(), "key": key, "program": program}
    ready_r, ready_w = os.pipe()
    with warnings.catch_warnings():  # a head forks from its session's thread; the child keeps nothing of them
        warnings.simplefilter("ignore", DeprecationWarning)
        first = os.fork()
    if first > 0:
        listener.sock.close()
        os.close(ready_w)
        os.waitpid(first, 0)  # the first child exits as soon as it has forked the resident
        select.select([ready_r], [], [], 10.0)  # its state file is written: a sync right after finds it
        os.close(ready_r)
        return info
    try:
        os.setsid()
        if os.fork() > 0:
            os._exit(0)
        _detach((listener.sock.fileno(), ready_w))
        tmp = path + ".%d" % os.getpid()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(dict(info, pid=os.getpid(), started=_started(os.getpid())), f)
        os.replace(tmp, path)
        os.close(ready_w)
        _serve(listener.sock, key, float(idle), folder, session)
    finally:
        os._exit(0)


def _detach(keep):  # keep: the descriptors to keep
    """Leave the exec: its pipes, and every other descriptor the agent held (a head's channels among them)."""
    os.chdir("/")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(sock, key, idle, folder, session):
    """Accept until ``idle`` seconds pass with no session; each connection is served by a forked child."""
    nonces = os.path.join(folder, "nonces")
    os.makedirs(nonces, mode=0o700, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    children, last = set(), time.time()
    while time.time() - last < idle or children:
        _reap(children)
        sock.settimeout(1.0)
        try:
            conn, _ = sock.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        if len(children) >= MAX_CHILDREN:
            conn.close()
            continue
        last = time.time()
        pid = os.fork()
        if pid == 0:
            sock.close()
            try:
                _child(conn, key, nonces, session)
            finally:
                os._exit(0)
        children.add(pid)
        conn.close()
        _forget_old(nonces)


def _reap(children):
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _forget_old(nonces):
    """Nonce files older than a ticket's life can go: their tickets are refused by age anyway."""
    limit = time.time() - 2 * TICKET_S
    for name in os.listdir(nonces):
        try:
            if os.lstat(os.path.join(nonces, name)).st_mtime < limit:
                os.unlink(os.path.join(nonces, name))
        except OSError:
            pass


def read_header(conn):
    """The head's first words: the nonce, DEST and the program it expects."""
    size = struct.unpack(">I", _recv_exact(conn, 4))[0]
    if size > HEADER_MAX:
        raise ValueError("header too long")
    header = json.loads(_recv_exact(conn, size).decode("utf-8", "surrogateescape"))
    if not isinstance(header, dict) or not isinstance(header.get("nonce"), str) or not isinstance(
            header.get("dest"), str):
        raise ValueError("malformed header")
    return header


def _child(conn, key, nonces, session):
    """Check the ticket (fresh, used once), then run one agent session on the connection."""
    conn.settimeout(HOP_S)
    try:
        if _recv_exact(conn, len(RESIDENT_MAGIC)) != RESIDENT_MAGIC:
            return
        header = read_header(conn)
        nonce = header["nonce"]
        made = int(nonce.split("-", 1)[0], 16)
        if abs(time.time() - made) > TICKET_S or len(nonce) > 64 or not nonce.replace("-", "").isalnum():
            return
        _answer(conn, make_ticket(key, nonce, header["dest"]))  # proves both ends
        os.close(os.open(os.path.join(nonces, nonce), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except (OSError, ValueError):
        return  # a stranger, a replay or a stale ticket: the connection just ends
    conn.settimeout(None)
    os.dup2(conn.fileno(), 0)
    os.dup2(conn.fileno(), 1)
    conn.close()
    sys.stdout = os.fdopen(1, "w")  # a fresh one: the forking process's may be a head's, with its lock
    session(header["dest"], os.fdopen(0, "rb"))
    sys.stdout.flush()
