"""Doctor's own rules: what the entrypoint does not check at every start.

Rows of the entrypoint's own type (``nodeweave.entrypoint.planning.rules.Rule``):
tuning and debugging variables left in the environment, switches that a
library version made stale (a directory scan the entrypoint avoids at
start-up), GPUs hidden by visibility variables, GPUDirect RDMA. What the
entrypoint already checks (ports down, locked memory, harmful NCCL values)
doctor gets from the plan, evaluated with ``audit`` on, never from a copy;
the GID-version rule is the entrypoint's ``library_finds_gid``. Every check
reads the entrypoint's ``Node`` and the variables, never the machine directly.
"""

from __future__ import annotations

from nodeweave.entrypoint.detection.host import rccl_version, version_at_least
from nodeweave.entrypoint.planning.policy import TUNING, library_finds_gid
from nodeweave.entrypoint.planning.rules import ERROR, GPU_LINKS, INFO, WARNING, Context, Rule, evaluate

MSCCL_SWITCHES = ("RCCL_MSCCL_ENABLE", "RCCL_MSCCL_FORCE_ENABLE", "RCCL_MSCCLPP_ENABLE")
MSCCL_GONE_ROCM = (7, 0)  # MSCCL API removed in ROCm 7.0; MSCCL++ off by default since 6.4.1
DEBUG_LEVELS_ON = ("INFO", "TRACE")
OFF = ("", "0")


def _forced(name, text):
    def check(ctx):
        value = ctx.env.get(name)
        if value is not None and value not in OFF:
            return text.format(v=value)
    return check


def _p2p_on_pcie(ctx):
    return ctx.node.gpus.count > 1 and ctx.node.gpus.interconnect not in GPU_LINKS


def nccl_debug_on(ctx):
    value = ctx.env.get("NCCL_DEBUG", "")
    if value.upper() in DEBUG_LEVELS_ON:
        return (f"NCCL_DEBUG={value} left on: every rank logs its set-up (and with TRACE every call), slowing "
                "start-up and filling logs")


def p2p_disabled(ctx):
    value = ctx.env.get("NCCL_P2P_DISABLE", "")
    if value not in OFF and _p2p_on_pcie(ctx):  # on NVLink/xGMI the entrypoint's own rule speaks
        return (f"NCCL_P2P_DISABLE={value} turns off GPU peer-to-peer; PCIe P2P is usually faster than staging "
                "through host memory")


def _judged_elsewhere(name, value, ctx):
    """Whether another row (here or the entrypoint's) speaks about this tuning variable."""
    if name in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_SHM_DISABLE"):
        return value not in OFF
    if name == "NCCL_P2P_DISABLE":
        return value not in OFF and ctx.node.gpus.count > 1
    return name in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_IB_DISABLE") or name in MSCCL_SWITCHES


def tuning_variables(ctx):
    return [f"{name}={ctx.env[name]} is a tuning/debugging variable: NCCL stops choosing it itself"
            for name in sorted(n for n in ctx.env if n in TUNING) if not _judged_elsewhere(name, ctx.env[name], ctx)]


def gid_index_stale(ctx):
    gid = ctx.env.get("NCCL_IB_GID_INDEX")
    if gid is None or ctx.node.gpus.vendor == "none":
        return None
    new, lib, version, where = library_finds_gid(ctx.node, ctx.root, ctx.env)
    if new:
        return (f"NCCL_IB_GID_INDEX={gid} with {lib} {version} ({where}): since 2.21.5 {lib} finds the RoCE v2 IPv4 "
                "GID itself, and a fixed index breaks when the GID table changes (a new address, another port)")


def _msccl(ctx):
    """(setting text, RCCL version, where, gone) when an MSCCL switch is set, else None."""
    switches = [name for name in MSCCL_SWITCHES if name in ctx.env]
    if not switches:
        return None
    version, where = rccl_version(ctx.root, ctx.env)
    gone = bool(version) and version.startswith("rocm-") and version_at_least(version[5:], MSCCL_GONE_ROCM)
    return ", ".join(f"{n}={ctx.env[n]}" for n in switches), version, where, gone


def msccl_stale(ctx):
    found = _msccl(ctx)
    if found and found[3]:
        return (f"{found[0]}: RCCL of {found[1]} ({found[2]}) no longer has MSCCL (removed in ROCm 7.0) and builds "
                "without MSCCL++, so the switch does nothing")


def msccl_kept(ctx):
    found = _msccl(ctx)
    if found and not found[3]:
        return f"{found[0]} kept; RCCL version {found[1] or 'unknown'} ({found[2]})"


