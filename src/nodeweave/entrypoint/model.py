"""The plan's data: small attribute records that turn into JSON.

Plain classes instead of dataclasses keep start-up fast (``dataclasses``
pulls in ``inspect`` and ``re``; the entrypoint runs before every training
job). Each record lists its fields and defaults once; ``to_dict()`` gives the
JSON form documented in :mod:`nodeweave.entrypoint`.
"""

NEW_LIST = object()  # default marker: a fresh empty list per record
NEW_DICT = object()
# The launchers the entrypoint runs as its child (running/supervise.py), with a heartbeat; others it execs.
SUPERVISED = ("torchrun", "deepspeed", "accelerate")
# What the entrypoint sets for its ranks itself: one already in its own environment is never passed on (walk7 B18).
SET_FOR_RANKS = ("NODEWEAVE_RESTART_COUNT", "NODEWEAVE_RESUME_FROM", "NODEWEAVE_RANKWATCH_DIR",
                 "NODEWEAVE_RANKWATCH_PID")
# The paths the entrypoint hands its ranks: each absolute (a relative one taken from this node's working folder, where
# the entrypoint reads it), so a script that changes folder before it loads (Hydra's job.chdir, an os.chdir to its run
# folder) opens what node 0 judged, not outputs/.../ck/step-60 (walk13b B17). ``loop.Start.ready`` applies it.
PATHS_FOR_RANKS = ("NODEWEAVE_CHECKPOINT_DIR", "NODEWEAVE_RESUME_FROM", "NODEWEAVE_RANKWATCH_DIR")
# A `command` launcher that starts ranks: the plan says it runs, not execs (stall.local.watched).
WATCHED_CHILD = "runs as a watched child, not exec'd: the command starts ranks, so the stall watch supervises it"


class PlanWarning(str):
    """A plan warning: reads, prints and serialises as its message; ``code`` names its rule.

    Tools that grade warnings (``nodeweave doctor``) key on the stable code,
    never on the wording, which may change; ``severity`` is the level its rule
    gave here (None: the rule's own level), the remedy is the rule's
    (``nodeweave.entrypoint.planning.rules``).
    """

    def __new__(cls, code, message, severity=None):
        self = str.__new__(cls, message)
        self.code, self.severity = code, severity
        return self


class Record:
    """Keyword-constructed record with declared fields, equality and ``to_dict``."""

    FIELDS = ()  # (name, default) pairs

    def __init__(self, **values):
        for name, default in self.FIELDS:
            if name in values:
                value = values.pop(name)
            elif default is NEW_LIST:
                value = []
            elif default is NEW_DICT:
                value = {}
            else:
                value = default
            setattr(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(values)}")

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self.FIELDS)
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, n) == getattr(other, n) for n, _ in self.FIELDS
        )

    def to_dict(self):
        return {n: _plain(getattr(self, n)) for n, _ in self.FIELDS}


def _plain(value):
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# --- what detect() finds -------------------------------------------------------


class Gpu(Record):
    FIELDS = (
        ("index", 0),          # position among the node's GPUs (before *_VISIBLE_DEVICES)
        ("vendor", ""),        # "nvidia" | "amd"
        ("model", ""),         # "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
        ("pci", None),         # "0000:18:00.0"
        ("numa_node", None),   # int, None when the platform reports -1 or nothing
        ("uuid", None),        # NVIDIA "GPU-..."; None for AMD
        ("arch", None),        # AMD gfx target ("gfx942"); None for NVIDIA
    )


class Gpus(Record):
    FIELDS = (
        ("vendor", "none"),        # "nvidia" | "amd" | "none" (CPU only: gloo)
        ("devices", NEW_LIST),        # [Gpu], every GPU the node exposes to this container
        ("count", 0),              # usable after CUDA/HIP/ROCR_VISIBLE_DEVICES
        ("visible", None),         # list of device indices/UUIDs from *_VISIBLE_DEVICES, None = all
        ("visible_env", None),     # the variable that restricted them
        ("visible_invalid", NEW_LIST),  # its entries that name no GPU here (the plan refuses them)
        ("model", None),           # model of the first usable GPU
        ("arch", None),            # gfx target of the first usable AMD GPU
        ("driver", None),          # NVIDIA driver version / amdgpu version
        ("interconnect", "none"),  # "nvswitch" | "nvlink" | "xgmi" | "pcie" | "none"
        ("gpudirect_rdma", None),  # "nvidia_peermem" | "nv_mem" | "amdkfd" | None
        ("source", None),          # where they were read from
    )


