"""Recovery on a real Slurm cluster: the rendered sbatch script with ``recovery: {enabled: true, spares: 1}``.

A local cluster of three slurmd "nodes" (tests/slurm_cluster.py) runs the script as written (``runtime:
host``): the allocation is nodes + spares (``--nodes=3``), each task's entrypoint takes its identity from
``SLURM_NODEID`` and tells itself a spare from ``NODEWEAVE_NNODES`` (2), and node 0 recovers in place. The
workload is tests/e2e/workspace/resumable.py (``step-N.pt`` every 5 steps, resumed from
``NODEWEAVE_RESUME_FROM``). The three nodes share this machine, so a stand-in for what real nodes have on
their own goes first on PATH as ``nodeweave-entrypoint``: each task its own ``TMPDIR`` (per-node /tmp), the
node's Slurm name as the workload's fault target, and one ``TASK-EXIT`` line with the real entrypoint's exit
code (Slurm's accounting is off here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest

import slurm_cluster
from free_ports import free_port_pair as _port

pytest.importorskip("torch")
REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
NAMES = slurm_cluster.node_names(3)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(slurm_cluster.problem() is not None, reason=str(slurm_cluster.problem()))]

SPEC = """name: slurm-recover
image: {{variant: cpu}}
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: resumable.py
  args: ["--steps", "30", "--interval", "0.3", "--save-every", "5"{fault}]
  master_port: {port}
  wait_timeout: 120
  stall_warn: 0
