"""A held cluster with a spare on podman, as a new user starts one (issue 41, "Why": the first bullet).

``recovery: {enabled: true, spares: 1}``, ``nodes: 2``, ``nodeweave up --hold``: the spare's plan failed with
"node rank 2 ... is not below the node count 2" (exit 2), its restart policy restarted it five times and ``up``
ended with exit 1. Now three containers hold, the spare says it holds as a spare, ``status`` shows its role
beside the training nodes' ranks with the plans agreeing, and ``down`` takes all three down.
"""

from __future__ import annotations

import subprocess

import pytest

from cluster_harness import nodeweave, status, workdir

pytestmark = [pytest.mark.engine, pytest.mark.slow]
NAME = "nwt-spare"
SPARED = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{script: train.py, args: ["--steps", "20"], wait_timeout: 60}}
cache: {{host_path: ./cache}}
env: {{OMP_NUM_THREADS: "1"}}
recovery: {{enabled: true, spares: 1}}
"""


def test_up_hold_with_a_spare_holds_every_container_and_the_spare_as_a_spare(engine, cpu_image, tmp_path):
    if engine.kind != "podman":
        pytest.skip("the local cluster tests drive podman-compose")
    spec_path = workdir(tmp_path / "job", NAME, 2, spec=SPARED)
    nodeweave(spec_path, "down", timeout=300)  # an interrupted run's
    try:
        up = nodeweave(spec_path, "up", "--hold", "--image", cpu_image, "--timeout", "180", timeout=400)
        assert up.returncode == 0, up.stdout + up.stderr
        assert "3 node(s) up in hold mode" in up.stdout and "plans agree" in up.stdout, up.stdout + up.stderr
        log = engine.client.container.logs(f"{NAME}-2")
        assert "holding: as a spare" in log and "not below the node count" not in log, log
        for index in (0, 1):
            log = engine.client.container.logs(f"{NAME}-{index}")
            assert f"holding: node {index} of 2 training node(s) (+1 spare(s))" in log, log
        restarts = subprocess.run(["podman", "inspect", "--format", "{{.RestartCount}}", f"{NAME}-2"],
                                  capture_output=True, text=True, timeout=60)
        assert restarts.stdout.strip() == "0", restarts.stdout + restarts.stderr
        report = status(spec_path)
        assert report["plans_agree"] is True, report
        assert [(n["node"], n["up"], n["mode"]) for n in report["nodes"]] == [
            (f"node-{i}", True, "hold") for i in range(3)], report
        assert "spare (2)" in nodeweave(spec_path, "status", check=0).stdout
    finally:
        down = nodeweave(spec_path, "down", timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert all(subprocess.run(["podman", "container", "exists", f"{NAME}-{i}"]).returncode != 0 for i in range(3))
