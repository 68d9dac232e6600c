"""What a node is, read once (stdlib): the entrypoint's detection plus what only the check needs.

The entrypoint's own ``detect`` gives the GPUs, RDMA ports, interfaces,
/dev/shm and memlock exactly as the plan saw them. Added here: the CPU
limit as a fraction (cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``: a
container started with ``--cpus 0.5`` still sees every CPU in its
affinity mask), memory, disk free under the workspace, the speed and MTU of
the interface the plan chose (``NCCL_SOCKET_IFNAME``/``GLOO_SOCKET_IFNAME``
as the entrypoint exported them, else the route to the master) and the
kernel's boot id, which tells nodes that share one machine.
"""

from __future__ import annotations

import os
import shutil
from typing import Mapping, Optional

# from their modules, not the package's names: those load on first use (PEP 562), which the Python 3.6 of
# an image does not have, and the zipapp's import closure reads only plain imports
from nodeweave.entrypoint.detection.node import detect
from nodeweave.entrypoint.detection.sysfs import Root

CGROUP_V1_CPU = ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct")


def cpu_quota(root: Root) -> Optional[float]:
    """The cgroup's CPU limit in CPUs (0.5 for ``--cpus 0.5``); None when there is none."""
    fields = (root.read("/sys/fs/cgroup/cpu.max") or "").split()
    if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]):
        return int(fields[0]) / int(fields[1])
    for base in CGROUP_V1_CPU:
        quota, period = root.read_int(f"{base}/cpu.cfs_quota_us"), root.read_int(f"{base}/cpu.cfs_period_us")
        if quota is not None and period:
            return quota / period if quota > 0 else None
    return None


def meminfo(root: Root) -> dict:
    out = {}
    for line in (root.read("/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable") and rest.split():
            out[key] = int(rest.split()[0]) * 1024
    return out


def planned_interface(env: Mapping[str, str], routed: Optional[str]) -> Optional[str]:
    """The first interface the plan named for NCCL/Gloo, else the one that routes to the master."""
    for variable in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        text = env.get(variable, "")
        first = text.split(",")[0].lstrip("=")
        if first and not first.startswith("^"):
            return first
    return routed


def interface_facts(root: Root, name: Optional[str]) -> dict:
    if not name:
        return {"interface": None, "mtu": None, "link_speed_mbps": None}
    speed = root.read_int(f"/sys/class/net/{name}/speed")
    return {"interface": name, "mtu": root.read_int(f"/sys/class/net/{name}/mtu"),
            "link_speed_mbps": speed if speed and speed > 0 else None}


def cpu_facts(root: Root) -> dict:
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count() or 1
    quota = cpu_quota(root) if root.real else None
    return {"cpus_affinity": affinity, "cpu_quota": quota,
            "cpus_effective": round(min(affinity, quota) if quota else affinity, 3)}


def own_gpu_addresses(gpus) -> list:
    """PCI addresses of the GPUs this node may use (``*_VISIBLE_DEVICES`` applied): nvidia-smi lists
    every GPU of the machine, and nodes that share one must not report each other's."""
    devices = gpus.devices if gpus is not None else []
    if gpus is None or gpus.visible is None:
        return [d.pci for d in devices if d.pci]
    wanted = set(gpus.visible)
    return [d.pci for d in devices if d.pci and (d.index in wanted or d.uuid in wanted)]


def node_facts(env: Mapping[str, str], workspace: str, sysroot: str = "/") -> dict:
    """Every fact the verdict compares or prints, as plain JSON values (``sysroot``: a captured tree)."""
    root = Root(sysroot)
    node = detect(sysroot, env=dict(env), master=env.get("MASTER_ADDR"))
    memory = meminfo(root)
    try:
        disk = shutil.disk_usage(workspace).free
    except OSError:
        disk = None
    ports = [{"device": p.device, "port": p.port, "state": p.state, "link_layer": p.link_layer,
              "rate_gbps": p.rate_gbps} for p in node.nics]
    facts = {
        "hostname": node.hostname, "boot_id": root.read("/proc/sys/kernel/random/boot_id"),
        **cpu_facts(root),
        "shm_bytes": node.limits.shm_bytes, "memlock_bytes": node.limits.memlock_bytes,
        "mem_total_bytes": memory.get("MemTotal"), "mem_available_bytes": memory.get("MemAvailable"),
        "workspace": workspace, "disk_free_bytes": disk,
        **interface_facts(root, planned_interface(env, node.interface)),
        "rdma_ports": ports, "rdma_active_ports": sum(p["state"] == "ACTIVE" for p in ports) if ports else None,
        "gpu_count": node.gpus.count if node.gpus.vendor != "none" else None,
        "gpu_model": node.gpus.model, "gpu_pci": own_gpu_addresses(node.gpus),
        "gpu_vendor": node.gpus.vendor, "gpu_driver": node.gpus.driver,
    }
    return facts
