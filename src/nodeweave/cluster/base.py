"""A node of a cluster, and what every target backend (local, hosts, kubernetes) offers the verbs.

A :class:`Node` is a rank's place and the remote that reaches it
(``nodeweave.remote``: podman/docker exec, kubectl/oc exec, ssh, ssh+docker);
``node.argv(command)`` is the one way any verb runs something there. Bare
hosts (no container) also carry the variables a container's compose file
would give it, and the directory to run in. A backend knows its nodes, the
steps that bring them up and down, and the platform's own view of each
(container or pod state), in one call for all nodes.
"""

from __future__ import annotations

import abc
import enum
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from nodeweave.cluster.phases import SPARE_ROLE
from nodeweave.cluster.options import ClusterOptions
from nodeweave.steps import Step
from nodeweave.errors import NodeweaveError
from nodeweave.remote.base import Remote
from nodeweave.spec import Spec
from nodeweave.entrypoint.nodelists import noted_ranges
from nodeweave.specpath import spec_folder

ENTRYPOINT = "nodeweave-entrypoint"
CD_THEN_EXEC = ("sh", "-c", 'cd "$1" && shift && exec "$@"', "sh")  # fixed text; the directory is an argument


class NodeState(enum.Enum):
    """A node as its platform sees it, the same words for every backend (a container, a pod, an allocation).

    Why one enum: each backend had its own strings (``exited (1)``, ``Pending: ImagePullBackOff``,
    ``PENDING (allocation 42)``) and its own ``failed_state`` test of them, and the verbs matched
    prefixes (``missing``, ``created``, ``Pending``). The platform's own word stays beside the state,
    for people (:class:`PlatformState`); what a verb decides reads the state only.
    """

    ABSENT = "absent"  # not made (yet): no such container or pod
    CREATED = "created"  # made, never started
    STARTING = "starting"  # on its way (pending, being created): not asked yet
    RUNNING = "running"
    ENDED = "ended"  # its process or its allocation ended: it does not come up by waiting
    STUCK = "stuck"  # the platform will not start it (a crash loop, an image it cannot pull, an allocation not running)
    UNKNOWN = "unknown"  # a word the backend does not sort: the node is asked, as a running one is

    @property
    def failed(self) -> bool:
        """Waiting will not bring it up: ``up`` stops waiting and names it."""
        return self in (NodeState.ENDED, NodeState.STUCK)

    @property
    def down(self) -> bool:
        """Not up: a verb that needs the node refuses, naming it and ``nodeweave up``."""
        return self in (NodeState.ABSENT, NodeState.CREATED, NodeState.ENDED, NodeState.STUCK)

    @property
    def askable(self) -> bool:
        """Worth asking the node's entrypoint how it is."""
        return self in (NodeState.RUNNING, NodeState.UNKNOWN)


@dataclass(frozen=True)
class PlatformState:
    """A node's :class:`NodeState` and the platform's own word for it (``exited (1)``, ``Pending: Unschedulable
    (...)``), which is what ``status`` and ``up``'s table show."""

    state: NodeState
    word: str

    def __str__(self) -> str:
        return self.word




