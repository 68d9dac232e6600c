"""The exchange over real loopback sockets: node 0's hub and nodes checking in from threads.

Check-in (every node gets the same verdict, strangers are turned away, the
connect-back is real), the wire's bounds, and the heartbeat: a failure on one
node reaches the others, a vanished node counts as failed, a clean finish is
quiet.
"""

import socket
import threading
import time

import pytest

from nodeweave.entrypoint.checkin import heartbeat
from nodeweave.entrypoint.checkin.exchange import Hub, Refused, check_in
from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch
from nodeweave.entrypoint.checkin.wire import MAX_MESSAGE, Channel, ExchangeError, job_token
from loopback_hub import TOKEN, Cluster, Launcher, fp, free_port, started_watches


def test_every_node_gets_node_0s_one_verdict():
    cluster = Cluster(4, changes={3: {"nproc": 2}})
    try:
        verdict = cluster.decide()
        assert verdict["decision"] == "start", verdict
        assert verdict["procs"] == [8, 8, 8, 2, 8] and verdict["world_size"] == 34
        assert cluster.errors == {}
        assert all(cluster.results[rank] == verdict for rank in range(1, 5))
        assert all(peer.probe == "ok" for peer in cluster.hub.peers)  # node 0 connected back to every node
    finally:
        cluster.close()


def test_a_differing_node_makes_every_node_refuse_with_the_same_table():
    cluster = Cluster(2, changes={2: {"nccl": "2.26.2"}})
    try:
        verdict = cluster.decide()
        assert verdict["decision"] == "refuse"
        assert cluster.results[1] == cluster.results[2] == verdict
    finally:
        cluster.close()


def test_a_node_of_another_job_is_turned_away_and_told_why():
    stranger = job_token({"NODEWEAVE_JOB_TOKEN": "other"}, "trainer", 29500)
    cluster = Cluster(1, token=stranger, nnodes=2)
    try:
        cluster.hub.gather(2, time.monotonic() + 2)
        for thread in cluster.threads:
            thread.join(10)
        assert isinstance(cluster.errors[1], Refused) and "job token" in str(cluster.errors[1])
        assert cluster.hub.peers == []
        assert any("turned away" in line for line in cluster.log)
    finally:
        cluster.close()


def test_missing_nodes_are_refused_at_the_deadline():
    cluster = Cluster(1, nnodes=3)
    try:
        started = time.monotonic()
        verdict = cluster.decide(deadline_s=1.5)
        assert time.monotonic() - started < 5
        assert verdict["decision"] == "refuse" and verdict["problems"][0]["check"] == "missing"
        assert cluster.results[1] == verdict
    finally:
        cluster.close()


def test_connect_back_failure_is_named():
    """A node whose check port nobody can reach: its advertised address points at a closed port."""
    cluster = Cluster(1, nnodes=2)
    try:
        cluster.hub.gather(2, time.monotonic() + 10)
        cluster.hub.peers[0].probe = None
        cluster.hub.peers[0].fp = dict(cluster.hub.peers[0].fp, probe_port=free_port())
        cluster.hub.board.probe(cluster.hub.peers[0], TOKEN, 3.0)  # node 0's own connect-back, in its loop
        until = time.monotonic() + 5
        while cluster.hub.peers[0].probe is None and time.monotonic() < until:  # the loop advances the probe
            cluster.hub.board.wait(0.05)
        assert "refused" in cluster.hub.peers[0].probe.lower(), cluster.hub.peers[0].probe
        verdict = cluster.hub.decide(2, 2, "torchrun", ())
        assert [p["check"] for p in verdict["problems"]] == ["connect-back"]
        cluster.hub.announce(verdict)
    finally:
        for thread in cluster.threads:
            thread.join(10)
        cluster.close()


def test_an_oversized_or_garbled_message_ends_the_connection_not_the_hub():
    port = free_port()
    hub = Hub(port, TOKEN, fp(0, 2), lambda line: None)
    try:
        with socket.create_connection(("127.0.0.1", port)) as rude:
            hub.step(0.5)
            rude.sendall(b"x" * (MAX_MESSAGE + 10))
            for _ in range(20):
                hub.step(0.1)
            assert hub.pending == [] and hub.peers == []
    finally:
        hub.close()


