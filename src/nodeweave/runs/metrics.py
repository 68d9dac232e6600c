"""A number per run and per node, read from the nodes' logs with a regular expression (``--metric``).

Why here and not only in the sweep: comparing runs afterwards asks the same question of any
runs, with a metric chosen after the fact; the sweep's ``sweep.json`` keeps what was asked then.
"""

from __future__ import annotations

from typing import List, Optional

from nodeweave.cluster.sweep import point_metric
from nodeweave.runs.history import RunEntry


def run_metric(pattern, entry: RunEntry) -> dict:
    """``{"run", "label", "mean", "per_node"}`` of one run (a sweep point is a run)."""
    nodes = len(entry.data.get("nodes") or []) or len(list(entry.path.glob("node-*.log")))
    mean, per_node = point_metric(pattern, entry.path, nodes) if pattern is not None else (None, [])
    env = entry.data.get("env") or {}
    from nodeweave.runs.goodput import run_goodput

    return {"run": entry.run_id, "label": ",".join(f"{k}={v}" for k, v in env.items()) or entry.run_id,
            "state": entry.state, "seconds": entry.data.get("seconds"), "mean": mean, "per_node": per_node,
            "goodput": run_goodput(entry)}


def runs_of(entries: List[RunEntry]) -> List[RunEntry]:
    """Sweeps opened into their points: what a comparison lines up."""
    out = []
    for entry in entries:
        out.extend(entry.points if entry.kind == "sweep" else [entry])
    return out


def best(rows: List[dict], lower_is_better: bool) -> List[str]:
    """The runs that lead: among the runs that ended ok with a mean, every one holding the best (a tie is every
    tied run, never the last one listed); a run still running, cut off or failed is not ranked."""
    from nodeweave.cluster.sweep import leaders

    return leaders([(r["run"], r["mean"]) for r in rows if r["mean"] is not None and r["state"] == "ok"],
                   lower_is_better)


def unranked(row: dict) -> str:
    """The table's mark of a run with a mean that is not ranked, as it did not end ok (its state column says how);
    "" when it is ranked."""
    return "" if row["mean"] is None or row["state"] == "ok" else " (not ranked)"
