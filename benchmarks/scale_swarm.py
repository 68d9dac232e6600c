"""Many simulated nodes in one process, speaking the exchange's real wire to a real node 0.

The light stand-in of ``exchange_scale.py``: each simulated node is what a
worker's entrypoint does on the wire and nothing else — its own loopback
address (127.2.x.y: every address of 127.0.0.0/8 is this machine's loopback,
no alias needs adding), a check port node 0 connects back to, the challenge,
the hello with the real fingerprint (this machine's, made by the entrypoint's
own code, with the rank, hostname and addresses changed) and its HMAC under
the job token, the probe answer, the verdict, then the heartbeat: a beat
every ``BEAT_S``, node 0's news read and timed. All nodes share one
``selectors`` loop, so a thousand of them cost one process, not a thousand.
Each node records the ``time.monotonic()`` (one clock for the whole machine)
of what it got; one JSON line tells the driver: the last hello, each verdict
(whether the part every node is told alike was identical everywhere, each
node's own row its own, the bytes), each abort.

    python benchmarks/scale_swarm.py --port P --nodes N --ranks 1:N [--last] [--hold S] [--fail exit|close|silent]
"""

import argparse
import errno
import hashlib
import heapq
import json
import os
import random
import resource
import selectors
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from nodeweave.entrypoint.checkin.heartbeat import BEAT_S  # noqa: E402
from nodeweave.entrypoint.checkin.wire import job_token, proof  # noqa: E402

VERDICT_HEAD = b'{"t":"verdict",'
MAX_CONNECTING = 4096  # connections not yet challenged at once: all, as nodes started together would


def address(rank):
    """This simulated node's own loopback address: 127.2.<hi>.<lo> (never node 0's 127.0.0.1)."""
    return f"127.2.{rank // 250}.{rank % 250 + 1}"


def template_fingerprint(nodes, port, launcher):
    """This machine's fingerprint, made by the entrypoint's own code, as every simulated node's base."""
    from nodeweave.entrypoint.core import make_plan
    from nodeweave.entrypoint.checkin.fingerprint import local_fingerprint
    from nodeweave.entrypoint.detection.sysfs import Root

    env = dict(os.environ)
    plan = make_plan(["--launcher", launcher, "--nnodes", str(nodes), "--node-rank", "1", "--master-addr",
                      "127.0.0.1", "--master-port", str(port - 1), "--", "train.py"], env)
    return local_fingerprint(plan, Root("/"), env)


class Node:
    """One simulated worker: its connection to node 0, its check port, what it received and when."""

    def __init__(self, rank, base_fp):
        self.rank, self.addr = rank, address(rank)
        self.fp = dict(base_fp, rank=rank, hostname=f"scale-{rank}", address=self.addr, route_address=self.addr,
                       address_source="lo (scale harness)")
        self.listener = socket.create_server((self.addr, 0), backlog=8)
        self.listener.setblocking(False)
        self.fp["probe_port"] = self.listener.getsockname()[1]
        self.sock, self.inbuf = None, b""
        self.state = "new"          # new, connecting, challenged, hello, in, gone
        self.hello_at = self.verdict_at = self.abort_at = None
        self.probed_at = self.challenge = self.last_beat = self.verdict_digest = self.next_beat = None
        self.verdict_bytes, self.own_row = 0, False
        self.beats_heard, self.silent, self.beats_sent, self.aborts = 0, False, 0, 0


