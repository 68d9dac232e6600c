"""Check-in before launch: node 0 gathers every node's fingerprint and answers all with one verdict.

Node 0 listens on the exchange port (the master port + 1 unless set). Each
other node opens a port of its own for the check (an ephemeral one, the kind
NCCL and Gloo connect to), connects, and is challenged: it answers with its
fingerprint and an HMAC of node 0's nonce under the job token (``wire.py``).
Node 0 connects back to the node's port — proving random-port traffic gets
through — and notes the address the node's connection came from. Once every
node is in (the minimum, for an elastic job) or the deadline passes, node 0
judges them all at once (``verdict.py``) and sends each node the same verdict: the
part every node is told alike, its own row, and the digest of the whole (node 0's bytes grow with N).
The connections stay open: ``heartbeat.py`` watches them for the job's life.
Node 0 serves every node, connect-backs included, from one loop (``switchboard.py``).
"""

import errno
import os
import socket
import time

from ..nodelists import ranges
from .connectback import answer_probe as _answer_probe
from .wire import (MAX_MESSAGE, SEND_TIMEOUT_S, Channel, Closed, ExchangeError, connect, encode_json, finish_all,
                   listen, nonce, proof, readable, verify)
from ..hostport import host_port

HELLO_TIMEOUT_S = 10.0   # from accepting a connection to its hello
PROBE_TIMEOUT_S = 3.0    # node 0's connect-back: to connect, then to answer once node 0 sent its probe
POLL_S = 0.5
STATUS_BODY = {"t": "status"}


class Refused(ExchangeError):
    """Node 0 would not take this node (another job); exit 3."""


class NotAnExchange(ExchangeError):
    """The port accepted the connection, but what answers there is no nodeweave exchange: no challenge within
    ``HELLO_TIMEOUT_S`` (``silent``: another program that waits for its client to speak, or node 0 between
    generations, its listener kept but not read yet) or an answer that is none (walk7 B32)."""

    def __init__(self, text, silent):
        super().__init__(text)
        self.silent = silent


class Peer:
    """A node checked in with node 0 (or on its way in)."""

    __slots__ = ("channel", "challenge", "since", "fp", "seen", "probe", "thread", "label", "done", "last_heard",
                 "ranks", "ranks_at", "stacks", "role", "stopping", "step")

    def __init__(self, channel, challenge, since):
        self.channel, self.challenge, self.since = channel, challenge, since
        self.fp = self.seen = self.probe = self.thread = self.label = self.done = None
        self.ranks = self.stacks = None  # the stall watch's: this node's ranks, its answer for stacks
        self.ranks_at = None  # node 0's monotonic time its ranks' view came (their durations are as of then)
        self.step = None  # (logger, step, time.time()) of the newest step line its beats carried (metrics/)
        self.last_heard, self.role = since, "member"  # recovery's spares and left-out nodes: their loss aborts nothing
        self.stopping = False  # it answered node 0's abort (heartbeat.STOPPING): it stops, and is not lost

    def entry(self):
        from .verdict import Entry
        return Entry(self.fp, seen=self.seen, probe=self.probe, tag=self)


def exchange_holding(port, host="127.0.0.1", timeout=2):
    """The job id of a nodeweave exchange answering on ``host``'s ``port`` (this machine's unless said; its
    greeting is a JSON challenge naming the job), or None when nothing, or something else, answers there."""
    import json
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout) as probe:
            probe.settimeout(timeout)
            greeting = b""
            while b"\n" not in greeting and len(greeting) < 4096:
                chunk = probe.recv(4096)
                if not chunk:
                    break
                greeting += chunk
    except OSError:
        return None
    try:
        said = json.loads(greeting.split(b"\n", 1)[0].decode("utf-8", "replace"))
    except ValueError:
        return None
    return said.get("job") if isinstance(said, dict) and said.get("t") == "challenge" else None


SILENT = "a program that accepts the connection and stays silent"


