"""Node 0's decision for the next generation (nodeweave.entrypoint.recovery.decide): who trains, who waits,
who is left out, and when the job stops instead (budget, no progress, too few nodes)."""

from nodeweave.entrypoint.errors import EXIT_GAVE_UP, EXIT_NO_PROGRESS
from nodeweave.entrypoint.recovery.decide import Limits, after_fault, first, role


def limits(slots=2, minimum=None, max_restarts=5, no_progress=3):
    return Limits(slots, slots if minimum is None else minimum, max_restarts, no_progress)


def test_the_first_generation_trains_the_lowest_nodes_and_keeps_the_rest_as_spares():
    book = first({0, 1, 2, 3}, limits(slots=3))
    assert (book.decision, book.generation, book.members, book.spares) == ("start", 0, (0, 1, 2), (3,))
    assert [role(book, n) for n in range(4)] == ["member", "member", "member", "spare"]


def test_a_spare_takes_the_culprits_training_rank_and_the_others_keep_theirs():
    book = first({0, 1, 2, 3}, limits(slots=3))
    nxt = after_fault(book, 1, "node 1: crashed", {0, 1, 2, 3}, 10, limits(slots=3))
    assert (nxt.decision, nxt.generation, nxt.restarts) == ("start", 1, 1)
    assert nxt.members == (0, 3, 2) and nxt.spares == ()
    assert role(nxt, 1) == "left out" and nxt.why[1] == "node 1: crashed"


def test_a_lost_node_that_does_not_check_in_again_is_replaced_too():
    book = first({0, 1, 2}, limits())
    nxt = after_fault(book, 1, "node 1: lost", {0, 2}, None, limits())
    assert nxt.members == (0, 2)


def test_without_a_spare_a_fixed_job_ends_naming_the_node_and_why():
    book = first({0, 1}, limits())
    nxt = after_fault(book, 1, "node 1: its launcher failed (torchrun exited 1)", {0, 1}, 5, limits())
    assert (nxt.decision, nxt.code) == ("stop", EXIT_GAVE_UP)
    assert nxt.ended == ("node 1: its launcher failed (torchrun exited 1); no spare takes its place and the job "
                          "needs 2 node(s), 1 left")


def test_an_elastic_job_goes_on_with_fewer_nodes_down_to_its_minimum():
    lim = limits(slots=3, minimum=2)
    book = first({0, 1, 2}, lim)
    nxt = after_fault(book, 2, "node 2: lost", {0, 1}, 5, lim)
    assert (nxt.decision, nxt.members) == ("start", (0, 1))
    last = after_fault(nxt, 1, "node 1: lost", {0}, 10, lim)
    assert (last.decision, last.code) == ("stop", EXIT_GAVE_UP)
    assert "needs 2 node(s) (the elastic minimum), 1 left" in last.ended


def test_an_elastic_job_grows_back_when_a_left_out_node_returns_as_a_spare():
    lim = limits(slots=3, minimum=2)
    book = after_fault(first({0, 1, 2}, lim), 2, "node 2: crashed", {0, 1, 2}, 5, lim)
    assert book.members == (0, 1) and role(book, 2) == "left out"
    again = after_fault(book, None, "the job stalled", {0, 1, 2}, 10, lim)
    assert again.members == (0, 1, 2)


def test_node_0s_training_slot_goes_to_a_spare_while_node_0_stays():
    book = first({0, 1, 2}, limits())
    nxt = after_fault(book, 0, "node 0: crashed", {0, 1, 2}, 5, limits())
    assert nxt.members == (2, 1) and role(nxt, 0) == "left out"


def test_a_node_left_out_twice_is_never_taken_back():
    lim = limits(slots=2, max_restarts=10)
    book = first({0, 1, 2, 3}, lim)
    book = after_fault(book, 1, "node 1: crashed", {0, 1, 2, 3}, 5, lim)    # 2 in, 1 out
    assert book.members == (0, 2) and book.spares == (3,)
    book = after_fault(book, 2, "node 2: crashed", {0, 1, 2, 3}, 10, lim)   # 1 may come back: a spare again,
    assert book.members == (0, 3) and book.spares == (1,)                   # after the one never left out
    book = after_fault(book, 3, "node 3: crashed", {0, 1, 2, 3}, 12, lim)   # 1 and 2 left out once: 1 first
    assert book.members == (0, 1) and book.spares == (2,)
    book = after_fault(book, 1, "node 1: crashed again", {0, 1, 2, 3}, 15, lim)
    assert book.members == (0, 2) and book.spares == (3,) and role(book, 1) == "out for good"
    book = after_fault(book, 2, "node 2: crashed again", {0, 1, 2, 3}, 20, lim)
    assert book.members == (0, 3) and book.spares == () and role(book, 1) == "out for good"


