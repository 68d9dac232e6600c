"""What is wrong with a node's NCCL/RCCL settings and limits, as rows: ``Rule(code, check, severity, remedy)``.

The entrypoint evaluates ``RULES`` at every start (its warnings, in
``--explain`` and on the start-up line); ``nodeweave doctor`` evaluates the
same rows with ``audit`` on (a node on its own, not only this launch) plus
its own rows of the same type, and grades every finding by its row: the
severity and the remedy live here, never in a second table. ``NOTICES`` are
the codes the planners emit inline (``emit``) where a decision finds
something worth a warning. Codes are stable: tools grade on them.

A check takes a :class:`Context` and returns None, a message, or a list of
messages; a severity is a level or a function of the context.
"""

from ..model import PlanWarning

ERROR, WARNING, INFO = "error", "warning", "info"
SHM_MIN = 1 << 30
SHM_ERROR_BELOW = 512 << 20  # Docker's 64 MB default fails NCCL outright; under 1 GiB is a warning
MEMLOCK_MIN = 1 << 30
GPU_LINKS = ("nvswitch", "nvlink", "xgmi")


class Rule:
    __slots__ = ("code", "check", "severity", "remedy")

    def __init__(self, code, check, severity, remedy):
        self.code, self.check, self.severity, self.remedy = code, check, severity, remedy

    def level(self, ctx=None):
        return self.severity(ctx) if callable(self.severity) else self.severity


class Context:
    """What a rule may look at: the node, the variables, whether several nodes meet, the usable RDMA ports."""

    def __init__(self, node, env, root, multi=False, nnodes="1", nproc=1, usable=None, audit=False):
        self.node, self.env, self.root, self.multi, self.nnodes, self.nproc = node, env, root, multi, nnodes, nproc
        self.usable = usable  # RDMA ports NCCL should use (policy.classify_ports), None when not weighed
        self.audit = audit    # doctor: judge the node on its own, not only what this launch touches


def evaluate(rules, ctx):
    """[(rule, message, severity)] of every row whose check fires."""
    hits = []
    for rule in rules:
        if rule.check is None:
            continue
        found = rule.check(ctx)
        for message in [found] if isinstance(found, str) else found or ():
            hits.append((rule, message, rule.level(ctx)))
    return hits


def warn_all(rules, ctx, warnings):
    for rule, message, severity in evaluate(rules, ctx):
        warnings.append(PlanWarning(rule.code, message, severity))


def emit(warnings, code, message):
    """An inline warning of a planner, by its row in ``NOTICES``."""
    warnings.append(PlanWarning(code, message, BY_CODE[code].level()))


def _tokens(value):
    """(exclude, exact, items) of an NCCL list such as ``^=mlx5_0,mlx5_1``."""
    text = value.strip()
    exclude = text.startswith("^")
    text = text.lstrip("^")
    exact = text.startswith("=")
    return exclude, exact, [t for t in text.lstrip("=").split(",") if t]


def _rdma_ports(node):
    return [p for p in node.nics if not (p.driver == "efa" or p.device.startswith("efa"))]


# NCCL's whole-number variables (its ``NCCL_PARAM``s), each with what NCCL does at its default. NCCL reads them with
# strtoll(value, &end, 0): spaces skipped, 0x hex, a leading 0 octal, digits up to the first other character; a
# value with no digit at all (``abc``, ``yes``, ``true``) is "Invalid value ..., using default" (walk7 B21:
# NCCL_IB_DISABLE=yes was warned as switching IB off, which NCCL never does with it).
NCCL_NUMBERS = {
    "NCCL_IB_GID_INDEX": "its default GID index (0, the link-local RoCE v1 GID, before NCCL 2.21.5; found by NCCL "
                         "from 2.21.5 on)",
    "NCCL_IB_DISABLE": "InfiniBand/RoCE on (0)", "NCCL_P2P_DISABLE": "GPU peer-to-peer on (0)",
    "NCCL_SHM_DISABLE": "shared memory on (0)", "NCCL_NET_GDR_READ": "its default", "NCCL_BUFFSIZE": "4 MiB buffers",
    "NCCL_MIN_NCHANNELS": "its default", "NCCL_MAX_NCHANNELS": "its default", "NCCL_NTHREADS": "its default",
    "NCCL_CROSS_NIC": "its default (2)", "NCCL_NVLS_ENABLE": "its default", "NCCL_IB_QPS_PER_CONNECTION": "1",
    "NCCL_IB_TIMEOUT": "its default (20)", "NCCL_IB_RETRY_CNT": "its default (7)", "NCCL_IB_SL": "service level 0",
    "NCCL_IB_TC": "traffic class 0", "NCCL_IB_ROCE_VERSION_NUM": "RoCE v2",
}


