"""The one executor: walk a verb's :class:`~nodeweave.plan.Plan`, phase by phase, as planned.

Each phase kind is run by a small class with ``run(phase, job)`` (:class:`PhaseRun`); the executor
only iterates: it looks up the kind's runner and hands it the phase itself, so what runs is what the
plan says. The kinds that need nothing but the plan and the verb's :class:`Execution` (where files
go, the console, the backend, the nodes) run here: ``files``, ``commands``, ``allocate``, ``wait``,
``stop``, ``exec``, ``shell`` (:data:`BUILT_IN`). A verb adds runners for the kinds that carry a
session of its own (a run's folder and console, a check's report, a sync's request, an image
build's engine), as objects with the same ``run``. The ``allocate`` runner makes known what the
plan could only name (a Slurm allocation's ``JOBID``, ``NODE0``, ...): it returns those names' values,
and every later phase runs with them filled in (``Phase.bound``); what any other runner returns is
kept in ``Execution.outcomes`` under its kind (a stop's reports, an exec's results, the wait's nodes).

``NODEWEAVE_PLAN_RECORD=<file>`` (a debugging aid) writes the executed plan's ``to_dict()`` there as
JSON before the first phase runs: compare it with ``--dry-run -o json`` of the same command.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from nodeweave.errors import UsageError
from nodeweave.plan import Phase, Plan

RECORD_ENV = "NODEWEAVE_PLAN_RECORD"


@dataclass
class Execution:
    """What one verb's phases run with: the spec's folder (files are written relative to it), how a line of what
    is done is said, the console the nodes' output goes to, the backend and the nodes the plan was made for.
    ``outcomes``: what each kind's runner returned, in order (a stop's reports, an exec's results)."""

    spec_dir: Path
    say: Callable[[str], None]
    out: Optional[object] = None  # a rich Console
    backend: Optional[object] = None
    nodes: Sequence[object] = ()
    quiet: bool = False  # an exec: the summary only, not the nodes' lines
    outcomes: Dict[str, List[object]] = field(default_factory=dict)


class PhaseRun:
    """How one kind of phase is done; ``run`` returns the values of placeholders it made known, or its outcome."""

    kind = ""

    def run(self, phase: Phase, job: Execution):
        raise NotImplementedError


def execute(plan: Plan, job: Execution, runners: Sequence[PhaseRun] = ()) -> Execution:
    """Every phase of ``plan`` in order, each by its kind's runner (the verb's ``runners`` over the built-in
    ones); the first failure raises. ``job`` back, its ``outcomes`` filled."""
    record(plan)
    for line in plan.notes:
        job.say(line)
    chosen = {**{r.kind: r for r in BUILT_IN}, **{r.kind: r for r in runners}}
    known: Dict[str, str] = {}
    for phase in plan.phases:
        if phase.kind not in chosen:
            raise ValueError(f"{plan.verb}: nothing runs a {phase.kind} phase")  # a verb's own bug, not input
        made = chosen[phase.kind].run(phase.bound(known), job)
        if isinstance(made, Mapping) and phase.kind == "allocate":  # the placeholders' values it made known
            known.update(made)
        elif made is not None:
            job.outcomes.setdefault(phase.kind, []).append(made)
    return job


class Handled(PhaseRun):
    """A verb's runner for one kind, from a function of the phase (its session is the function's)."""

    def __init__(self, kind: str, function: Callable[[Phase], object]):
        self.kind, self.function = kind, function

    def run(self, phase: Phase, job: Execution):
        return self.function(phase)


def record(plan: Plan) -> None:
    """``$NODEWEAVE_PLAN_RECORD``: the plan about to run, as JSON (what a dry run's ``-o json`` prints)."""
    record_document(plan.to_dict())


def record_document(document: dict) -> None:
    """``$NODEWEAVE_PLAN_RECORD``: a verb's plan document about to be carried out (``render``'s: its file plan)."""
    target = os.environ.get(RECORD_ENV)
    if not target:
        return
    try:
        Path(target).write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{RECORD_ENV}={target}: cannot write the plan there ({err.strerror or err})") from None


