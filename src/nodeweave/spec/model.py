"""The typed cluster spec: frozen dataclasses whose attribute names equal the YAML keys.

Renderers receive only these objects, never raw YAML, so a field that passed
the loader is known to be well-formed. Lists are tuples and mappings are
read-only views (``types.MappingProxyType``): take ``dict(spec.env)`` before
dumping one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional, Tuple, Union

EMPTY: Mapping[str, str] = MappingProxyType({})


def _empty():
    return field(default_factory=lambda: EMPTY)

LAUNCHERS = ("torchrun", "deepspeed", "accelerate", "command")
MODES = ("run", "hold")  # launcher.mode: start the job, or hold the nodes for `nodeweave run`
CLAIMS = ("shared", "per-pod")
ANTI_AFFINITIES = ("required", "preferred", "none")
TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
AFFINITY_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
SPREAD_POLICIES = ("DoNotSchedule", "ScheduleAnyway")
SECCOMP_PROFILES = ("runtime-default", "unconfined")
BUILD_SOURCES = ("binary", "git")
SLURM_RUNTIMES = ("pyxis", "apptainer", "host")


@dataclass(frozen=True)
class NodeRange:
    """A fixed node count (``min == max``) or an elastic ``MIN:MAX`` range (torchrun c10d)."""

    min: int
    max: int

    @property
    def elastic(self) -> bool:
        return self.max != self.min

    def __str__(self) -> str:
        return f"{self.min}:{self.max}" if self.elastic else str(self.min)


@dataclass(frozen=True)
class Project:
    """Project code built into the image (e.g. TorchTitan): copied from ``source``, then ``run`` in ``path``."""

    source: Optional[str] = None  # a directory of the build context (the spec's directory), or None
    path: str = "/opt/project"
    run: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Image:
    variant: str
    registry: str = "localhost/nodeweave"
    tag: Optional[str] = None
    base: Optional[str] = None
    build_args: Mapping[str, str] = _empty()
    apt: Tuple[str, ...] = ()  # extra OS packages, in their own layer
    pip: Tuple[str, ...] = ()  # pinned requirements (name==version or name @ url), in their own layer
    requirements: Optional[str] = None  # a pinned requirements file in the build context
    project: Optional[Project] = None
    extras: Tuple[str, ...] = ()  # keys of nodeweave.catalogue.EXTRAS (mofed, efa)
    digest: Optional[str] = None  # sha256:... of the pushed image: deployments name it by digest


@dataclass(frozen=True)
class Launcher:
    script: str
    type: str = "torchrun"
    args: Tuple[str, ...] = ()
    master_port: int = 29500
    max_restarts: int = 0
    wait_timeout: int = 600  # seconds a worker waits for node 0 (NODEWEAVE_WAIT_TIMEOUT)
    options: Tuple[str, ...] = ()  # the launcher's own options, before the script (NODEWEAVE_LAUNCHER_OPTIONS)
    exchange: bool = True  # nodes check in with node 0 before the launch and watch each other after
    exchange_port: Optional[int] = None  # node 0's check-in port; None = master_port + 1
    exchange_allow: Tuple[str, ...] = ()  # check-in refusals that only warn (NODEWEAVE_EXCHANGE_ALLOW)
    mode: str = "run"  # run: containers start the job | hold: they plan and wait for `nodeweave run` (NODEWEAVE_MODE)
    setup: Tuple[str, ...] = ()  # shell lines run before the launcher, in the shell that execs it (NODEWEAVE_SETUP)
    stall_warn: int = 60  # seconds nothing moves while ranks wait for one before the stall report; 0 = off
    stall_timeout: int = 600  # seconds of a stall before every node stops with exit 7; 0 = never


@dataclass(frozen=True)
class Recovery:
    """The ``recovery`` section (docs/recovery.md): off by default; on, nodeweave restarts the job itself."""

    enabled: bool = False
    spares: int = 0  # containers beyond ``nodes`` that check in and wait to take a left-out node's place
    max_restarts: int = 5  # restarts of the whole job (counted by node 0), then exit 8
    no_progress_restarts: int = 3  # generations in a row without a newer checkpoint, then exit 9; 0 = no brake
    checkpoint_dir: Optional[str] = None  # where the script saves; None = no resume (NODEWEAVE_RESUME_FROM unset)
    straggler_is_fault: bool = False  # a lasting straggler counts as a fault (issue 32 acts on it)
    warm_start: bool = True  # each node holds its next launcher started ahead, its imports done

    @property
    def spare_nodes(self) -> int:
        """The spares every target runs beside ``nodes``: ``spares`` with recovery on, none with it off (a spare
        only ever waits for recovery to call it)."""
        return self.spares if self.enabled else 0


@dataclass(frozen=True)
class Metrics:
    """The ``metrics`` section (docs/observability.md): on by default — node 0 serves ``/metrics`` on ``port``."""

    enabled: bool = True
    port: int = 9464
    step_pattern: Optional[str] = None  # a regular expression for the step in the training's own log lines
    host_port: Optional[int] = None  # the local target's published port on 127.0.0.1; None: the engine picks one


@dataclass(frozen=True)
class Workspace:
    path: str = "/workspace"
    host_path: str = "."


@dataclass(frozen=True)
class Cache:
    path: str = "/cache"
    host_path: str = "~/.cache/nodeweave"
    size: str = "200Gi"


@dataclass(frozen=True)
class Network:
    interfaces: Tuple[str, ...] = ()
    exclude_hcas: Tuple[str, ...] = ()
    rdma: bool = False  # pass RDMA devices (/dev/infiniband) and let verbs lock memory
    rdma_resources: Mapping[str, int] = _empty()
    attachments: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Toleration:
    """One Kubernetes toleration; keys spelled as Kubernetes spells them."""

    key: Optional[str] = None
    operator: str = "Equal"
    value: Optional[str] = None
    effect: Optional[str] = None
    tolerationSeconds: Optional[int] = None

    def to_kubernetes(self) -> dict:
        """The toleration as a manifest mapping, without unset fields."""
        fields = {
            "key": self.key,
            "operator": self.operator,
            "value": self.value,
            "effect": self.effect,
            "tolerationSeconds": self.tolerationSeconds,
        }
        return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True)
class AffinityTerm:
    """One required node-affinity match expression (all terms must match)."""

    key: str
    operator: str = "In"
    values: Tuple[str, ...] = ()

    def to_kubernetes(self) -> dict:
        body: dict = {"key": self.key, "operator": self.operator}
        if self.values:
            body["values"] = list(self.values)
        return body


@dataclass(frozen=True)
class TopologySpread:
    """A topology spread constraint over this job's pods (e.g. across zones or racks)."""

    topology_key: str
    max_skew: int = 1
    when_unsatisfiable: str = "DoNotSchedule"


