"""``--target slurm``: an allocation from ``up``, runs as one srun step, status, stop, down (issue 27, item 6).

The argv and the nodes' view are checked without Slurm; then the local Slurm
cluster (tests/slurm_cluster.py: slurmctld and two slurmd "nodes" nw1, nw2 on
this machine) takes the real loop: ``up`` (salloc --no-shell, the job id
recorded), a 2-node torchrun job through the verbs with ``status`` asked while
it runs, a rank that fails and makes nodeweave stop the other node and the step,
and ``down`` (scancel). Both "nodes" are this machine, so each is given a
TMPDIR of its own (a wrapper of the entrypoint reads SLURMD_NODENAME), as two
machines would have, and node 0's address is 127.0.0.1 (nw1 resolves nowhere).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest

import slurm_cluster
from plan_parts import down_steps, files_of
from nodeweave.cluster import ClusterOptions, open_backend
from nodeweave.cluster.runner import RunRequest
from nodeweave.errors import UsageError
from nodeweave.plan import AllocatePhase
from nodeweave.spec import parse_spec

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
PYTHONPATH = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}  # this checkout's sources, as run
SPEC = """name: slurmloop
image: {{variant: cpu}}
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: train.py
  master_port: {port}
  wait_timeout: 120
slurm: {{runtime: host, partition: debug, time: "10:00", exclusive: false}}
"""


def write_spec(folder: Path, port: int = 29555, extra: str = "") -> Path:
    path = folder / "nodeweave.yaml"
    path.write_text(SPEC.format(port=port) + extra)
    return path


def test_up_takes_an_allocation_with_the_batch_scripts_options(tmp_path):
    path = write_spec(tmp_path, extra="hosts: [desk1, desk2]\n")
    spec = parse_spec(path.read_text(), str(path))
    backend = open_backend(spec, path, ClusterOptions(target="slurm").checked())
    assert backend._allocation_argv() == ["salloc", "--no-shell", "--job-name=slurmloop", "--nodes=2",
                                         "--ntasks-per-node=1", "--time=10:00", "--partition=debug",
                                         f"--comment=nodeweave-job {backend.mark.owner} slurmloop {tmp_path.resolve()}"]
    plan = backend.plan_up("run", None, 0, wait=False)
    assert files_of(plan) == [] and not any("is already up" in n for n in plan.notes)  # no job yet
    (allocate,) = plan.of_kind(AllocatePhase)
    assert allocate.steps[0].argv == tuple(backend._allocation_argv())  # the plan's allocate step
    with pytest.raises(UsageError, match="no Slurm allocation is recorded"):
        down_steps(backend, False)


def test_dry_runs_ask_no_slurm_and_print_the_exact_commands(tmp_path):
    path = write_spec(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "300", **PYTHONPATH}  # squeue is never asked: no allocation is recorded
    up = cli_run.run([*cli_run.NODEWEAVE, "up", "--target", "slurm", "--spec", str(path), "--dry-run"],
                        env=env)
    assert up.returncode == 0, up.stderr
    assert "salloc --no-shell --job-name=slurmloop --nodes=2" in up.stdout and "srun:<job-id>/<node1>" in up.stdout
    token_file = f"{tmp_path}/.nodeweave/slurmloop/job-token"  # written on each node by a step, the token on stdin
    assert up.stdout.count(f"{tmp_path}/.nodeweave/slurmloop job-token < a new random job token") == 2, up.stdout
    run = cli_run.run([*cli_run.NODEWEAVE, "run", "--target", "slurm", "--spec", str(path), "--dry-run", "--", "t.py"],
                         env=env)
    assert run.returncode == 0, run.stderr
    assert "srun --jobid=<job-id> --nodes=2 --ntasks=2 --ntasks-per-node=1 --nodelist=<node0>,<node1>" in run.stdout
    assert f"NODEWEAVE_JOB_TOKEN_FILE={token_file}" in run.stdout  # the path, never the secret
    assert not (tmp_path / ".nodeweave").exists()  # a dry run remembers nothing


def test_the_run_is_one_step_and_each_node_plans_as_in_it(tmp_path):
    """The step's argv, and a node's one-task view fed to the real entrypoint: its rank and master are the run's."""
    from nodeweave.entrypoint import make_plan

    path = write_spec(tmp_path)
    spec = parse_spec(path.read_text(), str(path))
    backend = open_backend(spec, path, ClusterOptions(target="slurm", slurm_job="42").checked())
    nodes = backend._nodes(["gpu07", "gpu09"], "42")
    argv = nodes[0].group.argv(RunRequest(run_id="r1", command=["train.py"], env={"A": "1"}))
    assert argv[:9] == ["srun", "--jobid=42", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                        "--nodelist=gpu07,gpu09", "--job-name=nodeweave-r1", f"--chdir={tmp_path}", "--label"]
    assert argv[-8:] == ["A=1", "nodeweave-entrypoint", "--mode", "run", "--run-id", "r1", "--", "train.py"]
    assert nodes[1].argv(["true"])[:7] == ["srun", "--jobid=42", "--overlap", "--nodes=1", "--ntasks=1",
                                           "--nodelist=gpu09", "--quiet"]
    # what srun gives a one-task step on gpu09, then nodeweave's view of the whole step on top
    env = {"SLURM_JOB_ID": "42", "SLURM_STEP_NODELIST": "gpu09", "SLURM_NODEID": "0", "SLURM_STEP_NUM_NODES": "1",
           "SLURMD_NODENAME": "gpu09", **dict(nodes[1].env)}
    plan = make_plan(["--no-wait", "--", "train.py"], env=env, sysroot=str(REPO / "tests/fixtures/synthetic/hgx-h100"))
    assert (plan.topology.node_rank.value, plan.topology.master_addr.value) == (1, "gpu07")


