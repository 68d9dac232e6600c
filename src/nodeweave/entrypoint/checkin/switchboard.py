"""Node 0's one event loop over every node's connection: no thread per node, no list rebuilt per wake-up.

A job of a thousand nodes is a thousand connections on node 0, for the
check-in and then for the heartbeat. :class:`Switchboard` keeps them in one
``epoll`` selector (registered once, not handed to ``poll`` again on every
wake-up), sends without ever waiting on one slow node (each connection's
outbox, ``wire.Channel.queue``, bounded by ``wire.OUTBOX_MAX``; a message for
every node is encoded once and shared), and runs node 0's connect-backs
(``connectback.Probe``) as non-blocking connections in the same loop. A node that
is judged and waits for its verdict is *held*: not read, so nothing it sends
early is lost and a closed connection does not wake the loop over and over;
the heartbeat watches it again.

A connection node 0 lets go of while the job runs (a node that reported its
exit, a latecomer told its verdict) is let go of in the same loop
(:meth:`Switchboard.let_go`): what is queued goes out, it is half-closed and
read until the node closes too, as the loop turns, never waited for there.

It also raises node 0's open-file limit to what the job needs (a node costs
one descriptor, two while it is probed), up to the hard limit, and says what
to raise when even that is too low.
"""

import selectors
import socket
import threading
import time

from .connectback import Probe
from .wire import SEND_TIMEOUT_S, ExchangeError, encode, finish_all

FD_SPARE = 64            # descriptors node 0 asks for beyond two per node
FD_RESERVE = 32          # descriptors node 0 never gives to connections (its own files, imports, the launcher)
PAUSE_ACCEPT_S = 0.5     # out of descriptors: stop accepting this long, then try again
CLOSE_WAIT_S = 1.0       # node 0 closing: connections it was letting go of get this long to close too


