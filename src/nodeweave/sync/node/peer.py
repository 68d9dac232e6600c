"""Target to target: a listener, an authenticated connection, and a reader that forwards what it reads.

Part of the program a target runs (``session.AGENT_PROGRAM``), so stdlib
only and Python 3.6-compatible. With relay a group's payload goes from the
source to the first target only; each target forwards the raw bytes to the
next over TCP as it reads them (``Tee``), so the source pays one relay per
group whatever the number of targets.

Both ends prove they know the hop's token (random, fresh per sync and per
receiving target, given to each end over its own exec channel) without
sending it: HMAC-SHA256 over both ends' nonces, the receiver first. Every
read and write has a time limit, messages have fixed sizes, and a listener
accepts at most ``MAX_ATTEMPTS`` connections and one authenticated peer.
"""

import hashlib
import hmac
import os
import socket
import threading
import time

try:  # in the program sent to a target the modules this uses come first
    listen_address  # noqa: B018
except NameError:
    from nodeweave.sync.node.addresses import listen_address, local_addresses

MAGIC = b"NWRELAY1"
NONCE = 16
MAC = 32
ACK = b"\x06"
CONNECT_S = 3.0  # one address's TCP connect
HOP_S = 6.0  # a whole hop: every address of the next target, and the handshake
ACCEPT_S = 30.0  # how long a fed-by-peer target waits for its upstream, counted from its plan
IDLE_S = 120.0  # no byte moving on a peer connection for this long ends it (as rsync --timeout)
MAX_ATTEMPTS = 16  # unauthenticated connections a listener puts up with before it closes
CHUNK = 1 << 20  # the most a forwarder reads (and sends on) at once


def _mac(token, label, a, b):
    return hmac.new(token.encode("ascii"), label + a + b, hashlib.sha256).digest()


