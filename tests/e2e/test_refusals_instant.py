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
env: {{OMP_NUM_THREADS: "1"{extra}}}
cache: {{host_path: ./cache}}
kubernetes: {{grace_period: 30}}
"""


def _cluster(engine, image, tmp_path, name, extra=""):
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, SPEC.format(name=name, extra=extra)), image)
    cluster.remove()
    return cluster


def _ended(cluster, limit=90):
    codes = cluster.wait_exit(timeout=limit)
    took = {n: (cluster.state(n).finished_at - cluster.state(n).started_at).total_seconds() for n in cluster.names}
    return codes, took, {n: cluster.logs(n) for n in cluster.names}


def test_a_loopback_master_in_containers_of_their_own_is_refused_at_once_on_every_node(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rflo", extra=', MASTER_ADDR: "localhost"')
    try:
        cluster.up()
        codes, took, logs = _ended(cluster)
        assert set(codes.values()) == {3}, f"{codes}\n{logs}"
        for name, log in logs.items():
            assert "master address localhost is this container's own loopback" in log, log
            assert took[name] < 10, f"{name} took {took[name]:.1f} s\n{log}"
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
