"""A plan's phases: one frozen dataclass per kind, each holding what its kind needs, printing itself for a dry
run (``lines``) and running itself (``run``).

Why a class per kind: a phase that was one dataclass with a ``kind`` string carried every kind's
fields (a wait's mode, a run's request, a stage's file list all in one ``request``), and what it did
lived in a table of functions the verbs handed the executor. Now a phase's fields are its own, and
``run(job)`` says what running it takes. This room stands below ``cluster/``, ``check/``, ``sync/``
and ``build/``, so ``run`` asks the verb's :class:`Execution` (``nodeweave.cluster.execute``) for
the effect by name: the cluster's own effects (files, a render's files, steps, the allocation, the wait,
stop, exec, shell) are the execution's methods; a run's, a check's, a sync's and an image build's are a session
the verb opens (``job.runs``, ``job.checks``, ``job.syncs``, ``job.builds``; the protocols below say
what each answers).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from typing import Any, Callable, ClassVar, List, Mapping, Optional, Protocol, Tuple

from nodeweave.plan.placeholders import (JOB_ID, RUN_ID, command_text, filled, node_placeholder, shown_data, step_dict,
                                         step_text)
from nodeweave.steps import Step


@dataclass(frozen=True)
class PlannedFile:
    """A file the verb writes here; ``content`` None: made when written (a fresh secret), never planned."""

    path: str  # as the user sees it (relative to the spec's folder)
    what: str
    content: Optional[bytes] = field(default=None, repr=False)
    mode: int = 0o644

    @property
    def size(self) -> Optional[int]:
        return None if self.content is None else len(self.content)

    @property
    def digest(self) -> Optional[str]:
        return None if self.content is None else "sha256:" + hashlib.sha256(self.content).hexdigest()

    def to_dict(self) -> dict:
        return {"path": self.path, "what": self.what, "size": self.size, "digest": self.digest,
                "mode": f"{self.mode:04o}"}


@dataclass(frozen=True)
class NodeCommand:
    """One node's argv in a phase that acts on every node (a run, a check, a stop, an exec)."""

    node: str
    reached_as: str
    argv: Tuple[str, ...]
    role: str = ""  # "a spare: ..." for a node that starts as a spare; "" for a training node

    def to_dict(self) -> dict:
        return {"node": self.node, "reached_as": self.reached_as, "argv": list(self.argv),
                **({"role": self.role} if self.role else {})}

    def lines(self) -> List[str]:
        return [f"# {self.node} ({self.reached_as}{', ' + self.role if self.role else ''})", command_text(self.argv)]


class RunsPoints(Protocol):
    """``run``'s session (``cluster.runplan.RunSession``): the sweep's folder, each point's run."""

    def open_sweep(self, phase: "SweepPhase") -> Any: ...

    def run_point(self, phase: "RunPhase") -> Any: ...


class ChecksNodes(Protocol):
    """A check's session (``nodeweave check``, ``run --check``, ``up --check``): the check and its verdict."""

    def check(self, phase: "CheckPhase") -> Any: ...


class Syncs(Protocol):
    """``sync``'s session: every target's agent exec, what each moves decided by its answer."""

    def sync(self, phase: "SyncPhase") -> Any: ...


class Builds(Protocol):
    """``image build``'s session: the engine's steps with the build's log streamed, the upload staged."""

    def build(self, phase: "BuildPhase") -> Any: ...

    def stage(self, phase: "StagePhase") -> Any: ...


