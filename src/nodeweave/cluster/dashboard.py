"""``nodeweave dashboard``: node 0's live picture over time, served to a browser on this machine.

Three parts along the usual seams:

- :class:`History` keeps the readings of node 0's ``/status.json`` (the document ``nodeweave top`` draws) as they
  come, a bounded number of them;
- :func:`state` is pure: the readings in, the document the page draws out (the newest picture, the rates over
  time, the per-rank step-time heat map, the generations on a timeline, the goodput); :func:`run_state` makes
  the same document from a finished run's folder (``runs/<id>/``: run.json, goodput.json, recovery.json,
  heat.json);
- :func:`serve` is the effect: a stdlib ``http.server`` that sends ``dashboard.html`` (one file, plain
  JavaScript and SVG, no build step) and ``/state.json``, and a thread that asks node 0 every ``interval``
  seconds through :func:`nodeweave.cluster.top.ask_live` (the exec channel on every target, or a URL).

The heat map's cell is a rank's own work per collective over one reading's span (the growth of its seconds
outside collectives over the growth of its collectives, what the stall watch's straggler check compares),
over the median rank's in the same span: a straggler does more own work per collective while the others wait
for it inside theirs, so its row is the one that turns red.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Deque, List, Optional, Tuple

from nodeweave.entrypoint.metrics.server import PlainHandler, http_server  # node 0's /metrics is served the same way


SCHEMA = "nodeweave.dashboard/1"
PAGE = Path(__file__).with_name("dashboard.html")
KEEP = 600             # readings kept: 10 minutes at the default 1 s
HEAT_COLUMNS = 60      # the heat map's newest columns
RUN_HEAT_ROWS = 64     # a finished run's heat map: at most this many ranks, the slowest (heat.json keeps 64 a column)
STRAGGLER_RATIO = 1.1  # a cell at or above this is marked (top's red: 10% slower than the median)
Reading = Tuple[float, dict]  # (time.time() it was read, node 0's /status.json)


class History:
    """Node 0's readings as they come, at most :data:`KEEP`; the same picture twice (node 0 caches 2 s) once."""

    def __init__(self, keep: int = KEEP) -> None:
        self.readings: Deque[Reading] = deque(maxlen=keep)
        self.lock = threading.Lock()
        self.answering: Optional[bool] = None
        self.why = ""
        self.asked_at: Optional[float] = None

    def add(self, live: Optional[dict], why: str = "", at: Optional[float] = None) -> None:
        at = time.time() if at is None else at
        with self.lock:
            self.asked_at, self.answering, self.why = at, live is not None, why
            if live is None:
                return
            if self.readings and self.readings[-1][1].get("now") == live.get("now"):
                return
            self.readings.append((at, live))

    def snapshot(self) -> Tuple[List[Reading], dict]:
        with self.lock:
            return list(self.readings), {"answering": self.answering, "why": self.why, "asked_at": self.asked_at}


def _key(rank: dict) -> str:
    return f"{rank.get('node')}/{rank.get('rank')}"


def _generation(live: dict) -> int:
    return int((live.get("book") or {}).get("generation") or 0)


def _lower_median(values: List[float]) -> float:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def _count(rank: dict) -> int:
    """A rank's collectives as top and the rates count them (``collectives``, node 0's ``rankcounts``: DDP's reducer's
    too), its Python calls (``seq``) from a node 0 that did not say (walk11 A4: ``seq`` alone saw none of DDP's)."""
    count = rank.get("collectives")
    return count if isinstance(count, int) else rank.get("seq") or 0


