"""Failure news: every sign that a generation is failing, one typed record on one queue that node 0 drains.

A generation's news reaches node 0 on three threads: the heartbeat's (a
node's exit report, a node lost: silent, or its connection closed), the main
thread's (node 0's own launcher ended: the supervisor's ``finish``) and the
stall watch's (a stall at stall_timeout, a lasting straggler: the heartbeat's
tick or a stall report's thread). Each producer puts one frozen
:class:`Evidence` on the watch's :class:`News` and keeps nothing of it; the
one consumer, recovery's node 0 (``recovery/hub.py``), drains the queue once
the generation ended and hands it to ``recovery/decide.judged``, which names
the fault. Without recovery nobody drains it: a generation's news is a
handful of records.

Two numberings, never mixed (``recovery/book.py`` converts, and only there:
``Book.rank_of``, ``Book.node_at``): a node's **identity** (:data:`NodeId`:
its container's node rank among nodes + spares) and a **generation rank**
(:data:`GenRank`: its position among the generation's training nodes, the node
rank its launcher got). A report or a lost connection names an identity; the
stall watch's views name the rank the launch gave (``NODE_RANK``).

Stdlib only, and importable on Python 3.6 (the heartbeat carries it on every
multi-node start, recovery or not): ``typing.NamedTuple`` rather than
dataclasses, ``queue.SimpleQueue`` where there is one.
"""

import enum
import queue
import time
from typing import NamedTuple, NewType, Optional, Tuple

NodeId = NewType("NodeId", int)    # a container's node rank among nodes + spares (0..N+S-1)
GenRank = NewType("GenRank", int)  # a position among one generation's training nodes (its launcher's node rank)


class Word(str, enum.Enum):
    """An enum whose members read as their word (logs, f-strings, JSON) on every Python the entrypoint runs on."""

    def __str__(self):
        return self.value

    def __format__(self, spec):
        return format(self.value, spec)


class Cause(Word):
    """What the evidence says happened (a fault's ``cause`` in the book)."""

    CRASH = "crash"            # a member's launcher failed
    LOST = "lost"              # a member went silent or its connection closed
    STALL = "stall"            # the ranks stalled for stall_timeout
    STRAGGLER = "straggler"    # a lasting straggler (stall.fault_checks with straggler_is_fault)
    STOPPED = "stopped"        # a member's entrypoint was sent a stop signal (Ctrl-C, `--node stop`): it has exited
    SCRIPT = "script"          # the job's own error: the same exception on every member that raised one
    UNKNOWN = "unknown"        # the launchers ended without a report

    @classmethod
    def read(cls, text):
        """The cause ``text`` names; UNKNOWN for a word this nodeweave does not know (an older or newer one's)."""
        try:
            return cls(text)
        except ValueError:
            return cls.UNKNOWN


class Evidence(NamedTuple):
    """One piece of failure news, as node 0 heard it. ``node`` names who it is about by identity (a report's
    sender, a lost node, node 0 itself, a stall's or straggler's culprit: the ranks' views carry the identity of
    the node that beat them); ``rank``, the launch's numbering, where only that is known."""

    cause: Cause
    label: str                        # "node 1 (host-b)", as the logs name it
    how: str                          # "torchrun exited 1", "no heartbeat for 10s", "stalled for 600s ..."
    at: float                         # when node 0 heard it (epoch seconds)
    node: Optional[NodeId] = None
    rank: Optional[GenRank] = None
    own: bool = True                  # failed of its own accord, not only because a peer went away
    tail: Tuple[str, ...] = ()        # its last lines of output
    error: Optional[dict] = None      # the exception its script raised (``running/symptoms.script_error``)
    gap: Optional[float] = None       # a straggler's: how much slower (0.5 = 50%)


def stop_sent(report):
    """The stop signal a node's exit report says its entrypoint was sent (``"SIGINT"``, ``"SIGTERM"``), else None:
    that entrypoint has exited and checks in no more, so node 0 judges its end a stop (``Cause.STOPPED``), not a
    launcher that failed, and never waits for it to come back (walk13b B1: node 1's Ctrl-C was read as "its launcher
    failed (torchrun exited 1 after SIGINT)" and waited for 30 s to check in again). One read for every reader."""
    return (report.get("stopped") or None) if isinstance(report, dict) else None


def said_stop(signal_name):
    """``SIGINT, Ctrl-C`` or ``SIGTERM``: how every line names a stop signal a node was sent."""
    return f"{signal_name}, Ctrl-C" if signal_name == "SIGINT" else str(signal_name)


