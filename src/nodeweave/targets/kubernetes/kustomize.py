"""The kustomize layout: a base, the ``openshift`` and ``rocm`` overlays, and the Job alternative.

Overlay patches are strategic-merge patches whose ``null`` values delete a
field, so each one applies whether or not the base has the field (a JSON6902
``remove`` would fail on a missing path). That keeps every overlay valid for
any spec: a spec with ``openshift: true`` or a ROCm variant renders a base the
overlay leaves as it is.
"""

from __future__ import annotations

import textwrap
from typing import Any, Dict, List, Optional

from nodeweave.catalogue import VENDORS
from nodeweave.targets.kubernetes import common, storage, workloads
from nodeweave.targets.kubernetes.pod import container_security
from nodeweave.targets.kubernetes.yamltext import dump
from nodeweave.resolve import Resolved, resolve

KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"


def kustomization(r: Resolved, resources: List[str], patches: Optional[List[Dict[str, Any]]] = None,
                  images: Optional[List[Dict[str, str]]] = None) -> Dict[str, Any]:  # fmt: skip
    body: Dict[str, Any] = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}
    if not any(r.startswith("..") for r in resources):
        body["namespace"] = r.spec.kubernetes.namespace
    body["resources"] = resources
    if images:
        body["images"] = images
    if patches:
        body["patches"] = patches
    return body


def code_note(r: Resolved) -> str:
    """The comment atop every kustomization a user applies by hand: where the pods' script comes from. The
    workspace is a claim, empty when first made, and a pod started with ``launcher.mode: run`` on it exits 2 and
    restarts until the code is there (walk7 A1: ``kubectl apply -k manifests/base`` was a CrashLoopBackOff); with
    ``image.project``, or a script at a path of the image, the code is there and there is nothing to say."""
    spec = r.spec
    script, inside = spec.launcher.script, spec.workspace.path.rstrip("/") + "/"
    if spec.image.project is not None or (script.startswith("/") and not script.startswith(inside)):
        return ""  # the code is in the image (image.project, or a script at an image path such as /opt/...)
    where = (f"{spec.workspace.path}, the claim {spec.name}-workspace" if spec.kubernetes.claim == "shared"
             else f"{spec.workspace.path}, each pod's own claim")
    if spec.launcher.mode == "hold":
        return textwrap.fill(f"The pods hold (launcher.mode: hold): after `kubectl apply -k`, `nodeweave sync` puts the code in "
                f"{where}, then `nodeweave run` starts {spec.launcher.script}.", 110)
    return textwrap.fill(f"The pods run {spec.launcher.script} from {where}, which is empty when first made: a pod finds no "
            "script, exits 2 and restarts. Put the code there first: `nodeweave up --target kubernetes --hold`, "
            "`nodeweave sync`, `nodeweave run` (or render with launcher.mode: hold, apply, sync, run), or build "
            "it into the image with image.project.", 110)


def workload_tree(r: Resolved, folder: str, target: str, workload: "tuple[str, Dict[str, Any]]") -> Dict[str, str]:
    """A self-contained kustomize folder for one workload object (a JobSet, a TrainJob).

    Its ServiceAccount, the shared workspace claim when the spec asks for one,
    the workload, and a kustomization listing them: ``apply -k FOLDER`` alone.
    """
    objects = [("serviceaccount.yaml", workloads.service_account(r))]
    if r.spec.kubernetes.claim == "shared":
        objects.append(("workspace-pvc.yaml", workloads.workspace_claim(r)))
    objects.append(workload)
    files = {f"{folder}/{name}": dump(obj, target=target) for name, obj in objects}
    files[f"{folder}/kustomization.yaml"] = dump(kustomization(r, [name for name, _ in objects]), code_note(r),
                                                 target=target)
    return dict(sorted(files.items()))


def statefulset_patch_entry(r: Resolved, path: str) -> Dict[str, Any]:
    return {"path": path, "target": {"group": "apps", "version": "v1", "kind": "StatefulSet", "name": r.spec.name}}


def _statefulset_patch(r: Resolved, pod_spec: Dict[str, Any]) -> Dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": r.spec.name},
            "spec": {"template": {"spec": pod_spec}}}  # fmt: skip


