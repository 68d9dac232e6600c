"""The ground truth of a recovery run's goodput, from the workload's own lines, beside node 0's accounting.

benchmarks/recovery_goodput.py's workload (examples/resilient_train.py) prints every step it finishes with the
wall time it finished it (``[rank 0/4 gen 1] step 812 loss 0.0713 t=1764245501.203``), and the benchmark knows
when it injected each fault. That is enough to label every instant of the run without asking nodeweave:

- **training**: a step's execution that the final model kept (each step number's last execution; a step runs
  from the previous step line of the same run of steps to its own line, the first of a run for the median step);
  the step in flight when the run ends is training too (it will be kept);
- **work redone**: an execution that a later one of the same step replaced, and the step in flight when a
  crash threw it away (the last step line before the fault to the fault);
- **stalled**: a SIGSTOPped rank: from the last step line before the stop to the moment the job gave up on it
  (the first line that says so, as it arrived: ``the job stalled at node N ...: stopping this node's launcher``,
  else ``recovery: generation N ended``). Nothing in the workload knows when a stall is over; this is the one
  bucket whose end the truth takes from nodeweave's own output;
- **start-up**: the launch to the start of the first step (or to the first fault, when one came before it);
- **recovery**: a fault (for a stall: its end) to the start of the first run of steps begun after it (a
  resume); steps of the same run that end just after the fault are its work in flight, redone;
- **idle**: whatever is left.

``compare`` puts each bucket beside node 0's own accounting (``nodeweave.entrypoint.metrics.goodput.account``
of its ``goodput.json``) in percentage points of the same wall time. Pure: no engine, no clock.
"""

import bisect
import re
import statistics

BUCKETS = ("training", "startup", "recovery", "redone", "stalled", "idle")
STEP_LINE = re.compile(r"\[rank \d+/\d+ gen (\d+)\] step (\d+) loss \S+ t=([0-9.]+)")
GAVE_UP = re.compile(r"the job stalled at node|recovery: generation \d+ ended")  # the first of them
RESOLUTION_S = 0.01


def executions(lines):
    """[(start, end, step)] of every step the workload finished, oldest first."""
    found = sorted((float(m.group(3)), int(m.group(2)), int(m.group(1)))
                   for _, _, text in lines for m in [STEP_LINE.search(text)] if m)
    gaps = [b[0] - a[0] for a, b in zip(found, found[1:]) if b[1] == a[1] + 1 and b[2] == a[2]]
    typical = statistics.median(gaps) if gaps else 0.0
    out, previous = [], None
    for t, step, gen in found:
        follows = previous is not None and step == previous[1] + 1 and gen == previous[2]
        out.append((previous[0] if follows else t - typical, t, step))
        previous = (t, step, gen)
    return out


def truth(lines, faults, launched, ended):
    """{bucket: seconds} over [launched, ended] from the workload's step lines and the injected faults
    (``faults``: [{"kind", "node", "t"}], a fault that hit no node left out)."""
    runs = executions(lines)
    last = {}
    for k, (_, _, step) in enumerate(runs):
        last[step] = k
    spans = {name: [] for name in BUCKETS}
    for k, (start, end, step) in enumerate(runs):
        spans["training" if last[step] == k else "redone"].append((start, end))
    ends = [end for _, end, _ in runs]
    # where a run of steps (re)starts: a step that does not follow the one before (a resume, the first step); a
    # step of the same run ending just after a fault is its work in flight (the signal lands a moment later)
    starts = [start for k, (start, _, _) in enumerate(runs) if k == 0 or runs[k - 1][1] != start]
    previous = launched  # the last fault (a stall: when it was given up), or the launch
    for fault in (f for f in faults if f.get("node") is not None):
        at = fault["t"]
        before = [e for e in ends if previous <= e <= at]
        progress = max(before) if before else at  # no step since the last fault: no work in flight
        if fault["kind"] == "SIGSTOP rank":
            gave_up = min((t for t, _, text in lines if t > at and GAVE_UP.search(text)), default=ended)
            spans["stalled"].append((progress, gave_up))
            at = gave_up
        else:
            spans["redone"].append((progress, at))
        after = [s for s in starts if s > at]
        spans["recovery"].append((at, min(after[0], ended) if after else ended))
        previous = at
    hits = [f["t"] for f in faults if f.get("node") is not None]
    if ends or hits:  # start-up ends at the first step's start, or at a fault that came before it
        spans["startup"].append((launched, min([ended] + starts[:1] + hits[:1])))
    if ends and not [t for t in hits if t > runs[-1][0]]:  # no fault since the last step began
        spans["training"].append((ends[-1], ended))  # the step in flight at the end
    return _label(spans, launched, ended)


def _label(spans, launched, ended):
    """Seconds per bucket: each instant goes to the first bucket (in :data:`BUCKETS` order) that holds it."""
    merged = {name: _merge(spans[name]) for name in BUCKETS if name != "idle"}
    totals = dict.fromkeys(BUCKETS, 0.0)
    samples = int((ended - launched) / RESOLUTION_S)
    for k in range(samples):
        t = launched + (k + 0.5) * RESOLUTION_S
        for name, (lows, highs) in merged.items():
            at = bisect.bisect_right(lows, t) - 1
            if at >= 0 and t < highs[at]:
                totals[name] += RESOLUTION_S
                break
        else:
            totals["idle"] += RESOLUTION_S
    return {name: round(value, 2) for name, value in totals.items()}


def _merge(intervals):
    out = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [a for a, _ in out], [b for _, b in out]


def compare(accounted, true, wall):
    """[(bucket, accounted s, truth s, difference in percentage points of ``wall``)], then the productive
    fraction's row."""
    rows = [(name, accounted["buckets"][name], true[name], 100 * (accounted["buckets"][name] - true[name]) / wall)
            for name in BUCKETS]
    productive = accounted["buckets"]["training"] / wall
    rows.append(("productive", round(100 * productive, 1), round(100 * true["training"] / wall, 1),
                 100 * (productive - true["training"] / wall)))
    return rows
