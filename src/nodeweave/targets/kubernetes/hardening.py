"""What makes the training pod a hardened one by default, and what a scanner is told where it cannot be.

Capabilities: ``drop: [ALL]``, then exactly what the spec needs back
(``IPC_LOCK`` where RDMA registers memory, ``security.cap_add``, e.g.
``SYS_PTRACE`` for a profiler). ``seccompProfile: RuntimeDefault`` unless
``security.seccomp: unconfined``; no privilege escalation; a read-only root
filesystem with emptyDirs for ``/tmp`` and the image's ``HOME`` (unless
``security.read_only_root: false``); a readiness probe that asks the node's own
entrypoint whether it holds or runs (no network: it must not depend on node 0).

A few of checkov's Kubernetes checks ask for what a training job must not
do; each is skipped on the workload with its reason (``checkov.io/skipN``
annotations, which survive kustomize where YAML comments do not), and
docs/kubernetes.md repeats the reasons.
"""

from __future__ import annotations

from typing import Any, Dict, List

from nodeweave.resolve import Resolved
from nodeweave.spec import Spec
from nodeweave.targets.kubernetes import common

TMP_VOLUME = "tmp"
HOME_VOLUME = "home"
HOME = "/home/nodeweave"  # the rendered images' HOME (images/*/Dockerfile)
READY_COMMAND = ["nodeweave-entrypoint", "--node", "ready"]

# (check, reason, applies(r, workload)): the findings a training pod keeps on purpose.
SKIPS = (
    ("CKV_K8S_8", "no liveness probe: restarting one rank's container breaks the collective; the check-in "
                  "heartbeat stops every node together instead", lambda r, w: True),
    ("CKV_K8S_15", "imagePullPolicy IfNotPresent: training images are many GB; pin image.tag or image.digest "
                   "so a cached image is the right one", lambda r, w: True),
    ("CKV_K8S_40", "UID 1000 is the image's own user (files owned 1000:0, group-writable); OpenShift assigns a "
                   "high UID from the namespace's range itself", lambda r, w: True),
    ("CKV_K8S_38", "the entrypoint reads .spec.replicas of its StatefulSet from the API (a Role granting get), "
                   "so oc scale needs no edit", lambda r, w: w == "statefulset" and common.reads_replicas(r)),
    ("CKV_K8S_38", "node 0 asks the API why a node's pod did not check in (a Role granting get on pods: Pending, "
                   "Unschedulable, an image pull); NODEWEAVE_NNODES is set, so .spec.replicas is not read",
     lambda r, w: w == "statefulset" and not common.reads_replicas(r)),
    ("CKV_K8S_43", "image by tag: set image.digest (the pushed image's sha256) to render it by digest",
     lambda r, w: not r.spec.image.digest),
    ("CKV_K8S_11", "no CPU limit in the spec (resources.limits.cpu): a limit would throttle data loading",
     lambda r, w: "cpu" not in r.spec.resources.limits),
    ("CKV_K8S_13", "no memory limit in the spec (resources.limits.memory): set one for the node's size",
     lambda r, w: "memory" not in r.spec.resources.limits),
    ("CKV_K8S_10", "no CPU request in the spec (resources.requests.cpu)", lambda r, w: not _requests(r.spec, "cpu")),
    ("CKV_K8S_12", "no memory request in the spec (resources.requests.memory)",
     lambda r, w: not _requests(r.spec, "memory")),
    ("CKV2_K8S_6", "kubernetes.network_policy: false in the spec", lambda r, w: not r.spec.kubernetes.network_policy),
    ("CKV_K8S_25", "capabilities added on purpose: IPC_LOCK for RDMA memory registration, security.cap_add",
     lambda r, w: bool(r.capabilities)),
    ("CKV_K8S_37", "capabilities added on purpose after drop ALL: IPC_LOCK for RDMA, security.cap_add",
     lambda r, w: bool(r.capabilities)),
    ("CKV_K8S_22", "security.read_only_root: false in the spec", lambda r, w: not r.spec.security.read_only_root),
    ("CKV_K8S_31", "security.seccomp: unconfined in the spec (AMD's advice for ROCm)",
     lambda r, w: r.spec.security.seccomp == "unconfined"),
    ("CKV_K8S_32", "security.seccomp: unconfined in the spec (AMD's advice for ROCm)",
     lambda r, w: r.spec.security.seccomp == "unconfined"),
)


def _requests(spec: Spec, resource: str) -> bool:
    """Kubernetes defaults a request to its limit, so either one sets it."""
    return resource in spec.resources.requests or resource in spec.resources.limits


def container_security(r: Resolved) -> Dict[str, Any]:
    spec = r.spec
    capabilities: Dict[str, Any] = {"drop": ["ALL"]}
    if r.capabilities:
        capabilities["add"] = list(r.capabilities)
    body: Dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": capabilities}
    if spec.security.read_only_root:
        body["readOnlyRootFilesystem"] = True
    return body


def seccomp(r: Resolved) -> Dict[str, str]:
    spec = r.spec
    return {"type": "Unconfined" if spec.security.seccomp == "unconfined" else "RuntimeDefault"}


def readiness_probe() -> Dict[str, Any]:
    return {"exec": {"command": list(READY_COMMAND)}, "periodSeconds": 10, "timeoutSeconds": 10,
            "failureThreshold": 3}


def scratch_mounts(r: Resolved) -> List[Dict[str, Any]]:
    if not r.spec.security.read_only_root:
        return []
    return [{"name": TMP_VOLUME, "mountPath": "/tmp"}, {"name": HOME_VOLUME, "mountPath": HOME}]


def scratch_volumes(r: Resolved) -> List[Dict[str, Any]]:
    if not r.spec.security.read_only_root:
        return []
    return [{"name": TMP_VOLUME, "emptyDir": {}}, {"name": HOME_VOLUME, "emptyDir": {}}]


def checkov_skips(r: Resolved, workload: str) -> Dict[str, str]:
    """``checkov.io/skipN: CHECK=reason`` for each finding this workload keeps on purpose."""
    kept = [(check, reason) for check, reason, applies in SKIPS if applies(r, workload)]
    return {f"checkov.io/skip{i}": f"{check}={reason}" for i, (check, reason) in enumerate(kept, 1)}
