"""Recovery's regather at scale (issue 45): what grew faster than the job, and a rack's failures as one event.

Real loopback sockets and node 0's real hub and heartbeat; benchmarks/exchange_scale.py ``--only recovery``
measures the same at thousands of simulated nodes.
"""

import json
import socket
import time

from free_ports import free_port
from nodeweave.entrypoint.checkin.exchange import Hub
from nodeweave.entrypoint.checkin.heartbeat import STOPPING, HubWatch
from nodeweave.entrypoint.checkin.wire import Channel, proof
from nodeweave.entrypoint.recovery.hub import kept_book
from nodeweave.entrypoint.recovery.carried import carried, kept
from loopback_hub import TOKEN, Cluster, Launcher, fp, started_watches


def test_after_an_abort_a_node_that_closes_without_answering_is_lost_and_one_that_answered_is_not():
    """A rack losing power: the first node's failure is relayed; nodes that hear it answer and come back, a node of
    the rack closes without a word. Node 0 hears every node before its hub closes, and the next generation waits
    only for those that answered (it waited up to 60 s for the rack's nodes, as if they were on their way)."""
    cluster, hub_watch, links, launchers, logs = started_watches(4, hear_back=True)
    try:
        links[4].stopping.set()  # node 4 is going down: it reads nothing more
        links[4].thread.join(5)
        assert links[1].finish(1, "torchrun exited 1", ["RuntimeError: CUDA error"]) is None
        for rank in (0, 2, 3):
            assert launchers[rank].stopped.wait(5), logs
        links[4].channel.sock.close()  # ... and its connection ends, the abort unanswered
        started = time.monotonic()
        assert hub_watch.finish(143, "torchrun exited 143", []) == 5
        assert time.monotonic() - started < 3  # every node answered or gone: no wait for the silent window
        by_rank = {p.fp["rank"]: p for p in cluster.hub.peers}
        assert by_rank[2].stopping and by_rank[3].stopping
        assert (by_rank[4].done or {}).get("lost") is True, by_rank[4].done
        assert not (by_rank[2].done or {}).get("lost") and not (by_rank[3].done or {}).get("lost")
    finally:
        cluster.close()


def _hello(port, fp_):
    """A node's first steps by hand: connect, take the challenge, say hello; the connection."""
    channel = Channel(socket.create_connection(("127.0.0.1", port), timeout=5))
    challenge = channel.receive(time.monotonic() + 5)
    channel.send({"t": "hello", "job": fp_["job"], "fp": fp_, "mac": proof(TOKEN, str(challenge["nonce"]), fp_)})
    return channel


def test_a_node_early_for_the_next_generation_is_turned_away_at_once_not_after_its_connect_back():
    """During a generation, node 0 turned a node asking for the next one away only after connecting back to it
    (up to its 3 s timeout, one node at a time in the heartbeat's thread): thousands of nodes coming back queued
    behind each other. Now it is turned away as soon as its hello is read."""
    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    hub_watch = HubWatch(cluster.hub, [].append, hear_back=True, turn_away=lambda peer: True)
    hub_watch.start(Launcher().stop)
    # node 1 heard the generation end and said it checks in again (STOPPING): its next hello is early, not a twin
    # of a live node 1 (that is a duplicate, turned away as such: walk11b B23)
    cluster.channels[1].send({"t": STOPPING})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all(p.stopping for p in cluster.hub.peers
                                                  if (p.fp or {}).get("rank") == 1):
        time.sleep(0.05)
    mute = socket.create_server(("127.0.0.1", 0))  # the node's check port: accepts, never answers
    try:
        early = _hello(cluster.port, dict(fp(1, 2), generation=1, probe_port=mute.getsockname()[1]))
        started = time.monotonic()
        early.sock.settimeout(8)
        assert early.sock.recv(4096) == b""  # closed on it
        assert time.monotonic() - started < 1.5
        early.close()
    finally:
        mute.close()
        hub_watch.close()
        cluster.close()


