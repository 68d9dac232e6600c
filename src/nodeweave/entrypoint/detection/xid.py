"""NVIDIA Xid events in the kernel log, matched to this node's own GPUs, with what the well-known codes mean.

The driver prints (src/nvidia/src/kernel/gpu/rc/kernel_rc.c, ``krcReportXid``, in NVIDIA's
open-gpu-kernel-modules)::

    NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, <message>
    NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u): ...              (a MIG GPU instance)
    NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u): ...  (and compute instance)

where the PCI address is domain, bus and device, without the function, and the pid is
``'<unknown>'`` when no process owns the error; older drivers print ``pid=N, <message>`` or the
message alone. A machine's kernel log holds every GPU's events, and nodes that share a machine share
its log, so each node keeps only the events of its own GPUs (the addresses its
``*_VISIBLE_DEVICES`` leave it). Meanings after NVIDIA's Xid catalog
(docs.nvidia.com/deploy/xid-errors). Only codes that say the hardware (or its firmware) is in
trouble name a node; the rest are usually the application's own faults and are reported, not named.
"""

import re
from typing import Dict, List, Optional, Sequence

from .kernel_log import KmsgFollower, Line, read_kernel_log

XID_LINE = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
                      r"(?: GPU-I:(?P<gi>\d+))?(?: GPU-CI:(?P<ci>\d+))?\): (?P<code>\d+)(?:, (?P<rest>.*))?$")
PROCESS = re.compile(r"^pid=(?P<pid>[^,]*), (?:name=(?P<name>[^,]*), )?(?P<message>.*)$")

# code: (meaning, names the node, what to do)
XID_CODES: Dict[int, tuple] = {
    13: ("graphics engine exception", False, "usually the application (an out-of-range access); a repeat "
         "on one GPU across applications points at the GPU"),
    31: ("GPU memory page fault", False, "usually the application (an illegal address)"),
    43: ("GPU stopped processing (a channel reset after the application's fault)", False,
         "the application; the GPU keeps working"),
    45: ("preemptive cleanup after earlier errors", False, "follows another Xid; read that one"),
    48: ("double-bit ECC error", True, "drain the node and reset the GPU; RMA if it repeats"),
    61: ("internal micro-controller breakpoint/warning", True, "reset the GPU; report it if it repeats"),
    62: ("internal micro-controller halt", True, "reset the GPU; report it if it repeats"),
    63: ("ECC page retirement or row remapping recorded", True, "reset the GPU to apply the remap"),
    64: ("ECC page retirement or row remapping failed", True, "drain the node; the GPU needs an RMA"),
    74: ("NVLink error", True, "check the NVLink connections; reset the GPU"),
    79: ("GPU has fallen off the bus", True, "drain the node: reboot, then check seating, power and "
         "PCIe risers"),
    92: ("high single-bit ECC error rate", True, "watch the GPU; drain it if the rate holds"),
    94: ("contained ECC error", True, "the application on that GPU was stopped; reset the GPU"),
    95: ("uncontained ECC error", True, "drain the node and reset the GPU"),
    109: ("context switch timeout", False, "usually the application or the driver; a repeat points at "
          "the GPU"),
    119: ("GSP RPC timeout", True, "reset the GPU (or reboot); update the driver if it repeats"),
    120: ("GSP error", True, "reset the GPU (or reboot); update the driver if it repeats"),
    154: ("GPU recovery action changed", True, "do what the driver's message asks (reset, reboot, drain)"),
}


def parse_xid(text: str) -> Optional[dict]:
    """One kernel message as an Xid event, or None."""
    found = XID_LINE.search(text)
    if not found:
        return None
    rest = (found.group("rest") or "").strip()
    process = PROCESS.match(rest)
    event = {"pci": found.group("pci").lower(), "code": int(found.group("code")),
             "message": process.group("message") if process else rest,
             "pid": process.group("pid").strip("'") if process else None}
    for key, label in (("gi", "gpu_instance"), ("ci", "compute_instance")):
        if found.group(key) is not None:
            event[label] = int(found.group(key))
    return event