def nccl_number(value):
    """The number NCCL reads from ``value`` (C's strtoll, base 0), or None where it reads none and keeps its
    default. Without ``re``: the start-up path imports nothing slow."""
    text = (value or "").lstrip(" \t\n\r\f\v")
    sign = -1 if text[:1] == "-" else 1
    text = text[1:] if text[:1] in "+-" and text else text
    if text[:2].lower() == "0x" and text[2:3] and text[2:3].lower() in "0123456789abcdef":
        digits, base, text = "0123456789abcdef", 16, text[2:]
    elif text[:1] == "0":
        digits, base = "01234567", 8
    else:
        digits, base = "0123456789", 10
    read = ""
    for char in text:
        if char.lower() not in digits:
            break
        read += char
    return sign * int(read, base) if read else None


def nccl_not_a_number(ctx):
    """A whole-number NCCL variable NCCL cannot read a number from: ignored, its default used, nothing said."""
    said = []
    for name, default in NCCL_NUMBERS.items():
        value = ctx.env.get(name)
        if value is None or nccl_number(value) is not None:
            continue
        line = (f"{name} is set but empty: NCCL reads it as unset and uses {default}" if not value else
                f"{name}={value!r} is not a number: NCCL ignores it (\"Invalid value\", in its INFO log only) and "
                f"uses {default}")
        if name == "NCCL_IB_GID_INDEX":
            v2 = [f"{p.name} at {p.roce_v2_gid_index}" for p in ctx.node.nics
                  if p.roce and p.active and p.roce_v2_gid_index is not None]
            line += ("; nodeweave sets no index of its own while it is set" +
                     (f" (this node's RoCE v2 IPv4 GID: {', '.join(v2)})" if v2 else ""))
        said.append(line)
    return said


def _nccl_on(ctx, name):
    """Whether a 0/1 NCCL switch is set to something NCCL reads as non-zero."""
    return bool(nccl_number(ctx.env.get(name, "")))


def p2p_disabled(ctx):
    value, gpus = ctx.env.get("NCCL_P2P_DISABLE", "0"), ctx.node.gpus
    if _nccl_on(ctx, "NCCL_P2P_DISABLE") and gpus.interconnect in GPU_LINKS:
        return (f"NCCL_P2P_DISABLE={value} on a {gpus.interconnect} node turns off GPU peer-to-peer: all-reduce "
                "measured 12x slower (27.5 vs 325 GB/s); unset it")


def _ifname(ctx, variable="NCCL_SOCKET_IFNAME"):
    """(value, items, exclude, matches, names) of a user NCCL_SOCKET_IFNAME (prefixes, ``^`` excludes, ``=``
    exact) or GLOO_SOCKET_IFNAME (exact names: torch splits it on commas and opens each) set here, else None."""
    value = ctx.env.get(variable)
    if not value or not value.strip():
        return None
    if variable == "NCCL_SOCKET_IFNAME":
        exclude, exact, items = _tokens(value)
    else:
        exclude, exact, items = False, True, [t.strip() for t in value.split(",") if t.strip()]
    names = [i.name for i in ctx.node.interfaces]
    matches = [n for n in names if any((n == t) if exact else n.startswith(t) for t in items)]
    if exclude:
        matches = [n for n in names if n not in matches]
    return value, items, exclude, matches, names


def _across_nodes(ctx):
    """The NCCL_SOCKET_IFNAME that matters for reaching the other nodes (several nodes, not on loopback)."""
    return _ifname(ctx) if ctx.multi and ctx.node.interface != "lo" else None


def _loopback_only(found):
    return not found[2] and found[1] and all(t in ("lo", "lo0") for t in found[1])


def ifname_loopback(ctx):
    found = _across_nodes(ctx)
    if found and _loopback_only(found):
        return f"NCCL_SOCKET_IFNAME={found[0]} with {ctx.nnodes} nodes: loopback cannot reach other nodes"


