"""Run a :class:`BuildPlan` on an engine, streaming its progress.

The engine's own log is passed line by line to a callback (the CLI shows it
with rich) and parsed on the way for the step count and which steps came from
the layer cache, so a rebuild can prove that only code layers ran again.
BuildKit prints the same plain progress through buildx and through the
classic ``docker build`` of a client without buildx, so one parser reads both.
The build runs the plan's own steps (``BuildPlan.steps``: the engine's argv, its variables), the ones
``image build --dry-run`` prints, not a command a client library assembles beside them. Pushing
(pushed.py) runs the plan's push steps and returns the stored digests.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence

from nodeweave.build.engine import Engine
from nodeweave.build.plan import BuildPlan, Revision
from nodeweave.build.pushed import push_steps
from nodeweave.errors import EnvironmentProblem, NodeweaveError
from nodeweave.steps import Step

# podman/buildah: "STEP 3/9: RUN ...", a cached step then prints "--> Using cache <id>".
_PODMAN_STEP = re.compile(r"^STEP (\d+)/(\d+): (.*)")
_PODMAN_CACHED = re.compile(r"^--> Using cache ")
# BuildKit's plain progress (buildx, or DOCKER_BUILDKIT=1 docker build --progress plain):
# "#7 [stage-0 3/9] RUN ...", then "#7 CACHED".
_BUILDX_STEP = re.compile(r"^#(\d+) \[(?:[^\]]*?\s)?(\d+)/(\d+)\] (.*)")
_BUILDX_CACHED = re.compile(r"^#(\d+) CACHED")


@dataclass
class BuildProgress:
    """Steps seen in an engine's build log, and which of them the layer cache answered."""

    steps: List[str] = field(default_factory=list)
    cached: List[str] = field(default_factory=list)
    _buildx_ids: dict = field(default_factory=dict)

    def feed(self, line: str) -> Optional[str]:
        """Record one log line; return the step it starts, if it starts one."""
        line = line.rstrip("\n")
        match = _PODMAN_STEP.match(line)
        if match:
            self.steps.append(match.group(3))
            return f"step {match.group(1)}/{match.group(2)}: {match.group(3)}"
        if _PODMAN_CACHED.match(line) and self.steps:
            self.cached.append(self.steps[-1])
            return None
        match = _BUILDX_STEP.match(line)
        if match and match.group(1) not in self._buildx_ids:
            self._buildx_ids[match.group(1)] = match.group(4)
            self.steps.append(match.group(4))
            return f"step {match.group(2)}/{match.group(3)}: {match.group(4)}"
        match = _BUILDX_CACHED.match(line)
        if match and match.group(1) in self._buildx_ids:
            self.cached.append(self._buildx_ids[match.group(1)])
        return None

    @property
    def rebuilt(self) -> List[str]:
        """Steps the engine executed rather than took from its cache (FROM only names the base)."""
        cached = list(self.cached)
        out = []
        for step in self.steps:
            if step.upper().startswith("FROM "):
                continue
            if step in cached:
                cached.remove(step)
            else:
                out.append(step)
        return out


@dataclass(frozen=True)
class BuildResult:
    plan: BuildPlan
    image_id: str
    size_bytes: int
    seconds: float
    steps: int
    cached_steps: int
    rebuilt_steps: tuple
    digests: dict = field(default_factory=dict)  # tag -> the digest the registry stored (with --push)


def git_revision(root: Path) -> Optional[Revision]:
    """The checkout's commit and whether it has edits; None outside a git checkout."""
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=30)
        if sha.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Revision(sha=sha.stdout.strip(), dirty=bool(status.stdout.strip()))


def no_revision_why(root: Path) -> str:
    """Why ``git_revision(root)`` is None, as a note says it: a folder outside git, or a checkout (a fresh
    ``git init``) with no commit yet, where "not in a git checkout" would send the user to run git init again."""
    try:
        inside = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return f"{root} is not in a git checkout (git could not be asked)"
    if inside.returncode == 0 and inside.stdout.strip() == "true":
        return f"{root} is in a git checkout with no commit yet"
    return f"{root} is not in a git checkout"


def _build_lines(step: Step) -> Iterator[str]:
    """The planned build step's log, line by line, as it runs (the very argv and variables the plan holds)."""
    from python_on_whales.utils import stream_stdout_and_stderr

    for _source, raw in stream_stdout_and_stderr(list(step.argv), env=dict(step.env) or None):
        yield raw.decode(errors="replace")


def run_build(engine: Engine, plan: BuildPlan, on_line: Callable[[str], None] = lambda line: None,
              no_cache: bool = False, steps: Optional[Sequence[Step]] = None) -> BuildResult:
    """Run the build's steps (``steps``, as a plan holds them; else ``plan.steps`` for ``engine``): the build,
    then any pushes; raise NodeweaveError with the engine's last words on failure."""
    from python_on_whales.exceptions import DockerException

    build, *pushes = steps if steps is not None else plan.steps(engine.kind, engine.builder, no_cache)
    progress = BuildProgress()
    started = time.monotonic()
    tail: List[str] = []
    try:
        for line in _build_lines(build):
            progress.feed(line)
            tail = (tail + [line.rstrip()])[-15:]
            on_line(line.rstrip("\n"))
    except DockerException as err:
        from nodeweave.failures import REGISTRY_UNREACHABLE

        unreached = any(REGISTRY_UNREACHABLE.search(line) for line in tail)  # the network's, exit 3 (walk18a A11)
        raise (EnvironmentProblem if unreached else NodeweaveError)(
            f"{engine.kind} build of {plan.dockerfile} failed (exit {err.return_code}); last lines:\n"
            + "\n".join(tail)
        ) from None
    except FileNotFoundError:
        raise NodeweaveError(f"{build.argv[0]} is not installed here; it is needed to {build.what}") from None
    seconds = time.monotonic() - started
    image = engine.client.image.inspect(plan.tags[0])
    digests = push_steps(engine, pushes)
    return BuildResult(plan=plan, image_id=image.id, size_bytes=int(image.size or 0), seconds=seconds,
                       steps=len(progress.steps), cached_steps=len(progress.cached),
                       rebuilt_steps=tuple(progress.rebuilt), digests=digests)
