"""A finished run's per-rank heat map: a bounded summary of every rank's own work per collective, kept by node 0.

The live dashboard draws its heat map from node 0's readings in the CLI's memory; a run's folder had none, so
``nodeweave dashboard --run`` could not show which rank was slow. :class:`HeatSummary` reads the rank views the
recorder already holds (``live.Live.tick``), every :data:`SPAN_S`, and closes one column per span: each rank's
own work per collective over the span (the straggler check's ``judge.own_work``: the recorder's durations where it
timed some, else the growth of its seconds outside collectives over the growth of its collectives, counted as top
and the rates count them, ``rankcounts.collectives``: DDP's reducer's too) over the span's lower-median rank's.
(walk11 A4: counted by the Python calls alone, a DDP job's spans held none but the first and the last: 2 columns
for 150 s, each at 51 s of own work per collective.)

Bounded whatever the job's size (``heat.json``: a few hundred KB at 65,536 ranks, as at 8):

- at most :data:`MAX_COLUMNS` columns: when full, neighbours of one generation merge pairwise (a rank's ratio the
  mean of its two, the span doubles), so a long run keeps its whole length at a coarser grain;
- per column the :data:`MAX_CELLS` slowest ranks' ratios (every rank's, up to that many ranks) and ``floor``, the
  largest ratio left out when some were (a rank not kept did at most that). A merge takes a rank missing
  from one half at that half's floor (an upper bound), or, where the half kept every rank, its other half alone.

Pure: no clock, no I/O (``live.py`` feeds it and writes :meth:`document`). Stdlib only.
"""

import heapq

from ..stall.judge import own_work, sample
from .rankcounts import collectives, recorded

SCHEMA = "nodeweave.heat/1"
RECORD = "heat.json"
SPAN_S = 10.0
MAX_COLUMNS = 120
MAX_CELLS = 64


def _key(node_rank):
    return f"{node_rank[0]}/{node_rank[1]}"


def _lower_median(values):
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def reading(now, views):
    """{(node, rank): the straggler check's sample of it (``judge.sample``)}, its count of collectives the one top,
    the rates and /status.json show (``rankcounts.collectives``: the recorder's where it counts more)."""
    read = recorded(views)
    out = {}
    for view in views:
        counted = dict(view, seq=collectives(view, read) or 0, outside_s=view.get("outside_s") or 0.0)
        out[(view.get("node"), view.get("rank"))] = sample(now, counted)
    return out


def column(began, ended, generation, before, after, ranks_seen):
    """One span's column from two :func:`reading` s; None when no rank made a collective. Only the slowest
    :data:`MAX_CELLS` are named (``heapq``: no sort of every rank's ratio)."""
    own = {}
    for key, now in after.items():
        was = before.get(key)
        if was is None or now[1] < was[1]:
            continue
        work = own_work(was, now)
        if work is not None and work >= 0:
            own[key] = work
    if not own:
        return None
    median = _lower_median(list(own.values()))
    if median <= 0:
        return None
    slowest = heapq.nlargest(MAX_CELLS + 1, own.items(), key=lambda item: item[1])
    kept = slowest[:MAX_CELLS]
    return {"began": round(began, 3), "ended": round(ended, 3), "generation": generation,
            "median_ms": round(1000 * median, 3), "ranks": len(own), "ranks_seen": ranks_seen,
            "cells": {_key(key): round(value / median, 3) for key, value in kept},
            "floor": round(slowest[MAX_CELLS][1] / median, 3) if len(slowest) > MAX_CELLS else None}


def merge(a, b):
    """Two neighbouring columns of one generation as one: each rank's ratio the mean of its two."""
    keys = set(a["cells"]) | set(b["cells"])
    cells = {}
    for key in keys:
        pair = [c["cells"].get(key, c["floor"]) for c in (a, b)]
        known = [v for v in pair if v is not None]
        cells[key] = round(sum(known) / len(known), 3)
    ranked = sorted(cells.items(), key=lambda item: (-item[1], item[0]))
    kept = dict(ranked[:MAX_CELLS])
    bounds = [ranked[MAX_CELLS][1]] if len(ranked) > MAX_CELLS else []  # the largest merged ratio left out
    floors = [f for f in (a["floor"], b["floor"]) if f is not None]
    if floors:  # a rank kept in neither half: at most its halves' floors
        bounds.append(sum(floors) / len(floors))
    floor = round(max(bounds), 3) if bounds else None
    spans = a["ended"] - a["began"], b["ended"] - b["began"]
    weight = sum(spans) or 1.0
    return {"began": a["began"], "ended": b["ended"], "generation": a["generation"],
            "median_ms": round((a["median_ms"] * spans[0] + b["median_ms"] * spans[1]) / weight, 3),
            "ranks": max(a["ranks"], b["ranks"]), "ranks_seen": max(a["ranks_seen"], b["ranks_seen"]),
            "cells": kept, "floor": floor}


class HeatSummary:
    """Columns of one run, fed the recorder's rank views; :meth:`document` is what ``heat.json`` holds."""

    def __init__(self, span_s=SPAN_S, max_columns=MAX_COLUMNS):
        self.span_s, self.max_columns = span_s, max_columns
        self.columns = []
        self.mark = None  # (time, generation, reading(...)) where the open span began

    def feed(self, now, generation, views):
        """A reading of every rank (``now``: time.time()); closes a column once :attr:`span_s` has passed."""
        if self.mark is not None and self.mark[1] == generation and now - self.mark[0] < self.span_s:
            return
        read = reading(now, views)
        if self.mark is not None and self.mark[1] == generation:  # a new generation's ranks count from 0
            closed = column(self.mark[0], now, generation, self.mark[2], read, len(read))
            if closed is not None:
                self.columns.append(closed)
                if len(self.columns) > self.max_columns:
                    self._coarsen()
        self.mark = (now, generation, read)

    def _coarsen(self):
        """Merge neighbours pairwise (never across generations) until the columns fit again."""
        merged, i = [], 0
        while i < len(self.columns):
            a = self.columns[i]
            b = self.columns[i + 1] if i + 1 < len(self.columns) else None
            if b is not None and b["generation"] == a["generation"]:
                merged.append(merge(a, b))
                i += 2
            else:
                merged.append(a)
                i += 1
        if len(merged) == len(self.columns):  # every column its own generation: drop the oldest
            merged = merged[len(merged) - self.max_columns:]
        self.columns = merged

    def document(self):
        return {"schema": SCHEMA, "span_s": self.span_s, "max_cells": MAX_CELLS, "columns": list(self.columns)}
