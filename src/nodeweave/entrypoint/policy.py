"""NCCL/RCCL environment policy (FACTS.md §3): set only what NCCL cannot get right.

What nodeweave sets, and only when it applies:
- ``NCCL_SOCKET_IFNAME=<iface>`` / ``GLOO_SOCKET_IFNAME=<iface>``: the interface
  that routes to the master (multi-node only); NCCL may otherwise pick an UP
  interface that cannot reach peers. Gloo takes plain names, NCCL ``=`` exact.
- ``NCCL_IB_HCA``: only to drop ports NCCL would otherwise use (user exclusions,
  RoCE ports with no netdev/IPv4 GID in this namespace, a second fabric, ports
  far slower than the rails), always with ``=`` (``mlx5_1`` also matches ``mlx5_10``).
- ``NCCL_IB_GID_INDEX``: only for NCCL/RCCL older than 2.21.5, which cannot find
  the RoCE v2 IPv4 GID themselves.
- ``NCCL_IB_DISABLE=1``: only when RDMA ports exist but none is usable here.
- ``NCCL_TOPO_FILE`` on Azure ND; nothing on AWS EFA (aws-ofi-nccl) or with GCP's
  profile (sourced before the launcher).
- ``OMP_NUM_THREADS``: usable CPUs / processes, where torchrun would force 1.

Never NCCL's debugging variables. A variable the user set wins and is listed
as kept; values known to hurt are warned about.
"""

from .detect_host import nccl_version, rccl_version, version_at_least
from .model import EnvVar, warn

GID_AUTO_NCCL = (2, 21, 5)
GID_AUTO_ROCM = (6, 3)
SHM_MIN = 1 << 30
MEMLOCK_MIN = 1 << 30
# Variables NCCL's documentation lists as debugging/tuning: kept when the user sets them, never set.
TUNING = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE",
          "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_IB_DISABLE", "NCCL_BUFFSIZE",
          "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS", "NCCL_CROSS_NIC",
          "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_NVLS_ENABLE", "NCCL_IB_QPS_PER_CONNECTION",
          "RCCL_THREADS_PER_BLOCK", "RCCL_MSCCL_ENABLE", "RCCL_MSCCLPP_ENABLE")
USER_PREFIXES = ("NCCL_", "RCCL_", "GLOO_", "HSA_", "TORCH_NCCL_", "OMP_NUM_THREADS", "UCX_", "FI_")
NOT_SETTINGS = ("NCCL_VERSION",)  # NVIDIA's CUDA images export it as information, not configuration


def _set(out, name, value, reason, source="policy"):
    out.append(EnvVar(name=name, value=str(value), action="set", source=source, reason=reason))