def test_a_node_checking_in_between_generations_waits_in_the_backlog_and_the_next_hub_takes_it():
    """Between one generation's hub closing and the next one's opening, node 0's port was closed: every node coming
    back was refused and tried again 0.3 s later. The port is now handed from hub to hub."""
    log = []
    port = free_port()
    old = Hub(port, TOKEN, fp(0, 2), log.append)
    old.keep_listener = True
    old.close()
    waiting = socket.create_connection(("127.0.0.1", port), timeout=2)  # refused before
    new = Hub(port, TOKEN, fp(0, 2), log.append, listener=old.sock)
    try:
        new.gather(2, time.monotonic() + 1)
        waiting.settimeout(5)
        assert json.loads(waiting.recv(4096).split(b"\n")[0])["t"] == "challenge"
    finally:
        waiting.close()
        new.close()


def test_a_hello_carries_the_books_rank_lists_as_runs_and_node_0_reads_them_back():
    """Every node's hello carried the book's members, spares and present nodes whole: ~20 KB from each of 4,096 nodes
    (80 MB for node 0 to read and check in a regather). Runs of ranks make it a few hundred bytes."""
    members = list(range(4096))
    members[520] = 4096  # a spare took node 520's place
    book = {"generation": 1, "restarts": 1, "members": members, "spares": list(range(4097, 4160)),
            "present": list(range(4160)), "left_out": {"520": 1}, "why": {"520": "node 520: it was lost"},
            "steps": [None], "best_step": None, "stale": 0, "history": [{"generation": 0, "node": 520}] * 30,
            "decision": "start", "resume_from": None}
    sent = carried(book)
    assert len(json.dumps(sent)) < 4000, len(json.dumps(sent))
    assert len(sent["history"]) == 20
    back = kept(sent)
    assert back["members"] == members and back["spares"] == book["spares"] and back["present"] == book["present"]

    class Peer:
        def __init__(self, book_):
            self.fp = {"book": book_, "generation": 2}

    newest = kept_book(type("H", (), {"peers": [Peer(sent), Peer(dict(sent, generation=0))]})())
    assert newest["generation"] == 1 and newest["members"] == members
    assert kept({"members": [1, 2], "generation": 0})["members"] == [1, 2]  # a book sent whole, as before
    assert "members" not in kept({"members_runs": [["x", 2]]})  # not runs: left out, no error


def test_after_a_failure_node_0_leaves_nodes_coming_back_in_the_backlog_for_the_next_generations_hub():
    """A node whose launcher stopped fast checked in again while node 0 still heard the others out: the old
    generation's heartbeat took it, turned it away, and it tried again 0.3 s later (one retry per node at 4,160
    nodes). Now node 0 stops accepting once a generation failed: the node waits for the next hub."""
    cluster, hub_watch, links, launchers, logs = started_watches(2, hear_back=True)
    try:
        assert links[1].finish(1, "torchrun exited 1", ["RuntimeError: CUDA error"]) is None
        assert launchers[0].stopped.wait(5), logs
        time.sleep(0.3)
        coming_back = socket.create_connection(("127.0.0.1", cluster.port), timeout=2)
        coming_back.settimeout(1.0)
        try:
            coming_back.recv(4096)
            taken = True  # a challenge, or closed on it
        except socket.timeout:
            taken = False
        assert not taken
        coming_back.close()
    finally:
        hub_watch.close()
        cluster.close()


