"""A verb's plan: what it would do, in order, as one object that ``--dry-run`` prints and the real run executes.

Why one object: a dry run assembled beside the real run drifts from it (a wait, a check, a file
written, a sweep point left out of the printout). Why a room of its own, below the CLI and below
``cluster/`` and ``build/``: it is the one plan type of every verb that acts (the cluster verbs'
plans in ``nodeweave.cluster.verbs`` and ``runplan``, the check's in ``nodeweave.check.plan``, the
sync's in ``nodeweave.sync.syncplan``, the image build's in ``nodeweave.build.plan``), so each is
assembled next to what it plans, none in ``cli/``. ``--dry-run`` prints a plan (``plan_lines``, or
``to_dict()`` as ``-o json|yaml``) and ``nodeweave.cluster.execute`` walks the very same object.

A plan is an ordered tuple of :class:`Phase`\\ s, each of one kind:

- ``files``: files written here (path as the user sees it, size and SHA-256 where known; a
  secret's content is made when the phase runs, so only its path is planned);
- ``commands``: local steps (``nodeweave.steps.Step``) that run at once, the phase after the last;
- ``wait``: wait until the nodes are up (what for, the timeout);
- ``sweep``: the folder a sweep's runs go into, and the metric its table compares;
- ``run`` / ``check``: a run through every node's entrypoint into a run folder (the folder is a
  pattern: its UTC time is known when it starts; ``RUN_ID`` stands for the id in every argv);
- ``stop`` / ``exec`` / ``shell``: one argv per node (a shell: one node), run there;
- ``allocate``: the step that takes a Slurm allocation; its job id and nodes are Slurm's to pick, so the
  later phases say ``JOBID`` and ``NODE0``, ``NODE1``, ... where they go, and the executor fills them in
  (:meth:`Phase.bound`) once the allocation is taken;
- ``sync``: one agent exec per target (``nodeweave.sync.syncplan``), what each moves decided by its answer;
- ``build``: ``image build``'s steps, one after another, the build's log streamed (``BuildPlan.steps``);
- ``stage``: a folder filled with files of the context (``image build -t openshift``'s upload; the list).

Nothing here touches a node or a file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from typing import List, Mapping, Optional, Tuple

from nodeweave.steps import Step

RUN_ID = "RUN_ID"  # what a run's argv carries in a plan: the run id is the folder's, made when the run starts
JOB_ID = "JOBID"  # a Slurm allocation's job id, in the phases after the one that takes it
NODE = "NODE"  # NODE0, NODE1, ...: the allocation's nodes, in the same phases
KINDS = ("files", "commands", "wait", "sweep", "run", "check", "stop", "exec", "shell", "allocate", "sync", "build",
         "stage")


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

    def to_dict(self) -> dict:
        return {"node": self.node, "reached_as": self.reached_as, "argv": list(self.argv)}


@dataclass(frozen=True)
class Phase:
    kind: str
    what: str
    steps: Tuple[Step, ...] = ()
    files: Tuple[PlannedFile, ...] = ()
    nodes: Tuple[NodeCommand, ...] = ()
    timeout: Optional[float] = None  # wait: how long; exec: the command's limit (None: none)
    folder: Optional[str] = None  # run/check: the run folder (a pattern, see the module's docstring)
    request: Optional[object] = field(default=None)  # run: RunRequest; check: CheckOptions; wait: the mode
    point: Tuple[Tuple[str, str], ...] = ()  # run: this sweep point's variables
    env: Tuple[Tuple[str, str], ...] = ()  # check: variables in front of every node's entrypoint

    def bound(self, values: Mapping[str, str]) -> "Phase":
        """This phase with each placeholder word of ``values`` (``JOBID``, ``NODE0``, ...) replaced in its steps'
        argv and env and its nodes' argv and labels: what a phase before it (an allocation) made known."""
        if not values:
            return self
        words = re.compile(r"\b(" + "|".join(map(re.escape, sorted(values, key=len, reverse=True))) + r")\b")

        def fill(text: str) -> str:
            return words.sub(lambda found: values[found.group(1)], text)

        steps = tuple(replace(s, what=fill(s.what), argv=tuple(map(fill, s.argv)),
                              env=tuple((k, fill(v)) for k, v in s.env)) for s in self.steps)
        nodes = tuple(replace(n, reached_as=fill(n.reached_as), argv=tuple(map(fill, n.argv))) for n in self.nodes)
        return replace(self, what=fill(self.what), steps=steps, nodes=nodes)

    def launches(self, run_id: str) -> List[List[str]]:
        """A run's or a check's argv as planned, with the run's id (made when its folder was) for ``RUN_ID``: what
        the runner spawns, one per node (a Slurm step: one for all)."""
        return [list(n.argv) for n in self.bound({RUN_ID: run_id}).nodes]

    def to_dict(self) -> dict:
        data = {"kind": self.kind, "what": self.what}
        if self.steps:
            data["steps"] = [step_dict(s) for s in self.steps]
        if self.files:
            data["files"] = [f.to_dict() for f in self.files]
        if self.nodes:
            data["nodes"] = [n.to_dict() for n in self.nodes]
        if self.timeout is not None:
            data["timeout"] = self.timeout
        if self.folder is not None:
            data["folder"] = self.folder
        if self.request is not None:
            data["request"] = asdict(self.request) if is_dataclass(self.request) else self.request
        if self.kind == "run":
            data["point"] = dict(self.point)
        if self.env:
            data["env"] = dict(self.env)
        return data