def gpus_all_hidden(ctx):
    gpus = ctx.node.gpus
    if gpus.visible_env and gpus.devices and gpus.count == 0:
        return f"{gpus.visible_env} leaves none of this node's {len(gpus.devices)} GPUs visible"


def gpus_hidden(ctx):
    gpus = ctx.node.gpus
    total = len(gpus.devices)
    if gpus.visible_env and 0 < gpus.count < total:
        return (f"{gpus.visible_env} hides {total - gpus.count} of this node's {total} GPUs ({gpus.count} visible); "
                "'auto' processes per node use only the visible ones")


def gpudirect_missing(ctx):
    node = ctx.node
    active = [p for p in node.nics if p.active and not (p.driver == "efa" or p.device.startswith("efa"))]
    if active and node.gpus.vendor != "none" and not node.gpus.gpudirect_rdma:
        module = "amdkfd peer memory (/sys/kernel/mm/memory_peers/amdkfd)" if node.gpus.vendor == "amd" \
            else "nvidia_peermem (or nv_peer_mem)"
        return (f"{len(active)} ACTIVE RDMA port(s) but no GPUDirect RDMA module: {module} is not loaded, so NCCL "
                "may stage every transfer through host memory")


def cpu_only(ctx):
    if ctx.node.gpus.vendor == "none":
        return "no NVIDIA or AMD GPU found: training runs on CPU with gloo"


BENCH = "nodeweave bench --sweep {name}=a,b ranks the choices"


def _measure_first(name: str) -> str:
    """The remedy for a forced NCCL choice: a measurement on this cluster first."""
    return f"unset {name} unless a measurement on this cluster shows it helps ({BENCH.format(name=name)})"

RULES = (
    Rule("forced-algo", _forced("NCCL_ALGO", "NCCL_ALGO={v} forces the algorithm for every size and topology; NCCL's "
                                "tuner picks per size (Ring is no faster at 1 GiB on NVLink: 327 vs 325 GB/s)"),
         WARNING, _measure_first("NCCL_ALGO")),
    Rule("forced-proto", _forced("NCCL_PROTO", "NCCL_PROTO={v} forces the protocol; LL/LL128/Simple are each best at "
                                 "different sizes"),
         WARNING, _measure_first("NCCL_PROTO")),
    Rule("shm-transport-disabled", _forced("NCCL_SHM_DISABLE", "NCCL_SHM_DISABLE={v} turns off the shared-memory "
                                           "transport between processes of this node"),
         WARNING, "unset NCCL_SHM_DISABLE unless a measurement on this cluster shows it helps"),
    Rule("nccl-debug-on", nccl_debug_on, WARNING, "set NCCL_DEBUG=WARN (or unset it) outside a debugging session"),
    Rule("p2p-disabled", p2p_disabled, WARNING, "unset NCCL_P2P_DISABLE unless this platform's P2P is known broken"),
    Rule("tuning-variable", tuning_variables, INFO,
         "keep it only while an experiment needs it (nodeweave bench --sweep compares the values)"),
    Rule("ib-gid-index-stale", gid_index_stale, WARNING, "unset NCCL_IB_GID_INDEX"),
    Rule("msccl-switch-stale", msccl_stale, WARNING, "remove the MSCCL switch: it does nothing on this ROCm"),
    Rule("msccl-switch", msccl_kept, INFO, "drop the switch when moving to ROCm 7.0 or newer"),
    Rule("gpus-all-hidden", gpus_all_hidden, ERROR, "unset the visibility variable, or list GPU indices / UUIDs"),
    Rule("gpus-hidden", gpus_hidden, WARNING, "unset the visibility variable unless this container should use part "
         "of the node"),
    Rule("gpudirect-rdma-unavailable", gpudirect_missing, WARNING,
         "load it on the host (modprobe nvidia_peermem) or use NCCL's DMA-BUF path (open kernel modules, Linux >= "
         "5.12); NCCL_DEBUG=INFO shows 'GDR' per NIC. AMD: use a ROCm/kernel with amdkfd peer memory"),
    Rule("cpu-only", cpu_only, INFO, "expected on CPU nodes; on a GPU node, check that the container sees "
         "/dev/nvidia* or /dev/kfd"),
)


def own_hits(node, env, root, multi: bool):
    """Doctor's rows over this node: [(rule, message, severity)]."""
    return evaluate(RULES, Context(node, env, root, multi=multi, audit=True))
