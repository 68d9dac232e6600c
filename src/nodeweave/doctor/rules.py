"""Doctor's own rules: what the entrypoint does not check at every start.

The entrypoint warns only about what affects the launch it is making (a
multi-node run's interfaces and RDMA ports); doctor also looks at a node on
its own: tuning and debugging variables left in the environment, stale
switches that need a library version (a directory scan the entrypoint avoids
at start-up), GPUs hidden by visibility variables, GPUDirect RDMA, RDMA ports
and locked memory even for a single node. Every rule reads the entrypoint's
``Node``/``Plan``, never the machine directly.
"""

from __future__ import annotations

from nodeweave.doctor.findings import ERROR, INFO, WARNING, Finding
from nodeweave.entrypoint.detect_host import nccl_version, rccl_version, version_at_least
from nodeweave.entrypoint.policy import GID_AUTO_NCCL, GID_AUTO_ROCM, MEMLOCK_MIN, TUNING

MSCCL_SWITCHES = ("RCCL_MSCCL_ENABLE", "RCCL_MSCCL_FORCE_ENABLE", "RCCL_MSCCLPP_ENABLE")
MSCCL_GONE_ROCM = (7, 0)  # MSCCL API removed in ROCm 7.0; MSCCL++ off by default since 6.4.1
_DEBUG_LEVELS_ON = ("INFO", "TRACE")
_FORCED = {
    "NCCL_ALGO": ("forced-algo", "NCCL_ALGO={v} forces the algorithm for every size and topology; NCCL's tuner "
                  "picks per size (Ring is no faster at 1 GiB on NVLink: 327 vs 325 GB/s)"),
    "NCCL_PROTO": ("forced-proto", "NCCL_PROTO={v} forces the protocol; LL/LL128/Simple are each best at "
                   "different sizes"),
    "NCCL_SHM_DISABLE": ("shm-transport-disabled", "NCCL_SHM_DISABLE={v} turns off the shared-memory transport "
                         "between processes of this node"),
}


def _rdma_ports(node):
    return [p for p in node.nics if not (p.driver == "efa" or p.device.startswith("efa"))]


def tuning_variables(env: "dict[str, str]", node) -> "list[Finding]":
    """Debugging/tuning variables (the policy's TUNING list) left in the environment."""
    out = []
    for name in sorted(n for n in env if n in TUNING and n not in MSCCL_SWITCHES):
        value = env[name]
        if name in _FORCED and value not in ("", "0"):
            code, text = _FORCED[name]
            out.append(Finding(WARNING, code, text.format(v=value),
                               f"unset {name} unless a measurement on this cluster shows it helps "
                               f"(nodeweave bench --sweep {name}=a,b ranks the choices)"))
        elif name == "NCCL_DEBUG":
            if value.upper() in _DEBUG_LEVELS_ON:
                out.append(Finding(WARNING, "nccl-debug-on", f"NCCL_DEBUG={value} left on: every rank logs its "
                                   "set-up (and with TRACE every call), slowing start-up and filling logs",
                                   "set NCCL_DEBUG=WARN (or unset it) outside a debugging session"))
        elif name == "NCCL_P2P_DISABLE" and value not in ("", "0") and node.gpus.count > 1:
            if node.gpus.interconnect not in ("nvswitch", "nvlink", "xgmi"):  # NVLink: the plan warns
                out.append(Finding(WARNING, "p2p-disabled", f"NCCL_P2P_DISABLE={value} turns off GPU "
                                   "peer-to-peer; PCIe P2P is usually faster than staging through host memory",
                                   "unset NCCL_P2P_DISABLE unless this platform's P2P is known broken"))
        elif name not in ("NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_IB_DISABLE"):
            out.append(Finding(INFO, "tuning-variable", f"{name}={value} is a tuning/debugging variable: "
                               "NCCL stops choosing it itself",
                               f"keep {name} only while an experiment needs it"))
    return out