def what_answers(host, port, timeout=1.5):
    """What answers on ``host``'s ``port``, in one phrase (walk13 B11): node 0's check-in exchange (its greeting is
    a JSON challenge naming the job), node 0's metrics port (HTTP, whose ``/`` names ``/metrics`` and
    ``/status.json``), another HTTP server, :data:`SILENT`, or None when nothing listens. Who stays silent is
    the caller's to guess, from what the port is to the job (walk16b B11: node 0's own stopped exchange was
    named torchrun's store)."""
    import socket

    job = exchange_holding(port, host, timeout)
    if job is not None:
        return f"node 0's check-in exchange (job {job})"
    try:
        with socket.create_connection((host, port), timeout=timeout) as probe:
            probe.settimeout(timeout)
            probe.sendall(b"GET / HTTP/1.0\r\nHost: nodeweave\r\n\r\n")
            said = b""
            try:
                while len(said) < 4096:
                    chunk = probe.recv(4096)
                    if not chunk:
                        break
                    said += chunk
            except OSError:
                pass
    except OSError:
        return None
    if said.startswith(b"HTTP/"):
        if b"/status.json" in said:
            return "node 0's metrics port (HTTP: /metrics and /status.json)"
        return "an HTTP server"
    if not said:
        return SILENT
    return "another program"


def second_node_0(port, job, held=False):
    """The refusal of a second start of node 0 of ``job`` on this machine, whose check-in exchange already answers
    on ``port`` (``held``: the job id answering there, when the caller asked already), or None. One answer for
    every path that meets the live node 0: its exchange port taken (walk8 B40), and its master port taken, which
    under recovery was first read as this node's own launcher of before and waited on for a minute (walk12b
    B12)."""
    from ..errors import EXIT_TOPOLOGY, EntrypointError

    held = exchange_holding(port) if held is False else held
    if held is None or held != job:
        return None
    return EntrypointError(
        f"node 0 of job {held!r} is already running on this machine (its check-in exchange answers on port "
        f"{port}): this is a second start of node 0 (a second docker run or srun of it, a unit restarted while the "
        "old process lives); two nodes claim rank 0: stop one", EXIT_TOPOLOGY)