def kernel_address(pci: str) -> str:
    """``0000:3b:00.0`` (sysfs) or ``00000000:3B:00.0`` (nvidia-smi) as the driver prints it: ``0000:3b:00``."""
    parts = pci.lower().split(":")
    if len(parts) != 3:
        return pci.lower()
    return f"{parts[0][-4:]:0>4}:{parts[1]}:{parts[2].split('.')[0]}"


def xid_events(lines: Sequence[Line], addresses: Optional[Sequence[str]]) -> dict:
    """The Xid events among ``lines``: ``own`` (this node's GPUs; every GPU when ``addresses`` is None)
    and how many belong to GPUs of the machine that are not this node's."""
    wanted = {kernel_address(a): a for a in addresses} if addresses is not None else None
    own, others = [], 0
    for seconds, text in lines:
        event = parse_xid(text)
        if event is None:
            continue
        if wanted is not None and event["pci"] not in wanted:
            others += 1
            continue
        meaning, hardware, action = XID_CODES.get(event["code"], ("not in nodeweave's table: see NVIDIA's Xid "
                                                                  "catalog", False, ""))
        own.append({**event, "gpu_pci": wanted[event["pci"]] if wanted else event["pci"], "seconds": seconds,
                    "meaning": meaning, "hardware": hardware, "action": action})
    return {"events": own, "other_gpus_events": others}


def node_xids(addresses: Optional[List[str]], kmsg: str = "/dev/kmsg") -> dict:
    """This node's Xid events and where they were read: ``readable`` False (with each source's answer)
    when no source of the kernel log would open, which is not the same as no events."""
    log = read_kernel_log(kmsg)
    if log["source"] is None:
        return {"readable": False, "source": None, "errors": log["errors"], "events": [], "other_gpus_events": 0}
    return {"readable": True, "source": log["source"], "errors": log["errors"], **xid_events(log["lines"], addresses)}


def summarise(events: List[dict]) -> List[dict]:
    """Events grouped by GPU and code: how many, the last one's time and message."""
    groups: Dict[tuple, dict] = {}
    for event in events:
        group = groups.setdefault((event["gpu_pci"], event["code"]), {**event, "count": 0})
        group["count"] += 1
        group.update({"seconds": event["seconds"], "message": event["message"]})
    return list(groups.values())


class XidCounter:
    """Xid events per GPU since this counter was made, read from ``/dev/kmsg`` as they come (node metrics:
    ``nodeweave_gpu_xid_errors_total``). ``readable`` is False, with ``error`` saying why, where the node may
    not read the kernel log (no CAP_SYSLOG under ``kernel.dmesg_restrict = 1``, the default in containers):
    then no count is shown rather than a zero that would claim no events."""

    def __init__(self, kmsg: str = "/dev/kmsg") -> None:
        self.follower = KmsgFollower(kmsg)
        self.counts: Dict[str, int] = {}  # the driver's address (``0000:3b:00``) -> events
        self.last: Dict[str, int] = {}    # -> the newest event's code

    @property
    def readable(self) -> bool:
        return self.follower.fd is not None

    @property
    def error(self) -> Optional[str]:
        return self.follower.error

    def update(self) -> None:
        for _, text in self.follower.new():
            event = parse_xid(text)
            if event is not None:
                self.counts[event["pci"]] = self.counts.get(event["pci"], 0) + 1
                self.last[event["pci"]] = event["code"]

    def of(self, pci: Optional[str]) -> dict:
        """``{"xid_errors", "xid_last"}`` of the GPU at ``pci`` (nvidia-smi's or sysfs' spelling), or {} when the
        log cannot be read or the GPU's address is unknown."""
        if not self.readable or not pci:
            return {}
        address = kernel_address(pci)
        return {"xid_errors": self.counts.get(address, 0), "xid_last": self.last.get(address)}
