"""The stall watch on real containers (the rendered ``compose/local.yaml``, podman, gloo): two nodes of two
ranks, spec ``launcher.stall_warn: 5`` and ``stall_timeout: 12`` (short: CI time is a budget), one rank
misbehaving mid-run.

Each case asserts the culprit (rank, node, host), the grouped stacks, one report per node, exit 7 on every
node, and the time bounds from the rank's own ``NODEWEAVE-STALL ... at=<epoch>`` line.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from e2e_harness import compose_cluster, container_pid, prepare_workdir

pytestmark = pytest.mark.engine

WARN, TIMEOUT = 5, 12
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
    return _run_to_the_end(engine, image, tmp_path, spec)


def _run_to_the_end(engine, image, tmp_path, spec, wait=300):
    """Bring the spec's compose cluster up, wait for every node to exit: (codes, logs, end times); removed after."""
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, spec), image)
    cluster.remove()
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=wait)
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


# --- what only containers prove -------------------------------------------------------------------------------


def _short_run(engine, image, tmp_path, name, args, limit=180):
    spec = SPEC.format(name=name, args=args, warn=WARN, timeout=TIMEOUT)
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, spec), image)
    cluster.remove()
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=limit)
        return codes, {n: cluster.logs(n) for n in cluster.names}
    finally:
        cluster.remove()


def test_a_rank_that_skipped_a_collective_is_named_with_each_ranks_flight_recorder(engine, cpu_image, tmp_path):
    """Rank 3 skips step 6's all-reduce, ends its loop one collective early and sleeps: the others wait in their
    last one. The report names it and what torch's flight recorder says each rank entered and completed."""
    codes, logs = _short_run(engine, cpu_image, tmp_path, "e2e-stskip", '"--steps", "14", "--interval", "0.2", '
                             '"--stall-step", "6", "--skip-rank", "3", "--stall-for", "600", "--timeout", "600"')
    assert set(codes.values()) == {7}, f"{codes}\n{logs}"
    for log in logs.values():
        assert log.count("STALL:") == 1, log
        assert "3 rank(s) wait in all_reduce #15 that rank 3 (node 1, host e2e-stskip-1) has not entered" in log, log
        assert re.search(r"1 rank \(3\): time\.sleep \(allreduce\.py:\d+\)", log), log
        assert "ranks 0-2: entered seq 14 gloo:all_reduce [[1]] Float (not completed" in log, log
        assert "rank 3: entered seq 13 gloo:all_reduce [[1]] Float; completed seq 13" in log, log
        assert "exit 7: stalled" in log, log


def test_a_rank_blocked_reading_a_fifo_nobody_writes_is_named_at_its_open(engine, cpu_image, tmp_path):
    """The FIFO is in the bind-mounted workspace (the host made it): rank 2 blocks in open() inside the
    container, in the kernel, where no Python code runs; faulthandler still dumps its stack."""
    import os

    fifo = tmp_path / "nobody-writes"
    os.mkfifo(fifo)
    fifo.chmod(0o666)
    codes, logs = _short_run(engine, cpu_image, tmp_path, "e2e-stfifo", LOOP.replace('"10"', '"6"') +
                             '"--fifo-rank", "2", "--fifo", "/workspace/nobody-writes"')
    assert set(codes.values()) == {7}, f"{codes}\n{logs}"
    for log in logs.values():
        assert log.count("STALL:") == 1, log
        assert "culprit rank 2 (node 1, host e2e-stfifo-1): sleeping" in log, log
        assert re.search(r"1 rank \(2\): open \(allreduce\.py:\d+\)", log), log
        assert re.search(r"3 ranks \(0, 1, 3\): in all_reduce \(allreduce\.py:\d+\)", log), log


CPU_LIMIT = ("cat /sys/fs/cgroup/cpu.max 2>/dev/null || "  # cgroup v2, else v1's two files
             "echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)")