@dataclass(frozen=True)
class IngressPeer:
    """Pods beyond the job's own that the NetworkPolicy admits (a metrics scraper, a notebook)."""

    pod_labels: Mapping[str, str] = _empty()  # empty with namespace_labels: every pod of those namespaces
    namespace_labels: Mapping[str, str] = _empty()  # empty: the job's own namespace
    ports: Tuple[int, ...] = ()  # empty: every port


@dataclass(frozen=True)
class OpenShiftBuild:
    """An on-cluster image build: an ImageStream and a Docker-strategy BuildConfig."""

    source: str = "binary"  # binary (oc start-build --from-dir) | git
    git: Optional[str] = None  # repository URL, for source git
    ref: Optional[str] = None  # branch, tag or commit, for source git


@dataclass(frozen=True)
class Kubernetes:
    service: str  # resolved: the job name when the file leaves it out
    namespace: str = "default"
    storage_class: Optional[str] = None
    storage_size: str = "100Gi"
    claim: str = "shared"
    node_selector: Mapping[str, str] = _empty()
    tolerations: Tuple[Toleration, ...] = ()
    anti_affinity: str = "required"
    grace_period: int = 120
    openshift: bool = False
    cluster_domain: Optional[str] = None  # None: the pod reads it from /etc/resolv.conf
    labels: Mapping[str, str] = _empty()  # on the workload (StatefulSet, Job, ...)
    annotations: Mapping[str, str] = _empty()
    pod_labels: Mapping[str, str] = _empty()  # on the pod template
    pod_annotations: Mapping[str, str] = _empty()
    node_names: Tuple[str, ...] = ()  # pin pods to these nodes (kubernetes.io/hostname In ...)
    node_affinity: Tuple[AffinityTerm, ...] = ()
    topology_spread: Tuple[TopologySpread, ...] = ()
    scheduler_name: Optional[str] = None
    queue: Optional[str] = None  # Kueue LocalQueue, or a Volcano queue with scheduler_name volcano
    build: Optional[OpenShiftBuild] = None
    network_policy: bool = True  # ingress to the job's pods only from the job's pods (and ingress_from)
    ingress_from: Tuple[IngressPeer, ...] = ()


