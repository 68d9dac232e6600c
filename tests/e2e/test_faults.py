"""Faults on a real multi-node job: SIGTERM, a master that never comes, a node killed, two rank 0s.

Every test bounds the time it allows, so a hang fails instead of stalling CI.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from e2e_harness import ENDED, Cluster, compose_cluster, prepare_workdir, run_node_service

pytestmark = pytest.mark.engine

GRACE = 30  # kubernetes.grace_period: compose's stop_grace_period, the pod's terminationGracePeriodSeconds

SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: 2
gpus_per_node: 2
launcher: {{script: allreduce.py, args: [{args}], wait_timeout: {wait}}}
env: {{OMP_NUM_THREADS: "1"}}
cache: {{host_path: ./cache}}
kubernetes: {{grace_period: {grace}}}
"""
LONG_RUN = '"--steps", "100000", "--interval", "0.5", "--timeout", "30"'


def _cluster(engine, image, tmp_path, name, args=LONG_RUN, wait=120):
    spec_path = prepare_workdir(tmp_path, SPEC.format(name=name, args=args, wait=wait, grace=GRACE))
    cluster = compose_cluster(engine, spec_path, image)
    cluster.remove()
    return cluster


def _wait_stopped(cluster, name, limit):
    started = time.monotonic()
    codes = cluster.wait_exit([name], timeout=limit)
    return codes[name], time.monotonic() - started


@pytest.fixture(scope="module")
def sigterm_run(engine, cpu_image, tmp_path_factory):
    """A 2x2 job; node 1 gets SIGTERM mid-run (as from `podman stop` or the kubelet)."""
    cluster = _cluster(engine, cpu_image, tmp_path_factory.mktemp("sigterm"), "e2e-term")
    node = "e2e-term-1"
    try:
        cluster.up()
        cluster.wait_log(node, "NODEWEAVE-STEP", timeout=240)
        running = cluster.processes(node)
        cluster.client.container.kill(node, signal="SIGTERM")
        code, took = _wait_stopped(cluster, node, limit=GRACE + 30)
        top = subprocess.run([engine.kind, "top", node], capture_output=True, text=True)
        yield {"running": running, "code": code, "took": took, "logs": cluster.logs(node),
               "status": cluster.state(node).status, "top_rc": top.returncode}
    finally:
        cluster.remove()


def test_sigterm_stops_launcher_and_workers_within_grace(sigterm_run):
    run = sigterm_run
    running = run["running"]
    assert any("torchrun" in line for line in running), running
    # tini -> nodeweave-entrypoint (supervising) -> torchrun -> 2 workers
    assert any("nodeweave-entrypoint" in line and "tini" not in line for line in running), running
    workers = [line for line in running if "python" in line and "allreduce.py" in line
               and "torchrun" not in line and "nodeweave-entrypoint" not in line]
    assert len(workers) == 2, running
    assert run["took"] < GRACE, f"took {run['took']:.1f} s to stop after SIGTERM (grace {GRACE} s)\n{run['logs']}"
    # torchrun's own words of the signal go to a file the node's one stop line names, not the terminal (walk9 B9)
    assert "stopped on SIGTERM: this node's launcher ended (torchrun " in run["logs"], run["logs"]
    assert "this node exits 143)" in run["logs"], run["logs"]
    assert "the launcher's output after the signal" in run["logs"] and "Traceback" not in run["logs"], run["logs"]
    # the container ended with all its processes: nothing left to list
    assert run["status"] in ENDED and run["top_rc"] != 0, run["status"]
    assert run["code"] != 0, run["logs"]


def test_sigterm_exit_status_says_sigterm(sigterm_run):
    assert sigterm_run["code"] == 128 + 15, sigterm_run["logs"]


def test_worker_gives_up_on_a_master_that_never_comes(engine, cpu_image, tmp_path):
    wait = 8
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-nomaster", wait=wait)
    node = "e2e-nomaster-1"
    try:
        cluster.up(services=[node])
        code, took = _wait_stopped(cluster, node, limit=wait + 60)
        logs = cluster.logs(node)
        assert code == 4, f"exit {code}, expected the entrypoint's 4 (master unreachable)\n{logs}"
        assert "node 0's check-in exchange e2e-nomaster-0:29501 not reachable" in logs, logs
        assert "Traceback" not in logs
        assert took < wait + 30, f"took {took:.1f} s for a {wait} s deadline"
    finally:
        cluster.remove()


def test_survivor_exits_nonzero_when_a_node_is_killed(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-kill")
    try:
        cluster.up()
        cluster.wait_log("e2e-kill-0", "NODEWEAVE-STEP", timeout=240)
        cluster.client.container.kill("e2e-kill-1", signal="SIGKILL")
        code, took = _wait_stopped(cluster, "e2e-kill-0", limit=120)
        logs = cluster.logs("e2e-kill-0")
        assert code == 5, logs  # the heartbeat: another node failed
        assert "node 1 (e2e-kill-1) failed" in logs, logs
        assert took < 30, f"survivor took {took:.1f} s to fail\n{logs}"
    finally:
        cluster.remove()


def test_two_nodes_claiming_rank_0_are_stopped_with_a_clear_error(engine, cpu_image, tmp_path):
    """Per-host compose (node.yaml) with NODE_RANK=0 on both hosts: the impostor must say so, not hang."""
    from nodeweave.targets.compose import render_files
    from nodeweave.spec import load_spec

    spec_path = prepare_workdir(tmp_path, SPEC.format(name="e2e-dup", args='"--timeout", "30"', wait=60, grace=GRACE))
    node_yaml = render_files(load_spec(spec_path))["compose/node.yaml"]
    network = "e2e-dup-net"
    cluster = Cluster(engine=engine, names=["e2e-dup-a", "e2e-dup-b"], networks=[network])
    cluster.remove()
    try:
        subprocess.run([engine.kind, "network", "create", network], check=True, capture_output=True, timeout=60)
        for host in cluster.names:
            run_node_service(engine, node_yaml, host, network, cpu_image, tmp_path,
                             {"NODE_RANK": "0", "MASTER_ADDR": "e2e-dup-a", "NNODES": "2"})
        code, took = _wait_stopped(cluster, "e2e-dup-b", limit=120)
        logs = cluster.logs("e2e-dup-b")
        assert code != 0, logs
        assert "rank 0" in logs and "e2e-dup-a" in logs, logs
        assert "Traceback" not in logs, logs
        assert took < 60, f"took {took:.1f} s\n{logs}"
    finally:
        cluster.remove()
