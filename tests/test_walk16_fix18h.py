"""walk16b's rows fixed by fix18h, one test per class (each failed on the code it started from)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _entry(tmp_path, env, *args):
    """``nodeweave-entrypoint args`` in ``tmp_path`` with only ``env`` (and the interpreter's PATH) set."""
    full = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src"),
            "HOME": str(tmp_path), **env}
    from cli_run import entrypoint

    return entrypoint(*args, cwd=tmp_path, env=full, timeout=120)


# class 1: the platform's count variables (WORLD_SIZE, ROLE_WORLD_SIZE, GROUP_WORLD_SIZE) under recovery with spares
# are judged once, on the plan a node checks in with (every container): the training count and the containers'
# are both accepted there, and neither --explain's generation 0 nor a generation's plan judges them again
def test_a_platform_count_under_recovery_with_spares_is_judged_once_and_a_start_runs(tmp_path):
    (tmp_path / "train.py").write_text("print('ok')\n")
    base = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_SPARES": "1", "NODEWEAVE_RECOVERY": "on",
            "NODEWEAVE_CHECKPOINT_DIR": "ck", "NODEWEAVE_MASTER_ADDR": "127.0.0.1"}
    for rank in ("0", "1", "2"):
        for name, value in (("WORLD_SIZE", "3"), ("WORLD_SIZE", "2"), ("ROLE_WORLD_SIZE", "3"),
                            ("ROLE_WORLD_SIZE", "2"), ("GROUP_WORLD_SIZE", "3")):
            done = _entry(tmp_path, dict(base, NODEWEAVE_NODE_RANK=rank, **{name: value}), "--explain", "--",
                          "train.py")
            assert done.returncode == 0, (rank, name, value, done.stdout[-800:], done.stderr[-800:])
            assert "export WORLD_SIZE=2" in done.stdout  # what every generation's ranks get
    wrong = _entry(tmp_path, dict(base, NODEWEAVE_NODE_RANK="1", WORLD_SIZE="4"), "--explain", "--", "train.py")
    assert wrong.returncode == 3 and "Traceback" not in wrong.stderr
    assert ("accepted: 2 (the training nodes, as nodeweave exports it) or 3 (every container, spares too: the "
            "platform's count)") in wrong.stderr

    # a generation's start that every node refuses for its settings ends with that code, naming it, not 10
    from nodeweave.entrypoint.errors import TopologyError
    from nodeweave.entrypoint.news import Cause, Evidence, NodeId
    from nodeweave.entrypoint.recovery import decide
    from nodeweave.entrypoint.recovery.book import Book
    from nodeweave.entrypoint.running.symptoms import start_failure

    error = start_failure(TopologyError("WORLD_SIZE=5 contradicts 2 node(s) x 1 process(es) per node"))
    heard = [Evidence(cause=Cause.CRASH, label=f"node {n}", at=1.0 + n, node=NodeId(n), own=True, error=error,
                      how="its start failed") for n in (1, 0)]
    book = Book(members=(NodeId(0), NodeId(1)))
    fault = decide.judged(heard, book, 9.0)
    stopped = decide.job_error(book, fault.error["nodes"], fault.error)
    assert stopped.code == 3 and stopped.ended.startswith("every node's start refused its settings"), stopped

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from recovery_harness import finish, start

    nodes = start(tmp_path, ["--steps", "3", "--interval", "0"], nodes=2, spares=1, env={"WORLD_SIZE": "3"})
    codes = finish(nodes, limit=200)
    logs = [node.text()[-1500:] for node in nodes]
    assert codes == [0, 0, 0], (codes, logs)


# class 4: a flag the mode does not read (--status reads only where the exchange is, which job, how many nodes) is
# refused for that first, before any rule or value of the flag: its other refusals would send a person to a fix
# the next answer refuses again
def test_a_flag_the_mode_does_not_read_is_refused_for_that_first(tmp_path):
    for args in (["--status", "--spares", "1"], ["--status", "--spares", "abc"],
                 ["--status", "--stall-warn", "5", "--stall-timeout", "3"], ["--status", "--nnodes", "2", "--spares", "1"]):
        done = _entry(tmp_path, {}, *args)
        assert done.returncode == 2, (args, done.stderr)
        flag = args[1] if args[1] != "--nnodes" else "--spares"
        assert done.stderr.startswith(f"nodeweave-entrypoint: error: {flag} does nothing with --status"), (args,
                                                                                                            done.stderr)


