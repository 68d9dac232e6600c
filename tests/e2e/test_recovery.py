"""Recovery in real containers: the rendered local compose file with ``recovery: {enabled: true, spares: 1}`` (three
containers: two train, one waits), the workload tests/e2e/workspace/resumable.py saving ``step-N.pt`` into the
shared workspace every 5 steps. A rank crashing on every start, a rank SIGSTOPped, a container killed: each test
asserts the node left out, the generations, the step resumed from and every container's exit code.
Short stall limits (CI time is a budget); every wait is bounded, so a hang fails instead of stalling CI.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from e2e_harness import compose_cluster, prepare_workdir

pytestmark = pytest.mark.engine

SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: 2
gpus_per_node: 1
launcher: {{script: resumable.py, args: [{args}], wait_timeout: 120, stall_warn: 3, stall_timeout: 8}}
env: {{OMP_NUM_THREADS: "1"}}
cache: {{host_path: ./cache}}
recovery: {{enabled: true, spares: 1, checkpoint_dir: checkpoints}}
"""
RUN = '"--steps", "30", "--interval", "0.3", "--save-every", "5"'


def _cluster(engine, image, tmp_path, name, fault):
    spec_path = prepare_workdir(tmp_path, SPEC.format(name=name, args=f"{RUN}, {fault}"))
    (tmp_path / "checkpoints").mkdir(mode=0o777)
    (tmp_path / "checkpoints").chmod(0o777)  # the image's uid 1000 saves there
    cluster = compose_cluster(engine, spec_path, image)
    cluster.remove()
    return cluster


def _resumed(logs):
    return [(int(g), path, int(step)) for g, path, step in
            re.findall(r"RECOVERY-RESUME gen=(\d+) from=(\S+) step=(\d+)", logs)]


def test_a_node_that_crashes_on_every_start_is_left_out_and_the_spare_takes_its_place(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rcrash",
                       '"--fault", "kill", "--fault-node", "e2e-rcrash-1", "--fault-gen", "-1", "--fault-step", "12"')
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
    finally:
        cluster.remove()
    assert codes == {"e2e-rcrash-0": 0, "e2e-rcrash-1": 0, "e2e-rcrash-2": 0}, logs
    node0 = logs["e2e-rcrash-0"]
    assert "recovery: generation 1: training node(s) 0, 2; spare(s) none; resuming from checkpoints/step-10.pt " \
           "(step 10)" in node0, node0
    assert _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0
    assert "this node is LEFT OUT of the job: node 1: its launcher failed" in logs["e2e-rcrash-1"]
    assert logs["e2e-rcrash-1"].count("RECOVERY-FAULT") == 1  # it never trained again
    assert "recovery: the job finished after 1 recovery(ies)" in node0


def test_a_stalled_rank_is_left_out_at_stall_timeout_and_the_spare_takes_over(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rstall",
                       '"--fault", "stop", "--fault-node", "e2e-rstall-1", "--fault-step", "12"')
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
    finally:
        cluster.remove()
    assert codes == {"e2e-rstall-0": 0, "e2e-rstall-1": 0, "e2e-rstall-2": 0}, logs
    node0 = logs["e2e-rstall-0"]
    assert "recovery: generation 0 ended: node 1: the job stalled" in node0, node0
    assert "training node(s) 0, 2" in node0 and _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0


def test_a_killed_container_is_left_out_and_the_spare_takes_over(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rlost", '"--fault-node", "none"')
    try:
        cluster.up()
        cluster.wait_log("e2e-rlost-0", "RECOVERY-STEP gen=0 step=12", timeout=240)
        subprocess.run([engine.kind, "kill", "e2e-rlost-1"], capture_output=True, timeout=60, check=True)
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
    finally:
        cluster.remove()
    assert codes["e2e-rlost-0"] == 0 and codes["e2e-rlost-2"] == 0 and codes["e2e-rlost-1"] != 0, logs
    node0 = logs["e2e-rlost-0"]
    assert re.search(r"recovery: generation 0 ended: node 1: it was lost", node0), node0
    [(generation, path, step)] = _resumed(node0)  # the kill lands at step 12 or, on a loaded machine, later
    assert generation == 1 and step in (10, 15) and path == f"checkpoints/step-{step}.pt", node0
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0
