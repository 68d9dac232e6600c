"""The exchange's wire: JSON lines over TCP, bounded in size and time, and the job token.

A message is one JSON line of at most :data:`MAX_MESSAGE` bytes; a longer one (a verdict or ``--status`` of
thousands of nodes) is a frame: the line ``{"t":"frame","bytes":N}``, then its N bytes. A receiver takes frames
up to its own limit (node 0 none from the nodes; a node :func:`frame_limit` of its job's size), so size caps no
N and memory stays bounded. Both sides come from one image (fingerprints compare versions); a message that fits
a line is sent as before frames existed. Every read has a deadline and every send a timeout.

Only nodes of this job may take part. The token is derived from the job id and the master port (what every
node of the job was given), or from ``NODEWEAVE_JOB_TOKEN`` (or the file ``NODEWEAVE_JOB_TOKEN_FILE`` names)
when set; it never crosses the wire: node 0 sends a random nonce and the node answers with an HMAC of it and
its fingerprint under the token.
"""

import collections
import hashlib
import hmac
import json
import os
import select
import socket
import time

from ..detection import names
from ..detection.net import lookup_host
from ..errors import ExchangeError
from ..hostport import host_port, listen_family

PROTOCOL = "nodeweave-exchange/1"
MAX_MESSAGE = 1 << 20  # one line; a longer message goes as a frame
PER_NODE_BYTES = 16 << 10  # what a frame may add per node of the job (a status row is ~1 KB, a verdict row ~0.1 KB)
SEND_TIMEOUT_S = 5.0
BEAT_LINE = b'{"t":"beat"}\n'
OUTBOX_MAX = 4 * MAX_MESSAGE  # unread bytes (views of shared bytes) node 0 keeps for a node; beyond, it is dropped


class Closed(ExchangeError):
    pass


def job_token(env, job_id, master_port):
    """The job's shared secret as bytes: ``NODEWEAVE_JOB_TOKEN`` or its file, else the job id and master port."""
    from ..planning.exchange_plan import job_secret

    base = job_secret(env)[0] or f"job={job_id}"
    return hashlib.sha256(f"{PROTOCOL}\0{base}\0port={master_port}".encode()).digest()


def nonce():
    return os.urandom(16).hex()


def proof(token, challenge, body=None):
    """HMAC-SHA256 of the challenge (and a canonical JSON body) under the token, hex."""
    data = challenge.encode() + (b"\0" + canonical(body) if body is not None else b"")
    return hmac.new(token, data, hashlib.sha256).hexdigest()


def verify(token, challenge, mac, body=None):
    return isinstance(mac, str) and hmac.compare_digest(proof(token, challenge, body), mac)


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def encode(obj):
    """One message as it goes on the wire (a JSON line, or a frame); encoded once when many get the same."""
    data = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    return data if len(data) <= MAX_MESSAGE else b'{"t":"frame","bytes":%d}\n' % len(data) + data


def encode_json(body):
    """:func:`encode` for a message already in JSON (one built of parts encoded once for many nodes)."""
    data = body + b"\n"
    return data if len(data) <= MAX_MESSAGE else b'{"t":"frame","bytes":%d}\n' % len(data) + data


def frame_limit(nnodes):
    """The largest message a node of an ``nnodes``-node job takes: grows with N, bounded by what N could need."""
    return MAX_MESSAGE + max(0, nnodes) * PER_NODE_BYTES if isinstance(nnodes, int) else MAX_MESSAGE


