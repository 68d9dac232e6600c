"""Names, labels, image and environment shared by every manifest.

One place decides what the objects are called and how they find each other
(selector labels, Service name, claim names), so the StatefulSet, the Job,
the Service and the overlays can never disagree.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List

from nodeweave.errors import UsageError

CONTAINER = "trainer"
RENDEZVOUS_PORT_NAME = "rendezvous"
WORKSPACE_VOLUME = "workspace"
CACHE_VOLUME = "cache"
SHM_VOLUME = "dshm"
# A memory-backed /dev/shm counts against the pod's memory; the limit keeps a
# runaway DataLoader from taking the node. NCCL's own use is a few hundred MiB.
SHM_SIZE = "64Gi"
# The images' own `USER 1000:0`: files are group 0 with g=u, which is also how
# OpenShift's arbitrary UID (always in group 0) can write them.
RUN_AS_USER = 1000
RUN_AS_GROUP = 0
FS_GROUP = 0
# Host groups that own /dev/kfd and /dev/dri/renderD* on common distributions
# (video 44 everywhere; render 109 on Ubuntu 22.04/24.04). Check `getent group video render` on the nodes.
AMD_DEVICE_GROUPS = (44, 109)
ROCM_OVERLAY_VARIANT = "rocm70"
NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
JOB_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"


def selector_labels(spec) -> Dict[str, str]:
    """Labels that pick this job's pods: Service selector, anti-affinity, StatefulSet selector."""
    return {"app.kubernetes.io/name": "nodeweave", "app.kubernetes.io/instance": spec.name}


def labels(spec, component: str) -> Dict[str, str]:
    return {**selector_labels(spec), "app.kubernetes.io/component": component, "app.kubernetes.io/managed-by": "nodeweave"}


def metadata(spec, name: str, component: str) -> Dict[str, Any]:
    return {"name": name, "namespace": spec.kubernetes.namespace, "labels": labels(spec, component)}


def workspace_claim(spec) -> str:
    """The shared ReadWriteMany claim's name (``claim: shared``)."""
    return f"{spec.name}-workspace"


def image_repository(spec) -> str:
    return f"{spec.image.registry}/{spec.name}" if spec.image.registry else spec.name


def image(spec) -> str:
    """``<registry>/<name>:<variant>`` (the moving tag every build pushes), or the spec's fixed tag."""
    return f"{image_repository(spec)}:{spec.image.tag or spec.image.variant}"


def _variant(variant: str):
    catalogue = importlib.import_module("nodeweave.images.catalogue")  # lazily: renderers stay independent
    return catalogue.get_variant(variant)


def gpu_vendor(variant: str) -> str:
    """``nvidia``, ``amd`` or ``cpu``: the images catalogue knows which GPU stack a variant carries."""
    return _variant(variant).vendor


def gpu_resource(spec) -> "str | None":
    """The device plugin's extended resource (``nvidia.com/gpu``, ``amd.com/gpu``), None for cpu."""
    return _variant(spec.image.variant).gpu_resource


def gpu_count(spec) -> int:
    """GPUs to request: Kubernetes schedules a count, so "auto" cannot be rendered for a GPU variant."""
    if spec.gpus_per_node == "auto":
        raise UsageError(
            f"gpus_per_node: 'auto' cannot go into Kubernetes manifests for variant "
            f"{spec.image.variant!r}: the device plugin needs a GPU count to schedule pods; "
            "accepted: an integer from 1 to 1024 (e.g. 8)"
        )
    return spec.gpus_per_node


def wants_rdma(spec) -> bool:
    """RDMA registers (locks) memory: only then does the pod need IPC_LOCK on OpenShift."""
    return bool(spec.network.rdma_resources or spec.network.attachments)


def env_var(name: str, value: str) -> Dict[str, str]:
    return {"name": name, "value": value}


def field_env(name: str, field_path: str) -> Dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def downward_env(index_field: str) -> List[Dict[str, Any]]:
    """Who the pod is, from the downward API; ``index_field`` gives NODEWEAVE_POD_INDEX."""
    return [
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        field_env("POD_IP", "status.podIP"),
        field_env("NODEWEAVE_POD_INDEX", index_field),
    ]


def nodeweave_env(spec) -> List[Dict[str, str]]:
    """The entrypoint's settings (docs/design.md), then the spec's own ``env`` untouched."""
    settings = [
        env_var("NODEWEAVE_SERVICE", spec.kubernetes.service),
        env_var("NODEWEAVE_LAUNCHER", spec.launcher.type),
        env_var("NODEWEAVE_NPROC_PER_NODE", str(spec.gpus_per_node)),
        env_var("NODEWEAVE_MASTER_PORT", str(spec.launcher.master_port)),
        env_var("NODEWEAVE_MAX_RESTARTS", str(spec.launcher.max_restarts)),
        env_var("NODEWEAVE_WAIT_TIMEOUT", str(spec.launcher.wait_timeout)),
    ]
    if spec.network.interfaces:
        settings.append(env_var("NODEWEAVE_INTERFACES", ",".join(spec.network.interfaces)))
    if spec.network.exclude_hcas:
        settings.append(env_var("NODEWEAVE_EXCLUDE_HCAS", ",".join(spec.network.exclude_hcas)))
    return settings + [env_var(key, value) for key, value in spec.env.items()]
