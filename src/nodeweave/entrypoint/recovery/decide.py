"""Node 0's decision for the next generation, and the only writer of the job's book: pure, so every rule is a
unit test.

The *book* (``book.Book``, a typed immutable record node 0 keeps, sends with
the verdict and writes to its run record) holds what the job has seen: the
generation, the restarts spent, who trained, who waited as a spare, how often
each node was left out and why, the newest checkpoint step, every fault.
Every book is made here: :func:`first` opens it from the nodes that checked
in; :func:`judged` names what ended a generation from its failure news (the
``news.Evidence`` node 0 drains from its one queue); :func:`ended` notes how a
generation ended (the nodes still up, its culprit); :func:`after_fault` takes a fault (the culprit node and why), the
nodes that checked in again and the newest complete checkpoint's step, and
returns the next generation or the reason the job stops, with its exit code;
:func:`announced` adds what the generation starts from (the checkpoint, the
rendezvous host, the fault in the history); :func:`closed`, :func:`finished`
and :func:`kept_by` the end and a node's own copy. A fault is a node's or the
job's own: :func:`shared_error` finds the same exception raised by the script
(or the same error line it exited with) on every node that reported one, :func:`repeated` the same exception raised
by the culprits of two generations in a row, two nodes (a job of one training
node and a spare), and :func:`job_error` stops the job with it, leaving no
(further) node out and spending no (further) restart. ``hub.py`` hands these functions
its facts and keeps the book they return; no other module changes a book.

Nodes are named by their *identity*: the node rank their container was given
(0..nodes+spares-1). A generation's training ranks are positions in
``members`` (``Book.rank_of``, ``Book.node_at``): a spare takes the left-out
node's position, so the others keep their ranks.
"""

from dataclasses import replace

from ..errors import EXIT_GAVE_UP, EXIT_JOB_ERROR, EXIT_NO_PROGRESS, EXIT_PEER_FAILED, EXIT_TOPOLOGY, EXIT_USAGE
from ..nodelists import ranges
from .book import FOR_GOOD, Book, Cause, Decision, Fault, Role
from .progress import Progress

__all__ = ("FOR_GOOD", "Limits", "first", "hub_lost", "came_back", "joined", "judged", "ended", "after_fault",
           "unreachable", "job_error",
           "shared_error", "repeated", "announced", "closed", "finished", "kept_by", "role")


class Limits:
    """The spec's ``recovery`` fields that decide, and the job's size."""

    __slots__ = ("slots", "minimum", "max_restarts", "no_progress", "folder", "credit")

    def __init__(self, slots, minimum, max_restarts, no_progress, folder=None, credit=None):
        self.slots, self.minimum = slots, minimum            # training nodes wanted; fewest an elastic job takes
        self.max_restarts, self.no_progress = max_restarts, no_progress  # 0 = no such brake
        self.folder = folder  # the checkpoint folder node 0 scans: the no-progress verdict names it (walk10 B17)
        # setting key -> where this node got it and how to set it (``contract.setting_credit``): the verdicts name
        # a brake as the user gave it, not by the spec's field alone (walk12b B19)
        self.credit = dict(credit or {})

    def said(self, key, field):
        return self.credit.get(key) or field


def first(present, limits, step=None, saves_before=None):
    """Generation 0: the lowest identities train, the rest wait as spares. ``step``: the newest complete
    checkpoint's step as the job starts (a job started again over its own folder), or None; ``saves_before``:
    the newest save already in the folder then (``setup.saves_before``), never handed out, nor any before it."""
    ids = sorted(present)
    return Book(generation=0, decision=Decision.START, members=tuple(ids[:limits.slots]),
                spares=tuple(ids[limits.slots:]), steps=(step,), best_step=step, saves_before=saves_before)


def hub_lost(generation, at):
    """The fault of node 0's own loss, ``generation`` the one it ended, ``at`` when the others heard it: the
    history's record as any fault's (:func:`announced` adds the restart's cost: recover_s, the resume, the work
    lost; walk17b B1: it was dated at node 0's return, with none of them)."""
    return Fault(generation=generation, node=None, cause=Cause.LOST, why="node 0 was lost and came back", at=at)


def came_back(kept, after, present, step, limits, now=None):
    """Node 0 was lost and its container or pod started it again, the others asking for generation ``after``:
    the job's book goes on from ``kept``, the newest book they carried (restarts spent, nodes left out for good
    stay out), and node 0's loss is one more restart (its fault, :func:`hub_lost`, goes into the history with
    :func:`announced`). ``kept`` None (nodes of an older nodeweave carry no book): the book starts afresh from
    generation ``after``."""
    if kept is None:
        return replace(first(present, limits, step), generation=after)
    kept = Book.from_json(kept)
    if not kept.steps:  # carried by a node that kept no marks: the job's newest checkpoint is the first
        kept = replace(kept, steps=(step,), best_step=step)
    book = after_fault(replace(kept, generation=after - 1, decision=Decision.START), None,
                       "node 0 was lost and came back", present, step, limits)
    return replace(book, present=(), history=kept.history)