def test_node_0_reads_on_after_every_member_ended_until_the_spares_answered():
    """Node 0's own ranks failed after its peer's did (``peer_gone``): once its launcher and every member had ended,
    its heartbeat stopped reading, so a spare's answer to the abort went unread, the spare counted as not coming
    back, and the next generation had no spare (the job ended, exit 8). It now reads on until every node is heard."""
    import threading

    cluster, hub_watch, links, launchers, logs = started_watches(2, hear_back=True)
    cluster.hub.keep_listener = True
    new = None
    try:
        spare = next(p for p in cluster.hub.peers if p.fp["rank"] == 2)
        spare.role = "spare"
        links[2].stopping.set()  # the spare's answer is sent by hand below, once node 0 is finishing
        links[2].thread.join(5)
        assert links[1].finish(1, "torchrun exited 1", ["RuntimeError: CUDA error"]) is None
        assert launchers[0].stopped.wait(5), logs
        finisher = threading.Thread(target=hub_watch.finish, args=(1, "torchrun exited 1", []))
        finisher.start()
        time.sleep(0.5)
        links[2].channel.send({"t": "stopping"})
        finisher.join(15)
        if not spare.stopping:  # the hear-back went quiet first: the spare's old link is the regather's to read
            assert cluster.hub.undecided == [spare]
            new = Hub(cluster.port, TOKEN, fp(0, 3), [].append, listener=cluster.hub.sock)
            new.take_undecided(cluster.hub.undecided)
            new.gather(2, time.monotonic() + 1.0, wanted={2})
        assert spare.stopping and not (spare.done or {}).get("lost")
        assert new is None or not new.gone_after_abort
    finally:
        if new is not None:
            new.close()
        cluster.close()


