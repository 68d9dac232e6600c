"""Which Pod Security Standards level the job's namespace needs, and the Namespace labels that say it.

Pod Security Admission judges a pod by its namespace's
``pod-security.kubernetes.io/enforce`` label. The hardened pod passes
``restricted``; what lowers it is only what the spec asks for: IPC_LOCK
(RDMA, unless ``security.ipc_lock: false``) and ``security.cap_add``
outside baseline's short list, ``seccomp: unconfined`` and ``hostPath``
volumes need ``privileged``; a capability on baseline's list needs
``baseline``. ``manifests/base/namespace.yaml`` carries the level with the
reasons in its comment; it is not in the kustomization (labelling a
namespace is an admin's act), so ``kubectl apply -k`` works without it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from nodeweave.resolve import Resolved
from nodeweave.targets.kubernetes import storage

# kubernetes.io/docs/concepts/security/pod-security-standards: the capabilities baseline lets a pod add.
BASELINE_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT")
RESTRICTED_CAPABILITIES = ("NET_BIND_SERVICE",)
LABEL = "pod-security.kubernetes.io"


def level(r: Resolved) -> Tuple[str, List[str]]:
    """(the least permissive level whose rules the job's pods pass, why not a stricter one)."""
    spec = r.spec
    caps = r.capabilities
    privileged = [f"capabilities.add {cap}" + (" (RDMA; security.ipc_lock: false drops it)"
                                              if cap == "IPC_LOCK" else " (security.cap_add)")
                  for cap in caps if cap not in BASELINE_CAPABILITIES]
    if spec.security.seccomp == "unconfined":
        privileged.append("seccompProfile Unconfined (security.seccomp)")
    if storage.uses_host_paths(r):
        privileged.append("hostPath volumes (volumes[].host_path)")
    if privileged:
        return "privileged", privileged
    baseline = [f"capabilities.add {cap} (security.cap_add)" for cap in caps if cap not in RESTRICTED_CAPABILITIES]
    return ("baseline", baseline) if baseline else ("restricted", [])


def namespace(r: Resolved) -> Dict[str, Any]:
    """The job's namespace, labelled to enforce the level its pods need and to warn at ``restricted``
    (``kubectl apply`` then names each field that keeps the pods above it)."""
    needed, _ = level(r)
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": r.spec.kubernetes.namespace,
                         "labels": {f"{LABEL}/enforce": needed, f"{LABEL}/enforce-version": "latest",
                                    f"{LABEL}/warn": "restricted", f"{LABEL}/warn-version": "latest"}}}


def note(r: Resolved) -> str:
    """The comment over namespace.yaml: the level, and why not a stricter one."""
    needed, why = level(r)
    lines = [f"Pod Security Admission: this job's pods need the {needed} level (the strictest they pass).",
             "An admin labels the namespace once: kubectl apply -f namespace.yaml",
             "(or kubectl label namespace <ns> pod-security.kubernetes.io/enforce=" + needed + ").",
             "Not in the kustomization, so kubectl apply -k works for users who may not label namespaces.",
             "The label judges every pod of the namespace: give the job one of its own (kubernetes.namespace)."]
    if r.spec.kubernetes.namespace == "default":  # every workload given no namespace runs there (walk6 W78)
        lines += ["This job's namespace is default, which every workload given no namespace shares: do not",
                  "apply this file there (its label would judge all of them); set kubernetes.namespace first."]
    if why:
        lines.append("Not restricted because of:")
        lines += [f"- {reason}" for reason in why]
    if "IPC_LOCK" in r.capabilities:
        lines += ["IPC_LOCK added to a container whose user is not root reaches its process only where the",
                  "runtime makes it ambient (podman does; containerd and CRI-O do not): RDMA there depends on",
                  "the runtime's memlock limit either way (docs/kubernetes.md, RDMA and Pod Security)."]
    return "\n".join(lines)
