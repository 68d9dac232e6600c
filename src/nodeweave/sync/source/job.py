"""One target's way through a round of a sync, and the rule that a failure stays with its target."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from nodeweave.remote import Remote
from nodeweave.sync.outcome import TargetResult
from nodeweave.sync.transport.plan import Difference, Manifest
from nodeweave.sync.transport.session import Session, TransferError


@dataclass(eq=False)
class Job:
    """One target's way through a round (hashed by identity: relay plans key on it)."""

    target: Remote
    result: TargetResult
    session: "Session | None" = None
    manifest: "Manifest | None" = None
    diff: Difference = field(default_factory=Difference)
    method: str = "-"
    tar: "subprocess.Popen[bytes] | None" = None  # the ``tar -x`` process of a tar target
    plan_sent: bool = False  # a stream target's plan went ahead of its payload
    upstream: "Job | None" = None  # with relay: the target that forwards the payload here
    error: "TransferError | None" = None


def guard(job: Job, step) -> None:
    """Run one step of one target; a failure is recorded on it, never raised to the others."""
    if job.error is not None:
        return
    try:
        step()
    except TransferError as err:
        job.error = err
    except Exception as err:  # a worker must report, not die: the others go on
        job.error = TransferError(f"{type(err).__name__}: {err}", transient=False)
    if job.error is not None and job.session is not None:
        job.session.kill()