@dataclass(frozen=True)
class Resources:
    """Per-node (pod, container, Slurm task) resources beyond the GPUs and RDMA devices."""

    requests: Mapping[str, str] = _empty()  # cpu, memory: Kubernetes quantities
    limits: Mapping[str, str] = _empty()
    devices: Mapping[str, int] = _empty()  # other extended resources, e.g. a per-NIC SR-IOV resource
    hugepages: Mapping[str, str] = _empty()  # page size (2Mi, 1Gi) -> amount

    def __bool__(self) -> bool:
        return bool(self.requests or self.limits or self.devices or self.hugepages)

    @property
    def hugepage_mounts(self) -> Tuple[Tuple[str, str, str], ...]:
        """(volume name, emptyDir medium, mount path) per page size; a single size mounts at /dev/hugepages."""
        sizes = list(self.hugepages)
        if len(sizes) == 1:
            return (("hugepages", "HugePages", "/dev/hugepages"),)
        return tuple((f"hugepages-{size.lower()}", f"HugePages-{size}", f"/dev/hugepages-{size}") for size in sizes)


@dataclass(frozen=True)
class Volume:
    """An extra mount. ``host_path`` serves compose and Slurm; Kubernetes uses its own source, else hostPath."""

    name: str
    path: str
    read_only: bool = False
    host_path: Optional[str] = None
    claim: Optional[str] = None  # an existing PersistentVolumeClaim
    config_map: Optional[str] = None  # files of a ConfigMap (mounted, never environment)
    secret: Optional[str] = None  # files of a Secret (mounted read-only, never environment)
    cache: Optional[str] = None  # a node-local scratch cache of this size (emptyDir; a named volume in compose)

    @property
    def kubernetes_source(self) -> str:
        """Which Kubernetes volume kind carries it: claim, config_map, secret, cache or host_path."""
        for kind in ("claim", "config_map", "secret", "cache"):
            if getattr(self, kind) is not None:
                return kind
        return "host_path"


@dataclass(frozen=True)
class Security:
    cap_add: Tuple[str, ...] = ()  # capabilities beyond IPC_LOCK (which RDMA adds itself)
    ipc_lock: bool = True  # with RDMA: add IPC_LOCK; false where the runtime's RLIMIT_MEMLOCK is unlimited
    seccomp: str = "runtime-default"  # or unconfined (AMD's advice for ROCm profiling)
    read_only_root: bool = True  # pods: read-only root filesystem, emptyDirs for /tmp and the image's HOME


@dataclass(frozen=True)
class Slurm:
    """``nodeweave render slurm``: the sbatch script's allocation and container runtime."""

    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    time: Optional[str] = None  # Slurm time: MM, HH:MM:SS, D-HH[:MM[:SS]]
    constraint: Optional[str] = None
    exclusive: bool = True
    runtime: str = "pyxis"  # pyxis (srun --container-image) | apptainer (exec --nv/--rocm) | host (a shared venv)
    sif: Optional[str] = None  # apptainer: a local .sif instead of docker://<image>
    nodelist: Tuple[str, ...] = ()  # --nodelist: these Slurm nodes (the spec's `hosts` list never pins a Slurm job)