class Hub:
    """Node 0's side of the exchange. ``own_fp`` may start as ``{"job": ...}`` (the port opens before
    node 0's fingerprint is ready) and is completed before :meth:`gather`."""

    def __init__(self, port, token, own_fp, log, clock=time.monotonic, bind="", listener=None):
        from .switchboard import Switchboard  # node 0's loop (and its threads): the other nodes never load it
        self.port, self.token, self.own_fp, self.log, self.clock = port, token, own_fp, log, clock
        self.bind = bind  # the address it listens on ('': every one); node 0's /metrics listen there too
        self.keep_listener = False  # recovery: the next generation's hub takes the port over, never closed between
        try:
            self.sock = listener or listen(bind, port, backlog=512)
        except OSError as err:
            from ..errors import EXIT_UNREACHABLE, EntrypointError

            held = exchange_holding(port) if err.errno == errno.EADDRINUSE else None
            second = second_node_0(port, own_fp.get("job"), held)  # this very job's node 0 (walk8 B40)
            if second is not None:
                raise second from None
            said = os.strerror(err.errno) if err.errno else str(err)  # never the bind call's Python tuple
            whose = f" by node 0's exchange of another job ({held!r})" if held is not None else ""
            raise EntrypointError(f"cannot open the check-in exchange on port {port}: {said}{whose}; "
                                  "set NODEWEAVE_EXCHANGE_PORT to a free port (the same on every node)",
                                  EXIT_UNREACHABLE) from None
        self.sock.setblocking(False)
        self.board = Switchboard(self.sock)
        self.pending, self.peers = [], []
        self.verdict = None  # once announced
        self.row_of, self.judged_rows = {}, None  # id(peer) -> its row of the rows decide judged
        self.live_status, self.refusals = None, []  # the stall watch's view (show_ranks); nodes that refused themselves
        self.strangers = {}  # rank -> a hello of another job (or token) that claimed it: said if the rank is missing
        # every view's one row per node (news.roster): each node's newest link (its fingerprint, address as last
        # seen), and the nodes the job counted on at its start ({node: role}); recovery's next hub takes both over
        self.known, self.expected = {}, {}
        self.early = {"checked": 0, "ranks": set(), "refused": False}  # refusal.refused_early's, node by node
        # recovery: nodes of the last generation that had neither answered node 0's abort nor gone when its hub
        # closed (heartbeat: the hear-back's quiet); their old links are read on here (take_undecided)
        self.undecided, self.undecided_by_sock, self.gone_after_abort = [], {}, {}  # gone: rank -> why

    def accept(self):
        """Take every waiting connection and challenge it."""
        while True:
            if self.board.full(self.connections()):
                self.board.out_of_files(self.log, self.connections())
                return
            try:
                sock, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:
                if err.errno in (errno.EMFILE, errno.ENFILE):
                    self.board.out_of_files(self.log, self.connections())
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer = Peer(Channel(sock), nonce(), self.clock())
            self.board.watch(peer)
            if self.board.post([peer], {"t": "challenge", "nonce": peer.challenge, "job": self.own_fp.get("job")}):
                self.board.forget(peer)
                peer.channel.close()
            else:
                self.pending.append(peer)

    def connections(self):
        """The nodes' connections node 0 holds: on their way in, in, and the old links a regather reads."""
        return len(self.pending) + len(self.peers) + len(self.undecided_by_sock)

    def read_hello(self, peer):
        """Move ``peer`` to ``peers`` once its hello checks out; drop it on anything else."""
        try:
            messages = peer.channel.drain()
        except ExchangeError:
            self._drop(peer, None)  # a connection that only tested the port (a worker's wait) ends here
            return
        if not messages:
            return
        hello = messages[0]
        if hello.get("t") == "status":
            self._answer_status(peer, hello)
            return
        if hello.get("t") == "refusal":
            from .refusal import note_refusal
            note_refusal(self, peer, hello)
            return
        fp = hello.get("fp")
        if hello.get("t") != "hello" or not isinstance(fp, dict):
            self._drop(peer, "expected the exchange's hello")
            return
        if hello.get("job") != self.own_fp.get("job") or not verify(self.token, peer.challenge, hello.get("mac"), fp):
            why = (f"it belongs to job {hello.get('job')!r}, this is {self.own_fp.get('job')!r}"
                   if hello.get("job") != self.own_fp.get("job") else "its job token differs from this job's")
            rank = fp.get("rank")
            if isinstance(rank, int) and not isinstance(rank, bool) and len(self.strangers) < 64:
                # said with the node still missing at the deadline (walk8 B26); never a refusal of the job: the
                # hello is not signed with this job's token, so anyone could send one
                self.strangers[rank] = (f"a node from {peer.channel.peer} came as node rank {rank} with "
                                        + (f"job id {hello.get('job')!r}" if hello.get("job") != self.own_fp.get("job")
                                           else "another job token"))
            self._drop(peer, f"not a node of this job: {why}")
            return
        self.pending.remove(peer)
        peer.fp, peer.seen = fp, peer.channel.seen or ""
        self.known[fp.get("rank")] = peer
        self.board.hold(peer)  # judged: not read again until the heartbeat
        self.board.probe(peer, self.token, PROBE_TIMEOUT_S)
        self.peers.append(peer)

    def _answer_status(self, peer, request):
        """``nodeweave doctor --cluster``: every node's fingerprint as node 0 sees it, for this job only."""
        if request.get("job") != self.own_fp.get("job") or not verify(self.token, peer.challenge, request.get("mac"),
                                                                       STATUS_BODY):
            self._drop(peer, "a status request without this job's token")
            return
        self.pending.remove(peer)
        self.board.release(peer)
        # answered on a thread of its own: the thread reading here is, while the job runs, the heartbeat's, and
        # the answer can take seconds (every rank's stacks gathered, a large answer sent, the peer's close awaited)
        # while a node not hearing node 0 for LOST_S counts it lost
        import threading  # here: a worker's check-in starts no thread (test_checkin_digest)

        threading.Thread(target=self._send_status, args=(peer, bool(request.get("stacks")), bool(request.get("all"))),
                         daemon=True, name="nodeweave-status").start()

    def _send_status(self, peer, stacks, whole):
        try:
            peer.channel.send(self.status(stacks=stacks, whole=whole))
        except ExchangeError:
            pass
        peer.channel.finish(1.0)

    def show_ranks(self, source):
        """`--status` shows the ranks from ``source(stacks)`` (the stall watch's view: ``HubWatch.use_stall``)."""
        self.live_status = source

    def status(self, stacks=False, whole=False):
        """What ``--status`` shows: a summary first (``summary.py``: counts by state, the worst nodes and
        ranks), then every node and every rank up to ``summary.WHOLE_UP_TO`` nodes or when asked
        (``whole``, ``--status --all``); past a line's 1 MiB the answer goes as a frame (wire.py)."""
        from .summary import WHOLE_UP_TO, ended_state, nodes_summary, ranks_summary
        from .verdict import shared_view

        now = self.clock()
        # node 0 answers, so it is counted with the others (walk7 B26): gathering while it waits for the nodes
        # (walk11b B21: it was "running" with nothing started); a spare or left-out node waits, never "running"
        # beside the training nodes (walk11b B3)
        from ..news import hub_roster, hub_standing, waiting

        book = (self.verdict or {}).get("recovery")
        nodes = []
        rows = hub_roster(self, book if isinstance(book, dict) else None)
        for row in rows:  # one row per node (news.roster)
            peer, gone = row["peer"], row["gone"]
            node = {"fp": row["fp"], "seen": row["seen"], "probe": row["probe"], "own": row["own"]}
            if row["own"]:  # a node 0 recovery left out of training waits as any other node does (walk18b B7)
                node["state"], role = ("gathering", None) if self.verdict is None else \
                    hub_standing(book, row["node"])
                if isinstance(book, dict):
                    node["role"] = role
            elif gone is not None:  # left out and not back (walk16b B9), or expected and never in (walk17b B10)
                node.update(state=gone["state"], role=gone["role"], silent_s=gone["silent_s"])
            else:
                node["state"] = (waiting(peer) or self.checked_in_state()) if peer.done is None \
                    else ended_state(peer.done)
                if self.verdict is not None and peer.done is None:
                    node["silent_s"] = round(max(0.0, now - peer.last_heard), 1)  # since node 0 last heard it
            nodes.append(node)
        whole = whole or len(nodes) <= WHOLE_UP_TO
        ranks = self.live_status(stacks) if self.live_status is not None else None
        answer = {"t": "status", "phase": "gathering" if self.verdict is None else "running",
                  "summary": nodes_summary(nodes, self.verdict, (ranks or {}).get("stall"))}
        waiting_for = self.waiting()
        if waiting_for is not None:  # which nodes node 0 still waits for, and how long
            answer["waiting"] = waiting_for
        if isinstance(book, dict):  # under recovery: the generation and each node's role, as /status.json has them
            from ..news import left_out_now, spares_now

            answer["recovery"] = {key: book.get(key) for key in ("generation", "members", "spares", "restarts")
                                  if key in book}
            if "spares" in book:  # the spares waiting now: a gone one is its own row, lost (note18)
                answer["recovery"]["spares"] = spares_now(book, rows)
            # the nodes left out now; how often each node was ever left out under its own key (walk12 B2)
            answer["recovery"].update(left_out=left_out_now(book), times_left_out=book.get("left_out") or {})
        if whole:
            answer.update(nodes=nodes, verdict=self.verdict)
        else:
            answer.update(nodes_left_out=len(nodes), verdict=shared_view(self.verdict) if self.verdict else None)
        if ranks is not None:
            answer["ranks"] = ranks if whole else ranks_summary(ranks)
        return answer

    def checked_in_state(self):
        """A node in that is neither waiting nor ended: "checked in" while node 0 still gathers (its launcher waits
        for the verdict; walk12b B13: --status called it "running" beside node 0 gathering), "running" after."""
        return "checked in" if self.verdict is None else "running"

    def waiting(self):
        """Whom node 0 still waits for while it gathers, or None once its verdict is out (or before it gathers):
        ``expected`` (the nodes the gather waits for: every node at the job's start, node 0 counted; the nodes of
        the last generation at recovery's regather), ``checked_in`` (how many of them are in), ``not_in`` (the
        first 64 not in yet, by node index), ``deadline_in_s`` (seconds until node 0 stops waiting) and
        ``regather``. What ``--status`` and node 0's /status.json and /metrics say alike (walk12b B13). Read from
        the metrics server's threads too: every collection is copied before it is read."""
        gathering = getattr(self, "gathering", None)
        if self.verdict is not None or gathering is None:
            return None
        needed, deadline, wanted = gathering
        present = {self.own_fp.get("rank")} | {(peer.fp or {}).get("rank") for peer in list(self.peers)}
        gone = dict(getattr(self, "gone_after_abort", None) or {})  # a regather no longer waits for these
        expected = sorted(wanted) if wanted is not None else list(range(needed))
        not_in = [rank for rank in expected if rank not in present and rank not in gone]
        return {"expected": len(expected), "checked_in": sum(1 for rank in expected if rank in present),
                "not_in": not_in[:64], "deadline_in_s": round(max(0.0, deadline - self.clock()), 1),
                "regather": wanted is not None}

    def _drop(self, peer, why):
        self.board.release(peer)
        if why:
            self.log(f"check-in from {peer.channel.peer} turned away: {why}")
            try:
                peer.channel.send({"t": "reject", "reason": why})
            except ExchangeError:
                pass
        if peer in self.pending:
            self.pending.remove(peer)
        peer.channel.close()

    def expire(self):
        now = self.clock()
        for peer in [p for p in self.pending if now - p.since > HELLO_TIMEOUT_S]:
            self._drop(peer, f"no hello within {HELLO_TIMEOUT_S:g}s")

    def step(self, timeout):
        """Wait up to ``timeout`` for connections, hellos and connect-backs, and handle them."""
        accept, ready = self.board.wait(timeout)
        if accept:
            self.accept()
        for peer in ready:
            if peer.fp is None:
                self.read_hello(peer)
            elif peer.channel.sock in self.undecided_by_sock:
                self._read_undecided(peer)
            else:
                self.board.hold(peer)  # a judged node: what it sends waits for the heartbeat
        self.expire()

    # --- recovery: the last generation's nodes not heard out when its hub closed ----------------------------
    def take_undecided(self, peers):
        """The regather reads on the old links of ``peers`` (the last hub's ``undecided``: nodes that had
        neither answered its abort nor gone): each is waited for until it checks in again, or its old link shows
        it gone — closed without answering (a rack's power, its entrypoint killed: at once, not after LOST_S) or
        silent for :data:`heartbeat.LOST_S` — so a rack failing over a second is one event and a slow node that
        is alive is not left out."""
        for peer in peers:
            self.undecided_by_sock[peer.channel.sock] = peer
            self.board.watch(peer)

    def _read_undecided(self, peer):
        from .heartbeat import STOPPING

        try:
            messages = peer.channel.drain()
        except ExchangeError:
            self._let_undecided_go(peer, None if peer.stopping or peer.done is not None else
                                   "its connection closed without answering the abort")
            return
        peer.last_heard = self.clock()
        for message in messages:
            if message.get("t") == STOPPING:
                peer.stopping = True  # it heard: on its way back (its old link closes next)
            elif message.get("t") == "exit":
                peer.done = message   # its launcher ended: it checks in again as the others do

    def _let_undecided_go(self, peer, gone):
        """Stop reading ``peer``'s old link; ``gone``: why it will not come back (the regather waits no more)."""
        self.undecided_by_sock.pop(peer.channel.sock, None)
        self.board.forget(peer)
        peer.channel.close()
        if gone:
            self.gone_after_abort[peer.fp.get("rank")] = gone

    def _undecided_silent(self):
        """Nodes whose old link stayed silent :data:`heartbeat.LOST_S` (read first: node 0's lag is no silence)."""
        from .heartbeat import LOST_S

        now = self.clock()  # a node that answered since is on its way back: its link goes quiet as it stops
        for peer in [p for p in self.undecided_by_sock.values()
                     if not p.stopping and p.done is None and now - p.last_heard > LOST_S]:
            if readable([peer.channel.sock], 0):
                self._read_undecided(peer)
            if peer.channel.sock in self.undecided_by_sock and self.clock() - peer.last_heard > LOST_S:
                self._let_undecided_go(peer, f"silent for {LOST_S:g}s without answering the abort")

    def undecided_ranks(self):
        """The identities :meth:`take_undecided` reads on: the regather waits for them as for the nodes that
        answered, unless their links show them gone."""
        return {peer.fp.get("rank") for peer in self.undecided_by_sock.values()}

    def let_undecided_go(self):
        """The regather is over: the old links still open are closed (their nodes checked in again, or the
        regather's deadline passed), and the nodes found gone on theirs are named (one line: a rack is 32)."""
        for peer in list(self.undecided_by_sock.values()):
            self._let_undecided_go(peer, None)
        from ..stall.flight import spans

        by_why = {}
        for rank, why in self.gone_after_abort.items():
            by_why.setdefault(why, []).append(rank)
        for why, ranks in sorted(by_why.items()):
            self.log(f"recovery: node(s) {spans(sorted(ranks))} went away after the abort ({why}): the regather "
                     "did not wait for them")

    def gather(self, needed, deadline, early=None, wanted=None):
        """Wait until ``needed`` nodes (node 0 included) have checked in, or ``deadline``, or — as each
        node arrives — ``early()`` says the job is refused already (another node count, a duplicate rank).
        ``wanted``: a set of node ranks instead of a count (recovery's nodes checking in again); the ranks
        still missing then (an empty set when all came)."""
        next_log = self.clock() + 10.0
        self.gathering = (needed, deadline, wanted)  # what --status says while gathering (walk11b B21)
        # descriptors for every node, and for the old links a regather still reads (take_undecided)
        self.board.prepare((needed if wanted is None else len(wanted) + 1) + len(self.undecided_by_sock), self.log)
        judged = 0
        missing, counted = (set(wanted), 0) if wanted is not None else (None, 0)
        while True:
            if wanted is not None:  # only the nodes in since the last turn: a regather of N nodes costs N, not N²
                missing.difference_update(peer.fp.get("rank") for peer in self.peers[counted:])
                counted = len(self.peers)
                if self.undecided_by_sock:
                    self._undecided_silent()
                missing.difference_update(self.gone_after_abort)
            now = self.clock()
            if (not missing if wanted is not None else len(self.peers) + 1 >= needed) or now >= deadline:
                break
            if early is not None and len(self.peers) + len(self.refusals) != judged:
                judged = len(self.peers) + len(self.refusals)
                if early():
                    break
            if now >= next_log:
                self.log(f"check-in: waiting for node(s) {ranges(map(str, sorted(missing)))} to check in "
                         f"again ({int(deadline - now)}s more)" if wanted is not None else
                         f"check-in: {len(self.peers) + 1} of {needed} node(s) in; waiting up to "
                         f"{int(deadline - now)}s more")
                next_log = now + 10.0
            self.step(min(POLL_S, deadline - now))
        while self.board.probing():  # each connect-back ends by its own deadline
            self.step(POLL_S)
        if wanted is None:
            return None
        self.let_undecided_go()
        return wanted - {peer.fp.get("rank") for peer in self.peers} - set(self.gone_after_abort)

    def unreachable(self, allow, nnodes_max=1, launcher=None, apart=True):
        """{peer: (why, check)} for the nodes in that recovery's regather leaves out (``verdict.set_aside``): node 0
        cannot reach them as their peers must, or their settings are apart from node 0's."""
        from .verdict import Entry, ordered, set_aside

        own = Entry(self.own_fp, seen=self.own_fp.get("route_address") or self.own_fp.get("address"), own=True)
        entries = ordered([own] + [peer.entry() for peer in self.peers])
        return {entry.tag: (why, name) for entry, why, name in set_aside(entries, allow, nnodes_max, launcher,
                                                                                apart)}

    def decide(self, nnodes_min, nnodes_max, launcher, allow, missing=None, without=(), early=False):
        """The verdict over node 0 and the nodes in, less ``without`` (peers recovery leaves out: not judged)."""
        from .refusal import add_refusals
        from .verdict import Entry, judge, ordered
        entries = [Entry(self.own_fp, seen=self.own_fp.get("route_address") or self.own_fp.get("address"), own=True)]
        entries += [peer.entry() for peer in self.peers if peer not in without]
        present = {e.fp.get("rank") for e in entries}
        gone = {rank: "; ".join(filter(None, (missing(rank) if missing else None, self.strangers.get(rank))))
                or None for rank in range(nnodes_min) if rank not in present}
        entries = ordered(entries)
        verdict = judge(entries, nnodes_min, nnodes_max, launcher, allow, gone, early=early)
        self.row_of = {id(e.tag): i for i, e in enumerate(entries) if e.tag is not None}
        self.judged_rows = verdict["rows"]
        if self.refusals:
            add_refusals(verdict, self.refusals)
        return verdict

    def verdict_messages(self, peers, verdict):
        """(peer, bytes) for each of ``peers``: the part of ``verdict`` every node is told alike (encoded once)
        and the peer's own (``verdict.py``), so what node 0 sends grows with the node count, not its square.
        ``verdict`` gets its digest (the whole's) here, where node 0 keeps it."""
        import json

        from .verdict import digest, own_parts, shared_view

        verdict.setdefault("digest", digest(verdict))
        head = b'{"t":"verdict","verdict":' + json.dumps(shared_view(verdict), separators=(",", ":")).encode()
        parts = own_parts(verdict)
        if verdict.get("rows") is self.judged_rows:
            row_of = self.row_of
        else:  # another verdict (an elastic job's late node; recovery's): its rows by rank and hostname
            rows = {}
            for i, row in enumerate(verdict.get("rows") or []):
                rows.setdefault((row.get("rank"), row.get("hostname")), i)
            row_of = {id(p): rows.get(((p.fp or {}).get("rank"), (p.fp or {}).get("hostname"))) for p in peers}
        out = []
        for peer in peers:
            index = row_of.get(id(peer))
            part = parts[index] if index is not None and index < len(parts) else {}
            own = json.dumps(part, separators=(",", ":")).encode() if part else b"{}"
            out.append((peer, encode_json(head + b',"own":' + own + b"}")))
        return out

    def tell(self, peers, verdict):
        """Queue each of ``peers`` its verdict (never waiting on one); the peers that cannot take it."""
        return self.board.post_each(self.verdict_messages(peers, verdict))

    def announce(self, verdict):
        """Send the verdict to every node (its shared part encoded once, written without waiting on any one
        node); a node that cannot be told within the send timeout is dropped."""
        self.verdict = verdict
        lost = set(self.tell(self.peers, verdict))
        lost.update(self.board.flush_all(self.peers, self.clock() + SEND_TIMEOUT_S))
        if lost:
            self.log(f"check-in: {len(lost)} node(s) could not be sent the verdict (gone, not reading for "
                     f"{SEND_TIMEOUT_S:g}s); they end with exit 4")
        self.peers = [peer for peer in self.peers if peer not in lost]
        self.board.drop(lost)

    def turn_away(self, why):
        """Tell every connection still on its way in — waiting to be accepted, or not through its hello —
        ``why`` it is not taken (a ``reject``: the node exits 3 with it), instead of closing on it as
        :meth:`close` would (the node would end with exit 4, "closed the connection")."""
        self.accept()
        if self.pending:
            self.board.post(self.pending, {"t": "reject", "reason": why})
            self.log(f"check-in: {len(self.pending)} node(s) still checking in were told the job is refused")

    def close(self):
        """Send what is queued, then let every connection go: those that answered an abort (``stopping``) at
        once (node 0 read all they send before their close), the others once they close too or after 1 s;
        but not the ``undecided`` (recovery: neither answered nor gone), whose links the next hub reads on."""
        self.undecided = [p for p in self.undecided if p.done is None and not p.stopping]
        kept = set(self.undecided)
        live = [p for p in self.pending + self.peers if p not in kept]
        self.board.flush_all(live + self.undecided, self.clock() + 1.0)
        self.board.close()
        for peer in live:
            if peer.stopping:
                peer.channel.close()
        finish_all([peer.channel for peer in live if not peer.stopping], 1.0)
        if self.keep_listener:  # nodes checking in for the next generation wait in its backlog, not refused
            return
        try:
            self.sock.close()
        except OSError:
            pass