def raise_fd_limit(nodes, log):
    """Soft RLIMIT_NOFILE up to what ``nodes`` need (two each while probed), within the hard limit."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * nodes + FD_SPARE
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < nodes + FD_SPARE:
        log(f"check-in: node 0 may open only {soft} files (RLIMIT_NOFILE, hard limit {hard}) but {nodes} nodes need "
            f"about {want}; raise it for node 0's container (docker/podman --ulimit nofile={want}:{want}, "
            "LimitNOFILE= in the engine's systemd unit)")
    return None if soft == resource.RLIM_INFINITY else soft


class Closing:
    """A connection node 0 lets go of from its loop: its outbox sent as the socket takes it, then half-closed and
    read until the node closes too (a plain close could reset what the node has not read yet), or its deadline."""

    __slots__ = ("channel", "deadline", "shut")

    def __init__(self, channel, deadline):
        self.channel, self.deadline, self.shut = channel, deadline, False

    def wants(self):
        return selectors.EVENT_WRITE if self.channel.outbox else selectors.EVENT_READ

    def on_event(self):
        """Advance on readiness; True when the connection is over (the node closed, or went away): close it."""
        sock = self.channel.sock
        try:
            if self.channel.outbox and not self.channel.flush():
                return False
            if not self.shut:
                sock.shutdown(socket.SHUT_WR)
                self.shut = True
            while sock.recv(65536, socket.MSG_DONTWAIT):  # what the node still sends is read and dropped
                pass
        except (BlockingIOError, InterruptedError):
            return False
        except (OSError, ExchangeError):
            pass
        return True


class Switchboard:
    """One selector for node 0's listener, every node's connection and every connect-back."""

    def __init__(self, listener):
        self.selector = selectors.DefaultSelector()
        self.listener = listener
        self.lock = threading.RLock()   # the heartbeat thread and the main thread both send
        self.masks = {}                 # socket -> the events it is registered for
        self.owners = {}                # socket -> the Peer, Probe or Closing it belongs to
        self.held = set()               # sockets not read for now (judged nodes waiting for the verdict)
        self.probes = []
        self.closing = []               # connections let go of, read until their node closes (``let_go``)
        self.accept_paused_until = 0.0
        self.closed = False
        self.fd_limit, self.told_files = None, False  # the soft RLIMIT_NOFILE, once raise_fd_limit set it
        self._set(listener, selectors.EVENT_READ, None)
        self.waker = None  # (read end, write end): another thread ends this loop's wait at once (wake)

    def _set(self, sock, mask, owner):
        """Register ``sock`` for ``mask`` (0: not at all), owned by ``owner``."""
        old = self.masks.get(sock, 0)
        try:
            if mask and not old:
                self.selector.register(sock, mask, owner)
            elif mask and mask != old:
                self.selector.modify(sock, mask, owner)
            elif not mask and old:
                self.selector.unregister(sock)
        except (ValueError, KeyError, OSError):
            mask = 0  # a closed socket: nothing to watch
        if mask:
            self.masks[sock], self.owners[sock] = mask, owner
        else:
            self.masks.pop(sock, None)

    def _update(self, sock):
        """Read unless held; write while the outbox has bytes."""
        owner = self.owners.get(sock)
        channel = getattr(owner, "channel", None)
        mask = 0 if sock in self.held else selectors.EVENT_READ
        if channel is not None and channel.outbox:
            mask |= selectors.EVENT_WRITE
        self._set(sock, mask, owner)

    def prepare(self, nodes, log):
        """Before the check-in of ``nodes``: descriptors for all, and a listen backlog for all at once."""
        self.fd_limit = raise_fd_limit(nodes, log)
        self.listener.listen(max(512, nodes + FD_SPARE))  # nodes started together connect together

    def watch_all(self, peers):
        """The heartbeat starts: read every node again; a connection already closed (the job ended on this node
        before its heartbeat's thread ran: its channels closed under it) is no node to read, never an error that
        ends the thread (EBADF seen in the suite, stop 55)."""
        for peer in peers:
            if peer.channel.sock.fileno() >= 0:
                self.watch(peer)

    def drop(self, peers):
        """Let go of nodes node 0 could not tell (gone, or not reading)."""
        for peer in peers:
            self.forget(peer)
            peer.channel.close()

    def watch(self, peer):
        """Read ``peer``'s connection (again): a new node, or a held one whose verdict went out."""
        peer.channel.sock.setblocking(False)
        self.owners[peer.channel.sock] = peer
        self.held.discard(peer.channel.sock)
        self._update(peer.channel.sock)

    def hold(self, peer):
        self.held.add(peer.channel.sock)
        self._update(peer.channel.sock)

    def forget(self, peer):
        sock = peer.channel.sock
        self.held.discard(sock)
        self._set(sock, 0, None)
        self.owners.pop(sock, None)

    def release(self, peer):
        """Take ``peer`` out of the loop, to answer it or let it go with plain blocking sends."""
        self.forget(peer)
        peer.channel.sock.settimeout(SEND_TIMEOUT_S)

    def finish(self, peer, wait_s):
        """Send what is still queued for ``peer`` (bounded), then half-close and let it go."""
        self.flush_all([peer], time.monotonic() + SEND_TIMEOUT_S)
        self.release(peer)
        peer.channel.finish(wait_s)

    def let_go(self, peer, wait_s):
        """:meth:`finish` from node 0's loop, which must not wait: ``peer``'s connection is let go of in the loop
        itself (:class:`Closing`, up to ``wait_s`` after what is queued went out)."""
        self.forget(peer)
        closing = Closing(peer.channel, time.monotonic() + SEND_TIMEOUT_S + wait_s)
        if closing.on_event():  # the node closed already
            peer.channel.close()
            return
        self.closing.append(closing)
        self._set(peer.channel.sock, closing.wants(), closing)

    def _closed(self, closing):
        """Out of the loop, then closed."""
        self._set(closing.channel.sock, 0, None)
        self.owners.pop(closing.channel.sock, None)
        if closing in self.closing:
            self.closing.remove(closing)
        closing.channel.close()

    def post(self, peers, message):
        """Send one message to every peer (encoded once); the peers that cannot take it (gone, or with
        :data:`wire.OUTBOX_MAX` unread) are returned."""
        data = message if isinstance(message, bytes) else encode(message)  # any size: a frame past 1 MiB
        return self.post_each((peer, data) for peer in peers)

    def post_each(self, messages):
        """Send each peer its own message (``(peer, encoded bytes)`` pairs, a verdict's part for each node);
        the peers that cannot take theirs are returned."""
        lost = []
        with self.lock:
            for peer, data in messages:
                try:
                    if not peer.channel.queue(data):
                        self._update(peer.channel.sock)
                except ExchangeError:
                    lost.append(peer)
        return lost

    def probe(self, peer, token, timeout_s):
        """Start the connect-back to ``peer``; ``peer.probe`` is set when it is over."""
        probe = Probe(peer, token, timeout_s, time.monotonic())
        self.probes.append(probe)
        self._after(probe)
        return probe

    def _after(self, probe):
        if probe.done:
            if probe.sock is not None:
                self._set(probe.sock, 0, None)
                self.owners.pop(probe.sock, None)
                probe.close()
            if probe in self.probes:
                self.probes.remove(probe)
        else:
            self._set(probe.sock, probe.wants(), probe)

    def probing(self):
        return bool(self.probes)

    def wait(self, timeout):
        """Wait up to ``timeout``, send what can be sent and advance the connect-backs; returns (whether a
        connection waits to be accepted, the peers with something to read or a closed connection)."""
        now = time.monotonic()
        if self.accept_paused_until and now >= self.accept_paused_until:
            self.accept_paused_until = 0.0
            self._set(self.listener, selectors.EVENT_READ, None)
        try:
            events = self.selector.select(timeout)
        except (ValueError, OSError):  # closed by node 0's main thread meanwhile: the loop is over
            self.closed = True
            return False, []
        with self.lock:
            return self._handle(events)

    def wakeable(self):
        """Let :meth:`wake` end a :meth:`wait` from another thread (the heartbeat's loop, stopped while it waits
        up to 0.5 s on its nodes: recovery's node 0 waited that out before it regathered)."""
        import socket

        if self.waker is None:
            self.waker = socket.socketpair()
            self.waker[0].setblocking(False)
            self.selector.register(self.waker[0], selectors.EVENT_READ, self.waker)

    def wake(self):
        if self.waker is not None:
            try:
                self.waker[1].send(b"x")
            except OSError:
                pass

    def _handle(self, events):
        accept, readable = False, []
        for key, mask in events:
            owner = key.data
            if owner is self.waker and owner is not None:
                try:
                    owner[0].recv(64)
                except OSError:
                    pass
            elif owner is None:
                accept = True
            elif isinstance(owner, Probe):
                owner.on_event()
                self._after(owner)
            elif isinstance(owner, Closing):
                if owner.on_event():
                    self._closed(owner)
                else:
                    self._set(owner.channel.sock, owner.wants(), owner)
            else:
                if mask & selectors.EVENT_WRITE:
                    self._flush(owner)
                if mask & selectors.EVENT_READ:
                    readable.append(owner)
        now = time.monotonic()
        for probe in list(self.probes):
            probe.expire(now)
            self._after(probe)
        for closing in [c for c in self.closing if now >= c.deadline]:
            self._closed(closing)
        return accept, readable

    def _flush(self, peer):
        """Send what ``peer``'s outbox holds; False when its connection is gone (its outbox is dropped)."""
        with self.lock:
            ok = True
            try:
                peer.channel.flush()
            except ExchangeError:
                ok = False
                peer.channel.outbox.clear()
                peer.channel.queued = 0
                self.held.discard(peer.channel.sock)  # the reader finds the connection closed
            self._update(peer.channel.sock)
            return ok

    def flush_all(self, peers, deadline):
        """Send every outbox out before ``deadline`` (the verdict; the last news before closing); returns
        the peers whose bytes did not all go."""
        import select

        failed = []
        while True:
            with self.lock:
                left = [p for p in peers if p.channel.outbox and p.channel.sock.fileno() >= 0]
            if not left or time.monotonic() >= deadline:
                return failed + left
            by_fd = {p.channel.sock.fileno(): p for p in left}
            poller = select.poll()
            for fd in by_fd:
                poller.register(fd, select.POLLOUT)
            for fd, _ in poller.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                if not self._flush(by_fd[fd]):
                    failed.append(by_fd[fd])

    def full(self, connections):
        """Whether one more connection would eat into :data:`FD_RESERVE` under the open-file limit."""
        return bool(self.fd_limit) and connections + len(self.probes) + FD_RESERVE >= self.fd_limit

    def out_of_files(self, log, connections):
        """No descriptor for another node (the limit, or accept() said EMFILE): say so once, and stop
        accepting for a moment (a waiting connection would otherwise wake the loop without end)."""
        if not self.told_files:
            self.told_files = True
            log(f"check-in: node 0 holds {connections} connection(s) and may open no more files (RLIMIT_NOFILE "
                f"{self.fd_limit or 'reached'}); nodes beyond wait or count as missing; raise the limit "
                "(--ulimit nofile=...)")
        self.accept_paused_until = time.monotonic() + PAUSE_ACCEPT_S
        self._set(self.listener, 0, None)

    def stop_accepting(self):
        """Leave new connections in the listener's backlog for good (recovery: they are for the next
        generation's hub, which takes the listener over)."""
        self.accept_paused_until = 0.0
        self._set(self.listener, 0, None)

    def close(self):
        for probe in list(self.probes):
            probe.fail("node 0 stopped before the connect-back ended")
            self._after(probe)
        closing, self.closing = self.closing, []
        for each in closing:  # what they were sent goes out, and each is let go of as finish_all does
            try:
                each.channel.flush()
            except ExchangeError:
                pass
        finish_all([each.channel for each in closing], CLOSE_WAIT_S)
        self.closed = True
        self.selector.close()
        if self.waker is not None:
            for end in self.waker:
                end.close()
