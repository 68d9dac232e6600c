"""``nodeweave doctor --cluster``'s view: fingerprints side by side, differences marked, problems graded."""

from nodeweave.doctor.cluster import from_fingerprints, from_status
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
