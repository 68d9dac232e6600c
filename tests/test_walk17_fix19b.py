"""walk17b's rows B5, B10, B12, one class: node 0's picture of the job (--status, /status.json, /metrics) has
exactly one row per node, keyed by node, whatever happened to it (``news.roster``). Real entrypoint processes,
each its own TMPDIR, as tests/test_walk16_fix18f.py runs them."""

import json
import os
import signal
import sys
import time

import pytest

import cli_run
from free_ports import free_port, free_port_pair
from test_walk13_fix13a import SCRIPT, _end, _get, _series, _until

pytest.importorskip("torch")


def _job(tmp_path, job, timeout="120"):
    """(start(rank), metrics port, env): a recovery job of 2 nodes and 1 spare on loopback."""
    (tmp_path / "wait.py").write_text(SCRIPT)
    port, metrics = free_port_pair(), free_port()
    env = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": cli_run.home_beside(tmp_path),
           "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": job,
           "NODEWEAVE_WAIT_TIMEOUT": timeout, "NODEWEAVE_MASTER_PORT": str(port),
           "NODEWEAVE_METRICS_PORT": str(metrics), "NODEWEAVE_STALL_WARN": "0", "OMP_NUM_THREADS": "1",
           "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_CHECKPOINT_DIR": str(tmp_path / "ck")}

    def start(rank):
        (tmp_path / f"t{rank}").mkdir(exist_ok=True)
        return cli_run.popen([*cli_run.ENTRYPOINT, "--nproc-per-node", "1", "--", "wait.py"], cwd=tmp_path,
                             stdout=-1, stderr=-2, env=dict(env, NODE_RANK=str(rank),
                                                             TMPDIR=str(tmp_path / f"t{rank}")))

    return start, metrics, env


def _status(tmp_path, env):
    answer = cli_run.entrypoint("--status", env=dict(env, NODE_RANK="0", TMPDIR=str(tmp_path / "t0")),
                                cwd=str(tmp_path))
    assert answer.returncode == 0, answer.stdout + answer.stderr
    return json.loads(answer.stdout)


def _ups(metrics, node):
    return {labels: value for labels, value in _series(_get(metrics, "/metrics"), "nodeweave_node_up").items()
            if f'node="{node}"' in labels}


def _one_row_each(live, answer, nodes):
    """Every view lists each node once: /status.json's nodes, --status' nodes and its summary's count."""
    assert sorted(n["node"] for n in live["nodes"]) == list(range(nodes)), live["nodes"]
    assert sorted((n.get("fp") or {}).get("rank") for n in answer["nodes"]) == list(range(nodes)), answer["nodes"]
    assert answer["summary"]["nodes"] == nodes, answer["summary"]


def test_a_lost_node_keeps_who_it_was_in_every_view(tmp_path):
    """B5: node 1's entrypoint killed, left out, its spare training: its row and series lost its host name (`host`
    None, the series' `host` label gone); they keep it, as last seen, and its address."""
    start, metrics, env = _job(tmp_path, "b5")
    procs = [start(rank) for rank in range(3)]
    try:
        before = _until(metrics, lambda doc: doc.get("phase") == "running" and len(doc.get("nodes") or []) == 3,
                        what="the job running")
        host = {n["node"]: n["host"] for n in before["nodes"]}[1]
        assert host, before["nodes"]
        procs[1].kill()
        live = _until(metrics, lambda doc: (doc.get("book") or {}).get("generation") == 1
                      and doc.get("phase") == "running", limit=120, what="generation 1 running")
        row = {n["node"]: n for n in live["nodes"]}[1]
        assert (row["state"], row["host"]) == ("lost", host), live["nodes"]
        [(labels, value)] = _ups(metrics, 1).items()
        assert value == 0 and f'host="{host}"' in labels and 'state="lost"' in labels, labels
        answer = _status(tmp_path, env)
        _one_row_each(live, answer, 3)
        [lost] = [n for n in answer["nodes"] if (n.get("fp") or {}).get("rank") == 1]
        assert lost["state"].startswith("lost: node 1") and lost["fp"].get("hostname") == host and lost["seen"], lost
        [brief] = [n for n in answer["summary"]["worst"] if n["node"] == 1]
        assert brief["hostname"] == host and brief["seen"], answer["summary"]
    finally:
        _end(tmp_path, procs)