def heard(cause, label, report, node=None, rank=None, own=True, gap=None):
    """The :class:`Evidence` of ``report`` (a node's exit report or node 0's own: ``how``, ``tail``, ``error``),
    stamped now."""
    return Evidence(cause=cause, label=label, how=str(report.get("how") or "failed"), at=time.time(), node=node,
                    rank=rank, own=own, tail=tuple(str(line) for line in report.get("tail") or ()),
                    error=report.get("error"), gap=gap)


class News:
    """The one queue of a generation's evidence: any thread puts, never waiting; the consumer drains."""

    def __init__(self):
        self._queue = getattr(queue, "SimpleQueue", queue.Queue)()  # SimpleQueue: Python 3.7+

    def put(self, evidence):
        self._queue.put(evidence)

    def drain(self):
        """Every record put so far, oldest first (in the order they were put: one thread's news keeps its order)."""
        out = []
        while True:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                return out


FOR_GOOD = 2  # a node left out this many times is never taken back (recovery/book.py's; every view reads it here)


def left_out_now(book):
    """The identities a book (its JSON: ``Book.to_json``) leaves out of its generation now, sorted: ``left_out``'s
    keys (every node ever left out, each with how many times) less the generation's members and spares. Every
    view that says "left out" of the current generation reads this (walk12 B2: ``--status`` listed node 1 as left
    out while it trained, and the ``nodeweave_nodes_left_out`` gauge counted it)."""
    back = set(book.get("members") or ()) | set(book.get("spares") or ())
    return sorted(node for node in (int(key) for key in (book.get("left_out") or {})) if node not in back)


def absent(book, present, now=None):
    """The nodes a book (its JSON) leaves out now (``left_out_now``) that are not checked in (``present``: the
    identities node 0 holds a connection of): [{"node", "state", "role", "silent_s"}] by identity. Each stays in
    what the job shows, ``lost: <why>`` (``stopped: <why>`` for one sent a stop signal), silent since node 0
    judged the fault that left it out, never dropped from --status, /status.json and /metrics (walk16b B9: a node
    frozen 16 s was in no count, no row and no series; a vanished series fires no ``== 0`` alert)."""
    now = time.time() if now is None else now
    counts, why = book.get("left_out") or {}, book.get("why") or {}
    faults = {}
    for fault in book.get("history") or ():  # the newest fault of each node, oldest first in the history
        if isinstance(fault, dict) and fault.get("node") is not None:
            faults[fault["node"]] = fault
    rows = []
    for node in left_out_now(book):
        if node in present:
            continue
        fault = faults.get(node) or {}
        word = "stopped" if fault.get("cause") == Cause.STOPPED.value else "lost"
        at = fault.get("at")
        rows.append({"node": node, "state": f"{word}: {why.get(str(node)) or 'not checked in again'}",
                     "role": "out for good" if counts.get(str(node), 0) >= FOR_GOOD else "left out",
                     "silent_s": round(max(0.0, now - at), 1) if isinstance(at, (int, float)) else None})
    return rows


MISSING = "missing"  # a node the job expected that is not checked in (a spare past the deadline, a Pending pod)