def ifname_no_match(ctx):
    """A kept NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME that names no interface of this node: NCCL's bootstrap
    ("no socket interface found") and Gloo ("unable to find address") fail at init, on one node too."""
    said = []
    for variable in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        found = _ifname(ctx, variable)
        if found and found[4] and not found[3]:
            how = " (Gloo takes exact names, comma-separated)" if variable == "GLOO_SOCKET_IFNAME" else ""
            said.append(f"{variable}={found[0]} matches no interface here{how} ({', '.join(found[4])})")
    return said


def ifname_misses_route(ctx):
    found = _across_nodes(ctx)
    route = ctx.node.interface
    if found and not _loopback_only(found) and found[3] and route and route not in found[3]:
        return f"NCCL_SOCKET_IFNAME={found[0]} leaves out {route}, the interface that routes to the master"


def ib_hca_empty(ctx):
    if "NCCL_IB_HCA" in ctx.env and not ctx.env["NCCL_IB_HCA"].strip():
        ports = len(ctx.node.nics)
        return (f"NCCL_IB_HCA is set but empty: NCCL reads that as every RDMA device ({ports} port(s) here), "
                "including ports nodeweave would keep it off")


def _hca_items(ctx):
    value = ctx.env.get("NCCL_IB_HCA", "")
    devices = sorted({p.device for p in ctx.node.nics})
    if not value.strip() or not devices:
        return value, False, [], devices
    _, exact, items = _tokens(value)
    return value, exact, [(item.split(":")[0], [d for d in devices if (d == item.split(":")[0] if exact else
                                                                       d.startswith(item.split(":")[0]))])
                          for item in items], devices


def ib_hca_unknown(ctx):
    """NCCL_IB_HCA naming a device (or a device's port) this node lacks under /sys/class/infiniband, naming
    devices on a node with none, or excluding every one."""
    value = ctx.env.get("NCCL_IB_HCA", "")
    if not value.strip():
        return []
    exclude, exact, names = _tokens(value)
    if not ctx.node.nics:
        return [f"NCCL_IB_HCA={value} names RDMA devices, and this node has none (/sys/class/infiniband is empty "
                "or absent): NCCL falls back to TCP sockets"] if names and not exclude else []
    value, _, items, devices = _hca_items(ctx)
    ports = sorted(p.name for p in ctx.node.nics)
    said = [f"NCCL_IB_HCA={value}: {dev} is not an RDMA device here ({', '.join(devices)})" for dev, hits in items
            if not hits]
    for item in names:  # mlx5_0:2 where mlx5_0 has one port
        dev, _, port = item.partition(":")
        if port and any(d == dev for d in devices) and f"{dev}:{port}" not in ports:
            said.append(f"NCCL_IB_HCA={value}: {item} is not a port here ({', '.join(ports)})")
    if exclude and not said:
        left = [d for d in devices if not any((d == n.split(":")[0]) if exact else d.startswith(n.split(":")[0])
                                              for n in names)]
        if not left:
            said.append(f"NCCL_IB_HCA={value} excludes every RDMA device here ({', '.join(devices)}): NCCL falls "
                        "back to TCP sockets")
    return said


def ib_hca_prefix(ctx):
    value, exact, items, _ = _hca_items(ctx)
    return [] if exact else [
        f"NCCL_IB_HCA={value}: without '=' the prefix {dev} also matches {', '.join(h for h in hits if h != dev)}; "
        f"write ={dev} for an exact match" for dev, hits in items if len(hits) > 1]


def ib_disabled(ctx):
    value = ctx.env.get("NCCL_IB_DISABLE", "0")
    if _nccl_on(ctx, "NCCL_IB_DISABLE") and ctx.multi and any(p.active for p in ctx.node.nics):
        return f"NCCL_IB_DISABLE={value} with ACTIVE RDMA ports: inter-node traffic falls back to TCP sockets"


def gid_index_wrong(ctx):
    gid = ctx.env.get("NCCL_IB_GID_INDEX", "")
    index = nccl_number(gid)  # as NCCL reads it (' 3' is 3); no number: nccl_not_a_number says so
    if index is not None and index >= 0:
        wrong = [p.name for p in ctx.node.nics if p.roce and p.active and p.roce_v2_gid_index is not None
                 and p.roce_v2_gid_index != index]
        if wrong:
            return f"NCCL_IB_GID_INDEX={gid}, but the RoCE v2 IPv4 GID of {', '.join(wrong)} is at another index"


