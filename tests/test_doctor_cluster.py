"""``nodeweave doctor --cluster``'s view: fingerprints side by side, differences marked, problems graded."""

from nodeweave.doctor.cluster import from_fingerprints, from_status
from one_machine import one_machine_env
from test_exchange_verdict import fp


def status(*workers, phase="running"):
    nodes = [{"fp": fp(0), "seen": "10.0.0.10", "probe": None, "own": True, "state": "node 0"}]
    nodes += [{"fp": w, "seen": w["route_address"], "probe": "ok", "own": False, "state": "running"} for w in workers]
    return {"t": "status", "phase": phase, "nodes": nodes, "verdict": None}


def test_agreeing_nodes_give_no_findings_and_no_marks():
    view = from_status(status(fp(1), fp(2)), "trainer-0:29501")
    assert view.findings == [] and view.verdict["decision"] == "start"
    labels, rows = view.table()
    assert labels == ["node 0 (trainer-0)", "node 1 (trainer-1)", "node 2 (trainer-2)"]
    assert not any(any(marks) for _, _, marks in rows)
    assert "node 0's check-in exchange (trainer-0:29501), running" == view.source


def test_a_differing_field_is_marked_on_the_node_that_differs_and_graded():
    view = from_status(status(fp(1), fp(2, nccl="2.26.2", shm_bytes=64 << 20)), "x")
    _, rows = view.table()
    nccl = next(row for row in rows if row[0] == "NCCL")
    assert nccl[1] == ["2.21.5", "2.21.5", "2.26.2"] and nccl[2] == [False, False, True]
    host = next(row for row in rows if row[0] == "host")
    assert host[2] == [False, False, False]  # hostnames differ by design: never marked
    codes = {(f.severity, f.code) for f in view.findings}
    assert codes == {("error", "cluster-nccl"), ("warning", "cluster-shm")}
    error = next(f for f in view.findings if f.code == "cluster-nccl")
    assert "node 2 (trainer-2)" in error.message and "NODEWEAVE_EXCHANGE_ALLOW=nccl" in error.action


def test_connect_back_seen_from_node_0_is_judged():
    data = status(fp(1), fp(2))
    data["nodes"][1]["probe"] = "connecting to 10.0.0.11:40000 timed out after 3s"
    view = from_status(data, "x")
    assert [f.code for f in view.findings] == ["cluster-connect-back"]
    assert "timed out" in view.findings[0].message


def test_fingerprints_from_each_node_skip_what_only_node_0_can_see():
    plans = [(f"podman:trainer-{r}", {"fingerprint": fp(r, workspace_commit="b" * 40 if r == 2 else "a" * 40),
                                      "exchange": {"last": {"decision": "refuse"}} if r else {}})
             for r in (2, 0, 1)]
    view = from_fingerprints(plans)
    assert [n.label for n in view.nodes][0] == "node 0 (trainer-0) [podman:trainer-0]"
    assert [f.code for f in view.findings] == ["cluster-workspace"]
    assert view.nodes[1].state == "last start: refuse"
    assert view.to_dict()["table"]["rows"]


def test_doctor_cluster_asks_a_running_jobs_node_0(tmp_path):
    """Three entrypoints running a stand-in torchrun; doctor --cluster with node 1's variables sees all three."""
    import json
    import os
    import subprocess
    import sys

    from test_exchange_processes import checked_in, fake_torchrun, finish, start_nodes

    fake_torchrun(tmp_path)
    procs = start_nodes(tmp_path, 3, ["train.py"], launcher="torchrun",
                        # every node's NCCL said outright: the venv's torch may carry a wheel of its own (PyPI's does)
                        env={"RUN_FOR": "30", "NODEWEAVE_EXCHANGE_ALLOW": "nccl", "NODEWEAVE_NCCL_VERSION": "2.28.9"},
                        per_node_env={2: {"NODEWEAVE_NCCL_VERSION": "2.21.5"}})
    try:
        checked_in(tmp_path / "n0", procs)
        port = procs[0].args[procs[0].args.index("--master-port") + 1]
        env = one_machine_env({"PATH": os.environ["PATH"], "NNODES": "3", "NODE_RANK": "1",
                               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
        cli = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main(sys.argv[1:]))"]
        out = subprocess.run([*cli, "doctor", "--cluster", "--json"], capture_output=True, text=True, timeout=60,
                             env=env, cwd=tmp_path)
        view = json.loads(out.stdout)
        assert view["nodes"], view["findings"][0]["message"]
        assert view["table"]["nodes"] == ["node 0 (%s)" % os.uname().nodename, "node 1 (%s)" % os.uname().nodename,
                                          "node 2 (%s)" % os.uname().nodename]
        nccl = next(row for row in view["table"]["rows"] if row["field"] == "NCCL")
        assert nccl["values"] == ["2.28.9", "2.28.9", "2.21.5"] and nccl["differs"] == [False, False, True]
        # the job started with nccl allowed: doctor grades it as the job did, a warning (exit 0)
        assert out.returncode == 0 and [(f["severity"], f["code"]) for f in view["findings"]] == [
            ("warning", "cluster-nccl")], out.stdout
        text = subprocess.run([*cli, "doctor", "--cluster"], capture_output=True, text=True, timeout=60, env=env,
                              cwd=tmp_path)
        assert "fingerprints from node 0's check-in exchange" in text.stdout and "cluster-nccl" in text.stdout
    finally:
        for proc in procs:
            proc.kill()
        finish(procs)


def test_doctor_cluster_without_a_job_says_why(tmp_path):
    import cli_run

    out = cli_run.run([*cli_run.NODEWEAVE, "doctor", "--cluster", "--json"], timeout=60, env={"PATH": "/usr/bin:/bin"},
                      cwd=tmp_path)
    assert out.returncode == 3 and not out.stdout, out.stdout  # no node 0 to ask, as every verb that needs the job
    assert "no job to ask: this machine is not a node of a job" in out.stderr and "--node KIND:NAME" in out.stderr


def test_doctor_cluster_in_a_node_whose_exchange_is_off_says_why():
    import json

    import cli_run

    out = cli_run.run([*cli_run.NODEWEAVE, "doctor", "--cluster", "--json"], timeout=60,
                      env={"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NNODES": "1", "MASTER_ADDR": "127.0.0.1"})
    assert out.returncode == 1, out.stdout
    finding = json.loads(out.stdout)["findings"][0]
    assert finding["code"] == "cluster-unreachable" and "no check-in exchange to ask: single node" in finding["message"]
