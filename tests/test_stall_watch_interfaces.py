"""The watches' interfaces are declared and passed in, not attached (issue 41): the stall exchange's mixins use
only names they or their bases declare (``stall/surface.py``), nothing outside a watch's class sets its
attributes, and a `--status` answer (with stacks: seconds) never runs on node 0's heartbeat thread."""

import ast
import importlib
import inspect
import pathlib
import textwrap
import threading
import time

from nodeweave.entrypoint.checkin.exchange import Hub, ask_status
from test_exchange_linear import TOKEN
from test_exchange_verdict import fp

ENTRYPOINT = pathlib.Path(__file__).resolve().parents[1] / "src" / "nodeweave" / "entrypoint"
MIXED_IN = [("stall.exchange", "LinkStall"), ("stall.exchange", "HubStall"), ("stall.fault", "FaultSeam"),
            ("checkin.heartbeat", "Watch"), ("checkin.heartbeat", "LinkWatch"), ("checkin.heartbeat", "HubWatch"),
            ("stall.local", "LocalWatch"), ("stall.watcher", "StallWatch")]


def _self_names(cls):
    """(names read as ``self.x``, names assigned as ``self.x = ``) in ``cls``'s own source."""
    used, assigned = set(), set()
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(cls)))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            (assigned if isinstance(node.ctx, ast.Store) else used).add(node.attr)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr") and \
                node.args and getattr(node.args[0], "id", None) == "self" and isinstance(node.args[1], ast.Constant):
            used.add(node.args[1].value)  # getattr(self, "name", default): a name it does not trust is there
    return used, assigned


def undeclared(cls):
    """The names ``cls`` uses on ``self`` that neither it nor a base declares (a method, a class attribute, an
    assignment in a method)."""
    used, _ = _self_names(cls)
    declared = set(dir(cls))
    for base in cls.__mro__[:-1]:
        declared |= _self_names(base)[1]
    return sorted(used - declared)


def test_every_name_a_watch_mixin_uses_is_declared():
    """The stall mixins used 11 names they did not define (the watch they were mixed into had them)."""
    found = {}
    for module, name in MIXED_IN:
        cls = getattr(importlib.import_module("nodeweave.entrypoint." + module), name)
        if undeclared(cls):
            found[name] = undeclared(cls)
    assert found == {}


def test_the_check_sees_a_mixin_using_a_name_nothing_declares():
    class Mixin:
        def tick(self):
            return self.hub.peers, self.log, getattr(self, "culprit", None)

    assert undeclared(Mixin) == ["culprit", "hub", "log"]


