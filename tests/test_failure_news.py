"""Issue 41: failure news travels through one queue. Every producer — a node's exit report and a lost node (node
0's heartbeat thread), node 0's own launcher's end (its main thread, from the supervisor), a stall at
stall_timeout and a lasting straggler (the stall watch) — puts a frozen ``news.Evidence`` on the watch's
``news.News``; recovery's node 0 drains it once the generation ended and ``decide.judged`` names the fault. The
watch keeps none of it (it held it in six fields: ``heard``, ``culprit``, ``straggler``, ``own_report``, and
recovery read ``failure`` and ``failed_at`` besides)."""

import inspect
import threading
import time

import pytest

from nodeweave.entrypoint.checkin.heartbeat import HubWatch
from nodeweave.entrypoint.errors import EXIT_PEER_FAILED, EXIT_STALLED
from nodeweave.entrypoint.news import Cause, Evidence, GenRank, News, NodeId
from nodeweave.entrypoint.recovery import decide
from nodeweave.entrypoint.recovery.book import Book
from loopback_hub import started_watches
from test_exchange_loopback import PEER_GONE

STRAGGLER = {"node": 1, "host": "trainer-1", "ranks": [1], "gap": 0.5, "checks": 10}


def evidence(cause, at, node=None, rank=None, own=True, error=None, gap=None, how="torchrun exited 1"):
    return Evidence(cause=cause, label=f"node {node} (h)", how=how, at=at, node=None if node is None else NodeId(node),
                    rank=None if rank is None else GenRank(rank), own=own, error=error, gap=gap)