# -- the real local Slurm ---------------------------------------------------------------------------

needs_slurm = pytest.mark.skipif(slurm_cluster.problem() is not None, reason=str(slurm_cluster.problem()))

FAIL_ON_NODE_1 = """import os, sys, time
print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} starts", flush=True)
if os.environ["RANK"] == "1":
    sys.exit(3)
time.sleep(300)
"""


def _per_node_tmpdir(folder: Path) -> str:
    """A PATH whose nodeweave-entrypoint gives each Slurm node its own TMPDIR (two machines' worth of run records)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "nodeweave-entrypoint"
    wrapper.write_text(f'#!/bin/sh\nexport TMPDIR="{folder}/tmp-${{SLURMD_NODENAME:-here}}"\nmkdir -p "$TMPDIR"\n'
                       f'exec "{VENV_BIN}/nodeweave-entrypoint" "$@"\n')
    wrapper.chmod(0o755)
    return f"{bin_dir}:{VENV_BIN}:{os.environ['PATH']}"


@needs_slurm
@pytest.mark.slow
@pytest.mark.launchers
def test_up_run_status_a_failing_rank_and_down_on_slurm(slurm, tmp_path):
    from test_slurm import _port

    shutil.copy(REPO / "examples" / "train.py", tmp_path / "train.py")
    (tmp_path / "fail.py").write_text(FAIL_ON_NODE_1)
    path = write_spec(tmp_path, port=_port())
    env = {**slurm.env, "PATH": _per_node_tmpdir(tmp_path), "COLUMNS": "200"}

    def nodeweave(*args, **kw):
        return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=tmp_path, env=env,
                              timeout=kw.get("timeout", 300))

    up = nodeweave("up", "--target", "slurm", "--spec", str(path), "--timeout", "120")
    assert up.returncode == 0, up.stdout + up.stderr
    job = json.loads((tmp_path / ".nodeweave/slurmloop/cluster.json").read_text())["slurm_job"]
    assert f"took allocation {job}" in up.stdout and "2 node(s) up" in up.stdout
    token_file = tmp_path / ".nodeweave" / "slurmloop" / "job-token"  # up's random token, written on each node
    secret = token_file.read_text().strip()
    assert token_file.stat().st_mode & 0o777 == 0o600 and len(secret) >= 40
    leaks = []  # every place the secret must not be: argv of every process, Slurm's views, logs, outputs
    try:
        run = cli_run.popen([*cli_run.NODEWEAVE, "run", "--spec", str(path), "--",
                                "train.py", "--steps", "40", "--log-every", "10", "--expect-world", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path, env=env)
        seen = None
        for _ in range(120):  # status while the job runs: both nodes name the same run in progress
            status = nodeweave("status", "--spec", str(path), "--json")
            rows = json.loads(status.stdout)["nodes"] if status.stdout.strip().startswith("{") else []
            if len(rows) == 2 and all(r["run"] for r in rows):
                seen = rows
                leaks.append(subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout)
                leaks.append(slurm.run(["scontrol", "show", "job", "-d", job]).stdout)
                leaks.append(slurm.run(["scontrol", "show", "step", job], check=False).stdout)
                break
            if run.poll() is not None:
                break
            time.sleep(0.5)
        output, _ = run.communicate(timeout=300)
        assert run.returncode == 0, output[-4000:]
        assert seen is not None, f"status never saw the run in progress:\n{status.stdout}{status.stderr}"
        assert seen[0]["run"]["run_id"] == seen[1]["run"]["run_id"] and [r["rank"] for r in seen] == [0, 1]
        folder = max((tmp_path / "runs").iterdir())
        record = json.loads((folder / "run.json").read_text())
        assert record["exit_code"] == 0 and [n["exit_code"] for n in record["nodes"]] == [0, 0]
        for i in (0, 1):
            log = (folder / f"node-{i}.log").read_text()
            assert f"nodeweave-entrypoint: node {i} of 2" in log and "done: world_size=2" in log, log[-2000:]

        plans = [json.loads((folder / n["plan"]).read_text()) for n in record["nodes"]]
        assert [p["exchange"]["token"] for p in plans] == [f"NODEWEAVE_JOB_TOKEN_FILE ({token_file})"] * 2, plans
        logs = nodeweave("logs", "--spec", str(path))  # the run folder's logs: the nodes hold no container
        assert logs.returncode == 0 and "[node-1]" in logs.stdout and "done: world_size=2" in logs.stdout, logs.stderr

        started = time.monotonic()
        failing = nodeweave("run", "--spec", str(path), "--grace", "5", "--",
                            "fail.py")
        took = time.monotonic() - started
        assert failing.returncode == 1 and "node-1" in failing.stderr + failing.stdout, failing.stdout[-3000:]
        folder = max(p for p in (tmp_path / "runs").iterdir() if p != folder)
        record = json.loads((folder / "run.json").read_text())
        codes = {n["node"]: n["exit_code"] for n in record["nodes"]}
        assert codes["node-1"] != 0 and codes["node-0"] in (143, 137), codes
        assert "failed first" in record["summary"] and took < 120, (record["summary"], took)
        steps = slurm.run(["squeue", "-s", "-j", job, "-h", "-o", "%i %j"]).stdout
        assert "nodeweave-" not in steps, steps  # the step is gone, the allocation stays

        (tmp_path / "sleep.py").write_text("import time\nprint('sleeping', flush=True)\ntime.sleep(300)\n")
        sleeper = cli_run.popen([*cli_run.NODEWEAVE, "run", "--spec", str(path), "--",
                                    "sleep.py"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path, env=env)
        for _ in range(120):
            if sum("sleeping" in p.read_text() for p in max((tmp_path / "runs").iterdir()).glob("node-*.log")) == 2:
                break
            time.sleep(0.5)
        stop = nodeweave("stop", "--spec", str(path), "--grace", "5")
        assert stop.returncode == 0 and stop.stdout.count("process(es) stopped") == 2, stop.stdout + stop.stderr
        output, _ = sleeper.communicate(timeout=120)
        assert sleeper.returncode == 1, output[-3000:]
        steps = slurm.run(["squeue", "-s", "-j", job, "-h", "-o", "%i %j"]).stdout
        assert "nodeweave-" not in steps, steps
        sacct = slurm.run(["sacct", "-j", job, "-P", "-o", "JobID,JobName,SubmitLine%2000"], check=False)
        leaks += [sacct.stdout, sacct.stderr, up.stdout, up.stderr, logs.stdout]
        leaks += [p.read_text(errors="replace") for p in slurm.root.glob("*.log")]
        leaks += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file() and p != token_file
                  and p.suffix in ("", ".json", ".log", ".txt", ".yaml", ".py")]
        assert [text[:200] for text in leaks if secret in text] == []
    finally:
        down = nodeweave("down", "--spec", str(path))
    assert down.returncode == 0, down.stdout + down.stderr
    assert not token_file.exists()  # down deleted it on the nodes before releasing them
    assert slurm.run(["squeue", "-h", "-j", job], check=False).stdout.strip() == ""
    assert json.loads((tmp_path / ".nodeweave/slurmloop/cluster.json").read_text())["slurm_job"] is None
    # an allocation that ended by itself (time limit, scancel elsewhere): down forgets it, exit 0
    state = json.loads((tmp_path / ".nodeweave/slurmloop/cluster.json").read_text())
    state.update(target="slurm", slurm_job=job)
    (tmp_path / ".nodeweave/slurmloop/cluster.json").write_text(json.dumps(state))
    gone = nodeweave("down", "--spec", str(path))
    assert gone.returncode == 0 and "is down" in gone.stdout, gone.stdout + gone.stderr
    status = nodeweave("status", "--target", "slurm", "--spec", str(path))
    assert status.returncode == 3 and "no Slurm allocation is recorded" in status.stderr, status.stderr  # not up


def test_sync_on_slurm_refuses_to_send_the_shared_workspace_onto_itself(tmp_path):
    from nodeweave.cluster.options import save_state
    from nodeweave.sync import request as rq

    path = write_spec(tmp_path)
    save_state(path, "slurmloop", ClusterOptions(target="slurm", slurm_job="42").checked())
    # tmp_path is under /tmp, each machine's own: refused as up warns of it (on shared storage: nothing to send,
    # exit 0, tests/test_walk6_slurm_sync.py)
    with pytest.raises(UsageError, match="each machine's own, so they would not find it"):
        rq.build_request(None, None, rq.TargetArgs(), rq.FilterArgs(), rq.SyncOptions(), path)


def test_check_dry_run_on_slurm_prints_the_step(tmp_path):
    from nodeweave.cluster.options import save_state

    path = write_spec(tmp_path)
    save_state(path, "slurmloop", ClusterOptions(target="slurm", slurm_job="42").checked())
    out = cli_run.run([*cli_run.NODEWEAVE, "check", "--spec", str(path), "--dry-run"], timeout=60)
    assert out.returncode == 0, out.stderr
    assert "srun" in out.stdout and "--jobid=42" in out.stdout and "-m nodeweave.check.worker" in out.stdout, out.stdout
    # the check runs as one srun step for every node (the step runner), so that is what its plan prints; it printed
    # a one-task step per node, which never ran
    launches = [line for line in out.stdout.splitlines() if line.startswith("srun ")]
    assert len(launches) == 1 and "--ntasks=2" in launches[0] and "--job-name=nodeweave-<run-id>" in launches[0], \
        out.stdout
    assert "# every node at once (srun:42/<node0>, srun:42/<node1>)" in out.stdout, out.stdout


SEED_003 = """name: accslurm
image: {{variant: cpu}}
nodes: 2
gpus_per_node: 1
launcher:
  type: accelerate
  script: train.py
  args: ["--steps", "6", "--log-every", "3", "--expect-world", "2"]
  options: [--mixed_precision, "no"]
  setup: ["source ./site/activate.sh", "activate_env training", 'echo "setup: env=$ACTIVE_ENV on $(hostname)"']
  master_port: {port}
  wait_timeout: 120
