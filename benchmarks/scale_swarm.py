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

With ``--recover`` (node 0 runs recovery, ``NODEWEAVE_RECOVERY=on``) each node does what a worker's recovery
loop does on the wire (``recovery/node.py``): its hello names the generation it wants and carries the book
it kept, and on node 0's abort it says it heard (``heartbeat.STOPPING``), closes, and checks in again for the
next generation (turned away or refused while node 0 is between generations: again after ``RETRY_S``, as
``CheckIn.join``); the time each node holds its next generation's verdict, with its role in it, is recorded.
A node's own launcher stop (its ranks exiting) is not simulated: the control plane's part alone.

    python benchmarks/scale_swarm.py --port P --nodes N --ranks 1:N [--last] [--hold S] [--fail exit|close|silent]
        [--recover]
"""

import argparse
import collections
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nodeweave.entrypoint.checkin.heartbeat import BEAT_S  # noqa: E402
from nodeweave.entrypoint.checkin.session import RETRY_S  # noqa: E402
from nodeweave.entrypoint.checkin.verdict import expand  # noqa: E402
from nodeweave.entrypoint.checkin.wire import job_token, proof  # noqa: E402
from nodeweave.entrypoint.recovery.book import Book  # noqa: E402
from nodeweave.entrypoint.recovery.carried import carried  # noqa: E402
from one_machine import one_machine_env  # noqa: E402

VERDICT_HEAD = b'{"t":"verdict",'
STOPPING = "stopping"  # a worker heard node 0's abort (heartbeat.STOPPING)
FINISH_S = 2.0  # a worker's channel.finish after the abort: node 0 closes first, or this passes
MAX_CONNECTING = 4096  # connections not yet challenged at once: all, as nodes started together would


def address(rank):
    """This simulated node's own loopback address: 127.2.<hi>.<lo> (never node 0's 127.0.0.1)."""
    return f"127.2.{rank // 250}.{rank % 250 + 1}"


def template_fingerprint(nodes, port, launcher):
    """This machine's fingerprint, made by the entrypoint's own code, as every simulated node's base."""
    from nodeweave.entrypoint.core import make_plan
    from nodeweave.entrypoint.checkin.fingerprint import local_fingerprint
    from nodeweave.entrypoint.detection.sysfs import Root
    from nodeweave.entrypoint.planning.settings import parse

    env = one_machine_env(os.environ)  # every simulated node is on this machine, as node 0 is
    argv = ["--launcher", launcher, "--nnodes", str(nodes), "--node-rank", "1", "--master-addr", "127.0.0.1",
            "--master-port", str(port - 1), "--", *(["true"] if launcher == "command" else ["train.py"])]
    # the command node 0 runs (tests/test_exchange_scale.py's node_0): the check-in compares it (walk13 B6)
    plan = make_plan(argv, env)
    # a real node's settings, its fault settings among them (walk7 B49): none would differ from node 0's
    return local_fingerprint(plan, Root("/"), parse(argv, env))


