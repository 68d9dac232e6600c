"""fix13a: node 0's live picture while it still gathers (walk12b row B13, issue 43).

With 2 training nodes and a spare not started yet, node 0 gathered for up to wait_timeout while its metrics port
refused every connection: `top --url` said "nothing listens there ... is node 0 running", though
`nodeweave-entrypoint --status` answered `"phase": "gathering"`, `"waiting": {"expected": 3, "not_in": [2], ...}`.
Node 0 now serves /metrics and /status.json from its first gather on, the check-in in them (``phase``,
``waiting``, the nodes not in; ``nodeweave_checkin_*`` gauges), and `top`, the dashboard's header and
`--node live` show it; recovery's regather shows the same way. Each test fails on the code before the change.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request

import cli_run
import pytest

from cli_run import ENTRYPOINT, home_beside, popen
from free_ports import free_port, free_port_pair

# rank 0 waits for a file the test writes, so a node trains for as long as the test looks at it, then finishes
SCRIPT = ("import os, time\nprint('step 1 loss 0.5', flush=True)\n"
          "while not os.path.exists('go'):\n    time.sleep(0.2)\n")


def _job(tmp_path, nnodes, spares=0):
    """(start(rank), metrics port): entrypoint processes of one job on loopback, node i with TMPDIR t<i>."""
    (tmp_path / "wait.py").write_text(SCRIPT)
    port, metrics = free_port_pair(), free_port()
    base = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": home_beside(tmp_path),
            "NODEWEAVE_NNODES": str(nnodes), "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": "b13",
            "NODEWEAVE_WAIT_TIMEOUT": "120", "NODEWEAVE_MASTER_PORT": str(port),
            "NODEWEAVE_METRICS_PORT": str(metrics), "NODEWEAVE_EXCHANGE_ALLOW": "address",
            "NODEWEAVE_STALL_WARN": "0", "OMP_NUM_THREADS": "1"}
    if spares:
        base.update(NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES=str(spares),
                    NODEWEAVE_CHECKPOINT_DIR=str(tmp_path / "ck"))

    def start(rank):
        (tmp_path / f"t{rank}").mkdir(exist_ok=True)
        return popen([*ENTRYPOINT, "--nproc-per-node", "1", "--", "wait.py"], cwd=tmp_path, stdout=-1, stderr=-2,
                     env=dict(base, NODE_RANK=str(rank), TMPDIR=str(tmp_path / f"t{rank}")))

    return start, metrics


def _get(metrics, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics}{path}", timeout=5) as answer:
        return answer.read().decode()


def _until(metrics, wanted, limit=90, what=""):
    """node 0's /status.json once ``wanted(it)`` holds; fails naming the last answer (or why none came)."""
    last = None
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            last = json.loads(_get(metrics, "/status.json"))
            if wanted(last):
                return last
        except OSError as err:
            last = f"no answer: {err}"
        time.sleep(0.3)
    raise AssertionError(f"{what}: not within {limit}s; last: {last}")


def _end(tmp_path, procs, timeout=120):
    """Let the ranks finish; every node's (exit code, output)."""
    (tmp_path / "go").write_text("")
    out = []
    for proc in procs:
        try:
            text = proc.communicate(timeout=timeout)[0]
        except Exception:  # noqa: BLE001 - a node still up is killed, its output kept
            proc.kill()
            text = proc.communicate(timeout=30)[0]
        out.append((proc.returncode, text))
    return out


def _series(text, name):
    """{labels text: value} of the family ``name`` in Prometheus' text format."""
    found = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            labels, _, value = line.rpartition(" ")
            found[labels[len(name):]] = float(value)
    return found


