"""The stall watch on real containers (the rendered ``compose/local.yaml``, podman, gloo): two nodes of two
ranks, spec ``launcher.stall_warn: 10`` and ``stall_timeout: 30``, one rank misbehaving mid-run.

Each case asserts the culprit (rank, node, host), the grouped stacks, one report per node, exit 7 on every
node, and the time bounds from the rank's own ``NODEWEAVE-STALL ... at=<epoch>`` line.
"""

from __future__ import annotations

import re

import pytest

from e2e_harness import compose_cluster, prepare_workdir

pytestmark = pytest.mark.engine

WARN, TIMEOUT = 10, 30
SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: 2
gpus_per_node: 2
launcher: {{script: allreduce.py, args: [{args}], wait_timeout: 120, stall_warn: {warn}, stall_timeout: {timeout}}}
env: {{OMP_NUM_THREADS: "1"}}
cache: {{host_path: ./cache}}
kubernetes: {{grace_period: 30}}
"""
LOOP = '"--steps", "100000", "--interval", "0.2", "--timeout", "600", "--stall-step", "10", '


def _stalled_run(engine, image, tmp_path, name, args):
    spec = SPEC.format(name=name, args=LOOP + args, warn=WARN, timeout=TIMEOUT)
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, spec), image)
    cluster.remove()
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        logs = {n: cluster.logs(n) for n in cluster.names}
        ended = {n: cluster.state(n).finished_at.timestamp() for n in cluster.names}
        return codes, logs, ended
    finally:
        cluster.remove()


def _check(codes, logs, ended, culprit_line, culprit_class):
    assert set(codes.values()) == {7}, f"{codes}\n{logs}"
    began = float(re.search(r"NODEWEAVE-STALL rank=3 [^\n]*at=([\d.]+)", "\n".join(logs.values())).group(1))
    for name, log in logs.items():
        assert log.count("STALL:") == 1, log
        assert culprit_line in log, log
        assert re.search(r"3 ranks \(0, 1, 2\): in all_reduce \(allreduce\.py:\d+\)", log), log
        assert re.search(culprit_class, log), log
        moved = int(re.search(r"nothing has moved for (\d+)s", log).group(1))
        assert WARN <= moved < WARN + 15, log
        assert ended[name] - began < TIMEOUT + 40, f"{name} ended {ended[name] - began:.1f} s after the stall\n{log}"
        assert "exit 7: stalled" in log, log


def test_a_sleeping_rank_is_named_with_every_ranks_stack_and_the_job_stops_with_7(engine, cpu_image, tmp_path):
    codes, logs, ended = _stalled_run(engine, cpu_image, tmp_path, "e2e-stsl",
                                      '"--stall-ranks", "3", "--stall-for", "600"')
    _check(codes, logs, ended, "culprit rank 3 (node 1, host e2e-stsl-1): sleeping",
           r"1 rank \(3\): time\.sleep \(allreduce\.py:\d+\)")


def test_a_sigstopped_rank_is_named_as_stopped(engine, cpu_image, tmp_path):
    codes, logs, ended = _stalled_run(engine, cpu_image, tmp_path, "e2e-ststop", '"--stop-self", "3"')
    _check(codes, logs, ended, "culprit rank 3 (node 1, host e2e-ststop-1): stopped",
           r"1 rank \(3\): stopped \(stopped, e\.g\. SIGSTOP\)")