class Node:
    """One simulated worker: its connection to node 0, its check port, what it received and when."""

    def __init__(self, rank, base_fp):
        self.rank, self.addr = rank, address(rank)
        self.fp = dict(base_fp, rank=rank, hostname=f"scale-{rank}", address=self.addr, route_address=self.addr,
                       address_source="lo (scale harness)")
        self.listener = None
        self.listen()
        self.sock, self.inbuf = None, b""
        self.state = "new"          # new, connecting, challenged, hello, in, gone
        self.hello_at = self.verdict_at = self.abort_at = None
        self.probed_at = self.challenge = self.last_beat = self.verdict_digest = self.next_beat = None
        self.verdict_bytes, self.own_row = 0, False
        self.beats_heard, self.silent, self.beats_sent, self.aborts = 0, False, 0, 0
        self.generation, self.carried, self.victim = 0, None, False  # --recover: what its hello names and carries
        self.retry_at, self.retries, self.rejoined = None, 0, {}  # generation -> (when its verdict came, role)
        self.hello_bytes = 0


    def listen(self):
        """A check port for node 0's connect-back (each check-in opens its own, as ``exchange.check_in``)."""
        self.listener = socket.create_server((self.addr, 0), backlog=8)
        self.listener.setblocking(False)
        self.fp["probe_port"] = self.listener.getsockname()[1]


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
        self.rejoins = []  # --recover: (when, rank) of nodes to check in (again) for their next generation
        self.books = {}    # the verdict's shared part (its hash) -> the book in it, rank lists as sets
        self.stdin_closed = False

    def connect(self, node):
        if node.listener is None and node.rank in self.args.deaf:  # --deaf: its check port refuses node 0
            node.listen()
            node.listener.close()
            node.listener = None
        elif node.listener is None:  # checking in again: a new check port
            node.listen()
            self.sel.register(node.listener, selectors.EVENT_READ, ("listen", node))
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((node.addr, 0))
        sock.setblocking(False)
        code = sock.connect_ex(("127.0.0.1", self.args.port))
        if code == errno.ECONNREFUSED and self.args.recover:  # node 0 between generations: again shortly
            sock.close()
            self.retry(node)
            return
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
            was = node.state
            node.state = "gone"
            self.sel.unregister(node.sock)
            node.sock.close()
            if self.args.recover and not (node.victim and self.args.fail != "exit"):
                if was == "in" and (node.aborts or node.victim):  # node 0 closed after the abort: check in again
                    self.rejoin(node, time.monotonic())
                elif was in ("connecting", "challenged", "hello"):  # turned away between generations
                    self.retry(node)
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
            if self.args.recover:
                self.on_book(node, line, cut, now)
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
            if self.args.recover and node.aborts == 1 and not (node.victim and self.args.fail != "exit"):  # LinkWatch: say it heard, then finish and check in again
                self.send(node, {"t": STOPPING})
                try:
                    node.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.rejoin(node, now + FINISH_S)  # channel.finish's wait, when node 0 does not close first
        elif kind == "reject":
            raise SystemExit(f"rank {node.rank} turned away: {message.get('reason')}")

    def hello(self, node):
        node.hello_at, node.state = time.monotonic(), "hello"
        fp = node.fp
        if self.args.recover:  # recovery/node.py: the generation it wants, the book it kept
            fp = dict(fp, generation=node.generation)
            if node.carried:
                fp["book"] = node.carried
        data = json.dumps({"t": "hello", "job": self.job, "fp": fp, "mac": proof(self.token, node.challenge, fp)},
                          separators=(",", ":")).encode() + b"\n"
        node.hello_bytes = len(data)
        try:
            node.sock.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # --- --recover: a worker's generations on the wire ----------------------------------------------------
    def on_book(self, node, line, cut, now):
        """The verdict's book (parsed once per distinct shared part): this node's role and next generation."""
        key = hashlib.sha1(line[:cut] if cut > 0 else line).digest()
        book = self.books.get(key)
        if book is None:
            shared = json.loads(line[:cut] + b"}" if cut > 0 else line)["verdict"]
            book = expand(shared).get("recovery") or {}
            self.books[key] = book = (book, Book.from_json(book))  # its roles looked up in sets, once per book
        book, fast = book
        generation = book.get("generation", 0)
        if book.get("decision") == "stop":  # the job ends (no spare left, the budget spent): told, no next one
            node.rejoined[generation + 1] = (now, f"stop: {book.get('ended')}"[:80])
            node.generation = generation + 2
            return
        node.rejoined[generation] = (now, fast.role_of(node.rank).value)
        node.generation, node.carried = generation + 1, carried(book)

    def rejoin(self, node, when):
        node.retry_at = when  # the latest call wins: an earlier one still in the heap is stale
        heapq.heappush(self.rejoins, (when, node.rank))

    def retry(self, node):
        node.retries += 1
        node.state = "gone"
        self.rejoin(node, time.monotonic() + RETRY_S)

    def check_in_again(self):
        """Nodes due to check in (again): the old connection closed, a new one opened (a bounded number at once)."""
        now = time.monotonic()
        room = self.args.connecting - sum(1 for n in self.nodes if n.state == "connecting")
        while self.rejoins and self.rejoins[0][0] <= now and room > 0:
            room -= 1
            when, rank = heapq.heappop(self.rejoins)
            node = self.by_rank[rank]
            if when != node.retry_at:
                continue
            node.retry_at = None
            if node.victim and self.args.fail != "exit":
                continue  # gone for good
            if node.state in ("connecting", "challenged", "hello"):
                continue  # already on its way in
            if node.state != "gone":  # the abort's finish waited its time: close and go
                try:
                    self.sel.unregister(node.sock)
                except (KeyError, ValueError):
                    pass
                node.sock.close()
            node.inbuf = b""
            self.connect(node)

    def pump(self, timeout):
        # connect-backs first: node 0 gives each 3 s, and a real node answers its own on its own CPU
        events = sorted(self.sel.select(timeout), key=lambda event: event[0].data[0] == "link")
        for key, _ in events:
            kind, node = key.data
            if kind == "stdin":
                self.stdin_closed = not os.read(sys.stdin.fileno(), 4096)
            elif kind == "listen":
                try:
                    conn, _ = node.listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                self.on_probe(conn, node)
                self.sel.unregister(node.listener)  # node 0 connects back once: one descriptor per node after
                node.listener.close()
                node.listener = None
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
        if self.rejoins:
            self.check_in_again()

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
        if self.args.first_victim is not None:  # --recover over several swarms: the victims are in one of them
            victims = [self.by_rank[r] for r in range(self.args.first_victim, self.args.first_victim + count)
                       if r in self.by_rank]
        else:
            middle = len(self.nodes) // 2
            victims = self.nodes[middle:middle + count]
        self.victim_ranks = set(range(self.args.first_victim, self.args.first_victim + count)) \
            if self.args.first_victim is not None else {n.rank for n in victims}
        for victim in victims:  # --recover: a node going down (close, silent) neither answers nor comes back
            victim.victim = True
        if not victims:  # another swarm's nodes fail: these hear it and check in again
            return None, None, self.nodes, self.next_generation([], self.nodes)
        moments = sorted(random.uniform(0, self.args.spread) for _ in victims[1:])
        first = self._fail_one(victims[0], how)
        for victim, after in zip(victims[1:], moments):
            while time.monotonic() < first + after:
                self.tick(0.01)
            self._fail_one(victim, how)
        others = [n for n in self.nodes if n not in victims]
        if self.args.recover:
            return first, victims[0], others, self.next_generation(victims, others)
        if not others:  # real workers hear it (the driver times them): wait until node 0 let the victim go
            self.until(lambda: victims[0].state == "gone", 40, "node 0 closing the failed node's connection")
        self.until(lambda: all(n.abort_at or n.state == "gone" for n in others), 40, "every abort")
        if count > 1:  # one event: each node is told once, and nothing after the first
            end = time.monotonic() + 3.0
            while time.monotonic() < end:
                self.tick(0.05)
        return first, victims[0], others

    def next_generation(self, victims, others):
        """--recover: until every node that lives on holds its next generation's verdict; then 3 s more, to see
        nothing follows (one event: one generation, each node told once). What each node was told, and when."""
        back = others + (victims if self.args.fail == "exit" else [])
        self.until(lambda: all(n.generation > 1 for n in back), 120, "every node's next generation")
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            self.tick(0.05)
        roles = collections.Counter(n.rejoined[1][1] for n in back)
        book = self.books and list(self.books.values())[-1][0]
        return {"told": [n.rejoined[1][0] for n in back], "roles": dict(roles), "back": len(back),
                "generations": max(n.generation for n in self.nodes) - 1, "retries": sum(n.retries for n in back),
                "hello_bytes": max(n.hello_bytes for n in back), "restarts": book.get("restarts") if book else None,
                "left_out": len(self.victim_ranks - set((book or {}).get("members", ()))),
                "spares_in": sum(1 for rank in (book or {}).get("members", ()) if rank >= self.args.slots),
                "aborts_most": max(n.aborts for n in back)}

    def _fail_one(self, victim, how):
        now = time.monotonic()
        if victim.state == "gone" and not self.args.recover:  # node 0 already closed on it: nothing left to fail
            return now
        if victim.state == "gone" or (how == "exit" and (victim.state != "in" or victim.aborts)):
            self.failed += 1  # --recover: between connections; it never checks in again (close, silent)
            return now
        self.failed += 1
        if how == "exit":
            self.send(victim, {"t": "exit", "code": 1, "how": "torchrun exited 1",
                               "tail": ["Traceback (most recent call last):", "RuntimeError: scale harness"]})
            victim.sock.shutdown(socket.SHUT_WR)
        elif how == "close":
            self.sel.unregister(victim.sock)
            if victim.listener is not None:
                self.sel.unregister(victim.listener)
                victim.listener.close()
                victim.listener = None
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
    parser.add_argument("--recover", action="store_true", help="node 0 runs recovery: after --fail, every node "
                        "checks in again for the next generation (the time each holds its role in it is measured)")
    parser.add_argument("--first-victim", type=int, help="with --recover: the first failing node's rank (the "
                        "rack follows it); a swarm holding none of them only hears the fault")
    parser.add_argument("--slots", type=int, default=0, help="with --recover: training nodes (identities past are "
                        "spares)")
    parser.add_argument("--deaf", type=lambda text: {int(r) for r in text.split(",") if r}, default=set(),
                        help="with --recover: these ranks check in again with a check port that refuses node 0's "
                        "connect-back (a node whose network path went bad mid-job: left out, not the job refused)")
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
    if args.fail and args.recover:
        moment, victim, others, after = swarm.fail(args.fail)
        out.update({"fail": args.fail, "failed_at": moment, "victims": swarm.failed,
                    "told_after": _spread(after["told"], moment) if moment else None, **after})
        out["victim"] = victim.rank if victim else None
    elif args.fail:
        moment, victim, others = swarm.fail(args.fail)
        out.update({"fail": args.fail, "victim": victim.rank, "failed_at": moment, "not_told": sum(
            1 for n in others if n.abort_at is None), "abort_after": _spread([n.abort_at for n in others], moment),
            "aborts_most": max((n.aborts for n in others), default=0), "victims": swarm.failed})
    print(json.dumps(out), flush=True)
    if args.recover:  # beat on until the driver closes stdin: swarms ending one by one would be new faults
        swarm.sel.register(sys.stdin, selectors.EVENT_READ, ("stdin", None))
        while not swarm.stdin_closed:
            swarm.tick()
    return 0


if __name__ == "__main__":
    sys.exit(main())
