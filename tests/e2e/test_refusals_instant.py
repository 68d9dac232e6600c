"""Instant refusals on real containers (the rendered ``compose/local.yaml``, podman): each case asserts every
node ends within seconds, where it used to wait out the 120 s check-in deadline (issue 28)."""

from __future__ import annotations

import pytest

from e2e_harness import compose_cluster, prepare_workdir

pytestmark = pytest.mark.engine

SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: 2
gpus_per_node: 1
launcher: {{script: allreduce.py, args: ["--timeout", "60"], wait_timeout: 120}}
env: {{OMP_NUM_THREADS: "1"}}
cache: {{host_path: ./cache}}
kubernetes: {{grace_period: 30}}
"""


def _cluster(engine, image, tmp_path, name):
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, SPEC.format(name=name)), image)
    cluster.remove()
    return cluster


def _ended(cluster, limit=90):
    codes = cluster.wait_exit(timeout=limit)
    took = {n: (cluster.state(n).finished_at - cluster.state(n).started_at).total_seconds() for n in cluster.names}
    return codes, took, {n: cluster.logs(n) for n in cluster.names}


def test_a_loopback_master_in_a_container_of_its_own_is_refused_at_once_and_node_0_is_told(engine, cpu_image,
                                                                                           tmp_path):
    """Node 1 got ``MASTER_ADDR=localhost`` (a template meant for one machine): it refuses at once, and tells
    node 0 (``<job>-0``, its hostname's ordinal prefix), which stops too."""
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rflo")
    try:
        cluster.up(services=["e2e-rflo-0"])
        cluster.run_like("e2e-rflo-0", "e2e-rflo-1", env={"MASTER_ADDR": "localhost"})
        codes, took, logs = _ended(cluster)
        assert codes == {"e2e-rflo-0": 3, "e2e-rflo-1": 3}, f"{codes}\n{logs}"
        assert "master address localhost is this container's own loopback" in logs["e2e-rflo-1"], logs
        assert took["e2e-rflo-1"] < 10, f"{took}\n{logs}"
        assert "refused its own start" in logs["e2e-rflo-0"], logs
        ended = {n: cluster.state(n).finished_at.timestamp() for n in cluster.names}
        assert ended["e2e-rflo-0"] - ended["e2e-rflo-1"] < 5, ended
    finally:
        cluster.remove()


def test_a_node_that_refuses_its_own_start_stops_node_0_within_5_s(engine, cpu_image, tmp_path):
    """``NODE_RANK=0`` baked into the template of ``<job>-1``: it refuses (its hostname says 1) and tells node 0."""
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rfself")
    try:
        cluster.up(services=["e2e-rfself-0"])
        cluster.run_like("e2e-rfself-0", "e2e-rfself-1", env={"NODE_RANK": "0"})
        codes, took, logs = _ended(cluster)
        assert codes == {"e2e-rfself-0": 3, "e2e-rfself-1": 3}, f"{codes}\n{logs}"
        assert "refused its own start" in logs["e2e-rfself-0"] and "NODE_RANK" in logs["e2e-rfself-0"], logs
        assert "told node 0" in logs["e2e-rfself-1"], logs["e2e-rfself-1"]
        ended = {n: cluster.state(n).finished_at.timestamp() for n in cluster.names}
        assert ended["e2e-rfself-0"] - ended["e2e-rfself-1"] < 5, ended
    finally:
        cluster.remove()


def test_node_0_expecting_another_node_count_refuses_the_moment_node_1_checks_in(engine, cpu_image, tmp_path):
    """Node 0's rendered service hand-edited to ``NODEWEAVE_NNODES: 3`` (node 1 keeps 2): node 0 judges node 1's
    claim when it arrives instead of waiting for a third node until the 120 s deadline; both end within 5 s."""
    import yaml

    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rfcnt")
    document = yaml.safe_load(cluster.compose_file.read_text())
    document["services"]["e2e-rfcnt-0"]["environment"]["NODEWEAVE_NNODES"] = "3"
    cluster.compose_file.write_text(yaml.safe_dump(document))
    try:
        cluster.up(services=["e2e-rfcnt-0"])
        cluster.wait_log("e2e-rfcnt-0", "check-in: waiting for", timeout=60)
        cluster.up(services=["e2e-rfcnt-1"])
        codes, took, logs = _ended(cluster)
        assert codes == {"e2e-rfcnt-0": 3, "e2e-rfcnt-1": 3}, f"{codes}\n{logs}"
        for log in logs.values():
            assert "nodes disagree on the node count" in log, logs
        started = cluster.state("e2e-rfcnt-1").started_at.timestamp()
        ended = {n: cluster.state(n).finished_at.timestamp() - started for n in cluster.names}
        assert max(ended.values()) < 5, f"seconds after node 1 started: {ended}\n{logs}"
    finally:
        cluster.remove()