def heat_map(readings: List[Reading], columns: int = HEAT_COLUMNS) -> dict:
    """Rows: every rank seen; columns: the spans between consecutive readings of one generation; each cell the
    rank's straggler ratio in the span's reading, the Ranks table's (node 0's stall watch: its own work per
    collective over its last 20 s against the median rank's), and in ms that ratio of the span's median own work
    per collective; None where the rank made no collective in the span or the stall watch has no ratio for it yet
    (a spare that just took a place: its first seconds are no pace). One number for both: a span's own work alone
    (a second or two, a peer's counts a beat late) outlined a healthy rank 0 the Ranks table called 1.00x, and
    painted a warming spare red (walk18b B16)."""
    rows: List[str] = []
    spans = []
    for (_, before), (_, after) in zip(readings, readings[1:]):
        if _generation(before) != _generation(after):
            continue  # a new generation's ranks count from 0
        old = {_key(r): r for r in before.get("ranks") or []}
        own, ratios = {}, {}
        for rank in after.get("ranks") or []:
            key = _key(rank)
            if key not in rows:
                rows.append(key)
            was = old.get(key)
            if was is None:
                continue
            made = _count(rank) - _count(was)
            outside = (rank.get("outside_s") or 0.0) - (was.get("outside_s") or 0.0)
            if made > 0 and outside >= 0:
                own[key] = outside / made
                if isinstance(rank.get("straggler_ratio"), (int, float)):
                    ratios[key] = rank["straggler_ratio"]
        if ratios:
            spans.append((after.get("now"), _generation(after), (_lower_median(list(own.values())), ratios)))
    spans = spans[-columns:]
    cells = []
    for _, _, (median, ratios) in spans:
        cells.append([None if key not in ratios else
                      {"ms": round(1000 * median * ratios[key], 2), "ratio": round(ratios[key], 3)} for key in rows])
    return {"ranks": rows, "times": [t for t, _, _ in spans], "generations": [g for _, g, _ in spans],
            "cells": cells, "straggler_ratio": STRAGGLER_RATIO}


def rates(readings: List[Reading]) -> dict:
    """The step rate and every rank's collective rate at each reading (node 0's 30 s windows), for the chart."""
    ranks = sorted({_key(r) for _, live in readings for r in live.get("ranks") or []})
    series = {key: [] for key in ranks}
    for _, live in readings:
        by = {_key(r): r.get("collectives_per_s") for r in live.get("ranks") or []}
        for key in ranks:
            series[key].append(by.get(key))
    return {"times": [live.get("now") for _, live in readings],
            "steps_per_s": [live.get("steps_per_s") for _, live in readings], "ranks": series}


