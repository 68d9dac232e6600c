"""accelerate on CPU-only nodes is really distributed: 2 nodes x 2 processes form one gloo world.

Before the entrypoint exported accelerate's own CPU switch (``ACCELERATE_USE_CPU``),
``accelerate launch --multi_gpu`` started every process on a CPU node as
``DistributedType.NO``: four processes each training alone, world size 1.
Here the script asks accelerate itself (``Accelerator()``) and every rank
must see MULTI_CPU, a world of 4 and the sum over all four.
"""

from __future__ import annotations

import pytest

from e2e_harness import compose_cluster, prepare_workdir, records

pytestmark = pytest.mark.engine

SPEC = """name: e2e-acc-cpu
image: {variant: cpu, registry: localhost/nodeweave-e2e}
nodes: 2
gpus_per_node: 2
launcher: {type: accelerate, script: accelerate_world.py, wait_timeout: 120}
cache: {host_path: ./cache}
env: {OMP_NUM_THREADS: "1"}
"""


def test_accelerate_on_two_cpu_nodes_is_one_world_of_four(engine, cpu_image, tmp_path):
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, SPEC), cpu_image)
    cluster.remove()  # leftovers of an interrupted run
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        logs = cluster.all_logs()
        assert all(code == 0 for code in codes.values()), f"exit codes {codes}\n{logs}"
        found = records(logs)
        assert sorted(r["rank"] for r in found) == [0, 1, 2, 3], logs
        for record in found:
            assert (record["type"], record["world"], record["sum"]) == ("MULTI_CPU", 4, 10.0), record
            assert record["host"] == cluster.names[record["rank"] // 2], record
    finally:
        cluster.remove()
