"""The stall watch's messages on the heartbeat's connections (mixed into ``heartbeat.LinkWatch``/``HubWatch``).

- beat ``{"t": "beat", "ranks": [...]}``: a node's ranks' view, every beat (with ``"gpus"`` and
  ``"gpu_source"`` when the node took a new GPU reading, ``"step"`` when it read a new step line: ``metrics/``);
- ``{"t": "stacks", "id": n}`` from node 0, answered with ``{"t": "stacks", "id": n, "ranks": [...]}``
  (each rank's stack class and frames);
- ``{"t": "report", "lines": [...]}``: a report every node prints (a stall, a straggler);
- an ``abort`` with ``"code": 7``: the job stalled for stall_timeout; every node exits 7.
"""

import time

from ..errors import ExchangeError
from ..news import Cause, Evidence, NodeId
from .fault import FaultSeam
from .surface import HubSurface, LinkSurface


class LinkStall(LinkSurface):
    """A worker's side (what it uses of the watch: ``surface.LinkSurface``)."""

    beat_extra = None  # a callable whose dict rides on the beat (metrics/: this node's GPU readings), or None

    def beat(self):
        message = {"t": "beat"}
        if self.stall is not None:
            try:
                message["ranks"] = self.stall.view()
            except Exception as err:  # noqa: BLE001 - the heartbeat must go on whatever the watch hits
                self.stall = None
                self.log(f"warning: stall watch off on this node: {err!r}")
        if self.beat_extra is not None:
            try:
                message.update(self.beat_extra())
            except Exception:  # noqa: BLE001 - nor whatever the metrics hit
                self.beat_extra = None
        return message

    def stall_message(self, message):
        if message.get("t") == "report":
            lines = [str(line) for line in message.get("lines") or []]
            if self.stall is not None:
                self.stall.publish(lines)
            else:
                for line in lines:
                    self.log(line)
        elif message.get("t") == "stacks":  # off the heartbeat's thread: a rank that does not answer costs ~4 s
            import threading                  # (more on a loaded machine), and beats must go on meanwhile

            threading.Thread(target=self._answer_stacks, args=(message.get("id"),), daemon=True,
                             name="nodeweave-stacks").start()

    def _answer_stacks(self, request):
        ranks = self.stall.stacks() if self.stall is not None else []
        try:
            self._send({"t": "stacks", "id": request, "ranks": ranks})
        except (ExchangeError, OSError):
            pass


class HubStall(FaultSeam, HubSurface):
    """Node 0's side (what it uses of the watch: ``surface.HubSurface``)."""

    asked = 0
    node_gpus = None  # node rank -> (source, [GPU readings]) the node's beats carried (metrics/collect.py)

    def stall_tick(self):
        try:
            self.stall.hub_tick(self)
        except Exception as err:  # noqa: BLE001 - the heartbeat must go on whatever the watch hits
            self.stall = None
            self.log(f"warning: stall watch off: {err!r}")

    def stall_message(self, peer, message):
        kind = message.get("t")
        if kind == "beat" and isinstance(message.get("ranks"), list):
            peer.ranks, peer.ranks_at = message["ranks"], self.clock()
        if kind == "beat" and isinstance(message.get("step"), list) and len(message["step"]) == 3:
            logger, number, age = message["step"]
            if isinstance(number, int) and isinstance(age, (int, float)):  # dated on node 0's clock
                peer.step = (str(logger), number, time.time() - max(0.0, float(age)))
        if kind == "beat" and isinstance(message.get("gpus"), list):
            if self.node_gpus is None:
                self.node_gpus = {}
            self.node_gpus[(peer.fp or {}).get("rank")] = (message.get("gpu_source"), message["gpus"])
        elif kind == "stacks":
            peer.stacks = (message.get("id"), message.get("ranks") or [])

    def views(self, own):
        """This node's view (``own``) and every other node's latest; the ranks of a node that finished count as
        exited. Each rank's ``node`` is the identity of the node that beat it (node 0's own, a peer's
        fingerprint), the numbering of the nodes table and the book: under recovery a spare's ranks are the
        spare's, not the left-out node's it took the place of (its launch's node rank is that one's; walk7 B46).
        Every duration is as of now: a peer's view is a beat old when it comes, so its ``since_s`` and ``polled_s``
        grow by the time since (node 0's clock: no clocks compared), and a stall's length, its start and the
        ranks' last moves read alike from node 0's ranks and the others' (walk18b B2: 2.1 s apart). ``at`` is when
        the view's counts were read on node 0's clock (the rates compare every rank over one window by it)."""
        now = self.clock()
        views = [dict(rank, node=(self.hub.own_fp or {}).get("rank", rank.get("node")), at=now) for rank in own]
        for peer in self.hub.peers:
            node = (peer.fp or {}).get("rank")
            at = getattr(peer, "ranks_at", None)
            age = max(0.0, now - at) if at is not None else 0.0
            for rank in peer.ranks or []:
                view = dict(rank, node=node, at=now if at is None else at)  # when its counts were read
                if age and isinstance(view.get("since_s"), (int, float)):
                    view["since_s"] = round(view["since_s"] + age, 2)
                    if isinstance(view.get("polled_s"), (int, float)):
                        view["polled_s"] = round(view["polled_s"] + age, 2)
                views.append(dict(view, state="gone") if peer.done is not None else view)
        return views

    def ask_stacks(self):
        self.asked += 1
        for peer in self.hub.peers:
            peer.stacks = None
        self._broadcast({"t": "stacks", "id": self.asked})
        return self.asked

    def answered_stacks(self, request, deadline):
        """{node label: described ranks} of every live node that answers ``request`` before ``deadline``. Called
        on another thread than the heartbeat's (a stall report's, a `--status --stacks` answer's): the heartbeat's
        thread reads the answers (``stall_message``); this one only waits for them, never touching the
        connections, so the beats go on meanwhile."""
        def waiting():
            return [p for p in self.hub.peers if p.done is None and not (p.stacks and p.stacks[0] == request)]
        while waiting() and self.clock() < deadline and not self.hub.board.closed:
            time.sleep(0.05)
        return {f"node {(p.fp or {}).get('rank')}": p.stacks[1] for p in self.hub.peers
                if p.stacks and p.stacks[0] == request}

    def broadcast_report(self, lines):
        self._broadcast({"t": "report", "lines": lines})

    def stop_all(self, label, how, code, node=None, cause=Cause.STALL, gap=None):
        """Stop every node (and this one) with ``code``: the stall outlived stall_timeout, or (recovery) a
        straggler lasted (``gap``: how much slower). ``node``: the culprit's identity, as the ranks' views name
        it (:meth:`views`; recovery leaves that node out): evidence on the failure news."""
        if self.failure is None:
            self.news.put(Evidence(cause=cause, label=label, how=how, at=time.time(),
                                   node=None if node is None else NodeId(int(node)), gap=gap))
            self._broadcast({"t": "abort", "node": label, "how": how, "tail": [], "code": code})
        self._stop_for(label, {"how": how}, code)