def roster(own_fp, peers, book=None, known=None, expected=None, now=None):
    """Node 0's picture of the job: one entry per node, keyed by node index, node 0 first and the others in node
    order. Every view of the job's nodes reads this one list (--status and its summary, /status.json, /metrics
    ``nodeweave_node_up``, and through /status.json top and the dashboard), so none lists a node twice or drops
    one (walk17b B5, B10, B12).

    ``peers``: the hub's checked-in nodes; a node there twice (a spare restarted: its ended link and its new one)
    is its live link, else its newest. ``book``: recovery's book (JSON) or None; a node it leaves out that is not
    checked in keeps a row (``absent``), node 0 never (it answers: woken as the hub, it is not lost). ``known``:
    {node: its newest link} (its fingerprint, address, connect-back), so a node gone keeps who it was, as last seen.
    ``expected``: {node: role} of the nodes the job counted on at its start (recovery's spares too); one never
    checked in stays a row, ``missing``. Each entry: {"node", "own", "peer" (its link or None), "fp", "seen",
    "probe", "gone" (None, or {"state", "role", "silent_s"} of a node not checked in)}."""
    known, expected = known or {}, expected or {}
    own_rank = own_fp.get("rank", 0)
    links = {}
    for peer in peers:
        rank = (peer.fp or {}).get("rank")
        held = links.get(rank)
        if held is None or not (held.done is None and peer.done is not None):  # the live link, else the newest
            links[rank] = peer
    rows = {own_rank: {"node": own_rank, "own": True, "peer": None, "fp": own_fp,
                       "seen": own_fp.get("route_address"), "probe": None, "gone": None}}
    for rank, peer in links.items():
        if rank != own_rank:
            rows[rank] = {"node": rank, "own": False, "peer": peer, "fp": peer.fp, "seen": getattr(peer, "seen", None),
                          "probe": getattr(peer, "probe", None), "gone": None}
    gone = absent(book, set(rows), now) if isinstance(book, dict) else []
    listed = set(rows) | {row["node"] for row in gone}
    gone += [{"node": node, "state": f"{MISSING}: not checked in" + (" again" if node in known else ""),
              "role": role, "silent_s": None} for node, role in sorted(expected.items()) if node not in listed]
    for row in gone:
        last = known.get(row["node"])
        rows[row["node"]] = {"node": row["node"], "own": False, "peer": None, "fp": last.fp if last else
                             {"rank": row["node"]}, "seen": last.seen if last else None,
                             "probe": last.probe if last else None,
                             "gone": {key: row[key] for key in ("state", "role", "silent_s")}}
    others = sorted((rank for rank in rows if rank != own_rank),
                    key=lambda rank: (0, rank) if isinstance(rank, int) else (1, 0))
    return [rows[own_rank]] + [rows[rank] for rank in others]


def hub_roster(hub, book=None, now=None):
    """``roster`` of node 0's hub (``checkin.exchange.Hub``): what --status, /status.json and /metrics list. A node
    expected and not in is ``missing`` once the verdict is out; while node 0 gathers, its ``waiting`` names it."""
    expected = getattr(hub, "expected", None) if getattr(hub, "verdict", None) is not None else None
    return roster(hub.own_fp or {}, list(hub.peers), book, dict(getattr(hub, "known", None) or {}),
                  dict(expected or {}), now)


def spares_now(book, rows):
    """The book's spares (its JSON) that wait now, by ``roster``'s ``rows``: node 0 itself, or a node checked in
    whose link waits as a spare. A spare node 0 counted gone keeps its own row (``lost``) and is one spare fewer
    until it checks in again: --status's ``recovery.spares``, /status.json's book and the spares gauge read this
    one list (walk17b B14; note18: --status still listed the gone spare beside its ``lost`` row)."""
    here = {row["node"] for row in rows if row["own"] or (row["gone"] is None and row["peer"] is not None and
                                                          waiting(row["peer"]) == "spare (waiting)")}
    return [node for node in book.get("spares") or () if node in here]


def hub_standing(book, rank):
    """(state, role) of node 0's own row in --status, /status.json, /metrics and top: ``running`` and ``hub``, or,
    in a generation under recovery whose ``book`` leaves it out of training, the waiting state any other node
    sits a generation out in (``waiting``) and ``hub, left out`` / ``hub, spare`` (walk18b B7: `running: 3` in
    --status's summary while node 0 was left out)."""
    members = book.get("members") if isinstance(book, dict) else None
    if not isinstance(members, (list, tuple)) or rank in members:
        return "running", "hub"
    sits = "spare" if rank in (book.get("spares") or ()) else "left out"
    return f"{sits} (waiting)", f"hub, {sits}"


def by_rank(view):
    """Sort key of a rank's row by its global rank (then its node): every rank list (--status, /status.json, top, the
    dashboard) is in rank order, not the order the nodes checked in (walk18b B4: top drew ranks 0, 1, 3, 2)."""
    rank, node = view.get("rank"), view.get("node")
    return ((0, rank) if isinstance(rank, int) else (1, 0), (0, node) if isinstance(node, int) else (1, 0))


def by_node(peer):
    """Sort key of a checked-in node by its node index (one not yet fingerprinted last): every list of the job's
    nodes (--status, /status.json, top) is in node order, not the order they arrived in (walk12 B1)."""
    rank = (peer.fp or {}).get("rank")
    return (0, rank) if isinstance(rank, int) else (1, 0)


def waiting(peer):
    """"spare (waiting)" or "left out (waiting)" while recovery keeps a checked-in node out of training, else None:
    the one word for it in --status, /status.json, /metrics and top (walk12 B1: /status.json said "running")."""
    role = getattr(peer, "role", None)
    return f"{role} (waiting)" if peer.done is None and role not in (None, "member") else None
