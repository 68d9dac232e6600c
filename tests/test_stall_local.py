"""The stall watch where no heartbeat runs (stall/local.py): a single-node job, the ``command`` launcher, a job
of several nodes whose check-in exchange is off. Real entrypoints and launchers, gloo, the e2e workload with
one rank sleeping mid-run; each node judges its own ranks.

Bounds are generous (a loaded 2-core machine); the speed targets live in benchmarks/stall_watch.py.
"""

import re
import sys

import pytest

import stall_harness
from stall_harness import start, stop

pytest.importorskip("torch")
WARN, TIMEOUT = 4, 12
STALL_ENV = {"NODEWEAVE_STALL_WARN": str(WARN), "NODEWEAVE_STALL_TIMEOUT": str(TIMEOUT)}
SLEEPS = ["--steps", "100000", "--interval", "0.2", "--stall-step", "6", "--stall-ranks", "1", "--stall-for", "600"]


def _ended(nodes, limit=120):
    try:
        return [node.wait(limit) for node in nodes]
    finally:
        stop(nodes)


def test_a_single_node_job_judges_its_own_ranks_names_the_sleeper_and_exits_7(tmp_path):
    nodes = start(tmp_path, "torchrun", SLEEPS, nodes=1, nproc=2, env={**STALL_ENV, "NODEWEAVE_RUN_ID": "r1"})
    assert _ended(nodes) == [7], nodes[0].text()
    err = nodes[0].text()
    assert err.count("STALL:") == 1, err
    assert "wait in all_reduce #8 that rank 1 (node 0, host " in err, err
    assert re.search(r"1 rank \(1\): time\.sleep \(allreduce\.py:\d+\)", err), err
    assert re.search(r"rank 0: entered seq 7 gloo:all_reduce \[\[1\]\] Float \(not completed", err), err
    assert "exit 7: stalled" in err, err
    stalled = nodes[0].first("NODEWEAVE-STALL rank=1", "out")
    assert nodes[0].first("STALL:") - stalled < WARN + 20, err
    kept = (tmp_path / "n0" / "nodeweave" / "runs" / "r1" / "stalls.txt").read_text()
    assert "that rank 1 (node 0" in kept, kept


def test_the_command_launcher_is_watched_when_its_command_starts_ranks(tmp_path):
    """``--launcher command`` running torchrun itself: the entrypoint supervises it (instead of exec) while the
    stall watch is on, so the ranks torchrun starts are watched."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "allreduce.py", *SLEEPS]
    start(tmp_path, "torchrun", [], nodes=0)  # copies the workload
    nodes = stall_harness.stall_nodes.start(tmp_path, "command", command, nodes=1, env=STALL_ENV)
    assert _ended(nodes) == [7], nodes[0].text()
    err = nodes[0].text()
    assert "that rank 1 (node 0, host " in err and "exit 7: stalled" in err, err
    assert "; run " in err.splitlines()[0], err  # supervised, not exec'd


def test_stall_warn_0_still_execs_the_command_launcher(tmp_path):
    nodes = stall_harness.stall_nodes.start(tmp_path, "command", ["sh", "-c", "echo pid=$$"], nodes=1,
                                            env={"NODEWEAVE_STALL_WARN": "0"})
    assert _ended(nodes, 30) == [0], nodes[0].text()
    assert f"pid={nodes[0].proc.pid}" in nodes[0].text("out")  # the entrypoint became the command


def test_with_the_exchange_off_a_node_whose_ranks_all_wait_says_the_culprit_is_elsewhere(tmp_path):
    """Two nodes of one rank, no check-in exchange: node 0 sees its one rank wait in all_reduce for stall_warn,
    nobody behind it here; it reports that the rank that has not entered is on another node, and stops after
    stall_timeout. Node 1 (its rank asleep outside any collective) sees nothing to report."""
    nodes = start(tmp_path, "torchrun", SLEEPS,
                  env={**STALL_ENV, "NODEWEAVE_EXCHANGE": "off"})
    try:
        code = nodes[0].wait(120)
    finally:
        stop(nodes)
    err = nodes[0].text()
    assert code == 7, err
    assert "STALL: all 1 rank(s) of this node wait in all_reduce #8; nothing has moved for" in err, err
    assert "the rank that has not entered it is on another node, which this node cannot see (switched off by" in err
    assert re.search(r"1 rank \(0\): in all_reduce \(allreduce\.py:\d+\)", err), err
    assert "this node's ranks waited in all_reduce #8" in err, err
    # node 1's rank may wait in init_process_group past stall_warn while node 0's rank is slow to start (a loaded
    # machine; a clean container's run saw it): that is the start, not the stall these ranks make later
    stalls = [line for line in nodes[1].text().splitlines() if "STALL:" in line and "init_process_group" not in line]
    assert not stalls, nodes[1].text()


def test_a_healthy_single_node_run_is_not_reported_and_ends_0(tmp_path):
    nodes = start(tmp_path, "torchrun", ["--steps", "5"], nodes=1, nproc=2, env=STALL_ENV)
    assert _ended(nodes) == [0], nodes[0].text()
    assert "STALL" not in nodes[0].text(), nodes[0].text()