def _outside_attachments(path):
    """(line, target) for each assignment to an attribute of another object named ``*watch``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store) and \
                        isinstance(part.value, ast.Name) and part.value.id.lower().endswith("watch"):
                    found.append((node.lineno, ast.unparse(part)))
    return found


def test_nothing_attaches_attributes_to_a_watch_from_outside():
    """Was: ``watch.stall = StallWatch(...)`` (stall/setup.py), ``watch.beat_extra = ...`` (metrics/),
    ``watch.straggler = fault`` (recovery/hub.py)."""
    found = {str(p.relative_to(ENTRYPOINT)): hits for p in sorted(ENTRYPOINT.rglob("*.py"))
             if (hits := _outside_attachments(p))}
    assert found == {}


def test_the_attachment_check_catches_the_old_forms(tmp_path):
    old = tmp_path / "setup.py"
    old.write_text("def attach(watch, hub_watch, stall):\n    watch.stall = stall\n    hub_watch.straggler = 1\n")
    assert [line for line, _ in _outside_attachments(old)] == [2, 3]


def test_a_status_answer_with_stacks_does_not_hold_the_thread_that_reads_node_0s_connections():
    """That thread is the heartbeat's while the job runs: every rank's stacks took it ~10 s (node 0's own
    ranks dumping theirs, the others answering), against the 10 s after which a node counts node 0 lost."""
    hub = Hub(0, TOKEN, fp(0), lambda line: None)
    port = hub.sock.getsockname()[1]
    asked_on = []

    def slow_ranks(stacks=False):
        asked_on.append((threading.current_thread().name, stacks))
        time.sleep(3.0 if stacks else 0.0)
        return {"ranks": [], "stall": None, "stragglers": []}

    hub.show_ranks(slow_ranks)
    answers = []
    client = threading.Thread(target=lambda: answers.append(
        ask_status("127.0.0.1", port, "trainer", TOKEN, timeout_s=20, stacks=True)), daemon=True)
    client.start()
    held = 0.0
    try:
        until = time.monotonic() + 20
        while not answers and time.monotonic() < until:  # this thread plays the heartbeat's: node 0's one loop
            accept, ready = hub.board.wait(0.1)
            if accept:
                hub.accept()
            for peer in ready:
                if peer.fp is None:
                    started = time.monotonic()
                    hub.read_hello(peer)
                    held = max(held, time.monotonic() - started)
    finally:
        client.join(20)
        hub.sock.close()
    assert answers and answers[0]["t"] == "status" and "ranks" in answers[0]
    assert asked_on and asked_on[0][1] is True and asked_on[0][0] != threading.current_thread().name
    assert held < 1.0, held


def _late_node(port, probe_port):
    """A node checking in after the start whose connect-back port takes the connection and never answers (node 0's
    connect-back runs out its PROBE_TIMEOUT_S, 3 s); its channel, once its hello is sent."""
    from nodeweave.entrypoint.checkin.wire import connect, proof

    late = connect("127.0.0.1", port, 5.0, 1 << 20)
    challenge = late.receive(time.monotonic() + 5)
    hello = fp(5, address="127.0.0.1", probe_port=probe_port)
    late.send({"t": "hello", "job": "trainer", "fp": hello, "mac": proof(TOKEN, str(challenge.get("nonce")), hello)})
    return late


def _connecting_back(hub_watch, limit=10):
    """Until node 0 read the late node's hello and its connect-back is under way (``settling``)."""
    deadline = time.monotonic() + limit
    while not hub_watch.settling:
        assert time.monotonic() < deadline, "node 0 never began the late node's connect-back"
        time.sleep(0.02)


def test_a_node_checking_in_late_does_not_hold_node_0s_heartbeat_while_node_0_connects_back():
    """Node 0's heartbeat thread waited for a late node's connect-back (up to 3 s per node: a spare or a restarted
    container checking in mid-generation) and read nothing meanwhile: a node's failure reported then was relayed
    only after it. The late node is judged once its connect-back is over, from the same loop."""
    import socket

    from loopback_hub import started_watches

    silent = socket.create_server(("127.0.0.1", 0))
    cluster, hub_watch, links, launchers, logs = started_watches(2)
    late = None
    try:
        late = _late_node(cluster.port, silent.getsockname()[1])
        _connecting_back(hub_watch)
        failed = time.monotonic()
        assert links[1].finish(1, "torchrun exited 1", ["boom"]) is None
        assert launchers[2].stopped.wait(10), logs
        relayed = time.monotonic() - failed
        verdict = late.receive(time.monotonic() + 10)
        told = time.monotonic() - failed
    finally:
        if late is not None:
            late.close()
        silent.close()
        cluster.close()
    assert relayed < 1.5, relayed  # was 3.7 s: the connect-back timing out (3 s from when node 0 connected)
    assert verdict["t"] == "verdict" and verdict["verdict"]["decision"] == "refuse", verdict
    assert [p["check"] for p in verdict["verdict"]["problems"]] == ["late"] and told >= 2.0, told


