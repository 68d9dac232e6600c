"""The Kubernetes objects of a training run, as plain dicts in the order people read them.

Two ways to run the same pod: a StatefulSet (long-lived, scalable with
``oc scale``, the entrypoint reads its replica count from the API through the
Role here) and an Indexed Job (batch: fixed size, finishes when the script
does). Both sit behind the same headless Service, whose
``publishNotReadyAddresses`` lets peers resolve each other before any is Ready.
"""

from __future__ import annotations

from typing import Any, Dict

from nodeweave.entrypoint.errors import RECOVERY_FINAL
from nodeweave.targets.kubernetes import common, hardening, placement
from nodeweave.targets.kubernetes.pod import claim_spec, pod_template
from nodeweave.resolve import Resolved


def headless_service(r: Resolved) -> Dict[str, Any]:
    port = r.spec.launcher.master_port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": common.metadata(r, r.spec.kubernetes.service, "rendezvous"),
        "spec": {
            "clusterIP": "None",
            # Rendezvous happens before readiness; without this, DNS names appear too late.
            "publishNotReadyAddresses": True,
            "selector": common.selector_labels(r),
            "ports": [{"name": common.RENDEZVOUS_PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"},
                      *common.metrics_ports(r, "port")],
        },
    }


# Only node 0 serves /metrics: pod index 0 of the StatefulSet, completion index 0 of the Indexed Job (and of a
# JobSet's or TrainJob's). Both labels are set by Kubernetes 1.28+ on the pods themselves.
NODE_0_LABELS = ("__meta_kubernetes_pod_label_apps_kubernetes_io_pod_index",
                 "__meta_kubernetes_pod_label_batch_kubernetes_io_job_completion_index")


def pod_monitor(r: Resolved) -> Dict[str, Any]:
    """The Prometheus Operator's PodMonitor: scrape node 0's ``metrics`` port (docs/observability.md)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": common.metadata(r, f"{r.spec.name}-metrics", "metrics"),
        "spec": {
            "selector": {"matchLabels": common.selector_labels(r)},
            "podMetricsEndpoints": [{
                "port": common.METRICS_PORT_NAME, "path": "/metrics", "interval": "15s",
                "relabelings": [{"action": "keep", "sourceLabels": list(NODE_0_LABELS), "separator": ";",
                                 "regex": "0;.*|.*;0"}],
            }],
        },
    }


def statefulset(r: Resolved) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "serviceName": r.spec.kubernetes.service,
        "replicas": r.spec.containers,  # with recovery: every training slot + the spares
        # All pods start together: rendezvous needs every rank, ordered start only adds waiting.
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": common.selector_labels(r)},
        "template": pod_template(r, "statefulset"),
    }
    if r.spec.kubernetes.claim == "per-pod":
        body["volumeClaimTemplates"] = [
            {"metadata": {"name": common.WORKSPACE_VOLUME, "labels": common.labels(r, "workspace")},
             "spec": claim_spec(r, "ReadWriteOnce")}
        ]  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _metadata(r, "statefulset"),
            "spec": body}


# A pod evicted or preempted by the cluster is not the job's failure: it is replaced, uncounted.
DISRUPTION_IGNORED = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
# Recovery ended the job for good (gave up 8, no progress 9, the job's own error 10): a replacement pod would only
# end the same way (docs/recovery.md), so the Job fails at once; the codes are the entrypoint's one table.
RECOVERY_ENDED = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": list(RECOVERY_FINAL)}}


def indexed_job(r: Resolved) -> Dict[str, Any]:
    """A batch run: ``JOB_COMPLETION_INDEX`` is the node rank; an elastic range starts its largest size, and
    recovery's spares are the indexes after it."""
    size = r.spec.nodes.max + r.spec.recovery.spare_nodes
    body = {"completionMode": "Indexed", "completions": size, "parallelism": size, **failure_policy(r),
            "template": pod_template(r, "job")}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _metadata(r, "job"), "spec": body}


def failure_policy(r: Resolved) -> Dict[str, Any]:
    """What a failed pod does to the Job (and so to a JobSet, whose Job this is).

    Without recovery one lost rank fails the whole collective: the first failed pod fails the Job (restarts
    are torchrun's, in place). With recovery node 0 goes on without a lost pod (a spare takes its place), so
    the Job must not end with it: each index may fail once and is recreated under the same name, to check in
    again and wait as a spare (``backoffLimitPerIndex: 1``, as nodeweave never takes back a node left out
    twice); the Job ends only when more indexes fail for good than the job can spare, or at once when recovery
    ended the job for good (exit 8, 9 or 10).
    """
    if not r.spec.recovery.enabled:
        return {"backoffLimit": 0, "podFailurePolicy": {"rules": [DISRUPTION_IGNORED]}}
    room = r.spec.recovery.spare_nodes + r.spec.nodes.max - r.spec.nodes.min  # spares, and an elastic job's range
    return {"backoffLimitPerIndex": 1, "maxFailedIndexes": room,
            "podFailurePolicy": {"rules": [RECOVERY_ENDED, DISRUPTION_IGNORED]}}


def _metadata(r: Resolved, workload: str) -> Dict[str, Any]:
    """The workload's metadata, with the checkov findings it keeps on purpose annotated with their reasons."""
    body = placement.workload_metadata(r, "trainer")
    skips = hardening.checkov_skips(r, workload)
    if skips:
        body["annotations"] = {**body.get("annotations", {}), **skips}
    return body


def workspace_claim(r: Resolved) -> Dict[str, Any]:
    """The one ReadWriteMany claim every pod mounts (``claim: shared``); `nodeweave sync` fills it."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": common.metadata(r, common.workspace_claim(r), "workspace"),
        "spec": claim_spec(r, "ReadWriteMany"),
    }


def service_account(r: Resolved) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": common.metadata(r, r.spec.name, "rbac")}


def role(r: Resolved) -> Dict[str, Any]:
    """Just enough for the entrypoint to read its peers' pods, and the replica count where it reads it (a StatefulSet
    told NODEWEAVE_NNODES never does: no grant it does not use, walk15b B8)."""
    replicas = [{"apiGroups": ["apps"], "resources": ["statefulsets"], "resourceNames": [r.spec.name],
                 "verbs": ["get"]}] if common.reads_replicas(r) else []
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": common.metadata(r, r.spec.name, "rbac"),
        "rules": [*replicas, {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }


def role_binding(r: Resolved) -> Dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": common.metadata(r, r.spec.name, "rbac"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": r.spec.name},
        "subjects": [{"kind": "ServiceAccount", "name": r.spec.name, "namespace": r.spec.kubernetes.namespace}],
    }
