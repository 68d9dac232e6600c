"""Do restarts still make checkpoint progress? Node 0's record across generations (pure, no I/O).

A job that crashes before its next save restarts from the same checkpoint
forever; NVIDIA's resiliency extension stops after K generations without a
newer checkpoint, and so does nodeweave. Node 0 records, at the start of each
generation, the step of the newest complete checkpoint it found (None: none
yet); once the last ``limit`` restarts found nothing newer than the step
before them, the job should stop with the verdict.
"""


class Progress:
    """Each generation's newest complete checkpoint step; ``stalled`` after ``limit`` restarts without a newer one."""

    def __init__(self, limit=3, steps=()):
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"Progress limit must be a whole number >= 1, got {limit!r}")
        self.limit = limit
        self.steps = list(steps)

    def record(self, step):
        """Note the newest complete checkpoint step found as a generation starts (the first is generation 0)."""
        if step is not None and (not isinstance(step, int) or isinstance(step, bool)):
            raise ValueError(f"a checkpoint step is a whole number or None, got {step!r}")
        self.steps.append(step)
        return self

    @property
    def restarts(self):
        return max(0, len(self.steps) - 1)

    def restarts_without_progress(self):
        """How many of the latest restarts found no checkpoint newer than the one before them."""
        count = 0
        best_before = None
        for index in range(len(self.steps) - 1, 0, -1):
            best_before = _best(self.steps[:index])
            if _newer(self.steps[index], best_before):
                break
            count += 1
        return count

    def since(self):
        """The step the stalled restarts keep returning to (None: no checkpoint yet)."""
        return _best(self.steps)

    @property
    def stalled(self):
        return self.restarts_without_progress() >= self.limit

    def verdict(self):
        """"3 restarts since step 4200, no newer checkpoint", or None while restarts still make progress."""
        if not self.stalled:
            return None
        count = self.restarts_without_progress()
        since = self.since()
        plural = "restart" if count == 1 else "restarts"
        if since is None:
            return f"{count} {plural} since the job started, no checkpoint yet"
        return f"{count} {plural} since step {since}, no newer checkpoint"

    def to_dict(self):
        return {"limit": self.limit, "steps": list(self.steps)}

    @classmethod
    def from_dict(cls, data):
        return cls(data.get("limit", 3), data.get("steps", ()))

    def __repr__(self):
        return f"Progress(limit={self.limit}, steps={self.steps})"


def _best(steps):
    known = [s for s in steps if s is not None]
    return max(known) if known else None


def _newer(step, than):
    return step is not None and (than is None or step > than)
