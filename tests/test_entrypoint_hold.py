"""Hold mode, the run records ``nodeweave run`` leaves on a node, and stopping a run's whole process tree.

The entrypoint, its records and its stopper are the real ones, run as
processes; the launchers are small shell scripts standing in for torchrun
that behave as it does where it matters here: each worker in a session of its
own (torch's ``start_new_session=True``), SIGTERM trapped or not.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest

from nodeweave.entrypoint import make_plan
from nodeweave.entrypoint.nodeinfo import plan_summary

FIX = Path(__file__).parent / "fixtures" / "synthetic"
SRC = Path(__file__).resolve().parents[1] / "src"

# torchrun-like: two workers, each in a session of its own; exits when they do.
LAUNCHER = """#!/bin/sh
setsid sleep 300 &
echo $! >> "$TMPDIR/workers"
setsid sleep 301 &
echo $! >> "$TMPDIR/workers"
echo launched
wait
"""
# A launcher that ignores SIGTERM: only SIGKILL ends it.
STUBBORN = """#!/bin/sh
trap '' TERM
setsid sh -c "trap '' TERM; while :; do sleep 0.1; done" &
echo $! >> "$TMPDIR/workers"
echo $$ >> "$TMPDIR/workers"
echo launched
while :; do sleep 0.1; done
"""


def environment(tmp_path, **extra):
    return {"PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHONPATH": str(SRC), "TMPDIR": str(tmp_path),
            "NODEWEAVE_WAIT_TIMEOUT": "0", **extra}


def entrypoint(tmp_path, *args, env=None, **kw):
    return cli_run.popen([*cli_run.ENTRYPOINT, *args], env=env or environment(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path, **kw)


def node(tmp_path, *args):
    out = cli_run.run([*cli_run.ENTRYPOINT, "--node", *args], env=environment(tmp_path),
                         cwd=tmp_path, timeout=60)
    return json.loads(out.stdout), out.returncode


def wait_for(predicate, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_hold_plans_prints_records_and_ends_on_sigterm_with_zero(tmp_path):
    proc = entrypoint(tmp_path, "--mode", "hold", "--sysroot", str(FIX / "compose-sim"), "--nnodes", "2",
                      "--", "train.py")
    record = tmp_path / "nodeweave" / "hold.json"
    wait_for(record.exists, "hold.json")
    status, code = node(tmp_path, "status")
    assert code == 0 and status["mode"] == "hold" and status["plan"]["node_rank"] == 1
    assert status["plan"]["master"] == "llama-0:29500" and status["runs"] == []
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "Topology" in out and "holding: node 1 of 2" in out and "hold ended by SIGTERM" in out
    assert not record.exists()
    # no training script in the working directory: hold does not care, a run would
    assert "is not in the working directory" not in out


def test_hold_refuses_what_a_start_would_refuse_before_holding(tmp_path):
    proc = entrypoint(tmp_path, "--mode", "hold", "--sysroot", str(FIX / "cpu-only"), "--nnodes", "2",
                      "--node-rank", "2", "--master-addr", "10.0.0.1", "--", "train.py")
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "rank" in out and "Traceback" not in out, out
    assert not (tmp_path / "nodeweave" / "hold.json").exists()


def test_the_plan_hash_is_what_nodes_share_not_who_they_are():
    def summary(rank, nnodes="2", command=("train.py",)):
        env = {"NODE_RANK": str(rank), "NNODES": nnodes, "MASTER_ADDR": "10.0.0.1"}
        return plan_summary(make_plan(["--", *command], env=env, sysroot=str(FIX / "cpu-only")), command)

    assert summary(0)["hash"] == summary(1)["hash"] and summary(0)["node_rank"] != summary(1)["node_rank"]
    assert summary(0)["hash"] != summary(0, nnodes="3")["hash"]
    assert summary(0)["hash"] != summary(0, command=("other.py",))["hash"]


def start_run(tmp_path, script, run_id="20260101T000000Z-job"):
    fake = tmp_path / "torchrun"
    fake.write_text(script)
    fake.chmod(0o755)
    (tmp_path / "train.py").write_text("")
    proc = entrypoint(tmp_path, "--mode", "run", "--run-id", run_id, "--sysroot", str(FIX / "cpu-only"),
                      "--", "train.py", start_new_session=True)
    wait_for(lambda: (tmp_path / "nodeweave" / "runs" / run_id / "plan.json").exists(), "the launch")
    return proc


def descendants_alive(tmp_path):
    """The fake launcher's workers (and itself, when it ignores SIGTERM) that still run."""
    try:
        pids = [int(p) for p in (tmp_path / "workers").read_text().split()]
    except FileNotFoundError:
        return []
    alive = []
    for pid in pids:
        try:
            state = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def test_a_recorded_run_is_seen_and_its_whole_tree_stopped_with_sigterm(tmp_path):
    proc = start_run(tmp_path, LAUNCHER)
    status, _ = node(tmp_path, "status")
    assert [r["run_id"] for r in status["runs"]] == ["20260101T000000Z-job"]
    plan = json.loads((tmp_path / "nodeweave" / "runs" / "20260101T000000Z-job" / "plan.json").read_text())
    assert plan["schema"] == "nodeweave.entrypoint/1" and plan["launch"]["argv"][0] == "torchrun"
    wait_for(lambda: len(descendants_alive(tmp_path)) == 2, "the two workers")
    report, code = node(tmp_path, "stop", "--grace", "5")
    assert code == 0 and report["left"] is False
    (stopped,) = report["stopped"]
    assert stopped["processes"] >= 4 and not stopped["killed"]  # entrypoint, launcher, two workers
    # the stop shows as SIGTERM: 143 from the supervising entrypoint, or the signal itself when it arrived
    # before the launcher was forked (nothing else was running then)
    assert proc.wait(timeout=60) in (143, -signal.SIGTERM)
    assert descendants_alive(tmp_path) == []
    assert node(tmp_path, "status")[0]["runs"] == []


