"""walk16b's rows, one test per class, on real entrypoint processes (tests/recovery_harness.py)."""

import json
import signal

import pytest

from job_records import job_record
from recovery_harness import finish, start, wait_for_step

pytest.importorskip("torch")


def kept(tmp_path, node):
    return json.loads(job_record(tmp_path / f"n{node}").read_text())


def last_line(node):
    lines = [line for line in node.text().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def test_every_nodes_kept_book_says_how_the_job_ended_whatever_its_role(tmp_path):
    """walk16b B4, B12: a member's copy kept "start" after the job finished, a Ctrl-C'd node 0's "stopped" with no
    code and no words; each node's last line says how the job ended."""
    (tmp_path / "done").mkdir()
    nodes = start(tmp_path / "done",
                  ["--steps", "10", "--interval", "0.2", "--save-every", "5"], spares=1)
    assert finish(nodes) == [0, 0, 0], [n.text() for n in nodes]
    for node, role in ((0, "member"), (1, "member"), (2, "spare")):
        book = kept(tmp_path / "done", node)
        assert (book["decision"], book["code"], book["ended"], book["role"]) == (
            "done", 0, "the job finished", role), (node, book)
        assert book["finished"] is not None
        assert "recovery: the job finished" in last_line(nodes[node]), nodes[node].text()

    (tmp_path / "stop").mkdir()
    nodes = start(tmp_path / "stop", ["--steps", "400", "--interval", "0.2", "--save-every", "5"])
    wait_for_step(nodes[0], 3)
    nodes[0].proc.send_signal(signal.SIGINT)  # Ctrl-C on node 0: the job ends on every node
    codes = finish(nodes)
    assert codes[0] == 130, nodes[0].text()
    zero, one = kept(tmp_path / "stop", 0), kept(tmp_path / "stop", 1)
    assert (zero["decision"], zero["code"], zero["ended"]) == ("stopped", 130, "stopped by SIGINT, Ctrl-C on node 0")
    assert "recovery: the job ends: stopped by SIGINT, Ctrl-C on node 0; this node exits 130" in last_line(nodes[0])
    if one["decision"] == "stop":  # its ranks failed of node 0's stop before the stop's news came (a loaded
        # machine): it checked in again and node 0's book told it a person stopped node 0 (decide.stopped_by_person)
        assert one["code"] == codes[1] and one["ended"].startswith("node 0 was stopped (Ctrl-C)"), one
        return
    assert (one["decision"], one["code"]) == ("stopped", codes[1]), one
    assert one["ended"].startswith("node 0 (") and "SIGINT" in one["ended"], one
    assert "recovery: the job ends: node 0 (" in last_line(nodes[1]), nodes[1].text()


def test_hints_name_only_what_follows(monkeypatch):
    """walk16b B2, B10: --node stop's refusal said every node's SIGTERM is an eviction the others wait for (only
    node 0's is); a node node 0 declared lost for its own pause said it waited "for node 0 to come back (its
    restart policy)", though node 0 never left."""
    import re
    import time

    from loopback_hub import Cluster, Launcher
    from nodeweave.entrypoint import nodeinfo
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch

    refusal = nodeinfo.main_run_error([{"pid": 2333, "main": False}])
    assert "kill -TERM 2333" in refusal
    assert "node 0's SIGTERM is read as an eviction" in refusal and "goes on without it" in refusal, refusal
    assert "read one node's SIGTERM" not in refusal, refusal

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    log, launcher, jump = [], Launcher(), [0.0]
    link = LinkWatch(cluster.channels[1], log.append, clock=lambda: time.monotonic() + jump[0], recovery=True,
                     hub_wait_s=40)
    link.start(launcher.stop)
    try:
        time.sleep(1.0)
        jump[0] = 20.0  # this node was stopped for 20 s; node 0, which declared it lost, closed its channel
        cluster.hub.close()
        assert launcher.stopped.wait(20), log
        time.sleep(0.2)
    finally:
        link.close()
        cluster.close()
    said = next(line for line in log if line.startswith("this node was declared lost by node 0 ("))
    assert re.search(r"node 0 itself may be fine; stopping this node's launcher for recovery: checking in with "
                     r"node 0 again \(up to 40s, wait_timeout\)", said), said
    assert "come back" not in said, said


def test_one_launcher_ending_is_said_with_one_exit_code_on_every_node(tmp_path):
    """walk16b B3: node 1, sent SIGTERM, said "this node's launcher ended (exit 143)" while node 0 said of the same
    end "torchrun exited 1 after SIGTERM": the launcher's end in the same words everywhere, the node's own exit
    code apart."""
    import re

    nodes = start(tmp_path, ["--steps", "60", "--interval", "0.2", "--save-every", "5"], spares=1)
    wait_for_step(nodes[0], 3)
    nodes[1].proc.send_signal(signal.SIGTERM)  # node 1 leaves; its spare takes its place
    codes = finish(nodes)
    assert codes == [0, 143, 0], [n.text() for n in nodes]
    own = re.search(r"stopped on SIGTERM: this node's launcher ended \((torchrun exited \d+ after SIGTERM); "
                    r"this node exits 143\)", nodes[1].text())
    assert own, nodes[1].text()
    assert f"node 1 (" in nodes[0].text() and f"was stopped (SIGTERM): {own.group(1)}" in nodes[0].text(), \
        nodes[0].text()
    [fault] = kept(tmp_path, 0)["history"]
    assert own.group(1) in fault["why"], fault
    book = kept(tmp_path, 1)  # node 1's own copy: it stopped, the job went on (class 1)
    assert (book["decision"], book["code"], book["ended"]) == ("stopped", 143, "stopped by SIGTERM on node 1"), book
    assert "node 0 decides what follows" in last_line(nodes[1]), nodes[1].text()


def test_a_lost_node_left_out_stays_in_what_the_job_shows(tmp_path):
    """walk16b B9: a node lost and left out (its spare training in its place) was in no count and no row of node 0's
    --status, no /status.json row and no /metrics series; it stays there: `lost`, nodeweave_node_up 0."""
    import os
    import sys

    import cli_run
    from free_ports import free_port, free_port_pair
    from test_walk13_fix13a import SCRIPT, _end, _get, _series, _until

    (tmp_path / "wait.py").write_text(SCRIPT)
    port, metrics = free_port_pair(), free_port()
    env = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": cli_run.home_beside(tmp_path),
           "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": "b9",
           "NODEWEAVE_WAIT_TIMEOUT": "120", "NODEWEAVE_MASTER_PORT": str(port), "NODEWEAVE_METRICS_PORT": str(metrics),
           "NODEWEAVE_STALL_WARN": "0", "OMP_NUM_THREADS": "1", "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1",
           "NODEWEAVE_CHECKPOINT_DIR": str(tmp_path / "ck")}
    procs = []
    for rank in range(3):
        (tmp_path / f"t{rank}").mkdir()
        procs.append(cli_run.popen([*cli_run.ENTRYPOINT, "--nproc-per-node", "1", "--", "wait.py"], cwd=tmp_path,
                                   stdout=-1, stderr=-2, env=dict(env, NODE_RANK=str(rank),
                                                                   TMPDIR=str(tmp_path / f"t{rank}"))))
    try:
        _until(metrics, lambda doc: doc.get("phase") == "running", what="the job running")
        procs[1].kill()  # node 1's entrypoint: the node is gone
        live = _until(metrics, lambda doc: (doc.get("book") or {}).get("generation") == 1
                      and doc.get("phase") == "running", limit=120, what="generation 1 running")
        rows = {n["node"]: n for n in live["nodes"]}
        assert rows[1]["state"] == "lost" and rows[1]["role"] == "left out", live["nodes"]
        assert isinstance(rows[1]["heartbeat_age_s"], float), rows[1]
        scraped = _get(metrics, "/metrics")
        up = {labels: value for labels, value in _series(scraped, "nodeweave_node_up").items() if 'node="1"' in labels}
        assert list(up.values()) == [0.0] and 'state="lost"' in next(iter(up)), scraped
        assert [k for k in _series(scraped, "nodeweave_node_heartbeat_age_seconds") if 'node="1"' in k], scraped
        status = cli_run.entrypoint("--status", env=dict(env, NODE_RANK="0", TMPDIR=str(tmp_path / "t0")),
                                    cwd=str(tmp_path))
        assert status.returncode == 0, status.stdout + status.stderr
        answer = json.loads(status.stdout)
        assert answer["summary"]["nodes"] == 3 and answer["summary"]["states"].get("lost") == 1, answer["summary"]
        [row] = [n for n in answer["nodes"] if (n.get("fp") or {}).get("rank") == 1]
        assert row["state"].startswith("lost: node 1") and row["silent_s"] is not None, row
    finally:
        _end(tmp_path, procs)