def test_receive_never_waits_past_its_deadline():
    left, right = socket.socketpair()
    channel = Channel(left, "peer")
    started = time.monotonic()
    with pytest.raises(ExchangeError, match="no answer"):
        channel.receive(time.monotonic() + 0.3)
    assert time.monotonic() - started < 2
    right.close()
    channel.close()


# --- the heartbeat -----------------------------------------------------------------


def test_a_failing_node_stops_every_other_node_within_seconds():
    cluster, hub_watch, links, launchers, logs = started_watches(3)
    try:
        failed_at = time.monotonic()
        assert links[2].finish(1, "torchrun exited 1", ["Traceback (most recent call last):", "ValueError: boom"]) is None
        for rank in (0, 1, 3):
            assert launchers[rank].stopped.wait(5), logs
        assert time.monotonic() - failed_at < 5
        assert not launchers[2].stopped.is_set()
        assert any("node 2 (trainer-2) failed: torchrun exited 1" in line for line in logs[1]), logs[1]
        assert any("ValueError: boom" in line for line in logs[3]), logs[3]
        assert links[1].finish(143, "torchrun exited 143", []) == 5
        assert hub_watch.finish(143, "torchrun exited 143", []) == 5
    finally:
        cluster.close()


def judged(hub_watch, members=(0, 1, 2, 3)):
    """What recovery's node 0 makes of the watch's failure news (its one queue, drained: ``decide.judged``)."""
    from nodeweave.entrypoint.recovery.book import Book
    from nodeweave.entrypoint.recovery.decide import judged as judge

    fault = judge(hub_watch.news.drain(), Book(members=tuple(members)), time.time())
    return fault.node, str(fault.cause), fault.why


PEER_GONE = ("[rank2]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
             "[10.0.0.1]:25998: Connection reset by peer. This is typically caused by a remote worker hanging")


def test_a_node_that_only_saw_its_peer_go_is_held_until_the_node_that_failed_first_reports():
    """Under load the secondary failure can reach node 0 first: node 1 (its rank killed) is named, not node 2."""
    cluster, hub_watch, links, launchers, logs = started_watches(3)
    try:
        assert links[2].finish(1, "torchrun exited 1", [PEER_GONE], peer_gone=PEER_GONE) is None
        time.sleep(0.3)
        assert not any(launchers[rank].stopped.is_set() for rank in (0, 1, 3)), "relayed before judging"
        assert links[1].finish(1, "torchrun exited 1", ["exitcode  : -9 (pid: 12)  (SIGKILL)"]) is None
        for rank in (0, 3):
            assert launchers[rank].stopped.wait(5), logs
        assert any("node 1 (trainer-1) failed: torchrun exited 1" in line for line in logs[3]), logs[3]
        assert not any("node 2 (trainer-2) failed" in line for line in logs[3]), logs[3]
        assert any("listening 2s for the node that failed first" in line for line in logs[0]), logs[0]
        assert judged(hub_watch) == (1, "crash", "node 1: its launcher failed (torchrun exited 1)")
    finally:
        cluster.close()


def test_a_failure_that_only_saw_a_peer_go_is_relayed_when_no_other_comes(monkeypatch):
    monkeypatch.setattr(heartbeat, "JUDGE_S", 0.5)
    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        held_at = time.monotonic()
        assert links[2].finish(1, "torchrun exited 1", [PEER_GONE], peer_gone=PEER_GONE) is None
        assert launchers[0].stopped.wait(5) and launchers[1].stopped.wait(5), logs
        assert time.monotonic() - held_at >= 0.5
        assert any("node 2 (trainer-2) failed" in line for line in logs[1]), logs[1]
        assert judged(hub_watch)[:2] == (2, "crash")
    finally:
        cluster.close()


