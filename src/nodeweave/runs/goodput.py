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


def run_timeline(folder) -> Optional[dict]:
    """``goodput.json`` of a run folder as its readers account it (``runs show``, ``runs compare``, ``dashboard
    --run``): a run ``nodeweave stop`` ended (its ``stopped.json``) has its last generation ended at the stop, not
    faulted by it. Node 0 saw the stop as a node lost (the others' exit 143 or a peer's reset) and recorded a
    fault, so 144 s of training read as "work redone" with no generation after it (walk11 A11); a fault of an
    earlier generation, which a next one followed, stays one. None: none kept, or damaged (said elsewhere)."""
    import calendar
    import time

    from nodeweave.cluster.stop import stopped_by

    timeline, _ = load_record(folder, RECORD)  # a damaged one is said by record_problems, where it is shown
    if not isinstance(timeline, dict):
        return None
    stop = stopped_by(folder)
    if not stop:
        return timeline
    try:
        stopped_at = calendar.timegm(time.strptime(str(stop.get("at")), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return timeline
    gens = timeline.get("generations") or []
    last = max(gens, key=lambda g: g.get("generation") or 0) if gens else None
    fault = (last or {}).get("fault")
    if fault and isinstance(fault.get("at"), (int, float)):
        grace = stop.get("grace") if isinstance(stop.get("grace"), (int, float)) else 10.0
        if stopped_at - grace - STOP_SLACK_S <= fault["at"] <= stopped_at + STOP_SLACK_S:  # the stop's own echo
            last.update(fault=None, ended=fault["at"])
    # Node 0 killed by the stop (--grace 0, SIGKILL) never closed its timeline: the stop closes it, so training up
    # to the last step is training and the time after it idle (replay11 C11: "- of 0 s productive; training 0 s"
    # after 30 s of training, or the time after the stop counted as training).
    launched = timeline.get("launched")
    if timeline.get("ended") is None and isinstance(launched, (int, float)) and stopped_at > launched:
        timeline["ended"] = max(stopped_at, timeline.get("saved") or 0)
    if last is not None and last.get("ended") is None and not last.get("fault"):
        last["ended"] = min(stopped_at, timeline.get("ended") or stopped_at)
    return timeline


STOP_SLACK_S = 30.0  # seconds around a stop (its grace, ssh, the mark's write) in which a fault is the stop's echo


def run_goodput(entry: RunEntry) -> Optional[dict]:
    """The accounting of ``entry``'s timeline, or None when node 0 kept none (an older nodeweave, no heartbeat)."""
    timeline = run_timeline(entry.path)
    if not isinstance(timeline, dict) or not timeline.get("launched"):
        return None
    accounted = account(timeline, now=timeline.get("ended") or timeline.get("saved"))
    gens = timeline.get("generations") or []
    if gens and not any(g.get("steps") or g.get("first") is not None for g in gens if isinstance(g, dict)):
        # node 0 read no step line and saw no collective: training cannot be told from start-up, so no share is
        # measured (walk14 A4: a run that trained for 20 s read "goodput: 0.0% ... training 0 s")
        accounted = {**accounted, "productive": None, "unknown": _unmeasured(entry.path)}
    return accounted


# node 0's own line when lines looked like steps and no format read them (entrypoint/metrics/live.py)
UNREAD_NOTE = "metrics: no step line was read"


def _unmeasured(folder) -> str:
    """Why a run's goodput is unknown, with node 0's own note on its step lines where its log keeps it."""
    from nodeweave.entrypoint import bounded

    said = ""
    try:
        text = bounded.read_tail(folder / "node-0.log", bounded.TEXT_CAP, own=True)
    except (OSError, ValueError):
        text = ""
    for line in reversed(text.splitlines()):
        at = line.find(UNREAD_NOTE)
        if at >= 0:
            said = line[at + len("metrics: "):].strip()
            break
    return ("unknown: node 0 read no step line and saw no collective, so training cannot be told from start-up ("
            + (f"node 0 said: {said}" if said else "set metrics.step_pattern (NODEWEAVE_STEP_PATTERN) to read the "
               "script's step lines; docs/observability.md, Steps") + ")")


def percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def lines(accounted: Optional[dict]) -> List[str]:
    """'goodput: 61.2% of 812.4 s productive; training 497.1 s, ...' and one line per generation."""
    if not accounted:
        return []

    def split(buckets: dict) -> str:
        return ", ".join(f"{NAMES[name]} {buckets[name]:g} s" for name in BUCKETS if buckets[name] or name == "training")

    if accounted.get("unknown"):  # nothing of training was seen: no share, no split (walk14 A4)
        return [f"goodput: {accounted['unknown']}; {accounted['wall_s']:g} s from launch to end"]
    out = [f"goodput: {percent(accounted['productive'])} of {accounted['wall_s']:g} s productive; "
           f"{split(accounted['buckets'])}"]
    if len(accounted["generations"]) > 1:
        out += [f"  generation {g['generation']}: {split(g['buckets'])}" for g in accounted["generations"]]
    return out
