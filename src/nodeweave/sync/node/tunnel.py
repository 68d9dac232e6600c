"""The head's side of a tunnelled sync: one exec carries every node's session, as numbered channels.

Part of the program a target runs (``session.AGENT_PROGRAM``): stdlib only,
Python 3.6-compatible; the source imports the frame format from here too.
Started as ``python3 -I -S -c PROGRAM DEST tunnel``, the head prints
``TUNNEL_HELLO`` and then reads and writes frames only: a 7-byte header
(channel, kind, length) and the data. ``OPEN`` starts a channel: ``local``
is the head's own agent session (run in a thread on pipes), any other names
a resident (``resident.py``) by addresses, port, nonce and ticket, which the
head dials over the cluster network. ``DATA`` and ``EOF`` carry each
direction's bytes; ``EXIT`` ends a channel (with an error when the dial or
the session failed); ``KILL`` drops one. Bytes between a node and the source
are passed on as they come, so the sessions see what an exec would give.
"""

import json
import os
import socket
import struct
import sys
import threading

try:  # in the program sent to a target the modules this uses come first
    RESIDENT_MAGIC  # noqa: B018 - defined ahead of this in the agent program
except NameError:
    from nodeweave.sync.node.peer import connect
    from nodeweave.sync.node.resident import RESIDENT_MAGIC

TUNNEL_HELLO = b"NWTUNNEL1\n"
FRAME = struct.Struct(">HBI")  # channel, kind, length
F_OPEN, F_DATA, F_EOF, F_EXIT, F_KILL = range(5)
FRAME_MAX = 1 << 20  # the most data one frame carries


def read_frame(stream):
    """(channel, kind, data) or None at the end of the stream."""
    header = _read_exact(stream, FRAME.size)
    if header is None:
        return None
    channel, kind, size = FRAME.unpack(header)
    if size > FRAME_MAX:
        raise ValueError("a frame of %d bytes is longer than %d" % (size, FRAME_MAX))
    data = _read_exact(stream, size) if size else b""
    if data is None:
        raise ValueError("the stream ended inside a frame")
    return channel, kind, data


def _read_exact(stream, size):
    parts, left = [], size
    while left:
        part = stream.read(left)
        if not part:
            if parts:
                raise ValueError("the stream ended inside a frame")
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def frames(channel, kind, data=b""):
    """``data`` as one or more frames of at most ``FRAME_MAX`` bytes (an empty one for no data)."""
    if not data:
        return FRAME.pack(channel, kind, 0)
    out = []
    for start in range(0, len(data), FRAME_MAX):
        piece = data[start:start + FRAME_MAX]
        out.append(FRAME.pack(channel, kind, len(piece)) + piece)
    return b"".join(out)


class Out(object):
    """The head's stdout, shared by every channel's thread: one whole frame at a time."""

    def __init__(self, raw):
        self.raw, self.lock = raw, threading.Lock()

    def send(self, channel, kind, data=b""):
        blob = frames(channel, kind, data)
        with self.lock:
            self.raw.write(blob)
            self.raw.flush()


class ChannelText(object):
    """What the head's own session writes as ``sys.stdout``: its lines, framed on channel ``channel``."""

    def __init__(self, out, channel):
        self.out, self.channel = out, channel

    def write(self, text):
        self.out.send(self.channel, F_DATA, text.encode("utf-8", "surrogateescape"))
        return len(text)

    def flush(self):
        pass


def _dial(info):
    """A connection to a resident that passed the ticket's handshake (a relay hop's, the ticket its token)."""
    header = json.dumps({"nonce": info["nonce"], "dest": info["dest"]}).encode("utf-8", "surrogateescape")
    hop = {"addrs": info["addrs"], "port": info["port"], "token": info["ticket"]}
    try:
        return connect(hop, RESIDENT_MAGIC + struct.pack(">I", len(header)) + header)
    except OSError as err:
        raise OSError("no resident answered: %s" % err)


class Head(object):
    """The channels of one tunnel: the own session's pipe or a resident's socket, by number."""

    def __init__(self, root, out, session):
        self.root, self.out, self.session, self.ends = root, out, session, {}

    def open(self, channel, info):
        if info.get("local"):
            read_end, write_end = os.pipe()
            self.ends[channel] = ("pipe", os.fdopen(write_end, "wb", 0))
            sys.stdout = ChannelText(self.out, channel)
            thread = threading.Thread(target=self._own, args=(channel, read_end))
        else:
            ready = threading.Event()
            self.ends[channel] = ("wait", ready)
            thread = threading.Thread(target=self._remote, args=(channel, info, ready))
        thread.daemon = True
        thread.start()

    def _own(self, channel, read_end):
        code, error = 0, None
        try:
            self.session(self.root, os.fdopen(read_end, "rb"))
        except SystemExit as stop:
            code, error = (stop.code, None) if isinstance(stop.code, int) else (1, str(stop.code))
        except Exception as err:  # the source learns why from the channel's end
            code, error = 1, "%s: %s" % (type(err).__name__, err)
        self.out.send(channel, F_EXIT, json.dumps({"code": code, "error": error}).encode())

    def _remote(self, channel, info, ready):
        try:
            conn = _dial(info)
        except OSError as err:
            self.ends[channel] = ("gone", None)
            ready.set()
            self.out.send(channel, F_EXIT, json.dumps({"code": 255, "error": str(err)}).encode())
            return
        self.ends[channel] = ("sock", conn)
        ready.set()
        error = None
        try:  # what the node's session says, to the source, until it ends
            while True:
                data = conn.recv(1 << 16)
                if not data:
                    break
                self.out.send(channel, F_DATA, data)
        except OSError as err:
            error = str(err) or "timed out"
        conn.close()
        self.out.send(channel, F_EXIT, json.dumps({"code": 0, "error": error}).encode())

    def _end(self, channel):
        kind, end = self.ends.get(channel, ("gone", None))
        if kind == "wait":
            end.wait()
            kind, end = self.ends[channel]
        return kind, end

    def data(self, channel, data):
        kind, end = self._end(channel)
        try:
            if kind == "pipe":
                end.write(data)
            elif kind == "sock":
                end.sendall(data)
        except OSError:
            pass  # that node's side ended; its channel's EXIT says why

    def eof(self, channel, kill=False):
        kind, end = self._end(channel)
        try:
            if kind == "pipe":
                end.close()
            elif kind == "sock":
                end.shutdown(socket.SHUT_RDWR if kill else socket.SHUT_WR)
        except OSError:
            pass


def serve_tunnel(root, stdin, raw_out, session):
    """The head's loop: frames from the source to the channels until the source's stdin ends.

    ``session(root, stream)`` is the head's own session (agent.py's).
    """
    raw_out.write(TUNNEL_HELLO)
    raw_out.flush()
    head = Head(root, Out(raw_out), session)
    while True:
        frame = read_frame(stdin)
        if frame is None:
            break
        channel, kind, data = frame
        if kind == F_OPEN:
            head.open(channel, json.loads(data.decode("utf-8", "surrogateescape")))
        elif kind == F_DATA:
            head.data(channel, data)
        elif kind in (F_EOF, F_KILL):
            head.eof(channel, kill=kind == F_KILL)
    for channel in list(head.ends):
        head.eof(channel, kill=True)
