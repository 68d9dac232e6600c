"""Who this node is: rank, node count, processes per node, master address and port.

Every value carries the source it came from. Sources, strongest first:

1. flags (``--node-rank`` ...): the user's explicit override; a platform source
   that disagrees is named in a warning.
2. variables: ``NODEWEAVE_*``, ``NODE_RANK``/``NNODES``/``MASTER_ADDR``/``MASTER_PORT``,
   torchrun's ``PET_*`` (Kubeflow);
3. platforms: ``JOB_COMPLETION_INDEX`` (Indexed Job, JobSet), ``NODEWEAVE_POD_INDEX``
   (the StatefulSet pod-index label), ``LWS_*`` (LeaderWorkerSet), ``VC_TASK_INDEX``
   (Volcano), ``SKYPILOT_*``, Slurm (``SLURM_NODEID``/``SLURM_NNODES``/node list), a hostfile;
4. the hostname ordinal ``<name>-<N>`` (StatefulSet, compose simulation), used only
   when nothing above names the rank, because on host networking it lies.

Variables and platform sources that disagree stop the start (exit 3) naming
both: a silent choice is how two nodes end up with the same rank.
"""

from .errors import TopologyError, UsageError
from .kube import in_kubernetes, namespace, statefulset_replicas
from .model import Topology, Value, warn
from .settings import parse_int
from .slurm import expand_nodelist

DEFAULT_PORT = 29500
FLAG_NAMES = {"node_rank": "--node-rank", "nnodes": "--nnodes", "nproc_per_node": "--nproc-per-node",
              "master_addr": "--master-addr", "master_port": "--master-port"}
ENV_NAMES = {  # variables that state a value directly, in precedence order
    "node_rank": ("NODEWEAVE_NODE_RANK", "NODE_RANK", "PET_NODE_RANK"),
    "nnodes": ("NODEWEAVE_NNODES", "NNODES", "PET_NNODES"),
    "nproc_per_node": ("NODEWEAVE_NPROC_PER_NODE", "PET_NPROC_PER_NODE"),
    "master_addr": ("NODEWEAVE_MASTER_ADDR", "MASTER_ADDR", "PET_MASTER_ADDR"),
    "master_port": ("NODEWEAVE_MASTER_PORT", "MASTER_PORT", "PET_MASTER_PORT"),
}


class Claims:
    """Values for one field, each with its source and tier ("flag", "env", "platform")."""

    def __init__(self):
        self.items = []

    def add(self, value, source, tier):
        if value is not None and str(value).strip() != "":
            self.items.append((str(value).strip(), source, tier))

    def tier(self, *tiers):
        return [c for c in self.items if c[2] in tiers]


def ordinal(name):
    """(prefix, N) of ``<prefix>-<N>`` (first DNS label), else (None, None)."""
    short = (name or "").split(".")[0]
    prefix, dash, number = short.rpartition("-")
    if dash and prefix and number.isdigit():
        return prefix, int(number)
    return None, None


def host_networking(node):
    """PCI-backed interfaces with an address: the container shares the host's network."""
    return [i.name for i in node.interfaces if not i.virtual and i.ipv4]


