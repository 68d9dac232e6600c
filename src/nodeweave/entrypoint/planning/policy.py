"""NCCL/RCCL environment policy (FACTS.md §3): set only what NCCL cannot get right.

What nodeweave sets, and only when it applies:
- ``NCCL_SOCKET_IFNAME=<iface>`` / ``GLOO_SOCKET_IFNAME=<iface>``: the interface
  that routes to the master (multi-node only); NCCL may otherwise pick an UP
  interface that cannot reach peers. Gloo takes plain names, NCCL ``=`` exact.
- ``NCCL_IB_HCA``: only to keep NCCL off ports it would otherwise use (user
  exclusions, RoCE ports with no netdev/IPv4 GID in this namespace, a second
  fabric, ports far slower than the rails), and then always the exact list of
  the ports NCCL should use, ``=dev,...`` (``mlx5_1`` alone also matches
  ``mlx5_10``), never an exclusion list: ``^=`` would let in any device nobody
  reviewed (a VF hot-plugged later, another pod's shared-mode device).
- ``NCCL_IB_GID_INDEX``: only for NCCL/RCCL older than 2.21.5, which cannot find
  the RoCE v2 IPv4 GID themselves.
- ``NCCL_IB_DISABLE=1``: only when RDMA ports exist but none is usable here.
- ``NCCL_TOPO_FILE`` on Azure ND; nothing on AWS EFA (aws-ofi-nccl) or with GCP's
  profile (sourced before the launcher).
- ``OMP_NUM_THREADS``: usable CPUs / processes, where torchrun would force 1.

Never NCCL's debugging variables. A variable the user set wins and is listed
as kept; values known to hurt are warned about by the rows of :mod:`rules`.
"""

from ..detection.host import nccl_version, rccl_version, version_at_least
from ..model import EnvVar
from .rules import RULES, Context, _tokens, emit, warn_all

GID_AUTO_NCCL = (2, 21, 5)
GID_AUTO_ROCM = (6, 3)
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