def joined(book, node):
    """The book once ``node`` checked in after its generation started, never left out (a spare late for the
    deadline): a spare, waiting, in the book's ``spares`` as every view counts them (walk17b B11: shown
    ``left out`` by /metrics, as nothing by ``spares`` and ``--status``); ``book`` itself for any other node."""
    if book.trains(node) or node in book.spares or node in book.left_out:
        return book
    return replace(book, spares=book.spares + (node,))


def ended(book, culprit, alive):
    """The book once its generation ended: the culprit's identity (None when no one node is) and the identities
    still up, node 0's bookkeeping for the regather (it waits for those, not for the culprit)."""
    return replace(book, last_culprit=culprit, alive=tuple(alive))


def _stop(book, code, why_ended):
    """The book ending the job: ``ended`` says why in words (``why`` stays the nodes' reasons, one type)."""
    return replace(book, decision=Decision.STOP, code=code, ended=why_ended)


def finished(book):
    """The book telling nodes still on their way back that the job finished (every node exits 0)."""
    return _stop(book, 0, "the job finished")


def stopped_by_person(book, how):
    """The book telling nodes whose launcher ended before node 0's stop reached them (their own ranks failed of it,
    and they came back to check in) that a person stopped node 0 (``how``: Ctrl-C), which ends the job on every
    node (exit 5), as the stop's news tells the others (walk16b B18: they waited for a next generation)."""
    return _stop(book, EXIT_PEER_FAILED, f"node 0 was stopped ({how}): a deliberate stop of node 0 ends the job on "
                                         "every node, under recovery too")


def closed(book, code, at, ended=None, rejoin=False):
    """The book as a node keeps it once the job ended for it by its launcher or a stop signal, whatever its role:
    ``done`` (exit 0, ``finished`` at ``at``) or ``stopped`` (``ended`` says whose stop), with the node's exit
    ``code`` and ``ended`` in words (docs/recovery.md "Seen and kept"; walk16b B4, B12: a member's copy, and a
    stopped node 0's, kept ``start`` with no code). ``rejoin``: the end was this node's alone and the job may go
    on (its own eviction, node 0 gone): a restart of its container checks in again, where one after any other
    end does not start the job anew (``Generations.ended_before``)."""
    done = code == 0
    return replace(book, decision=Decision.DONE if done else Decision.STOPPED, finished=at if done else None,
                   code=code, ended=ended or ("the job finished" if done else f"stopped (exit {code})"),
                   rejoin=True if rejoin and not done else None)


def _progress(book, step, limit):
    """The checkpoint progress tracker (``progress.py``) with the next generation's newest step."""
    return Progress(max(1, limit), list(book.steps)).record(step)


def _fill(old, available, slots, left_out):
    """The next members: the old ones still available keep their positions, waiting nodes take the vacant ones,
    those never left out first, then those left out once (``left_out``: identity -> times), lowest identity first
    within each (walk18b B14: a node whose rank crashed a generation ago was taken ahead of a spare that never
    failed, and a second fault puts it out for good); an elastic job short of spares closes the gaps."""
    pool = sorted((n for n in available if n not in old), key=lambda n: (left_out.get(n, 0), n))
    members = []
    for node in old:
        if node in available:
            members.append(node)
        elif pool:
            members.append(pool.pop(0))
    while len(members) < slots and pool:
        members.append(pool.pop(0))
    return tuple(members), tuple(pool)