def test_the_queue_takes_from_any_thread_and_drains_in_order_once():
    news = News()
    threads = [threading.Thread(target=lambda n=n: news.put(evidence(Cause.CRASH, n, node=n))) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    drained = news.drain()
    assert sorted(e.node for e in drained) == list(range(8)) and news.drain() == []
    with pytest.raises(AttributeError):
        drained[0].node = 3  # frozen: what a producer put is what the consumer reads


def test_a_stall_names_the_culprit_by_its_rank_and_decide_turns_it_into_the_node_through_the_book():
    """A spare holds generation rank 1 (node 1 left out before): the stall watch's rank 1 is node 2, not node 1."""
    book = Book(generation=1, members=(NodeId(0), NodeId(2)), spares=())
    news = [evidence(Cause.CRASH, 1.0, node=0), evidence(Cause.STALL, 2.0, rank=1, how="stalled for 600s")]
    fault = decide.judged(news, book, 9.0)
    assert (fault.node, fault.cause, fault.at) == (2, Cause.STALL, 2.0)  # the stall verdict decided it
    assert fault.why == "node 2: the job stalled (stalled for 600s)"


def test_the_first_node_that_failed_of_its_own_accord_is_the_culprit_else_the_first():
    book = Book(members=(0, 1, 2))
    secondary, first = evidence(Cause.CRASH, 1.0, node=2, own=False), evidence(Cause.CRASH, 1.5, node=1)
    assert decide.judged([secondary, first], book, 9.0).node == 1
    assert decide.judged([secondary], book, 9.0).node == 2
    lost = decide.judged([evidence(Cause.LOST, 3.0, node=1, how="no heartbeat for 10s")], book, 9.0)
    assert (lost.node, lost.cause, lost.why) == (1, Cause.LOST, "node 1: it was lost (no heartbeat for 10s)")
    straggler = decide.judged([evidence(Cause.STRAGGLER, 1.0, rank=2, gap=0.51234)], book, 9.0)
    assert (straggler.node, straggler.gap) == (2, 0.512)
    nothing = decide.judged([], book, 9.0)
    assert (nothing.node, nothing.cause, nothing.at) == (None, Cause.UNKNOWN, 9.0)


def test_a_faults_time_is_the_evidence_that_decided_it_not_the_first_news():
    """A peer's report showing only a peer gone is heard first and held (up to JUDGE_S, 2 s) while node 0 listens
    for the node that failed of its own accord: the fault was dated from the held report, up to 2 s before the
    relayed failure that decided it, and the time to recover counted those seconds twice."""
    book = Book(members=(0, 1, 2))
    held, culprit = evidence(Cause.CRASH, 100.0, node=2, own=False), evidence(Cause.CRASH, 101.9, node=1)
    fault = decide.judged([held, culprit], book, 120.0)
    assert (fault.node, fault.at) == (1, 101.9)
    assert decide.judged([held], book, 120.0).at == 100.0  # no node failed of its own accord: the held one decided
    error = {"line": "PermissionError: [Errno 13] Permission denied: '/ws/ckpt'", "lines": ["..."]}
    script = decide.judged([evidence(Cause.CRASH, 100.0, node=2, own=False, error=error),
                            evidence(Cause.CRASH, 101.5, node=1, error=error)], book, 120.0)
    assert (script.cause, script.at) == (Cause.SCRIPT, 101.5)
    announced = decide.announced(book, (0, 1, 2), (None, None), {}, 104.0, fault=fault)
    assert announced.history[-1].recover_s == 2.1  # relaunched 2.1 s after the relayed failure, not 4.0


def test_the_books_fault_time_is_the_relayed_failure_the_goodput_timeline_records():
    """Node 0's goodput timeline dates a generation's fault from the watch's relayed failure (``fault()``) and
    then takes the book's ``at``: the two agree when a peer's report was held first (they were the held
    report's time and the relay's, up to JUDGE_S apart)."""
    cluster, hub_watch, links, launchers, logs = started_watches(3)
    try:
        assert links[2].finish(1, "torchrun exited 1", [PEER_GONE], peer_gone=PEER_GONE) is None  # held
        time.sleep(0.8)
        assert links[1].finish(1, "torchrun exited 1", ["boom"]) is None  # failed of its own accord: relayed
        assert launchers[0].stopped.wait(5), logs
        relayed_at, label = hub_watch.fault()
    finally:
        cluster.close()
    fault = decide.judged(hub_watch.news.drain(), Book(members=(0, 1, 2, 3)), time.time())
    assert fault.node == 1 and label.startswith("node 1 "), (fault, label)
    assert abs(fault.at - relayed_at) < 0.3, (fault.at, relayed_at)


def test_the_same_error_on_every_member_is_the_jobs_own_from_the_news_alone():
    book = Book(members=(0, 1))
    error = {"line": "PermissionError: [Errno 13] Permission denied: '/ws/ckpt'", "lines": ["..."]}
    fault = decide.judged([evidence(Cause.CRASH, 1.0, node=1, error=error),
                           evidence(Cause.CRASH, 1.2, node=0, own=False, error=error)], book, 9.0)
    assert (fault.node, fault.cause, fault.error["nodes"]) == (None, Cause.SCRIPT, [0, 1])


def test_the_same_error_from_the_node_a_spare_replaced_is_the_jobs_own_one_generation_late():
    """A job of one training node and a spare: its script raised PermissionError, node 0 was left out, the spare
    raised it too, and (before) was left out in turn, the stop line naming no error. Now the second raise is the
    job's own; a different error, the same node again, or a stall between are still a node's."""
    from dataclasses import replace

    error = {"line": "PermissionError: [Errno 13] Permission denied: '/ws/ckpt'", "lines": ["Traceback", "..."]}
    book = Book(generation=0, members=(NodeId(0),), spares=(NodeId(1),))
    first_fault = decide.judged([evidence(Cause.CRASH, 10.0, node=0, error=error)], book, 20.0)
    assert (first_fault.node, first_fault.cause, first_fault.raised) == (0, Cause.CRASH, error["line"])
    after = replace(book, generation=1, members=(NodeId(1),), spares=(), history=(first_fault,), restarts=1)
    again = decide.judged([evidence(Cause.CRASH, 30.0, node=1, error=error)], after, 40.0)
    assert (again.node, again.cause, again.error["nodes"]) == (None, Cause.SCRIPT, [1, 0]), again
    assert again.why == f"the script raised {error['line']} on node 1, as on node 0 in the generation before"
    stopped = decide.job_error(after, again.error["nodes"], again.error)
    assert stopped.code == 10 and stopped.restarts == 1 and "no more spares or restarts spent (1 spent)" in \
        stopped.ended, stopped.ended
    other = decide.judged([evidence(Cause.CRASH, 30.0, node=1, error={"line": "ValueError: x", "lines": []})],
                          after, 40.0)
    assert (other.node, other.cause) == (1, Cause.CRASH)
    same_node = replace(after, members=(NodeId(0),))
    assert decide.judged([evidence(Cause.CRASH, 30.0, node=0, error=error)], same_node, 40.0).cause is Cause.CRASH
    older = replace(after, generation=2)  # the raise two generations back is not "the generation before"
    assert decide.judged([evidence(Cause.CRASH, 30.0, node=1, error=error)], older, 40.0).cause is Cause.CRASH
    assert Book.from_json(after.to_json()).history[0].raised == error["line"]


def test_every_producer_puts_its_failure_on_the_watchs_one_queue():
    """A worker's report and a loss (the heartbeat's thread), node 0's own end (the main thread), a stall and a
    straggler (the stall watch's seam): each one record on ``watch.news``."""
    cluster, hub_watch, links, launchers, logs = started_watches(3)
    try:
        assert links[2].finish(1, "torchrun exited 1", [PEER_GONE], peer_gone=PEER_GONE) is None
        links[1].stopping.set()
        links[1].channel.sock.close()  # node 1's entrypoint was killed with its container
        assert launchers[0].stopped.wait(5), logs
        hub_watch.stop_all("node 3 (trainer-3)", "stalled for 600s", EXIT_STALLED, node=3)  # after the failure: no news
        assert hub_watch.finish(143, "torchrun was stopped", ["Terminated"]) == EXIT_PEER_FAILED
    finally:
        cluster.close()
    heard = [(e.cause, e.node, e.own) for e in hub_watch.news.drain()]
    assert heard == [(Cause.CRASH, 2, False), (Cause.LOST, 1, True), (Cause.CRASH, 0, False)], heard

    stalled = HubWatch(cluster.hub, lambda line: None, news=News())
    stalled.stop_all("node 1 (trainer-1)", "stalled for 600s", EXIT_STALLED, node=1)
    stalled.stop_all("node 1 (trainer-1)", "rank 1 named a straggler", EXIT_PEER_FAILED, node=1,
                     cause=Cause.STRAGGLER, gap=0.5)  # the first stop only
    [stall] = stalled.news.drain()
    assert (stall.cause, stall.rank, stall.node) == (Cause.STALL, None, 1)  # the identity: the views carry it


def test_the_watch_keeps_no_failure_news_of_its_own():
    """The six fields are gone: the watch's classes assign none of them, and recovery's node 0 reads the fault
    from the news alone (not the watch's ``failure`` or ``failed_at``: what stopped this node's launcher)."""
    from nodeweave.entrypoint.recovery import hub
    from nodeweave.entrypoint.stall import exchange, fault
    from test_stall_watch_interfaces import _self_names

    kept = set()
    for cls in (HubWatch, exchange.HubStall, fault.FaultSeam):
        kept |= _self_names(cls)[1] | set(vars(cls))
    assert kept & {"heard", "culprit", "straggler", "own_report", "judged", "judged_report", "script_errors"} == set()
    loop = inspect.getsource(hub.HubSide)
    assert "decide.judged(news.drain()" in loop
    assert "watch.failed_at" not in loop and "watch.failure or" not in loop


def test_a_straggler_taken_by_recoverys_seam_is_one_record_with_its_gap():
    from nodeweave.entrypoint.recovery.hub import HubSide

    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        assert HubSide._take_straggler(hub_watch, STRAGGLER) is True
        assert HubSide._take_straggler(hub_watch, STRAGGLER) is False  # the generation is ending already
        assert launchers[0].stopped.wait(5), logs
    finally:
        cluster.close()
    [straggler] = hub_watch.news.drain()
    # the fault names the node by identity, as the ranks' views carry it (node 0 stamps the sender's: walk7 B46)
    assert (straggler.cause, straggler.node, straggler.rank, straggler.gap) == (Cause.STRAGGLER, 1, None, 0.5)
    book = Book(members=(0, 2, 1))  # node 1 runs rank 2 this generation: still node 1 that is left out
    assert decide.judged([straggler], book, time.time()).node == 1