def check_in(host, port, fp, token, deadline, clock=time.monotonic, bind="", limit=MAX_MESSAGE):
    """This node's side: (verdict, Channel to node 0). Raises Refused (another job) or ExchangeError.
    ``limit``: the largest message taken from node 0 (``wire.frame_limit`` of the job's node count)."""
    listener = listen(bind, 0)
    try:
        fp = dict(fp, probe_port=listener.getsockname()[1])
        channel = connect(host, port, max(0.5, min(10.0, deadline - clock())), limit)
        try:
            hello_by = clock() + HELLO_TIMEOUT_S
            try:
                challenge = channel.receive(min(deadline, hello_by))
            except Closed:
                raise
            except ExchangeError as err:
                now = clock()
                if now >= hello_by:
                    raise NotAnExchange(f"{host_port(host, port)} accepts connections but sent no nodeweave "
                                        f"challenge within {HELLO_TIMEOUT_S:g}s: another program on the port (node "
                                        "0's exchange is its master port + 1), or node 0 stuck", silent=True) from None
                if now >= deadline:
                    raise  # the deadline came first: no answer in time, as before
                challenge = {"t": None, "why": str(err)}  # it spoke, but not the exchange's language (a banner)
            if challenge.get("t") != "challenge":
                raise NotAnExchange(f"{host_port(host, port)} accepts connections but does not answer as a nodeweave "
                                    "exchange (another program on the port? node 0's exchange is its master port "
                                    "+ 1)" + (f": {challenge['why']}" if challenge.get("why") else ""), silent=False)
            if challenge.get("job") != fp.get("job"):
                try:  # node 0 hears the knock (its log, its missing row): it would wait out its deadline blind
                    channel.send({"t": "hello", "job": fp.get("job"), "fp": fp,
                                  "mac": proof(token, str(challenge.get("nonce")), fp)})
                except ExchangeError:
                    pass
                raise Refused(another_job(host_port(host, port), challenge.get("job"), fp.get("job")))
            channel.send({"t": "hello", "job": fp.get("job"), "fp": fp,
                          "mac": proof(token, str(challenge.get("nonce")), fp)})
            return _await_verdict(channel, listener, token, deadline, clock), channel
        except BaseException:
            channel.close()
            raise
    finally:
        listener.close()


