"""The stall watch riding on the heartbeat: every node samples its ranks, node 0 judges them all.

Each beat a node sends carries its ranks' view (``ranks.py``). Node 0 adds
its own, judges (``judge.py``) and, when the job stalls for ``stall_warn``,
asks every node for its ranks' stacks, groups them, and sends the one report
every node prints; after ``stall_timeout`` it stops every node with
:data:`EXIT_STALLED`. The report's gathering runs on a thread of its own
(``nodeweave-stall-report``): this node's ranks can take seconds to dump their
stacks and the others up to :data:`GATHER_S` to answer, and ``hub_tick`` runs
on node 0's heartbeat thread, which must go on beating (a node hearing
nothing from node 0 for ``LOST_S``, 10 s, counts it lost). The stop at
``stall_timeout`` waits for a report in flight, so the report is still what
every node prints first. A straggler is named once (again when the set changes).

A straggler that lasts (named in ``fault_checks`` consecutive checks; 0, the
default, never) is a fault: node 0 says so and hands it, with the culprit
node, to ``hub_watch.straggler_fault`` (``fault.FaultSeam``), whose
``on_straggler_fault`` callback is the recovery engine's seam.
"""

import os
import threading
import time

from ..errors import EXIT_STALLED
from ..news import by_rank
from ..running.runstate import AFTER_STOP  # noqa: F401 - the launcher's output once stopped, per node
from . import flight, judge, report
from .stacks import describe_rank, group

GATHER_S = 6.0