def hsa_fine_grain(ctx):
    if ctx.env.get("HSA_FORCE_FINE_GRAIN_PCIE") == "1" and ctx.node.gpus.interconnect == "xgmi":
        return "HSA_FORCE_FINE_GRAIN_PCIE=1 is for P2P between PCIe-linked AMD GPUs; this node's GPUs use xGMI"


def port_down(ctx):
    node = ctx.node
    cloud = node.cloud
    launch_uses = ctx.multi and node.gpus.vendor != "none" and not (cloud and (cloud.efa or cloud.profile))
    ports = _rdma_ports(node)
    down = [p.name for p in ports if not p.active]
    if down and (launch_uses or ctx.audit):
        usable = len(ctx.usable) if ctx.usable is not None else sum(p.active for p in ports)
        return (f"RDMA port(s) not ACTIVE: {', '.join(down)}; NCCL skips them, so this node has {usable} usable "
                "rail(s) — check cabling/subnet manager if that is fewer than its peers")


def shm_small(ctx):
    lim = ctx.node.limits
    if lim.shm_bytes is not None and lim.shm_bytes < SHM_MIN and (ctx.node.gpus.count or ctx.nproc > 1):
        return (f"/dev/shm is {lim.shm_bytes >> 20} MiB ({lim.shm_source}): NCCL and DataLoader workers fail on "
                "Docker's 64 MB default; use --shm-size=16g / ipc: host, or an emptyDir with medium: Memory")


def memlock_limited(ctx):
    """A low RLIMIT_MEMLOCK matters only without an effective CAP_IPC_LOCK (which pins past the limit)."""
    lim = ctx.node.limits
    memlock = lim.memlock_bytes
    active = [p for p in _rdma_ports(ctx.node) if p.active]
    if memlock is None or memlock >= MEMLOCK_MIN or not active or not (ctx.multi or ctx.audit) or lim.ipc_lock:
        return None
    cap = "" if lim.ipc_lock is None else (" and this process has no effective CAP_IPC_LOCK (a capability added "
                                           "to a container whose user is not root never reaches its process)")
    return (f"RLIMIT_MEMLOCK is {memlock >> 10} KiB with {len(active)} ACTIVE RDMA port(s){cap}: RDMA needs it "
            "unlimited to register buffers (ibv_reg_mr), else NCCL falls back or aborts; raise it where the container "
            "starts: docker/podman --ulimit memlock=-1:-1, on Kubernetes the node's containerd or CRI-O "
            "(`nodeweave doctor` says how)")


def _port_level(ctx):
    """An error only when several nodes meet and no port is usable: the job falls back to sockets."""
    if ctx is None:
        return WARNING
    usable = ctx.usable if ctx.usable is not None else [p for p in _rdma_ports(ctx.node) if p.active]
    return ERROR if ctx.multi and not usable else WARNING


def _shm_level(ctx):
    shm = ctx.node.limits.shm_bytes if ctx else None
    return ERROR if shm is not None and shm < SHM_ERROR_BELOW else WARNING


