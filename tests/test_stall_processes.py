"""The stall watch on real launchers and gloo: two simulated nodes (real entrypoints on loopback, each with its
own TMPDIR), the e2e workload (tests/e2e/workspace/allreduce.py) with one rank misbehaving.

Bounds are generous (a loaded 2-core machine); the speed targets live in benchmarks/stall_watch.py.
"""

import re

import pytest

from one_machine import one_machine_env
from stall_harness import start, stop

pytest.importorskip("torch")
WARN, TIMEOUT = 4, 14
STALL_ENV = {"NODEWEAVE_STALL_WARN": str(WARN), "NODEWEAVE_STALL_TIMEOUT": str(TIMEOUT)}
LOOP = ["--steps", "100000", "--interval", "0.2", "--stall-step", "6"]


def run_to_end(tmp_path, launcher, args, env=None, limit=150, nproc=1, per_node=None):
    nodes = start(tmp_path, launcher, LOOP + args, env={**STALL_ENV, **(env or {})}, nproc=nproc, per_node=per_node)
    try:
        codes = [node.wait(limit) for node in nodes]
    finally:
        stop(nodes)
    return nodes, codes


def one_report(node):
    err = node.text()
    assert err.count("STALL:") == 1, err
    return err


@pytest.mark.parametrize("launcher", ["torchrun", "deepspeed", "accelerate"])
def test_a_sleeping_rank_is_named_with_grouped_stacks_and_the_job_stops_with_exit_7(tmp_path, launcher):
    nodes, codes = run_to_end(tmp_path, launcher, ["--stall-ranks", "1", "--stall-for", "600"])
    assert codes == [7, 7], [n.text() for n in nodes]
    stalled = nodes[1].first("NODEWEAVE-STALL rank=1", "out")
    for node in nodes:
        err = one_report(node)
        assert "that rank 1 (node 1, host " in err and "has not entered" in err, err
        assert re.search(r"1 rank \(1\): time\.sleep \(allreduce\.py:\d+\)", err), err
        assert re.search(r"1 rank \(0\): in all_reduce \(allreduce\.py:\d+\)", err), err
        assert "culprit rank 1 (node 1" in err and "sleeping" in err, err
        assert "exit 7: stalled" in err and "Traceback (most recent call last):\n  File \"/" not in err.split("STALL:")[0]
        assert node.first("STALL:") - stalled < WARN + 20, err
        assert node.ended - stalled < TIMEOUT + 30, err