# class 3: a worker's plain exit with a code of its own (no exception, no signal) is named in the first-failure
# verdict as a signal is: whose rank, its code, and the last line before its launcher reported it
TORCHRUN_EXIT_3 = """rank 1: dataset shard missing, giving up
E1201 12:55:13.806000 31835 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 3) local_rank: 0 (pid: 32379) of binary: /opt/venv/bin/python3
Traceback (most recent call last):
  File "/opt/venv/bin/torchrun", line 6, in <module>
    sys.exit(main())
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
fail.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-01_12:55:13
  host      : vm
  rank      : 1 (local_rank: 0)
  exitcode  : 3 (pid: 32379)
  error_file: <N/A>
============================================================
"""


def test_a_workers_own_exit_code_and_its_last_line_are_named_first():
    from nodeweave.entrypoint.running.symptoms import named_first, told

    assert named_first("torchrun exited 1", TORCHRUN_EXIT_3) == (
        "torchrun exited 1: rank 1 exited 3 (last line before it: rank 1: dataset shard missing, giving up)")
    assert told(TORCHRUN_EXIT_3).startswith("the cause: rank 1 exited 3")
    silent = TORCHRUN_EXIT_3.replace("rank 1: dataset shard missing, giving up\n", "")
    assert named_first("torchrun exited 1", silent) == "torchrun exited 1: rank 1 exited 3"
    deepspeed = "rank 1: no data\n[2026-12-01 12:00:00,000] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 7\n" \
                "[2026-12-01 12:00:00,001] [ERROR] [launch.py:325:sigkill_handler] ['python', 'fail.py'] exits with " \
                "return code = 3\n"
    assert named_first("deepspeed exited 3", deepspeed) == (
        "deepspeed exited 3: a worker exited 3 (last line before it: rank 1: no data)")


# class 2: a person's stop of node 0 (Ctrl-C) under recovery ends the job on every node, whatever order the news
# arrives in: the failure its own stop causes on another node (a peer gone, that node's ranks ended) never wins
SLOW_STOP = """import os, signal, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
stops = {signal.SIGINT, signal.SIGTERM}
if rank == 0:  # its launcher's exit waits 6 s for it: the other node's failure reaches node 0 first
    for number in stops:  # torchrun passes a SIGINT on as SIGINT
        signal.signal(number, lambda *_: (time.sleep(6), os._exit(1)))
else:  # the others end at once, and the other node's ranks see their peers gone
    for number in stops:
        signal.signal(number, signal.SIG_DFL)
step = 0
while True:
    dist.all_reduce(torch.ones(1))
    step += 1
    if step == 5:
        print(f"rank {rank} training", flush=True)
    time.sleep(0.1)
"""


def test_a_ctrl_c_of_node_0_under_recovery_wins_over_the_failure_it_causes(tmp_path):
    import signal
    import time

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from stall_nodes import start, stop

    (tmp_path / "slow_stop.py").write_text(SLOW_STOP)
    nodes = start(tmp_path, "torchrun", ["slow_stop.py"], nodes=2, nproc=2,
                  env={"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_CHECKPOINT_DIR": str(tmp_path / "ck"),
                       "NODEWEAVE_STALL_WARN": "0", "NODEWEAVE_WAIT_TIMEOUT": "120"})
    try:
        deadline = time.monotonic() + 150
        while "rank 0 training" not in nodes[0].text("out") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "rank 0 training" in nodes[0].text("out"), nodes[0].text()[-2000:]
        nodes[0].proc.send_signal(signal.SIGINT)
        codes = [node.wait(60) for node in nodes]
    finally:
        stop(nodes)
    said = nodes[0].text()
    assert codes == [130, 5], (codes, said[-2500:], nodes[1].text()[-1500:])
    assert "a deliberate stop of node 0 (Ctrl-C) ends the job on every node" in said, said[-2500:]