def stale_switches(env: "dict[str, str]", node, root, graded_codes: "set[str]") -> "list[Finding]":
    """Switches a newer NCCL/RCCL does by itself or no longer has."""
    out = []
    gid = env.get("NCCL_IB_GID_INDEX")
    if gid is not None and "ib-gid-index-wrong" not in graded_codes and node.gpus.vendor != "none":
        if node.gpus.vendor == "amd":
            version, where = rccl_version(root, env)
            new = version_at_least(version[5:], GID_AUTO_ROCM) if version and version.startswith("rocm-") \
                else version_at_least(version, GID_AUTO_NCCL)
            lib = "RCCL"
        else:
            version, where = nccl_version(root, env)
            new, lib = version_at_least(version, GID_AUTO_NCCL), "NCCL"
        if new:
            out.append(Finding(WARNING, "ib-gid-index-stale",
                               f"NCCL_IB_GID_INDEX={gid} with {lib} {version} ({where}): since 2.21.5 "
                               f"{lib} finds the RoCE v2 IPv4 GID itself, and a fixed index breaks when the "
                               "GID table changes (a new address, another port)",
                               "unset NCCL_IB_GID_INDEX"))
    switches = [name for name in MSCCL_SWITCHES if name in env]
    if switches:
        version, where = rccl_version(root, env)
        gone = bool(version) and version.startswith("rocm-") and version_at_least(version[5:], MSCCL_GONE_ROCM)
        setting = ", ".join(f"{n}={env[n]}" for n in switches)
        if gone:
            out.append(Finding(WARNING, "msccl-switch-stale", f"{setting}: RCCL of {version} ({where}) no longer "
                               "has MSCCL (removed in ROCm 7.0) and builds without MSCCL++, so the switch does "
                               "nothing", f"remove {', '.join(switches)}"))
        else:
            out.append(Finding(INFO, "msccl-switch", f"{setting} kept; RCCL version {version or 'unknown'} "
                               f"({where})", "drop the switch when moving to ROCm 7.0 or newer"))
    return out


def visibility(node) -> "list[Finding]":
    gpus = node.gpus
    if not gpus.visible_env or not gpus.devices:
        return []
    name, total = gpus.visible_env, len(gpus.devices)
    out = []
    if gpus.count == 0:
        out.append(Finding(ERROR, "gpus-all-hidden", f"{name} leaves none of this node's {total} GPUs visible",
                           f"unset {name}, or list GPU indices 0..{total - 1} / UUIDs"))
    elif gpus.count < total:
        out.append(Finding(WARNING, "gpus-hidden", f"{name} hides {total - gpus.count} of this node's {total} "
                           f"GPUs ({gpus.count} visible); 'auto' processes per node use only the visible ones",
                           f"unset {name} unless this container should use part of the node"))
    return out


def rdma(node, multi: bool) -> "list[Finding]":
    """GPUDirect RDMA, ports that are down, and locked memory, wherever RDMA ports exist."""
    ports = _rdma_ports(node)
    if not ports:
        return []
    out = []
    active = [p for p in ports if p.active]
    down = [p.name for p in ports if not p.active]
    if down:
        out.append(Finding(ERROR if not active and multi else WARNING, "rdma-port-down",
                           f"RDMA port(s) not ACTIVE: {', '.join(down)} ({len(active)} of {len(ports)} active)",
                           "check the cable, the switch port and the subnet manager (ibstat); NCCL skips the port"))
    if active and node.gpus.vendor != "none" and not node.gpus.gpudirect_rdma:
        module = "amdkfd peer memory (/sys/kernel/mm/memory_peers/amdkfd)" if node.gpus.vendor == "amd" \
            else "nvidia_peermem (or nv_peer_mem)"
        out.append(Finding(WARNING, "gpudirect-rdma-unavailable",
                           f"{len(active)} ACTIVE RDMA port(s) but no GPUDirect RDMA module: {module} is not "
                           "loaded, so NCCL may stage every transfer through host memory",
                           "load it on the host (modprobe nvidia_peermem) or use NCCL's DMA-BUF path "
                           "(open kernel modules, Linux >= 5.12); NCCL_DEBUG=INFO shows 'GDR' per NIC"
                           if node.gpus.vendor == "nvidia" else "use a ROCm/kernel with amdkfd peer memory"))
    memlock = node.limits.memlock_bytes if node.limits else None
    if active and memlock is not None and memlock < MEMLOCK_MIN:
        out.append(Finding(ERROR if multi else WARNING, "memlock-limited",
                           f"RLIMIT_MEMLOCK is {memlock >> 10} KiB with {len(active)} ACTIVE RDMA port(s): "
                           "registering GPU/host buffers fails (ibv_reg_mr), NCCL falls back or aborts",
                           "run with --ulimit memlock=-1:-1 (docker/podman) or LimitMEMLOCK=infinity"))
    return out


def own_findings(node, env: "dict[str, str]", root, multi: bool, graded_codes: "set[str]") -> "list[Finding]":
    out = tuning_variables(env, node) + stale_switches(env, node, root, graded_codes)
    out += visibility(node) + rdma(node, multi)
    if node.gpus.vendor == "none":
        out.append(Finding(INFO, "cpu-only", "no NVIDIA or AMD GPU found: training runs on CPU with gloo",
                           "expected on CPU nodes; on a GPU node, check that the container sees /dev/nvidia* "
                           "or /dev/kfd"))
    return out