@dataclass(frozen=True)
class Phase:
    """One step of a plan. A subclass per kind: its fields, its dry-run ``lines``, its ``run``."""

    kind: ClassVar[str] = ""
    what: str

    def run(self, job) -> Any:
        """Do this phase with the verb's ``job`` (``nodeweave.cluster.execute.Execution``); what it returns is
        kept in the job's outcomes (an allocation's: the placeholders' values it made known)."""
        raise NotImplementedError(f"a {self.kind} phase does not run itself")  # a new kind's own bug, not input

    def lines(self) -> List[str]:
        """The phase as a dry run prints it (placeholders raw: ``plan_lines`` shows them)."""
        raise NotImplementedError

    def planned_request(self) -> Optional[object]:
        """What ``to_dict`` prints as the phase's ``request`` (a run's request, a wait's mode); None: none."""
        return None

    def bound(self, values: Mapping[str, str]) -> "Phase":
        """This phase with each placeholder of ``values`` (:data:`JOB_ID`, ``node_placeholder(0)``, ...) replaced in
        its steps' argv and env and its nodes' argv and labels: what a phase before it (an allocation) made known.
        Only placeholders are replaced: a word a user typed (``JOBID`` in their command) reaches the node as typed."""
        if not values:
            return self

        def fill(text: str) -> str:
            return filled(text, values)

        changes: dict = {"what": fill(self.what)}
        if hasattr(self, "steps"):
            changes["steps"] = tuple(replace(s, what=fill(s.what), argv=tuple(map(fill, s.argv)),
                                             env=tuple((k, fill(v)) for k, v in s.env)) for s in self.steps)
        if hasattr(self, "nodes"):
            changes["nodes"] = tuple(replace(n, node=fill(n.node), reached_as=fill(n.reached_as),
                                             argv=tuple(map(fill, n.argv))) for n in self.nodes)
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """The phase as data, as ``-o json`` prints it: each placeholder as ``<name>``."""
        data: dict = {"kind": self.kind, "what": self.what}
        if getattr(self, "steps", ()):
            data["steps"] = [step_dict(s) for s in self.steps]
        if getattr(self, "files", ()):
            data["files"] = [f.to_dict() for f in self.files]
        if getattr(self, "nodes", ()):
            data["nodes"] = [n.to_dict() for n in self.nodes]
        if getattr(self, "timeout", None) is not None:
            data["timeout"] = self.timeout
        if getattr(self, "folder", None) is not None:
            data["folder"] = self.folder
        request = self.planned_request()
        if request is not None:
            data["request"] = asdict(request) if is_dataclass(request) else request
        if hasattr(self, "point"):
            data["point"] = dict(self.point)
        if getattr(self, "env", ()):
            data["env"] = dict(self.env)
        return shown_data(data)


def _step_lines(steps) -> List[str]:
    return [line for step in steps for line in (f"# {step.what}", step_text(step))]


def _node_lines(nodes) -> List[str]:
    return [line for node in nodes for line in node.lines()]


@dataclass(frozen=True)
class FilesPhase(Phase):
    """Files written here (path as the user sees it, size and SHA-256 where known; a secret's content is made
    when the phase runs, so only its path is planned)."""

    kind: ClassVar[str] = "files"
    files: Tuple[PlannedFile, ...] = ()

    def lines(self) -> List[str]:
        return [f"# would write {f.path} ({f.what}" + (f", {f.size} bytes, {f.digest}" if f.size is not None
                                                       else "") + ")" for f in self.files]

    def run(self, job) -> Any:
        return job.write_files(self)


@dataclass(frozen=True)
class RemoveFilesPhase(Phase):
    """Files an earlier verb wrote here for the job and this one takes back (``down``: the job's token, once the
    nodes that mount it are gone), each only where it is still a plain file; a user's file is never named."""

    kind: ClassVar[str] = "remove"
    files: Tuple[PlannedFile, ...] = ()

    def lines(self) -> List[str]:
        return [f"# would remove {f.path} ({f.what})" for f in self.files]

    def run(self, job) -> Any:
        return job.remove_files(self)


@dataclass(frozen=True)
class RenderedFile:
    """One path under ``render``'s output folder and what writing the rendering does to it: ``new``, ``changed``,
    ``unchanged``, ``refused`` (differs and is not nodeweave's), ``obsolete`` (an earlier render of this job wrote it,
    no renderer makes it now) or ``kept`` (obsolete, but changed by the user since). ``size`` and ``sha256``: the
    rendered bytes (obsolete and kept: the bytes on disk); ``target``: the renderer that made it."""

    path: str  # relative to the output folder
    status: str
    size: int
    sha256: str
    target: str = ""
    content: Optional[bytes] = field(default=None, repr=False, compare=False)  # what is written (obsolete: None)
    edited: bool = False  # changed: edited since the last render wrote it, kept aside when replaced (walk18a A27)

    def to_dict(self) -> dict:
        return {"path": self.path, "bytes": self.size, "status": self.status, "sha256": self.sha256}


RENDER_COUNTED = ("new", "changed", "unchanged", "obsolete", "kept")  # the summary's words, in its order


