"""The verdict: which node or link is more than X% below the median of its peers, and why.

Pure and stdlib only: the worker uses :func:`peers.to_repeat` to decide what to
measure again before anything is named, the workstation uses
:func:`findings` on the finished document. A measured figure is the
compared pass by pass: every subject is measured in every pass, and its
figure over the median of the others' in the same pass, taken over several
passes (never one sample), is what crosses the line or not; a node's peers are the other
nodes, a link's the other links. Facts (a CPU limit, /dev/shm, memlock,
the interface's speed and MTU, RDMA ports, GPU health counters) are
exact and compared as they are.
"""

from __future__ import annotations

import statistics
from typing import List, Optional

from nodeweave.check.expected import expected_for
from nodeweave.check.links import link_findings
from nodeweave.check.metrics import METRICS, fmt_value
from nodeweave.check.peers import Finding, best, below, confirmed, median, pass_ratios, peer_reference

DEFAULT_THRESHOLD = 0.25  # named when more than 25% below the median of its peers
GPU_FLOOR = {"gpu_tflops": 0.5, "gpu_mem_gbps": 0.6}  # fraction of the datasheet figure below which a GPU is named
DISK_FLOOR = 5 << 30  # bytes free under the workspace below which a node is named


def node_value(node: dict, metric: str) -> Optional[float]:
    if metric in node.get("samples", {}):
        return best(node["samples"][metric])
    value = node.get("facts", {}).get(metric)
    if value is None and METRICS[metric].none_is_unlimited:
        return float("inf")
    return value


def _measured_findings(nodes: List[dict], metric: str, threshold: float) -> List[Finding]:
    meta = METRICS[metric]
    series = {n["node"]: n["samples"][metric] for n in nodes if n.get("samples", {}).get(metric)}
    out = []
    for index, ratio in sorted(pass_ratios(series).items()):
        value = best(series[index])
        reference = median([best(v) for k, v in series.items() if k != index])
        if not confirmed(ratio, value, reference, threshold):
            continue
        out.append(Finding(f"node-{index}", metric, f"{meta.label} {100 * (1 - ratio):.0f}% below its peers "
                           f"(median of {len(series[index])} interleaved passes; best {fmt_value(metric, value)} vs "
                           f"{fmt_value(metric, reference)}): {meta.cause}", node=index, value=value,
                           reference=reference))
    return out


def node_findings(nodes: List[dict], threshold: float) -> List[Finding]:
    """Each node against its peers, metric by metric (higher is better)."""
    out = []
    for metric, meta in METRICS.items():
        if meta.measured:
            out += _measured_findings(nodes, metric, threshold)
            continue
        values = {n["node"]: node_value(n, metric) for n in nodes}
        for index, value in values.items():
            reference = peer_reference(values, index)
            if value is None or reference is None or reference == float("inf"):
                continue
            if not (below(value, reference, threshold) or (meta.every_one_counts and value < reference)):
                continue
            out.append(Finding(f"node-{index}", metric, f"{meta.label} {fmt_value(metric, value)} vs "
                               f"{fmt_value(metric, reference)} on its peers "
                               f"({100.0 * (1.0 - value / reference):.0f}% below): {meta.cause}",
                               node=index, value=value, reference=reference))
    return sorted(out, key=lambda f: f.node)


BAD_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown",
                # amd-smi's violation status (MI300 and later): thermal and PROCHOT, not PPT (the power limit)
                "prochot_violation", "socket_thermal_violation", "vr_thermal_violation", "hbm_thermal_violation")


def gpu_findings(node: dict) -> List[Finding]:
    """A GPU's own counters: uncorrected ECC, rows pending or failed remapping, hardware throttling."""
    out, name = [], f"node-{node['node']}"
    for gpu in node.get("gpus", []):
        where = f"GPU {gpu.get('index')} ({gpu.get('name', '?')})"
        if (gpu.get("ecc_uncorrected_volatile") or 0) > 0:
            out.append(Finding(name, "gpu_ecc", f"{where}: {gpu['ecc_uncorrected_volatile']} uncorrected ECC "
                               "error(s) since the driver loaded: drain the node, the GPU needs a reset or RMA",
                               node=node["node"], value=gpu["ecc_uncorrected_volatile"]))
        if (gpu.get("ecc_deferred") or 0) > 0:
            out.append(Finding(name, "gpu_ecc", f"{where}: {gpu['ecc_deferred']} deferred (uncorrectable, poisoned) "
                               "ECC error(s) (amd-smi): drain the node, the GPU needs a reset or RMA",
                               node=node["node"], value=gpu["ecc_deferred"]))
        if gpu.get("remap_pending") or gpu.get("remap_failure"):
            out.append(Finding(name, "gpu_row_remap", f"{where}: row remapping "
                               f"{'failed' if gpu.get('remap_failure') else 'pending'}: a GPU reset applies a "
                               "pending remap; a failure needs an RMA", node=node["node"]))
        active = [r for r in BAD_THROTTLE if gpu.get("throttle", {}).get(r)]
        if active:
            out.append(Finding(name, "gpu_throttle", f"{where}: clocks held down by {', '.join(active)} "
                               f"(SM {gpu.get('sm_clock_mhz')} of {gpu.get('sm_clock_max_mhz')} MHz): cooling, "
                               "power delivery or a hardware fault", node=node["node"]))
    return out