class Channel:
    """One connection: send objects, receive them before a deadline, or read what has arrived."""

    def __init__(self, sock, peer=None, limit=MAX_MESSAGE):
        self.sock = sock
        self.seen = None  # the peer's address as node 0's socket saw it, when the caller did not name the peer
        if peer is None:
            self.seen, port = _peer_address(sock)
            peer = host_port(self.seen, port) if self.seen else "peer"
        self.peer = peer
        self.buffer = bytearray()  # grows in place: a frame of many MB arrives in 64 KiB reads
        self.limit, self.frame_left = limit, None  # the largest message taken; the bytes of the frame being read
        self.outbox, self.queued = collections.deque(), 0  # node 0's unsent bytes (see queue)
        # a node's last wake before node 0's verdict reached it (``exchange._await_verdict``): node 0 counts its
        # silence from the verdict, so the heartbeat's own-pause check does too (``heartbeat.LinkWatch``)
        self.awake = None
        sock.settimeout(SEND_TIMEOUT_S)

    def fileno(self):
        return self.sock.fileno()

    def send(self, obj):
        data = encode(obj)
        try:
            self.sock.sendall(data)
        except OSError as err:
            raise Closed(f"sending to {self.peer} failed: {err.strerror or err}") from None

    def queue(self, data):
        """Node 0's send: add encoded bytes (shared by every node that gets the same message) to this
        connection's outbox and send what the socket takes now, never waiting; True when nothing is left.
        Closed when the node has left more than :data:`OUTBOX_MAX` bytes unread, or is gone."""
        if not self.outbox:  # the common case: nothing waiting, the socket takes it all at once
            try:
                sent = self.sock.send(data, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as err:
                raise Closed(f"sending to {self.peer} failed: {err.strerror or err}") from None
            if sent == len(data):
                return True
            data = memoryview(data)[sent:]
        if self.queued and self.queued + len(data) > OUTBOX_MAX:  # one message alone may be larger (a frame)
            raise Closed(f"{self.peer} is not reading: {self.queued} bytes still unsent")
        self.outbox.append(memoryview(data))
        self.queued += len(data)
        return self.flush()

    def flush(self):
        """Send what the outbox holds as far as the socket takes it without waiting; True when empty."""
        while self.outbox:
            head = self.outbox[0]
            try:
                sent = self.sock.send(head, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as err:
                raise Closed(f"sending to {self.peer} failed: {err.strerror or err}") from None
            self.queued -= sent
            if sent < len(head):
                self.outbox[0] = head[sent:]
                return False
            self.outbox.popleft()
        return True

    def _pop(self):
        if self.frame_left is not None:
            if len(self.buffer) < self.frame_left:
                return None
            body = bytes(self.buffer[:self.frame_left])
            del self.buffer[:self.frame_left]
            self.frame_left = None
            return self._parse(body)
        end = self.buffer.find(b"\n")
        if end < 0:
            if len(self.buffer) > MAX_MESSAGE:
                raise ExchangeError(f"{self.peer} sent more than {MAX_MESSAGE} bytes without a message end")
            return None
        line = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        message = self._parse(line)
        if message.get("t") == "frame":
            self._begin_frame(message.get("bytes"))
            return self._pop()
        return message

    def _begin_frame(self, size):
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise ExchangeError(f"{self.peer} announced a frame of {size!r} bytes; a frame is a positive size")
        if size > self.limit:
            raise ExchangeError(f"{self.peer} announced a message of {size} bytes; this side takes at most "
                                f"{self.limit} (wire.frame_limit of the job's node count)")
        self.frame_left = size

    def _parse(self, line):
        try:
            message = json.loads(line)
        except ValueError:
            raise ExchangeError(f"{self.peer} sent something that is not the exchange's JSON") from None
        if not isinstance(message, dict):
            raise ExchangeError(f"{self.peer} sent a JSON {type(message).__name__}, not an object")
        return message

    def _recv(self):
        chunk = self.sock.recv(max(65536, min(self.frame_left or 0, 4 << 20) - len(self.buffer)))
        if not chunk:
            raise Closed(f"{self.peer} closed the connection")
        self.buffer += chunk

    def receive(self, deadline, clock=time.monotonic):
        """The next message; ExchangeError when ``deadline`` (a ``clock()`` time) passes first."""
        while True:
            message = self._pop()
            if message is not None:
                return message
            left = deadline - clock()
            if left <= 0:
                raise ExchangeError(f"no answer from {self.peer} in time")
            try:
                if readable([self.sock], left):
                    self._recv()
            except OSError as err:
                raise Closed(f"{self.peer}: {err.strerror or err}") from None

    def drain(self):
        """Messages that have arrived (call when ``select`` says readable); Closed at end of stream."""
        try:
            self._recv()
        except (BlockingIOError, InterruptedError, socket.timeout):
            pass
        except OSError as err:
            raise Closed(f"{self.peer}: {err.strerror or err}") from None
        return self.buffered()

    def buffered(self):
        """The complete messages already read, without reading more."""
        # A beat is by far the commonest message: node 0 reads ~500 a second at 1,024 nodes.
        if self.frame_left is None and self.buffer == BEAT_LINE:
            del self.buffer[:]
            return [{"t": "beat"}]
        messages = []
        while True:
            message = self._pop()
            if message is None:
                return messages
            messages.append(message)

    def finish(self, wait_s=2.0):
        """Half-close, then read until the peer closes too (bounded): a plain close could turn into a
        reset that destroys what the peer has not read yet."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
                if not self.sock.recv(65536):
                    break
        except OSError:
            pass
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def finish_all(channels, wait_s=1.0):
    """:meth:`Channel.finish` for many at once: half-close all, then read until each peer closes or
    ``wait_s`` passes (one wait for all, not one per node; one poll set, each socket found by its descriptor)."""
    open_ones = {}
    poller = select.poll()
    for channel in channels:
        try:
            channel.sock.shutdown(socket.SHUT_WR)
            fd = channel.sock.fileno()
            open_ones[fd] = channel
            poller.register(fd, select.POLLIN)
        except OSError:
            channel.close()
    deadline = time.monotonic() + wait_s
    while open_ones and time.monotonic() < deadline:
        try:
            events = poller.poll(max(0, int((deadline - time.monotonic()) * 1000)))
        except InterruptedError:
            continue
        for fd, _ in events:
            channel = open_ones.get(fd)
            if channel is None:
                continue
            try:
                done = not channel.sock.recv(65536)
            except OSError:
                done = True
            if done:
                poller.unregister(fd)
                del open_ones[fd]
                channel.close()
    for channel in open_ones.values():
        channel.close()


def readable(socks, timeout_s):
    """The sockets of ``socks`` with something to read (or closed), waiting up to ``timeout_s``.

    ``poll``, not ``select``: node 0 of a large job watches more than select's 1024 descriptors.
    """
    poller = select.poll()
    by_fd = {}
    for sock in socks:
        fd = sock.fileno()
        if fd >= 0:
            by_fd[fd] = sock
            poller.register(fd, select.POLLIN)
    try:
        events = poller.poll(max(0, int(timeout_s * 1000)))
    except InterruptedError:
        return []
    return [by_fd[fd] for fd, _ in events if fd in by_fd]


def _peer_address(sock):
    """(address, port) of the socket's peer; (None, None) once it is gone. An IPv4 peer of a dual-stack
    listener (:func:`listen`) is named by its IPv4 address, as an IPv4 listener names it."""
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return None, None
    if host.startswith("::ffff:") and "." in host:
        host = host[len("::ffff:"):]
    return host, port


def listen(bind, port, backlog=None):
    """A listening TCP socket on ``bind`` (empty: every address, IPv6 too: ``hostport.listen_family``), so
    nodes given node 0 as an IPv6 address (MASTER_ADDR=fd00::1) reach it as well as those given an IPv4
    address or a name."""
    family, dual_stack = listen_family(bind)
    return socket.create_server((bind, port), family=family, backlog=backlog, dualstack_ipv6=dual_stack)


def connect(host, port, timeout_s, limit=MAX_MESSAGE):
    """A Channel to ``host:port`` taking messages up to ``limit`` bytes; ExchangeError naming it when the
    connection fails."""
    try:
        sock = names.create_connection(lookup_host(host), port, timeout_s)
    except socket.timeout:
        raise ExchangeError(f"connecting to {host_port(host, port)} timed out after {timeout_s:g}s") from None
    except OSError as err:
        raise ExchangeError(f"connecting to {host_port(host, port)} failed: {err.strerror or err}") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Channel(sock, host_port(host, port), limit)