def write_files(phase: Phase, spec_dir: Path, say: Callable[[str], None]) -> None:
    """Each planned file, atomically; one without content is a fresh secret, made now (0600)."""
    from nodeweave.cluster import token
    from nodeweave.rendering.plan import write_atomically

    for planned in phase.files:
        path = spec_dir / planned.path
        if planned.content is None:
            token.rotate(path)
        else:
            write_atomically(path, planned.content)
        say(f"wrote {planned.path} ({planned.what})")


class WriteFiles(PhaseRun):
    kind = "files"

    def run(self, phase: Phase, job: Execution):
        write_files(phase, job.spec_dir, job.say)


class RunSteps(PhaseRun):
    """Local steps, at once; the phase after waits for the last."""

    kind = "commands"

    def run(self, phase: Phase, job: Execution):
        from nodeweave.steps import execute_all

        for step in phase.steps:
            job.say(f"{step.what}: {step.text()}")
        execute_all(phase.steps)


class Allocate(PhaseRun):
    """The step that takes the nodes (Slurm's salloc): the job id and nodes it was granted, for the later phases."""

    kind = "allocate"

    def run(self, phase: Phase, job: Execution):
        (step,) = phase.steps
        job.say(f"{step.what}: {step.text()}")
        values = job.backend.allocate(phase)
        job.say(f"took allocation {job.backend.job} on {', '.join(job.backend.hosts())}")
        return values


class Wait(PhaseRun):
    """The live table until every node the backend has for ``up`` is up, then whether their plans agree (a node
    that answers but cannot start fails ``up``, naming it); what ``up -o json`` prints of the nodes."""

    kind = "wait"

    def run(self, phase: Phase, job: Execution):
        from nodeweave.cluster.ready import wait_until_up
        from nodeweave.cluster.status import plan_verdict
        from nodeweave.errors import NodeweaveError

        backend, mode = job.backend, phase.request
        nodes = backend.nodes(for_up=True)  # once the phases before ran (a Slurm allocation's: Slurm's to pick)
        command = [backend.spec.launcher.script, *backend.spec.launcher.args]  # what a held node's plan is for
        progress = wait_until_up(backend, nodes, mode, phase.timeout, job.out, command)
        agree, failures = plan_verdict([(n, progress.ready.get(n.index)) for n in nodes])
        what = f"in {mode} mode" if backend.holds else "and answer (bare hosts: nothing held)"
        job.out.print(f"{len(nodes)} node(s) up {what} on {backend.where()}; {agree}", highlight=False)
        if failures:  # a node that answers but cannot start is no agreement (issue 33): up fails, naming it
            raise NodeweaveError(f"{len(failures)} of {len(nodes)} node(s) cannot start: " + "; ".join(failures)
                                 + "; `nodeweave status` shows each plan (fix the spec, then `nodeweave up` again)")
        return {"mode": mode, "where": backend.where(), "nodes": [
            {"node": n.name, "reached_as": n.remote.label, "state": progress.state.get(n.index)} for n in nodes]}


class Stop(PhaseRun):
    """Every node's stop at once, then the platform's leftovers; the nodes' reports, as (planned node, report)."""

    kind = "stop"

    def run(self, phase: Phase, job: Execution):
        from nodeweave.cluster.stop import stop_runs

        return list(zip(phase.nodes, stop_runs(phase, job.out)))


class Exec(PhaseRun):
    """The command on every node at once, each node's argv as planned; every node's result."""

    kind = "exec"

    def run(self, phase: Phase, job: Execution):
        from nodeweave.cluster.logs import exec_everywhere

        return exec_everywhere(list(job.nodes), phase.request, None if job.quiet else job.out, timeout=phase.timeout,
                               argv=[list(n.argv) for n in phase.nodes])


class Shell(PhaseRun):
    """The one node's interactive shell: this process becomes its exec client."""

    kind = "shell"

    def run(self, phase: Phase, job: Execution):
        argv = list(phase.nodes[0].argv)
        os.execvp(argv[0], argv)


BUILT_IN = (WriteFiles(), RunSteps(), Allocate(), Wait(), Stop(), Exec(), Shell())
