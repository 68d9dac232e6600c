"""A verb's plan: what it would do, in order, as one object that ``--dry-run`` prints and the real run executes.

Why one object: a dry run assembled beside the real run drifts from it (a wait, a check, a file
written, a sweep point left out of the printout). Why a room of its own, below the CLI and below
``cluster/`` and ``build/``: it is the one plan type of every verb that acts (the cluster verbs'
plans in ``nodeweave.cluster.verbs`` and ``runplan``, the check's in ``nodeweave.check.plan``, the
sync's in ``nodeweave.sync.syncplan``, the image build's in ``nodeweave.build.plan``, the render's in
``nodeweave.rendering.plan``), so each is assembled next to what it plans, none in ``cli/``. ``--dry-run``
prints a plan (``plan_lines``, or ``to_dict()`` as ``-o json|yaml``) and ``nodeweave.cluster.execute`` walks
the very same object.

A plan is an ordered tuple of phases, one frozen dataclass per kind (``nodeweave.plan.phases``), each with
its own fields, its own dry-run lines and its own ``run``:

- ``files`` (:class:`FilesPhase`): files written here (path as the user sees it, size and SHA-256 where known; a
  secret's content is made when the phase runs, so only its path is planned);
- ``remove`` (:class:`RemoveFilesPhase`): files an earlier verb wrote here for the job, taken back (``down``: the job's
  token), each only where it is still a plain file;
- ``render`` (:class:`RenderFilesPhase`): ``nodeweave render``'s files, each with what writing does to it (new,
  changed, unchanged, refused, obsolete, kept; size and SHA-256), written all or none with the record ``--prune`` reads;
- ``commands`` (:class:`CommandsPhase`): local steps (``nodeweave.steps.Step``) that run at once, the phase after the last;
- ``wait`` (:class:`WaitPhase`): wait until the nodes are up (what for, the timeout);
- ``sweep`` (:class:`SweepPhase`): the folder a sweep's runs go into, and the metric its table compares;
- ``run`` / ``check`` (:class:`RunPhase`, :class:`CheckPhase`): a run through every node's entrypoint into a run folder (the folder is a
  pattern: its UTC time is known when it starts; the placeholder :data:`RUN_ID` stands for the id in every argv);
- ``stop`` / ``exec`` / ``shell`` (:class:`StopPhase`, :class:`ExecPhase`, :class:`ShellPhase`): one argv per node (a shell: one node), run there;
- ``allocate`` (:class:`AllocatePhase`): the step that takes a Slurm allocation; its job id and nodes are Slurm's to pick, so the
  later phases hold the placeholders :data:`JOB_ID` and ``node_placeholder(0)``, ... where they go, and the executor
  fills them in (:meth:`Phase.bound`) once the allocation is taken;
- ``sync`` (:class:`SyncPhase`): one agent exec per target (``nodeweave.sync.syncplan``), what each moves decided by its answer;
- ``build`` (:class:`BuildPhase`): ``image build``'s steps, one after another, the build's log streamed (``BuildPlan.steps``);
- ``stage`` (:class:`StagePhase`): a folder filled with files of the context (``image build -t openshift``'s upload; the list).

A placeholder (``nodeweave.plan.placeholders``) is no word a user types: its name between two unit
separators, so a user's ``-- train.py --tag RUN_ID`` reaches the node as typed. It is never printed
raw: a dry run shows it as ``<run-id>``, ``<job-id>``, ``<node0>``; only :meth:`Phase.bound` fills it.

Nothing here touches a node or a file.
"""


from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from nodeweave.plan.phases import (KINDS, PHASES, AllocatePhase, Builds, BuildPhase, CheckPhase, ChecksNodes,
                                   CommandsPhase, ExecPhase, FilesPhase, LaunchPhase, NodeCommand, Phase, PlannedFile,
                                   RemoveFilesPhase, RenderedFile, RenderFilesPhase, RunPhase, RunsPoints, ShellPhase, StagePhase,
                                   StopPhase, SweepPhase, SyncPhase, Syncs, WaitPhase)
from nodeweave.plan.placeholders import (JOB_ID, MARK, RUN_ID, SCRATCH, command_text, filled, node_placeholder, placeholder,
                                         shown, shown_data, step_dict, step_text)

__all__ = ["KINDS", "PHASES", "AllocatePhase", "Builds", "BuildPhase", "CheckPhase", "ChecksNodes", "CommandsPhase",
           "ExecPhase", "FilesPhase", "LaunchPhase", "NodeCommand", "Phase", "PlannedFile", "RemoveFilesPhase", "RenderedFile",
           "RenderFilesPhase", "RunPhase", "RunsPoints", "ShellPhase", "StagePhase", "StopPhase", "SweepPhase",
           "SyncPhase", "Syncs", "WaitPhase", "JOB_ID", "MARK", "RUN_ID", "SCRATCH", "command_text", "filled", "node_placeholder", "placeholder", "shown", "shown_data", "step_dict",
           "step_text", "Plan", "plan_lines", "Foretold", "foretold"]


@dataclass(frozen=True)
class Plan:
    """What one verb does, in order; ``notes`` are the lines it prints first (what it found, what it decided).
    ``image``: the image every node runs once ``up``'s plan ran (a datum, read as such: a note says it for people);
    None where the nodes run none (bare hosts, Slurm's shared venv) or the verb starts no node."""

    verb: str
    where: str
    phases: Tuple[Phase, ...] = ()
    notes: Tuple[str, ...] = ()
    image: Optional[str] = None

    def to_dict(self) -> dict:
        """The plan as data, as ``-o json`` prints it: each placeholder as ``<name>``; ``image`` where one is run."""
        return shown_data({"verb": self.verb, "where": self.where, "notes": list(self.notes),
                           **({"image": self.image} if self.image is not None else {}),
                           "phases": [p.to_dict() for p in self.phases]})

    def of_kind(self, kind: type) -> List[Phase]:
        """The phases of one kind (its class)."""
        return [p for p in self.phases if isinstance(p, kind)]


class Foretold(str):
    """A dry run's note of a refusal certain from what the dry run read (the spec, this machine's files and image
    store, a node the engine or node 0 answered for): the dry run shows its plan, then ends with the real verb's
    exit code, so a script's ``VERB --dry-run && VERB`` gate stops where the real verb would (walk17a A8-A10;
    walk18a A7, A17: a --node the engine does not know, a program node 0's image lacks). What only nodes that are up would tell, and nothing is up (or the tool missing, the cluster not
    reached), stays a plain note, exit 0 (``clusteropts.would_fail``)."""

    exit_code = 1


def foretold(verb: str, code: int, line: str) -> Foretold:
    """``the real VERB would end with exit CODE: LINE``, ending its dry run with ``code``."""
    note = Foretold(f"the real {verb} would end with exit {code}: {line}")
    note.exit_code = code
    return note


def plan_lines(plan: Plan) -> List[str]:
    """The plan as a person reads it: ``#`` lines say what, the other lines are commands one could paste (a
    placeholder: ``<name>``)."""
    lines = [f"# {note}" for note in plan.notes]
    for phase in plan.phases:
        lines += phase.lines()
    return [shown(line) for line in lines]
