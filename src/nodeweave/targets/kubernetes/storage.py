"""The container's resources and the spec's extra volumes, as Kubernetes spells them.

GPUs and RDMA devices are limits of the device plugins; CPU and memory get
requests and limits as the spec gives them; other extended resources and
huge pages are limits (their requests default to the limits). Extra volumes
use their Kubernetes source (claim, ConfigMap, Secret, a sized ``emptyDir``
cache) or else a ``hostPath``; huge pages are an ``emptyDir`` of medium
``HugePages`` at /dev/hugepages.
"""

from __future__ import annotations

from typing import Any, Dict, List

from nodeweave.targets.kubernetes import common
from nodeweave.resolve import Resolved
from nodeweave.spec import Volume

def resource_limits(r: Resolved) -> Dict[str, Any]:
    """GPUs, RDMA resources, then CPU/memory limits, other devices and huge pages."""
    limits: Dict[str, Any] = {}
    gpu = r.gpu_resource
    if gpu is not None:
        limits[gpu] = common.gpu_count(r)
    limits.update(r.spec.network.rdma_resources)
    res = r.spec.resources
    limits.update(res.limits)
    limits.update(res.devices)
    limits.update({f"hugepages-{size}": amount for size, amount in res.hugepages.items()})
    return limits


def resources(r: Resolved) -> Dict[str, Any]:
    body: Dict[str, Any] = {}
    limits = resource_limits(r)
    if limits:
        body["limits"] = limits
    if r.spec.resources.requests:
        body["requests"] = dict(r.spec.resources.requests)
    return body


def extra_volumes(r: Resolved) -> List[Dict[str, Any]]:
    volumes = [_volume(v) for v in r.spec.volumes]
    volumes += [{"name": name, "emptyDir": {"medium": medium}} for name, medium, _ in r.spec.resources.hugepage_mounts]
    return volumes


def extra_mounts(r: Resolved) -> List[Dict[str, Any]]:
    mounts = []
    for v in r.spec.volumes:
        mount: Dict[str, Any] = {"name": v.name, "mountPath": v.path}
        if v.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    mounts += [{"name": name, "mountPath": path} for name, _, path in r.spec.resources.hugepage_mounts]
    return mounts


def _volume(v: Volume) -> Dict[str, Any]:
    kind = v.kubernetes_source
    if kind == "claim":
        return {"name": v.name, "persistentVolumeClaim": {"claimName": v.claim}}
    if kind == "config_map":
        return {"name": v.name, "configMap": {"name": v.config_map}}
    if kind == "secret":
        return {"name": v.name, "secret": {"secretName": v.secret}}
    if kind == "cache":
        return {"name": v.name, "emptyDir": {"sizeLimit": v.cache}}
    return {"name": v.name, "hostPath": {"path": v.host_path}}


def uses_host_paths(r: Resolved) -> bool:
    """Whether a pod mounts a host directory (OpenShift needs an SCC that allows it; PSA baseline forbids it)."""
    return any(v.kubernetes_source == "host_path" for v in r.spec.volumes)