RULES = (
    Rule("p2p-disabled-on-gpu-links", p2p_disabled, ERROR,
         "unset NCCL_P2P_DISABLE: NCCL picks NVLink/xGMI peer-to-peer itself"),
    Rule("socket-ifname-loopback", ifname_loopback, ERROR, "unset NCCL_SOCKET_IFNAME (the entrypoint sets the "
         "interface that routes to the master) or name an interface peers can reach"),
    Rule("socket-ifname-no-match", ifname_no_match, ERROR,
         "unset the variable (the entrypoint sets the interface toward the master) or fix its value to name an "
         "interface listed here: NCCL/Gloo find no socket interface with it"),
    Rule("socket-ifname-misses-route", ifname_misses_route, WARNING,
         "unset NCCL_SOCKET_IFNAME; the entrypoint sets =<the interface toward the master>"),
    Rule("ib-hca-empty", ib_hca_empty, WARNING,
         "unset NCCL_IB_HCA (the entrypoint then lists the ports to use) or give the exact list, =mlx5_0,mlx5_1"),
    Rule("ib-hca-unknown-device", ib_hca_unknown, ERROR,
         "fix NCCL_IB_HCA to name devices listed under /sys/class/infiniband, or unset it"),
    Rule("ib-hca-prefix", ib_hca_prefix, WARNING, "prefix the list with '=' (exact names), e.g. NCCL_IB_HCA==mlx5_0,mlx5_1"),
    Rule("ib-disabled-with-rdma", ib_disabled, ERROR,
         "unset NCCL_IB_DISABLE: inter-node traffic should use the ACTIVE RDMA ports"),
    Rule("ib-gid-index-wrong", gid_index_wrong, ERROR, "unset NCCL_IB_GID_INDEX (NCCL >= 2.21.5 finds the RoCE v2 GID) "
         "or set the index the entrypoint reports"),
    Rule("nccl-not-a-number", nccl_not_a_number, WARNING,
         "give the variable a whole number (NCCL_IB_GID_INDEX=3, NCCL_IB_DISABLE=1) or unset it: NCCL keeps its "
         "default for a value with no digits"),
    Rule("hsa-fine-grain-on-xgmi", hsa_fine_grain, WARNING, "unset HSA_FORCE_FINE_GRAIN_PCIE on xGMI nodes"),
    Rule("rdma-port-down", port_down, _port_level,
         "check the cable, the switch port and the subnet manager (ibstat, ibstatus); NCCL skips the port"),
    Rule("shm-small", shm_small, _shm_level, "give the container a larger /dev/shm: docker/podman --shm-size=16g or "
         "--ipc=host; Kubernetes: an emptyDir with medium: Memory mounted at /dev/shm"),
    Rule("memlock-limited", memlock_limited, lambda ctx: ERROR if ctx and ctx.multi else WARNING,
         "run with an unlimited locked-memory limit: --ulimit memlock=-1:-1 (docker/podman); Kubernetes has no "
         "per-pod limit, so on the GPU nodes: LimitMEMLOCK=infinity in a systemd drop-in for containerd.service "
         "(containers inherit it), or default_ulimits = [\"memlock=-1:-1\"] in crio.conf (CRI-O); then the spec "
         "needs no IPC_LOCK (security.ipc_lock: false) and the pods pass Pod Security restricted"),
)
NOTICES = (  # emitted inline by the planners (topology, policy)
    Rule("empty-variable", None, WARNING,
         "give the variable a value or leave it unset (`-e NAME=$X` with X unset, or a compose file's ${X}, sets it "
         "empty)"),
    Rule("unknown-variable", None, WARNING,
         "fix the name (a mistyped NODEWEAVE_* variable changes nothing), or unset it"),
    Rule("nodeweave-output", None, WARNING,
         "unset it where the entrypoint starts (a resume path tried by hand, an outer job's value): nodeweave sets "
         "it for the ranks itself, NODEWEAVE_RESUME_FROM only from a save node 0 judged complete (docs/recovery.md)"),
    Rule("interfaces-miss-route", None, WARNING,
         "choose the interface that routes to the master (the plan's Node section names it), or leave "
         "NODEWEAVE_INTERFACES / network.interfaces out and the entrypoint picks it"),
    Rule("script-will-not-train", None, WARNING,
         "put the training script in the working directory (nodeweave sync copies that folder to every node), "
         "and give it the training code"),
    Rule("recovery-cannot-replace", None, WARNING,
         "add a spare (NODEWEAVE_SPARES / recovery.spares 1), or let the job go on with fewer nodes "
         "(recovery.min_nodes; NODEWEAVE_NNODES MIN:MAX on the entrypoint)"),
    Rule("recovery-no-progress", None, WARNING,
         "set NODEWEAVE_CHECKPOINT_DIR (recovery.checkpoint_dir) to the folder the script saves in, or "
         "NODEWEAVE_NO_PROGRESS_RESTARTS 0 (recovery.no_progress_restarts) to go on to the restart budget"),
    Rule("interfaces-overridden", None, WARNING,
         "unset NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME where the image or the site's module sets them, or leave "
         "NODEWEAVE_INTERFACES (network.interfaces) out: one place names the interface"),
    Rule("exclude-hcas-no-effect", None, WARNING,
         "name a device or port listed under RDMA here (mlx5_1, or mlx5_1:1), or drop the excluded port from your "
         "own NCCL_IB_HCA (or unset it: nodeweave then lists the ports without it)"),
    Rule("slots-without-gpus", None, WARNING,
         "make the GPUs visible in the container (--gpus all / CDI, the device plugin's GPU limit, the driver "
         "mounted), or pass --nproc-per-node (NODEWEAVE_NPROC_PER_NODE) for CPU processes on purpose"),
    Rule("flag-overrides-source", None, WARNING,
         "drop the flag or the variable it overrides, so every node reads its rank from one place"),
    Rule("no-route-to-master", None, WARNING, "check that the master's name resolves and is routable from this node"),
    Rule("command-not-found", None, WARNING,
         "give the program's path (./train.py, executable) or a program on PATH, or run a script through "
         "launcher torchrun or its interpreter (-- python train.py)"),
    Rule("start-refused-here", None, WARNING,
         "what the line names: a start on this machine refuses it, exit 3 (or 127) before any check-in; read off "
         "the node, it says what the node itself would find"),
    Rule("loopback-master", None, WARNING,
         "give every node node 0's name or address on the network they share (MASTER_ADDR); loopback reaches a "
         "node 0 only on this same machine"),
    Rule("loopback-sockets", None, WARNING,
         "choose an interface the other nodes reach (NODEWEAVE_INTERFACES, network.interfaces), or leave the "
         "choice to nodeweave; loopback only where every node runs on this one machine"),
    Rule("master-name-loopback", None, WARNING,
         "map the host's name to its real address in /etc/hosts (not 127.0.1.1), or set NODEWEAVE_INTERFACES"),
    Rule("roce-gid-index-differs", None, WARNING, "use NCCL >= 2.21.5, which picks each port's GID itself"),
    Rule("restarts-across-nodes", None, WARNING,
         "set recovery.enabled: true (nodeweave restarts every node together as one generation) and "
         "launcher.max_restarts: 0"),
    Rule("elastic-no-restarts", None, WARNING,
         "set NODEWEAVE_MAX_RESTARTS (launcher.max_restarts) to 1 or more, or recovery.enabled: true"),
    Rule("checkpoint-dir-per-container", None, WARNING,
         "save checkpoints on storage every node mounts (a volume, or a folder inside workspace.path); a folder in "
         "/tmp is fine only where a shared volume is mounted there"),
    Rule("checkpoint-dir-unmounted", None, WARNING,
         "mount storage every node shares at the folder or above it (a volume: validate names the one to add), or "
         "save inside the workspace"),
    Rule("checkpoint-dir-access", None, WARNING,
         "make the folder the image's user's (chown -R <uid> <folder>, or run the containers as its owner), or give "
         "it read, write and search rights (chmod u+rwx, or g+rwx for a shared group)"),
    Rule("stall-watch-off", None, WARNING,
         "give stall_warn a number of seconds (default 60) to keep the stall watch and its stop, or write "
         "stall_timeout: 0 too to say that no stall is ever stopped"),
    Rule("master-port-busy", None, WARNING,
         "give the job a free master port (NODEWEAVE_MASTER_PORT, launcher.master_port), or stop what listens on it"),
    Rule("step-pattern-loose", None, WARNING,
         "write the step group as (?P<step>\\d+): node 0 reads the step as a whole number"),
    Rule("port-privileged", None, WARNING,
         "give each port node 0 listens on (master_port, exchange_port, metrics.port: NODEWEAVE_MASTER_PORT, "
         "NODEWEAVE_EXCHANGE_PORT, NODEWEAVE_METRICS_PORT) a port from 1024 to 65535"),
    Rule("job-token-twice", None, WARNING,
         "give the secret one way on every node: unset NODEWEAVE_JOB_TOKEN (a value left in the environment) "
         "and keep NODEWEAVE_JOB_TOKEN_FILE, the Secret nodeweave mounts"),
    Rule("job-token-unread", None, WARNING,
         "turn the check-in exchange on (NODEWEAVE_EXCHANGE=on, the default) for the nodes to check each other's "
         "secret, or unset NODEWEAVE_JOB_TOKEN"),
    Rule("job-token-file-readable", None, WARNING,
         "make the token file readable by its owner only (chmod 600), or mount the Secret with mode 0400"),
    Rule("derived-job-token", None, WARNING,
         "bring the nodes up with `nodeweave up` (a random token per job), or hand every node the same secret "
         "in a file and point NODEWEAVE_JOB_TOKEN_FILE at it"),
)
BY_CODE = {rule.code: rule for rule in RULES + NOTICES}
