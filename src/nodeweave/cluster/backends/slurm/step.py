"""A run on Slurm: one ``srun`` step with one task per node, its output split back into the nodes' logs.

The step is what the batch script runs (``--ntasks-per-node=1``, each task
the node's entrypoint), inside the allocation ``up`` took, named
``nodeweave-<run id>`` so a stop can find it. ``--label`` prefixes every line
with the task number, which is the node's index; each task also prints its
exit code last (``nodeweave-step: exit N``), because srun reports only the
failed tasks, and only in words. The first node to fail stops the others the
way every target does (``nodeweave-entrypoint --node stop`` on each node, in
a step beside the run); a step still alive after the grace is cancelled
(``scancel JOB.STEP``).
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from nodeweave.cluster.runner import NodeRun, Runner, RunRequest, spawn_client

ENTRYPOINT = "nodeweave-entrypoint"
EXIT_MARK = "nodeweave-step: exit "
# Fixed text: the task's command is its arguments; its exit code is printed as the last line.
REPORT_EXIT = ("sh", "-c", f'"$@"; code=$?; echo "{EXIT_MARK}$code"; exit $code', "sh")
LABELLED = re.compile(r"^\s*(\d+): ?(.*)$")
SRUN_TASK = re.compile(r"^srun: error: [^:]+: tasks? (\d+)(?:-\d+)?: (.*)$")
SIGNAL_CODES = {"Killed": 137, "Terminated": 143, "Interrupt": 130}


@dataclass(frozen=True)
class SlurmStep:
    """The allocation's nodes as one launch: the run step's argv, and each node's view of it."""

    job: str
    hosts: Tuple[str, ...]
    workdir: str
    env: Tuple[Tuple[str, str], ...]  # the contract's settings and the spec's env, as the batch script exports
    options: Tuple[str, ...] = ()  # the step's share of each node (GPUs, CPUs), pyxis's container options
    prefix: Tuple[str, ...] = ()  # apptainer exec ... IMAGE: the entrypoint runs in the job's image

    def name(self, run_id: str) -> str:
        return f"nodeweave-{run_id}"

    def leftover_steps(self) -> list:
        """``scancel`` of every run step still listed once the nodes' entrypoints have stopped their runs; nothing
        while the allocation is not taken (its job id a plan's placeholder)."""
        from nodeweave.plan import JOB_ID
        from nodeweave.steps import Step

        if self.job == JOB_ID:
            return []
        out = subprocess.run(["squeue", "-s", "-j", self.job, "-h", "-o", "%i %j"], capture_output=True, text=True,
                             timeout=30)
        steps = [line.split() for line in out.stdout.splitlines() if len(line.split()) == 2]
        return [Step(f"cancel step {step} ({name})", ("scancel", step), timeout=60)
                for step, name in steps if name.startswith("nodeweave-")]

    def first(self, count: int) -> "SlurmStep":
        """The step over the allocation's first ``count`` nodes (``run --nodes``, ``check --node``)."""
        return self if count >= len(self.hosts) else replace(self, hosts=self.hosts[:count])

    def argv(self, request: RunRequest) -> List[str]:
        n = len(self.hosts)
        variables = [f"{k}={v}" for k, v in (*self.env, *request.variables().items())]
        return ["srun", f"--jobid={self.job}", f"--nodes={n}", f"--ntasks={n}", "--ntasks-per-node=1",
                f"--nodelist={','.join(self.hosts)}", f"--job-name={self.name(request.run_id)}",
                f"--chdir={self.workdir}", "--label", "--kill-on-bad-exit=0", "--input=none", *self.options,
                *REPORT_EXIT, *self.prefix, "env", *variables, ENTRYPOINT, *request.entrypoint_args()]

    def node_view(self, index: int) -> Tuple[Tuple[str, str], ...]:
        """What a one-node step on node ``index`` is told, so its plan is the run step's (node list, id, count)."""
        listed, count = ",".join(self.hosts), str(len(self.hosts))
        return (*self.env, ("SLURM_STEP_NODELIST", listed), ("SLURM_JOB_NODELIST", listed),
                ("SLURM_NODEID", str(index)), ("SLURM_STEP_NUM_NODES", count), ("SLURM_NNODES", count),
                ("SLURM_JOB_NUM_NODES", count))

    def cancel_argv(self, run_id: str) -> Optional[List[str]]:
        """``scancel JOB.STEP`` for this run's step while Slurm still lists it; None when it has ended."""
        out = subprocess.run(["squeue", "-s", "-j", self.job, "-h", "-o", "%i %j"], capture_output=True, text=True,
                             timeout=30)
        for line in out.stdout.splitlines():
            step, _, name = line.strip().partition(" ")
            if name == self.name(run_id):
                return ["scancel", step]
        return None


