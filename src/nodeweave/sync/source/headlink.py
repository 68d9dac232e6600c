"""The source's end of a tunnel (``tunnel.py``): one exec into the head carries every node's session.

Each channel looks like the ``subprocess.Popen`` of an exec to ``Session``
(real pipes for stdin, stdout and stderr; ``wait``, ``poll``, ``kill``), so
a session through the head is driven exactly as one through its own exec,
payload included. A thread per channel frames what the session writes; one
thread reads the head's frames and hands each channel its bytes. When the
head's exec ends, every channel still open ends with its exit code and
stderr.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading

from nodeweave.remote import Remote
from nodeweave.sync.source import registry
from nodeweave.sync.transport.payload import write_all
from nodeweave.sync.transport.relay import usable_addresses
from nodeweave.sync.node.resident import make_ticket, new_nonce
from nodeweave.sync.transport.session import PROGRAM_ID, session_argv
from nodeweave.sync.node.tunnel import F_DATA, F_EOF, F_EXIT, F_KILL, F_OPEN, FRAME_MAX, TUNNEL_HELLO, frames, read_frame

RESIDENT_IDLE_S = 1800.0  # a node's resident agent ends after this long without a sync


def reaches_all(targets: "list[Remote]") -> bool:
    """Whether one exec into ``targets[0]`` reaches every other target (each one's resident on record, at an
    address of its own): then a round of them all costs one exec client, so ``--jobs`` need not cut it up."""
    if len(targets) < 2:
        return False
    return len(usable_addresses(registry.known(targets[1:], PROGRAM_ID))) == len(targets) - 1


class ChannelInput(io.FileIO):
    """A channel's stdin as ``Session`` writes it: the pipe its pump reads, counting the bytes written through
    it, so the channel can tell when they are on the link (``Channel.wait_framed``)."""

    written = 0

    def write(self, data) -> int:
        size = super().write(data)
        self.written += size or 0
        return size


class Channel:
    """One node's session inside the tunnel, shaped as the exec process ``Session`` expects.

    Every channel's bytes share the head's one stdin, and the head hands them on in the order they come. A
    relayed payload makes that order matter: the head's own session forwards the payload to a node that
    waits for its ``go`` line first, so a ``go`` still in its channel's pump when the payload's frames take
    the link would wait behind bytes that cannot move before it (the peer connection then sat idle until
    ``IDLE_S``). ``wait_framed`` is what lets ``Session.say`` return only once its line is on the link.
    """

    tunnel = True  # any failure after the channel opened is worth a retry over the node's own exec

    def __init__(self, link: "HeadLink", number: int):
        self.link, self.number, self.returncode = link, number, None
        stdin_r, stdin_w = os.pipe()
        stdout_r, self._stdout_w = os.pipe()
        stderr_r, self._stderr_w = os.pipe()
        self.stdin = ChannelInput(stdin_w, "wb")
        self.stdout = os.fdopen(stdout_r, "rb", 0)
        self.stderr = os.fdopen(stderr_r, "rb", 0)
        self._ended, self._lock = threading.Event(), threading.Lock()
        self._progress = threading.Condition()
        self._framed = 0
        self._pumped_all = False
        threading.Thread(target=self._pump, args=(stdin_r,), daemon=True).start()

    def _pump(self, stdin_r: int) -> None:
        """What the session writes (lines, the payload) to the head, then the end of it."""
        try:
            while data := os.read(stdin_r, FRAME_MAX):  # up to the pipe's size (Session sets 1 MiB)
                self.link.send(self.number, F_DATA, data)
                with self._progress:
                    self._framed += len(data)
                    self._progress.notify_all()
            self.link.send(self.number, F_EOF)
        finally:
            os.close(stdin_r)
            with self._progress:
                self._pumped_all = True
                self._progress.notify_all()

    def wait_framed(self) -> None:
        """Return once every byte written to ``stdin`` so far is on the link, ahead of anything another
        channel writes after this call (or once the pump has ended: a broken link sends nothing more)."""
        with self._progress:
            target = self.stdin.written
            self._progress.wait_for(lambda: self._framed >= target or self._pumped_all)

    def deliver(self, data: bytes) -> None:
        try:
            write_all(self._stdout_w, data)
        except OSError:
            pass  # the session stopped reading; its end comes with EXIT

    def end(self, code: int, error: "str | None") -> None:
        with self._lock:
            if self.returncode is not None:
                return
            self.returncode = code
        if error:
            try:
                write_all(self._stderr_w, error.encode(errors="replace") + b"\n")
            except OSError:
                pass
        for fd in (self._stdout_w, self._stderr_w):
            os.close(fd)
        self._ended.set()

    def wait(self, timeout: "float | None" = None) -> "int | None":
        self._ended.wait(timeout)
        return self.returncode

    def poll(self) -> "int | None":
        return self.returncode

    def kill(self) -> None:
        self.link.send(self.number, F_KILL)
        self.end(-9, None)


class HeadLink:
    """One exec into the head started in tunnel mode; channels are opened on it one per node."""

    def __init__(self, argv: "list[str]", head: Remote):
        self.head = head
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     bufsize=0)
        self.channels: "dict[int, Channel]" = {}
        self.ended = threading.Event()  # the head's exec is over: its channels' failures say nothing of the nodes
        self._send_lock, self._stderr = threading.Lock(), []
        self._stderr_thread = threading.Thread(target=lambda: self._stderr.append(self.proc.stderr.read()),
                                               daemon=True)
        self._stderr_thread.start()
        threading.Thread(target=self._demux, daemon=True).start()

    def open(self, info: dict) -> Channel:
        """A channel to the head's own session (``{"local": True}``) or to a resident (addresses, ticket)."""
        with self._send_lock:  # sessions open from a pool of threads: numbers must not collide
            channel = Channel(self, len(self.channels))
            self.channels[channel.number] = channel
            over = self.ended.is_set()
        if over:
            channel.end(*self._end)
        else:
            self.send(channel.number, F_OPEN, json.dumps(info).encode())
        return channel

    def send(self, number: int, kind: int, data: bytes = b"") -> None:
        blob = frames(number, kind, data)
        with self._send_lock:
            try:
                self.proc.stdin.write(blob)
            except (BrokenPipeError, ValueError, OSError):
                pass  # the head's exec ended; the demux ends every channel with its reason

    def _demux(self) -> None:
        stream = io.BufferedReader(self.proc.stdout, 1 << 16)
        why = None
        try:
            hello = stream.readline(64)
            if hello != TUNNEL_HELLO:
                why = f"the head did not start a tunnel (it said {hello[:40]!r})"
            else:
                while (frame := read_frame(stream)) is not None:
                    number, kind, data = frame
                    channel = self.channels.get(number)
                    if channel is None:
                        continue
                    if kind == F_DATA:
                        channel.deliver(data)
                    elif kind == F_EXIT:
                        end = json.loads(data or b"{}")
                        channel.end(int(end.get("code") or 0), end.get("error"))
        except (OSError, ValueError) as err:
            why = f"the tunnel broke: {err}"
        self._close_stdin()  # a head that did not start a tunnel (no python3) waits for its stdin's end
        code = self.proc.wait()
        self._stderr_thread.join(timeout=10)
        stderr = b"".join(self._stderr).decode(errors="replace").strip().splitlines()[-2:]
        reason = why or f"the tunnel through {self.head.label} ended (exit {code})"
        with self._send_lock:
            self._end = (code or 255, " | ".join([reason, *stderr]))
            self.ended.set()
            left = list(self.channels.values())
        for channel in left:
            channel.end(*self._end)

    def _close_stdin(self) -> None:
        with self._send_lock:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def close(self) -> None:
        """End the head's exec (its agent exits at the end of its stdin) and wait for it."""
        self._close_stdin()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Tunnel:
    """One round's tunnel: the head's link and, per other node, the resident it dials for that node."""

    def __init__(self, link: HeadLink, residents: "dict[Remote, dict]", dest: str):
        self.link, self.residents, self.dest = link, residents, dest
        self.unreachable: "list[Remote]" = []

    @classmethod
    def plan(cls, targets: "list[Remote]", dest: str) -> "Tunnel | None":
        """A tunnel through ``targets[0]`` when another target's resident is on record, else None."""
        known = registry.known(targets[1:], PROGRAM_ID)
        addresses = usable_addresses(known)
        residents = {t: dict(info, addrs=addresses[t]) for t, info in known.items() if t in addresses}
        if not residents:
            return None
        try:
            link = HeadLink(session_argv(targets[0], dest, "tunnel"), targets[0])
        except OSError:  # the exec's program is missing: every session says so over its own exec
            return None
        return cls(link, residents, dest)

    def channel(self, target: Remote) -> "Channel | None":
        """The channel that carries ``target``'s session, or None where it needs its own exec."""
        if target == self.link.head:
            return self.link.open({"local": True})
        info = self.residents.get(target)
        if info is None:
            return None
        nonce = new_nonce()
        return self.link.open({"addrs": info["addrs"], "port": info["port"], "nonce": nonce, "dest": self.dest,
                               "ticket": make_ticket(info["key"], nonce, self.dest)})

    def lost(self, target: Remote) -> None:
        """``target`` could not be reached through the tunnel: its record goes (unless the head's exec is what
        failed), its session takes an exec."""
        if target != self.link.head and not self.link.ended.is_set():
            self.unreachable.append(target)
