"""The job's NetworkPolicy: its pods admit ingress only from pods of the same job (and what the spec lists).

NCCL, Gloo and torchrun's TCPStore listen on the master port and on random
ports, and the check-in exchange, the sync relay's hops and the resident
agents on ports of their own, so a policy cannot name the ports: it admits
every port, but only from pods carrying this job's selector labels. The
spec's ``kubernetes.ingress_from`` adds peers (a metrics scraper in another
namespace, ...). Egress is left alone (image pulls, datasets, the API
server). ``kubectl exec``, ``port-forward``, ``logs`` and the probes go
through the kubelet, not the pod network, so nothing nodeweave does needs
more. A CNI without NetworkPolicy support (flannel alone) ignores it.
"""

from __future__ import annotations

from typing import Any, Dict, List

from nodeweave.resolve import Resolved
from nodeweave.targets.kubernetes import common


def network_policy(r: Resolved) -> Dict[str, Any]:
    spec = r.spec
    rules: List[Dict[str, Any]] = [{"from": [{"podSelector": {"matchLabels": common.selector_labels(r)}}]}]
    for peer in spec.kubernetes.ingress_from:
        source: Dict[str, Any] = {}
        if peer.namespace_labels:
            source["namespaceSelector"] = {"matchLabels": dict(peer.namespace_labels)}
        if peer.pod_labels:
            source["podSelector"] = {"matchLabels": dict(peer.pod_labels)}
        rule: Dict[str, Any] = {"from": [source]}
        if peer.ports:
            rule["ports"] = [{"port": port, "protocol": "TCP"} for port in peer.ports]
        rules.append(rule)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": common.metadata(r, f"{spec.name}-same-job", "network"),
        "spec": {"podSelector": {"matchLabels": common.selector_labels(r)}, "policyTypes": ["Ingress"],
                 "ingress": rules},
    }