@dataclass(frozen=True)
class RenderFilesPhase(Phase):
    """``render``'s files: every path under ``out`` and what writing does to it (``nodeweave.rendering.plan`` reads
    the folder, the record and the marks to decide), run as one staged write, all of it or none: new and changed
    files written, obsolete ones removed with ``prune``, the record of what this render of ``job`` wrote
    (``recorded``: the record as read when planned, (path, sha256, target, job) each) and its .gitignore.

    Why its own kind and not :class:`FilesPhase`: a render compares with what is there (a user's file is refused,
    never overwritten) and records what it wrote for ``--prune``; ``up``'s files are its own, written as planned."""

    kind: ClassVar[str] = "render"
    out: str = ""
    targets: Tuple[str, ...] = ()
    files: Tuple[RenderedFile, ...] = ()
    prune: bool = False
    job: str = ""
    recorded: Tuple[Tuple[str, str, str, str], ...] = field(default=(), repr=False)

    @property
    def stale(self) -> List[str]:
        """Paths that differ from the rendering (what ``--check`` reports)."""
        return [f.path for f in self.files if f.status not in ("unchanged", "kept")]

    @property
    def refused(self) -> List[str]:
        """Differing files without the mark: they look like the user's own."""
        return [f.path for f in self.files if f.status == "refused"]

    @property
    def edited(self) -> List[str]:
        """Files a render wrote whose bytes changed since (an edit): replaced, the edit kept in .nodeweave/_edited/."""
        return [f.path for f in self.files if f.edited]

    @property
    def kept(self) -> List[str]:
        """Files an earlier render wrote that no renderer makes now, changed by the user since: never pruned."""
        return [f.path for f in self.files if f.status == "kept"]

    def counts(self) -> dict:
        return {s: sum(1 for f in self.files if f.status == s) for s in RENDER_COUNTED}

    def lines(self) -> List[str]:
        """One line a file: what writing does to it (``remove``: obsolete, with ``prune``), its size, its path."""
        from nodeweave.quantities import human_bytes

        width = max((len(human_bytes(f.size)) for f in self.files), default=1)
        return [f"{'remove' if f.status == 'obsolete' and self.prune else f.status:<9}  "
                f"{human_bytes(f.size):>{width}}  {f.path}" for f in self.files]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "what": self.what, "out": self.out, "targets": list(self.targets),
                "prune": self.prune, "files": [f.to_dict() for f in self.files]}

    def run(self, job) -> Any:
        return job.write_rendered(self)


@dataclass(frozen=True)
class CommandsPhase(Phase):
    """Local steps (``nodeweave.steps.Step``) that run at once, the phase after the last."""

    kind: ClassVar[str] = "commands"
    steps: Tuple[Step, ...] = ()

    def lines(self) -> List[str]:
        return _step_lines(self.steps)

    def run(self, job) -> Any:
        return job.run_steps(self)


@dataclass(frozen=True)
class AllocatePhase(Phase):
    """The step that takes a Slurm allocation; its job id and nodes are Slurm's to pick, so the later phases hold
    :data:`JOB_ID` and ``node_placeholder(i)`` where they go. ``run`` returns their values."""

    kind: ClassVar[str] = "allocate"
    steps: Tuple[Step, ...] = ()
    # What takes it (the target's own: salloc, its job id recorded): the placeholders' values. The phase carries
    # it, so a target that takes no nodes has no allocate to implement.
    take: Optional[Callable[["AllocatePhase"], Mapping[str, str]]] = field(default=None, compare=False, repr=False)

    def lines(self) -> List[str]:
        return [*_step_lines(self.steps), f"# the job id and nodes it is granted replace {JOB_ID} and "
                                          f"{node_placeholder(0)}, {node_placeholder(1)}, ... below"]

    def run(self, job) -> Mapping[str, str]:
        return job.allocate(self)


@dataclass(frozen=True)
class WaitPhase(Phase):
    """Wait until the nodes are up (``mode``: hold or run), for at most ``timeout`` seconds."""

    kind: ClassVar[str] = "wait"
    nodes: Tuple[NodeCommand, ...] = ()
    timeout: Optional[float] = None
    mode: str = "hold"

    def planned_request(self) -> Optional[object]:
        return self.mode

    def lines(self) -> List[str]:
        return [f"# then wait up to {self.timeout:.0f} s {self.what}"]

    def run(self, job) -> Any:
        return job.wait_until_up(self)


@dataclass(frozen=True)
class SweepPhase(Phase):
    """The folder a sweep's runs go into (a pattern: its UTC time is known when it starts), the metric its table
    compares (``sweep``: ``cluster.runplan.SweepRequest``)."""

    kind: ClassVar[str] = "sweep"
    folder: Optional[str] = None
    sweep: Optional[object] = None

    def planned_request(self) -> Optional[object]:
        return self.sweep

    def lines(self) -> List[str]:
        return [f"# {self.what}; the sweep folder would be {self.folder}"]

    def run(self, job) -> Any:
        return job.runs.open_sweep(self)


@dataclass(frozen=True)
class LaunchPhase(Phase):
    """A launch through every node's entrypoint into a run folder (a pattern: its UTC time is known when it
    starts), :data:`RUN_ID` where the run's id goes in every argv (a Slurm step: one argv for all)."""

    nodes: Tuple[NodeCommand, ...] = ()
    folder: Optional[str] = None

    def launches(self, run_id: str) -> List[List[str]]:
        """The argv as planned, with the run's id (made when its folder was) for :data:`RUN_ID`: what the runner
        spawns, one per node (a Slurm step: one for all)."""
        return [list(n.argv) for n in self.bound({RUN_ID: run_id}).nodes]

    def lines(self) -> List[str]:
        return [f"# {self.what}; the run folder would be {self.folder}", *_node_lines(self.nodes)]


