"""Several real ``nodeweave-entrypoint`` processes on this machine, checking in over loopback.

Each process is one simulated node (master 127.0.0.1, live root; every node on this one machine, as
benchmarks/one_machine.py says, so a container of its own runs them as a VM does). The
launcher is a plain command or a stand-in ``torchrun`` on PATH (a shell script
that sleeps, fails or finishes), so the supervision, the check-in and the
heartbeat run exactly as in a container.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from free_ports import free_port_pair
from one_machine import one_machine_env

SRC = Path(__file__).resolve().parents[1] / "src"
SCRIPT = Path(sys.executable).parent / "nodeweave-entrypoint"
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "nodeweave.entrypoint"]


def checked_in(node_tmp, procs, limit=120):
    """Until the node whose TMPDIR is ``node_tmp`` recorded its check-in (``jobs/*/checkin.json``); fails naming
    every node's exit code after ``limit`` s or once one ended."""
    deadline = time.monotonic() + limit
    while not list((node_tmp / "nodeweave").glob("jobs/*/checkin.json")):
        if time.monotonic() > deadline or any(proc.poll() is not None for proc in procs):
            raise AssertionError(f"no check-in recorded under {node_tmp} (exit codes {[p.poll() for p in procs]})")
        time.sleep(0.1)


def start_nodes(tmp_path, nodes, command, per_node_env=None, env=None, launcher="command", ranks=None, counts=None):
    port = free_port_pair()
    procs = []
    for index in range(nodes):
        rank = ranks[index] if ranks else index
        node_env = one_machine_env({"PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHONPATH": str(SRC),
                                    "TMPDIR": str(tmp_path / f"n{index}"), "NODEWEAVE_WAIT_TIMEOUT": "20",
                                    **(env or {}), **((per_node_env or {}).get(index, {}))})
        argv = [*ENTRY, "--launcher", launcher, "--nnodes", str(counts[index] if counts else nodes), "--node-rank", str(rank),
                "--master-addr", "127.0.0.1", "--master-port", str(port), "--", *command]
        procs.append(subprocess.Popen(argv, env=node_env, cwd=tmp_path, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return procs


def finish(procs, timeout=60):
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        out.append((proc.returncode, stdout, stderr))
    return out


def test_three_nodes_with_uneven_counts_agree_and_see_the_real_world_size(tmp_path):
    procs = start_nodes(tmp_path, 3, ["sh", "-c", 'echo "$NODE_RANK $WORLD_SIZE"'],
                        per_node_env={i: {"NODEWEAVE_NPROC_PER_NODE": str(i + 1)} for i in range(3)})
    results = finish(procs)
    for rank, (code, stdout, stderr) in enumerate(results):
        assert code == 0, stderr
        assert stdout.split() == [str(rank), "6"], stderr
        assert "check-in: 3 node(s) agree" in stderr and "world size 6" in stderr, stderr
        assert "Traceback" not in stderr


def test_one_node_with_another_nccl_makes_every_node_exit_3_with_the_table(tmp_path):
    procs = start_nodes(tmp_path, 3, ["true"], per_node_env={2: {"NODEWEAVE_NCCL_VERSION": "2.26.2"}},
                        env={"NODEWEAVE_NCCL_VERSION": "2.21.5"})
    for code, _, stderr in finish(procs):
        assert code == 3, stderr
        assert "check-in refused the job" in stderr
        assert "2.26.2 *" in stderr and "refuse nccl" in stderr and "node 2 (" in stderr, stderr


def test_allow_starts_anyway_with_the_warning_in_the_start_up_line(tmp_path):
    procs = start_nodes(tmp_path, 2, ["true"], per_node_env={1: {"NODEWEAVE_NCCL_VERSION": "2.26.2"}},
                        env={"NODEWEAVE_NCCL_VERSION": "2.21.5", "NODEWEAVE_EXCHANGE_ALLOW": "nccl"})
    for code, _, stderr in finish(procs):
        assert code == 0, stderr
        assert "checked in with warnings: nccl" in stderr and "allowed by NODEWEAVE_EXCHANGE_ALLOW" in stderr


def test_a_duplicate_rank_is_refused_on_every_node(tmp_path):
    procs = start_nodes(tmp_path, 3, ["true"], ranks=[0, 1, 1])
    for code, _, stderr in finish(procs):
        assert code == 3, stderr
        assert "two nodes claim the same node rank" in stderr, stderr


def test_a_node_that_cannot_reach_node_0_exits_4(tmp_path):
    procs = start_nodes(tmp_path, 2, ["true"], env={"NODEWEAVE_WAIT_TIMEOUT": "2"})
    procs[0].kill()  # node 0 never serves
    code, _, stderr = finish(procs[1:])[0]
    procs[0].wait()
    assert code == 4, stderr
    assert "node 0's check-in exchange 127.0.0.1:" in stderr and "not reachable after 2s" in stderr


FAKE_TORCHRUN = """#!/bin/sh
# a stand-in launcher: node 1 fails after a second, the others would run for a minute
echo "worker output of node $NODE_RANK"
if [ "$NODE_RANK" = "$FAIL_RANK" ]; then sleep 1; echo "ValueError: boom on node $NODE_RANK" >&2; exit 1; fi
exec sleep "${RUN_FOR:-60}"
"""


def fake_torchrun(tmp_path):
    fake = tmp_path / "torchrun"
    fake.write_text(FAKE_TORCHRUN)
    fake.chmod(0o755)
    (tmp_path / "train.py").write_text("")  # the entrypoint checks the script exists before the launch


def test_a_failing_node_ends_the_whole_job_within_seconds_and_is_named(tmp_path):
    fake_torchrun(tmp_path)
    started = time.monotonic()
    procs = start_nodes(tmp_path, 3, ["train.py"], launcher="torchrun", env={"FAIL_RANK": "1"})
    results = finish(procs, timeout=45)
    took = time.monotonic() - started
    assert took < 25, f"{took:.1f} s"
    codes = [code for code, _, _ in results]
    assert codes == [5, 1, 5], results
    for rank in (0, 2):
        stderr = results[rank][2]
        assert "node 1 (" in stderr and "failed: torchrun exited 1" in stderr, stderr
        assert "ValueError: boom on node 1" in stderr, stderr
    assert "worker output of node 1" in results[1][1]  # the launcher's own output still reaches the log


def test_a_clean_finish_is_quiet(tmp_path):
    fake_torchrun(tmp_path)
    procs = start_nodes(tmp_path, 2, ["train.py"], launcher="torchrun", env={"RUN_FOR": "1"})
    for code, stdout, stderr in finish(procs):
        assert code == 0, stderr
        assert "failed" not in stderr and "heartbeat on" in stderr


@pytest.mark.parametrize("victim", [0, 1])
def test_a_killed_entrypoint_stops_the_others(tmp_path, victim):
    fake_torchrun(tmp_path)
    procs = start_nodes(tmp_path, 3, ["train.py"], launcher="torchrun")
    checked_in(tmp_path / f"n{victim}", procs)
    time.sleep(0.5)
    procs[victim].kill()  # SIGKILL: no report, the connection just ends
    killed_at = time.monotonic()
    results = finish([p for i, p in enumerate(procs) if i != victim], timeout=45)
    assert time.monotonic() - killed_at < 20
    for code, _, stderr in results:
        assert code == 5, stderr
        assert f"node {victim} (" in stderr and "failed" in stderr, stderr


def test_status_shows_every_node_as_node_0_sees_it(tmp_path):
    import json

    fake_torchrun(tmp_path)
    procs = start_nodes(tmp_path, 3, ["train.py"], launcher="torchrun", env={"RUN_FOR": "30"},
                        per_node_env={2: {"NODEWEAVE_NPROC_PER_NODE": "2"}})
    try:
        checked_in(tmp_path / "n0", procs)
        port = int(procs[0].args[procs[0].args.index("--master-port") + 1])
        out = subprocess.run([*ENTRY, "--status", "--nnodes", "3", "--master-addr", "127.0.0.1",
                              "--master-port", str(port)], capture_output=True, text=True, timeout=30,
                             env=one_machine_env({"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC)}), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        status = json.loads(out.stdout)
        assert status["phase"] == "running" and status["verdict"]["decision"] == "start"
        assert sorted(node["fp"]["rank"] for node in status["nodes"]) == [0, 1, 2]
        assert [n["fp"]["nproc"] for n in sorted(status["nodes"], key=lambda n: n["fp"]["rank"])] == [1, 1, 2]
        assert all(node["probe"] == "ok" for node in status["nodes"] if not node["own"])
    finally:
        for proc in procs:
            proc.kill()
        finish(procs)


def test_status_of_another_job_is_refused(tmp_path):
    fake_torchrun(tmp_path)
    procs = start_nodes(tmp_path, 2, ["train.py"], launcher="torchrun", env={"RUN_FOR": "30"})
    try:
        checked_in(tmp_path / "n0", procs)
        port = int(procs[0].args[procs[0].args.index("--master-port") + 1])
        out = subprocess.run([*ENTRY, "--status", "--nnodes", "2", "--master-addr", "127.0.0.1",
                              "--master-port", str(port)], capture_output=True, text=True, timeout=30,
                             env=one_machine_env({"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC),
                                                  "NODEWEAVE_JOB_TOKEN": "guess"}),
                             cwd=tmp_path)
        assert out.returncode == 3 and "without this job's token" in out.stderr, out.stderr
    finally:
        for proc in procs:
            proc.kill()
        finish(procs)


def test_a_token_file_is_the_same_secret_as_the_variable(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("s3cret-from-a-mounted-secret\n")
    procs = start_nodes(tmp_path, 2, ["true"], per_node_env={0: {"NODEWEAVE_JOB_TOKEN_FILE": str(secret)},
                                                            1: {"NODEWEAVE_JOB_TOKEN": "s3cret-from-a-mounted-secret"}})
    for code, _, stderr in finish(procs):
        assert code == 0, stderr
        assert "check-in: 2 node(s) agree" in stderr, stderr


def test_a_node_with_another_token_file_is_turned_away(tmp_path):
    (tmp_path / "ours").write_text("ours")
    (tmp_path / "theirs").write_text("theirs")
    procs = start_nodes(tmp_path, 2, ["true"], env={"NODEWEAVE_WAIT_TIMEOUT": "4"},
                        per_node_env={0: {"NODEWEAVE_JOB_TOKEN_FILE": str(tmp_path / "ours")},
                                      1: {"NODEWEAVE_JOB_TOKEN_FILE": str(tmp_path / "theirs")}})
    (code0, _, err0), (code1, _, err1) = finish(procs)
    assert code1 == 3 and "token" in err1, err1
    assert code0 == 3 and "node 1" in err0, err0


@pytest.mark.parametrize("content", [None, "  \n"])
def test_an_unreadable_or_empty_token_file_is_refused_before_any_wait(tmp_path, content):
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    out = subprocess.run([*ENTRY, "--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--", "true"],
                         capture_output=True, text=True, timeout=30, cwd=tmp_path,
                         env=one_machine_env({"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC),
                                              "NODEWEAVE_JOB_TOKEN_FILE": str(path)}))
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("NODEWEAVE_JOB_TOKEN_FILE=") == 1 and str(path) in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