def test_a_node_still_checking_in_when_node_0s_watch_ends_is_told_before_the_hub_closes():
    import socket

    from loopback_hub import started_watches

    silent = socket.create_server(("127.0.0.1", 0))
    cluster, hub_watch, links, launchers, logs = started_watches(1)
    late = None
    try:
        late = _late_node(cluster.port, silent.getsockname()[1])
        _connecting_back(hub_watch)
        assert links[1].finish(0, "torchrun exited 0", []) is None
        assert hub_watch.finish(0, "torchrun exited 0", []) is None
        verdict = late.receive(time.monotonic() + 10)  # not a bare close: a fixed job's latecomer is refused
    finally:
        if late is not None:
            late.close()
        silent.close()
        cluster.close()
    assert verdict["t"] == "verdict" and verdict["verdict"]["decision"] == "refuse", verdict
    assert hub_watch.settling == []


def test_nodes_reporting_their_exit_do_not_hold_node_0s_heartbeat_while_their_connections_close():
    """Node 0's heartbeat thread let go of each node that reported its exit by waiting up to 0.5 s for that node to
    close its connection, one node after the other, reading nothing meanwhile: six nodes slow to close held a
    failure's relay 3 s. They are let go of in the loop itself (``Switchboard.let_go``)."""
    from loopback_hub import Cluster, Launcher

    from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch

    cluster = Cluster(7)
    assert cluster.decide()["decision"] == "start"
    logs = []
    hub_watch = HubWatch(cluster.hub, logs.append)
    failing = LinkWatch(cluster.channels[7], logs.append)
    launchers = {0: Launcher(), 7: Launcher()}
    hub_watch.start(launchers[0].stop)
    failing.start(launchers[7].stop)
    try:
        for rank in range(1, 7):  # finished, and slow to close their connections (a loaded node)
            cluster.channels[rank].send({"t": "exit", "code": 0, "how": "torchrun exited 0", "tail": []})
        time.sleep(0.2)
        failed = time.monotonic()
        assert failing.finish(1, "torchrun exited 1", ["boom"]) is None
        assert launchers[0].stopped.wait(10), logs
        relayed = time.monotonic() - failed
        done = [peer.done for peer in cluster.hub.peers if (peer.fp or {}).get("rank") in range(1, 7)]
    finally:
        cluster.close()
    assert relayed < 1.0, relayed
    assert len(done) == 6 and all(d and d["code"] == 0 for d in done), done


def _watch_reads(path):
    """(line, name) for each name read off a watch in ``path``: ``watch.x``, ``self.watch.x``, ``getattr(watch, "x")``
    (a watch: a name or attribute called ``*watch``)."""
    def is_watch(node):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        return name.lower().endswith("watch")

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and is_watch(node.value):
            found.append((node.lineno, node.attr))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) >= 2 and \
                is_watch(node.args[0]) and isinstance(node.args[1], ast.Constant):
            found.append((node.lineno, node.args[1].value))
    return sorted(found)


def test_metrics_reads_node_0s_watch_only_through_its_declared_reading():
    """Was: the recorder read the watch's own stop state (``watch.failed_at``, ``watch.failure``, ``watch.thread``
    ``.is_alive()``, ``watch.own_done.is_set()``); it asks ``fault()`` and ``over()`` (``surface.HubReading``)."""
    from nodeweave.entrypoint.stall.surface import READABLE

    found = {str(p.relative_to(ENTRYPOINT)): hits for p in sorted((ENTRYPOINT / "metrics").glob("*.py"))
             if (hits := [(line, name) for line, name in _watch_reads(p) if name not in READABLE])}
    assert found == {}
    assert set(READABLE) == {"clock", "hub", "stall", "node_gpus", "fault", "over"}


def test_the_reading_check_catches_the_old_forms(tmp_path):
    from nodeweave.entrypoint.stall.surface import READABLE

    old = tmp_path / "live.py"
    old.write_text("def tick(self, watch):\n    if watch.failed_at and self.watch.thread.is_alive():\n"
                   "        return getattr(watch, 'own_done', None), watch.fault()\n")
    assert sorted(hit for hit in _watch_reads(old) if hit[1] not in READABLE) == [(2, "failed_at"), (2, "thread"),
                                                                            (3, "own_done")]


