"""A 2-node × 2-process job from the rendered ``compose/local.yaml``, on a real engine.

Each container's entrypoint takes its node rank from its hostname
(``<name>-0``, ``<name>-1``), waits for the master, execs the launcher, and the
training script all-reduces over gloo; every rank must see the right sum and
every container must exit 0. Once with torchrun, once with each other launcher.
"""

from __future__ import annotations

import pytest

from e2e_harness import compose_cluster, prepare_workdir, records

pytestmark = pytest.mark.engine

SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: 2
gpus_per_node: 2
launcher: {{type: {launcher}, script: allreduce.py, wait_timeout: 120}}
cache: {{host_path: ./cache}}
env: {{OMP_NUM_THREADS: "1"}}
"""


def check_allreduce(cluster, nodes: int, nproc: int, codes):
    logs = cluster.all_logs()
    assert all(code == 0 for code in codes.values()), f"exit codes {codes}\n{logs}"
    found = records(logs)
    world = nodes * nproc
    assert sorted(r["rank"] for r in found) == list(range(world)), logs
    for record in found:
        assert record["world"] == world
        assert record["sum"] == world * (world + 1) / 2, record
        # global ranks are laid out node by node: the hostname ordinal gave the node rank
        assert record["host"] == cluster.names[record["rank"] // nproc], record
    return found


@pytest.mark.parametrize("launcher", ["torchrun", "deepspeed", "accelerate"])
def test_two_nodes_two_processes_allreduce(engine, cpu_image, tmp_path, launcher):
    name = {"torchrun": "e2e-trun", "deepspeed": "e2e-ds", "accelerate": "e2e-acc"}[launcher]
    spec_path = prepare_workdir(tmp_path, SPEC.format(name=name, launcher=launcher))
    cluster = compose_cluster(engine, spec_path, cpu_image)
    cluster.remove()  # leftovers of an interrupted run
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        check_allreduce(cluster, nodes=2, nproc=2, codes=codes)
        for index, node in enumerate(cluster.names):
            log = cluster.logs(node)
            # the rank came from the hostname ordinal, and the launcher asked for is the one exec'd
            assert f"node {index} of 2" in log and f"run {launcher}" in log, log
            # the nodes checked in with node 0 and agreed before anything launched
            assert "check-in: 2 node(s) agree (world size 4" in log and "heartbeat on" in log, log
    finally:
        cluster.remove()