def test_a_node_whose_connect_back_fails_at_the_regather_is_left_out_not_the_job_refused(tmp_path):
    """A node that answers the abort and checks in again, but whose check port now refuses node 0 (its network
    path went bad mid-job; at 2,048 nodes on a loaded VM, a swarm too slow to answer in 3 s): the regather refused
    the whole job (every node exit 3). Now that node is left out, the reason in the book, and a spare takes its
    place. A real node 0 (``nodeweave-entrypoint``, recovery on) and ``scale_swarm.py --recover`` nodes."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from exchange_scale import recovery

    result = recovery(4, str(tmp_path), "exit", 1, per_spare=2, deaf=(3,))  # 4 training nodes + 2 spares
    said = "\n".join(result["node0_said"])
    assert "check-in refused" not in said, said
    assert "node(s) 3 checked in again but node 0 cannot reach them: left out" in said, said
    assert (result["generations"], result["restarts"]) == (1, 1), result
    assert result["roles"] == {"member": 3, "left out": 2}, result  # node 2 (its launcher failed) and node 3
    [kept] = tmp_path.glob("*/nodeweave/jobs/*/recovery.json")  # node 0's book, in the job's own folder
    book = json.loads(kept.read_text())
    assert book["members"] == [0, 1, 4, 5] and book["left_out"] == {"2": 1, "3": 1}, book
    assert book["why"]["3"].startswith("node 0 could not connect back to a port the node opened: connecting to "), book
    assert "refused" in book["why"]["3"].lower(), book


def test_nodes_not_heard_out_are_read_on_by_the_regather_one_gone_at_its_links_end_one_slow_waited_for():
    """A rack failing over a second: node 0 waited until the rack's last node had gone (or HEAR_BACK_S, 11 s,
    for a node neither answering nor gone) before it closed the hub and regathered: the rack's second, or more,
    before anything else. Now the hear-back ends once no node answered for QUIET_S; the nodes not heard yet are
    handed to the next hub, whose regather reads their old links: node 3 (its rack lost power: its link closes
    without a word) is not waited for once its link ends; node 4 (alive but slow to answer) is waited for and
    taken when it checks in again."""
    import threading

    from nodeweave.entrypoint.checkin.exchange import check_in

    cluster, hub_watch, links, launchers, logs = started_watches(4, hear_back=True)
    cluster.hub.keep_listener = True
    new, rejoined = None, {}
    try:
        for rank in (3, 4):  # neither reads the abort: node 3 is going down, node 4 is slow
            links[rank].stopping.set()
            links[rank].thread.join(5)
        assert links[1].finish(1, "torchrun exited 1", ["RuntimeError: CUDA error"]) is None
        assert launchers[0].stopped.wait(5) and launchers[2].stopped.wait(5), logs
        started = time.monotonic()
        hub_watch.finish(143, "torchrun exited 143", [])
        assert time.monotonic() - started < 3, "waited for the nodes neither answering nor gone"
        assert sorted(p.fp["rank"] for p in cluster.hub.undecided) == [3, 4]
        log = []
        new = Hub(cluster.port, TOKEN, fp(0, 5), log.append, listener=cluster.hub.sock)
        new.take_undecided(cluster.hub.undecided)
        assert new.undecided_ranks() == {3, 4}

        def come_back(rank, after):
            time.sleep(after)
            if rank == 4:  # the slow node answers on its old link at last, lets it go, and checks in again
                links[4].channel.send({"t": "stopping"})
                links[4].channel.sock.shutdown(socket.SHUT_WR)
            try:
                rejoined[rank] = check_in("127.0.0.1", cluster.port, dict(fp(rank, 5), generation=1), TOKEN,
                                          time.monotonic() + 8)
            except Exception as err:  # noqa: BLE001 - the regather gives no verdict here: the wait ends
                rejoined[rank] = err

        threading.Thread(target=come_back, args=(2, 0.1), daemon=True).start()
        threading.Thread(target=come_back, args=(4, 1.5), daemon=True).start()
        threading.Timer(0.5, links[3].channel.sock.close).start()  # the rack's power: node 3's link ends
        started = time.monotonic()
        missing = new.gather(3, time.monotonic() + 20, wanted={2, 3, 4})
        took = time.monotonic() - started
        assert missing == set(), (missing, log)
        assert {p.fp["rank"] for p in new.peers} == {2, 4}, log
        assert 1.4 < took < 6, took  # node 4 waited for; node 3 not (the deadline was 20 s)
        assert new.gone_after_abort == {3: "its connection closed without answering the abort"}
        assert "recovery: node(s) 3 went away after the abort (its connection closed without answering the " \
               "abort): the regather did not wait for them" in log, log
        assert new.undecided_ranks() == set()  # the old links are let go once the regather is over
    finally:
        if new is not None:
            new.close()
        cluster.close()


def test_a_status_asked_while_node_0_reads_a_wake_ups_beats_is_answered_between_chunks_of_them(monkeypatch):
    """A starved node 0 reads thousands of beats per wake-up; a `--status` asked meanwhile waited behind all of
    them twice (its challenge, then its request): 20.9 s at 8,192 nodes on the loaded VM. Node 0 now looks at its
    door between chunks of beats. Here six beats arrive at once and each takes node 0 0.4 s to read (2.4 s)."""
    import threading

    from nodeweave.entrypoint.checkin import heartbeat
    from nodeweave.entrypoint.checkin.exchange import ask_status

    cluster, hub_watch, links, launchers, logs = started_watches(6, hear_back=True)
    try:
        for link in links.values():  # the nodes' own beats stop; node 0's wake-up gets six sent at once below
            link.stopping.set()
            link.thread.join(5)
        plain_read = heartbeat.HubWatch._read

        def slow_read(self, peer):
            time.sleep(0.4)  # a node 0 starved of CPU
            plain_read(self, peer)

        monkeypatch.setattr(heartbeat.HubWatch, "_read", slow_read)
        monkeypatch.setattr(heartbeat, "DOOR_EVERY", 1, raising=False)
        time.sleep(0.3)  # the loop waits for its next wake-up
        for link in links.values():
            link.channel.send({"t": "beat"})
        time.sleep(0.2)  # node 0 is reading them
        answered = {}

        def ask():
            started = time.monotonic()
            answered["answer"] = ask_status("127.0.0.1", cluster.port, "trainer", TOKEN, 10)
            answered["s"] = time.monotonic() - started

        asker = threading.Thread(target=ask)
        asker.start()
        asker.join(10)
        assert answered["answer"]["t"] == "status" and len(answered["answer"]["nodes"]) == 7
        assert answered["s"] < 1.6, answered["s"]  # behind the six beats: 2.4 s and more
    finally:
        hub_watch.close()
        cluster.close()
