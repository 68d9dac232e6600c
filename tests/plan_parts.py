"""What a backend's ``plan_up`` / ``plan_down`` holds, taken apart for the tests that look at one part: the
files it writes and its phases of local steps (each phase's steps run at once), as the plan carries them."""

from __future__ import annotations

from typing import List, Optional

from nodeweave.plan import CommandsPhase, FilesPhase, Plan


def files_of(plan: Plan) -> list:
    return [f for phase in plan.of_kind(FilesPhase) for f in phase.files]


def steps_of(plan: Plan) -> List[list]:
    return [list(phase.steps) for phase in plan.of_kind(CommandsPhase)]


def up_files(backend, mode: str) -> list:
    return files_of(backend.plan_up(mode, None, 0, wait=False))


def up_steps(backend, mode: str, image: Optional[str]) -> List[list]:
    return steps_of(backend.plan_up(mode, image, 0, wait=False))


def down_files(backend, delete_claims: bool) -> list:
    return files_of(backend.plan_down(delete_claims))


def down_steps(backend, delete_claims: bool) -> List[list]:
    return steps_of(backend.plan_down(delete_claims))