def _recv_exact(sock, size):
    parts, left = [], size
    while left > 0:
        part = sock.recv(left)
        if not part:
            raise OSError("the peer closed the connection during the handshake")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class Listener(object):
    """A TCP listener on an ephemeral port, for this target's one upstream (or a resident's head).

    It listens on the one address the job's peers use (``addresses.listen_address``: the route toward
    the master, ``NODEWEAVE_SYNC_BIND`` to override), and on every address only where none is known.
    """

    def __init__(self, env=None):
        self.address, self.why = listen_address(env)
        if self.address is None:
            try:
                self.sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
                self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                self.sock.bind(("::", 0))
            except OSError:
                self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self.sock.bind(("0.0.0.0", 0))
        else:
            family = socket.AF_INET6 if ":" in self.address else socket.AF_INET
            self.sock = socket.socket(family, socket.SOCK_STREAM)
            self.sock.bind((self.address, 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]

    def addresses(self):
        return [self.address] if self.address else local_addresses()

    def info(self):
        return {"port": self.port, "addrs": self.addresses(), "bind": self.why}

    def accept(self, token, deadline):
        """The first connection that proves it knows ``token`` before ``deadline`` (others are dropped).

        Each handshake runs in its own thread, so a stranger that connects and
        stays silent cannot hold the real upstream off.
        """
        won, errors, lock, done = [], [], threading.Lock(), threading.Event()

        def shake(conn):
            try:
                conn.settimeout(min(HOP_S, max(0.1, deadline - time.time())))
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                _answer(conn, token)
                with lock:
                    if not won:
                        won.append(conn)
                        done.set()
                        return
            except (OSError, ValueError) as err:
                errors.append(str(err) or "timed out")
            conn.close()

        attempts = 0
        while not done.is_set() and time.time() < deadline and attempts < MAX_ATTEMPTS:
            self.sock.settimeout(min(0.2, max(0.01, deadline - time.time())))
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError as err:  # closed under us: the source said the payload comes another way
                errors.append(str(err))
                break
            attempts += 1
            worker = threading.Thread(target=shake, args=(conn,))
            worker.daemon = True
            worker.start()
        done.wait(max(0.0, deadline - time.time()))
        self.close()
        if won:
            won[0].settimeout(IDLE_S)
            return won[0]
        raise OSError("no upstream proved the token within the wait (%s)" % "; ".join(errors[-3:] or ["none came"]))

    def close(self):
        """Stop listening (a shutdown wakes an ``accept`` waiting in another thread)."""
        for step in (lambda: self.sock.shutdown(socket.SHUT_RDWR), self.sock.close):
            try:
                step()
            except OSError:
                pass


def _answer(conn, token):
    """The receiving end of the handshake: prove the token first, then check the sender's proof."""
    hello = _recv_exact(conn, len(MAGIC) + NONCE)
    if not hello.startswith(MAGIC):
        raise ValueError("not a nodeweave relay connection")
    theirs, mine = hello[len(MAGIC):], os.urandom(NONCE)
    conn.sendall(mine + _mac(token, b"receiver", theirs, mine))
    if not hmac.compare_digest(_recv_exact(conn, MAC), _mac(token, b"sender", theirs, mine)):
        raise ValueError("the sender does not know this hop's token")
    conn.sendall(ACK)


def _offer(conn, token):
    """The sending end: the receiver must prove the token before any byte of the payload goes out."""
    mine = os.urandom(NONCE)
    conn.sendall(MAGIC + mine)
    reply = _recv_exact(conn, NONCE + MAC)
    theirs = reply[:NONCE]
    if not hmac.compare_digest(reply[NONCE:], _mac(token, b"receiver", mine, theirs)):
        raise ValueError("the listener does not know this hop's token")
    conn.sendall(_mac(token, b"sender", mine, theirs))
    if _recv_exact(conn, 1) != ACK:
        raise ValueError("the receiver refused the handshake")


def connect(hop, preamble=b""):
    """A connection to ``hop`` ({addrs, port, token}) that passed the handshake, within ``HOP_S``.

    ``preamble`` goes first (a resident's header: which ticket to expect).
    """
    deadline, errors = time.time() + HOP_S, []
    for addr in hop["addrs"]:
        left = deadline - time.time()
        if left <= 0:
            errors.append("%s: no time left" % addr)
            break
        try:
            conn = socket.create_connection((addr, hop["port"]), timeout=min(CONNECT_S, left))
        except OSError as err:
            errors.append("%s: %s" % (addr, err.strerror or err or "timed out"))
            continue
        try:
            conn.settimeout(max(0.1, deadline - time.time()))
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if preamble:
                conn.sendall(preamble)
            _offer(conn, hop["token"])
            conn.settimeout(IDLE_S)
            return conn
        except (OSError, ValueError) as err:
            errors.append("%s: %s" % (addr, err or "timed out"))
            conn.close()
    raise OSError("; ".join(errors) or "no address to try")


class Tee(object):
    """Reads the payload in whole chunks as they arrive, forwards each at once, then serves it to the reader.

    The tar reader asks for 512-byte headers and small files; forwarding at
    that grain would send thousands of tiny segments (and meet Nagle's
    algorithm against delayed ACKs: 40 ms stalls). A downstream that fails
    is dropped with its error; this target's own receive goes on (its
    downstream finds the stream cut and says so).
    """

    def __init__(self, stream, conns):
        self._next = getattr(stream, "read1", stream.read)
        self.buf, self.pos = b"", 0
        self.outs = [{"conn": c, "bytes": 0, "error": None} for c in conns]

    def read(self, size):
        if self.pos >= len(self.buf):
            chunk = self._next(CHUNK)
            if not chunk:
                return b""
            self._forward(chunk)
            self.buf, self.pos = chunk, 0
        data = self.buf[self.pos:self.pos + size]
        self.pos += len(data)
        return data

    def _forward(self, chunk):
        for out in self.outs:
            if out["error"] is None:
                try:
                    out["conn"].sendall(chunk)
                    out["bytes"] += len(chunk)
                except OSError as err:
                    out["error"] = "forwarding stopped after %d bytes: %s" % (out["bytes"], err or "timed out")
                    out["conn"].close()

    def close(self):
        """End every forward (the peer reads EOF) and report what each got."""
        for out in self.outs:
            if out["error"] is None:
                try:
                    out["conn"].shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            out["conn"].close()
        return [{"bytes": o["bytes"], "error": o["error"]} for o in self.outs]
