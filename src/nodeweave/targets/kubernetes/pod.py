"""The training pod: one container running the image's entrypoint, shared by StatefulSet and Job.

The entrypoint learns who it is from the downward API (pod name, namespace,
IP, index) and what to run from ``NODEWEAVE_*`` variables, so the template
holds no per-pod values and a StatefulSet can be scaled without editing it.
Apart from two downward-API fields podman 4.3 refuses (``metadata.namespace``,
``status.podIP``: the e2e harness substitutes them), the template is what
``podman kube play`` runs as a plain Pod, so the same text is exercised on one
machine; nothing here may need more than that.
"""

from __future__ import annotations

from typing import Any, Dict, List

from nodeweave.targets.kubernetes import common, hardening, placement, storage
from nodeweave.resolve import Resolved


BATCH = ("job", "jobset")  # Indexed Jobs: the plain one, and each of a JobSet's


def pod_template(r: Resolved, workload: str) -> Dict[str, Any]:
    """The pod template of the ``statefulset``, the indexed ``job`` or the ``jobset``'s Job."""
    metadata: Dict[str, Any] = {"labels": {**common.labels(r, "trainer"), **r.spec.kubernetes.pod_labels}}
    annotations = placement.pod_annotations(r)
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": pod_spec(r, workload)}


def pod_spec(r: Resolved, workload: str) -> Dict[str, Any]:
    k8s = r.spec.kubernetes
    body: Dict[str, Any] = {}
    if workload in BATCH:
        # A Job is fixed-size (NODEWEAVE_NNODES is set), so it never asks the API; its own
        # ServiceAccount is still what an OpenShift SCC (IPC_LOCK for RDMA) is granted to.
        body["serviceAccountName"] = r.spec.name
        body["automountServiceAccountToken"] = False
        if workload == "job":  # a JobSet sets the subdomain of its pods itself
            body["subdomain"] = k8s.service  # hostnames <job>-<N> resolve as <job>-<N>.<service>
        body["restartPolicy"] = "Never"
    else:
        body["serviceAccountName"] = r.spec.name
    # Service links would add <SERVICE>_PORT=tcp://... for every Service in the
    # namespace; one named "master" would clobber MASTER_PORT for torchrun.
    body["enableServiceLinks"] = False
    body["terminationGracePeriodSeconds"] = k8s.grace_period
    if k8s.scheduler_name:
        body["schedulerName"] = k8s.scheduler_name
    body["securityContext"] = pod_security(r)
    if k8s.node_selector:
        body["nodeSelector"] = dict(k8s.node_selector)
    if k8s.tolerations:
        body["tolerations"] = [t.to_kubernetes() for t in k8s.tolerations]
    affinity = {"nodeAffinity": placement.node_affinity(r)} if placement.node_affinity(r) else {}
    if k8s.anti_affinity != "none":
        affinity["podAntiAffinity"] = anti_affinity(r)
    if affinity:
        body["affinity"] = affinity
    if k8s.topology_spread:
        body["topologySpreadConstraints"] = placement.topology_spread(r)
    body["containers"] = [container(r, workload)]
    body["volumes"] = volumes(r, workload)
    return body


def pod_security(r: Resolved) -> Dict[str, Any]:
    """Vanilla Kubernetes gets the image's UID; OpenShift assigns its own from the namespace range."""
    if r.spec.kubernetes.openshift:
        context: Dict[str, Any] = {"runAsNonRoot": True}
    else:
        context = {
            "runAsNonRoot": True,
            "runAsUser": common.RUN_AS_USER,
            "runAsGroup": common.RUN_AS_GROUP,
            "fsGroup": common.FS_GROUP,
            # Re-chowning a multi-terabyte dataset claim at every start is minutes of nothing.
            "fsGroupChangePolicy": "OnRootMismatch",
        }
    # RuntimeDefault, or Unconfined where the spec asks (AMD's advice for ROCm performance and profiling)
    context["seccompProfile"] = hardening.seccomp(r)
    vendor = r.vendor
    if vendor.key == "amd":
        context["supplementalGroups"] = list(vendor.host_group_ids)
    return context


