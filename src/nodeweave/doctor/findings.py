"""Findings: what is wrong or worth knowing about a node, how bad, and what to do.

The entrypoint already warns, at every start, about user values known to
hurt (its policy module). Doctor does not re-derive those: it takes the
plan's warnings as they are and only grades them (error/warning) and adds
the remedy, by each warning's stable code (``PlanWarning.code``), never by
its wording. Doctor's own rules (``rules.py``) cover what the entrypoint has
no reason to check at start-up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}


@dataclass(frozen=True)
class Finding:
    """One observation: its severity, a stable code, the message and the remedy."""

    severity: str
    code: str
    message: str
    action: str
    source: str = "doctor"  # "doctor" | "entrypoint" (a plan warning, graded here) | "bench"

    def to_dict(self) -> dict:
        return asdict(self)


# The entrypoint's warning codes (PlanWarning.code, nodeweave.entrypoint.policy/topology)
# -> (severity, what to do). A code missing here is graded a warning.
_GRADES = {
    "p2p-disabled-on-gpu-links": (ERROR, "unset NCCL_P2P_DISABLE: NCCL picks NVLink/xGMI peer-to-peer itself"),
    "socket-ifname-loopback": (ERROR, "unset NCCL_SOCKET_IFNAME (the entrypoint sets the interface that routes "
                               "to the master) or name an interface peers can reach"),
    "socket-ifname-no-match": (ERROR, "unset NCCL_SOCKET_IFNAME or fix its value: NCCL finds no socket interface with it"),
    "socket-ifname-misses-route": (WARNING, "unset NCCL_SOCKET_IFNAME; the entrypoint sets =<the interface toward the master>"),
    "ib-hca-unknown-device": (ERROR, "fix NCCL_IB_HCA to name devices listed under /sys/class/infiniband, or unset it"),
    "ib-hca-prefix": (WARNING, "prefix the list with '=' (exact names), e.g. NCCL_IB_HCA==mlx5_0,mlx5_1"),
    "ib-disabled-with-rdma": (ERROR, "unset NCCL_IB_DISABLE: inter-node traffic should use the ACTIVE RDMA ports"),
    "ib-gid-index-wrong": (ERROR, "unset NCCL_IB_GID_INDEX (NCCL >= 2.21.5 finds the RoCE v2 GID) "
                           "or set the index the entrypoint reports"),
    "hsa-fine-grain-on-xgmi": (WARNING, "unset HSA_FORCE_FINE_GRAIN_PCIE on xGMI nodes"),
    "rdma-port-down": (WARNING, "check the cable, the switch port and the subnet manager (ibstat, ibstatus); "
                       "NCCL skips the port"),
    "shm-small": (WARNING, "give the container a larger /dev/shm: docker/podman --shm-size=16g or --ipc=host; "
                  "Kubernetes: an emptyDir with medium: Memory mounted at /dev/shm"),
    "memlock-limited": (ERROR, "run with an unlimited locked-memory limit: --ulimit memlock=-1:-1 (docker/podman), "
                        "or LimitMEMLOCK=infinity for the container runtime's service"),
    "no-route-to-master": (WARNING, "check that the master's name resolves and is routable from this node"),
    "roce-gid-index-differs": (WARNING, "use NCCL >= 2.21.5, which picks each port's GID itself"),
}
SHM_ERROR_BELOW = 512 << 20  # Docker's 64 MB default fails NCCL outright; under 1 GiB is a warning


def grade_plan_warning(message: str, shm_bytes: "int | None" = None) -> Finding:
    """A plan warning as a finding, graded by its code; one without a known code stays a warning."""
    code = getattr(message, "code", None)
    if code not in _GRADES:
        return Finding(WARNING, code or "entrypoint-warning", str(message), "see docs/entrypoint.md", "entrypoint")
    severity, action = _GRADES[code]
    if code == "shm-small" and shm_bytes is not None and shm_bytes < SHM_ERROR_BELOW:
        severity = ERROR
    return Finding(severity, code, str(message), action, "entrypoint")


def sort_findings(findings: "list[Finding]") -> "list[Finding]":
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.code))


def merge(graded: "list[Finding]", own: "list[Finding]") -> "list[Finding]":
    """The entrypoint's findings, plus doctor's own whose code the entrypoint did not report."""
    codes = {finding.code for finding in graded}
    return sort_findings(graded + [finding for finding in own if finding.code not in codes])