class RdmaPort(Record):
    FIELDS = (
        ("device", ""),            # "mlx5_0", "bnxt_re0", "ionic_0", "efa_0"
        ("port", 1),
        ("state", None),           # "ACTIVE", "DOWN", "INIT", ...
        ("phys_state", None),      # "LinkUp", "Disabled", "Polling", ...
        ("link_layer", None),      # "InfiniBand" | "Ethernet" (RoCE) | other
        ("rate_gbps", None),       # int, from "400 Gb/sec (4X NDR)"
        ("rate", None),            # the kernel's text
        ("netdev", None),          # IPoIB or RoCE netdev name, when present in this namespace
        ("roce_v2_gid_index", None),  # lowest GID index that is RoCE v2 and IPv4-mapped
        ("roce_v2_ipv4", None),    # that GID's IPv4 address
        ("driver", None),          # kernel driver of the PCI function (mlx5_core, efa, ...)
        ("numa_node", None),
        ("pci", None),
    )

    @property
    def name(self):
        return f"{self.device}:{self.port}"

    @property
    def active(self):
        return self.state == "ACTIVE"

    @property
    def roce(self):
        return self.link_layer == "Ethernet"


class Interface(Record):
    FIELDS = (
        ("name", ""),
        ("kind", "ether"),        # "ether" | "infiniband" | "loopback" | "other"
        ("operstate", None),      # "up" | "down" | "unknown" | ...
        ("mtu", None),
        ("speed_mbps", None),     # None where the driver reports none (virtual NICs)
        ("ipv4", NEW_LIST),          # addresses on this interface
        ("virtual", False),       # no PCI device behind it (veth, bridge, lo, ...)
    )


class Limits(Record):
    FIELDS = (
        ("shm_bytes", None),      # size of /dev/shm
        ("shm_source", None),     # "statvfs" | "/proc/mounts size=" | "/proc/mounts (half of MemTotal)"
        ("memlock_bytes", None),  # soft RLIMIT_MEMLOCK; None = unlimited
        ("cpus", None),           # usable CPUs (affinity, capped by the cgroup's cpu.max)
        ("cpus_source", None),
        ("ipc_lock", None),       # CAP_IPC_LOCK effective (pins past RLIMIT_MEMLOCK); None = unknown
    )


class Cloud(Record):
    FIELDS = (
        ("provider", None),       # "aws" | "gcp" | "azure" | None
        ("vendor", None),         # DMI sys_vendor
        ("product", None),        # DMI product_name (the instance type on AWS)
        ("efa", False),           # AWS EFA devices present
        ("profile", None),        # GCP TCPX/TCPXO nccl-env-profile.sh to source
        ("topo_file", None),      # Azure ND topology XML for NCCL_TOPO_FILE
    )


class Node(Record):
    FIELDS = (
        ("hostname", ""),
        ("sysroot", "/"),
        ("gpus", None),           # Gpus
        ("nics", NEW_LIST),          # [RdmaPort], every RDMA port
        ("interfaces", NEW_LIST),    # [Interface]
        ("interface", None),      # name of the interface that routes to the master
        ("interface_reason", None),
        ("local_ipv4", None),     # this node's address on that interface
        ("limits", None),         # Limits
        ("cloud", None),          # Cloud
        ("libraries", NEW_DICT),     # {"nccl": "2.21.5" | None, "rccl": ... } (filled when needed)
    )


class Kube(Record):
    """What Kubernetes tells this container (detection/kube.py); planning weighs it, never asks."""

    FIELDS = (
        ("pod", False),             # a pod: the API's address, a downward-API name or a service-account token
        ("namespace", None),        # the service account's namespace, else POD_NAMESPACE
        ("namespace_source", None),
        ("search_domain", None),    # <domain> of /etc/resolv.conf's search entry svc.<domain>
        ("search_entry", None),     # that entry, for the source
        ("replicas", NEW_DICT),        # {StatefulSet name: .spec.replicas}, filled when planning wants one
    )

# --- what the rank sources claim (sources.py) and discover() weighs -----------

# Tiers of a claim, strongest first: ``flag`` (the user's override), ``env`` and
# ``platform`` (variables and schedulers: they must agree), ``hostname`` (the
# ``<name>-<N>`` ordinal: it must not contradict them).
FLAG, ENV, PLATFORM, HOSTNAME = "flag", "env", "platform", "hostname"


# Fields whose claims are numbers: kept as given, so the one integer reader (planning.contract.read_int) refuses
# white space at an end as it refuses `05` (walk8 B2: NODEWEAVE_NNODES=' 2' was stripped here and taken).
NUMBER_FIELDS = frozenset(("node_rank", "nnodes", "nproc_per_node", "master_port", "world_size", "rank",
                           "tasks_per_node"))


