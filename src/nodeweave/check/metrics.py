"""What is compared across nodes: each figure's label, unit and likely cause when it is low.

Every metric here is higher-is-better and compared with the median of the
node's peers. ``measured`` figures are repeated near the line (a probe's
samples); the others are facts read once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Metric:
    label: str
    unit: str
    cause: str
    measured: bool = False
    none_is_unlimited: bool = False  # None means "no limit" (memlock)
    every_one_counts: bool = False  # a count: one short of the peers is named, whatever the threshold


METRICS = {
    "cpus_effective": Metric("usable CPUs", "cpus", "a CPU limit (cgroup quota: --cpus, resources.limits.cpu) or a "
                             "smaller CPU set (--cpuset-cpus) than its peers"),
    "cpu_gflops": Metric("CPU matmul speed", "GFLOP per CPU-second", "slower CPUs: frequency scaling (power "
                         "or thermal limits, a BIOS setting) or a different CPU model", measured=True),
    "shm_bytes": Metric("/dev/shm", "bytes", "a small /dev/shm (--shm-size, an emptyDir medium: Memory sizeLimit): "
                        "NCCL's shared-memory transport and DataLoader workers fail or fall back"),
    "memlock_bytes": Metric("memlock limit", "bytes", "a low RLIMIT_MEMLOCK (--ulimit memlock=-1, IPC_LOCK): RDMA "
                            "cannot register memory", none_is_unlimited=True),
    "mem_total_bytes": Metric("memory", "bytes", "less memory than its peers (a memory limit or a smaller machine)"),
    "link_speed_mbps": Metric("link speed", "Mb/s", "the planned interface negotiated a lower speed (cable, "
                              "switch port, NIC setting)"),
    "rdma_active_ports": Metric("active RDMA ports", "ports", "an RDMA port is not ACTIVE (cable, subnet "
                                "manager, switch port): one rail fewer", every_one_counts=True),
    "gpu_count": Metric("GPUs", "gpus", "a GPU is missing (fallen off the bus, not visible to the container)",
                        every_one_counts=True),
    "gpu_tflops": Metric("GPU matmul (slowest GPU)", "TFLOP/s", "a throttled or degraded GPU: clocks, power or "
                         "thermal limits, a different SKU", measured=True),
    "gpu_mem_gbps": Metric("GPU memory copy (slowest GPU)", "GB/s", "a GPU with slower memory: clocks, row "
                           "remapping, a different SKU", measured=True),
}

LINK_CAUSE = ("traffic shaping, a slower or congested NIC or switch port, a bad cable, or a busy node on that path")

_BINARY = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def fmt_bytes(value: float) -> str:
    for scale, unit in _BINARY:
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def fmt_value(metric: str, value: Optional[float]) -> str:
    """A figure with its unit, as the report prints it."""
    if value is None:
        return "-"
    if value == float("inf"):
        return "unlimited"
    unit = METRICS[metric].unit if metric in METRICS else ""
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "GFLOP per CPU-second":
        return f"{value:.3g} GFLOP/CPU-s"
    if unit in ("cpus", "gpus", "ports"):
        return f"{value:g}"
    if unit == "Mb/s" and value >= 1000:
        return f"{value / 1000:g} Gb/s"
    if value >= 1000:
        return f"{value:.0f} {unit}"
    return f"{value:.3g} {unit}"


def fmt_rate(gbps: Optional[float]) -> str:
    """A link's bandwidth: GB/s, or MB/s below 1 GB/s."""
    if gbps is None:
        return "-"
    return f"{gbps:.3g} GB/s" if gbps >= 1 else f"{gbps * 1000:.3g} MB/s"
