"""Names, labels, image and environment shared by every manifest.

One place decides what the objects are called and how they find each other
(selector labels, Service name, claim names), so the StatefulSet, the Job,
the Service and the overlays can never disagree.
"""

from __future__ import annotations

from typing import Any, Collection, Dict, List

from nodeweave.errors import UsageError
from nodeweave.resolve import Resolved

CONTAINER = "trainer"
RENDEZVOUS_PORT_NAME = "rendezvous"
METRICS_PORT_NAME = "metrics"  # node 0's /metrics (docs/observability.md); the PodMonitor scrapes it by name
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
NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
JOB_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# The replicated Job of a JobSet (and of a Kubeflow TrainJob's JobSet): pods <name>-node-<job>-<index>.
REPLICATED_JOB = "node"


MODE_VARIABLE = "NODEWEAVE_MODE"


def batch_master(r: "Resolved", workload: str) -> str:
    """Node 0's host name behind the Service, for an Indexed Job (``<name>-0``) or a JobSet (``<name>-node-0-0``)."""
    host = f"{r.spec.name}-{REPLICATED_JOB}-0-0" if workload == "jobset" else f"{r.spec.name}-0"
    return f"{host}.{r.spec.kubernetes.service}"


def selector_labels(r: Resolved) -> Dict[str, str]:
    """Labels that pick this job's pods: Service selector, anti-affinity, StatefulSet selector."""
    return {"app.kubernetes.io/name": "nodeweave", "app.kubernetes.io/instance": r.spec.name}


def labels(r: Resolved, component: str) -> Dict[str, str]:
    return {**selector_labels(r), "app.kubernetes.io/component": component, "app.kubernetes.io/managed-by": "nodeweave"}


# checkov's CKV_K8S_21 finds every object of a spec that leaves kubernetes.namespace at "default".
DEFAULT_NAMESPACE_SKIP = {"checkov.io/skip0": "CKV_K8S_21=kubernetes.namespace is default in this spec: set it, or "
                                              "apply with -n (nodeweave up --namespace)"}


def metadata(r: Resolved, name: str, component: str) -> Dict[str, Any]:
    body = {"name": name, "namespace": r.spec.kubernetes.namespace, "labels": labels(r, component)}
    if r.spec.kubernetes.namespace == "default":
        body["annotations"] = dict(DEFAULT_NAMESPACE_SKIP)
    return body


def workspace_claim(r: Resolved) -> str:
    """The shared ReadWriteMany claim's name (``claim: shared``)."""
    return f"{r.spec.name}-workspace"


def is_amd(r: Resolved) -> bool:
    return r.vendor.key == "amd"


def gpu_count(r: Resolved) -> int:
    """GPUs to request: Kubernetes schedules a count, so "auto" cannot be rendered for a GPU variant."""
    if r.spec.gpus_per_node == "auto":
        raise UsageError(
            f"gpus_per_node: 'auto' cannot go into Kubernetes manifests for variant "
            f"{r.spec.image.variant!r}: the device plugin needs a GPU count to schedule pods; "
            "accepted: an integer from 1 to 1024 (e.g. 8)"
        )
    return r.spec.gpus_per_node


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


def reads_replicas(r: Resolved) -> bool:
    """Whether the StatefulSet's entrypoint asks the API for its ``.spec.replicas`` (the Role grants that get):
    only a fixed-size one without spares. An elastic one is told its range and one with recovery's spares its
    training count (``NODEWEAVE_NNODES``), so what a manifest says of the API read holds only here (walk15b B8)."""
    return not (r.spec.nodes.elastic or r.spec.recovery.spare_nodes)


def contract_env(r: Resolved, omit: Collection[str] = (), only=None, batch: bool = False) -> List[Dict[str, str]]:
    """The entrypoint's NODEWEAVE_* settings from the spec (nodeweave.entrypoint.planning.contract).

    ``batch``: a Job, JobSet or TrainJob, which exists to run once; ``launcher.mode`` is for
    the long-lived StatefulSet (hold it for ``nodeweave run``), so a batch workload always runs.
    """
    pairs = r.contract_env("kubernetes", omit=omit, only=only)
    return [env_var(name, "run" if batch and name == MODE_VARIABLE else text) for name, text in pairs]


def user_env(r: Resolved) -> List[Dict[str, str]]:
    """The spec's own ``env``, untouched."""
    return [env_var(key, value) for key, value in r.spec.env.items()]


def metrics_ports(r: "Resolved", key: str) -> List[Dict[str, Any]]:
    """Node 0's metrics port as a container (``containerPort``) or Service (``port``) port entry; none when off."""
    metrics = r.spec.metrics
    if not metrics.enabled:
        return []
    entry: Dict[str, Any] = {"name": METRICS_PORT_NAME, key: metrics.port}
    if key == "port":
        entry["targetPort"] = metrics.port
    entry["protocol"] = "TCP"
    return [entry]
