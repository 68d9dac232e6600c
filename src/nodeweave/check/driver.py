"""The workstation's side of ``nodeweave check``: one run of the worker on every node, then the verdict.

The worker is started the way ``nodeweave run`` starts a job (the run
engine, the run folder ``runs/<time>-<job>-check/``), with the launcher
pinned to torchrun and one process per node: the node's entrypoint still
makes the plan (rank, master, interface, NCCL/Gloo variables), so the check
measures the transport the job will use. Rank 0's document is read back
from node 0's log; the verdict and the report are written beside it.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from rich.console import Console

from nodeweave.check import MARK
from nodeweave.check.verdict import DEFAULT_THRESHOLD, findings
from nodeweave.cluster.base import Node
from nodeweave.cluster.runner import RunRequest
from nodeweave.errors import UsageError
from nodeweave.quantities import plain_number
from nodeweave.usertext import styled

# recovery off: a check is one generation of every node it runs on. Under the spec's recovery a spare would only
# wait, unchecked, for a fault that never comes, and a node that failed the check would start a generation
CHECK_FLAGS = ("--launcher", "torchrun", "--nproc-per-node", "1", "--launcher-options", "", "--max-restarts", "0",
               "--recovery", "off")


MAX_REPEATS = 10  # beyond, a median of 11 samples sharpens no verdict, and every pass measures every link again


@dataclass
class CheckOptions:
    threshold: float = DEFAULT_THRESHOLD
    repeats: int = 2
    backend: str = "auto"
    seconds: float = 0.25
    timeout: float = 300.0
    verbose: bool = False

    def __post_init__(self):
        """Each refusal in one form: ``--OPTION VALUE is not accepted: RANGE`` (the click ranges' too)."""
        if not 0 < self.threshold < 1:
            percent = plain_number(round(self.threshold * 100, 9))  # 0.29 * 100 is 28.999999999999996
            raise UsageError(f"--threshold {percent} is not accepted: more than 0 and less than 100 "
                             "(a percentage below the median of the peers, e.g. 25)")
        if not 1 <= self.repeats <= MAX_REPEATS:  # each repeat is one more pass over every link (walk7 A19)
            raise UsageError(f"--repeats {self.repeats} is not accepted: 1 to {MAX_REPEATS} (extra samples of a "
                             "figure near the line, beside its first; each is another pass over every link)")
        if self.backend not in ("auto", "nccl", "gloo"):
            raise UsageError(f"--backend {self.backend!r} is not accepted: auto, nccl or gloo")
        for option, value in (("--seconds", self.seconds), ("--timeout", self.timeout)):
            if not (math.isfinite(value) and value > 0):
                raise UsageError(f"{option} {plain_number(value)} is not accepted: a finite number more than 0 "
                                 "(seconds)")
        if self.seconds >= self.timeout:  # a direction is one collective, which --timeout bounds: it could not end
            raise UsageError(f"--seconds {plain_number(self.seconds)} is not accepted: less than --timeout "
                             f"{plain_number(self.timeout)} (each direction of a link is one collective, and a node waits at "
                             "most --timeout for it)")

    def entrypoint_flags(self, nodes: Optional[int] = None) -> tuple:
        """The launcher pinned to torchrun, one process; the check-in may wait as long as a collective. ``nodes``:
        how many nodes are checked, every one of them a node of the check (a recovery job's spares too: their
        containers count only the training nodes in NODEWEAVE_NNODES)."""
        count = ("--nnodes", str(nodes)) if nodes else ()
        return (*CHECK_FLAGS, "--wait-timeout", str(math.ceil(self.timeout)), *count)

    def worker_command(self) -> List[str]:
        return ["-m", "nodeweave.check.worker", "--threshold", f"{self.threshold:g}", "--repeats",
                str(self.repeats), "--backend", self.backend, "--seconds", f"{self.seconds:g}",
                "--timeout", f"{self.timeout:g}"]


@dataclass
class CheckRequest(RunRequest):
    """A run of the check worker: torchrun, one process per node, whatever the spec's launcher."""

    flags: tuple = field(default=CHECK_FLAGS)

    def entrypoint_args(self) -> List[str]:
        return ["--mode", "run", "--run-id", self.run_id, *self.flags, "--", *self.command]


@dataclass
class CheckResult:
    folder: Path
    run: dict  # run.json's data
    document: Optional[dict]
    findings: list

    @property
    def exit_code(self) -> int:
        from nodeweave.errors import EXIT_FAILURE, EXIT_UNHEALTHY

        if self.document is None:
            return 130 if self.run.get("exit_code") == 130 else EXIT_FAILURE
        return EXIT_UNHEALTHY if self.findings else 0

    def to_dict(self) -> dict:
        return {"folder": str(self.folder), "healthy": self.exit_code == 0, "exit_code": self.exit_code,
                "findings": [f.to_dict() for f in self.findings], "run_summary": self.run.get("summary"),
                "seconds": self.run.get("seconds"), "check": self.document}


def read_document(log: Path, most_lines: int = 4096) -> Optional[dict]:
    """Rank 0's document: the last line of node 0's log that carries the mark, joined with the lines after
    it while they do not yet make the JSON whole (``srun --label`` cuts a task's output into 1024-byte
    lines, each with its own label, which the step runner strips)."""
    import json

    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    marked = [i for i, line in enumerate(lines) if MARK in line]
    if not marked:
        return None
    text = lines[marked[-1]].split(MARK, 1)[1]
    for following in [*lines[marked[-1] + 1:marked[-1] + most_lines], None]:
        try:
            return json.loads(text)
        except ValueError:
            if following is None:
                return None
            text += following
    return None


def run_check(nodes: List[Node], phase, context, console: Console) -> CheckResult:
    """Run the plan's check ``phase`` on ``nodes`` into a new ``<time>-<job>-check`` folder, spawning the argv it
    planned; the judged result. The phase's ``env``: the variables in front of every node's entrypoint (``NNODES``
    when the first nodes only are checked)."""
    from nodeweave.cluster.job import run_job
    from nodeweave.cluster.runfolder import RunFolder

    options: CheckOptions = phase.options
    folder = RunFolder.create(Path(phase.folder).parent, context.job, context.spec_text, suffix="-check",
                              made_from=context.made_from)
    request = CheckRequest(run_id=folder.run_id, command=options.worker_command(), grace=5.0,
                           flags=options.entrypoint_flags(len(nodes)), env=dict(phase.env))
    console.print(styled(("nodeweave:", "bold"), f" check {folder.run_id} on {len(nodes)} node(s) ({context.target})"),
                  highlight=False)
    data = run_job(nodes, request, phase.launches(folder.run_id), folder, context, console, quiet=not options.verbose)
    document = read_document(folder.log_path(nodes[0].name)) if data.get("exit_code") == 0 else None
    found = findings(document, options.threshold) if document else []
    result = CheckResult(folder.path, data, document, found)
    folder.write_json("check.json", result.to_dict())
    return result