def after_fault(book, culprit, why, present, step, limits):
    """The next generation's book (``decision`` start), or the book with ``decision`` stop, ``code``, ``ended``.

    ``culprit``: the identity of the node at fault, or None when no one node is
    (its label and cause are in ``why``); ``present``: identities checked in for
    the next generation (node 0's included); ``step``: the newest complete
    checkpoint's step, or None.
    """
    restarts = book.restarts + 1
    progress = _progress(book, step, limits.no_progress)
    left_out, reasons = dict(book.left_out), dict(book.why)
    if culprit is not None:
        left_out[culprit] = left_out.get(culprit, 0) + 1
        reasons[culprit] = why
    book = replace(book, restarts=restarts, steps=tuple(progress.steps), best_step=progress.since(),
                   stale=progress.restarts_without_progress(), left_out=left_out, why=reasons)
    if limits.max_restarts and restarts > limits.max_restarts:
        return _stop(book, EXIT_GAVE_UP, f"restart budget spent: {limits.max_restarts} restart(s) "
                     f"({limits.said('recovery_max_restarts', 'recovery.max_restarts')}); the last fault: {why}")
    if limits.no_progress and progress.stalled:
        return _stop(book, EXIT_NO_PROGRESS, f"{progress.verdict(limits.folder)} (no-progress brake {limits.no_progress}: "
                     f"{limits.said('no_progress_restarts', 'recovery.no_progress_restarts')}); the last fault: {why}")
    available = set(present) - book.for_good - ({culprit} if culprit is not None else set())
    members, spares = _fill(book.members, available, limits.slots, book.left_out)
    if len(members) < limits.minimum:
        need = f"{limits.minimum} node(s)" + (" (the elastic minimum)" if limits.minimum < limits.slots else "")
        return _stop(book, EXIT_GAVE_UP, f"{why}; no spare takes its place and the job needs {need}, "
                     f"{len(members)} left")
    return replace(book, generation=book.generation + 1, members=members, spares=spares, decision=Decision.START)


def unreachable(book, reasons):
    """The book with the nodes node 0 could not reach at the regather left out (``reasons``: identity -> why,
    ``Hub.unreachable``): each counted as left out once and its reason kept, as a culprit's is; they were not in
    the ``present`` that :func:`after_fault` or :func:`came_back` filled the members from, so a spare holds
    their places. One node's path going bad mid-job costs that node, not the job (it refused the whole job)."""
    if not reasons:
        return book
    left_out, why = dict(book.left_out), dict(book.why)
    for node, reason in reasons.items():
        left_out[node] = left_out.get(node, 0) + 1
        why[node] = reason
    return replace(book, left_out=left_out, why=why)


NAMED = (Cause.STALL, Cause.STRAGGLER)  # the stall watch's verdicts: they name the culprit, whatever crashed after
SAID = {Cause.CRASH: "its launcher failed", Cause.LOST: "it was lost", Cause.STALL: "the job stalled",
        Cause.STRAGGLER: "a lasting straggler", Cause.STOPPED: "it was stopped"}


def judged(evidence, book, now):
    """The fault a generation's failure news names (``news.Evidence``, drained from node 0's watch once the
    generation ended): a stall's or straggler's culprit when the stall watch named one; else the first member
    that failed of its own accord; else the first that failed. A culprit the stall watch names by its rank in
    the launch is turned into its identity here (``Book.node_at``). The same exception on every member that
    raised one is the job's own (:func:`shared_error`): no node's fault. The fault's ``at`` is when node 0 heard
    the evidence that decided it (the culprit's), not the first news: a peer's report held up to
    ``heartbeat.JUDGE_S`` while node 0 listened for the node that failed first is heard before it, and the
    time to recover, the work lost and the goodput timeline all count from the relayed failure. ``now``: the
    fault's time when the news holds nothing (the launchers ended without a report)."""
    heard = sorted(evidence, key=lambda e: e.at)  # stable: one thread's news keeps its order
    culprit = next((e for e in heard if e.cause in NAMED), None) or next((e for e in heard if e.own), None) or \
        (heard[0] if heard else None)
    if culprit is None:
        return Fault(generation=book.generation, node=None, cause=Cause.UNKNOWN, at=now,
                     why="?: unknown (the launchers ended without a report)")
    at = culprit.at
    if culprit.cause is Cause.CRASH:
        errors = {}
        for e in heard:
            if said(e.error) and e.node is not None:
                errors.setdefault(e.node, e.error)
        shared = shared_error(errors, book.members)
        if shared:  # the same exception on every node that raised one: the job's own, no node's
            nodes, error = shared
            did = "the start failed with" if error.get("start") else "the script exited with" if "exit" in error \
                else "the script raised"
            return Fault(generation=book.generation, node=None, cause=Cause.SCRIPT, at=at,
                         why=f"{did} {error['line']} on node(s) {ranges(map(str, nodes))}",
                         error=dict(error, nodes=nodes))
    node = culprit.node if culprit.node is not None else book.node_at(culprit.rank)
    raised = culprit.error.get("line") if culprit.cause is Cause.CRASH and said(culprit.error) else None
    again = repeated(book, node, raised)
    if again is not None:  # the last generation's culprit, another node, raised the same: the job's own
        nodes = [node, again]
        return Fault(generation=book.generation, node=None, cause=Cause.SCRIPT, at=at,
                     why=f"the script raised {raised} on node {node}, as on node {again} in the generation before",
                     error=dict(culprit.error, nodes=nodes))
    what = SAID.get(culprit.cause, str(culprit.cause))
    why = f"node {node}: {what} ({culprit.how})" if node is not None else f"{culprit.label}: {what} ({culprit.how})"
    gap = round(culprit.gap, 3) if culprit.cause is Cause.STRAGGLER and culprit.gap is not None else None
    return Fault(generation=book.generation, node=node, cause=culprit.cause, why=why, at=at, gap=gap, raised=raised)