def test_a_run_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    proc = start_run(tmp_path, STUBBORN, run_id="r2")
    wait_for(lambda: len(descendants_alive(tmp_path)) == 2, "the stubborn launcher and its worker")
    started = time.monotonic()
    report, code = node(tmp_path, "stop", "--grace", "1")
    assert code == 0 and report["stopped"][0]["killed"], report
    assert 1 <= time.monotonic() - started < 8
    proc.wait(timeout=60)
    assert descendants_alive(tmp_path) == []


def test_a_worker_still_waiting_for_its_master_is_recorded_and_stopped(tmp_path):
    """Stopped before it launched anything: the record is written first, so stop finds it."""
    (tmp_path / "train.py").write_text("")
    proc = entrypoint(tmp_path, "--mode", "run", "--run-id", "waiting", "--sysroot", str(FIX / "cpu-only"),
                      "--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port", "9",
                      "--wait-timeout", "120", "--", "train.py", start_new_session=True)
    wait_for((tmp_path / "nodeweave" / "runs" / "waiting" / "run.json").exists, "the record")
    status, _ = node(tmp_path, "status")
    assert [r["run_id"] for r in status["runs"]] == ["waiting"]
    started = time.monotonic()
    report, code = node(tmp_path, "stop", "--grace", "3")
    assert code == 0 and report["stopped"][0]["processes"] == 1 and not report["stopped"][0]["killed"], report
    assert proc.wait(timeout=60) in (143, -signal.SIGTERM)
    assert time.monotonic() - started < 5


def test_a_second_run_on_a_busy_node_is_refused_with_exit_5(tmp_path):
    first = start_run(tmp_path, LAUNCHER, run_id="first")
    try:
        second = entrypoint(tmp_path, "--mode", "run", "--run-id", "second", "--sysroot", str(FIX / "cpu-only"),
                            "--", "train.py")
        out, _ = second.communicate(timeout=30)
        assert second.returncode == 6 and "run first is still in progress" in out, out
    finally:
        node(tmp_path, "stop", "--grace", "2")
        first.wait(timeout=60)


def test_report_gives_the_record_the_plan_and_the_sync_stamp(tmp_path):
    (tmp_path / ".nodeweave-sync.json").write_text(json.dumps({"digest": "abc", "commit": "1234"}))
    proc = start_run(tmp_path, LAUNCHER, run_id="r3")
    node(tmp_path, "stop", "--grace", "2")
    proc.wait(timeout=60)
    report, code = node(tmp_path, "report", "r3")
    assert code == 0 and report["run"]["run_id"] == "r3" and report["alive"] is False
    assert report["plan"]["topology"]["node_rank"]["value"] == 0 and report["stamp"]["digest"] == "abc"


