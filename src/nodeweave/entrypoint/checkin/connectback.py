"""Node 0's connect-back to a checking-in node, without a thread: one non-blocking connection in its loop.

A node opens a port of its own (an ephemeral one, as NCCL and Gloo will) and
names it in its fingerprint; node 0 connects to it, sends a nonce and expects
an HMAC of it under the job token. That proves random-port traffic gets
through (a firewall that only lets the master port in fails here, named).
``switchboard.Switchboard`` drives many of these at once.
"""

import errno
import json
import os
import selectors
import socket
import time

from ..detection import names
from ..detection.net import lookup_host
from ..hostport import host_port
from .wire import MAX_MESSAGE, Channel, ExchangeError, encode, nonce, proof, verify


class Probe:
    """Node 0's connect-back to the port a node opened, as one non-blocking connection; sets ``peer.probe``
    ('ok', or why not: what the verdict's connect-back row shows)."""

    def __init__(self, peer, token, timeout_s, now):
        self.peer, self.token, self.timeout_s, self.deadline = peer, token, timeout_s, now + timeout_s
        self.connected = False
        self.nonce, self.buffer, self.sock = nonce(), b"", None
        fp = peer.fp
        address = fp.get("address")
        if not address or (address.startswith("127.") and not str(peer.seen).startswith("127.")):
            address = peer.seen  # a loopback advertisement is refused anyway; still test the firewall
        self.where = host_port(address, fp.get('probe_port'))
        try:
            port = int(fp.get("probe_port") or 0)
            family, kind, proto, _, target = names.getaddrinfo(lookup_host(address), port, 0, socket.SOCK_STREAM)[0]
            self.sock = socket.socket(family, kind, proto)
            self.sock.setblocking(False)
            code = self.sock.connect_ex(target)
        except (OSError, ValueError, TypeError) as err:
            self.fail(f"connecting to {self.where} failed: {getattr(err, 'strerror', None) or err}")
            return
        if code not in (0, errno.EINPROGRESS):
            self.fail(f"connecting to {self.where} failed: {os.strerror(code)}")

    @property
    def done(self):
        return self.peer.probe is not None

    def fail(self, why):
        self.peer.probe = why

    def close(self):
        if self.sock is not None:
            self.sock.close()

    def wants(self):
        return selectors.EVENT_READ if self.connected else selectors.EVENT_WRITE

    def on_event(self):
        """Advance on readiness: send the challenge once connected, then judge the answer."""
        try:
            if not self.connected:
                code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    return self.fail(f"connecting to {self.where} failed: {os.strerror(code)}")
                self.connected = True
                self.sock.send(encode({"t": "probe", "nonce": self.nonce}))
                # the node has timeout_s to answer from now: node 0 busy with a burst of hellos may send late
                self.deadline = max(self.deadline, time.monotonic() + self.timeout_s)
                return None
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as err:
            return self.fail(f"{self.where}: {self.where}: {err.strerror or err}")
        if not chunk:
            return self.fail(f"{self.where}: {self.where} closed the connection")
        self.buffer += chunk
        line, newline, _ = self.buffer.partition(b"\n")
        if not newline:
            return self.fail(f"{self.where}: answer too long") if len(self.buffer) > MAX_MESSAGE else None
        try:
            answer = json.loads(line)
        except ValueError:
            return self.fail(f"{self.where}: {self.where} sent something that is not the exchange's JSON")
        ok = isinstance(answer, dict) and verify(self.token, self.nonce, answer.get("mac"))
        self.peer.probe = "ok" if ok else f"{self.where} answered, but not with this job's token"
        return None

    def expire(self, now):
        if self.done or now < self.deadline:
            return
        self._last_look()
        if self.done or time.monotonic() < self.deadline:
            return
        self.fail(f"{self.where}: no answer from {self.where} in time" if self.connected else
                  f"connecting to {self.where} timed out after {self.timeout_s:g}s")

    def _last_look(self):
        """Before failing a probe, take what already arrived: a node 0 busy with thousands of hellos reaches a
        probe's event after its deadline, and the node's answer waiting unread must not refuse the job."""
        import select

        if self.sock is None:
            return
        poller = select.poll()
        poller.register(self.sock, select.POLLIN if self.connected else select.POLLOUT)
        if poller.poll(0):
            self.on_event()  # the answer; or the connect, done in time: the probe goes out now, with its own time


ANSWER_TIMEOUT_S = 3.0  # a worker waits this long for node 0's probe once it connected


def answer_probe(listener, token, deadline):
    """Serve one connect-back from node 0 on this node's check port."""
    try:
        sock, _ = listener.accept()
    except OSError:
        return
    channel = Channel(sock)
    try:
        message = channel.receive(min(deadline, time.monotonic() + ANSWER_TIMEOUT_S))
        if message.get("t") == "probe":
            channel.send({"t": "probe-ok", "mac": proof(token, str(message.get("nonce")))})
    except ExchangeError:
        pass
    finally:
        channel.finish(0.5)
