"""The finished run's heat map: node 0's bounded summary of every rank's own work per collective (heat.json)."""

import json

from nodeweave.cluster.dashboard import RUN_HEAT_ROWS, run_heat
from nodeweave.entrypoint.metrics import heat


def views(ranks, beat, slow=(), slower=1.5, per_node=8):
    """Every rank one beat on: 10 collectives, 1 s of own work (``slow`` ranks ``slower`` times that)."""
    return [{"node": r // per_node, "rank": r, "seq": 10 * beat,
             "outside_s": beat * (slower if r in slow else 1.0)} for r in range(ranks)]


def test_a_span_closes_into_one_column_with_the_slow_rank_at_its_ratio():
    summary = heat.HeatSummary(span_s=10)
    for t in range(0, 31, 5):
        summary.feed(1000.0 + t, 0, views(4, t, slow={3}))
    assert len(summary.columns) == 3
    first = summary.columns[0]
    assert first["cells"] == {"0/3": 1.5, "0/0": 1.0, "0/1": 1.0, "0/2": 1.0} and first["floor"] is None
    assert first["median_ms"] == 100.0 and first["began"] == 1000.0 and first["ended"] == 1010.0


def test_a_new_generation_starts_a_new_span_and_its_counts_from_0_are_no_negative_work():
    summary = heat.HeatSummary(span_s=10)
    summary.feed(0.0, 0, views(2, 50))
    summary.feed(10.0, 0, views(2, 60))
    summary.feed(12.0, 1, views(2, 1))   # generation 1: counts from 0 again
    summary.feed(22.0, 1, views(2, 11, slow={1}))
    assert [c["generation"] for c in summary.columns] == [0, 1]
    assert summary.columns[1]["cells"]["0/1"] > 1.4


def test_65536_ranks_keep_a_bounded_summary_and_the_straggler_in_it():
    summary = heat.HeatSummary(span_s=10, max_columns=8)
    ranks, slow = 65536, {40000}
    for beat in range(0, 20):
        summary.feed(10.0 * beat, 0, views(ranks, beat, slow=slow, slower=1.2 if beat < 10 else 1.0))
    doc = summary.document()
    size = len(json.dumps(doc))
    assert len(doc["columns"]) <= 8 and size < 8 * (heat.MAX_CELLS * 40 + 400), size
    assert all(len(c["cells"]) <= heat.MAX_CELLS for c in doc["columns"])
    assert doc["columns"][-1]["ended"] == 190.0 and doc["columns"][0]["began"] == 0.0  # the whole run, coarser
    assert doc["columns"][0]["cells"]["5000/40000"] == 1.2
    assert all(c["floor"] is not None and c["floor"] <= 1.0 for c in doc["columns"])
    shown = run_heat(doc)
    assert len(shown["ranks"]) == RUN_HEAT_ROWS and "5000/40000" in shown["ranks"]
    row = shown["ranks"].index("5000/40000")
    assert shown["cells"][0][row]["ratio"] == 1.2 and shown["summary"]["ranks"] == ranks


def test_merging_takes_a_rank_left_out_of_one_half_at_that_halfs_floor():
    a = {"began": 0.0, "ended": 10.0, "generation": 0, "median_ms": 100.0, "ranks": 100, "ranks_seen": 100,
         "cells": {"0/1": 2.0}, "floor": 1.1}
    b = {"began": 10.0, "ended": 20.0, "generation": 0, "median_ms": 200.0, "ranks": 100, "ranks_seen": 100,
         "cells": {"0/2": 1.5}, "floor": 1.0}
    merged = heat.merge(a, b)
    assert merged["cells"] == {"0/1": 1.5, "0/2": 1.3} and merged["floor"] == 1.05
    assert merged["median_ms"] == 150.0 and (merged["began"], merged["ended"]) == (0.0, 20.0)
    every = dict(a, cells={"0/1": 2.0, "0/2": 1.0}, floor=None)  # a half that kept every rank
    only = dict(b, cells={"0/1": 1.0}, floor=None)  # rank 2 made no collective here
    assert heat.merge(every, only)["cells"] == {"0/1": 1.5, "0/2": 1.0}


def test_a_finished_runs_heat_map_marks_the_ranks_a_span_left_out_as_below_its_floor():
    doc = {"columns": [{"began": 0.0, "ended": 10.0, "generation": 0, "median_ms": 50.0, "ranks": 100,
                        "ranks_seen": 100, "cells": {"1/9": 1.4}, "floor": 1.02},
                       {"began": 10.0, "ended": 20.0, "generation": 0, "median_ms": 50.0, "ranks": 100,
                        "ranks_seen": 100, "cells": {"0/1": 1.1, "1/9": 1.0}, "floor": 1.0}]}
    shown = run_heat(doc)
    assert shown["ranks"] == ["0/1", "1/9"] and shown["times"] == [10.0, 20.0]
    assert shown["cells"][0] == [{"ms": None, "ratio": None, "below": 1.02}, {"ms": 70.0, "ratio": 1.4}]
    assert run_heat(None)["cells"] == [] and run_heat(None)["summary"] is None