env: {{OMP_NUM_THREADS: "1"}}
slurm: {{runtime: host, time: "10:00", exclusive: false}}
"""
# The seed passes --rdzv_backend c10d (accelerate's parser reads it: tests/test_seed_loops.py). Not here: both
# "nodes" are this machine, so with c10d whichever agent starts first hosts the store on the master port, and
# accelerate's port check on machine 0 then finds it taken (on real nodes they are different hosts).
ACTIVATE = 'activate_env() { export ACTIVE_ENV="$1"; }\n'  # a site script's shape: a shell function to call


@needs_slurm
@pytest.mark.slow
@pytest.mark.launchers
def test_check_on_the_slurm_allocation(slurm, tmp_path):
    """``nodeweave check`` as one srun step: both "nodes" are this machine (one boot id), so their one link
    is measured alone and nothing is named."""
    from test_slurm import _port

    path = write_spec(tmp_path, port=_port())
    env = {**slurm.env, "PATH": _per_node_tmpdir(tmp_path), "COLUMNS": "200"}

    def nodeweave(*args, timeout=300):
        return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=tmp_path, env=env,
                              timeout=timeout)

    up = nodeweave("up", "--target", "slurm", "--spec", str(path), "--timeout", "120")
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        out = nodeweave("check", "--spec", str(path), "--json", "--timeout", "120")
        assert out.stdout.strip().startswith("{"), out.stdout[-3000:] + out.stderr[-3000:]
        report = json.loads(out.stdout)
        document = report["check"]
        assert out.returncode == 0 and report["healthy"], (report["findings"], out.stderr[-3000:])
        assert document["world"] == 2 and document["backend"] == "gloo" and document["allreduce"]["correct"]
        assert document["nodes"][0]["facts"]["boot_id"] == document["nodes"][1]["facts"]["boot_id"]
        assert document["machines"][0] == document["machines"][1] and document["turns"] == [[[[0, 1]]], [[[0, 1]]]]
        assert "Slurm allocation" in out.stderr and "healthy: nothing named" in out.stderr, out.stderr[-2000:]
        folder = Path(report["folder"])
        assert json.loads((folder / "run.json").read_text())["exit_code"] == 0
        assert "NODEWEAVE_CHECK_REPORT" in (folder / "node-0.log").read_text()
        assert "check: node 1 of 2" in (folder / "node-1.log").read_text()
        job = json.loads((tmp_path / ".nodeweave/slurmloop/cluster.json").read_text())["slurm_job"]
        steps = slurm.run(["squeue", "-s", "-j", job, "-h", "-o", "%i %j"]).stdout
        assert "nodeweave-" not in steps, steps  # the check's step ended with it
    finally:
        down = nodeweave("down", "--spec", str(path))
    assert down.returncode == 0, down.stdout + down.stderr


@needs_slurm
@pytest.mark.slow
@pytest.mark.launchers
def test_up_check_on_slurm_checks_the_allocations_nodes(slurm, tmp_path):
    """``up --check`` where nothing holds: the allocation's nodes are idle between runs, so up takes them and
    checks them (issue 43: --check was refused there unless --hold, which does nothing on Slurm and is refused)."""
    from test_slurm import _port

    path = write_spec(tmp_path, port=_port())
    env = {**slurm.env, "PATH": _per_node_tmpdir(tmp_path), "COLUMNS": "200"}

    def nodeweave(*args, timeout=400):
        return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=tmp_path, env=env, timeout=timeout)

    up = nodeweave("up", "--target", "slurm", "--spec", str(path), "--timeout", "120", "--check")
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        assert "healthy: nothing named" in up.stdout + up.stderr, up.stdout[-2000:] + up.stderr[-2000:]
    finally:
        down = nodeweave("down", "--spec", str(path))
    assert down.returncode == 0, down.stdout + down.stderr


@needs_slurm
@pytest.mark.slow
@pytest.mark.launchers
def test_the_accelerate_slurm_seed_loop_up_run_status_logs_down_and_the_same_job_unattended(slurm, tmp_path):
    """Seed 003's shape: accelerate with a site environment activated first, as an allocation and as a batch job."""
    from test_slurm_runtimes import free_pair

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "activate.sh").write_text(ACTIVATE)
    shutil.copy(REPO / "examples" / "train.py", tmp_path / "train.py")
    path = tmp_path / "nodeweave.yaml"
    path.write_text(SEED_003.format(port=free_pair()))
    env = {**slurm.env, "PATH": _per_node_tmpdir(tmp_path), "COLUMNS": "200"}

    def nodeweave(*args):
        return cli_run.run([*cli_run.NODEWEAVE, *args, "--spec", str(path)], cwd=tmp_path, env=env, timeout=300)

    # the batch form first: sbatch --wait returns once every process of the job has ended
    render = cli_run.run([*cli_run.NODEWEAVE, "render", "slurm", "--spec", str(path)])
    assert render.returncode == 0, render.stderr
    batch = slurm.run(["sbatch", "--wait", f"--output={tmp_path}/batch-%j.out", "slurm/job.sbatch"], cwd=tmp_path,
                      env={"PATH": env["PATH"]}, check=False, timeout=300)
    (out,) = tmp_path.glob("batch-*.out")
    text = out.read_text()
    assert batch.returncode == 0 and text.count("setup: env=training") == 2, text[-3000:]
    assert text.count("done: world_size=2") == 2, text[-3000:]
    up = nodeweave("up", "--target", "slurm", "--timeout", "120")
    assert up.returncode == 0 and "plans agree" in up.stdout, up.stdout + up.stderr
    try:
        run = nodeweave("run")
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr
        for i in (0, 1):
            assert f"[node-{i}] setup: env=training" in run.stdout, run.stdout[-3000:]
        assert run.stdout.count("done: world_size=2") == 2, run.stdout[-3000:]
        status = nodeweave("status", "--json")
        assert [n["rank"] for n in json.loads(status.stdout)["nodes"]] == [0, 1], status.stdout + status.stderr
        logs = nodeweave("logs")
        assert "[node-1] setup: env=training" in logs.stdout and "done: world_size=2" in logs.stdout, logs.stdout
    finally:
        down = nodeweave("down")
    assert down.returncode == 0, down.stdout + down.stderr


