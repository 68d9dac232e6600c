"""The one executor: walk a verb's :class:`~nodeweave.plan.Plan`, phase by phase, as planned.

Files and local steps are done here; a phase that needs the verb's context (a wait with its live
table, a run with its console, a check with its report) goes to the handler the verb passes for
its kind, which gets the phase itself, so what runs is what the plan says. A handler that makes
something known the plan could only name (a Slurm allocation's ``JOBID``, ``NODE0``, ...) returns those
names' values, and every later phase runs with them filled in (``Phase.bound``).

``NODEWEAVE_PLAN_RECORD=<file>`` (a debugging aid) writes the executed plan's ``to_dict()`` there as
JSON before the first phase runs: compare it with ``--dry-run -o json`` of the same command.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Dict, Mapping, Optional

from nodeweave.plan import Phase, Plan
from nodeweave.errors import UsageError

RECORD_ENV = "NODEWEAVE_PLAN_RECORD"

Handler = Callable[[Phase], Optional[Mapping[str, str]]]


def execute(plan: Plan, spec_dir: Path, say: Callable[[str], None],
            handlers: Optional[Dict[str, Handler]] = None) -> None:
    """Every phase of ``plan`` in order; ``say`` prints a line of what is done; the first failure raises."""
    record(plan)
    for line in plan.notes:
        say(line)
    chosen = {"files": lambda phase: write_files(phase, spec_dir, say),
              "commands": lambda phase: run_steps(phase, say), **(handlers or {})}
    known: Dict[str, str] = {}
    for phase in plan.phases:
        if phase.kind not in chosen:
            raise ValueError(f"{plan.verb}: no handler for a {phase.kind} phase")  # a verb's own bug, not input
        made = chosen[phase.kind](phase.bound(known))
        if isinstance(made, Mapping):  # (other handlers' results are theirs: a check's verdict, a run's data)
            known.update(made)


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


def run_steps(phase: Phase, say: Callable[[str], None]) -> None:
    from nodeweave.steps import execute_all

    for step in phase.steps:
        say(f"{step.what}: {step.text()}")
    execute_all(phase.steps)