env: {{OMP_NUM_THREADS: "1"}}
recovery: {{enabled: true, spares: 1, checkpoint_dir: checkpoints}}
slurm: {{runtime: host, partition: debug, time: "10:00", exclusive: false}}
"""

# What each of the three nodes would have alone: its own /tmp (the check-in record, recovery.json), its name.
TASK = """#!/bin/bash
export TMPDIR="{tmp}/${{SLURMD_NODENAME}}" NODEWEAVE_TEST_NODE="${{SLURMD_NODENAME}}"
mkdir -p "${{TMPDIR}}"
"{real}" "$@" &
echo "$!" > "${{TMPDIR}}/entrypoint.pid"
wait "$!"
code=$?
echo "TASK-EXIT node=${{SLURMD_NODENAME}} code=${{code}}"
exit "${{code}}"
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three slurmd nodes: two train, one waits as the spare."""
    c = slurm_cluster.Cluster(tmp_path_factory.mktemp("slurm3"), NAMES)
    try:
        c.start()
    except RuntimeError as err:
        c.stop()
        pytest.fail(str(err))
    yield c
    c.stop()


def _prepare(folder: Path, fault: str = "") -> Path:
    shutil.copy(REPO / "tests" / "e2e" / "workspace" / "resumable.py", folder / "resumable.py")
    (folder / "nodeweave.yaml").write_text(SPEC.format(port=_port(), fault=fault))
    out = cli_run.run([*cli_run.NODEWEAVE, "render", "slurm", "--spec", str(folder / "nodeweave.yaml")],
                         timeout=120)
    assert out.returncode == 0, out.stderr
    stand_in = folder / "bin" / "nodeweave-entrypoint"
    stand_in.parent.mkdir()
    stand_in.write_text(TASK.format(tmp=folder / "nodes", real=VENV_BIN / "nodeweave-entrypoint"))
    stand_in.chmod(0o755)
    return folder / "slurm" / "job.sbatch"


def _submit(cluster, folder: Path, script: Path, wait: bool = True):
    env = {"PATH": f"{folder / 'bin'}:{VENV_BIN}:{os.environ['PATH']}"}
    argv = ["sbatch", "--parsable", *(["--wait"] if wait else []), f"--output={folder}/slurm-%j.out", str(script)]
    return cluster.run(argv, cwd=folder, env=env, check=False, timeout=600)


def _exits(text: str) -> dict:
    return {node: int(code) for node, code in re.findall(r"TASK-EXIT node=(\S+) code=(-?\d+)", text)}


def _book(folder: Path) -> dict:
    [book] = (folder / "nodes" / NAMES[0] / "nodeweave").glob("jobs/*/recovery.json")  # the job's folder
    return json.loads(book.read_text())


def test_a_killed_rank_on_slurm_is_left_out_the_spare_takes_its_place_and_training_resumes(cluster, tmp_path):
    script = _prepare(tmp_path, f', "--fault", "kill", "--fault-node", "{NAMES[1]}", "--fault-step", "12"')
    assert "#SBATCH --nodes=3" in script.read_text()
    out = _submit(cluster, tmp_path, script)
    (log,) = tmp_path.glob("slurm-*.out")
    text = log.read_text()
    assert out.returncode == 0, f"sbatch --wait exited {out.returncode}:\n{out.stderr}\n{text[-6000:]}"
    assert _exits(text) == {name: 0 for name in NAMES}, text[-6000:]
    assert "recovery: generation 1: training node(s) 0, 2; spare(s) none; resuming from checkpoints/step-10.pt " \
           "(step 10)" in text, text[-6000:]
    assert [(g, "/".join(p.split("/")[-2:]) if p.startswith("/") else "relative: " + p, s)  # absolute (walk13 B17)
            for g, p, s in re.findall(r"RECOVERY-RESUME gen=(\d+) from=(\S+) step=(\d+)", text)] == [
        ("1", "checkpoints/step-10.pt", "10")]
    assert "RECOVERY-DONE gen=1 step=30 state=30" in text  # 10 steps restored + 20 after: nothing lost
    assert "generation 1: this node is LEFT OUT of the job: node 1: its launcher failed" in text
    assert text.count("RECOVERY-FAULT") == 1
    book = _book(tmp_path)
    assert (book["decision"], book["generation"], book["restarts"]) == ("done", 1, 1)
    assert book["members"] == [0, 2] and book["left_out"] == {"1": 1}
    assert [(h["node"], h["cause"]) for h in book["history"]] == [(1, "crash")]


def _wait_for(path: Path, pattern: str, limit: float = 240) -> None:
    until = time.monotonic() + limit
    while time.monotonic() < until:
        if path.exists() and re.search(pattern, path.read_text()):
            return
        time.sleep(0.3)
    seen = path.read_text()[-4000:] if path.exists() else ""
    raise AssertionError(f"no {pattern!r} in {path} within {limit}s:\n{seen}")


def test_a_slurm_task_that_dies_leaves_the_step_running_and_node_0_goes_on_without_it(cluster, tmp_path):
    """The node's entrypoint itself killed (its task ends 137): srun --kill-on-bad-exit=0 keeps the other tasks."""
    script = _prepare(tmp_path)
    out = _submit(cluster, tmp_path, script, wait=False)
    assert out.returncode == 0, out.stderr
    job = out.stdout.strip().split(";")[0]
    log = tmp_path / f"slurm-{job}.out"
    _wait_for(log, r"RECOVERY-STEP gen=0 step=12 ")
    victim = int((tmp_path / "nodes" / NAMES[1] / "entrypoint.pid").read_text())
    os.kill(victim, 9)  # node 1's entrypoint: as a node whose container or host went away
    until = time.monotonic() + 300
    while cluster.run(["squeue", "-h", "-j", job], check=False).stdout.strip() and time.monotonic() < until:
        time.sleep(1)
    text = log.read_text()
    assert _exits(text) == {NAMES[0]: 0, NAMES[1]: 137, NAMES[2]: 0}, text[-6000:]
    assert re.search(r"recovery: generation 0 ended: node 1: it was lost", text), text[-6000:]
    [(generation, path, step)] = re.findall(r"RECOVERY-RESUME gen=(\d+) from=(\S+) step=(\d+)", text)
    assert generation == "1" and step in ("10", "15") and path.startswith("/") \
        and path.endswith(f"/checkpoints/step-{step}.pt"), text[-6000:]  # absolute since walk13 B17
    assert "RECOVERY-DONE gen=1 step=30 state=30" in text
    book = _book(tmp_path)
    assert (book["decision"], book["members"]) == ("done", [0, 2])
    assert [(h["node"], h["cause"]) for h in book["history"]] == [(1, "lost")]
