"""Where the pods may run and who schedules them: node affinity, spreading, scheduler and queue.

The spec's own ``anti_affinity`` (one pod per host) stays in ``pod.py``;
these are the additions a cluster's layout asks for: pin to named nodes or
node labels, spread across zones or racks, hand the pods to another
scheduler (Volcano) or a queue (Kueue's LocalQueue label, Volcano's queue
annotation).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from nodeweave.targets.kubernetes import common
from nodeweave.resolve import Resolved

HOSTNAME_LABEL = "kubernetes.io/hostname"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
VOLCANO = "volcano"


def node_affinity(r: Resolved) -> Optional[Dict[str, Any]]:
    """Required node affinity from ``node_affinity`` terms and ``node_names`` (all must match)."""
    k8s = r.spec.kubernetes
    expressions = [term.to_kubernetes() for term in k8s.node_affinity]
    if k8s.node_names:
        expressions.append({"key": HOSTNAME_LABEL, "operator": "In", "values": list(k8s.node_names)})
    if not expressions:
        return None
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}


def topology_spread(r: Resolved) -> List[Dict[str, Any]]:
    return [
        {"maxSkew": t.max_skew, "topologyKey": t.topology_key, "whenUnsatisfiable": t.when_unsatisfiable,
         "labelSelector": {"matchLabels": common.selector_labels(r)}}
        for t in r.spec.kubernetes.topology_spread
    ]  # fmt: skip


def volcano_queue(r: Resolved) -> bool:
    return r.spec.kubernetes.queue is not None and r.spec.kubernetes.scheduler_name == VOLCANO


def workload_labels(r: Resolved, component: str) -> Dict[str, str]:
    """The workload's labels: nodeweave's, the spec's, and Kueue's queue label (Kueue admits the workload)."""
    labels = {**common.labels(r, component), **r.spec.kubernetes.labels}
    if r.spec.kubernetes.queue is not None and not volcano_queue(r):
        labels[KUEUE_QUEUE_LABEL] = r.spec.kubernetes.queue
    return labels


def workload_metadata(r: Resolved, component: str) -> Dict[str, Any]:
    body = {"name": r.spec.name, "namespace": r.spec.kubernetes.namespace, "labels": workload_labels(r, component)}
    annotations = {**(common.DEFAULT_NAMESPACE_SKIP if r.spec.kubernetes.namespace == "default" else {}),
                   **r.spec.kubernetes.annotations}
    if annotations:
        body["annotations"] = annotations
    return body


def pod_annotations(r: Resolved) -> Dict[str, str]:
    """SR-IOV networks (Multus), the spec's pod annotations, and Volcano's queue."""
    annotations: Dict[str, str] = {}
    if r.spec.network.attachments:
        annotations[common.NETWORKS_ANNOTATION] = ",".join(r.spec.network.attachments)
    annotations.update(r.spec.kubernetes.pod_annotations)
    if volcano_queue(r):
        annotations[VOLCANO_QUEUE_ANNOTATION] = r.spec.kubernetes.queue
    return annotations
