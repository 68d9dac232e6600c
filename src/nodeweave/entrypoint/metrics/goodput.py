"""Where a run's wall time went, from node 0's timeline: training, start-up, recovery, work redone, stalled, idle.

Pure arithmetic on the timeline ``live.py`` keeps (``goodput.json``, schema
:data:`SCHEMA`), shared by node 0's metrics and ``nodeweave runs show``/``compare``:

- **start-up**: the launch to generation 0's first collective (where the training logs its steps, to the
  start of its first step when that is later: setting the model up is not training);
- **recovery**: a fault (the generation's last progress: a crash takes seconds to be heard) to the next
  generation's first collective (or first step, as for start-up);
- **work redone**: the part of a generation the next one repeats, from the step
  its checkpoint holds (``resumed_step``) to the fault: timed from the training's
  own step lines when known (the first step past the checkpoint's), else the
  checkpoint's age at the generation's last progress (``work_lost_s``, its age when the fault
  was heard, less the seconds the fault took to be heard), and the whole generation when
  the next one starts over without a checkpoint;
- **stalled**: the stall watch's stalls (no rank moving while ranks wait);
- **training**: the rest of each generation from its first collective to its last
  progress (a collective entered or a step logged);
- **idle**: what is left of the wall time (the wind-down after the last
  generation's last progress, waiting after it).

The productive fraction is training over wall time. Every bucket is in seconds.
"""

SCHEMA = "nodeweave.goodput/1"
BUCKETS = ("training", "startup", "recovery", "redone", "stalled", "idle")


def _overlap(intervals, start, end):
    """Seconds of the union of ``intervals`` ([a, b], b None = open until ``end``) inside [start, end]."""
    spans = sorted((max(a, start), min(b if b is not None else end, end)) for a, b in intervals)
    total, reach = 0.0, start
    for a, b in spans:
        a = max(a, reach)
        if b > a:
            total += b - a
            reach = b
    return total


def _redone(gen, resumed_step, end):
    """Seconds of ``gen`` (ended by a fault at ``end``) that the next generation repeats."""
    fault = gen.get("fault") or {}
    steps = [(t, s) for t, s in gen.get("steps") or [] if t <= end + 1e-3]
    if resumed_step is None and fault.get("resume_from") is None and fault.get("resumed_step") is None:
        return None  # the next generation starts over: all of it (the caller knows the span)
    if steps and resumed_step is not None:
        past = [t for t, s in steps if s > resumed_step]
        if not past:
            return 0.0
        before = [t for t, s in steps if s <= resumed_step]
        start = max(before) if before else gen.get("first") or past[0]
        return max(0.0, end - start - _overlap(gen.get("stalls") or [], start, end))  # a stall is not work
    lost = fault.get("work_lost_s")  # the checkpoint's age when the fault was heard, which is after ``end``
    if not isinstance(lost, (int, float)):
        return 0.0
    heard = fault.get("at")
    late = max(0.0, heard - end) if isinstance(heard, (int, float)) else 0.0
    return max(0.0, float(lost) - late)  # from the checkpoint to the last progress: the rest is recovery


def _step_seconds(gens):
    """The run's typical step: the median gap between consecutive step lines (step N, then N + 1), or None."""
    gaps = sorted(b[0] - a[0] for gen in gens for a, b in zip(gen.get("steps") or [], (gen.get("steps") or [])[1:])
                  if b[1] == a[1] + 1 and b[0] >= a[0])
    return gaps[len(gaps) // 2] if gaps else None


def _training_began(gen, step_s, logs_steps):
    """When the generation's training began: its first collective, or, where the training logs its steps, the
    start of its first step (its line less a typical step) when that is later: the collectives before it
    (the process group's, DDP's broadcast of the model) are the start-up's, not steps. A generation of a run
    that logs its steps (lines a step apart seen, or ``metrics.step_pattern`` given) that logged none, where
    node 0's ranks print them, never began training: None."""
    first, steps = gen.get("first"), gen.get("steps") or []
    if not steps:
        return None if logs_steps and gen.get("node_0_trains", True) else first
    if step_s is None:
        return first  # no two step lines a step apart: a step's length is not known
    return max(first if first is not None else steps[0][0], steps[0][0] - step_s)


def account(timeline, now=None):
    """``{"wall_s", "buckets", "productive", "generations": [{"generation", "buckets"}]}`` of ``timeline``;
    ``now`` closes what is still open (a running job's last generation)."""
    launched = timeline.get("launched")
    gens = sorted(timeline.get("generations") or [], key=lambda g: g.get("generation", 0))
    end_of_run = timeline.get("ended") or now
    if launched is None or end_of_run is None:
        return {"wall_s": 0.0, "buckets": dict.fromkeys(BUCKETS, 0.0), "productive": None, "generations": []}
    wall = max(0.0, end_of_run - launched)
    total = dict.fromkeys(BUCKETS, 0.0)
    per_gen = []
    before = launched  # where this generation's wait for its first collective began (launch, or the last fault)
    step_s = _step_seconds(gens)
    logs_steps = step_s is not None or bool(timeline.get("step_pattern"))  # every step, or the user said how
    for index, gen in enumerate(gens):
        buckets = dict.fromkeys(BUCKETS, 0.0)
        fault = gen.get("fault") or {}
        closed = fault.get("at") or gen.get("ended")
        end = min(max(closed or end_of_run, before), end_of_run)
        first = _training_began(gen, step_s, logs_steps)
        reached = min(first, end) if first is not None else end
        buckets["startup" if index == 0 else "recovery"] = max(0.0, reached - before)
        last = gen.get("last")
        stalled_to_end = any(b is None or b > (last or 0) for _, b in gen.get("stalls") or [])
        if closed and last is not None and reached <= last < end and not stalled_to_end:
            end = last  # the last progress: a crash's news and a clean end's linger are not training
        active = max(0.0, end - reached) if first is not None else 0.0
        if active:
            buckets["stalled"] = min(active, _overlap(gen.get("stalls") or [], reached, end))
            if fault:
                following = gens[index + 1] if index + 1 < len(gens) else {}
                resumed = following.get("resumed_step", fault.get("resumed_step"))
                redone = _redone(gen, resumed, end)
                buckets["redone"] = min(active - buckets["stalled"], active if redone is None else redone)
            buckets["training"] = max(0.0, active - buckets["stalled"] - buckets["redone"])
        for name in BUCKETS:
            total[name] += buckets[name]
        per_gen.append({"generation": gen.get("generation", index), "buckets": _rounded(buckets)})
        before = end if fault else (closed or end)
    if not gens:  # no generation began yet: node 0 still at its check-in (it serves from its first gather on), which
        total["startup"] = wall  # is start-up, the launch to generation 0's first collective, not idle (walk12b B13)
    total["idle"] = max(0.0, wall - sum(total[name] for name in BUCKETS if name != "idle"))
    return {"wall_s": round(wall, 2), "buckets": _rounded(total),
            "productive": round(total["training"] / wall, 4) if wall > 0 else None, "generations": per_gen}


def _rounded(buckets):
    return {name: round(value, 2) for name, value in buckets.items()}