def test_unknown_node_action_is_a_usage_error(tmp_path):
    out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "dance"], env=environment(tmp_path))
    assert out.returncode == 2 and "'dance' is not an action" in out.stderr
    assert all(action in out.stderr for action in ("status", "stop", "report", "ready", "live"))


@pytest.mark.parametrize("bad", ["", "-x", "a b", "../up", "x" * 129])
def test_a_run_id_that_cannot_be_a_folder_name_is_refused(tmp_path, bad):
    out = cli_run.run([*cli_run.ENTRYPOINT, "--run-id", bad, "--explain", "--", "t.py"],
                         env=environment(tmp_path))
    says = "--run-id is given an empty value" if bad == "" else "run id"  # '' is refused as every empty flag value
    assert out.returncode == 2 and says in out.stderr, out.stderr


def test_stop_with_a_run_id_finds_an_entrypoint_that_has_not_recorded_itself(tmp_path):
    """Between its exec and its record, a run is known by its command line (--run-id ID)."""
    from nodeweave.entrypoint.running.runstate import unrecorded_runs

    here = environment(tmp_path)  # the node's: an entrypoint of another $TMPDIR is another node's (walk10 B9)
    sleeper = tmp_path / "nodeweave-entrypoint"  # a stand-in entrypoint: found by its program and its --run-id
    sleeper.write_text("import time; time.sleep(60)\n")
    other = subprocess.Popen([sys.executable, str(sleeper), "--run-id", "earlier"], env=here)
    stand_in = subprocess.Popen([sys.executable, str(sleeper), "--run-id", "early"], env=here)
    try:
        wait_for(lambda: unrecorded_runs("early", set(), here), "the process's command line")  # set just after exec
        found = unrecorded_runs("early", set(), here)
        assert [r["pid"] for r in found] == [stand_in.pid]  # the whole argument, not a prefix
        report, code = node(tmp_path, "stop", "--run", "early", "--grace", "2")
        assert code == 0 and report["stopped"][0]["processes"] == 1
        assert stand_in.wait(timeout=60) == -signal.SIGTERM
        assert node(tmp_path, "stop", "--run", "other")[0]["stopped"] == []
    finally:
        for proc in (other, stand_in):
            proc.kill()
            proc.wait()


def spare_environment(tmp_path, pod, **extra):
    """A container of a job with recovery on, two training nodes and one spare (nodeweave up --hold's)."""
    # a wait timeout above 0: 0 switches the exchange off, which recovery runs on (refused, as --exchange off is)
    return environment(tmp_path, POD_NAME=pod, NODEWEAVE_NNODES="2", NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1",
                       **{"NODEWEAVE_WAIT_TIMEOUT": "5", **extra})


def test_a_spare_in_hold_mode_holds_as_a_spare_and_says_so(tmp_path):
    """Issue 41: the spare's plan failed with 'node rank 2 ... is not below the node count 2' (exit 2), and its
    restart policy restarted it five times. It holds, says it is a spare, and `--node status` reports its role."""
    proc = entrypoint(tmp_path, "--", "train.py", env=spare_environment(tmp_path, "rj-2", NODEWEAVE_MODE="hold"))
    record = tmp_path / "nodeweave" / "hold.json"
    try:
        wait_for(lambda: record.exists() or proc.poll() is not None, "hold.json")
        assert proc.poll() is None, proc.communicate()[0]
        out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "status", "--", "train.py"],
                             env=spare_environment(tmp_path, "rj-2"), cwd=tmp_path,
                             timeout=60)
        status = json.loads(out.stdout)
        assert out.returncode == 0 and status["mode"] == "hold" and status["plan"]["errors"] == [], status
        assert status["plan"]["role"]["kind"] == "spare" and status["plan"]["role"]["identity"] == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "holding: as a spare: container 2 of 3" in out and "not below the node count" not in out, out
    assert "Role" in out and "spare (container identity 2)" in out, out


def test_a_training_node_of_a_job_with_a_spare_holds_as_its_training_rank(tmp_path):
    proc = entrypoint(tmp_path, "--", "train.py", env=spare_environment(tmp_path, "rj-1", NODEWEAVE_MODE="hold"))
    wait_for(lambda: (tmp_path / "nodeweave" / "hold.json").exists() or proc.poll() is not None, "hold.json")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "holding: node 1 of 2 training node(s) (+1 spare(s))" in out, out
    assert "overrides NODEWEAVE_NNODES" not in out, out  # one count for the containers, no warning about it