class Swarm:
    def __init__(self, args):
        self.args = args
        self.sel = selectors.DefaultSelector()
        self.token = job_token({}, args.job, args.port - 1)
        base = template_fingerprint(args.nodes, args.port, args.launcher)
        self.job = base["job"]
        lo, hi = (int(x) for x in args.ranks.split(":"))
        self.nodes = [Node(rank, base) for rank in range(lo, hi)]
        for node in self.nodes:
            self.sel.register(node.listener, selectors.EVENT_READ, ("listen", node))
        self.failed = 0  # victims that failed before node 0 closed on them
        self.verdict_sample, self.due = None, []  # due: (next beat, rank): each beat on time, not in batches
        self.by_rank = {node.rank: node for node in self.nodes}

    def connect(self, node):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((node.addr, 0))
        sock.setblocking(False)
        code = sock.connect_ex(("127.0.0.1", self.args.port))
        if code not in (0, errno.EINPROGRESS):
            raise SystemExit(f"rank {node.rank}: connect failed: {os.strerror(code)}")
        node.sock, node.state = sock, "connecting"
        self.sel.register(sock, selectors.EVENT_READ, ("link", node))

    def send(self, node, obj):
        """A few hundred bytes at most: a loopback socket's buffer always takes them at once.

        A beat can cross node 0 closing the connection after its abort: the send then fails, and what
        node 0 said before closing is still in the receive buffer for ``pump`` to read and judge."""
        try:
            node.sock.send(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def on_probe(self, conn, node):
        """Node 0's connect-back: read in the one loop (a blocking read here would stall every other node)."""
        conn.setblocking(False)
        self.sel.register(conn, selectors.EVENT_READ, ("probe", [conn, b"", node]))

    def on_probe_line(self, probe):
        conn, buf, node = probe
        try:
            chunk = conn.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        probe[1] = buf = buf + chunk
        if chunk and b"\n" not in buf:
            return
        self.sel.unregister(conn)
        message = json.loads(buf.partition(b"\n")[0] or b"{}")
        if message.get("t") == "probe":
            try:
                conn.setblocking(True)
                conn.settimeout(3.0)
                conn.sendall(json.dumps({"t": "probe-ok", "mac": proof(self.token, str(message.get("nonce")))},
                                        separators=(",", ":")).encode() + b"\n")
            except OSError:
                pass
        node.probed_at = time.monotonic()  # answered: the last node's hello waits for every answer
        conn.close()

    def on_link(self, node):
        try:
            chunk = node.sock.recv(1 << 18)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            node.state = "gone"
            self.sel.unregister(node.sock)
            node.sock.close()
            return
        node.inbuf += chunk
        while b"\n" in node.inbuf:
            line, _, node.inbuf = node.inbuf.partition(b"\n")
            self.on_message(node, line)

    def on_message(self, node, line):
        now = time.monotonic()
        if line.startswith(VERDICT_HEAD):
            node.verdict_at, node.state = now, "in"
            node.verdict_bytes = len(line) + 1
            cut = line.rfind(b',"own":', max(0, len(line) - 65536))  # the own part is small
            if cut > 0:  # each node's part (verdict.py): the shared part (the bytes before it) must agree
                node.verdict_digest = hashlib.sha1(line[:cut]).hexdigest()  # no parse: the swarm is 8,191 nodes
                own = json.loads(line[cut + 7:-1])
                row = own.get("row") or {}
                node.own_row = row.get("rank") == node.rank or (not own and node.rank < 8)
            else:  # the whole verdict, the same bytes for every node (node 0 before linear bytes)
                node.verdict_digest = hashlib.sha1(line).hexdigest()
                node.own_row = True
            self.verdict_sample = self.verdict_sample or line
            node.next_beat = now + random.uniform(0, BEAT_S)  # real nodes beat in no common phase
            heapq.heappush(self.due, (node.next_beat, node.rank))
            return
        message = json.loads(line)
        kind = message.get("t")
        if kind == "challenge":
            node.state, node.challenge = "challenged", str(message.get("nonce"))
            if not (self.args.last and node is self.nodes[-1]):
                self.hello(node)
        elif kind == "beat":
            node.beats_heard += 1
        elif kind == "abort":
            node.aborts += 1
            node.abort_at = node.abort_at or now
        elif kind == "reject":
            raise SystemExit(f"rank {node.rank} turned away: {message.get('reason')}")

    def hello(self, node):
        node.hello_at, node.state = time.monotonic(), "hello"
        self.send(node, {"t": "hello", "job": self.job, "fp": node.fp, "mac": proof(self.token, node.challenge, node.fp)})

    def pump(self, timeout):
        # connect-backs first: node 0 gives each 3 s, and a real node answers its own on its own CPU
        events = sorted(self.sel.select(timeout), key=lambda event: event[0].data[0] == "link")
        for key, _ in events:
            kind, node = key.data
            if kind == "listen":
                try:
                    conn, _ = node.listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                self.on_probe(conn, node)
                self.sel.unregister(node.listener)  # node 0 connects back once: one descriptor per node after
                node.listener.close()
            elif kind == "probe":
                self.on_probe_line(node)
            else:
                self.on_link(node)

    def beat(self):
        now = time.monotonic()
        while self.due and self.due[0][0] <= now:
            _, rank = heapq.heappop(self.due)
            node = self.by_rank[rank]
            if node.state == "in" and not node.silent:
                if self.args.rank_views and not node.beats_sent:  # once: node 0 keeps a node's last view
                    self.send(node, {"t": "beat", "ranks": self.views(node)})
                else:
                    self.send(node, {"t": "beat"})
                node.beats_sent += 1
                node.last_beat, node.next_beat = now, node.next_beat + BEAT_S
                heapq.heappush(self.due, (node.next_beat, rank))

    def views(self, node):
        """``--rank-views`` ranks of this node as its stall watch's beat carries them (stall/ranks.py sample):
        all in one all_reduce, one of the job's ranks 60 s longer than the others (a culprit to find)."""
        per = self.args.rank_views
        views = []
        for local in range(per):
            rank = node.rank * per + local
            views.append({"rank": rank, "local_rank": local, "node": node.rank, "host": node.fp["hostname"],
                          "pod": node.fp["hostname"], "pid": 1000 + local, "seq": 4711, "name": "all_reduce",
                          "inside": True, "since_s": 60.5 if rank == per * 5 + 3 else 0.5, "inside_s": 0.01,
                          "outside_s": 0.2, "state": "S", "cpu_s": 12.5, "cpu_rate": 0.98, "thread": 1000 + local,
                          "fr_enqueued": 4711, "fr_completed": 4710, "device_wait_s": 0.0, "device_timed": 0,
                          "fr_wait_s": 0.0, "fr_timed": 0, "fr_span_s": 0.0})
        return views

    def tick(self, longest=0.05):
        """Pump until the next beat is due (at most ``longest``), then send the beats that are due."""
        wait = longest if not self.due else min(longest, max(0.0, self.due[0][0] - time.monotonic()))
        self.pump(wait)
        self.beat()

    def until(self, done, timeout, what):
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise SystemExit(f"swarm: {what} not done in {timeout:g}s")
            self.tick()

    def check_in(self):
        """Every node connects (a bounded number at a time) and says hello; with ``--last`` the last one
        waits until node 0 has probed every other node, then says hello alone: the critical path starts."""
        started = time.monotonic()
        waiting = list(self.nodes[:-1] if self.args.last else self.nodes)  # the last connects once all are in
        while waiting:
            connecting = sum(1 for n in self.nodes if n.state == "connecting")
            for node in waiting[:max(0, self.args.connecting - connecting)]:
                self.connect(node)
            waiting = [n for n in waiting if n.state == "new"]
            self.pump(0.01)
        early = self.nodes[:-1] if self.args.last else self.nodes
        self.until(lambda: all(n.probed_at for n in early), 120, "every node probed")
        connected = time.monotonic() - started
        if self.args.last:
            last = self.nodes[-1]
            self.connect(last)
            self.until(lambda: last.state == "challenged", 30, "the last node's challenge")
            self.pump(0.3)  # let node 0 settle: nothing else is in flight
            self.hello(last)
        self.until(lambda: all(n.verdict_at or n.state == "gone" for n in self.nodes), 120, "every verdict")
        return connected

    def fail(self, how):
        """One node fails (``--rack`` nodes: a rack, each at its own moment within ``--spread`` seconds): reports
        exit 1, or its connection closes, or it goes silent. Returns the first moment, the first victim, the rest."""
        count = max(1, self.args.rack)
        middle = len(self.nodes) // 2
        victims = self.nodes[middle:middle + count]
        moments = sorted(random.uniform(0, self.args.spread) for _ in victims[1:])
        first = self._fail_one(victims[0], how)
        for victim, after in zip(victims[1:], moments):
            while time.monotonic() < first + after:
                self.tick(0.01)
            self._fail_one(victim, how)
        others = [n for n in self.nodes if n not in victims]
        if not others:  # real workers hear it (the driver times them): wait until node 0 let the victim go
            self.until(lambda: victims[0].state == "gone", 40, "node 0 closing the failed node's connection")
        self.until(lambda: all(n.abort_at or n.state == "gone" for n in others), 40, "every abort")
        if count > 1:  # one event: each node is told once, and nothing after the first
            end = time.monotonic() + 3.0
            while time.monotonic() < end:
                self.tick(0.05)
        return first, victims[0], others

    def _fail_one(self, victim, how):
        now = time.monotonic()
        if victim.state == "gone":  # node 0 already stopped the job and closed on it: nothing left to fail
            return now
        self.failed += 1
        if how == "exit":
            self.send(victim, {"t": "exit", "code": 1, "how": "torchrun exited 1",
                               "tail": ["Traceback (most recent call last):", "RuntimeError: scale harness"]})
            victim.sock.shutdown(socket.SHUT_WR)
        elif how == "close":
            self.sel.unregister(victim.sock)
            victim.sock.close()
            victim.state = "gone"
        else:
            victim.silent = True
            now = victim.last_beat or now  # node 0 last heard it then
        return now


def wait_for_node_0(port, timeout):
    """As a worker's entrypoint waits: until node 0's exchange accepts (it may still be starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"swarm: node 0's exchange 127.0.0.1:{port} not reachable in {timeout}s")
            time.sleep(0.02)


def _spread(values, origin):
    values = sorted(v - origin for v in values if v is not None)
    if not values:
        return None
    return {"n": len(values), "min": values[0], "median": values[len(values) // 2], "max": values[-1]}


def _options():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="node 0's exchange port (the master port + 1)")
    parser.add_argument("--nodes", type=int, required=True, help="the job's node count, node 0 included")
    parser.add_argument("--ranks", required=True, help="LO:HI, the ranks this swarm plays")
    parser.add_argument("--job", default="nodeweave")
    parser.add_argument("--launcher", default="torchrun", help="node 0's launcher (the verdict refuses another)")
    parser.add_argument("--last", action="store_true", help="hold the last rank back: time last arrival -> verdicts")
    parser.add_argument("--hold", type=float, default=0.0, help="seconds of heartbeat after the verdict")
    parser.add_argument("--fail", choices=("exit", "close", "silent"))
    parser.add_argument("--connecting", type=int, default=MAX_CONNECTING, help="connections not yet challenged "
                        "at once (fewer: the swarm, one process for every node, answers node 0's connect-backs in time "
                        "on a loaded machine)")
    parser.add_argument("--rack", type=int, default=1, help="with --fail: this many nodes fail (a rack losing power)")
    parser.add_argument("--spread", type=float, default=1.0, help="with --rack: their moments spread over these seconds")
    parser.add_argument("--rank-views", type=int, default=0, help="each node's first beat carries this many "
                        "ranks' stall-watch views (what `--status` lists)")
    return parser.parse_args()


def main():
    args = _options()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # two descriptors per simulated node
    wait_for_node_0(args.port, 60)
    swarm = Swarm(args)
    connected = swarm.check_in()
    last_hello, verdicts = max(n.hello_at for n in swarm.nodes), [n.verdict_at for n in swarm.nodes]
    sample = json.loads(swarm.verdict_sample) if swarm.verdict_sample else {}
    out = {"nodes": len(swarm.nodes), "connected_s": connected, "last_hello": last_hello,
           "verdict_last": max(v for v in verdicts if v), "verdict_after_last_hello": _spread(verdicts, last_hello),
           "identical": len({n.verdict_digest for n in swarm.nodes}) == 1,
           "verdict_bytes": max(n.verdict_bytes for n in swarm.nodes),  # the most one node was sent
           "verdict_bytes_all": sum(n.verdict_bytes for n in swarm.nodes),  # what node 0 sent them all
           "own_rows": sum(1 for n in swarm.nodes if n.own_row), "digest": sample.get("verdict", {}).get("digest"),
           "gone": sum(1 for n in swarm.nodes if n.state == "gone" and not n.verdict_at),
           "decision": sample.get("verdict", {}).get("decision")}
    if args.hold:
        print("READY", flush=True)  # the driver samples node 0's CPU from here
        end = time.monotonic() + args.hold
        while time.monotonic() < end:
            swarm.tick()
        out["beats_heard"] = _spread([n.beats_heard for n in swarm.nodes], 0)
    if args.fail:
        moment, victim, others = swarm.fail(args.fail)
        out.update({"fail": args.fail, "victim": victim.rank, "failed_at": moment, "not_told": sum(
            1 for n in others if n.abort_at is None), "abort_after": _spread([n.abort_at for n in others], moment),
            "aborts_most": max((n.aborts for n in others), default=0), "victims": swarm.failed})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