class StallWatch:
    """This node's part; ``hub_tick`` runs on node 0 only."""

    def __init__(self, folder, warn_s, timeout_s, log, run_dir=None, clock=time.monotonic, fault_checks=0,
                 alone=None):
        self.folder, self.warn_s, self.timeout_s = folder, warn_s, timeout_s
        self.log, self.run_dir, self.clock = log, run_dir, clock
        self.stragglers = judge.Stragglers()
        self.reported = None      # (seq, culprit ranks) of the stall already reported
        self.named = frozenset()  # stragglers already named
        self.fault_checks = fault_checks
        self.lasting = {}         # (node, rank) -> consecutive checks it was named in
        self.faulted = set()      # nodes already reported as a straggler fault (until they are no longer named)
        self.verdicts = {"stall": None, "stragglers": []}
        self.last_views = []
        self.alone = alone  # why this node sees only its own ranks in a job of several nodes (local.py)
        self.reporting = None  # the thread gathering and sending a stall report, off the heartbeat's thread
        self.began = None  # (stall key, time.time() it began) of the current stall: one start for every view of it
        self.waits_in = None  # (stall key, collective) the ranks wait in, as their flight recorders' dumps say

    # --- every node ---------------------------------------------------------------------------------
    def view(self):
        return self.folder.sample(self.clock())

    def stacks(self, view=None):
        """Every rank's described stack, with its flight recorder's last collectives (the dumps kept too)."""
        view = self.view() if view is None else view
        asked = self.folder.ask(view)
        dumps, wheres = self.folder.collect(asked)  # first: faulthandler's signal must not meet the thread busy
        texts = self.folder.stacks(view)
        flight.keep(self.run_dir, dumps)
        described = [describe_rank(v, texts.get(v["rank"]), wheres.get(v["rank"])) for v in view]
        for item in described:
            if item["rank"] in dumps:
                item["flight"] = flight.summary(dumps[item["rank"]])
                item["waits_in"] = flight.waits_in(dumps[item["rank"]])
        return described

    def aside_path(self):
        """Where the launcher's output goes once a stall stops it: the run folder, else the ranks' folder."""
        return os.path.join(self.run_dir or self.folder.path, AFTER_STOP.format(node=self.folder.owner))

    def publish(self, lines):
        for line in lines:
            self.log(line)
        report.keep(self.run_dir, lines)

    # --- node 0 --------------------------------------------------------------------------------------
    def hub_tick(self, hub_watch):
        """Judge every rank's latest view; report, stop or name as needed."""
        now = self.clock()
        own = self.view()
        views = hub_watch.views(own)
        self.last_views = views
        finding = judge.find_stall(views)
        if finding is None and self.alone:
            finding = judge.find_wait(views)
        if finding is None or finding["for_s"] < judge.WINDOW_S / 4:
            self.stragglers.feed(now, views)
            self._stragglers(hub_watch, views, now)
        else:
            self.stragglers.reset()  # a stalled job has no pace to compare, and its wait is no rank's pace
            self.lasting = {}
        if finding is None or finding["for_s"] < self.warn_s:
            if self.reported is not None:  # the ranks moved (counts a beat apart are no stall)
                self._say_all(hub_watch, [f"the stall is over: every rank moved on (after {self.reported[2]})"])
                self.reported = None
            self.verdicts["stall"] = None
            self.began = None
            return
        key = _stall_key(finding)
        began = time.time() - finding["for_s"]  # every view's durations are as of now (``HubStall.views``)
        if self.began is None or self.began[0] != key:
            self.began = (key, began)
        else:  # the same stall: its start stays (a view a beat old can only make it later)
            self.began = (key, min(self.began[1], began))
        self.verdicts["stall"] = _summary(finding, self.began[1],
                                          self.waits_in[1] if self.waits_in and self.waits_in[0] == key else None)
        if (self.reported is None or self.reported[:2] != key) and not self.report_in_flight():
            self.reported = key + (", ".join(f"rank {v['rank']}" for v in finding["culprits"]),)
            self.reporting = threading.Thread(target=self._report, args=(hub_watch, own, finding), daemon=True,
                                              name="nodeweave-stall-report")
            self.reporting.start()
        if self.timeout_s and finding["for_s"] >= self.timeout_s and not self.report_in_flight():
            culprit = (finding["culprits"] or finding["waiting"])[0]
            who = f"rank {culprit['rank']} never entered" if finding["culprits"] else "this node's ranks waited in"
            how = f"stalled for {finding['for_s']:.0f}s (stall_timeout {self.timeout_s}s): {who} {finding['where']}"
            hub_watch.stop_all(f"node {culprit.get('node')} ({culprit.get('host')})", how, EXIT_STALLED,
                               node=culprit.get("node") if finding["culprits"] else None)

    def report_in_flight(self):
        return self.reporting is not None and self.reporting.is_alive()

    def _report(self, hub_watch, own, finding):
        """The stall report, gathered and sent on its own thread (the heartbeat's goes on meanwhile). Where only the
        flight recorders' counts differ (a collective C++ issued: DDP's reducer), the one the waiting ranks'
        recorders say they are in names the stall in the verdicts from here on, as the report's lines do (walk18b
        B2: /status.json said `broadcast`, the last Python call, while the ranks waited in all_reduce)."""
        try:
            described = self._gather(hub_watch, own)
            waiting = {v["rank"] for v in finding.get("waiting") or []}
            named = [d["waits_in"] for d in described if d.get("waits_in") and d.get("rank") in waiting]
            if named and finding["where"].startswith(judge.FROM_CPP):
                self.waits_in = (_stall_key(finding), judge.most(named))
            kept = flight.kept_at(self.run_dir, getattr(self.folder, "path", None))
            lines = report.stall_lines(finding, group(described), self.warn_s, self.timeout_s, EXIT_STALLED,
                                       flight.lines(described, kept=kept), self.alone,
                                       recovery=bool(getattr(hub_watch, "recovery", False)), kept=kept)
            self._say_all(hub_watch, lines)
        except Exception as err:  # noqa: BLE001 - the job goes on whatever the report hits; the stop still comes
            self.log(f"warning: the stall report failed: {err!r}")

    def _stragglers(self, hub_watch, views, now):
        named = self.stragglers.evaluate(now)
        self.verdicts["stragglers"] = [{k: n[k] for k in ("rank", "node", "host", "gap")} for n in named]
        keys = frozenset((n["node"], n["rank"]) for n in named)
        if named and keys != self.named:
            self._say_all(hub_watch, report.straggler_lines(named, judge.slow_nodes(named, views),
                                                           self.stragglers.window_s))
        self.named = keys
        self.lasting = {key: self.lasting.get(key, 0) + 1 for key in keys}
        if self.fault_checks:
            self._faults(hub_watch, named)

    def _faults(self, hub_watch, named):
        """Report each node with a straggler named ``fault_checks`` checks in a row as a fault, once."""
        self.faulted &= {n["node"] for n in named}
        lasting = [n for n in named if self.lasting[(n["node"], n["rank"])] >= self.fault_checks]
        for node in sorted({n["node"] for n in lasting} - self.faulted, key=str):
            ranks = [n for n in lasting if n["node"] == node]
            fault = {"node": node, "host": ranks[0]["host"], "ranks": [n["rank"] for n in ranks],
                     "gap": max(n["gap"] for n in ranks), "checks": self.fault_checks}
            self.faulted.add(node)
            taken = hub_watch.straggler_fault(fault)  # fault.FaultSeam: every node-0 watch has the seam
            self._say_all(hub_watch, [report.fault_line(fault, taken, bool(getattr(hub_watch, "recovery", False)))])

    def _gather(self, hub_watch, own):
        """Every rank's described stack: this node's now, the others' as they answer (bounded). Never on the
        heartbeat's thread (a stall report's thread, a `--status` answer's): that thread reads the answers
        meanwhile (``answered_stacks``) and goes on beating."""
        request = hub_watch.ask_stacks()
        described = self.stacks(own)
        answers = hub_watch.answered_stacks(request, self.clock() + GATHER_S)
        for ranks in answers.values():
            described += ranks
        known = {d["rank"] for d in described}
        for v in self.last_views:
            if v["rank"] not in known:
                described.append({"rank": v["rank"], "label": "exited" if v["state"] in judge.GONE else
                                  f"no answer from node {v.get('node')} within {GATHER_S:g}s", "frames": []})
        return described

    def _say_all(self, hub_watch, lines):
        self.publish(lines)
        hub_watch.broadcast_report(lines)

    def status(self, hub_watch, stacks=False):
        """For `--status` (answered on a thread of its own, ``exchange.Hub._send_status``): where each rank is and
        for how long (as of now: the others' last beat aged by node 0's clock), the verdicts; with ``stacks`` every
        rank's stack grouped, gathered now, stopping nothing."""
        own = self.view()
        self.last_views = hub_watch.views(own)
        ranks = [{k: v.get(k) for k in ("node", "rank", "host", "pod", "seq", "name", "inside", "since_s", "state",
                                        "cpu_rate", "fr_enqueued", "fr_completed", "device_wait_s", "device_timed",
                                        "fr_wait_s", "fr_timed", "fr_span_s", "polled_s")}
                 for v in sorted(self.last_views, key=by_rank)]
        answer = {"ranks": ranks, **self.verdicts, "stall": stall_as_of(self.verdicts.get("stall"))}
        if stacks:
            described = self._gather(hub_watch, own)
            answer["stacks"], answer["flight"] = group(described), flight.lines(
                described, indent="  ", kept=flight.kept_at(self.run_dir, getattr(self.folder, "path", None)))
        return answer