def container_security(r: Resolved) -> Dict[str, Any]:
    """ALL capabilities dropped, IPC_LOCK back with RDMA plus ``security.cap_add`` (kubernetes.hardening)."""
    return hardening.container_security(r)


def anti_affinity(r: Resolved) -> Dict[str, Any]:
    """One pod per host: NCCL between pods on one host gains nothing and hides topology."""
    term = {"labelSelector": {"matchLabels": common.selector_labels(r)}, "topologyKey": "kubernetes.io/hostname"}
    if r.spec.kubernetes.anti_affinity == "required":
        return {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]}


def container(r: Resolved, workload: str) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "name": common.CONTAINER,
        "image": r.image,
        "imagePullPolicy": "IfNotPresent",
        "args": [r.spec.launcher.script, *r.spec.launcher.args],
        "workingDir": r.spec.workspace.path,
        "ports": [{"name": common.RENDEZVOUS_PORT_NAME, "containerPort": r.spec.launcher.master_port, "protocol": "TCP"},
                  *common.metrics_ports(r, "containerPort")],
        "env": env(r, workload),
    }
    resources = storage.resources(r)
    if resources:
        body["resources"] = resources
    body["securityContext"] = container_security(r)
    body["readinessProbe"] = hardening.readiness_probe()
    body["volumeMounts"] = [
        {"name": common.WORKSPACE_VOLUME, "mountPath": r.spec.workspace.path},
        {"name": common.CACHE_VOLUME, "mountPath": r.spec.cache.path},
        {"name": common.SHM_VOLUME, "mountPath": "/dev/shm"},
        *hardening.scratch_mounts(r),
        *storage.extra_mounts(r),
    ]
    return body


def env(r: Resolved, workload: str) -> List[Dict[str, Any]]:
    if workload in BATCH:
        index = f"metadata.annotations['{common.JOB_INDEX_ANNOTATION}']"
        # A Job pod's name is <job>-<N>-<random>, so no master can be derived from it;
        # its hostname <job>-0 under the subdomain resolves through the DNS search path.
        nnodes = common.contract_env(r, only=("nnodes",))
        nnodes.append(common.env_var("MASTER_ADDR", common.batch_master(r, workload)))
    else:
        index = f"metadata.labels['{common.POD_INDEX_LABEL}']"
        # A fixed-size StatefulSet leaves NNODES out: the entrypoint reads .spec.replicas,
        # so `oc scale` needs no edit. An elastic one passes its range to c10d instead, and one with
        # recovery's spares the training count (the replicas count the spares too).
        nnodes = [] if common.reads_replicas(r) else common.contract_env(r, only=("nnodes",))
    return (common.downward_env(index) + nnodes + common.contract_env(r, omit=("nnodes",), batch=workload in BATCH)
            + common.user_env(r))


def claim_spec(r: Resolved, access_mode: str) -> Dict[str, Any]:
    body: Dict[str, Any] = {"accessModes": [access_mode]}
    if r.spec.kubernetes.storage_class:
        body["storageClassName"] = r.spec.kubernetes.storage_class
    body["resources"] = {"requests": {"storage": r.spec.kubernetes.storage_size}}
    return body


def volumes(r: Resolved, workload: str) -> List[Dict[str, Any]]:
    result: List[Dict[str, Any]] = []
    if r.spec.kubernetes.claim == "shared":
        result.append({"name": common.WORKSPACE_VOLUME, "persistentVolumeClaim": {"claimName": common.workspace_claim(r)}})
    elif workload in BATCH:
        # A Job has no volumeClaimTemplates; a generic ephemeral volume gives each pod its own claim.
        template = {"metadata": {"labels": common.labels(r, "workspace")}, "spec": claim_spec(r, "ReadWriteOnce")}
        result.append({"name": common.WORKSPACE_VOLUME, "ephemeral": {"volumeClaimTemplate": template}})
    # per-pod StatefulSet: the controller adds the volume from volumeClaimTemplates.
    result.append({"name": common.CACHE_VOLUME, "emptyDir": {"sizeLimit": r.spec.cache.size}})
    result.append({"name": common.SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": common.SHM_SIZE}})
    return result + hardening.scratch_volumes(r) + storage.extra_volumes(r)
