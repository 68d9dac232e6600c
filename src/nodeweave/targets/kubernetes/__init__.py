"""Kubernetes and OpenShift manifests for a cluster spec, as a kustomize tree.

``render_files(spec)`` maps relative paths to file text and does no I/O:

- ``manifests/base/``: headless Service, StatefulSet, ServiceAccount + Role +
  RoleBinding (the entrypoint reads the replica count from the API, so
  ``oc scale`` needs no edit), the shared workspace claim, and a
  NetworkPolicy admitting ingress only from the job's own pods; ``namespace.yaml``
  (not in the kustomization) labels the namespace with the Pod Security level
  the pods need; ``podmonitor.yaml`` (not in the kustomization either: it needs the
  Prometheus Operator's CRD) scrapes node 0's ``/metrics``;
- ``manifests/overlays/openshift/``: no fixed UID/GID (restricted-v2's
  arbitrary UID), capabilities dropped; with RDMA, ``scc-ipc-lock.yaml`` for a
  cluster admin to apply;
- ``manifests/overlays/rocm/``: ``amd.com/gpu``, a ROCm image, device groups;
- ``manifests/job/``: an Indexed Job + headless Service for batch runs.

Objects are plain dicts dumped with ``yaml.safe_dump`` in a fixed key order,
so the output is byte-stable and every spec value arrives quoted as needed.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from nodeweave.targets.kubernetes import kustomize, network, pod_security, storage, workloads
from nodeweave.targets.kubernetes.yamltext import dump
from nodeweave.resolve import Resolved, resolve
from nodeweave.spec import Spec

__all__ = ["render_files", "base_objects", "job_objects"]

BASE = "manifests/base"
OPENSHIFT = "manifests/overlays/openshift"
ROCM = "manifests/overlays/rocm"
JOB = "manifests/job"

SCC_NOTE = (
    "RDMA needs IPC_LOCK, which OpenShift's restricted-v2 SCC does not allow. A cluster\n"
    "admin applies this once (`oc apply -f scc-ipc-lock.yaml`): restricted-v2 plus\n"
    "IPC_LOCK, for this job's ServiceAccount only. Not part of the kustomization,\n"
    "so `oc apply -k` works for users who may not create SCCs."
)
SCC_NOTE_EXTRA = (
    "The spec asks for more than OpenShift's restricted-v2 SCC allows ({needs}).\n"
    "A cluster admin applies this once (`oc apply -f scc.yaml`): restricted-v2 plus\n"
    "exactly that, for this job's ServiceAccount only. Not part of the kustomization,\n"
    "so `oc apply -k` works for users who may not create SCCs. Pod Security Admission:\n"
    "the namespace needs the privileged level (baseline refuses these)."
)
PODMONITOR_NOTE = (
    "For a cluster running the Prometheus Operator: `kubectl apply -f podmonitor.yaml`\n"
    "scrapes node 0's /metrics (docs/observability.md). Not part of the kustomization:\n"
    "`kubectl apply -k` must work where the PodMonitor CRD is not installed. A Prometheus\n"
    "in another namespace also needs kubernetes.ingress_from (the NetworkPolicy)."
)
ROCM_NOTE = (
    "supplementalGroups: the host groups owning /dev/kfd and /dev/dri/renderD*\n"
    "(video and render). Check `getent group video render` on the GPU nodes, or set\n"
    "device_ownership_from_security_context in containerd/CRI-O and drop them."
)


def base_objects(r: Resolved) -> List[Tuple[str, Dict[str, Any]]]:
    """(file name, object) of the StatefulSet deployment, in apply order."""
    objects = [
        ("serviceaccount.yaml", workloads.service_account(r)),
        ("role.yaml", workloads.role(r)),
        ("rolebinding.yaml", workloads.role_binding(r)),
        ("service.yaml", workloads.headless_service(r)),
        *_policy(r),
    ]
    if r.spec.kubernetes.claim == "shared":
        objects.append(("workspace-pvc.yaml", workloads.workspace_claim(r)))
    objects.append(("statefulset.yaml", workloads.statefulset(r)))
    return objects


def job_objects(r: Resolved) -> List[Tuple[str, Dict[str, Any]]]:
    """(file name, object) of the Indexed Job alternative.

    It needs no API access (no Role), but it runs under the job's own
    ServiceAccount, the one an OpenShift SCC granting IPC_LOCK names.
    """
    objects = [("serviceaccount.yaml", workloads.service_account(r)), ("service.yaml", workloads.headless_service(r)),
               *_policy(r)]
    if r.spec.kubernetes.claim == "shared":
        objects.append(("workspace-pvc.yaml", workloads.workspace_claim(r)))
    objects.append(("job.yaml", workloads.indexed_job(r)))
    return objects


def _policy(r: Resolved) -> List[Tuple[str, Dict[str, Any]]]:
    """The same-job NetworkPolicy unless ``kubernetes.network_policy: false``."""
    return [("networkpolicy.yaml", network.network_policy(r))] if r.spec.kubernetes.network_policy else []


def render_files(spec: Spec) -> Dict[str, str]:
    """Relative path -> YAML text for every manifest of ``spec``; pure and byte-stable."""
    r = resolve(spec)  # the one derivation of this render: every part below reads it
    files: Dict[str, str] = {}
    _directory(files, BASE, r, base_objects(r))
    files[f"{BASE}/namespace.yaml"] = dump(pod_security.namespace(r), pod_security.note(r))
    _directory(files, JOB, r, job_objects(r))
    if r.spec.metrics.enabled:
        for folder in (BASE, JOB):
            files[f"{folder}/podmonitor.yaml"] = dump(workloads.pod_monitor(r), PODMONITOR_NOTE)
    _overlay(files, OPENSHIFT, r, "statefulset-openshift.yaml", kustomize.openshift_patch)
    if kustomize.needs_scc(r):
        name = kustomize.scc_file(r)
        files[f"{OPENSHIFT}/{name}"] = dump(kustomize.openshift_scc(r), SCC_NOTE if name == "scc-ipc-lock.yaml"
                                            else SCC_NOTE_EXTRA.format(needs=_scc_needs(r)))
    _overlay(files, ROCM, r, "statefulset-rocm.yaml", kustomize.rocm_patch, kustomize.rocm_images(r), ROCM_NOTE)
    return dict(sorted(files.items()))


def _scc_needs(r: Resolved) -> str:
    needs = [f"capabilities {', '.join(r.capabilities)}"] if r.capabilities else []
    if r.spec.security.seccomp == "unconfined":
        needs.append("seccomp unconfined")
    if storage.uses_host_paths(r):
        needs.append("hostPath volumes")
    return "; ".join(needs)


def _directory(files: Dict[str, str], folder: str, r: Resolved, objects: List[Tuple[str, Dict[str, Any]]]) -> None:
    for name, obj in objects:
        files[f"{folder}/{name}"] = dump(obj)
    files[f"{folder}/kustomization.yaml"] = dump(kustomize.kustomization(r, [name for name, _ in objects]),
                                                 kustomize.code_note(r))


def _overlay(files: Dict[str, str], folder: str, r: Resolved, patch_name: str,
             patch: Callable[[Any], Dict[str, Any]], images=None, note: str = "") -> None:  # fmt: skip
    files[f"{folder}/{patch_name}"] = dump(patch(r), note)
    entry = kustomize.statefulset_patch_entry(r, patch_name)
    files[f"{folder}/kustomization.yaml"] = dump(kustomize.kustomization(r, ["../../base"], [entry], images),
                                                 kustomize.code_note(r))