def _stall_key(finding):
    """One stall, as long as it waits where it did on the same culprits (reported once, one start)."""
    return finding["where"], tuple((v.get("node"), v["rank"]) for v in finding["culprits"])


def stall_as_of(stall, now=None):
    """A stall verdict with its ``for_s`` as of ``now`` (time.time()) from its one start, ``began``: what --status,
    /metrics and /status.json say between two evaluations (a beat apart), so they agree with goodput's stalled
    time (walk18b B2); None and a verdict without a start as they are."""
    began = (stall or {}).get("began")
    if not isinstance(began, (int, float)):
        return stall
    return dict(stall, for_s=round(max(0.0, (time.time() if now is None else now) - began), 2))


def _summary(finding, began, waits_in=None):
    """The stall as the verdicts carry it: ``began`` (time.time()) the one start /metrics' stall seconds, goodput's
    stalled time and ``for_s`` are read from; ``waits_in`` the collective the flight recorders name, where only
    they saw it (C++-issued), else the collective the waiting ranks called."""
    where = finding["where"]
    if waits_in and where.startswith(judge.FROM_CPP):
        where = waits_in + where[len("a collective"):]
    return {"collective": waits_in or finding["collective"], "seq": finding["seq"], "where": where,
            "for_s": finding["for_s"], "began": round(began, 3),
            "culprits": [{"rank": v["rank"], "node": v.get("node"), "host": v.get("host")}
                         for v in finding["culprits"]]}