@dataclass(frozen=True)
class RunPhase(LaunchPhase):
    """One run (a sweep's point: ``point``, its variables); ``request``: ``cluster.runner.RunRequest``."""

    kind: ClassVar[str] = "run"
    request: Optional[object] = None
    point: Tuple[Tuple[str, str], ...] = ()

    def planned_request(self) -> Optional[object]:
        return self.request

    def run(self, job) -> Any:
        return job.runs.run_point(self)


@dataclass(frozen=True)
class CheckPhase(LaunchPhase):
    """The check: every node's worker; ``options``: ``check.driver.CheckOptions``; ``env``: the variables in
    front of every node's entrypoint."""

    kind: ClassVar[str] = "check"
    options: Optional[object] = None
    env: Tuple[Tuple[str, str], ...] = ()

    def planned_request(self) -> Optional[object]:
        return self.options

    def run(self, job) -> Any:
        return job.checks.check(self)


@dataclass(frozen=True)
class StopPhase(Phase):
    """Every node's stop (its argv), then the platform's leftovers (``steps``: a Slurm step, bare hosts' marks);
    ``timeout``: the grace."""

    kind: ClassVar[str] = "stop"
    nodes: Tuple[NodeCommand, ...] = ()
    steps: Tuple[Step, ...] = ()
    timeout: Optional[float] = None

    def lines(self) -> List[str]:
        return [*_node_lines(self.nodes), *(line for step in self.steps
                                            for line in (f"# then {step.what}", step_text(step)))]

    def run(self, job) -> Any:
        return job.stop(self)


@dataclass(frozen=True)
class ExecPhase(Phase):
    """A command on every node at once, each node's argv; ``timeout``: the command's limit (None: none)."""

    kind: ClassVar[str] = "exec"
    nodes: Tuple[NodeCommand, ...] = ()
    timeout: Optional[float] = None
    command: Tuple[str, ...] = ()

    def planned_request(self) -> Optional[object]:
        return list(self.command)

    def lines(self) -> List[str]:
        return _node_lines(self.nodes)

    def run(self, job) -> Any:
        return job.exec(self)


@dataclass(frozen=True)
class ShellPhase(Phase):
    """One node's interactive shell."""

    kind: ClassVar[str] = "shell"
    nodes: Tuple[NodeCommand, ...] = ()

    def lines(self) -> List[str]:
        return [command_text(n.argv) for n in self.nodes]

    def run(self, job) -> Any:
        return job.shell(self)


@dataclass(frozen=True)
class SyncPhase(Phase):
    """One agent exec per target (``nodeweave.sync.syncplan``); ``work``: what is synced (``SyncWork``)."""

    kind: ClassVar[str] = "sync"
    nodes: Tuple[NodeCommand, ...] = ()
    work: Optional[object] = None

    def planned_request(self) -> Optional[object]:
        return self.work

    def lines(self) -> List[str]:
        return [f"# {self.what}", *_node_lines(self.nodes)]

    def run(self, job) -> Any:
        return job.syncs.sync(self)


@dataclass(frozen=True)
class BuildPhase(Phase):
    """``image build``'s steps, one after another, the build's log streamed (``BuildPlan.steps``)."""

    kind: ClassVar[str] = "build"
    steps: Tuple[Step, ...] = ()

    def lines(self) -> List[str]:
        return _step_lines(self.steps)

    def run(self, job) -> Any:
        return job.builds.build(self)


@dataclass(frozen=True)
class StagePhase(Phase):
    """A folder filled with files of the context (``image build -t openshift``'s upload); ``upload``: its
    description (``files``: the list)."""

    kind: ClassVar[str] = "stage"
    folder: Optional[str] = None
    upload: Optional[dict] = None

    def planned_request(self) -> Optional[object]:
        return self.upload

    def lines(self) -> List[str]:
        return [f"# {self.what}: {len(self.upload['files']) + 1} file(s) into {self.folder}"]

    def run(self, job) -> Any:
        return job.builds.stage(self)


PHASES = (FilesPhase, RemoveFilesPhase, RenderFilesPhase, CommandsPhase, WaitPhase, SweepPhase, RunPhase, CheckPhase, StopPhase,
          ExecPhase, ShellPhase, AllocatePhase, SyncPhase, BuildPhase, StagePhase)
KINDS = tuple(p.kind for p in PHASES)