@dataclass(frozen=True)
class Plan:
    """What one verb does, in order; ``notes`` are the lines it prints first (what it found, what it decided)."""

    verb: str
    where: str
    phases: Tuple[Phase, ...] = ()
    notes: Tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"verb": self.verb, "where": self.where, "notes": list(self.notes),
                "phases": [p.to_dict() for p in self.phases]}

    def of_kind(self, kind: str) -> List[Phase]:
        return [p for p in self.phases if p.kind == kind]


def step_dict(step: Step) -> dict:
    """A step as data: its argv, the variables it adds, what its stdin is (never the text: it may be a secret)."""
    return {"what": step.what, "argv": list(step.argv), "env": dict(step.env),
            "stdin": step.stdin_name or None if step.stdin is not None else None, "timeout": step.timeout}


def plan_lines(plan: Plan) -> List[str]:
    """The plan as a person reads it: ``#`` lines say what, the other lines are commands one could paste."""
    import shlex

    lines = [f"# {note}" for note in plan.notes]
    for phase in plan.phases:
        if phase.kind == "files":
            lines += [f"# would write {f.path} ({f.what}" + (f", {f.size} bytes, {f.digest}" if f.size is not None
                                                              else "") + ")" for f in phase.files]
        elif phase.kind in ("commands", "allocate", "build"):
            for step in phase.steps:
                lines += [f"# {step.what}", step.text()]
            if phase.kind == "allocate":
                lines.append(f"# the job id and nodes it is granted replace {JOB_ID} and {NODE}0, {NODE}1, ... below")
        elif phase.kind == "stage":
            lines.append(f"# {phase.what}: {len(phase.request['files']) + 1} file(s) into {phase.folder}")
        elif phase.kind == "sync":
            lines.append(f"# {phase.what}")
            lines += _node_lines(phase.nodes, shlex)
        elif phase.kind == "wait":
            lines.append(f"# then wait up to {phase.timeout:.0f} s {phase.what}")
        elif phase.kind == "sweep":
            lines.append(f"# {phase.what}; the sweep folder would be {phase.folder}")
        elif phase.kind in ("run", "check"):
            lines.append(f"# {phase.what}; the run folder would be {phase.folder}")
            lines += _node_lines(phase.nodes, shlex)
        elif phase.kind == "shell":
            lines += [shlex.join(n.argv) for n in phase.nodes]
        else:
            lines += _node_lines(phase.nodes, shlex)
            for step in phase.steps:  # a stop's steps after the nodes' (a Slurm step, bare hosts' marks)
                lines += [f"# then {step.what}", step.text()]
    return lines


def _node_lines(nodes, shlex) -> List[str]:
    lines = []
    for node in nodes:
        lines += [f"# {node.node} ({node.reached_as})", shlex.join(node.argv)]
    return lines