def test_a_node_whose_cpus_are_cut_to_a_twentieth_is_named_as_a_straggler(engine, cpu_image, tmp_path):
    """Node 1's CPU quota is cut to a twentieth of a CPU (``podman update --cpus 0.05``) once its ranks train;
    each rank spends 20 ms of CPU per step, so node 1's two ranks take many times as long: node 1 is named with
    its gap, and only node 1. How soon is a benchmark's figure (benchmarks/stall_watch.py, docs/stalls.md),
    not this test's: at load 14 the ranks' own start-up took most of two minutes.

    The cut must bind on a loaded machine: with a quarter of a CPU (the first form), a 2-core machine at
    load 16 gave node 0's unlimited ranks less than the quota gave node 1's, and node 0 was named. And it
    comes once the ranks train: a twentieth from the container's start left node 1's ranks importing torch
    for minutes, and gloo's connect gave up before the first step."""
    name = "e2e-stcpu"
    spec = SPEC.format(name=name, args='"--steps", "100000", "--interval", "0.001", "--burn-ms", "20"', warn=60,
                       timeout=600)
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, spec), cpu_image)
    cluster.remove()
    try:
        cluster.up(services=[f"{name}-0"])
        cluster.run_like(f"{name}-0", f"{name}-1")
        cluster.wait_log(f"{name}-0", "check-in: 2 node(s) agree", timeout=120)
        cluster.wait_log(f"{name}-1", "NODEWEAVE-STEP rank=2 ", timeout=420)  # node 1's ranks train
        subprocess.run([engine.kind, "update", "--cpus", "0.05", f"{name}-1"], check=True, capture_output=True,
                       timeout=120)
        limit = cluster.client.container.execute(f"{name}-1", ["sh", "-c", CPU_LIMIT]).split()
        assert limit[:2] == ["5000", "100000"], limit  # the quota the kernel enforces: a twentieth of one CPU
        cluster.wait_log(f"{name}-0", "STRAGGLER: node 1", timeout=420)
        logs = {n: cluster.logs(n) for n in cluster.names}
    finally:
        cluster.remove()
    for log in logs.values():
        gap = re.search(r"STRAGGLER: node 1 \(host e2e-stcpu-1\): all its ranks are (\d+)% or more slower", log)
        assert gap and int(gap.group(1)) >= 10, log
        assert not re.search(r"STRAGGLER: rank [01] ", log) and "STALL:" not in log, log


def test_a_check_in_port_whose_packets_are_dropped_is_named_as_a_likely_firewall_within_30_s(engine, cpu_image,
                                                                                             tmp_path):
    """A real DROP rule (iptables in node 0's network namespace, entered from the host) on node 0's check-in
    port: node 1's connections time out instead of being refused, and it names a likely firewall."""
    import subprocess
    import time

    name = "e2e-stfw"
    cluster = compose_cluster(engine, prepare_workdir(tmp_path, SPEC.format(
        name=name, args='"--steps", "3"', warn=WARN, timeout=TIMEOUT)), cpu_image)
    cluster.remove()
    try:
        cluster.up(services=[f"{name}-0"])
        cluster.wait_log(f"{name}-0", "check-in: waiting for", timeout=60)
        # the check-in's own line: node 0 names its /metrics port first since it serves it while gathering
        port = re.search(r"check-in: waiting for .* on port (\d+)", cluster.logs(f"{name}-0")).group(1)
        pid = container_pid(engine.kind, f"{name}-0")
        subprocess.run(["nsenter", "-t", pid, "-n", "iptables", "-A", "INPUT", "-p", "tcp", "--dport", port,
                        "-j", "DROP"], check=True, capture_output=True, text=True)
        began = time.monotonic()
        cluster.run_like(f"{name}-0", f"{name}-1")
        cluster.wait_log(f"{name}-1", "likely a firewall", timeout=45)
        took = time.monotonic() - began  # from node 1's start (podman run) to the line
        log = cluster.logs(f"{name}-1")
    finally:
        cluster.remove()
    assert took < 30, f"{took:.1f} s\n{log}"
    assert f"{name}-0:{port}: every connection for" in log, log
    assert "packets to it are dropped, not refused" in log, log


def test_a_45_s_checkpoint_on_rank_0_is_only_a_warning_naming_torch_save_and_the_job_completes(engine, cpu_image,
                                                                                              tmp_path):
    """Rank 0 saves checkpoints (torch.save) for 45 s while rank 1 waits at a barrier: slow by nature (the
    issue's 45 s), so one rank per node and few steps. ``stall_timeout: 90``, past the save: a warning on every
    node, never a stop."""
    name = "e2e-stsave"
    # 26 steps (5 s) after the save: node 0 judges every 3.3 s, and "the stall is over" must reach every node
    # before the job ends (with 6 steps, 1.2 s, a loaded machine's nodes could finish first)
    spec = SPEC.format(name=name, args='"--steps", "30", "--interval", "0.2", "--stall-step", "4", '
                       '"--save-rank", "0", "--save-for", "45", "--timeout", "180"', warn=WARN, timeout=90)
    spec = spec.replace("gpus_per_node: 2", "gpus_per_node: 1")
    codes, logs, _ = _run_to_the_end(engine, cpu_image, tmp_path, spec, wait=240)
    assert set(codes.values()) == {0}, f"{codes}\n{logs}"
    for log in logs.values():
        assert log.count("STALL:") == 1, log
        assert "wait in barrier" in log and "that rank 0 (node 0, host e2e-stsave-0)" in log, log
        assert re.search(r"1 rank \(0\): torch\.save \(allreduce\.py:\d+\)", log), log
        assert re.search(r"1 rank \(1\): in barrier \(allreduce\.py:\d+\)", log), log
        assert "the stall is over" in log and "exit 7: stalled" not in log, log
