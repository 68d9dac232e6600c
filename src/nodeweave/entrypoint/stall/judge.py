"""Pure judgements on every rank's view (all nodes'): is the job stalled, and who is behind; who is slow.

A view is one dict per rank (``ranks.RankFolder.sample``): its collective
count ``seq``, ``since_s`` since it last entered or left one, whether it is
inside one, its process state. No clocks are compared across nodes: every
time is a duration measured on the rank's own node.

- **Stall**: no live rank has moved for ``warn_s`` and the counts differ: the
  ranks at the lowest count have not entered the collective the others wait
  in (or left it last: they are where the others cannot follow). A long step
  every rank is in keeps the counts equal and is not a stall. A rank that
  exited (or is exiting) with every Python collective done is behind only in
  its flight recorder's count, which a thread reads each second: the last
  read before the exit, not the collectives it issued (a job's end under
  load: not a stall). A live rank's thread keeps reading, so a C++-issued
  collective it never entered is still a stall.
- **Straggler**: over :data:`WINDOW_S`, a rank's own work per collective is
  :data:`SLOWER` or more above the lower median, :data:`CONFIRM` checks in a
  row. Own work is the time between collectives less the time spent waiting
  in them: under gloo (collectives block) the host time outside collectives;
  under NCCL/RCCL (collectives return at once, the wait happens on the
  device) the host time less the device time the rank's timed collectives
  took (``rankhook/nodeweave_device.py``): the last rank to arrive waits
  least, so its own work is the largest, whether it was late on the CPU or
  on the GPU. Where NCCL's flight recorder gives each collective's device
  duration (``TORCH_NCCL_ENABLE_TIMING``), that is used instead, for every
  NCCL collective (DDP's reducer's, ``async_op=True`` ones): the host time
  the recorder reads span less the durations they read, per collective;
  a Python call both ways timed counts once. All are durations on the rank's
  own node.
"""

from collections import deque

GONE = ("gone", "Z", "X")
STOPPED = ("T", "t")  # stopped (SIGSTOP, a debugger): it cannot move, nor can its flight thread read
WINDOW_S = 20.0
MIN_COLLECTIVES = 4
MIN_INTERVALS = 5
SLOWER = 0.10
CONFIRM = 3  # consecutive evaluations that must agree before a straggler is named
FROM_CPP = "a collective issued from C++"  # a stall only the flight recorders' counts saw begins so


def progress(views):
    """A rank's count of collectives: its Python calls (``seq``) plus, when every rank's flight recorder is
    read, the default group's collectives it enqueued (C++-issued ones too: DDP's reducer)."""
    recorded = bool(views) and all(v.get("fr_enqueued", -1) >= 0 for v in views)
    return lambda v: v["seq"] + (v["fr_enqueued"] if recorded else 0)


def find_stall(views):
    """{culprits, waiting, collective, seq, for_s} when the counts differ and nobody moves; else None."""
    alive = [v for v in views if v["state"] not in GONE]
    if len(views) < 2 or not alive:
        return None
    count = progress(views)
    top, low = max(count(v) for v in views), min(count(v) for v in views)
    if top == low:
        return None
    waiting = [v for v in views if count(v) == top]
    seq = max(v["seq"] for v in views)
    if seq == min(v["seq"] for v in views) and all(stale_record(v) for v in views if count(v) < top):
        return None  # behind only in recorder counts read before its last move: the count, not the rank, is behind
    collective = most(v["name"] for v in waiting)
    where = f"{collective} #{seq}"
    if seq == min(v["seq"] for v in views):  # only the recorder's counts differ: a collective C++ issued
        where = (f"{FROM_CPP} (flight recorder seq {max(v['fr_enqueued'] for v in views)}; "
                 f"last Python one: {where})")
    return {"where": where, "culprits": sorted((v for v in views if count(v) == low), key=_key),
            "waiting": sorted(waiting, key=_key), "behind": sorted((v for v in views if count(v) < top), key=_key),
            "collective": collective, "seq": seq, "for_s": min(v["since_s"] for v in alive)}


def stale_record(view):
    """True when a rank's flight-recorder count may be below what it did: the rank exited, or its flight thread
    has not read the recorder since the rank last moved (the thread stops when the rank starts to exit; alive,
    it reads every second, well inside any stall_warn). Never for a stopped rank: it has not moved since."""
    if view["state"] in GONE:
        return True
    if view["state"] in STOPPED:  # frozen: the count its thread read last is where it stands (walk15b: a
        return False              # SIGSTOPped rank a moment after its last read was never named)
    polled = view.get("polled_s")  # None: never read (its count is -1, and not used) or a view without the field
    return polled is not None and polled > view["since_s"]


def find_wait(views):
    """For a node that sees only its own ranks (no heartbeat): every live rank inside the same collective,
    none behind, nobody moving; whoever has not entered it is on another node. Else None."""
    alive = [v for v in views if v["state"] not in GONE]
    if not alive or len(alive) < len(views) or not all(v["inside"] for v in alive):
        return None
    count = progress(views)
    if len({count(v) for v in views}) != 1:
        return None
    seq = views[0]["seq"]
    return {"where": f"{views[0]['name']} #{seq}", "culprits": [], "waiting": sorted(views, key=_key),
            "behind": [], "collective": views[0]["name"], "seq": seq, "for_s": min(v["since_s"] for v in alive)}