def test_the_restart_budget_is_the_whole_jobs():
    lim = limits(slots=2, max_restarts=2, no_progress=0)
    book = first({0, 1, 2, 3, 4}, lim)
    book = after_fault(book, 1, "node 1: crashed", {0, 1, 2, 3, 4}, None, lim)
    book = after_fault(book, 2, "node 2: crashed", {0, 1, 2, 3, 4}, None, lim)
    assert book.decision == "start"
    book = after_fault(book, 3, "node 3: crashed", {0, 1, 2, 3, 4}, None, lim)
    assert (book.decision, book.code) == ("stop", EXIT_GAVE_UP)
    assert book.ended == "restart budget spent: 2 restart(s) (recovery.max_restarts); the last fault: node 3: crashed"


def test_k_restarts_without_a_newer_checkpoint_stop_the_job_with_their_own_code():
    lim = limits(slots=2, max_restarts=100, no_progress=3)
    book = first({0, 1, 2}, lim)
    book = after_fault(book, None, "the job stalled", {0, 1, 2}, 4200, lim)
    assert (book.best_step, book.stale) == (4200, 0)
    book = after_fault(book, None, "the job stalled", {0, 1, 2}, 4200, lim)
    book = after_fault(book, None, "the job stalled", {0, 1, 2}, 4200, lim)
    assert book.decision == "start"
    book = after_fault(book, None, "the job stalled", {0, 1, 2}, 4200, lim)
    assert (book.decision, book.code) == ("stop", EXIT_NO_PROGRESS)
    assert book.ended.startswith("3 restarts since step 4200, no newer checkpoint")


def test_progress_resets_the_no_progress_count():
    lim = limits(slots=2, no_progress=2)
    book = first({0, 1}, lim)
    book = after_fault(book, None, "stall", {0, 1}, 10, lim)
    book = after_fault(book, None, "stall", {0, 1}, 10, lim)
    assert book.stale == 1
    book = after_fault(book, None, "stall", {0, 1}, 20, lim)
    assert (book.decision, book.stale, book.best_step) == ("start", 0, 20)


def test_the_decision_does_not_change_the_book_it_was_given():
    book = first({0, 1, 2}, limits())
    before = repr(book)
    after_fault(book, 1, "node 1: crashed", {0, 1, 2}, 5, limits())
    assert repr(book) == before



def test_a_node_that_came_back_sits_out_then_takes_a_place_and_keeps_why_in_its_record():
    """A crashed container that comes back (its restart policy) waits out the generation that left it out,
    then is a spare like any other: the next fault's place is its (docs/recovery.md)."""
    from nodeweave.entrypoint.recovery.decide import kept_by

    book = after_fault(first({0, 1, 2}, limits(), None), 1, "node 1: it was lost", {0, 2}, 10, limits())
    assert (book.members, kept_by(book, 1).role) == ((0, 2), "left out")
    assert kept_by(book, 1).reason == "node 1: it was lost" and kept_by(book, 2).reason is None
    book = after_fault(book, 2, "node 2: it was lost", {0, 1}, 15, limits())
    assert (book.members, kept_by(book, 1).role, kept_by(book, 1).reason) == ((0, 1), "member", None)
    assert (kept_by(book, 2).role, kept_by(book, 2).reason) == ("left out", "node 2: it was lost")


def test_a_book_that_ends_the_job_is_kept_by_a_node_that_sits_out():
    from nodeweave.entrypoint.recovery.decide import kept_by

    book = after_fault(first({0, 1, 2}, limits(max_restarts=1), None), 1, "node 1: crashed", {0, 1, 2}, None,
                       limits(max_restarts=1))
    ended = after_fault(book, 2, "node 2: crashed", {0, 1}, None, limits(max_restarts=1))
    assert ended.decision == "stop" and isinstance(ended.ended, str) and isinstance(ended.why, dict)
    # why stays the nodes' reasons when the job ends (issue 41: it was a dict while running, a string once
    # stopped, and a node that sat out lost its reason): why the job ends is "ended"
    assert (kept_by(ended, 1).role, kept_by(ended, 1).reason) == ("left out", "node 1: crashed")


def test_the_same_script_error_on_two_or_more_members_is_the_jobs_own():
    from nodeweave.entrypoint.errors import EXIT_JOB_ERROR
    from nodeweave.entrypoint.recovery.decide import job_error, shared_error

    denied = {"line": "PermissionError: [Errno 13] Permission denied: '/ckpt/step-5.pt.tmp'", "lines": ["..."]}
    assert shared_error({0: denied, 1: dict(denied)}, [0, 1]) == ([0, 1], denied)
    assert shared_error({0: denied}, [0, 1]) is None  # one node's word: that node's fault, as before
    assert shared_error({0: denied, 1: {"line": "ValueError: bad", "lines": []}}, [0, 1]) is None
    assert shared_error({0: denied, 2: denied}, [0, 1]) is None  # a spare's report is not a member's
    book = first({0, 1, 2}, Limits(2, 2, 5, 3))
    stopped = job_error(book, [0, 1], denied)
    assert (stopped.decision, stopped.code, stopped.restarts, stopped.left_out) == \
        ("stop", EXIT_JOB_ERROR, 0, {})
    assert stopped.ended.startswith("the job's own error, the same on node(s) 0, 1: PermissionError")
    assert stopped.error["nodes"] == [0, 1] and stopped.members == (0, 1) and stopped.spares == (2,)