@dataclass(frozen=True)
class Spec:
    name: str
    image: Image
    nodes: NodeRange
    gpus_per_node: Union[int, str]  # a count, or "auto" (one process per detected GPU)
    launcher: Launcher
    workspace: Workspace
    cache: Cache
    network: Network
    env: Mapping[str, str]
    kubernetes: Kubernetes
    resources: Resources = Resources()
    volumes: Tuple[Volume, ...] = ()
    security: Security = Security()
    hosts: Tuple[str, ...] = ()  # bare hosts, node 0 first: compose's hostfile gives each its rank
    slurm: Optional[Slurm] = None  # None: no slurm section (``render slurm`` uses the defaults)
    nodes_given: bool = True  # False: ``nodes`` left out, so a host list given to the cluster verbs sets the count
    kubernetes_given: Tuple[str, ...] = ()  # the kubernetes: fields the file writes (a target's own section filled)
    recovery: Recovery = Recovery()
    metrics: Metrics = Metrics()
    notes: Tuple[str, ...] = ()  # allowed but likely not meant (``shared_rules.notes``): validate says them

    @property
    def containers(self) -> int:
        """The node containers (pods) the job starts with. Without recovery: ``nodes``, the minimum of an elastic
        range (torchrun's c10d admits more as they come). With recovery, node 0 decides who trains each
        generation: every training slot (an elastic range's MAX, so it can shrink) plus the spares."""
        if not self.recovery.enabled:
            return self.nodes.min
        return self.nodes.max + self.recovery.spare_nodes

    @property
    def nodes_written(self) -> str:
        """``nodes`` as the spec writes it: ``4 node(s)``, an elastic ``2:4 node(s)``, or under recovery ``4`` with the floor
        (``recovery.min_nodes``), which is no elastic range: recovery starts all 4 (walk6 W38: shown as 2:4, the
        form the same spec refuses under recovery)."""
        if self.recovery.enabled:
            floor = f" (recovery down to {self.nodes.min})" if self.nodes.elastic else ""
            return f"{self.nodes.max} node(s){floor}"
        return f"{self.nodes} node(s)"

    @property
    def start_differs(self) -> bool:
        """Whether the started count is not simply ``nodes``: an elastic range, or recovery (spares, the floor)."""
        return self.nodes.elastic or self.recovery.enabled

    @property
    def starts(self) -> str:
        """What the job starts, and how to start fewer: ``validate``, ``render`` and ``up`` say it in these words."""
        from nodeweave.catalogue import get_variant

        unit = "GPUs" if get_variant(self.image.variant).gpu_resource else "processes"  # a cpu variant has no GPU
        gpus = f" ({self.containers * self.gpus_per_node} {unit})" if isinstance(self.gpus_per_node, int) else ""
        if not self.recovery.enabled:
            more = (f"; torchrun admits more up to {self.nodes.max} as they join (MAX is a ceiling; a batch "
                    f"Job, JobSet or TrainJob, which cannot grow, starts all {self.nodes.max})"
                    if self.nodes.elastic else "")
            # fewer only where fewer is possible; what a job lacks said, not found out at top (walk6 W43)
            fewer = "; to start fewer, lower nodes" if self.containers > 1 else ""
            return f"starts {self.containers} node(s){gpus}{more}{fewer}{self.metrics_note()}"
        spares = self.recovery.spare_nodes
        parts = f"{self.nodes.max} training node(s)" + (f" + {spares} spare(s)" if spares else "")
        floor = (f"; recovery goes on with as few as {self.nodes.min} (recovery.min_nodes)"
                 if self.nodes.elastic else "")
        fewer = "lower nodes" + (" or recovery.spares" if spares else "")
        which = f"; {self.spares_named()}" if spares else ""
        return f"starts {self.containers} node(s): {parts}{gpus}{which}{floor}; to start fewer, {fewer}"

    def metrics_note(self) -> str:
        """"; no /metrics: <why>" where metrics are on but nothing would serve them (the entrypoint's words)."""
        from nodeweave.entrypoint.planning.shared_rules import metrics_unserved

        off = "one node" if self.nodes.max <= 1 else None if self.launcher.exchange else "launcher.exchange: false"
        why = metrics_unserved(off, self.launcher.type != "command") if self.metrics.enabled else None
        return f"; no /metrics for top, dashboard and Prometheus: {why}" if why else ""

    def is_spare(self, index: int) -> bool:
        """Whether node ``index`` starts as a spare: with recovery, the ones after every training slot."""
        return self.recovery.enabled and index >= self.nodes.max

    def spares_named(self) -> str:
        """Which nodes start as spares, so no plan leaves it to the reader's arithmetic (walk5, W42); "" if none."""
        first, last = self.nodes.max, self.containers - 1
        if not self.recovery.enabled or last < first:
            return ""
        return f"node {first} is the spare" if first == last else f"nodes {first} to {last} are the spares"
