"""A run's goodput from the timeline node 0 kept (``goodput.json`` in its folder; docs/observability.md).

The arithmetic is the entrypoint's own (``nodeweave.entrypoint.metrics.goodput``), so ``runs show`` and node
0's ``nodeweave_time_seconds`` can never disagree about where a run's time went.
"""

from __future__ import annotations

from typing import List, Optional

from nodeweave.entrypoint.metrics.goodput import BUCKETS, account
from nodeweave.runs.history import RunEntry, load_record

RECORD = "goodput.json"
NAMES = {"training": "training", "startup": "start-up", "recovery": "recovery", "redone": "work redone",
         "stalled": "stalled", "idle": "idle"}


def run_goodput(entry: RunEntry) -> Optional[dict]:
    """The accounting of ``entry``'s timeline, or None when node 0 kept none (an older nodeweave, no heartbeat)."""
    timeline, _ = load_record(entry.path, RECORD)  # a damaged one is said by record_problems, where it is shown
    if not isinstance(timeline, dict) or not timeline.get("launched"):
        return None
    return account(timeline, now=timeline.get("ended") or timeline.get("saved"))


def percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def lines(accounted: Optional[dict]) -> List[str]:
    """'goodput: 61.2% of 812.4 s productive; training 497.1 s, ...' and one line per generation."""
    if not accounted:
        return []

    def split(buckets: dict) -> str:
        return ", ".join(f"{NAMES[name]} {buckets[name]:g} s" for name in BUCKETS if buckets[name] or name == "training")

    out = [f"goodput: {percent(accounted['productive'])} of {accounted['wall_s']:g} s productive; "
           f"{split(accounted['buckets'])}"]
    if len(accounted["generations"]) > 1:
        out += [f"  generation {g['generation']}: {split(g['buckets'])}" for g in accounted["generations"]]
    return out