def test_node_0s_own_secondary_failure_waits_for_the_node_that_failed_first():
    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        later = threading.Timer(0.3, links[1].finish, args=(1, "torchrun exited 1", ["RuntimeError: CUDA error"]))
        later.start()
        started = time.monotonic()
        assert hub_watch.finish(1, "torchrun exited 1", [PEER_GONE], peer_gone=PEER_GONE) == 5  # a peer failed
        assert 0.25 < time.monotonic() - started < 2.0
        assert judged(hub_watch)[:2] == (1, "crash")
        assert any("node 1 (trainer-1) failed" in line for line in logs[2]), logs[2]
    finally:
        cluster.close()


def test_a_lost_node_is_a_failure_of_its_own_and_ends_a_hold():
    cluster, hub_watch, links, launchers, logs = started_watches(3)
    try:
        assert links[2].finish(1, "torchrun exited 1", [PEER_GONE], peer_gone=PEER_GONE) is None
        links[1].stopping.set()
        links[1].channel.sock.close()  # node 1's entrypoint was killed with its container
        assert launchers[3].stopped.wait(1.9), logs  # before the hold's 2 s: a lost node needs no judging
        assert judged(hub_watch)[:2] == (1, "lost")
    finally:
        cluster.close()


def test_a_spare_closing_after_a_failure_is_not_called_gone_and_one_vanishing_before_is():
    """After a failure a spare closes its link to check in for the next generation: what every node does, no
    news; a spare whose link ends while the job runs is news (its node went away), and stops nothing."""
    cluster, hub_watch, links, launchers, logs = started_watches(3)
    try:
        spare = next(p for p in cluster.hub.peers if p.fp.get("rank") == 3)
        spare.role = "spare"
        links[3].stopping.set()
        links[3].channel.sock.close()
        deadline = time.monotonic() + 5
        while not any("(spare) is gone" in line for line in logs[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any("node 3 (trainer-3) (spare) is gone" in line for line in logs[0]), logs[0]
        assert not launchers[0].stopped.is_set() and not launchers[1].stopped.is_set()

        cluster2, hub_watch2, links2, launchers2, logs2 = started_watches(3)
        try:
            spare2 = next(p for p in cluster2.hub.peers if p.fp.get("rank") == 3)
            spare2.role = "spare"
            assert links2[1].finish(1, "torchrun exited 1", ["RuntimeError: CUDA error"]) is None
            assert launchers2[3].stopped.wait(5), logs2
            links2[3].stopping.set()
            links2[3].channel.sock.close()  # the spare, told of the failure, closes to check in again
            assert launchers2[2].stopped.wait(5), logs2
            time.sleep(1.5)  # node 0's sweep has read the closed link by now
            assert not any("is gone" in line for line in logs2[0]), logs2[0]
        finally:
            cluster2.close()
    finally:
        cluster.close()


def test_a_failure_heard_before_a_nodes_launcher_started_stops_that_launcher_as_it_attaches():
    """Recovery's generations beat from before the launcher's plan; a failure relayed meanwhile has no launcher
    to stop, so the launcher that attaches afterwards is stopped at once (and one attached before, as ever)."""
    cluster = Cluster(2)
    assert cluster.decide()["decision"] == "start"
    logs = {rank: [] for rank in range(3)}
    hub_watch = HubWatch(cluster.hub, logs[0].append)
    links = {rank: LinkWatch(cluster.channels[rank], logs[rank].append) for rank in (1, 2)}
    launchers = {rank: Launcher() for rank in range(3)}
    try:
        hub_watch.start(launchers[0].stop)
        links[1].start(launchers[1].stop)
        links[2].start()  # node 2 still making its plan: beating, no launcher yet
        assert links[1].finish(1, "torchrun exited 1", ["RuntimeError: CUDA error"]) is None
        deadline = time.monotonic() + 5
        while links[2].failure is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert links[2].failure is not None and not launchers[2].stopped.is_set(), logs[2]
        links[2].attach_launcher(launchers[2].stop)
        assert launchers[2].stopped.is_set()
        assert launchers[0].stopped.wait(5)
    finally:
        cluster.close()


def test_a_vanished_node_counts_as_failed():
    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        links[1].stopping.set()
        links[1].channel.sock.close()  # the entrypoint was killed: no report, the connection just ends
        assert launchers[0].stopped.wait(5) and launchers[2].stopped.wait(5), logs
        assert any("closed without a report" in line for line in logs[2]), logs[2]
    finally:
        cluster.close()


def test_node_0_vanishing_stops_the_others():
    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        hub_watch.stopping.set()
        hub_watch.thread.join(5)
        for peer in cluster.hub.peers:
            peer.channel.sock.close()
        assert launchers[1].stopped.wait(5) and launchers[2].stopped.wait(5)
        assert any("node 0" in line and "failed" in line for line in logs[1])
    finally:
        cluster.close()


def test_silence_counts_as_gone(monkeypatch):
    monkeypatch.setattr(heartbeat, "BEAT_S", 0.2)
    monkeypatch.setattr(heartbeat, "LOST_S", 1.0)
    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        links[1].stopping.set()  # node 1 stops beating but keeps its connection open
        links[1].thread.join(2)
        assert launchers[0].stopped.wait(5) and launchers[2].stopped.wait(5), logs
        assert any("no heartbeat" in line for line in logs[0]), logs[0]
    finally:
        cluster.close()


def test_a_clean_finish_is_quiet():
    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        assert links[1].finish(0, "torchrun exited 0", []) is None
        assert links[2].finish(0, "torchrun exited 0", []) is None
        started = time.monotonic()
        assert hub_watch.finish(0, "torchrun exited 0", []) is None
        assert time.monotonic() - started < 3  # everyone had finished: no lingering
        assert not any(launcher.stopped.is_set() for launcher in launchers.values())
        assert all(not lines for lines in logs.values()), logs
    finally:
        cluster.close()


def test_elastic_leaving_is_reported_and_stops_nothing():
    cluster, hub_watch, links, launchers, logs = started_watches(2, elastic=True)
    try:
        links[2].finish(1, "torchrun exited 1", [])
        deadline = time.monotonic() + 5
        while not any("left the job" in line for line in logs[1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any("node 2 (trainer-2) left the job" in line for line in logs[1]), logs
        assert not any(launcher.stopped.is_set() for launcher in launchers.values())
    finally:
        cluster.close()


def test_nodes_still_checking_in_when_the_job_is_refused_are_told_why_not_cut_off():
    """A node accepted but not through its hello, and one still waiting in the listen backlog, when node 0
    refuses and closes: each gets the refusal (exit 3), not a closed connection (exit 4, CI saw it on a
    loaded machine: the node started a little after the others)."""
    import select

    from nodeweave.entrypoint.checkin.refusal import refused_because
    from nodeweave.entrypoint.checkin.wire import connect

    cluster = Cluster(1, nnodes=3)
    late = {}
    try:
        verdict = cluster.decide(deadline_s=1.0)
        assert verdict["decision"] == "refuse" and verdict["problems"][0]["check"] == "missing"
        accepted = connect("127.0.0.1", cluster.port, 5.0)  # in, challenged, no hello yet
        assert select.select([cluster.hub.sock], [], [], 5.0)[0]
        cluster.hub.accept()
        assert len(cluster.hub.pending) == 1

        def node_2():
            try:
                check_in("127.0.0.1", cluster.port, fp(2), TOKEN, time.monotonic() + 10)
            except ExchangeError as err:
                late["error"] = err
        thread = threading.Thread(target=node_2, daemon=True)
        thread.start()
        assert select.select([cluster.hub.sock], [], [], 5.0)[0]  # node 2 waits to be accepted
        cluster.hub.turn_away(refused_because(verdict))
        cluster.hub.close()
        thread.join(10)
        assert isinstance(late.get("error"), Refused), late
        assert "refused this job" in str(late["error"]) and "missing" in str(late["error"]), late
        said = [accepted.receive(time.monotonic() + 5) for _ in range(2)]
        assert [m["t"] for m in said] == ["challenge", "reject"] and "missing" in said[1]["reason"], said
        accepted.close()
    finally:
        cluster.close()