class Claim:
    """One source's value for one field (a list for ``hosts``, a number's text as given, else stripped text)."""

    __slots__ = ("field", "value", "source", "tier", "origin")

    def __init__(self, field, value, source, tier):
        self.field, self.source, self.tier = field, source, tier
        self.value = (list(value) if isinstance(value, list) else str(value) if field in NUMBER_FIELDS
                      else str(value).strip())
        self.origin = None  # the Source row, set by sources.collect()

    def __repr__(self):
        return f"Claim({self.field}={self.value!r} from {self.source}, {self.tier})"


def given(env, name):
    """``env[name]`` when set to something, else None: a variable set but empty (or blank) is read as unset,
    as every reader of ``variables`` reads it, and ``sources.empty_variables`` says so (walk9 B10, B11)."""
    value = env.get(name)
    return value if value and value.strip() else None


def variables(env, names, tier=ENV):
    """A claim per ``(field, variable)`` whose variable is set and not empty."""
    return [Claim(field, env[var], f"{var}={env[var]}", tier) for field, var in names if env.get(var, "").strip()]


def host_list(hosts, key, master_source, count_source):
    """The claims a list of node names makes: the names, node 0 as master, the count."""
    return [Claim("hosts", list(hosts), key, PLATFORM), Claim("master_addr", hosts[0], master_source, PLATFORM),
            Claim("nnodes", len(hosts), count_source, PLATFORM)]


# --- what discover() and the planners decide --------------------------------


class Value(Record):
    """One topology value and the source it came from."""

    FIELDS = (("value", None), ("source", None))


class Topology(Record):
    FIELDS = (
        ("node_rank", None),       # Value(int)
        ("nnodes", None),          # Value(str "N" or "MIN:MAX")
        ("nnodes_min", None),      # int
        ("nnodes_max", None),      # int
        ("elastic", False),
        ("nproc_per_node", None),  # Value(int)
        ("master_addr", None),     # Value(str)
        ("master_port", None),     # Value(int)
        ("world_size", None),      # processes over all nodes; None when elastic
        ("node_procs", None),      # [int] every node's processes in rank order (entrypoint/world.py); None: elastic
        ("is_master", False),      # this node hosts the rendezvous
        ("node_names", NEW_LIST),     # every node's name in rank order, when known
        ("platform", None),        # the SOURCES row that named the rank ("dstack", "Slurm", ...); None: single node
        ("job_id", None),          # rendezvous id (elastic)
        ("notes", NEW_LIST),          # [str] sources consulted and set aside
    )


class EnvVar(Record):
    FIELDS = (
        ("name", ""),
        ("value", ""),
        ("action", "set"),   # "set" (by nodeweave) | "kept" (user's value) | "export" (launcher contract)
        ("source", ""),      # "policy" | "user" | "topology" | "nodeweave.yaml"
        ("reason", ""),
    )


class Launch(Record):
    FIELDS = (
        ("launcher", "torchrun"),
        ("argv", NEW_LIST),      # what is exec'd
        ("files", NEW_DICT),     # {path: content} written just before exec (the deepspeed hostfile)
        ("wait", None),       # {"host", "port", "timeout_s"} or None (master, single node, disabled)
        ("notes", NEW_LIST),
    )


class Plan(Record):
    FIELDS = (
        ("node", None),       # Node
        ("topology", None),   # Topology
        ("env", NEW_LIST),       # [EnvVar]
        ("launch", None),     # Launch
        ("warnings", NEW_LIST),  # [str]
        ("errors", NEW_LIST),    # [{"message", "exit_code"}]: only --explain shows a plan that has them
        ("exchange", None),   # {"enabled", ...}: the check-in and heartbeat (exchange_plan.plan_exchange)
        ("fingerprint", None),  # this node's fingerprint (fingerprint.py); filled by --explain
        ("role", None),       # {"kind", "identity", "rank", "why", "generation"} (recovery/roles.py)
        ("faults", None),     # {key: {"value", "source", "meaning"}}: what this node does on a fault (faults.py)
        ("mode", "run"),      # "run" | "hold": a holding node launches nothing until `nodeweave run` (hold.py)
    )

    def environ(self, base):
        """The launcher's environment: ``base`` plus every set/exported variable; what the entrypoint sets for
        its ranks itself (``SET_FOR_RANKS``) is never taken from ``base`` (the plan warns of it)."""
        env = {name: value for name, value in base.items() if name not in SET_FOR_RANKS}
        for var in self.env:
            if var.action != "kept":
                env[var.name] = var.value
        return env

    def to_dict(self):
        data = {"schema": SCHEMA}
        data.update(Record.to_dict(self))
        return data


SCHEMA = "nodeweave.entrypoint/1"