def test_node_0s_picture_answers_while_it_gathers_and_names_the_missing_node(tmp_path):
    """B13 without recovery: node 0 of a 2-node job, node 1 not started. /status.json says `gathering`, node 1 not
    in and the seconds left; /metrics says the same in gauges; `top --url --once` draws it (exit 0, not "nothing
    listens there"). Once node 1 comes, the picture is the training's: `running`, both nodes running."""
    start, metrics = _job(tmp_path, 2)
    procs = [start(0)]
    try:
        live = _until(metrics, lambda doc: doc.get("phase") == "gathering", what="node 0's picture while gathering")
        waiting = live["waiting"]
        assert waiting["expected"] == 2 and waiting["checked_in"] == 1 and waiting["not_in"] == [1], waiting
        assert 0 < waiting["deadline_in_s"] <= 120 and waiting["regather"] is False, waiting
        states = {n["node"]: n["state"] for n in live["nodes"]}
        assert states == {0: "gathering", 1: "not checked in"}, live["nodes"]
        assert live["goodput"]["buckets"]["idle"] == 0 and live["goodput"]["buckets"]["startup"] > 0, live["goodput"]

        scraped = _get(metrics, "/metrics")
        assert list(_series(scraped, "nodeweave_checkin_gathering").values()) == [1.0], scraped
        assert list(_series(scraped, "nodeweave_checkin_nodes_expected").values()) == [2.0], scraped
        assert list(_series(scraped, "nodeweave_checkin_nodes_in").values()) == [1.0], scraped
        missing = _series(scraped, "nodeweave_checkin_node_missing")
        assert len(missing) == 1 and 'node="1"' in next(iter(missing)), missing
        left = list(_series(scraped, "nodeweave_checkin_deadline_seconds").values())
        assert len(left) == 1 and 0 < left[0] <= 120, left

        top = cli_run.nodeweave("top", "--url", f"http://127.0.0.1:{metrics}", "--once", cwd=str(tmp_path),
                                env=dict(cli_run.CLEAN, HOME=home_beside(tmp_path)), timeout=120)
        assert top.returncode == 0, top.stdout + top.stderr
        assert "gathering: waiting for node 1, " in top.stdout and "s left (1 of 2 nodes in)" in top.stdout, top.stdout
        assert "not checked in" in top.stdout, top.stdout

        live_answer = cli_run.entrypoint("--node", "live", "--port", str(metrics), env=dict(cli_run.CLEAN))
        assert live_answer.returncode == 0, live_answer.stdout + live_answer.stderr
        assert json.loads(live_answer.stdout.strip().splitlines()[-1])["live"]["waiting"]["not_in"] == [1]

        procs.append(start(1))
        live = _until(metrics, lambda doc: doc.get("phase") == "running", what="node 0's picture once node 1 came")
        assert live["waiting"] is None, live
        assert [(n["node"], n["state"]) for n in live["nodes"]] == [(0, "running"), (1, "running")], live["nodes"]
        scraped = _get(metrics, "/metrics")
        assert list(_series(scraped, "nodeweave_checkin_gathering").values()) == [0.0], scraped
        assert not _series(scraped, "nodeweave_checkin_node_missing"), scraped
    finally:
        ended = _end(tmp_path, procs)
    assert [code for code, _ in ended] == [0] * len(procs), ended
    node_0 = ended[0][1]
    said = [line for line in node_0.splitlines() if "metrics: Prometheus' /metrics on port" in line]
    assert len(said) == 1, node_0  # the server started once, at the gather, not again at the watch
    assert node_0.index(said[0]) < node_0.index("check-in: 2 node(s) agree"), node_0