def test_node_0s_watch_says_its_failure_and_its_end_when_asked():
    from loopback_hub import started_watches

    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        assert hub_watch.fault() is None and not hub_watch.over()
        before = time.time()
        assert links[1].finish(1, "torchrun exited 1", ["boom"]) is None
        assert launchers[0].stopped.wait(10), logs
        at, label = hub_watch.fault()
        assert before <= at <= time.time() and label.startswith("node 1 ")
        assert not hub_watch.over()  # a failed generation is never "over" cleanly
    finally:
        cluster.close()
    cluster, hub_watch, links, launchers, logs = started_watches(1)
    try:
        assert links[1].finish(0, "torchrun exited 0", []) is None
        assert hub_watch.finish(0, "torchrun exited 0", []) is None
        assert hub_watch.over() and hub_watch.fault() is None
    finally:
        cluster.close()


def test_node_0_without_a_training_slot_finishes_when_a_member_fails_under_recovery():
    """Node 0 whose training slot went to a spare only watches (``recovery/hub._hub_only``). It waited for the
    heartbeat's thread to end, and under recovery that thread reads on after a failure (the hear-back that
    ``finish`` runs): a member failing in such a generation held node 0, and the whole job, for ever."""
    from loopback_hub import Cluster, Launcher

    from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch
    from nodeweave.entrypoint.errors import EXIT_PEER_FAILED

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    logs = []
    hub_watch = HubWatch(cluster.hub, logs.append, hear_back=True)
    member = LinkWatch(cluster.channels[1], logs.append)
    member.start(Launcher().stop)
    returned = []
    watching = threading.Thread(target=lambda: returned.append(hub_watch.watch_only()), daemon=True)
    try:
        watching.start()
        time.sleep(0.5)
        assert member.finish(1, "torchrun exited 1", ["PermissionError: [Errno 13] Permission denied"]) is None
        watching.join(20)
    finally:
        cluster.close()
    assert returned == [EXIT_PEER_FAILED], logs
    assert hub_watch.fault()[1].startswith("node 1 ")


def _outside_reads(root):
    """Names read off a watch outside the watch's own modules (checkin/heartbeat.py, stall/) that are neither
    a method of a watch nor in the declared reading: each is a watch's inner state reached into."""
    from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch
    from nodeweave.entrypoint.stall.local import LocalWatch
    from nodeweave.entrypoint.stall.surface import READABLE

    methods = {name for cls in (LinkWatch, HubWatch, LocalWatch) for name in dir(cls)
               if not name.startswith("_") and callable(getattr(cls, name))}
    own = {"checkin/heartbeat.py"} | {f"stall/{p.name}" for p in (root / "stall").glob("*.py")}
    return {str(p.relative_to(root)): hits for p in sorted(root.rglob("*.py")) if str(p.relative_to(root)) not in own
            and (hits := [(line, name) for line, name in _watch_reads(p) if name not in methods | set(READABLE)])}


def test_nothing_outside_the_watch_reads_its_thread_failure_or_state():
    """Was: the supervisor read ``watch.thread`` to start or attach, a spare joined ``watch.thread`` and read
    ``watch.closing``, recovery's straggler seam read ``watch.failure``; each asks a method now (``launch_with``,
    ``sit_out``, ``fault``)."""
    assert _outside_reads(ENTRYPOINT) == {}


def test_the_outside_read_check_catches_the_old_forms(tmp_path):
    (tmp_path / "stall").mkdir()
    (tmp_path / "recovery").mkdir()
    (tmp_path / "recovery" / "node.py").write_text("def f(watch):\n    watch.thread.join()\n    if watch.closing:\n"
                                                   "        return watch.failure, watch.sit_out()\n")
    assert _outside_reads(tmp_path) == {"recovery/node.py": [(2, "thread"), (3, "closing"), (4, "failure")]}