def said(error):
    """True for an error that says what it is (an exception, a refusal, a start's failure): only such are compared
    as the job's own. A clean exit that printed nothing ("exit 1 with no error printed") names no error: two nodes
    ending so are two faults as far as anyone can tell (a crash workload's exit 1 counted as the job's own ended a
    restart budget's job with exit 10)."""
    return bool(error) and bool(error.get("lines"))


def repeated(book, node, raised):
    """The node whose script raised ``raised`` too when it was the culprit of the generation before, another node
    than ``node``; else None. A job of one training node (or one whose other ranks only saw a peer go) never has
    two members raising one error at once: the same error from the node a spare replaced is the job's own, found
    one restart late rather than never (each spare would repeat it, and the stop would not name it)."""
    last = book.history[-1] if book.history else None
    if not raised or node is None or last is None or last.generation != book.generation - 1:
        return None
    if last.cause is not Cause.CRASH or last.raised != raised or last.node in (None, node):
        return None
    return last.node


def shared_error(errors, members):
    """The job's own error, or None: ``errors`` maps identities to the exception their script raised or the error
    line it exited with ({"line", "lines"}, ``symptoms.script_error``); two or more of the generation's ``members`` raised the same
    one and none another. Returns (the identities, the error)."""
    raised = {node: error for node, error in errors.items() if node in members}
    if len(raised) < 2 or len({error["line"] for error in raised.values()}) != 1:
        return None
    return sorted(raised), raised[min(raised)]


def job_error(book, nodes, error):
    """The book stopping the job on its own error: no (further) node left out, spare taken or restart spent. A
    start every node refused as bad input or a contradiction (exit 2, 3: a variable a generation's plan refused)
    ends with that code, naming it, not as the script's error (exit 10; walk16b B21)."""
    where = ranges(map(str, nodes))
    spent = ("so no node was left out and no spare or restart spent" if not book.restarts else
             f"as the last restart did, so no more nodes are left out and no more spares or restarts spent "
             f"({book.restarts} spent)")
    if error.get("start") and error.get("code") in (EXIT_USAGE, EXIT_TOPOLOGY):  # the nodes' own settings
        stopped = _stop(book, error["code"], f"every node's start refused its settings, the same on node(s) "
                                             f"{where}: {error['line']}; a restart would only repeat it, {spent}: "
                                             "fix the variable or flag it names, then start the job again")
        return replace(stopped, error=dict(error, nodes=list(nodes)))
    stopped = _stop(book, EXIT_JOB_ERROR, f"the job's own error, the same on node(s) {where}: {error['line']}; "
                                          f"a restart would only repeat it, {spent}: fix the script or what it "
                                          "reads and writes, then start the job again")
    return replace(stopped, error=dict(error, nodes=list(nodes)))


def announced(book, present, checkpoint, addresses, now, fault=None, work_lost_s=None, unjudged=()):
    """The book as node 0 announces its generation: the identities checked in (``present``), the checkpoint it
    resumes from (``checkpoint``: (path, step), the newest complete one; generation 0 resumes from none), the
    rendezvous host when node 0's training slot went to a spare (``addresses``: identity -> address), the
    folders the checkpoint finder could not judge; and ``fault``, what ended the last generation, in the history
    with what its restart cost (the checkpoint resumed from, ``work_lost_s``, the time to recover)."""
    path, step = checkpoint
    history = book.history
    if fault is not None:
        history += (replace(fault, resumed_step=step, resume_from=path, work_lost_s=work_lost_s, relaunched=now,
                            recover_s=round(now - fault.at, 2)),)
    head = book.rendezvous()
    return replace(book, present=tuple(sorted(present)), resume_from=path if book.generation else None, step=step,
                   master=addresses.get(head) if head not in (None, 0) else None, checkpoint_unjudged=tuple(unjudged),
                   history=history)


def kept_by(book, node):
    """The book as ``node`` keeps it: its role in the generation and, when it sits out, why (`nodeweave status`
    shows both, so a left-out node says why there as on its console)."""
    kind = book.role_of(node)
    reason = book.why.get(node) if kind in (Role.LEFT_OUT, Role.OUT_FOR_GOOD) else None
    return replace(book, role=kind, reason=reason)


def role(book, node):
    """What ``node`` does in the book's generation (``Book.role_of``)."""
    return book.role_of(node)