def read_hostfile(path):
    """[(host, slots or None)] from '<host> [slots=N]' lines."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as err:
        raise UsageError(f"cannot read hostfile {path}: {err.strerror}") from None
    hosts = []
    for number, line in enumerate(lines, 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        slots = None
        for extra in fields[1:]:
            key, _, value = extra.partition("=")
            if key in ("slots", "max_slots") and value.isdigit():
                slots = int(value) if key == "slots" else slots
            else:
                raise UsageError(f"hostfile {path} line {number}: expected '<host> slots=<n>', got {line.strip()!r}")
        hosts.append((fields[0], slots))
    if not hosts:
        raise UsageError(f"hostfile {path} lists no hosts")
    return hosts


def _collect(settings, env, node, root):
    claims = {key: Claims() for key in ENV_NAMES}
    for key, flag in FLAG_NAMES.items():
        claims[key].add(settings.flags.get(key), f"flag {flag}", "flag")
    for key, names in ENV_NAMES.items():
        for name in names:
            if name in env:
                claims[key].add(env[name], f"{name}={env[name]}", "env")
    rank, nnodes, master, nproc = (claims[k] for k in ("node_rank", "nnodes", "master_addr", "nproc_per_node"))
    names = {}
    for var in ("JOB_COMPLETION_INDEX", "NODEWEAVE_POD_INDEX", "LWS_WORKER_INDEX", "VC_TASK_INDEX",
                "SKYPILOT_NODE_RANK", "SLURM_NODEID"):
        if var in env:
            rank.add(env[var], f"{var}={env[var]}", "platform")
    if env.get("LWS_GROUP_SIZE"):
        nnodes.add(env["LWS_GROUP_SIZE"], f"LWS_GROUP_SIZE={env['LWS_GROUP_SIZE']}", "platform")
    master.add(env.get("LWS_LEADER_ADDRESS"), "LWS_LEADER_ADDRESS", "platform")
    ips = [line.strip() for line in env.get("SKYPILOT_NODE_IPS", "").splitlines() if line.strip()]
    if ips:
        names["SKYPILOT_NODE_IPS"] = ips
        master.add(ips[0], "first line of SKYPILOT_NODE_IPS", "platform")
    if env.get("SKYPILOT_NUM_NODES") or ips:
        count = env.get("SKYPILOT_NUM_NODES") or str(len(ips))
        nnodes.add(count, f"SKYPILOT_NUM_NODES={count}" if env.get("SKYPILOT_NUM_NODES") else "lines of SKYPILOT_NODE_IPS", "platform")
    nproc.add(env.get("SKYPILOT_NUM_GPUS_PER_NODE"), "SKYPILOT_NUM_GPUS_PER_NODE", "platform")
    vc_hosts = [k for k in env if k.startswith("VC_") and k.endswith("_HOSTS")]
    if "VC_TASK_INDEX" in env and len(vc_hosts) == 1:
        hosts = [h for h in env[vc_hosts[0]].split(",") if h]
        if hosts:
            names[vc_hosts[0]] = hosts
            master.add(hosts[0], f"first host of {vc_hosts[0]}", "platform")
            nnodes.add(len(hosts), f"hosts in {vc_hosts[0]}", "platform")
    nodelist_var = next((v for v in ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST") if env.get(v)), None)
    if nodelist_var:
        hosts = expand_nodelist(env[nodelist_var])
        names[nodelist_var] = hosts
        master.add(hosts[0], f"first host of {nodelist_var}={env[nodelist_var]}", "platform")
    slurm_n = next((v for v in ("SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES") if env.get(v)), None)
    if slurm_n:
        nnodes.add(env[slurm_n], f"{slurm_n}={env[slurm_n]}", "platform")
    elif nodelist_var:
        nnodes.add(len(names[nodelist_var]), f"hosts in {nodelist_var}", "platform")
    hostfile = settings.get("hostfile")
    if hostfile:
        hosts = read_hostfile(hostfile)
        host_names = [h for h, _ in hosts]
        names["hostfile"] = host_names
        me = {node.hostname, node.hostname.split(".")[0], env.get("POD_NAME", "")}
        for iface in node.interfaces:
            me.update(iface.ipv4)
        mine = [i for i, h in enumerate(host_names) if h in me or h.split(".")[0] in me]
        if not mine:
            raise TopologyError(
                f"this host ({node.hostname}) is not listed in hostfile {hostfile} "
                f"({', '.join(host_names)}); list it by name or address, or set NODE_RANK")
        src = f"position of {host_names[mine[0]]} in hostfile {hostfile}"
        rank.add(mine[0], src, "platform")
        nnodes.add(len(hosts), f"hosts in hostfile {hostfile}", "platform")
        master.add(host_names[0], f"first host of hostfile {hostfile}", "platform")
        if hosts[mine[0]][1]:
            nproc.add(hosts[mine[0]][1], f"slots of {host_names[mine[0]]} in hostfile {hostfile}", "platform")
    return claims, names


def _normalize_nnodes(text, source):
    lo, colon, hi = str(text).partition(":")
    lo_n = parse_int(lo, "node count", source, minimum=0)
    hi_n = parse_int(hi, "maximum node count", source, minimum=0) if colon else lo_n
    if lo_n == 0 or hi_n == 0:
        raise UsageError(f"node count must be at least 1, got {text!r} (from {source})")
    if hi_n < lo_n:
        raise UsageError(f"maximum nodes ({hi_n}) must be >= minimum nodes ({lo_n}) in {text!r} (from {source})")
    return (str(lo_n) if lo_n == hi_n else f"{lo_n}:{hi_n}"), lo_n, hi_n


def _decide(claims, what, normalize, notes, warnings):
    """Pick one value: a flag overrides; variables and platforms must agree."""
    flags = claims.tier("flag")
    rest = claims.tier("env", "platform")
    norm = [(normalize(v, s), v, s) for v, s, _ in rest]
    if flags:
        value, source = normalize(flags[0][0], flags[0][1]), flags[0][1]
        for n, v, s in norm:
            if n != value:
                warn(warnings, "flag-overrides-source", f"{what}: {source} ({flags[0][0]}) overrides {s}")
        return value, source
    if not norm:
        return None, None
    first_n, first_v, first_s = norm[0]
    for n, v, s in norm[1:]:
        if n != first_n:
            raise TopologyError(
                f"{what} sources disagree: {first_s} says {first_v} but {s} says {v}; "
                f"remove one, or pass --{what.replace(' ', '-')} to override both")
    for _, _, s in norm[1:]:
        notes.append(f"{what}: {s} agrees with {first_s}")
    return first_n, first_s


def discover(settings, node, root, warnings=None):
    """The :class:`Topology` of this node; raises TopologyError/UsageError for the user."""
    env = settings.env
    warnings = warnings if warnings is not None else []
    notes = []
    claims, names = _collect(settings, env, node, root)

    def rank_norm(v, s):
        return parse_int(v, "node rank", s)

    rank, rank_src = _decide(claims["node_rank"], "node rank", rank_norm, notes, warnings)
    nnodes, nnodes_src = _decide(claims["nnodes"], "nnodes", lambda v, s: _normalize_nnodes(v, s)[0], notes, warnings)

    # The hostname first: an Indexed Job's pod is named <job>-<index>-<random> but its
    # hostname is <job>-<index>; a StatefulSet pod's name and hostname are the same.
    pod_name, name_src = node.hostname, "hostname"
    prefix, number = ordinal(pod_name)
    if number is None and env.get("POD_NAME"):
        pod_name, name_src = env["POD_NAME"], "POD_NAME"
        prefix, number = ordinal(pod_name)
    kube = in_kubernetes(root, env)
    host_net = host_networking(node)
    if number is not None and not kube and host_net:
        notes.append(f"{name_src} {pod_name!r} ends in -{pod_name.split('.')[0].rpartition('-')[2]} but this container "
                     f"sees the host's NICs ({', '.join(host_net)}): host networking, so that is not a rank")
        prefix = number = None
    if rank is None and number is not None:
        rank, rank_src = number, f"ordinal of {name_src} {pod_name!r}"
    elif number is not None and rank is not None and rank != number and rank_src.startswith("NODEWEAVE_POD_INDEX") \
            and env.get("POD_NAME", pod_name) == pod_name:
        raise TopologyError(f"node rank sources disagree: {rank_src} but {name_src} {pod_name!r} has ordinal {number}")

    if nnodes is None and prefix is not None and kube and rank is not None and (
            rank_src.startswith(("ordinal", "NODEWEAVE_POD_INDEX"))):
        ns, _ = namespace(root, env)
        if ns:
            replicas = statefulset_replicas(root, env, prefix, ns)
            nnodes, nnodes_src = str(replicas), f"Kubernetes API statefulsets/{prefix} .spec.replicas"

    if nnodes is None:
        if rank not in (None, 0):
            raise TopologyError(
                f"node rank {rank} (from {rank_src}) but the node count is unknown; set NNODES "
                "(or NODEWEAVE_NNODES / --nnodes)")
        nnodes, nnodes_src = "1", "default: single node (no node count set)"
    nnodes, lo, hi = _normalize_nnodes(nnodes, nnodes_src)
    elastic = lo != hi

    if rank is None:
        if hi == 1:
            rank, rank_src = 0, "single node"
        else:
            raise TopologyError(
                f"cannot tell this node's rank: {name_src} {pod_name!r} "
                + ("is the host's own name (host networking)" if host_net else "has no '-<N>' ordinal")
                + " and none of NODE_RANK, JOB_COMPLETION_INDEX, NODEWEAVE_POD_INDEX, "
                f"LWS_WORKER_INDEX, VC_TASK_INDEX, SKYPILOT_NODE_RANK, SLURM_NODEID or a hostfile is set; "
                f"set NODE_RANK=0..{hi - 1} on each node")
    if rank >= hi:
        raise UsageError(
            f"node rank {rank} (from {rank_src}) is not below the node count {nnodes} (from {nnodes_src}); "
            f"ranks run 0..{hi - 1}")

    master, master_src = _first(claims["master_addr"], notes)
    if master is None and prefix is not None:
        service = settings.get("service")
        if service:
            ns, ns_src = namespace(root, env)
            master = f"{prefix}-0.{service}.{ns}.svc.cluster.local" if ns else f"{prefix}-0.{service}"
            master_src = f"StatefulSet pod 0 of {prefix!r} behind Service {service!r}" + (f" (namespace from {ns_src})" if ns else "")
        else:
            master, master_src = f"{prefix}-0", f"pod/host 0 of {prefix!r} (no Service: compose or local)"
    if master is None:
        if hi == 1:
            master, master_src = "127.0.0.1", "single node"
        else:
            raise TopologyError(
                "no master address: set MASTER_ADDR (node 0's address) or NODEWEAVE_SERVICE in a StatefulSet")

    port_text, port_src = _first(claims["master_port"], notes)
    if port_text is None:
        port, port_src = DEFAULT_PORT, f"default {DEFAULT_PORT}"
    else:
        port = parse_int(port_text, "master port", port_src, minimum=1)
        if port > 65535:
            raise UsageError(f"master port must be 1..65535, got {port} (from {port_src})")

    nproc_text, nproc_src = _first(claims["nproc_per_node"], notes)
    gpus = node.gpus
    if nproc_text in (None, "auto"):
        auto = gpus.count if gpus and gpus.count else 1
        what = f"{gpus.count} usable {gpus.vendor.upper()} GPU(s)" if gpus and gpus.count else "no GPU: 1 process (CPU)"
        nproc_src = f"auto: {what}" + (f" ({nproc_src})" if nproc_src else "")
        nproc = auto
    else:
        nproc = parse_int(nproc_text, "processes per node", nproc_src, minimum=1)
        if gpus and gpus.count and nproc > gpus.count:
            warn(warnings, "more-processes-than-gpus", f"{nproc} processes per node (from {nproc_src}) but only {gpus.count} usable GPU(s)")

    node_names = []
    if not elastic:
        for key in ("hostfile", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SKYPILOT_NODE_IPS"):
            if len(names.get(key, ())) == hi:
                node_names = list(names[key])
                break
        if not node_names:
            node_names = [f"{prefix}-{i}" for i in range(hi)] if prefix else [f"node-{i}" for i in range(hi)]

    job_id = settings.get("job_id") or prefix or env.get("SLURM_JOB_ID") or "nodeweave"
    return Topology(
        node_rank=Value(value=rank, source=rank_src), nnodes=Value(value=nnodes, source=nnodes_src),
        nnodes_min=lo, nnodes_max=hi, elastic=elastic,
        nproc_per_node=Value(value=nproc, source=nproc_src),
        master_addr=Value(value=master, source=master_src), master_port=Value(value=port, source=port_src),
        world_size=None if elastic else hi * nproc, is_master=rank == 0,
        node_names=node_names, job_id=job_id, notes=notes,
    )


def _first(claims, notes):
    """Highest-precedence value; others that differ are noted, not fatal."""
    if not claims.items:
        return None, None
    value, source, _ = claims.items[0]
    for other, other_source, _ in claims.items[1:]:
        if other != value:
            notes.append(f"{source} wins over {other_source} ({other})")
    return value, source