def another_job(where, theirs, mine):
    """A worker's word for another job's exchange at node 0's port: most likely that job holds the port and this
    job's node 0 could not open it (its own start says so), so the fix is this job's port, as node 0's is; never
    this job's id changed to the other's, which reads as "join that job" (walk18b B19)."""
    return (f"node 0's exchange at {where} belongs to job {theirs!r}, this node to {mine!r}: another job holds that "
            "port, so this job's node 0 may not be up (its start then says the port is in use); give this job a free "
            "port, the same on every node: NODEWEAVE_EXCHANGE_PORT, or another NODEWEAVE_MASTER_PORT (the exchange "
            f"is the master port + 1 unless set); if it is this job's node 0 started with another job id, start it "
            f"again with this node's, NODEWEAVE_JOB_ID={mine}")


def _await_verdict(channel, listener, token, deadline, clock):
    messages = channel.buffered()
    channel.awake = clock()
    while True:
        for message in messages:
            if message.get("t") == "verdict" and isinstance(message.get("verdict"), dict):
                from .verdict import expand
                return expand(message["verdict"], message.get("own") if isinstance(message.get("own"), dict) else None)
            if message.get("t") == "reject":
                raise Refused(f"node 0 ({channel.peer}) turned this node away: {message.get('reason')}")
        left = deadline - clock()
        if left <= 0:
            raise ExchangeError(f"no verdict from node 0 ({channel.peer}) before the deadline")
        channel.awake = clock()  # stopped in the wait below, the verdict it reads after is one node 0 went past
        ready = readable([channel.sock, listener], min(left, POLL_S))
        if listener in ready:
            _answer_probe(listener, token, deadline)
        messages = channel.drain() if channel.sock in ready else []