def rank_left_behind(pid):
    """The process ``pid`` if it is still a rank of the workload (torchrun runs ranks in sessions of their own)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"allreduce.py" in f.read()
    except OSError:
        return False


def test_a_sigstopped_rank_is_named_as_stopped_and_does_not_outlive_the_stop(tmp_path):
    nodes, codes = run_to_end(tmp_path, "torchrun", ["--stop-self", "1"], env={"NODEWEAVE_RUN_ID": "r1"})
    assert codes == [7, 7], [n.text() for n in nodes]
    pid = int(re.search(r"culprit rank 1 \(node 1, [^\n]*: stopped[^\n]*, pid (\d+)", nodes[1].text()).group(1))
    assert not rank_left_behind(pid), f"rank 1 (pid {pid}) outlived its launcher's stop"
    for rank in (0, 1):  # a run nodeweave run started keeps the report in its folder on every node
        kept = (tmp_path / f"n{rank}" / "nodeweave" / "runs" / "r1" / "stalls.txt").read_text()
        assert "STALL: 1 rank(s) wait in all_reduce" in kept and "1 rank (1): stopped" in kept, kept
    for node in nodes:
        err = one_report(node)
        assert "culprit rank 1 (node 1" in err and ": stopped" in err, err
        assert "1 rank (1): stopped (stopped, e.g. SIGSTOP)" in err, err
        assert re.search(r"1 rank \(0\): in all_reduce \(allreduce\.py:\d+\)", err), err


def test_a_rank_blocked_on_a_fifo_is_named_at_its_open(tmp_path):
    import os

    os.mkfifo(tmp_path / "nobody-writes")
    nodes, codes = run_to_end(tmp_path, "torchrun", ["--fifo-rank", "0", "--fifo", str(tmp_path / "nobody-writes")])
    assert codes == [7, 7], [n.text() for n in nodes]
    err = one_report(nodes[1])
    assert re.search(r"1 rank \(0\): open \(allreduce\.py:\d+\)", err), err
    assert re.search(r"1 rank \(1\): in all_reduce \(allreduce\.py:\d+\)", err), err


def test_a_rank_that_skipped_a_collective_and_finished_is_the_culprit(tmp_path):
    args = ["--steps", "12", "--interval", "0.2", "--stall-step", "6", "--skip-rank", "1", "--stall-for", "600"]
    nodes = start(tmp_path, "torchrun", args, env=STALL_ENV)
    try:
        codes = [node.wait(150) for node in nodes]
    finally:
        stop(nodes)
    assert codes == [7, 7], [n.text() for n in nodes]
    for node in nodes:
        err = one_report(node)
        assert "wait in all_reduce #13 that rank 1 (node 1" in err, err  # init + 12 all-reduces; rank 1 did 11
        assert re.search(r"1 rank \(1\): time\.sleep \(allreduce\.py:\d+\)", err), err


def test_a_long_save_on_rank_0_is_a_warning_naming_torch_save_and_the_job_completes(tmp_path):
    args = ["--steps", "60", "--interval", "0.2", "--stall-step", "6", "--save-rank", "0", "--save-for", "12"]  # runs on 10 s after
    nodes = start(tmp_path, "torchrun", args, env={"NODEWEAVE_STALL_WARN": "4", "NODEWEAVE_STALL_TIMEOUT": "60"})
    try:
        codes = [node.wait(150) for node in nodes]
    finally:
        stop(nodes)
    assert codes == [0, 0], [n.text() for n in nodes]
    for node in nodes:
        err = one_report(node)
        assert "that rank 0 (node 0" in err and "wait in barrier" in err, err
        assert re.search(r"1 rank \(0\): torch\.save \(allreduce\.py:\d+\)", err), err
        assert re.search(r"1 rank \(1\): in barrier \(allreduce\.py:\d+\)", err), err
        assert "the stall is over" in err, err


def test_a_slow_rank_is_named_as_a_straggler_with_its_gap(tmp_path):
    args = ["--steps", "170", "--interval", "0", "--work", "0.2", "--slow-rank", "1", "--slow-factor", "1.5"]
    nodes = start(tmp_path, "torchrun", args, env={"NODEWEAVE_STALL_WARN": "30"})
    try:
        codes = [node.wait(150) for node in nodes]
    finally:
        stop(nodes)
    assert codes == [0, 0], [n.text() for n in nodes]
    for node in nodes:
        err = node.text()
        found = re.search(r"STRAGGLER: rank 1 \(node 1, host [^)]*\) is (\d+)% slower", err)
        assert found and 35 <= int(found.group(1)) <= 65, err
        assert "STRAGGLER: rank 0" not in err and "STALL:" not in err, err
        first = node.first("STRAGGLER: rank 1")
        assert first - node.first("check-in: 2 node(s) agree") < 60, err


def test_stall_warn_0_puts_no_hook_on_the_ranks(tmp_path):
    nodes = start(tmp_path, "torchrun", ["--steps", "3"], env={"NODEWEAVE_STALL_WARN": "0"})
    try:
        codes = [node.wait(120) for node in nodes]
    finally:
        stop(nodes)
    assert codes == [0, 0], [n.text() for n in nodes]
    assert not (tmp_path / "n0" / "nodeweave" / "ranks").exists()


def test_status_shows_every_rank_and_stacks_dumps_them_grouped_without_stopping_anything(tmp_path):
    import json
    import os
    import subprocess
    import time

    from test_exchange_processes import ENTRY, SRC

    nodes = start(tmp_path, "torchrun", ["--steps", "100000", "--interval", "0.2", "--stall-ranks", "1",
                                         "--stall-step", "10", "--stall-for", "600"],
                  env={"NODEWEAVE_STALL_WARN": "300"})
    try:
        deadline = time.monotonic() + 90
        while nodes[1].first("NODEWEAVE-STALL", "out") is None and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(8)
        port = int(nodes[0].proc.args[nodes[0].proc.args.index("--master-port") + 1])
        out = subprocess.run([*ENTRY, "--status", "--stacks", "--nnodes", "2", "--master-addr",
                              "127.0.0.1", "--master-port", str(port)], capture_output=True, text=True, timeout=60,
                             env=one_machine_env({"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC)}), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        ranks = json.loads(out.stdout)["ranks"]
        by_rank = {r["rank"]: r for r in ranks["ranks"]}
        assert set(by_rank) == {0, 1} and by_rank[0]["seq"] == by_rank[1]["seq"] + 1, ranks
        assert by_rank[0]["inside"] and by_rank[0]["name"] == "all_reduce" and by_rank[1]["state"] == "S", ranks
        assert by_rank[1]["since_s"] >= 4, ranks
        assert re.search(r"1 rank \(1\): time\.sleep \(allreduce\.py:\d+\)", out.stderr), out.stderr
        assert re.search(r"1 rank \(0\): in all_reduce \(allreduce\.py:\d+\)", out.stderr), out.stderr
        lines = cluster_view(port)  # what `nodeweave status --stacks` prints, asked through a node
        assert any(re.match(r"rank 1 \(node 1, [^)]*\): after all_reduce #\d+ for \d+s, sleeping", x) for x in lines), lines
        assert any(re.match(r"rank 0 \(node 0, [^)]*\): in all_reduce #\d+ for \d+s", x) for x in lines), lines
        assert any(re.search(r"1 rank \(1\): time\.sleep \(allreduce\.py:\d+\)", x) for x in lines), lines
        assert any(re.match(r"rank 0 \(node 0, .*, flight recorder: enqueued seq \d+, completed seq \d+$", x)
                   for x in lines), lines
        assert any(re.match(r"  rank 0: entered seq \d+ gloo:all_reduce \[\[1\]\] Float \(not completed", x)
                   for x in lines), lines
        assert all(node.proc.poll() is None for node in nodes)  # nothing was stopped
        assert "STALL:" not in nodes[0].text()
    finally:
        stop(nodes)


def cluster_view(port):
    """``nodeweave status --stacks``'s rank lines, asked through a cluster node that is this machine."""
    import os
    import sys
    from dataclasses import dataclass

    from nodeweave.cluster.base import Node
    from nodeweave.cluster.status import ask_ranks, rank_lines
    from nodeweave.remote.base import Remote

    @dataclass(frozen=True)
    class Here(Remote):
        kind = "here"

        def exec_argv(self, argv, stdin=True, tty=False):
            return list(argv)

    env = (("PATH", f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"), ("NNODES", "2"), ("NODE_RANK", "1"),
           ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", str(port)), *one_machine_env().items())
    ranks, tried = ask_ranks([Node(1, Here("node1"), env=env)], stacks=True)
    assert ranks, tried
    return rank_lines(ranks)


def test_a_ddp_rank_stuck_before_backward_is_named_through_the_flight_recorder(tmp_path):
    """DDP's all-reduce is issued by its reducer in C++: the Python counts stay equal, torch's flight recorder
    (on by default) counts it, names the culprit and each rank's last collective."""
    nodes, codes = run_to_end(tmp_path, "torchrun", ["--ddp", "--stall-ranks", "1", "--stall-for", "600"],
                              env={"NODEWEAVE_RUN_ID": "r1"})
    assert codes == [7, 7], [n.text() for n in nodes]
    for node in nodes:
        err = one_report(node)
        assert "wait in a collective issued from C++ (flight recorder seq " in err and "that rank 1 (node 1" in err, err
        assert re.search(r"rank 0: entered seq (\d+) gloo:all_reduce \[\[9\]\] Float \(not completed", err), err
        assert re.search(r"rank 1: entered seq \d+ gloo:all_reduce \[\[9\]\] Float; completed seq \d+", err), err
        assert re.search(r"1 rank \(1\): time\.sleep \(allreduce\.py:\d+\)", err), err
    kept = tmp_path / "n1" / "nodeweave" / "runs" / "r1" / "flight" / "rank-1.json"
    assert '"recorders"' in kept.read_text()


def test_the_flight_recorder_is_off_when_the_user_sets_its_size_to_0(tmp_path):
    nodes, codes = run_to_end(tmp_path, "torchrun", ["--stall-ranks", "1", "--stall-for", "600"],
                              env={"TORCH_FR_BUFFER_SIZE": "0"})
    assert codes == [7, 7], [n.text() for n in nodes]
    err = one_report(nodes[0])
    assert "flight recorder" not in err and "wait in all_reduce #8 that rank 1" in err, err
    assert not list((tmp_path / "n0" / "nodeweave" / "ranks").rglob("*.flight.json"))
    assert list((tmp_path / "n0" / "nodeweave" / "ranks").rglob("rank-0.where.json"))  # the stacks still asked


def test_two_nodes_sharing_one_tmpdir_report_each_rank_once(tmp_path):
    """Two nodes on one host with one TMPDIR (bare hosts, the process simulation): each node keeps its ranks'
    records in its own folder, so the report names rank 1 once and lists each rank's stack once."""
    shared = {"TMPDIR": str(tmp_path / "shared")}
    nodes, codes = run_to_end(tmp_path, "torchrun", ["--stall-ranks", "1", "--stall-for", "600"],
                              per_node={0: shared, 1: shared})
    assert codes == [7, 7], [n.text() for n in nodes]
    for node in nodes:
        err = one_report(node)
        assert "STALL: 1 rank(s) wait in all_reduce #8 that rank 1 (node 1, host " in err, err
        assert "has not entered" in err and "rank 1 (node 0" not in err, err
        assert "stacks of 2 rank(s), 2 class(es)" in err, err
        assert re.search(r"1 rank \(1\): time\.sleep \(allreduce\.py:\d+\)", err), err
        assert re.search(r"1 rank \(0\): in all_reduce \(allreduce\.py:\d+\)", err), err


def test_after_a_stall_stop_the_report_is_the_last_thing_printed_and_the_launchers_output_is_kept(tmp_path):
    """torchrun answers the stop's SIGTERM with its SignalException traceback: it goes to a file the stop line
    names, not under the report."""
    nodes, codes = run_to_end(tmp_path, "torchrun", ["--stall-ranks", "1", "--stall-for", "600"],
                              env={"NODEWEAVE_RUN_ID": "r1"})
    assert codes == [7, 7], [n.text() for n in nodes]
    for i, node in enumerate(nodes):
        err = one_report(node)
        after = err.split("STALL:", 1)[1]
        assert "Traceback" not in after and "SignalException" not in after, err
        last = err.strip().splitlines()[-1]
        kept = tmp_path / f"n{i}" / "nodeweave" / "runs" / "r1" / f"launcher-after-stop-node-{i}.log"
        assert "stopping this node's launcher (exit 7: stalled)" in last and str(kept) in last, err
        assert "SignalException" in kept.read_text(), kept.read_text()