class StepRunner(Runner):
    """:class:`Runner` over one srun step: one client process, its lines split by task into the nodes' runs."""

    @property
    def launches(self) -> int:
        return 1  # one srun for every node

    def start(self) -> None:
        (argv,) = self.argv
        proc = spawn_client(self.hidden.argv(argv), env=self.spawn_env())
        started = time.monotonic() - self.t0
        self.ended_by: Dict[int, Tuple[int, float]] = {}
        self.srun_says: Dict[int, int] = {}
        for node in self.nodes:
            self.runs.append(NodeRun(node, argv, proc, open(self.folder.log_path(node.name), "wb"), started))
        threading.Thread(target=self._split, args=(proc,), daemon=True).start()

    def _split(self, proc) -> None:
        by_index = {run.node.index: run for run in self.runs}
        for raw in iter(proc.stdout.readline, b""):
            now = time.monotonic() - self.t0
            text = self.seen_here(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            labelled, srun = LABELLED.match(text), SRUN_TASK.match(text)
            run = by_index.get(int(labelled.group(1))) if labelled else None
            if run is None and srun:
                run = by_index.get(int(srun.group(1)))
                words = srun.group(2)
                code = re.search(r"exit code (\d+)", words)
                self.srun_says[run.node.index if run else -1] = int(code.group(1)) if code else \
                    next((c for w, c in SIGNAL_CODES.items() if w in words), 1)
            run = run or self.runs[0]
            line = labelled.group(2) if labelled else text
            if line.startswith(EXIT_MARK) and line[len(EXIT_MARK):].isdigit():
                self.ended_by[run.node.index] = (int(line[len(EXIT_MARK):]), now)
                continue
            if run.first_output is None:
                run.first_output = now
            run.log.write((line + "\n").encode())
            run.log.flush()
            self.lines.put((run, line, now))
        for run in self.runs:
            self.lines.put((run, None, time.monotonic() - self.t0))

    def _reap(self) -> None:
        finished = self.runs[0].proc.poll() is not None
        for run in self.runs:
            if run.code is not None:
                continue
            if run.node.index in self.ended_by:
                run.code, run.ended = self.ended_by[run.node.index]
            elif finished:
                code = run.proc.returncode
                run.code = self.srun_says.get(run.node.index, 128 - code if code < 0 else code)
                run.ended = time.monotonic() - self.t0
            else:
                continue
            if run.code != 0 and self.first_failure is None and self.stop_began is None:
                self._first_end(run, "; scancel of the step after that")

    def _enforce(self) -> None:
        late_before = self.stop_began is not None and time.monotonic() - self.stop_began > self.request.grace + 20
        killed = any(r.killed_here for r in self.runs)
        super()._enforce()
        if (late_before or self.abandoned) and not killed and any(r.killed_here for r in self.runs):
            cancel = self.nodes[0].group.cancel_argv(self.request.run_id)
            if cancel:
                subprocess.run(cancel, capture_output=True, timeout=30)
                self._say(f"the step outlived the grace: {' '.join(cancel)}")