@dataclass(frozen=True)
class Node:
    index: int
    remote: Remote
    env: Tuple[Tuple[str, str], ...] = ()  # bare hosts: the contract's variables and this host's rank
    workdir: Optional[str] = None  # bare hosts: run there
    # Nodes a run starts as one launch (a Slurm step): it gives the run's argv, and what a stop of every node
    # leaves on the platform (``leftover_steps()``).
    group: Optional[object] = field(default=None, compare=False)
    spare: bool = field(default=False, compare=False)  # starts as a spare (recovery): launches nothing until called

    @property
    def name(self) -> str:
        return f"node-{self.index}"

    def argv(self, command: List[str], env: Mapping[str, str] = (), stdin: bool = False) -> List[str]:
        """The local argv that runs ``command`` on this node, with ``env`` added to the node's own. A hidden value
        (``nodeweave.hidden``: ``-e NAME``, a secret's) goes through the exec client's environment where its tool
        takes one from there (``podman exec -e NAME``), else stays a placeholder in ``env NAME=...``, filled in only
        when the client is spawned."""
        from nodeweave.hidden import is_secret

        inner = list(command)
        variables = {**dict(self.env), **dict(env)}
        passed = [k for k, v in variables.items() if is_secret(v)] if self.remote.env_from_client else []
        variables = {k: v for k, v in variables.items() if k not in passed}
        if variables:
            inner = ["env", *(f"{k}={v}" for k, v in variables.items()), *inner]
        if self.workdir:
            inner = [*CD_THEN_EXEC, self.workdir, *inner]
        if passed:
            return self.remote.exec_argv(inner, stdin=stdin, env=passed)
        return self.remote.exec_argv(inner, stdin=stdin)

    def entrypoint_argv(self, args: List[str], env: Mapping[str, str] = ()) -> List[str]:
        return self.argv([ENTRYPOINT, *args], env)

    # What nodeweave.doctor.cluster asks of a target: a node answers as its exec channel
    # would, with the node's own variables and directory (bare hosts) added.
    def exec_argv(self, command: List[str], stdin: bool = False) -> List[str]:
        return self.argv(command, stdin=stdin)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.remote.label})"

    @property
    def tool(self) -> str:
        return self.remote.tool


@dataclass(frozen=True)
class NodeAnswer:
    """A node's answer to ``nodeweave-entrypoint --node status`` (or why it gave none)."""

    node: Node
    data: Optional[dict]  # the JSON, None when the exec failed
    error: str = ""

    @property
    def up(self) -> bool:
        return self.data is not None

    @property
    def holding(self) -> bool:
        return bool(self.data and self.data.get("hold"))