def plan_env(node, topo, settings, root, warnings=None, audit=False):
    """[EnvVar]: what nodeweave sets plus the user's own variables, kept.

    ``audit`` (doctor) also warns about what this launch would not touch
    (locked memory and ports that are down on a single node).
    """
    env = settings.env
    warnings = warnings if warnings is not None else []
    out = []
    for name in sorted(env):
        if name.startswith(USER_PREFIXES) and name not in NOT_SETTINGS:
            kind = "debugging/tuning variable: NCCL stops choosing it itself" if name in TUNING else "your value"
            out.append(EnvVar(name=name, value=env[name], action="kept", source="user", reason=kind))
    multi = topo.nnodes_max > 1
    cloud = node.cloud
    profile = cloud.profile if cloud else None
    usable, dropped = classify_ports(node, settings)
    for line in exclusion_without_effect(node, settings):
        emit(warnings, "exclude-hcas-no-effect", line)
    _socket_ifname(node, topo, settings, env, out, warnings, multi, profile)
    if node.gpus.vendor != "none" and multi and not profile and not (cloud and cloud.efa):
        _rdma(node, usable, dropped, env, root, out, warnings)
    if cloud and cloud.efa:
        topo.notes.append("AWS EFA: aws-ofi-nccl sets its own defaults; nodeweave exports no NCCL tuning")
    if profile:
        topo.notes.append(f"GCP GPUDirect-TCPX(O): {profile} is sourced before the launcher; nodeweave sets no NCCL_* itself")
    if cloud and cloud.topo_file and "NCCL_TOPO_FILE" not in env and node.gpus.vendor == "nvidia":
        _set(out, "NCCL_TOPO_FILE", cloud.topo_file, "Azure ND: NCCL needs the VM's real PCI/NUMA topology")
    nproc = topo.nproc_per_node.value
    cpus = node.limits.cpus
    if "OMP_NUM_THREADS" not in env and nproc > 1 and cpus:
        _set(out, "OMP_NUM_THREADS", max(1, cpus // nproc),
             f"{cpus} usable CPUs ({node.limits.cpus_source}) / {nproc} processes; torchrun would force 1")
    ctx = Context(node, env, root, multi=multi, nnodes=topo.nnodes.value, nproc=nproc, usable=usable, audit=audit)
    warn_all(RULES, ctx, warnings)
    for name in ("RCCL_MSCCL_ENABLE", "RCCL_MSCCLPP_ENABLE"):
        if name in env:
            topo.notes.append(f"{name} kept: MSCCL/MSCCL++ switches depend on the RCCL version "
                              "(RCCL 2.27.3 / ROCm 7.1 builds without MSCCL++ by default)")
    return out


def _socket_ifname(node, topo, settings, env, out, warnings, multi, profile):
    if not multi:
        return
    chosen = settings.get("interfaces") or []
    if chosen:
        reason, source = f"chosen by {settings.source('interfaces')}", "nodeweave.yaml"
        for line in chosen_interface_problems(node, chosen, settings.source("interfaces"), topo):
            emit(warnings, "interfaces-miss-route", line)
        overridden = [f"{name}={env[name]}" for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
                      if name in env and not _names_the_same(env[name], chosen, exact=name.startswith("GLOO"))]
        if overridden:  # kept as the user's own value: nodeweave's own setting then does nothing there (walk8 B34)
            emit(warnings, "interfaces-overridden", f"{settings.source('interfaces')}={','.join(chosen)} is not "
                 f"applied: {' and '.join(overridden)}, set in the environment, override{'s' if len(overridden) == 1 else ''}"
                 " it; which one? unset the library variable, or leave "
                 f"{settings.source('interfaces')} out")
    elif node.interface == "lo":
        from .consistency import HERE_BY_LOOPBACK

        if not any(HERE_BY_LOOPBACK in note for note in topo.notes):
            topo.notes.append("master is on this host (loopback): every node runs here; NCCL's own interface "
                              "choice works")  # not where a node name may be another machine (check_reachable_sockets)
        return
    elif node.interface:
        chosen, reason, source = [node.interface], node.interface_reason or "routes to the master", "policy"
    else:
        emit(warnings, "no-route-to-master", f"no interface found toward the master {topo.master_addr.value} "
             f"({node.interface_reason}); NCCL and Gloo choose their own")
        return
    if "NCCL_SOCKET_IFNAME" not in env and not profile:
        _set(out, "NCCL_SOCKET_IFNAME", ",".join("=" + i for i in chosen), reason, source)
    if "GLOO_SOCKET_IFNAME" not in env:
        _set(out, "GLOO_SOCKET_IFNAME", ",".join(chosen), reason, source)


def _names_the_same(value, chosen, exact):
    """Whether a library's interface variable (NCCL: prefixes, ``=`` exact, ``^`` excludes; Gloo: exact names)
    selects the interfaces ``chosen`` names."""
    items = [item for item in value.lstrip("^").lstrip("=").split(",") if item]
    if value.startswith("^") or not items:
        return False
    if exact or value.startswith("="):
        return sorted(items) == sorted(chosen)
    return all(any(name.startswith(item) for item in items) for name in chosen) and \
        all(any(name.startswith(item) for name in chosen) for item in items)


DOCKER_BRIDGE = "172.17.0.1"  # docker0's default address: the same on every host that runs Docker


def chosen_interface_problems(node, chosen, source, topo=None):
    """Why interfaces chosen by hand would not carry the job (walk7 B25: a down docker0 passed): one that is down,
    one whose address is Docker's default bridge (the same on every host, so every node would advertise it), and
    a choice that leaves out the interface the kernel routes to the master by. A loopback choice has its own rule
    (``consistency.check_reachable_sockets``)."""
    said = []
    given = f"{source}={','.join(chosen)}"
    by_name = {iface.name: iface for iface in node.interfaces}
    for name in chosen:
        iface = by_name.get(name)
        if iface is None or iface.kind == "loopback":
            continue
        if iface.operstate == "down":
            said.append(f"{given}: {name} is down: no traffic passes it")
        if DOCKER_BRIDGE in (iface.ipv4 or []):
            said.append(f"{given}: {name}'s address {DOCKER_BRIDGE} is Docker's default bridge address, the same "
                        "on every host: every node would advertise it")
    route = node.interface
    master = topo.master_addr.value if topo is not None and topo.master_addr is not None else None
    if route and route != "lo" and route not in chosen:
        said.append(f"{given} leaves out {route}, the interface the kernel routes to the master"
                    + (f" {master}" if master else "") + " by")
    return said


def _hca_item(port, ports):
    multi_port = sum(1 for p in ports if p.device == port.device) > 1
    return f"{port.device}:{port.port}" if multi_port else port.device


def classify_ports(node, settings):
    """(usable, [(port, why dropped)]) of the ACTIVE RDMA ports (EFA aside): which ones NCCL should use.

    Dropped: ports the user excludes, RoCE ports whose netdev is not in this
    namespace or that have no IPv4 RoCE v2 GID, ports of a second fabric, and
    ports at half the rails' rate or less. Ports that are not ACTIVE NCCL
    skips by itself.
    """
    excluded = set(settings.get("exclude_hcas") or ())
    usable, dropped = [], []
    for p in node.nics:
        if not p.active or p.driver == "efa" or p.device.startswith("efa"):
            continue
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
        dropped += [(p, f"{p.link_layer} port beside the {keep} fabric (storage/management)")
                    for p in usable if p.link_layer != keep]
        usable = [p for p in usable if p.link_layer == keep]
    top = max((p.rate_gbps or 0) for p in usable) if usable else 0
    slow = [p for p in usable if p.rate_gbps and p.rate_gbps * 2 <= top]
    dropped += [(p, f"{p.rate_gbps} Gb/s beside {top} Gb/s rails (storage/management)") for p in slow]
    return [p for p in usable if p not in slow], dropped


def exclusion_without_effect(node, settings):
    """Why the user's HCA exclusion excludes nothing NCCL would use (walk7 B22): an item naming no RDMA device or
    port here (the storage fabric mistyped: NCCL then uses it), or the user's own NCCL_IB_HCA admitting an
    excluded port (NCCL reads only NCCL_IB_HCA; the exclusion works by nodeweave setting it)."""
    excluded = list(settings.get("exclude_hcas") or ())
    if not excluded or not node.nics:
        return []
    source = settings.source("exclude_hcas")
    devices = sorted({p.device for p in node.nics})
    names = sorted(p.name for p in node.nics)
    said = [f"{source}: {item} is not an RDMA " + (f"port here ({', '.join(names)})" if ":" in item else
                                                  f"device here ({', '.join(devices)})")
            + ": it excludes nothing" for item in excluded if item not in devices and item not in names]
    chosen = settings.env.get("NCCL_IB_HCA")
    if chosen is not None and chosen.strip():
        admitted = [p.name for p in node.nics if (p.device in excluded or p.name in excluded) and _admits(chosen, p)]
        if admitted:
            said.append(f"NCCL_IB_HCA={chosen} includes {', '.join(admitted)}, which {source} excludes: NCCL reads "
                        "only NCCL_IB_HCA, so the exclusion does nothing (drop the port from NCCL_IB_HCA, or unset "
                        "it and nodeweave lists the ports without the excluded ones)")
    return said


def _admits(value, port):
    """Whether NCCL_IB_HCA=``value`` lets NCCL use ``port`` (prefixes unless '=', '^' excludes, ``dev:port``)."""
    exclude, exact, items = _tokens(value)
    named = False
    for item in items:
        device, _, number = item.partition(":")
        if (port.device == device if exact else port.device.startswith(device)) and number in ("", str(port.port)):
            named = True
    return named != exclude


def _rdma(node, usable, dropped, env, root, out, warnings):
    ports = node.nics
    if "NCCL_IB_HCA" not in env and dropped:
        grouped = {}
        for p, r in dropped:
            grouped.setdefault(r, []).append(_hca_item(p, ports))
        why = "; ".join(f"{', '.join(names)}: {r}" for r, names in grouped.items())
        if usable:
            _set(out, "NCCL_IB_HCA", "=" + ",".join(_hca_item(p, ports) for p in usable),
                 f"exactly the {len(usable)} port(s) NCCL should use; keeps it off {len(dropped)} — {why}")
        elif "NCCL_IB_DISABLE" not in env:
            _set(out, "NCCL_IB_DISABLE", 1, f"no RDMA port is usable here — {why}")
    roce = [p for p in usable if p.roce]
    if roce and "NCCL_IB_GID_INDEX" not in env:
        _gid_index(node, roce, env, root, out, warnings)


def library_finds_gid(node, root, env):
    """(finds it itself, library, version, where): NCCL/RCCL >= 2.21.5 (ROCm >= 6.3) pick the RoCE v2 GID.

    The one place this version rule lives: the policy sets NCCL_IB_GID_INDEX
    only for older libraries, and doctor calls a user's fixed index stale for
    newer ones. The version found is kept in ``node.libraries``.
    """
    if node.gpus.vendor == "amd":
        version, where = rccl_version(root, env)
        node.libraries["rccl"] = version
        if version and version.startswith("rocm-"):
            return version_at_least(version[5:], GID_AUTO_ROCM), "RCCL", version, where
        return version_at_least(version, GID_AUTO_NCCL), "RCCL", version, where
    version, where = nccl_version(root, env)
    node.libraries["nccl"] = version
    return version_at_least(version, GID_AUTO_NCCL), "NCCL", version, where


def _gid_index(node, roce, env, root, out, warnings):
    new, lib, version, where = library_finds_gid(node, root, env)
    if new:
        return  # NCCL/RCCL >= 2.21.5 picks the RoCE v2 IPv4 GID itself
    indices = {}
    for p in roce:
        indices.setdefault(p.roce_v2_gid_index, []).append(p.name)
    index = max(indices, key=lambda k: len(indices[k]))
    if len(indices) > 1:
        emit(warnings, "roce-gid-index-differs", "RoCE v2 IPv4 GID index differs between ports: "
             + "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(indices.items()))
             + f"; NCCL_IB_GID_INDEX={index} fits only some")
    state = f"{lib} {version} ({where}) is older than 2.21.5" if version else f"{lib} version not found, so it may predate 2.21.5"
    _set(out, "NCCL_IB_GID_INDEX", index,
         f"{state} and cannot pick the GID itself; {index} is the lowest RoCE v2 IPv4-mapped GID "
         f"on {', '.join(indices[index])}")