def test_a_spare_that_never_checked_in_stays_a_row_missing(tmp_path):
    """B10: the spare (node 2) never started; once generation 0 ran without it, it was in no view (`nodes: 2`, no
    series); it stays a row, `missing`, role spare, nodeweave_node_up 0, so an alert on lost protection fires."""
    start, metrics, env = _job(tmp_path, "b10", timeout="6")
    procs = [start(rank) for rank in range(2)]
    try:
        live = _until(metrics, lambda doc: doc.get("phase") == "running" and (doc.get("book") or {}).get("members") == [0, 1],
                      limit=120, what="generation 0 running without its spare")
        row = {n["node"]: n for n in live["nodes"]}.get(2)
        assert row and (row["state"], row["role"]) == ("missing", "spare"), live["nodes"]
        [(labels, value)] = _ups(metrics, 2).items()
        assert value == 0 and 'state="missing"' in labels and 'role="spare"' in labels, labels
        answer = _status(tmp_path, env)
        _one_row_each(live, answer, 3)
        assert answer["summary"]["states"].get("missing") == 1, answer["summary"]
        from nodeweave.doctor.cluster import from_status  # doctor --cluster lists it, judges only nodes that came

        view = from_status(answer, "node 0")  # no fingerprint to compare: said missing, never "nodes disagree"
        assert len(view.nodes) == 3 and {f.code for f in view.findings} <= {"cluster-missing"}, view.findings
    finally:
        _end(tmp_path, procs)


def test_a_node_lost_and_back_has_one_row_not_its_stale_lost_one_beside_it(tmp_path):
    """B12: a spare killed and started again was listed twice (`failed` and `spare (waiting)`, a node_up 0 beside a
    node_up 1); node 0 silent past the heartbeat, left out, woken as the hub was too (`running` and `lost`). One row
    each: the live one, no node_up 0 for a node that answers, `nodes: 3`."""
    start, metrics, env = _job(tmp_path, "b12")
    procs = [start(rank) for rank in range(3)]
    try:
        _until(metrics, lambda doc: doc.get("phase") == "running" and len(doc.get("nodes") or []) == 3,
               what="the job running")
        procs[2].kill()  # the spare's pod deleted ...
        procs[2].communicate(timeout=30)
        _until(metrics, lambda doc: any(n["node"] == 2 and n["state"] != "spare (waiting)" for n in doc["nodes"]),
               what="the spare's end heard")
        procs[2] = start(2)  # ... and started again, as its StatefulSet would
        live = _until(metrics, lambda doc: [n["state"] for n in doc["nodes"] if n["node"] == 2]
                      == ["spare (waiting)"], limit=60, what="the spare back, one row")
        assert list(_ups(metrics, 2).values()) == [1.0], _ups(metrics, 2)
        _one_row_each(live, _status(tmp_path, env), 3)

        procs[0].send_signal(signal.SIGSTOP)  # node 0 silent past the heartbeat: the others declare it lost
        time.sleep(16)
        procs[0].send_signal(signal.SIGCONT)
        live = _until(metrics, lambda doc: (doc.get("book") or {}).get("generation") == 1
                      and doc.get("phase") == "running", limit=120, what="generation 1 running")
        rows = [n for n in live["nodes"] if n["node"] == 0]
        # left out of training, it waits as any node sitting a generation out does (walk18b B7)
        assert [(n["state"], n["role"]) for n in rows] == [("left out (waiting)", "hub, left out")], live["nodes"]
        assert list(_ups(metrics, 0).values()) == [1.0], _ups(metrics, 0)
        answer = _status(tmp_path, env)
        _one_row_each(live, answer, 3)
        assert "lost" not in answer["summary"]["states"], answer["summary"]
    finally:
        procs[0].send_signal(signal.SIGCONT)
        _end(tmp_path, procs)
