"""Slurm as a cluster: ``up`` takes an allocation, ``run`` is one ``srun`` step over its nodes, ``down`` frees it.

``up`` runs ``salloc --no-shell`` with the options ``render slurm`` writes as
``#SBATCH`` lines, and records the job id in ``.nodeweave/cluster.json``: the
allocation holds the nodes the way ``--hold`` holds containers. A job is one
step, ``srun --ntasks-per-node=1 nodeweave-entrypoint --mode run ...``, so each
node's entrypoint takes its rank, the node count and the master from Slurm
(``SLURM_NODEID``, the step's node list) exactly as in the batch script.
Everything else (status, stop, the run's report, a shell) is a one-task step
on one node with ``--overlap`` (``srun:JOB/NODE``), given the run step's view
of the allocation (its node list, this node's id) so the plan it shows is the
one the run makes. ``slurm.runtime`` says where every step runs: the nodes'
shared venv (``host``), the job's image through pyxis (``srun
--container-image``) or through ``apptainer exec`` (``runtime.py``). ``up``
also writes a random job token on every node (``cluster/token.py``), through
a plain step on the node (the folder the image mounts), which the steps name
by its path only. Slurm's accounting (``sacct``) is never asked: the
allocation's state is ``squeue``'s, a run's codes and logs are the step's own
output, in the run folder.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Optional

from nodeweave.cluster.base import Backend, Node, NodeState, PlatformState
from nodeweave.cluster.options import save_state
from nodeweave.cluster.backends.slurm.runtime import step_runtime
from nodeweave.cluster.backends.slurm.step import SlurmStep
from nodeweave.steps import Step, need_tool
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError
from nodeweave.remote.srun import Srun

GRANTED = re.compile(r"Granted job allocation (\d+)")
LIVE = ("RUNNING", "CONFIGURING", "COMPLETING")
WAITING = ("PENDING", "REQUEUED", "RESIZING", "SUSPENDED")


def job_record(job: str, timeout: float = 30) -> Optional[dict]:
    """``squeue --json``'s record of one job; None when Slurm no longer knows it."""
    need_tool("squeue", "it reads the allocation's state")
    out = subprocess.run(["squeue", "--json", "-j", job], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        if "Invalid job id" in out.stderr:
            return None
        raise NodeweaveError(f"squeue --json -j {job} failed (exit {out.returncode}): {out.stderr.strip()[:300]}")
    jobs = [j for j in json.loads(out.stdout).get("jobs", []) if str(j.get("job_id")) == job]
    return jobs[0] if jobs else None


COMMENT_MARK = "nodeweave-job"  # salloc --comment="nodeweave-job OWNER JOB FOLDER"


class SlurmCluster(Backend):
    target = "slurm"
    tool = "srun"
    holds = False  # the allocation holds the nodes; the entrypoint runs only inside a run's step
    unheld = ("a Slurm allocation holds its nodes whatever they say (each run, the spec's too, is one srun step "
              "of it)")
    fixed_image = ("the nodes run the spec's image (pyxis, apptainer: image.* or slurm.sif) or the shared venv "
                   "(slurm.runtime host)")
    reach_variables = ("SLURM_CONF",)

    def _awaited(self, count: int, mode: str) -> str:
        """Slurm: up allocates, it starts nothing; the wait is for the allocation and a step on each node."""
        return (f"until the allocation is granted and each of its {count} node(s) answers an srun step (nothing "
                "starts until `nodeweave run` or `nodeweave check`)")
    reach_prefixes = ("SALLOC_", "SRUN_")  # salloc and srun read their options from these too
    marked_kind = "Slurm allocation"

    def __init__(self, spec, spec_path, options):
        super().__init__(spec, spec_path, options)
        from nodeweave.resolve import resolve

        self.job = options.slurm_job
        self.workdir = options.remote_dir or self._shared_workspace()  # the workspace on the nodes themselves
        self.runtime = step_runtime(resolve(spec), self.spec_dir, self.workdir)
        self._record: Optional[dict] = None

    @property
    def runs_image(self) -> bool:
        return self.runtime.kind != "host"

    @property
    def workspace_seen_at(self) -> str:
        return self.workdir if self.runtime.kind == "host" else self.spec.workspace.path

    def _shared_workspace(self) -> str:
        """The workspace as the nodes see it: storage they share with this machine (as sbatch's submit dir)."""
        from nodeweave.specpath import host_folder

        host_path = self.spec.workspace.host_path
        if host_path.startswith("/"):
            return host_path
        return str(host_folder(host_path, self.spec_dir).resolve())

    # --- the allocation ------------------------------------------------------------------------------
    def _allocation_argv(self) -> List[str]:
        from nodeweave.resolve import resolve
        from nodeweave.targets.slurm.script import allocation_options

        return ["salloc", "--no-shell", *allocation_options(resolve(self.spec)), f"--comment={self._comment()}"]

    def _comment(self) -> str:
        """The allocation's mark (identity.py): Slurm keeps it with the job, ``squeue --json`` gives it back."""
        return f"{COMMENT_MARK} {self.mark.owner} {self.mark.job} {self.mark.folder}"

    def marks(self):
        """The recorded allocation's mark, from its comment (a folder copied with its .nodeweave/ names the
        other folder's allocation); nothing without one, or where Slurm cannot be asked."""
        from nodeweave.cluster.identity import FoundMark

        try:
            live = self._live()
        except NodeweaveError:
            return {}
        words = str((live or {}).get("comment") or "").split(" ", 3)
        if len(words) < 4 or words[0] != COMMENT_MARK:
            return {}
        return {f"job {self.job}": FoundMark(words[1], words[3], words[2])}

    def _live(self, fresh: bool = False) -> Optional[dict]:
        """squeue's record of the allocation (asked once, unless ``fresh``); None: none recorded, or gone."""
        if self.job is None:
            return None
        if fresh or self._record is None:
            self._record = job_record(self.job)
        return self._record

    def check_tools(self) -> None:
        """Exit 3 before anything starts when pyxis is asked for and this srun has no pyxis options."""
        super().check_tools()
        if self.runtime.kind == "pyxis":
            helped = subprocess.run(["srun", "--help"], capture_output=True, text=True, timeout=60)
            if "--container-image" not in helped.stdout:
                raise EnvironmentProblem("slurm.runtime pyxis: this machine's srun has no pyxis (`srun --help` "
                                         "lists no --container-image): install pyxis on the cluster, or set "
                                         "slurm.runtime to apptainer or host")

    def check_folders(self) -> List[str]:
        """The workspace is the nodes' own through shared storage (no --remote-dir), where every step runs as you
        (pyxis, Apptainer and the host runtime keep your uid): checked here as you; a node-local --remote-dir
        is not on this machine, and the plan says it is not checked."""
        from nodeweave.cluster.writable import check_folders_as_you, unchecked_note

        if self.options.remote_dir:
            return unchecked_note(self.spec, self.target, f"--remote-dir {self.workdir} is on each node")
        return check_folders_as_you(self.spec, Path(self.workdir), "every Slurm step runs as you")

    def _needs_allocation(self) -> bool:
        """Whether ``up`` takes a new allocation: none is recorded, or Slurm no longer holds the recorded one."""
        live = self._live()
        return live is None or live.get("job_state") not in LIVE + WAITING

    def _unread_variables(self) -> Dict[str, str]:
        # NODEWEAVE_RUNTIME, which only the sbatch script reads, is named at start-up (cli.habits.variables.BY_HAND)
        return {"NODEWEAVE_IMAGE": "slurm/job.sbatch reads it; up runs the spec's image (image.* or slurm.sif)"}

    def _up_notes(self, image: Optional[str]) -> List[str]:
        """What ``up`` says first, and the recorded allocation when Slurm still holds it (asked with ``squeue``
        only; taking an allocation is the plan's ``allocate`` step)."""
        notes = [self._image_line(), *self._workspace_lines(), *super()._up_notes(image)]
        if self._needs_allocation():
            return notes
        live = self._live()
        return [*notes, f"allocation {self.job} is already up ({live.get('job_state')} on {live.get('nodes') or '-'})"]

    def _up_image(self, image: Optional[str]) -> Optional[str]:
        """The spec's image (or slurm.sif, apptainer's file); None with the shared venv (slurm.runtime host)."""
        if self.runtime.kind == "host":
            return None
        from nodeweave.resolve import resolve

        if self.runtime.kind == "apptainer" and self.spec.slurm and self.spec.slurm.sif:
            return self.runtime.image
        return resolve(self.spec).image

    def _workspace_lines(self) -> List[str]:
        """Where the steps run, when it is this machine's folder of the spec (walk5, W41): the compute nodes must
        see it at the same path; one under /tmp (or another folder each machine has to itself) they never do."""
        from nodeweave.cluster.options import cleared_folder_warning, machine_own

        if self.options.remote_dir:  # each node's own folder, filled by sync: it must last (issue 43 A54)
            kept = "the code `nodeweave sync` sends to each node and the job token"
            return [line for line in [cleared_folder_warning(self.workdir, "--remote-dir", self.spec.name, kept)]
                    if line]
        line = (f"the steps run in {self.workdir} on every node (workspace.host_path, this machine's folder): it must "
                "be on storage the compute nodes share with this machine at that path, or give --remote-dir DIR")
        local = machine_own(self.workdir)
        if local:
            return [f"warning: {line}; {local} is each machine's own, so the nodes would not find it there"]
        return [line]

    def _image_line(self) -> str:
        """The image every step runs, named in the plan as the other targets name theirs."""
        if self.runtime.kind == "host":
            return "every node runs the entrypoint of the shared environment (slurm.runtime host): no image"
        if self.runtime.kind == "apptainer" and self.spec.slurm and self.spec.slurm.sif:
            return f"every node runs image {self._up_image(None)} through apptainer: slurm.sif"
        return (f"every node runs image {self._up_image(None)} through {self.runtime.kind} "
                f"({self.runtime.image}): the spec's image.* (`nodeweave image build --push` puts it where the "
                "nodes pull it)")

    def _allocation_step(self) -> Optional[Step]:
        if not self._needs_allocation():
            return None
        return Step(f"take an allocation of {self._allocated_count()} node(s) and record its job id",
                    tuple(self._allocation_argv()), timeout=3600)

    def _allocate(self, phase) -> Dict[str, str]:
        """The plan's ``allocate`` step: salloc, its job id recorded in .nodeweave/<job>/cluster.json; the
        values of the placeholders ``<job-id>`` and ``<node0>``, ``<node1>``, ... (the nodes Slurm granted, in its
        order)."""
        from nodeweave.plan import JOB_ID, node_placeholder

        (step,) = phase.steps
        self._mount_sources()
        need_tool(step.argv[0], "it takes the allocation")
        out = subprocess.run(list(step.argv), capture_output=True, text=True, timeout=step.timeout,
                             stdin=subprocess.DEVNULL)
        granted = GRANTED.search(out.stderr + out.stdout)
        if out.returncode != 0 or not granted:
            tail = " | ".join((out.stderr or out.stdout).strip().splitlines()[-3:])
            raise NodeweaveError(f"salloc took no allocation (exit {out.returncode}): {tail or 'no output'}")
        self.job, self._record = granted.group(1), None
        save_state(self.spec_path, self.spec.name, replace(self.options, slurm_job=self.job))
        hosts = self._granted_hosts()
        return {JOB_ID: self.job, **{node_placeholder(i): host for i, host in enumerate(hosts)}}

    def _granted_hosts(self) -> List[str]:
        """The new allocation's nodes, once Slurm has started it (salloc returns when it is granted)."""
        hosts = self._hosts()
        if len(hosts) != self._allocated_count():
            raise NodeweaveError(f"allocation {self.job} holds {len(hosts)} node(s), the plan "
                                 f"{self._allocated_count()}: `scancel {self.job}`, then `nodeweave up` again")
        return hosts

    def _allocated_count(self) -> int:
        return self.spec.nodes.min + self.spec.recovery.spare_nodes  # the allocation holds the spares too

    def _mount_sources(self) -> None:
        """Make the cache folder the containers mount (shared storage, as compose makes it); refuse a missing volume."""
        if not self.runtime.in_container:
            return
        for number, (source, inside, _) in enumerate(self.runtime.mounts):
            if Path(source).exists() or source == "/tmp":
                continue
            if number > 1:  # a volume of the spec: the user's to provide
                raise UsageError(f"volumes: host_path {source} (mounted at {inside}) does not exist on this "
                                 "machine; accepted: a folder on the storage the Slurm nodes share")
            Path(source).mkdir(parents=True, exist_ok=True)

    def _up_steps(self, mode: str, image: Optional[str]) -> List[List[Step]]:
        return [self._token_steps()] if self._makes_token else []

    @property
    def _makes_token(self) -> bool:
        """Whether ``up`` hands the nodes a random token (not when the spec's ``env`` names its own file)."""
        return "NODEWEAVE_JOB_TOKEN_FILE" not in self.spec.env

    @property
    def _token_file(self) -> str:
        """Where ``up`` writes the job's token on every node: in the workspace folder there (0600, the user's)."""
        from nodeweave.cluster import token

        return f"{self.workdir}/{token.job_file(self.spec.name)}"

    @property
    def _token_file_seen(self) -> str:
        """The same file as the steps see it: through the workspace mount when they run in the job's image."""
        from nodeweave.cluster import token

        seen = f"{self.runtime.workdir}/{token.job_file(self.spec.name)}"
        return seen if self.runtime.in_container else self._token_file

    def _token_steps(self) -> List[Step]:
        """A new random token for this up, written on every node by a one-task step, the token on stdin."""
        from nodeweave.cluster import token

        secret, (folder, name) = token.new_token(), self._token_file.rsplit("/", 1)
        return [Step(f"write a new job token on node-{node.index} ({node.remote.label}): {self._token_file}",
                     tuple(Srun(node.remote.name).exec_argv([*token.USER_WRITE, folder, name], stdin=True)),
                     stdin=secret + "\n", stdin_name="a new random job token", timeout=120)
                for node in self.nodes(for_up=True)]

    def _submitted_hint(self) -> str:
        """How to see a job submitted with ``sbatch slurm/job.sbatch`` (docs/slurm.md's path), which records nothing
        here (walk6, W20/W21): the verbs know only the allocations ``up`` took, node 0 serves the live picture."""
        name = shlex.quote(self.spec.name)
        if not self.spec.metrics.enabled:
            return f"a job you submitted with sbatch is not recorded here: `squeue --me --name {name}` lists it"
        return (f"a job you submitted with sbatch is not recorded here: `squeue --me --name {name}` names its nodes, "
                f"and `nodeweave top --url http://FIRST-NODE:{self.spec.metrics.port}` (or `dashboard --url`) reads it")

    def grow_hint(self, count: int) -> str:
        return (f"raise nodes in the spec to {count}, then `nodeweave down` and `nodeweave up --target slurm` (an "
                "allocation never grows)")

    def recorded_nothing(self) -> bool:
        return self.job is None

    def nothing_up_line(self) -> Optional[str]:
        """No allocation recorded for the job: nothing of it to release (walk2, row W2: that was exit 2, bad input,
        naming a cluster.json that did not exist)."""
        if self.job is not None:
            return None
        return (f"{self.spec.name} is not up on Slurm: no allocation is recorded for it (`nodeweave up --target slurm` "
                f"records one; {self._submitted_hint()}); nothing to take down")

    def _down_steps(self, delete_claims: bool) -> List[List[Step]]:
        if self.job is None:
            raise UsageError(f"no Slurm allocation is recorded for {self.spec.name} in .nodeweave/{self.spec.name}/cluster.json: "
                             f"nothing to release ({self._submitted_hint()})")
        if self._live() is None:
            return []  # released already, or past its time limit: nothing left but the record
        forget = [Step(f"delete the job token on node-{node.index} ({node.remote.label})",
                       tuple(Srun(node.remote.name).exec_argv(["rm", "-f", self._token_file], stdin=False)),
                       timeout=120)
                  for node in self.nodes()] if self._makes_token and self._live().get("job_state") in LIVE else []
        release = [Step(f"release allocation {self.job} (every step in it ends)", ("scancel", self.job), timeout=120)]
        return [forget, release] if forget else [release]

    # --- the nodes -----------------------------------------------------------------------------------
    def _hosts(self) -> List[str]:
        from nodeweave.entrypoint.planning.slurm import expand_nodelist

        if self.job is None:
            raise EnvironmentProblem(f"{self.spec.name} is not up: no Slurm allocation is recorded for it; "
                                     f"`nodeweave up --target slurm` takes one; {self._submitted_hint()}")  # exit 3
        live = self._live()
        if live is None:
            raise NodeweaveError(f"allocation {self.job} is gone (squeue no longer knows it: released, or past its "
                                 "time limit); `nodeweave up --target slurm` takes a new one")
        if live.get("job_state") not in LIVE:
            raise NodeweaveError(f"allocation {self.job} is {live.get('job_state')} ({live.get('state_reason')}): "
                                 "its nodes are not running")
        return expand_nodelist(live.get("nodes", ""))

    def nodes(self, for_up: bool = False, dry_run: bool = False) -> List[Node]:
        if for_up and self._needs_allocation():  # up's plan: the allocation is a step of it, not taken yet
            return self._placeholder_nodes()
        if not dry_run:
            return self._nodes(self._hosts(), self.job)
        try:
            return self._nodes(self._hosts(), self.job)
        except NodeweaveError as err:  # no allocation yet (or Slurm not asked): the nodes are Slurm's to pick
            self.nodes_refused = err  # what the real verb ends with: its dry run's note (walk13a A7)
            return self._placeholder_nodes(self.job)

    def _placeholder_nodes(self, job: Optional[str] = None) -> List[Node]:
        """``<job-id>``/``<node0>``, ... (placeholders): what a plan says before the allocation is taken (the
        executor fills them in)."""
        from nodeweave.plan import JOB_ID, node_placeholder

        return self._nodes([node_placeholder(i) for i in range(self._allocated_count())], job or JOB_ID)

    def _nodes(self, hosts: List[str], job: str) -> List[Node]:
        runtime = self.runtime
        step = SlurmStep(job=job, hosts=tuple(hosts), workdir=self.workdir, env=tuple(self._contract_env()),
                         options=(*self._step_options(), *runtime.srun_options()),
                         prefix=tuple(runtime.command_prefix()))
        inside = runtime.workdir if runtime.in_container else self.workdir
        return [self._node(i, Srun(f"{job}/{host}", step_options=tuple(runtime.srun_options()),
                             prefix=tuple(runtime.command_prefix())), env=step.node_view(i), workdir=inside, group=step)
                for i, host in enumerate(hosts)]

    def _contract_env(self):
        """The batch script's variables, the spec's env, and where ``up`` put the job token (a path, no secret)."""
        from nodeweave.resolve import resolve
        from nodeweave.targets.slurm.script import exported

        token = [("NODEWEAVE_JOB_TOKEN_FILE", self._token_file_seen)] if self._makes_token else []
        return [*exported(resolve(self.spec)), *token]

    def _step_options(self) -> List[str]:
        """The run step's share of each node: the GPUs and CPUs the allocation asked for."""
        words = [w for w in self._allocation_argv()[2:] if w.startswith(("--gpus-per-node=", "--cpus-per-task="))]
        return words

    # --- the platform's view -------------------------------------------------------------------------
    def states(self, nodes: List[Node]) -> Dict[int, PlatformState]:
        """Every node's is the allocation's: running while Slurm runs it, else stuck (pending, suspended...) or
        ended (gone from squeue)."""
        live = self._live(fresh=True)
        if live is None:
            seen = PlatformState(NodeState.ENDED, "gone")
        else:
            state = NodeState.RUNNING if str(live.get("job_state")).startswith(LIVE) else NodeState.STUCK
            seen = PlatformState(state, f"{live.get('job_state')} (allocation {self.job})")
        return {node.index: seen for node in nodes}

    def sync_targets(self):
        if not self.options.remote_dir:  # the nodes run in this very folder, through shared storage
            from nodeweave.cluster.options import machine_own

            local = machine_own(self.workdir)
            if local:  # what up's plan warns of: the nodes never see it, and sync has no folder of theirs to fill
                raise UsageError(f"target slurm: the nodes would work in {self.workdir}, this machine's folder, but "
                                 f"{local} is each machine's own, so they would not find it and there is no folder "
                                 "of theirs to sync into; `nodeweave up --target slurm --remote-dir /LOCAL/PATH` "
                                 "names the folder on the nodes that sync fills")
            from nodeweave.cluster.base import NothingToSend

            raise NothingToSend(f"nothing to send: target slurm: the nodes work in {self.workdir}, this machine's "
                                "folder on storage they share; every node sees each change at once (with "
                                "node-local copies, `nodeweave up --target slurm --remote-dir /LOCAL/PATH` names the "
                                "folder sync fills)")
        return [Srun(f"{self.job}/{host}") for host in self._hosts()], self.workdir  # the node, not the container

    @property
    def where(self) -> str:
        live = self._record
        nodes = f", {live.get('nodes')}" if live and live.get("nodes") else ""
        return f"Slurm allocation {self.job or '(none yet)'}{nodes} (srun steps, {self.runtime.kind}, {self.workdir})"