def openshift_patch(r: Resolved) -> Dict[str, Any]:
    """restricted-v2: no fixed UID/GID/fsGroup (the SCC assigns them), ALL capabilities dropped."""
    seccomp = "Unconfined" if r.spec.security.seccomp == "unconfined" else "RuntimeDefault"
    pod_security = {"runAsUser": None, "runAsGroup": None, "fsGroup": None, "fsGroupChangePolicy": None,
                    "runAsNonRoot": True, "seccompProfile": {"type": seccomp}}  # fmt: skip
    security = container_security(r)  # the container's rules do not depend on kubernetes.openshift
    security["capabilities"].setdefault("add", None)  # without RDMA the base's IPC_LOCK goes
    return _statefulset_patch(r, {
        "securityContext": pod_security,
        "containers": [{"name": common.CONTAINER, "securityContext": security}],
    })  # fmt: skip


def needs_scc(r: Resolved) -> bool:
    """Whether restricted-v2 would refuse the pods: extra capabilities, unconfined seccomp, host directories."""
    return bool(r.capabilities) or r.spec.security.seccomp == "unconfined" or storage.uses_host_paths(r)


def scc_file(r: Resolved) -> str:
    """``scc-ipc-lock.yaml`` when IPC_LOCK is all it grants (RDMA), else ``scc.yaml``."""
    plain = r.capabilities == ("IPC_LOCK",) and r.spec.security.seccomp != "unconfined"
    return "scc-ipc-lock.yaml" if plain and not storage.uses_host_paths(r) else "scc.yaml"


def openshift_scc(r: Resolved) -> Dict[str, Any]:
    """restricted-v2 plus what the spec needs, for the job's ServiceAccount only (a cluster admin applies it)."""
    k8s = r.spec.kubernetes
    host_dirs = storage.uses_host_paths(r)
    volumes = ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"]
    return {
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": {"name": f"nodeweave-{k8s.namespace}-{r.spec.name}", "labels": common.labels(r, "rbac")},
        "allowHostDirVolumePlugin": host_dirs,
        "allowHostIPC": False,
        "allowHostNetwork": False,
        "allowHostPID": False,
        "allowHostPorts": False,
        "allowPrivilegeEscalation": False,
        "allowPrivilegedContainer": False,
        "allowedCapabilities": list(r.capabilities),
        "requiredDropCapabilities": ["ALL"],
        "defaultAddCapabilities": None,
        "fsGroup": {"type": "MustRunAs"},
        "runAsUser": {"type": "MustRunAsRange"},
        "seLinuxContext": {"type": "MustRunAs"},
        "supplementalGroups": {"type": "RunAsAny"},
        "seccompProfiles": ["runtime/default"] + (["unconfined"] if r.spec.security.seccomp == "unconfined" else []),
        "readOnlyRootFilesystem": False,
        "priority": None,
        "volumes": sorted(volumes + (["hostPath"] if host_dirs else [])),
        "users": [f"system:serviceaccount:{k8s.namespace}:{r.spec.name}"],
    }


def rocm_patch(r: Resolved) -> Dict[str, Any]:
    """AMD's device plugin resource instead of NVIDIA's, and the groups that own /dev/kfd and /dev/dri.

    NVIDIA node labels and taints in the spec would keep the pods off AMD nodes:
    selectors on ``nvidia.com/`` labels go, a toleration for ``nvidia.com/gpu``
    becomes one for ``amd.com/gpu``.
    """
    container: Dict[str, Any] = {"name": common.CONTAINER}
    if r.spec.gpus_per_node != "auto":
        container["resources"] = {"limits": {common.NVIDIA_GPU: None, common.AMD_GPU: r.spec.gpus_per_node}}
    pod: Dict[str, Any] = {"securityContext": {"supplementalGroups": list(VENDORS["amd"].host_group_ids)}}
    selector = {key: None for key in r.spec.kubernetes.node_selector if key.startswith("nvidia.com/")}
    if selector:
        pod["nodeSelector"] = selector
    tolerations = [t.to_kubernetes() for t in r.spec.kubernetes.tolerations]
    if any((t.get("key") or "").startswith("nvidia.com/") for t in tolerations):
        pod["tolerations"] = [_amd_toleration(t) for t in tolerations if _amd_toleration(t) is not None]
    pod["containers"] = [container]
    return _statefulset_patch(r, pod)


def _amd_toleration(toleration: Dict[str, Any]) -> "Dict[str, Any] | None":
    key = toleration.get("key") or ""
    if key == common.NVIDIA_GPU:
        return {**toleration, "key": common.AMD_GPU}
    return None if key.startswith("nvidia.com/") else toleration


def rocm_images(r: Resolved) -> List[Dict[str, str]]:
    """Point the image at the AMD vendor's default variant unless the base already runs a ROCm one."""
    if common.is_amd(r):
        return []
    rocm = resolve(r.spec, VENDORS["amd"].default_variant)  # the ROCm overlay's own variant
    return [{"name": rocm.repository, "newTag": rocm.tag}]