def _finite(value):
    """The document with every NaN or infinity made null (JSON has neither; the browser's parser refuses them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def checkin_line(waiting: dict) -> str:
    """Node 0's check-in while it gathers (``/status.json``'s ``waiting``) in words, as ``--status`` says it:
    ``gathering: waiting for node 2, 589 s left (2 of 3 nodes in)`` (walk12b B13)."""
    not_in = [str(node) for node in waiting.get("not_in") or []]
    expected, checked = waiting.get("expected"), waiting.get("checked_in")
    missing = expected - checked if isinstance(expected, int) and isinstance(checked, int) else len(not_in)
    shown = ", ".join(not_in[:8])
    more = max(0, missing - len(not_in[:8]))
    who = ("node " if missing == 1 and len(not_in) == 1 else "nodes ") + shown + (f" and {more} more" if more else "")
    left = waiting.get("deadline_in_s")
    left = "" if not isinstance(left, (int, float)) else f", {left:.0f} s left"
    count = f" ({checked} of {expected} nodes in)" if isinstance(expected, int) and isinstance(checked, int) else ""
    if waiting.get("regather"):
        return (f"regathering: waiting for {who} to check in again{left}{count}" if not_in else
                f"regathering: every node expected is back{count}; node 0 decides the next generation")
    return (f"gathering: waiting for {who}{left}{count}" if not_in else
            f"gathering: every node in{count}; node 0 judges the check-in")


def motion(live: Optional[dict]) -> dict:
    """The header's word for the job, ``top``'s and the page's alike: ``said`` and its ``kind`` (good, bad, wait).
    While node 0 gathers, whom it waits for and how long (walk12b B13); STALLED where the stall watch says so;
    "moving" only while a node runs and a rank has been seen (walk9 A18, replay10: "moving" was drawn above two
    nodes failed (exit 255) and no rank at all)."""
    live = live or {}
    if live.get("phase") == "gathering" and isinstance(live.get("waiting"), dict):
        return {"said": checkin_line(live["waiting"]), "kind": "wait"}
    stall = (live.get("verdicts") or {}).get("stall")
    if stall:
        return {"said": f"STALLED {stall.get('where')} for {stall.get('for_s') or 0:.0f}s", "kind": "bad"}
    nodes = live.get("nodes") or []
    if nodes and not any(n.get("state") == "running" for n in nodes):
        counts: dict = {}
        for node in nodes:
            counts[str(node.get("state") or "-")] = counts.get(str(node.get("state") or "-"), 0) + 1
        said = ", ".join(f"{count} {state}" for state, count in sorted(counts.items(), key=lambda kv: -kv[1]))
        return {"said": f"not moving: no node running ({said})", "kind": "bad"}
    if not live.get("ranks"):
        return {"said": "no rank seen yet (not moving, as far as node 0 knows)", "kind": "bad"}
    return {"said": "moving", "kind": "good"}


def state(readings: List[Reading], asked: dict, source: str) -> dict:
    """What the page draws: the newest picture and what the readings show over time."""
    live = readings[-1][1] if readings else None
    return _finite({"schema": SCHEMA, "mode": "live", "source": source, "answering": asked.get("answering"),
                    "why": asked.get("why") or "", "asked_at": asked.get("asked_at"),
                    "read_at": readings[-1][0] if readings else None, "live": live, "motion": motion(live),
                    "rates": rates(readings), "heat": heat_map(readings)})


def _rank_order(key: str):
    node, _, rank = key.partition("/")
    return tuple((0, int(part), "") if part.lstrip("-").isdigit() else (1, 0, part) for part in (node, rank))


def run_heat(summary: Optional[dict]) -> dict:
    """The heat map of a finished run from node 0's bounded summary (``heat.json``, ``entrypoint/metrics/heat.py``):
    one column per summarised span; rows the ranks any span kept, the :data:`RUN_HEAT_ROWS` slowest at their peak
    when more; a rank a span did not keep (not among its slowest) is ``{"below": floor}``: at most that ratio."""
    columns = [c for c in (summary or {}).get("columns") or [] if isinstance(c, dict) and c.get("cells")]
    peak: dict = {}
    for c in columns:
        for key, ratio in c["cells"].items():
            peak[key] = max(peak.get(key, 0.0), ratio)
    rows = sorted(peak, key=lambda k: (-peak[k], _rank_order(k)))[:RUN_HEAT_ROWS]
    rows.sort(key=_rank_order)
    cells = []
    for c in columns:
        median = c.get("median_ms") or 0.0
        column = []
        for key in rows:
            ratio = c["cells"].get(key)
            if ratio is not None:
                column.append({"ms": round(ratio * median, 2), "ratio": ratio})
            elif c.get("floor") is not None:
                column.append({"ms": None, "ratio": None, "below": c["floor"]})
            else:
                column.append(None)
        cells.append(column)
    seen = max([c.get("ranks_seen") or 0 for c in columns] or [0])
    return {"ranks": rows, "times": [c.get("ended") for c in columns],
            "generations": [c.get("generation") for c in columns], "cells": cells, "straggler_ratio": STRAGGLER_RATIO,
            "summary": {"columns": len(columns), "ranks": seen,
                        "longest_span_s": max(round(c["ended"] - c["began"], 1) for c in columns)} if columns else None}


def run_state(folder: Path, data: dict, timeline: Optional[dict], book: Optional[dict],
              heat: Optional[dict] = None, problems: Optional[list] = None, state: Optional[str] = None) -> dict:
    """The same document for a finished run's folder: its nodes' exits, generations, goodput, and the heat map of
    node 0's bounded summary (``heat.json``; the rank table and the rates were node 0's memory: a folder keeps
    neither); ``problems``: why a record of the folder is not shown (the page's banner says each); ``state``: the
    run's state as ``runs ls`` reads it (``runs.history.RunEntry.state``; the page's header shows it)."""
    from nodeweave.cluster.stop import stopped_by, stopped_nodes
    from nodeweave.entrypoint.metrics.goodput import account

    stopped = stopped_by(folder) if data.get("exit_code") not in (0, None) else None  # the user's stop: no failure
    named = stopped_nodes(stopped, data)  # `stop --node N`: the others ended because of it (walk12c C3)
    nodes = [{"node": n.get("node"), "host": None, "role": None, "heartbeat_age_s": None,
              "state": "running" if n.get("exit_code") is None else
              "finished" if n.get("exit_code") == 0 else
              f"ended because nodeweave stop stopped {', '.join(named)} (exit {n.get('exit_code')})"
              if named and str(n.get("node")) not in named else
              f"stopped by nodeweave stop (exit {n.get('exit_code')})" if stopped is not None else
              f"failed (exit {n.get('exit_code')})"}
             for n in data.get("nodes") or []]
    ended = (timeline or {}).get("ended") or (timeline or {}).get("saved")
    live = {"schema": "nodeweave.live/1", "now": ended, "job": data.get("job"), "book": book, "nodes": nodes,
            "ranks": [], "verdicts": {}, "node_gpus": [], "step": None, "steps_per_s": None,
            "goodput": account(timeline, now=ended) if timeline and timeline.get("launched") else None,
            "timeline": timeline}
    return _finite({"schema": SCHEMA, "mode": "run", "source": str(folder), "answering": None, "why": "",
                    "problems": list(problems or []),
                    "asked_at": None, "read_at": None, "live": live, "run": {
                        "id": folder.name, "command": data.get("command"), "started": data.get("started"),
                        "seconds": data.get("seconds"), "exit_code": data.get("exit_code"),
                        "state": state,  # runs ls/show's one reading of the run (fix13c: not its own "exit 1")
                        "summary": data.get("summary")},
                    "rates": {"times": [], "steps_per_s": [], "ranks": {}}, "heat": run_heat(heat)})


class _Handler(PlainHandler):  # GET and HEAD, plain-text errors: node 0's server's rules (walk10 B11)
    document: Callable[[], dict] = staticmethod(lambda: {})
    server_version = "nodeweave-dashboard"
    PATHS = ("/", "/state.json")

    def answer(self, path):
        if path in ("/", "/index.html"):
            return PAGE.read_bytes(), "text/html; charset=utf-8", (("Cache-Control", "no-store"),)
        if path == "/state.json":
            return (json.dumps(self.document(), allow_nan=False).encode(), "application/json",
                    (("Cache-Control", "no-store"),))
        return None

    def log_message(self, format, *args):  # noqa: A002 - http.server's signature
        pass  # a page polling twice a second is not news


def serve(document: Callable[[], dict], bind: str, port: int) -> ThreadingHTTPServer:
    """A server of the page and ``document()`` on ``bind:port`` (0: the kernel picks), serving from a daemon
    thread; OSError when the address cannot be bound."""
    handler = type("Handler", (_Handler,), {"document": staticmethod(document)})
    server = http_server(bind, port, handler)  # --bind ::1 too: http.server alone listens on IPv4 only
    threading.Thread(target=server.serve_forever, name="nodeweave-dashboard", daemon=True).start()
    return server


def poll(history: History, ask: Callable[[], Tuple[Optional[dict], str]], interval: float,
         stop: threading.Event) -> threading.Thread:
    """Ask node 0 every ``interval`` seconds into ``history`` until ``stop`` is set, from a daemon thread."""

    def loop():
        while not stop.is_set():
            began = time.monotonic()
            live, why = ask()
            history.add(live, why)
            stop.wait(max(0.0, interval - (time.monotonic() - began)))

    thread = threading.Thread(target=loop, name="nodeweave-dashboard-poll", daemon=True)
    thread.start()
    return thread