def _key(view):
    return (view.get("node", 0), view["rank"])


def most(names):
    """The name most of ``names`` are (on a tie the first in sorted order), or None."""
    counts = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return max(sorted(counts), key=lambda n: counts[n]) if counts else None


def own_work(a, b):
    """Seconds of own work per collective between two samples of one rank, or None when it entered none.

    ``(time, seq, inside_s, outside_s, device_wait_s, device_timed, fr_wait_s, fr_timed, fr_span_s)``: with
    collectives whose duration the flight recorder gave in between, the host time its reads span less
    those durations (every NCCL collective, the Python ones among them: counted once); else with
    collectives timed by the probe's events, the host time across them less the device wait; else the
    host time outside collectives."""
    if b[7] > a[7]:
        return max(0.0, (b[8] - a[8]) - (b[6] - a[6])) / (b[7] - a[7])
    entered = b[1] - a[1]
    if entered <= 0:
        return None
    if b[5] > a[5]:
        host = (b[2] + b[3]) - (a[2] + a[3])
        return max(0.0, host - (b[4] - a[4])) / entered
    return (b[3] - a[3]) / entered


def sample(now, view):
    """The tuple :func:`own_work` compares, from one rank's view."""
    return (now, view["seq"], view.get("inside_s", 0.0), view["outside_s"], view.get("device_wait_s", 0.0),
            view.get("device_timed", 0), view.get("fr_wait_s", 0.0), view.get("fr_timed", 0),
            view.get("fr_span_s", 0.0))


def collectives(a, b):
    """Collectives between two samples: Python calls, or those whose durations the recorder gave."""
    return max(b[1] - a[1], b[7] - a[7])


class Stragglers:
    """Per-rank history of :func:`sample` tuples; names ranks consistently slower."""

    def __init__(self, window_s=WINDOW_S, slower=SLOWER, confirm=CONFIRM):
        self.window_s, self.slower, self.confirm = window_s, slower, confirm
        self.history = {}   # (node, rank) -> deque of own_work samples
        self.streak = {}    # (node, rank) -> consecutive evaluations found slower
        self.labels = {}
        self.ratios = {}    # (node, rank) -> own work per collective over the median, as the last evaluation found

    def feed(self, now, views):
        for v in views:
            if v["seq"] < 2 and not v.get("fr_timed"):  # before the rendezvous ended: start-up is not a pace
                continue
            key = (v.get("node", 0), v["rank"])
            self.labels[key] = v
            past = self.history.setdefault(key, deque())
            past.append(sample(now, v))
            while len(past) > 2 and now - past[1][0] >= self.window_s:
                past.popleft()

    def reset(self):
        self.history.clear()
        self.streak.clear()
        self.ratios = {}

    def per_collective(self, now):
        """{key: seconds of own work per collective}: the median over the window's beat-to-beat intervals
        (one long save or a hiccup moves one interval, not the median), for ranks with a full window; from
        the flight recorder's durations (read every ``DURATIONS_S``, fewer than a beat's), the window whole."""
        out = {}
        for key, past in self.history.items():
            first, last = past[0], past[-1]
            full = now - first[0] >= self.window_s * 0.9 and now - last[0] <= 5
            if not full or collectives(first, last) < MIN_COLLECTIVES:
                continue
            if last[7] > first[7]:  # the recorder's durations, read every few seconds: the window as a whole
                out[key] = own_work(first, last)
                continue
            rates = sorted(r for r in (own_work(a, b) for a, b in zip(past, list(past)[1:])) if r is not None)
            if len(rates) >= MIN_INTERVALS:
                out[key] = rates[len(rates) // 2]
        return out

    def timed_on_device(self, key):
        """Whether the rank's window held collectives timed on the device (NCCL/RCCL)."""
        past = self.history.get(key)
        return bool(past) and (past[-1][5] > past[0][5] or past[-1][7] > past[0][7])

    def evaluate(self, now):
        """[{rank, node, host, pod, gap, per_s, ref_s}] of ranks slower for ``confirm`` evaluations in a row."""
        per = self.per_collective(now)
        if len(per) < 2:
            self.ratios = {}
            return []
        ordered = sorted(per.values())
        ref = ordered[(len(ordered) - 1) // 2]
        self.ratios = {key: value / ref for key, value in per.items()} if ref > 0 else {}
        named = []
        for key, value in sorted(per.items()):
            slow = ref > 0 and value >= ref * (1 + self.slower)
            self.streak[key] = self.streak.get(key, 0) + 1 if slow else 0
            if self.streak[key] >= self.confirm:
                v = self.labels[key]
                named.append({"rank": v["rank"], "node": v.get("node"), "host": v.get("host"), "pod": v.get("pod"),
                              "gap": value / ref - 1, "per_s": value, "ref_s": ref,
                              "device": self.timed_on_device(key)})
        return named


def slow_nodes(named, views):
    """Nodes all of whose ranks are named: {node: smallest gap among them}."""
    by_node = {}
    for v in views:
        by_node.setdefault(v.get("node"), set()).add(v["rank"])
    slow = {}
    for node, ranks in by_node.items():
        gaps = [n["gap"] for n in named if n["node"] == node]
        if ranks and len(gaps) == len(ranks) and len(by_node) > 1:
            slow[node] = min(gaps)
    return slow