def token_refusal(text, source):
    """``text`` (node 0's refusal) with where this node's token came from (the plan's ``exchange.token``) when the
    refusal is of the token: a token derived from the default master port is what a node or an asker given the
    exchange port alone gets wrong, and the refusal said nothing of it (walk10 B1). The one wording for
    ``--status``, a worker's check-in and ``doctor --cluster``."""
    if not source or "token" not in text:
        return text
    return (f"{text}; this node's token is {source}: give the job's own --master-port, NODEWEAVE_JOB_ID, "
            "NODEWEAVE_JOB_TOKEN or NODEWEAVE_JOB_TOKEN_FILE, as its nodes have them")


def ask_status(host, port, job, token, timeout_s=10.0, stacks=False, limit=MAX_MESSAGE, whole=False):
    """Node 0's view of the job (a summary; every node's fingerprint and the verdict up to 64 nodes, or with
    ``whole``), as ``nodeweave doctor --cluster`` shows it; ``limit`` as for :func:`check_in` (a whole answer
    grows with the job: ~1 KB per node)."""
    deadline = time.monotonic() + timeout_s
    channel = connect(host, port, timeout_s, limit)
    try:
        challenge = channel.receive(deadline)
        if challenge.get("t") != "challenge":
            raise ExchangeError(f"{host_port(host, port)} is not a nodeweave exchange")
        if challenge.get("job") != job:
            raise Refused(f"the exchange at {host_port(host, port)} belongs to job {challenge.get('job')!r}, "
                          f"not {job!r}: ask it as that job, NODEWEAVE_JOB_ID={challenge.get('job')} (with the "
                          "job's secret as its nodes have it: NODEWEAVE_JOB_TOKEN or NODEWEAVE_JOB_TOKEN_FILE, else "
                          "the same master port)")
        channel.send({"t": "status", "job": job, "mac": proof(token, str(challenge.get("nonce")), STATUS_BODY),
                      "stacks": bool(stacks), "all": bool(whole)})
        answer = channel.receive(deadline)
        if answer.get("t") == "reject":
            raise Refused(f"node 0 ({host_port(host, port)}) refused: {answer.get('reason')}")
        if answer.get("t") != "status":
            raise ExchangeError(f"{host_port(host, port)} answered {answer.get('t')!r}, not a status")
        return answer
    finally:
        channel.close()
