"""Launch the bench worker the way training is launched, once per sweep point.

Each run is a fresh ``python -m nodeweave.entrypoint`` with the launcher set
to torchrun, so the bench measures what a training job would get: the same
detection, the same NCCL environment, the same rendezvous. A sweep is the
matrix of ``--sweep`` values, each point its own launch with those variables
added to the environment, plus one baseline launch with the environment as
it is; results are ranked by bus bandwidth at the largest size.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import nodeweave
from nodeweave.errors import UsageError

# The worker, launched as the launcher's own module form (`-- -m MODULE`, as check's worker is): nodeweave's own code,
# importable wherever the bench runs (PYTHONPATH below), never a user's script judged as one (walk12 A6: its path
# outside the project drew "copy it into the working directory").
WORKER_MODULE = "nodeweave.bench.worker"
BASELINE_LABEL = "baseline"
_LOG_TAIL = 4000
_TERM_GRACE_S = 45  # torchrun gives workers 30 s after SIGTERM
# Any of these means the caller placed this node in a job; then the entrypoint decides the port.
TOPOLOGY_VARS = ("NODEWEAVE_NNODES", "NNODES", "NODEWEAVE_MASTER_PORT", "MASTER_PORT", "PET_MASTER_PORT",
                  "NODEWEAVE_SERVICE", "NODEWEAVE_HOSTFILE", "SLURM_JOB_ID", "KUBERNETES_SERVICE_HOST")


@dataclass(frozen=True)
class BenchConfig:
    """What every run of one ``nodeweave bench`` shares."""

    ops: "tuple[str, ...]"
    sizes: "str | None"  # worker syntax; None = the backend's default range
    iters: int = 20
    warmup: int = 5
    nproc: str = "auto"
    backend: str = "auto"
    dtype: str = "float32"
    timeout_s: float = 1800.0

    def __post_init__(self):
        if self.iters < 1:
            raise UsageError(f"--iters {self.iters} is not accepted: 1 or more")
        if self.warmup < 0:
            raise UsageError(f"--warmup {self.warmup} is not accepted: 0 or more")
        from nodeweave.cluster.overrides import process_count

        process_count(self.nproc, "--nproc")  # the one rule of a processes-per-node flag (walk13 A24)


@dataclass
class RunResult:
    """One launch: its label, the variables it added, and what came back."""

    label: str
    env: "dict[str, str]"
    exit_code: int
    report: "dict | None" = None
    log_tail: str = ""
    command: "list[str]" = field(default_factory=list)
    cause: "str | None" = None  # the worker's own error line in the whole output (symptoms.cause, walk9 A3)

    @property
    def correct(self) -> bool:
        return self.exit_code == 0 and bool(self.report) and bool(self.report.get("correct"))

    def busbw_at_largest(self, op: str) -> "float | None":
        rows = [row for row in (self.report or {}).get("results", []) if row["op"] == op]
        return max(rows, key=lambda row: row["bytes"])["busbw_gbps"] if rows else None

    def as_dict(self) -> dict:
        return {"label": self.label, "env": self.env, "exit_code": self.exit_code, "correct": self.correct,
                "command": self.command, "report": self.report,
                "log_tail": None if self.correct else self.log_tail, "cause": None if self.correct else self.cause}


def worker_command(config: BenchConfig, out_path: str) -> "list[str]":
    """The entrypoint command line that runs the worker under torchrun."""
    worker_args = ["--ops", ",".join(config.ops), "--iters", str(config.iters), "--warmup", str(config.warmup),
                   "--backend", config.backend, "--dtype", config.dtype, "--out", out_path]
    if config.sizes:
        worker_args += ["--sizes", config.sizes]
    return [sys.executable, "-m", "nodeweave.entrypoint", "--", "-m", WORKER_MODULE, *worker_args]


def run_environment(config: BenchConfig, extra: "dict[str, str]", base: "dict[str, str] | None" = None) -> "dict[str, str]":
    """The launch's environment: the caller's, the launcher settings, the sweep point."""
    env = dict(os.environ if base is None else base)
    package_root = str(Path(nodeweave.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    # torchrun next to this Python first: a venv's torchrun works without activating the venv
    env["PATH"] = os.pathsep.join(p for p in (os.path.dirname(sys.executable), env.get("PATH", "")) if p)
    env["NODEWEAVE_LAUNCHER"] = "torchrun"
    env["NODEWEAVE_NPROC_PER_NODE"] = config.nproc
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra)
    if not any(env.get(name) for name in TOPOLOGY_VARS):
        # a single node on its own: a free port, so benches beside each other never share 29500
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            env["NODEWEAVE_MASTER_PORT"] = str(sock.getsockname()[1])
    return env


# A launch ended by Ctrl-C: SIGINT itself, or torchrun's 130 (128 + SIGINT) after passing it on to its ranks.
INTERRUPTED = (130, -2)


def launch(config: BenchConfig, label: str, extra: "dict[str, str]", echo=None) -> RunResult:
    """Run one bench launch to the end; never raises for a failed run (KeyboardInterrupt for one Ctrl-C ended)."""
    with tempfile.TemporaryDirectory(prefix="nodeweave-bench-") as tmp:
        out_path = os.path.join(tmp, "rank0.json")
        command = worker_command(config, out_path)
        try:
            proc = subprocess.Popen(command, env=run_environment(config, extra), stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, errors="replace")
        except OSError as err:
            return RunResult(label, extra, 127, log_tail=f"could not start {command[0]}: {err}", command=command)
        lines: "list[str]" = []
        timed_out = threading.Event()
        timer = threading.Timer(config.timeout_s, _stop, (proc, timed_out))
        timer.daemon = True
        timer.start()
        try:
            for line in proc.stdout:
                lines.append(line)
                if echo:
                    echo(line.rstrip("\n"))
            code = proc.wait()
        finally:
            timer.cancel()
        if code in INTERRUPTED and not timed_out.is_set():  # Ctrl-C reached the launch: the verb was interrupted
            raise KeyboardInterrupt  # (exit 130, no result written; walk12 A5: a result of one run that "failed
        if timed_out.is_set():  # (exit 130)" was written and bench exited 1, against README's exit-code table)
            code = 124
            lines.append(f"nodeweave bench: run {label!r} passed --timeout {config.timeout_s:g}s and was stopped\n")
        report = None
        if os.path.exists(out_path):
            with open(out_path, encoding="utf-8") as handle:
                report = json.load(handle)
        elif code == 0:
            lines.append("nodeweave bench: no report from rank 0 here (on a multi-node run, node 0 holds it)\n")
        from nodeweave.entrypoint.running.symptoms import cause

        text = "".join(lines)
        return RunResult(label, extra, code, report, text[-_LOG_TAIL:], command, cause(text) if code else None)


def _stop(proc: subprocess.Popen, timed_out: threading.Event) -> None:
    """SIGTERM first: torchrun passes it to its workers (own sessions) and kills them later."""
    timed_out.set()
    proc.terminate()
    try:
        proc.wait(timeout=_TERM_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()


def label_for(env: "dict[str, str]") -> str:
    return " ".join(f"{key}={value}" for key, value in env.items()) or BASELINE_LABEL


# What bench writes when no launch measured anything (walk13 A23: the dry run promised no file, and an explicit
# --json-out got one of failed launches): the one wording of the plan's line and of the run's own.
NOTHING_MEASURED = "when no launch measured anything, the failed launches' exit codes and output"


def bench_plan(config: BenchConfig, points: "list[dict[str, str]]", json_path: Path, plot: "Path | None",
               default_out: bool = True):
    """What ``bench`` does, as ``--dry-run`` prints it: the baseline launch, one launch per sweep point (each
    through the entrypoint and torchrun, one after another), then the files written: the result only when a launch
    measured anything by default, and with ``--json-out`` (``default_out`` False) whatever happens, as the run
    writes them."""
    from nodeweave.plan import SCRATCH, CommandsPhase, FilesPhase, Plan, PlannedFile
    from nodeweave.steps import Step

    phases = []
    for point in [{}] + [p for p in points if p]:
        env = (("NODEWEAVE_LAUNCHER", "torchrun"), ("NODEWEAVE_NPROC_PER_NODE", config.nproc), *point.items())
        phases.append(CommandsPhase(f"launch {label_for(point)}", steps=(Step(
            f"launch {label_for(point)} (at most {config.timeout_s:g} s)",
            tuple(worker_command(config, f"{SCRATCH}/rank0.json")), env=env, timeout=config.timeout_s),)))
    def replacing(path: Path) -> str:  # an existing one is here only with --force: said as hosts probe's plan says it
        return "; replaces the existing file (--force)" if path.is_file() else ""

    said = "every number, when a launch measured any" if default_out else f"every number; {NOTHING_MEASURED}"
    files = (PlannedFile(str(json_path), said + replacing(json_path)),)
    files += (PlannedFile(str(plot), "busbw against size, when a launch measured any" + replacing(plot)),) \
        if plot is not None else ()
    phases.append(FilesPhase("write the results", files=files))
    return Plan("bench", "this machine", tuple(phases),
                (f"{len(phases) - 1} launch(es) on this node, one after another, {config.nproc} process(es) each",))


def run_matrix(config: BenchConfig, points: "list[dict[str, str]]", echo=None, on_start=None) -> "list[RunResult]":
    """The baseline launch, then one launch per sweep point (no baseline twice)."""
    points = [point for point in points if point] if points else []
    runs = []
    for point in [{}] + points:
        label = label_for(point)
        if on_start:
            on_start(label, len(runs) + 1, len(points) + 1)
        runs.append(launch(config, label, point, echo))
    return runs


def rank_runs(runs: "list[RunResult]", op: str) -> "list[dict]":
    """Runs ordered by busbw at the largest size of ``op``; failed runs last; ratio vs the baseline."""
    baseline = next((run for run in runs if run.label == BASELINE_LABEL and run.correct), None)
    base_bw = baseline.busbw_at_largest(op) if baseline else None
    rows = []
    for run in runs:
        busbw = run.busbw_at_largest(op) if run.correct else None
        ratio = busbw / base_bw if busbw is not None and base_bw else None
        rows.append({"label": run.label, "env": run.env, "op": op, "busbw_gbps": busbw, "ratio_vs_baseline": ratio,
                     "correct": run.correct, "exit_code": run.exit_code})
    rows.sort(key=lambda row: (row["busbw_gbps"] is None, -(row["busbw_gbps"] or 0.0)))
    for position, row in enumerate(rows, start=1):
        row["rank"] = position
    return rows