def _gpu_named(node: dict, pci: str) -> str:
    """``GPU 1 (0000:3b:00.0)``: the index nvidia-smi/amd-smi gave it, else its place among the node's GPUs."""
    from nodeweave.check.gpu_facts import same_device

    for gpu in node.get("gpus", []):
        if gpu.get("pci") and same_device(gpu["pci"], pci):
            return f"GPU {gpu.get('index')} ({pci})"
    own = node.get("facts", {}).get("gpu_pci") or []
    return f"GPU {own.index(pci)} ({pci})" if pci in own else f"GPU {pci}"


def xid_findings(node: dict) -> List[Finding]:
    """Xid events of this node's own GPUs whose code says the hardware or its firmware is in trouble."""
    from nodeweave.entrypoint.detection.xid import summarise

    events = [e for e in (node.get("xid") or {}).get("events", []) if e.get("hardware")]
    out = []
    for group in summarise(events):
        when = f", last at {group['seconds']:.0f} s after boot" if group.get("seconds") is not None else ""
        out.append(Finding(f"node-{node['node']}", "gpu_xid",
                           f"{_gpu_named(node, group['gpu_pci'])}: Xid {group['code']} ({group['meaning']}) "
                           f"{group['count']}x in the kernel log since boot{when} (\"{group['message'][:120]}\"): "
                           f"{group['action']}", node=node["node"], value=group["code"]))
    return out


def datasheet_findings(node: dict) -> List[Finding]:
    """The probe's GPU figures against the model's datasheet (``expected``)."""
    figures = expected_for(node.get("facts", {}).get("gpu_model"))
    if not figures:
        return []
    out = []
    for metric, peak in zip(("gpu_tflops", "gpu_mem_gbps"), figures):
        value = best(node.get("samples", {}).get(metric, []))
        if value is not None and value < GPU_FLOOR[metric] * peak:
            out.append(Finding(f"node-{node['node']}", f"{metric}_datasheet",
                               f"{METRICS[metric].label} {fmt_value(metric, value)} is "
                               f"{100 * value / peak:.0f}% of the {node['facts']['gpu_model']} datasheet's "
                               f"{fmt_value(metric, peak)} (named below {100 * GPU_FLOOR[metric]:.0f}%): "
                               f"{METRICS[metric].cause}", node=node["node"], value=value, reference=peak))
    return out


def host_findings(node: dict, mtu_reference: Optional[int]) -> List[Finding]:
    """Disk free under the workspace, the planned interface's MTU, dcgmi's verdict."""
    facts, name, out = node.get("facts", {}), f"node-{node['node']}", []
    disk = facts.get("disk_free_bytes")
    if disk is not None and disk < DISK_FLOOR:
        out.append(Finding(name, "disk_free", f"{fmt_value('shm_bytes', disk)} free under the workspace "
                           f"({facts.get('workspace')}), below {fmt_value('shm_bytes', DISK_FLOOR)}: checkpoints "
                           "and caches will fail", node=node["node"], value=disk))
    mtu = facts.get("mtu")
    if mtu and mtu_reference and mtu != mtu_reference:
        out.append(Finding(name, "mtu", f"MTU {mtu} on {facts.get('interface')} vs {mtu_reference} on its peers: "
                           "a mismatched MTU drops or fragments large packets (jumbo frames set on some hosts only)",
                           node=node["node"], value=mtu, reference=mtu_reference))
    failed = (node.get("dcgm") or {}).get("failed") or []
    if failed:
        out.append(Finding(name, "dcgm", f"dcgmi diag -r 1 failed: {', '.join(failed)}", node=node["node"]))
    return out


def findings(document: dict, threshold: float) -> List[Finding]:
    """Everything named in a finished check document: nodes first, then links."""
    nodes = sorted(document.get("nodes", []), key=lambda n: n["node"])
    mtus = [n.get("facts", {}).get("mtu") for n in nodes if n.get("facts", {}).get("mtu")]
    mtu_reference = statistics.mode(mtus) if len(mtus) > 2 else None
    out = node_findings(nodes, threshold)
    for node in nodes:
        out += gpu_findings(node) + xid_findings(node) + datasheet_findings(node) + host_findings(node, mtu_reference)
    return out + link_findings(document.get("links", []), threshold, document.get("confirmations"))