@needs_slurm
@pytest.mark.slow
def test_up_on_slurm_fails_naming_each_node_whose_plan_fails(slurm, tmp_path):
    """An interface no node has (network.interfaces: [ib9]): every node answers, with a failed plan and no hash.
    up said "plans agree" and exited 0 (issue 33); now it exits 1 naming each node and why, and down still
    releases the allocation."""
    from test_slurm import _port

    shutil.copy(REPO / "examples" / "train.py", tmp_path / "train.py")
    path = write_spec(tmp_path, port=_port(), extra="network: {interfaces: [ib9]}\n")
    env = {**slurm.env, "PATH": _per_node_tmpdir(tmp_path), "COLUMNS": "200"}

    def nodeweave(*args):
        return cli_run.run([*cli_run.NODEWEAVE, *args, "--spec", str(path)], cwd=tmp_path,
                              env=env, timeout=300)

    try:
        up = nodeweave("up", "--target", "slurm", "--timeout", "120")
        assert up.returncode == 1, up.stdout + up.stderr
        assert "plans agree" not in up.stdout and "2 plan(s) FAIL" in up.stdout, up.stdout
        last = up.stderr.strip().splitlines()[-1]
        assert last.startswith("nodeweave: error: 2 of 2 node(s) cannot start: node-0 (") and "ib9" in last, last
        assert "node-1 (" in last and "Traceback" not in up.stderr
    finally:
        down = nodeweave("down")
    assert down.returncode == 0, down.stdout + down.stderr