def plan_env(node, topo, settings, root, warnings=None):
    """[EnvVar]: what nodeweave sets plus the user's own variables, kept."""
    env = settings.env
    warnings = warnings if warnings is not None else []
    out = []
    for name in sorted(env):
        if name.startswith(USER_PREFIXES) and name not in NOT_SETTINGS:
            kind = "debugging/tuning variable: NCCL stops choosing it itself" if name in TUNING else "your value"
            out.append(EnvVar(name=name, value=env[name], action="kept", source="user", reason=kind))
    multi = topo.nnodes_max > 1
    gpus = node.gpus
    cloud = node.cloud
    profile = cloud.profile if cloud else None
    _socket_ifname(node, topo, settings, env, out, warnings, multi, profile)
    if gpus.vendor != "none" and multi and not profile and not (cloud and cloud.efa):
        _rdma(node, settings, env, root, out, warnings)
    if cloud and cloud.efa:
        topo.notes.append("AWS EFA: aws-ofi-nccl sets its own defaults; nodeweave exports no NCCL tuning")
    if profile:
        topo.notes.append(f"GCP GPUDirect-TCPX(O): {profile} is sourced before the launcher; nodeweave sets no NCCL_* itself")
    if cloud and cloud.topo_file and "NCCL_TOPO_FILE" not in env and gpus.vendor == "nvidia":
        _set(out, "NCCL_TOPO_FILE", cloud.topo_file, "Azure ND: NCCL needs the VM's real PCI/NUMA topology")
    nproc = topo.nproc_per_node.value
    cpus = node.limits.cpus
    if "OMP_NUM_THREADS" not in env and nproc > 1 and cpus:
        _set(out, "OMP_NUM_THREADS", max(1, cpus // nproc),
             f"{cpus} usable CPUs ({node.limits.cpus_source}) / {nproc} processes; torchrun would force 1")
    _warn_user_values(node, topo, env, warnings, multi)
    _warn_limits(node, topo, warnings, multi)
    return out


def _socket_ifname(node, topo, settings, env, out, warnings, multi, profile):
    if not multi:
        return
    chosen = settings.get("interfaces") or []
    if chosen:
        reason, source = f"chosen by {settings.source('interfaces')}", "nodeweave.yaml"
    elif node.interface == "lo":
        topo.notes.append("master is on this host (loopback): every node runs here; NCCL's own interface choice works")
        return
    elif node.interface:
        chosen, reason, source = [node.interface], node.interface_reason or "routes to the master", "policy"
    else:
        warn(warnings, "no-route-to-master", f"no interface found toward the master {topo.master_addr.value} "
                        f"({node.interface_reason}); NCCL and Gloo choose their own")
        return
    if "NCCL_SOCKET_IFNAME" not in env and not profile:
        _set(out, "NCCL_SOCKET_IFNAME", ",".join("=" + i for i in chosen), reason, source)
    if "GLOO_SOCKET_IFNAME" not in env:
        _set(out, "GLOO_SOCKET_IFNAME", ",".join(chosen), reason, source)


def _hca_item(port, ports):
    multi_port = sum(1 for p in ports if p.device == port.device) > 1
    return f"{port.device}:{port.port}" if multi_port else port.device


def _rdma(node, settings, env, root, out, warnings):
    ports = [p for p in node.nics if not (p.driver == "efa" or p.device.startswith("efa"))]
    if not ports:
        return
    excluded = set(settings.get("exclude_hcas") or ())
    usable, dropped = [], []
    for p in ports:
        if not p.active:
            continue  # NCCL skips ports that are not ACTIVE by itself
        if p.device in excluded or p.name in excluded:
            dropped.append((p, f"excluded by {settings.source('exclude_hcas')}"))
        elif p.roce and not p.netdev:
            dropped.append((p, "RoCE port whose netdev is not in this network namespace"))
        elif p.roce and p.roce_v2_gid_index is None:
            dropped.append((p, "RoCE port without an IPv4 RoCE v2 GID"))
        else:
            usable.append(p)
    layers = {}
    for p in usable:
        layers[p.link_layer] = layers.get(p.link_layer, 0) + (p.rate_gbps or 0)
    if len(layers) > 1:
        keep = max(layers, key=lambda k: layers[k])
        for p in [p for p in usable if p.link_layer != keep]:
            dropped.append((p, f"{p.link_layer} port beside the {keep} fabric (storage/management)"))
        usable = [p for p in usable if p.link_layer == keep]
    top = max((p.rate_gbps or 0) for p in usable) if usable else 0
    slow = [p for p in usable if p.rate_gbps and p.rate_gbps * 2 <= top]
    for p in slow:
        dropped.append((p, f"{p.rate_gbps} Gb/s beside {top} Gb/s rails (storage/management)"))
    usable = [p for p in usable if p not in slow]
    down = [p.name for p in ports if not p.active]
    if down:
        warn(warnings, "rdma-port-down", f"RDMA port(s) not ACTIVE: {', '.join(down)}; NCCL skips them, so this node has "
                        f"{len(usable)} usable rail(s) — check cabling/subnet manager if that is fewer than its peers")
    if "NCCL_IB_HCA" not in env and dropped:
        grouped = {}
        for p, r in dropped:
            grouped.setdefault(r, []).append(_hca_item(p, ports))
        why = "; ".join(f"{', '.join(names)}: {r}" for r, names in grouped.items())
        if usable:
            include = "=" + ",".join(_hca_item(p, ports) for p in usable)
            exclude = "^=" + ",".join(_hca_item(p, ports) for p, _ in dropped)
            value = include if len(include) <= len(exclude) else exclude
            _set(out, "NCCL_IB_HCA", value, f"keeps NCCL off {len(dropped)} port(s) — {why}")
        elif "NCCL_IB_DISABLE" not in env:
            _set(out, "NCCL_IB_DISABLE", 1, f"no RDMA port is usable here — {why}")
    roce = [p for p in usable if p.roce]
    if roce and "NCCL_IB_GID_INDEX" not in env:
        _gid_index(node, roce, env, root, out, warnings)


def _gid_index(node, roce, env, root, out, warnings):
    if node.gpus.vendor == "amd":
        version, where = rccl_version(root, env)
        node.libraries["rccl"] = version
        if version and version.startswith("rocm-"):
            new = version_at_least(version[5:], GID_AUTO_ROCM)
        else:
            new = version_at_least(version, GID_AUTO_NCCL)
        lib = "RCCL"
    else:
        version, where = nccl_version(root, env)
        node.libraries["nccl"] = version
        new = version_at_least(version, GID_AUTO_NCCL)
        lib = "NCCL"
    if new:
        return  # NCCL/RCCL >= 2.21.5 picks the RoCE v2 IPv4 GID itself
    indices = {}
    for p in roce:
        indices.setdefault(p.roce_v2_gid_index, []).append(p.name)
    index = max(indices, key=lambda k: len(indices[k]))
    if len(indices) > 1:
        warn(warnings, "roce-gid-index-differs", "RoCE v2 IPv4 GID index differs between ports: "
                        + "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(indices.items()))
                        + f"; NCCL_IB_GID_INDEX={index} fits only some")
    state = f"{lib} {version} ({where}) is older than 2.21.5" if version else f"{lib} version not found, so it may predate 2.21.5"
    _set(out, "NCCL_IB_GID_INDEX", index,
         f"{state} and cannot pick the GID itself; {index} is the lowest RoCE v2 IPv4-mapped GID "
         f"on {', '.join(indices[index])}")


def _tokens(value):
    text = value.strip()
    exclude = text.startswith("^")
    text = text.lstrip("^")
    exact = text.startswith("=")
    return exclude, exact, [t for t in text.lstrip("=").split(",") if t]


def _warn_user_values(node, topo, env, warnings, multi):
    gpus = node.gpus
    if env.get("NCCL_P2P_DISABLE", "0") not in ("0", "") and gpus.interconnect in ("nvswitch", "nvlink", "xgmi"):
        warn(warnings, "p2p-disabled-on-gpu-links", f"NCCL_P2P_DISABLE={env['NCCL_P2P_DISABLE']} on a {gpus.interconnect} node turns off "
                        "GPU peer-to-peer: all-reduce measured 12x slower (27.5 vs 325 GB/s); unset it")
    ifname = env.get("NCCL_SOCKET_IFNAME")
    names = [i.name for i in node.interfaces]
    if ifname and multi and node.interface != "lo":
        exclude, exact, items = _tokens(ifname)
        matches = [n for n in names if any((n == t) if exact else n.startswith(t) for t in items)]
        if exclude:
            matches = [n for n in names if n not in matches]
        if not exclude and items and all(t in ("lo", "lo0") for t in items):
            warn(warnings, "socket-ifname-loopback", f"NCCL_SOCKET_IFNAME={ifname} with {topo.nnodes.value} nodes: loopback cannot reach other nodes")
        elif names and not matches:
            warn(warnings, "socket-ifname-no-match", f"NCCL_SOCKET_IFNAME={ifname} matches no interface here ({', '.join(names)})")
        elif node.interface and node.interface not in matches:
            warn(warnings, "socket-ifname-misses-route", f"NCCL_SOCKET_IFNAME={ifname} leaves out {node.interface}, the interface that routes to the master")
    hca = env.get("NCCL_IB_HCA")
    devices = sorted({p.device for p in node.nics})
    if hca and devices:
        exclude, exact, items = _tokens(hca)
        for item in items:
            dev = item.split(":")[0]
            hits = [d for d in devices if (d == dev if exact else d.startswith(dev))]
            if not hits:
                warn(warnings, "ib-hca-unknown-device", f"NCCL_IB_HCA={hca}: {dev} is not an RDMA device here ({', '.join(devices)})")
            elif not exact and len(hits) > 1:
                warn(warnings, "ib-hca-prefix", f"NCCL_IB_HCA={hca}: without '=' the prefix {dev} also matches "
                                f"{', '.join(h for h in hits if h != dev)}; write ={dev} for an exact match")
    if env.get("NCCL_IB_DISABLE", "0") not in ("0", "") and multi and any(p.active for p in node.nics):
        warn(warnings, "ib-disabled-with-rdma", f"NCCL_IB_DISABLE={env['NCCL_IB_DISABLE']} with ACTIVE RDMA ports: inter-node traffic falls back to TCP sockets")
    gid = env.get("NCCL_IB_GID_INDEX")
    if gid and gid.lstrip("-").isdigit() and int(gid) >= 0:
        wrong = [p.name for p in node.nics if p.roce and p.active and p.roce_v2_gid_index is not None
                 and p.roce_v2_gid_index != int(gid)]
        if wrong:
            warn(warnings, "ib-gid-index-wrong", f"NCCL_IB_GID_INDEX={gid}, but the RoCE v2 IPv4 GID of {', '.join(wrong)} is at another index")
    if env.get("HSA_FORCE_FINE_GRAIN_PCIE") == "1" and gpus.interconnect == "xgmi":
        warn(warnings, "hsa-fine-grain-on-xgmi", "HSA_FORCE_FINE_GRAIN_PCIE=1 is for P2P between PCIe-linked AMD GPUs; this node's GPUs use xGMI")
    for name in ("RCCL_MSCCL_ENABLE", "RCCL_MSCCLPP_ENABLE"):
        if name in env:
            topo.notes.append(f"{name} kept: MSCCL/MSCCL++ switches depend on the RCCL version "
                              "(RCCL 2.27.3 / ROCm 7.1 builds without MSCCL++ by default)")


def _warn_limits(node, topo, warnings, multi):
    lim = node.limits
    if lim.shm_bytes is not None and lim.shm_bytes < SHM_MIN and (node.gpus.count or topo.nproc_per_node.value > 1):
        warn(warnings, "shm-small", f"/dev/shm is {lim.shm_bytes >> 20} MiB ({lim.shm_source}): NCCL and DataLoader workers "
                        "fail on Docker's 64 MB default; use --shm-size=16g / ipc: host, or an emptyDir with medium: Memory")
    if lim.memlock_bytes is not None and lim.memlock_bytes < MEMLOCK_MIN and multi and any(p.active for p in node.nics):
        warn(warnings, "memlock-limited", f"RLIMIT_MEMLOCK is {lim.memlock_bytes >> 10} KiB: RDMA needs it unlimited "
                        "(--ulimit memlock=-1, or the runtime's default limits)")