@pytest.mark.parametrize("pod, kind, rank", [("rj-0", "training node", 0), ("rj-1", "training node", 1),
                                             ("rj-2", "spare", None)])
def test_explain_shows_each_nodes_role_in_text_and_json(tmp_path, pod, kind, rank):
    """`--explain` on a spare failed with the same 'not below the node count' error; now every node's explain
    names its role (training node i, or spare and why), in text and in --json."""
    env = spare_environment(tmp_path, pod)
    (tmp_path / "train.py").write_text("print(1)\n")  # a missing script is an error of the plan (exit 2)
    text = cli_run.run([*cli_run.ENTRYPOINT, "--explain", "--", "train.py"], env=env,
                          cwd=tmp_path, timeout=60)
    assert text.returncode == 0 and "Errors" not in text.stdout, text.stdout + text.stderr
    name = f"training node {rank}" if rank is not None else "spare"
    assert f"this node    {name} (container identity {pod[-1]})" in text.stdout, text.stdout
    raw = cli_run.run([*cli_run.ENTRYPOINT, "--explain", "--json", "--", "train.py"],
                         env=env, cwd=tmp_path, timeout=60)
    plan = json.loads(raw.stdout)
    assert raw.returncode == 0 and plan["errors"] == [], plan["errors"]
    assert (plan["role"]["kind"], plan["role"]["rank"], plan["role"]["identity"]) == (kind, rank, int(pod[-1]))
    if kind == "spare":
        assert "wait to take a left-out node's place" in plan["role"]["why"]


def test_explain_on_a_node_left_out_says_so_and_why(tmp_path):
    """A node the running job left out (its kept book says so) explains itself as left out, with the reason."""
    folder = tmp_path / "nodeweave" / "jobs" / "rj-29500"  # the job's folder (runstate.job_dir, left11a B8)
    folder.mkdir(parents=True)
    (folder / "recovery.json").write_text(json.dumps({
        "generation": 1, "decision": "start", "members": [0, 2], "spares": [], "left_out": {"1": 1},
        "why": {"1": "node 1: its launcher failed (torchrun exited 1)"}, "role": "left out",
        "reason": "node 1: its launcher failed (torchrun exited 1)"}))
    raw = cli_run.run([*cli_run.ENTRYPOINT, "--explain", "--json", "--", "train.py"],
                         env=spare_environment(tmp_path, "rj-1"), cwd=tmp_path,
                         timeout=60)
    role = json.loads(raw.stdout)["role"]
    assert (role["kind"], role["generation"], role["rank"]) == ("left out", 1, None), role
    assert role["why"] == "node 1: its launcher failed (torchrun exited 1)"


def test_report_carries_the_runs_recovery_book_goodput_timeline_and_heat_map(tmp_path):
    """What `nodeweave run` copies into the run folder for `runs show` (docs/observability.md)."""
    folder = tmp_path / "nodeweave" / "runs" / "r9"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"run_id": "r9", "pid": -1}))
    (folder / "goodput.json").write_text(json.dumps({"schema": "nodeweave.goodput/1", "launched": 1.0}))
    (folder / "recovery.json").write_text(json.dumps({"generation": 1}))
    (folder / "heat.json").write_text(json.dumps({"schema": "nodeweave.heat/1", "columns": []}))
    report, code = node(tmp_path, "report", "r9")
    assert code == 0 and report["goodput"] == {"schema": "nodeweave.goodput/1", "launched": 1.0}
    assert report["recovery"] == {"generation": 1}
    assert report["heat"] == {"schema": "nodeweave.heat/1", "columns": []}  # the finished run's heat map


def test_status_on_a_spare_asks_node_0_instead_of_failing_its_own_plan(tmp_path):
    """`--status` on a spare failed its own plan ('node rank 2 ... is not below the node count 2', exit 2)
    before it asked anything; it plans as a spare and asks node 0 (here none answers: exit 4, named)."""
    out = cli_run.run([*cli_run.ENTRYPOINT, "--status"],
                         env=spare_environment(tmp_path, "rj-2", NODEWEAVE_WAIT_TIMEOUT="5"), cwd=tmp_path, timeout=60)
    assert "not below the node count" not in out.stderr, out.stderr
    assert out.returncode == 4 and "node 0's check-in exchange at rj-0:" in out.stderr, out.stderr
