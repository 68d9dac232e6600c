"""The Kubernetes objects of a training run, as plain dicts in the order people read them.

Two ways to run the same pod: a StatefulSet (long-lived, scalable with
``oc scale``, the entrypoint reads its replica count from the API through the
Role here) and an Indexed Job (batch: fixed size, finishes when the script
does). Both sit behind the same headless Service, whose
``publishNotReadyAddresses`` lets peers resolve each other before any is Ready.
"""

from __future__ import annotations

from typing import Any, Dict

from nodeweave.targets.kubernetes import common, placement
from nodeweave.targets.kubernetes.pod import claim_spec, pod_template
from nodeweave.spec import Spec


def headless_service(spec: Spec) -> Dict[str, Any]:
    port = spec.launcher.master_port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": common.metadata(spec, spec.kubernetes.service, "rendezvous"),
        "spec": {
            "clusterIP": "None",
            # Rendezvous happens before readiness; without this, DNS names appear too late.
            "publishNotReadyAddresses": True,
            "selector": common.selector_labels(spec),
            "ports": [{"name": common.RENDEZVOUS_PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def statefulset(spec: Spec) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "serviceName": spec.kubernetes.service,
        "replicas": spec.nodes.min,
        # All pods start together: rendezvous needs every rank, ordered start only adds waiting.
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": common.selector_labels(spec)},
        "template": pod_template(spec, "statefulset"),
    }
    if spec.kubernetes.claim == "per-pod":
        body["volumeClaimTemplates"] = [
            {"metadata": {"name": common.WORKSPACE_VOLUME, "labels": common.labels(spec, "workspace")},
             "spec": claim_spec(spec, "ReadWriteOnce")}
        ]  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": placement.workload_metadata(spec, "trainer"),
            "spec": body}


def indexed_job(spec: Spec) -> Dict[str, Any]:
    """A batch run: ``JOB_COMPLETION_INDEX`` is the node rank; an elastic range starts its largest size."""
    size = spec.nodes.max
    body = {
        "completionMode": "Indexed",
        "completions": size,
        "parallelism": size,
        # One lost rank fails the whole collective; restarts are torchrun's --max-restarts, in place.
        "backoffLimit": 0,
        # ...but a pod evicted or preempted by the cluster does not count as a failure.
        "podFailurePolicy": {
            "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
        },
        "template": pod_template(spec, "job"),
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": placement.workload_metadata(spec, "trainer"), "spec": body}


def workspace_claim(spec: Spec) -> Dict[str, Any]:
    """The one ReadWriteMany claim every pod mounts (``claim: shared``); `nodeweave sync` fills it."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": common.metadata(spec, common.workspace_claim(spec), "workspace"),
        "spec": claim_spec(spec, "ReadWriteMany"),
    }


def service_account(spec: Spec) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": common.metadata(spec, spec.name, "rbac")}


def role(spec: Spec) -> Dict[str, Any]:
    """Just enough for the entrypoint to read the replica count and its peers' pods."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": common.metadata(spec, spec.name, "rbac"),
        "rules": [
            {"apiGroups": ["apps"], "resources": ["statefulsets"], "resourceNames": [spec.name], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        ],
    }


def role_binding(spec: Spec) -> Dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": common.metadata(spec, spec.name, "rbac"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": spec.name},
        "subjects": [{"kind": "ServiceAccount", "name": spec.name, "namespace": spec.kubernetes.namespace}],
    }