def test_a_spare_not_come_yet_is_named_in_the_picture_under_recovery(tmp_path):
    """B13 as the walk ran it: 2 training nodes and a spare under recovery, the spare not started. /status.json
    says node 0 waits for node 2 with node 1 checked in (not "running": its launcher waits for the verdict), as
    `--status` now says too; once the spare comes, generation 0 trains with it waiting as a spare."""
    start, metrics = _job(tmp_path, 2, spares=1)
    procs = [start(0), start(1)]
    try:
        live = _until(metrics, lambda doc: doc.get("phase") == "gathering" and doc["waiting"]["checked_in"] == 2,
                      what="node 0's picture with node 1 in")
        assert live["waiting"]["expected"] == 3 and live["waiting"]["not_in"] == [2], live["waiting"]
        states = {n["node"]: n["state"] for n in live["nodes"]}
        assert states == {0: "gathering", 1: "checked in", 2: "not checked in"}, live["nodes"]

        from nodeweave.cluster.dashboard import motion

        said = motion(live)
        assert said["kind"] == "wait" and said["said"].startswith("gathering: waiting for node 2, "), said

        procs.append(start(2))
        live = _until(metrics, lambda doc: doc.get("phase") == "running", what="generation 0 once the spare came")
        states = {n["node"]: n["state"] for n in live["nodes"]}
        assert states == {0: "running", 1: "running", 2: "spare (waiting)"}, live["nodes"]
        assert (live["book"] or {}).get("generation") == 0, live["book"]
    finally:
        ended = _end(tmp_path, procs)
    assert [code for code, _ in ended] == [0, 0, 0], ended


def _regathering_hub():
    """Node 0's hub of a regather for generation N+1: nodes 1 and 2 expected back, node 1 in (real Hub objects,
    as ``Hub.gather`` leaves them while it waits)."""
    from nodeweave.entrypoint.checkin.exchange import Hub, Peer

    hub = Hub.__new__(Hub)
    hub.own_fp, hub.verdict, hub.live_status, hub.clock = {"rank": 0, "hostname": "n0", "job": "b13"}, None, None, \
        lambda: 100.0
    hub.gone_after_abort = {}
    peer = Peer(None, b"", 0.0)
    peer.fp, peer.seen = {"rank": 1, "hostname": "n1"}, ""
    hub.peers = [peer]
    hub.gathering = (3, 155.0, {1, 2})
    return hub


def test_a_recovery_regather_shows_the_same_way():
    """A regather after a fault showed the ended generation's nodes (failed, lost) and no word of the wait: the
    picture is the regather's, whom node 0 waits for to check in again and how long."""
    from nodeweave.cluster.dashboard import motion
    from nodeweave.entrypoint.metrics import collect
    from nodeweave.entrypoint.metrics.live import Live

    class Settings:
        env = {}

        def get(self, key, default=None):
            return {"metrics": False}.get(key, default)

    state = Live(Settings(), lambda line: None)
    hub = _regathering_hub()
    state.gathering(hub)
    doc = json.loads(json.dumps(collect.status(state)))
    assert doc["phase"] == "gathering" and doc["waiting"] == {"expected": 2, "checked_in": 1, "not_in": [2],
                                                              "deadline_in_s": 55.0, "regather": True}, doc
    assert [(n["node"], n["state"]) for n in doc["nodes"]] == [(0, "gathering"), (1, "checked in"),
                                                               (2, "not checked in")], doc["nodes"]
    assert motion(doc) == {"said": "regathering: waiting for node 2 to check in again, 55 s left (1 of 2 nodes in)",
                           "kind": "wait"}
    text = "\n".join(f"{name} {samples}" for name, _, _, samples in collect.families(state, now=time.time()))
    assert "nodeweave_checkin_gathering [({'job_name': 'b13'}, 1)]" in text, text
    hub.verdict = {"decision": "start", "rows": []}  # announced: the generation starts, the wait is over
    doc = collect.status(state)
    assert doc["phase"] == "starting" and doc["waiting"] is None, doc


def test_status_says_a_node_in_is_checked_in_while_node_0_gathers():
    """`--status` called node 1, waiting at its check-in for the verdict, `running` beside node 0 `gathering`
    (the walk's B13 picture): checked in, and its `waiting` the same object /status.json carries."""
    hub = _regathering_hub()
    hub.gathering = (3, 160.0, None)
    answer = hub.status(whole=True)
    assert [n["state"] for n in answer["nodes"]] == ["gathering", "checked in"], answer["nodes"]
    assert answer["waiting"] == {"expected": 3, "checked_in": 2, "not_in": [2], "deadline_in_s": 60.0,
                                 "regather": False}, answer