def ask_status(node: Node, command: List[str], timeout: float = 60) -> NodeAnswer:
    """One exec: the node's hold record, runs in progress, plan summary and GPU use."""
    argv = node.entrypoint_argv(["--node", "status", "--", *command])
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return NodeAnswer(node, None, str(err))
    if out.returncode != 0:  # its last line that says something, never a rule (walk15a A12)
        from nodeweave.entrypoint.running.symptoms import last_said

        said = last_said(out.stderr or out.stdout)
        return NodeAnswer(node, None, said[:300] if said else f"exit {out.returncode}")
    try:
        return NodeAnswer(node, json.loads(out.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return NodeAnswer(node, None, f"answered no JSON: {out.stdout.strip()[:200]!r}")


class NothingToSend(Exception):
    """The nodes already see SRC at DEST (a bind mount of it, or Slurm's workspace on shared storage): sync says
    so and exits 0, moving nothing; ``notes``: what a dry run found first (the cluster is not up)."""

    def __init__(self, said: str, notes: "tuple[str, ...]" = ()):
        super().__init__(said)
        self.notes = notes


class Backend(abc.ABC):
    """One target: what a new one implements, and what it declares as plain data.

    Five methods make a target (docs/design.md, "A target"): :meth:`nodes`, :meth:`states`, :meth:`plan_up`,
    :meth:`plan_down` and :meth:`logs`. ``plan_up`` and ``plan_down`` come built here from a target's parts
    (``_up_steps``, ``_down_steps``, and where it writes files or takes nodes, ``_up_files``, ``_down_files``,
    ``_allocation_step``); a target whose verbs are not steps plans them itself. The data a target declares:
    ``target``, ``tool`` (the program that reaches its nodes), ``where`` (one line, for messages), ``holds`` and
    ``unheld``, ``fixed_image`` (what ``up``'s --hold/--run and --image do here: ``onbackend.refuse_idle_up_flags``),
    ``marked_kind``, ``reach_variables``/``reach_prefixes`` and ``recorded`` (what ``up`` records beside the job).
    Reads a platform can answer and most cannot (``marks``, ``nothing_up_line``, ``reach_problem``,
    ``check_folders``, ``check_tools``, ``sync_targets``) have defaults that ask nothing. What only combines these
    (``require_up``, ``live_nodes``, ``down_line``, ``refuse_foreign``, ...) is not a target's:
    ``nodeweave.cluster.onbackend`` does it for every target.
    """

    target = ""
    tool = ""  # the local program every verb of this target runs (engine, kubectl/oc, ssh, srun)
    target_note = ""  # the spec's target section this default target does not read (options.default_target_note)
    holds = True  # up starts the nodes holding or running the spec's job (--hold/--run); see ``unheld``
    # Why up starts nothing in a mode here (--hold and --run would do nothing): "" where ``holds``.
    unheld = ""
    # Why ``up --image`` would do nothing here (the image comes from elsewhere); "": --image picks the nodes' image.
    fixed_image = ""
    marked_kind = "container"  # what marks() reads, for the refusal's line
    # The command that removes objects with no mark by hand ({names}: theirs), where such an object is not this
    # folder's (identity.foreign_owner); "": an object with no mark is acted on as before.
    unmarked_removal = ""
    # Variables of the caller's environment that the target's own tools read (which engine, cluster or
    # allocation the steps reach): a plan names each one set, since it changes what the plan does.
    reach_variables: Tuple[str, ...] = ()
    reach_prefixes: Tuple[str, ...] = ()
    renamed: Tuple[str, ...] = ()  # lines naming what up made under the spec's old name (recorded.renamed_line)
    # Why ``nodes()`` found none though the job is there, up to the verb ("is scaled to zero: ..., so no pod"), and
    # the command that brings them back: (what, how); None: no node means the job is not up.
    dormant: Optional[Tuple[str, str]] = None
    # Set by ``states()`` when the platform gave no answer (a timeout, an unreadable reply): the verb goes on as
    # planned, and a dry run says its verdict on whether the nodes are up could not be found (walk6 W5: at 2112
    # containers the engine's inspect ran past its limit and the "would end with exit 3" line was silently lost).
    unanswered: Optional[str] = None
    # Set by ``nodes(dry_run=True)`` where the dry run shows placeholder nodes in place of the refusal the real
    # ``nodes()`` raises (a Slurm job with no allocation recorded, or one gone or not running): the dry run's note is
    # that refusal, word for word (walk13a A7: the note called never-started placeholders "gone" in a line that was
    # not the real verb's).
    nodes_refused: Optional[Exception] = None
    # Whether ``up`` recreates every node container that is up (compose's ``up --force-recreate``), so what sync
    # and exec put on them is lost (walk12c C7): ``up`` then names them, and ``knows_unchanged`` says whether this
    # target can tell nodes already up as ``up`` would start them (``up_unchanged``), which it then leaves running.
    recreates_nodes = False
    knows_unchanged = False

    def __init__(self, spec: Spec, spec_path: Path, options: ClusterOptions):
        from nodeweave.cluster.identity import JobMark

        self.spec, self.spec_path, self.options = spec, spec_path, options
        self.spec_dir = spec_folder(spec_path)
        self.mark = JobMark.of(self.spec_dir, spec.name)  # what up puts on everything it makes (identity.py)
        self.recorded: Dict[str, str] = {}  # what up records beside the job's own (a compose project, a namespace)

    @property
    def where(self) -> str:
        """One line saying where the cluster is, for messages."""
        return self.target

    @property
    def runs_image(self) -> bool:
        """Whether the nodes run the job's image: bare hosts and Slurm's host runtime do not, so no note about
        pulling one is theirs (walk5, W60)."""
        return True

    @property
    def image_variant(self) -> str:
        """The image variant the nodes run, which what a run adds (a profiler) is judged against: the spec's."""
        return self.spec.image.variant

    @property
    def workspace_seen_at(self) -> str:
        """Where the nodes find the workspace: the container's mount; a bare host's or a host step's own folder."""
        return self.spec.workspace.path

    def _node(self, index: int, remote: Remote, **details) -> Node:
        """Node ``index`` of this job, reached through ``remote``: the one way a target makes one, so each knows
        whether it starts as a spare (recovery), which every plan listing nodes says (walk6, W2)."""
        return Node(index, remote, spare=self.spec.is_spare(index), **details)

    # --- the five a target implements ----------------------------------------------------------------------
    @abc.abstractmethod
    def nodes(self, for_up: bool = False, dry_run: bool = False) -> List[Node]:
        """The job's nodes: those ``up`` brings (``for_up``: placeholders where the platform picks them), those a
        dry run shows (``dry_run``: asking nothing that changes the cluster), else those that are there now."""

    @abc.abstractmethod
    def states(self, nodes: List[Node]) -> Dict[int, PlatformState]:
        """The platform's view of each node (container, pod or allocation); empty where it has none (bare hosts,
        or a platform that did not answer)."""

    def plan_up(self, mode: str, image: Optional[str], timeout: float, wait: bool,
                check: Optional[Callable[[List[Node]], "Phase"]] = None) -> "Plan":
        """``up``: write the job's files, take the nodes (a Slurm allocation), run this target's up steps, wait for
        every node, then (``--check``: the phase ``check`` makes for the nodes) check them. Planning takes nothing;
        ``nodeweave.cluster.execute`` runs the plan, a dry run prints it."""
        from nodeweave.cluster.phases import node_commands, step_phases
        from nodeweave.plan import AllocatePhase, FilesPhase, Plan, WaitPhase

        files = self._refused_in_the_way(self._up_files(mode))
        notes = tuple(self._up_notes(image))  # the image, and what this environment changes in the steps
        notes += tuple(self.check_folders())  # exit 3 first for a checkpoint folder the nodes cannot write
        notes += tuple(self.renamed)  # what up made under the spec's old name stays up beside the new job
        if self.spec.start_differs:  # a range or recovery: the count is not simply `nodes`
            notes += (f"{self.spec.name} {self.spec.starts}",)
        notes += tuple(f"note: {note}" for note in self.spec.notes)  # what validate says is likely not meant
        phases = [FilesPhase("the job's files", files=tuple(files))] if files else []
        allocation = self._allocation_step()  # Slurm: later phases name its job and nodes <job-id>, <node0>, ...
        if allocation is not None:
            phases.append(AllocatePhase(allocation.what, steps=(allocation,), take=self._allocate))
        phases += step_phases(self._up_steps(mode, image))
        if wait or check is not None:
            nodes = self.nodes(for_up=True)
        if wait:
            waited = mode if self.holds else "run"  # bare hosts: nothing to hold; up means every host answers
            what = self._awaited(len(nodes), waited) + ": " + noted_ranges(
                (n.remote.label, SPARE_ROLE if n.spare else "") for n in nodes)
            phases.append(WaitPhase(what, nodes=node_commands(nodes, [()] * len(nodes)), timeout=timeout, mode=waited))
        if check is not None:
            phases.append(check(nodes))
        return Plan("up", self.where, tuple(phases), notes, image=self._up_image(image))

    def plan_down(self, delete_claims: bool, renamed: Sequence[Tuple["Backend", str]] = (),
                  idle: Optional[str] = None) -> "Plan":
        """``down``: what ``up`` made, taken down. ``renamed``: jobs this spec's ``up`` made under a name it no longer
        has (their backend, why), taken down first. ``idle``: why nothing of this name is up (``nothing_up_line``):
        then only the old names are taken down, and nothing is written for this one (walk15 A16)."""
        from nodeweave.cluster.phases import step_phases
        from nodeweave.plan import FilesPhase, Plan

        earlier: list = []
        notes: Tuple[str, ...] = ()
        for old, why in renamed:
            old_files = old._refused_in_the_way(old._down_files(delete_claims))
            notes += (why,)
            earlier += [FilesPhase(f"job {old.spec.name}'s files", files=tuple(old_files))] if old_files else []
            earlier += step_phases(old._down_steps(delete_claims)) + old._removals_phase()
        if idle is not None:  # nothing to take down: the token a removed node left is taken back still
            return Plan("down", self.where, tuple(earlier + self._removals_phase()), (*notes, idle))
        files = self._refused_in_the_way(self._down_files(delete_claims))
        planned = [FilesPhase("the job's files", files=tuple(files))] if files else []
        return Plan("down", self.where, tuple(earlier + planned + step_phases(self._down_steps(delete_claims))
                                              + self._removals_phase()), notes)

    def _removals_phase(self) -> list:
        """``down``'s last phase: what ``up`` wrote here for the job and nothing needs once its nodes are gone."""
        from nodeweave.plan import RemoveFilesPhase

        files = self._refused_in_the_way(self._down_removals())
        return [RemoveFilesPhase("the job's files up wrote", files=tuple(files))] if files else []

    def logs(self, node: Node, follow: bool, window: Tuple[str, ...] = ()) -> List[str]:
        """The argv that prints ``node``'s own log (its container's, its pod's); exit 2 where it has none."""
        return node.remote.logs_argv(follow, window)

    # --- the parts plan_up and plan_down are built from (nothing else calls them) ------------------------------
    def _up_image(self, image: Optional[str]) -> Optional[str]:
        """The image every node runs after ``up`` (``--image``, a pinned digest, the spec's), as the plan carries it
        (``Plan.image``); None where the nodes run no image."""
        return None

    def _up_notes(self, image: Optional[str]) -> List[str]:
        """What ``up``'s plan says first: the image every node runs and where it comes from, and every variable
        of this environment that changes what the steps do (nodeweave.cluster.environment)."""
        import os

        from nodeweave.cluster.environment import inherited_notes

        unread = [f"{name}={os.environ[name]} from this environment is not read by `up --target {self.target}`: "
                  f"{instead}" for name, instead in self._unread_variables().items() if os.environ.get(name)]
        return [*inherited_notes(self.reach_variables, self.reach_prefixes), *unread]

    def _awaited(self, count: int, mode: str) -> str:
        """What ``up``'s wait waits for, as its plan says it ("until 3 node(s) hold"). A target whose ``up`` starts
        nothing in a mode (``holds`` False: Slurm's allocation, bare hosts) says what it waits for instead, never
        "run", which read as if training had started (walk7 A20)."""
        if not self.holds:
            return (f"until each of the {count} node(s) answers (nothing starts until `nodeweave run` or "
                    "`nodeweave check`)")
        return f"until {count} node(s) {'hold' if mode == 'hold' else 'run'}"

    def _unread_variables(self) -> Dict[str, str]:
        """{variable a rendered file of this target reads when started by hand: what ``up`` uses instead}; one set
        in this environment is named in the plan, so a user who set it does not believe it acted."""
        return {}

    def _allocation_step(self) -> Optional[Step]:
        """The step that takes the nodes before ``up``'s other steps (a Slurm allocation); None: nothing to take."""
        return None

    def _allocate(self, phase) -> Dict[str, str]:
        """Run the plan's ``allocate`` phase (the phase carries it: ``AllocatePhase.take``); the values of the
        placeholders the later phases carry."""
        raise NotImplementedError(f"the {self.target} target plans no allocation")

    def _refused_in_the_way(self, files: list) -> list:
        """``files``, once none of them has a link, a folder or a device in its place (exit 2 otherwise): planned
        so, the dry run refuses what the real write would."""
        from nodeweave.jobstate import refuse_in_the_way

        for planned in files:
            refuse_in_the_way(self.spec_dir, self.spec_dir / planned.path)
        return files

    def _up_files(self, mode: str) -> list:
        """The files ``up`` writes on this machine, as a plan's ``PlannedFile``\\ s: the one way a backend writes
        a file here (the executor writes them; a dry run prints them)."""
        return []

    def _down_files(self, delete_claims: bool) -> list:
        """The files ``down`` needs written first (a compose file that is gone), as ``_up_files``."""
        return []

    def _down_removals(self) -> list:
        """The files ``up`` wrote here that ``down`` takes back once the nodes are gone (``PlannedFile``\\ s, those
        still there): the job's token. What ``up`` remembers (``cluster.json``: the target, for the next verb), the
        compose file ``down`` itself reads and the run folders stay."""
        return []

    def _up_steps(self, mode: str, image: Optional[str]) -> List[List[Step]]:
        """Phases of steps: the steps of a phase run at once, phases one after another."""
        raise NotImplementedError(f"the {self.target} target plans its own up")

    def _down_steps(self, delete_claims: bool) -> List[List[Step]]:
        raise NotImplementedError(f"the {self.target} target plans its own down")

    # --- reads a target may answer (the defaults ask nothing) ------------------------------------------------
    def marks(self) -> Dict[str, object]:
        """The mark each object of this job carries on the platform (name: FoundMark, None for no mark), read
        without changing anything; empty where the platform cannot be asked."""
        return {}

    def grow_hint(self, count: int) -> str:
        """How this target's cluster gets ``count`` nodes, for a refusal of more than it has (walk5, W44)."""
        return (f"raise nodes in the spec to {count} and `nodeweave down` then `nodeweave up` (this target starts "
                "the spec's count)")

    def recorded_nothing(self) -> bool:
        """Whether this folder's record alone says the job is not up (a Slurm job with no allocation recorded):
        a verb other than ``up`` then answers "not up" before judging the tools a step would use (walk5, W55)."""
        return False

    def made_nodes(self, dry_run: bool = False) -> List[Node]:
        """The nodes ``up`` made, where that is known here and the spec now asks for fewer (``made_count``): the
        verbs reach every one of them (walk18a A13: node-1 was left out silently); else the spec's."""
        return self.nodes(dry_run=dry_run)

    def made_count(self) -> Optional[int]:
        """How many node containers the cluster up here was made with (what ``up`` rendered and started), where the
        target keeps that beside the spec; None: not known here (the platform's own count is the nodes')."""
        return None

    def made_stale(self) -> Optional[bool]:
        """Whether what the nodes were made from (the compose file ``up`` started them from) is no longer what the spec
        renders: True, the nodes do not see a change of the spec; None: not known here (nothing kept beside it)."""
        return None

    def metrics_url(self) -> Optional[str]:
        """Where this machine reaches node 0's ``/metrics`` as the platform published it (the local target's
        engine-picked port), which ``up`` and ``status`` print (walk12c C12); None where nothing is published
        here (a pod's port is reached by port-forward or a PodMonitor) or it cannot be asked."""
        return None

    def up_unchanged(self, nodes: List[Node], mode: str, image: Optional[str]) -> bool:
        """Whether every one of ``nodes`` (those up now) runs as this ``up`` would start it: the same compose file,
        mode and image (``knows_unchanged``); False where the platform cannot say."""
        return False

    def nothing_up_line(self) -> Optional[str]:
        """One line when the platform says none of the job's nodes exists, so ``down`` has nothing to take down (it
        says so and writes nothing, a dry run too); None: something is there, or the platform could not say."""
        return None

    def judge_tree(self) -> None:
        """Exit 2 for files of the user's that ``up`` and ``down`` apply and this target cannot build (an overlay of
        your own kustomize refuses), before the tools or the platform are asked: a mistake is exit 2 whatever the
        machine has, dry run or not. The default has nothing to build."""

    def reach_problem(self) -> Optional[str]:
        """Why the platform cannot be asked at all: every real verb ends with exit 3 on it before doing anything,
        and its dry run notes it, as a missing tool (``clusteropts.first_refusal``); None: it answered, or this
        target has no one to ask."""
        return None

    def image_problem(self, image: Optional[str]) -> Optional[str]:
        """Why the nodes ``up`` starts could not get the image they run (``--image``, else the spec's) from where
        it is, when that is sure before starting anything: the real ``up`` ends with exit 3 on it, its dry run
        says so. None: nothing known against it (a remote target's ``localhost/`` image is a warning instead)."""
        return None

    def check_folders(self) -> List[str]:
        """Before ``up`` or ``check`` starts anything: exit 3 when the nodes' user cannot write the checkpoint
        folder; notes for what it cannot write but may not need (nodeweave.cluster.writable). Where the folders
        are not on this machine, a note saying so (nothing is checked), for every target that does not check."""
        from nodeweave.cluster.writable import unchecked_note

        return unchecked_note(self.spec, self.target, "the folder is on the nodes, not on this machine")

    def check_tools(self) -> None:
        """Exit 3 naming the program when this machine lacks it, before anything is announced or written."""
        from nodeweave.failures import need_tool

        need_tool(self.tool, f"the {self.target} target reaches its nodes with it")

    def sync_targets(self) -> Optional[Tuple[List[Remote], str]]:
        """Where ``nodeweave sync`` sends the workspace on this target (remotes, folder); None: sync's own default."""
        return None

    def host_mounts(self) -> List[Tuple[Path, str]]:
        """(folder on this machine, path in every node) of each folder the nodes bind-mount from this machine: a
        sync into one would write this machine's folder through the nodes (W36). None on a target of other hosts."""
        return []


# What a verb finds nothing of when no node is up, as a person says it (not "nothing to logs").
NOTHING = {"logs": "no logs to show", "read logs of": "no logs to show", "shell": "no shell to open",
           "open a shell in": "no shell to open", "exec": "nowhere to run the command", "run": "nowhere to run",
           "check": "nothing to check", "stop": "nothing to stop", "sync": "nowhere to sync to",
           "watch": "no job to watch", "ask": "no node to ask for its fingerprint"}
# Verbs that go into held nodes (a run, a check) or prepare a run in them (the README's loop: up --hold, sync, run):
# their hint starts the nodes holding, never a run-mode `up` whose nodes start the script before the code is synced
# (walk5 W46). The verb as its hint's command names it.
HELD_VERBS = {"run": "run", "check": "check", "sync": "sync", "exec": "exec", "shell": "shell",
              "open a shell in": "shell", "status": "status"}
# sync where the nodes bind-mount SRC at DEST (the local target): nothing is ever sent, so `run` follows `up` (W27).
MOUNTED_SYNC = "sync the folder the nodes mount"
NOTHING[MOUNTED_SYNC] = "no node mounts it yet"
HELD_VERBS[MOUNTED_SYNC] = "run"
THEN = {"sync": ", then `nodeweave run`",  # the README's loop
        MOUNTED_SYNC: ": the nodes see this folder directly, with no sync"}


def nothing_to(verb: str) -> str:
    return NOTHING.get(verb, f"nothing to {verb}")


def start_hint(verb: str, spec=None, holds: bool = True) -> str:
    """The command that brings the nodes ``verb`` needs, the same on every verb; ``spec``: the job's, whose
    ``launcher.mode: hold`` makes a plain ``nodeweave up`` hold already; ``holds``: the target's (``Backend.holds``):
    where ``up`` starts nothing in a mode (bare hosts, a Slurm allocation) it refuses --hold, so the hint is a plain
    ``nodeweave up`` (left12a, beside walk11a A17)."""
    if verb in HELD_VERBS and not holds:
        return f"`nodeweave up` starts it, then `nodeweave {HELD_VERBS[verb]}`{THEN.get(verb, '')}"
    if verb in HELD_VERBS:
        holds = spec is not None and spec.launcher.mode == "hold"
        up = "`nodeweave up` (launcher.mode: hold)" if holds else "`nodeweave up --hold`"
        return f"{up} starts it, then `nodeweave {HELD_VERBS[verb]}`{THEN.get(verb, '')}"
    return "`nodeweave up` starts it"
