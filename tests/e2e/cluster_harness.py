"""Drive the ``nodeweave`` cluster verbs as a user does: the real command line, on a spec in a temp folder.

A cluster here is ``nodeweave up`` of a spec written to a temporary directory
(with examples/train.py and the e2e scripts beside it), on the session's cpu
image; everything runs the ``nodeweave`` command line in a subprocess, and
the containers are read back with the engine (``podman exec ... ps``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import yaml

from e2e_harness import REPO, ComposeCluster, prepare_workdir

NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
# wait_timeout 180: on CI's loaded 2-core machine a node's `podman exec` started some 40 s after node 0's, and a
# 60-second check-in refused the job for a node that was only late (stop 54)
SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{script: train.py, args: ["--steps", "20"], wait_timeout: 180}}
cache: {{host_path: ./cache}}
env: {{OMP_NUM_THREADS: "1"}}
kubernetes: {{grace_period: 20}}
"""
LONG = ["allreduce.py", "--steps", "100000", "--interval", "0.3", "--timeout", "20"]


def workdir(path: Path, name: str, nodes: int, spec: str = SPEC) -> Path:
    """The spec, examples/train.py as train.py and the e2e scripts in ``path``; the spec's path."""
    spec_path = prepare_workdir(path, spec.format(name=name, nodes=nodes))
    shutil.copy(REPO / "examples" / "train.py", path / "train.py")
    (path / "train.py").chmod(0o644)
    return spec_path


def nodeweave(spec_path: Path, *args: str, timeout: float = 600, env: Optional[dict] = None,
              check: Optional[int] = None) -> "subprocess.CompletedProcess[str]":
    """``nodeweave ARGS --spec SPEC`` (the spec's folder as cwd); ``check`` asserts the exit code."""
    argv = [*NODEWEAVE, args[0], "--spec", str(spec_path), *args[1:]]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=spec_path.parent,
                         env={**os.environ, "COLUMNS": "200", **(env or {})})
    if check is not None:
        assert out.returncode == check, f"{args} exited {out.returncode}, not {check}:\n{out.stdout}\n{out.stderr}"
    return out


def start(spec_path: Path, *args: str) -> "subprocess.Popen[str]":
    """``nodeweave ARGS`` in the background (its own session, as a terminal's job would be)."""
    argv = [*NODEWEAVE, args[0], "--spec", str(spec_path), *args[1:]]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=spec_path.parent,
                            env={**os.environ, "COLUMNS": "200"}, start_new_session=True,
                            preexec_fn=_ctrl_c_reaches_it)


def _ctrl_c_reaches_it() -> None:
    """SIGINT's default action back in the child: a test run started in the background ignores SIGINT and the
    child would inherit that, so ``interrupt`` would never arrive (tests/cli_run.py says the same)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def processes(engine_kind: str, container: str, script: str = "allreduce.py") -> List[str]:
    """Every process of a run of ``script`` still alive in ``container``: entrypoint, launcher, ranks."""
    out = subprocess.run([engine_kind, "exec", container, "ps", "-eo", "pid,args"], capture_output=True, text=True,
                         timeout=60)
    return [line for line in out.stdout.splitlines() if script in line and "ps -eo" not in line]


def ranks(engine_kind: str, container: str, script: str = "allreduce.py") -> List[str]:
    """The training processes alone (not the entrypoint, not torchrun): the job has really started."""
    return [line for line in processes(engine_kind, container, script)
            if "nodeweave-entrypoint" not in line and "torchrun" not in line]


def wait_until(predicate, what: str, timeout: float = 120, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(every)


def status(spec_path: Path) -> dict:
    """``nodeweave status --json``'s report; a failure names its exit code and shows what it printed on both
    streams (a bare JSONDecodeError of an empty stdout hid why, CI)."""
    out = nodeweave(spec_path, "status", "--json", timeout=120)
    try:
        return json.loads(out.stdout)
    except ValueError:
        raise AssertionError(f"nodeweave status --json exited {out.returncode} with no JSON report:\n"
                             f"stdout: {out.stdout[-3000:]}\nstderr: {out.stderr[-3000:]}") from None


@dataclass
class UpCluster(ComposeCluster):
    """The spec's cluster as ``nodeweave up --run`` starts it: the job's own compose file, every container marked
    as this folder's, so the verbs (``status``, ``logs``, ``down``) act on it; a plain compose's unmarked containers
    they refuse (walk7 A34). Read and removed by name like any :class:`ComposeCluster`, after ``nodeweave down``."""

    spec_path: Optional[Path] = None

    def up(self, services: Optional[List[str]] = None) -> float:
        assert services is None, "nodeweave up starts every node"
        started = time.time()
        nodeweave(self.spec_path, "up", "--run", "--no-wait", "--engine", self.engine.kind, "--image", self.image,
                  timeout=300, check=0)
        return started

    def remove(self) -> None:
        nodeweave(self.spec_path, "down", "--engine", self.engine.kind, timeout=300)  # nothing up: exit 3, fine
        super().remove()


def up_cluster(engine, spec_path: Path, image: str) -> UpCluster:
    """The cluster ``nodeweave up`` makes of the spec: its containers, network and pod named from the job's compose
    file as ``up`` renders it (this folder's compose project)."""
    from nodeweave.cluster.backends.local import render_up_compose
    from nodeweave.cluster.identity import JobMark
    from nodeweave.spec import load_spec

    spec = load_spec(spec_path)
    document = yaml.safe_load(render_up_compose(spec, spec_path.parent, JobMark.of(spec_path.parent, spec.name)))
    names = [svc.get("container_name", key) for key, svc in document["services"].items()]
    project = document["name"]
    pods = [f"pod_{project}"] if engine.kind == "podman" else []
    return UpCluster(engine=engine, names=names, networks=[f"{project}_{key}" for key in document.get("networks", {})],
                     pods=pods, image=image, spec_path=spec_path)


def run_folders(spec_path: Path) -> List[Path]:
    return sorted((spec_path.parent / "runs").glob("*"))


def interrupt(proc: "subprocess.Popen[str]") -> None:
    os.killpg(proc.pid, signal.SIGINT)


def finish(job: "Optional[subprocess.Popen[str]]", spec_path: Path) -> None:
    """After a test: a run still going is interrupted as a user would (which stops the nodes), then stop anyway."""
    if job is not None and job.poll() is None:
        interrupt(job)
        try:
            job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
    nodeweave(spec_path, "stop", "--grace", "2", timeout=120)
