"""Node 0's decision for the next generation: pure, so every rule is a unit test.

A *book* (a JSON-able dict node 0 keeps, and writes to its run record) holds
what the job has seen: the generation, the restarts spent, who trained, who
waited as a spare, how often each node was left out, and the newest
checkpoint step. :func:`first` opens it from the nodes that checked in;
:func:`after_fault` takes a fault (the culprit node and why), the nodes that
checked in again and the newest complete checkpoint's step, and returns the
next generation or the reason the job stops, with its exit code. A fault is a
node's or the job's own: :func:`shared_error` finds the same exception raised
by the script on every node that reported one, and :func:`job_error` stops the
job with it, leaving no node out and spending no restart.

Nodes are named by their *identity*: the node rank their container was given
(0..nodes+spares-1). A generation's training ranks are positions in
``members``: a spare takes the left-out node's position, so the others keep
their ranks.
"""

from ..errors import EXIT_GAVE_UP, EXIT_JOB_ERROR, EXIT_NO_PROGRESS
from .progress import Progress

FOR_GOOD = 2  # a node left out this many times is never taken back


class Limits:
    """The spec's ``recovery`` fields that decide, and the job's size."""

    __slots__ = ("slots", "minimum", "max_restarts", "no_progress")

    def __init__(self, slots, minimum, max_restarts, no_progress):
        self.slots, self.minimum = slots, minimum            # training nodes wanted; fewest an elastic job takes
        self.max_restarts, self.no_progress = max_restarts, no_progress  # 0 = no such brake


def first(present, limits, step=None):
    """Generation 0: the lowest identities train, the rest wait as spares. ``step``: the newest complete
    checkpoint's step as the job starts (a job started again over its own folder), or None."""
    ids = sorted(present)
    book = {"generation": 0, "restarts": 0, "members": ids[:limits.slots], "spares": ids[limits.slots:],
            "left_out": {}, "why": {}, "steps": [step], "best_step": step, "stale": 0, "history": []}
    return dict(book, decision="start")


def _stop(book, code, ended):
    """The book ending the job: ``ended`` says why in words (``why`` stays the nodes' reasons, one type)."""
    return dict(book, decision="stop", code=code, ended=ended)


def finished(book):
    """The book telling nodes still on their way back that the job finished (every node exits 0)."""
    return _stop(book, 0, "the job finished")


def closed(book, code, at):
    """The book as node 0 keeps it when its launcher ended the job: ``done`` (exit 0, ``finished`` at ``at``)
    or ``stopped`` (a stop signal)."""
    return dict(book, decision="done" if code == 0 else "stopped", finished=at if code == 0 else None)


def _progress(book, step, limit):
    """The checkpoint progress tracker (``progress.py``) with the next generation's newest step."""
    return Progress(max(1, limit), book["steps"]).record(step)


def _fill(old, available, slots):
    """The next members: the old ones still available keep their positions, spares take the vacant ones
    (lowest identity first); an elastic job short of spares closes the gaps."""
    pool = sorted(n for n in available if n not in old)
    members = []
    for node in old:
        if node in available:
            members.append(node)
        elif pool:
            members.append(pool.pop(0))
    while len(members) < slots and pool:
        members.append(pool.pop(0))
    return members, pool


def after_fault(book, culprit, why, present, step, limits):
    """The next generation's book (``decision`` start), or the book with ``decision`` stop, ``code``, ``ended``.

    ``culprit``: the identity of the node at fault, or None when no one node is
    (its label and cause are in ``why``); ``present``: identities checked in for
    the next generation (node 0's included); ``step``: the newest complete
    checkpoint's step, or None.
    """
    book = dict(book, left_out=dict(book["left_out"]), why=dict(book["why"]), history=list(book["history"]))
    restarts = book["restarts"] + 1
    progress = _progress(book, step, limits.no_progress)
    book.update(restarts=restarts, steps=progress.steps, best_step=progress.since(),
                stale=progress.restarts_without_progress())
    if culprit is not None:
        key = str(culprit)
        book["left_out"][key] = book["left_out"].get(key, 0) + 1
        book["why"][key] = why
    if limits.max_restarts and restarts > limits.max_restarts:
        return _stop(book, EXIT_GAVE_UP, f"restart budget spent: {limits.max_restarts} restart(s) "
                     f"(recovery.max_restarts); the last fault: {why}")
    if limits.no_progress and progress.stalled:
        return _stop(book, EXIT_NO_PROGRESS, f"{progress.verdict()} (recovery.no_progress_restarts "
                     f"{limits.no_progress}); the last fault: {why}")
    for_good = {int(k) for k, n in book["left_out"].items() if n >= FOR_GOOD}
    available = set(present) - for_good - ({culprit} if culprit is not None else set())
    members, spares = _fill(book["members"], available, limits.slots)
    if len(members) < limits.minimum:
        need = f"{limits.minimum} node(s)" + (" (the elastic minimum)" if limits.minimum < limits.slots else "")
        return _stop(book, EXIT_GAVE_UP, f"{why}; no spare takes its place and the job needs {need}, "
                     f"{len(members)} left")
    book.update(generation=book["generation"] + 1, members=members, spares=spares)
    return dict(book, decision="start")


def shared_error(errors, members):
    """The job's own error, or None: ``errors`` maps identities to the exception their script raised
    ({"line", "lines"}, ``symptoms.script_error``); two or more of the generation's ``members`` raised the same
    one and none another. Returns (the identities, the error)."""
    raised = {node: error for node, error in errors.items() if node in members}
    if len(raised) < 2 or len({error["line"] for error in raised.values()}) != 1:
        return None
    return sorted(raised), raised[min(raised)]


def job_error(book, nodes, error):
    """The book stopping the job on its own error: no node left out, no spare taken, no restart spent."""
    where = ", ".join(map(str, nodes))
    return dict(_stop(book, EXIT_JOB_ERROR, f"the job's own error, the same on node(s) {where}: {error['line']}; "
                                            "a restart would only repeat it, so no node was left out and no spare "
                                            "or restart spent: fix the script or what it reads and writes, then "
                                            "start the job again"),
                error=dict(error, nodes=list(nodes)))


def role(book, node):
    """What ``node`` does in the book's generation: train, wait as a spare, or sit out (for good)."""
    key = str(node)
    if node in book.get("members", ()):
        return "member"
    if book.get("left_out", {}).get(key, 0) >= FOR_GOOD:
        return "out for good"
    if node in book.get("spares", ()):
        return "spare"
    return "left out"
