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

from nodeweave.targets.kubernetes import common, placement, storage
from nodeweave.resolve import resolve
from nodeweave.spec import Spec


BATCH = ("job", "jobset")  # Indexed Jobs: the plain one, and each of a JobSet's


def pod_template(spec: Spec, workload: str) -> Dict[str, Any]:
    """The pod template of the ``statefulset``, the indexed ``job`` or the ``jobset``'s Job."""
    metadata: Dict[str, Any] = {"labels": {**common.labels(spec, "trainer"), **spec.kubernetes.pod_labels}}
    annotations = placement.pod_annotations(spec)
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": pod_spec(spec, workload)}


def pod_spec(spec: Spec, workload: str) -> Dict[str, Any]:
    k8s = spec.kubernetes
    body: Dict[str, Any] = {}
    if workload in BATCH:
        # A Job is fixed-size (NODEWEAVE_NNODES is set), so it never asks the API; its own
        # ServiceAccount is still what an OpenShift SCC (IPC_LOCK for RDMA) is granted to.
        body["serviceAccountName"] = spec.name
        body["automountServiceAccountToken"] = False
        if workload == "job":  # a JobSet sets the subdomain of its pods itself
            body["subdomain"] = k8s.service  # hostnames <job>-<N> resolve as <job>-<N>.<service>
        body["restartPolicy"] = "Never"
    else:
        body["serviceAccountName"] = spec.name
    # Service links would add <SERVICE>_PORT=tcp://... for every Service in the
    # namespace; one named "master" would clobber MASTER_PORT for torchrun.
    body["enableServiceLinks"] = False
    body["terminationGracePeriodSeconds"] = k8s.grace_period
    if k8s.scheduler_name:
        body["schedulerName"] = k8s.scheduler_name
    body["securityContext"] = pod_security(spec)
    if k8s.node_selector:
        body["nodeSelector"] = dict(k8s.node_selector)
    if k8s.tolerations:
        body["tolerations"] = [t.to_kubernetes() for t in k8s.tolerations]
    affinity = {"nodeAffinity": placement.node_affinity(spec)} if placement.node_affinity(spec) else {}
    if k8s.anti_affinity != "none":
        affinity["podAntiAffinity"] = anti_affinity(spec)
    if affinity:
        body["affinity"] = affinity
    if k8s.topology_spread:
        body["topologySpreadConstraints"] = placement.topology_spread(spec)
    body["containers"] = [container(spec, workload)]
    body["volumes"] = volumes(spec, workload)
    return body


def pod_security(spec: Spec) -> Dict[str, Any]:
    """Vanilla Kubernetes gets the image's UID; OpenShift assigns its own from the namespace range."""
    if spec.kubernetes.openshift:
        context: Dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    else:
        context = {
            "runAsNonRoot": True,
            "runAsUser": common.RUN_AS_USER,
            "runAsGroup": common.RUN_AS_GROUP,
            "fsGroup": common.FS_GROUP,
            # Re-chowning a multi-terabyte dataset claim at every start is minutes of nothing.
            "fsGroupChangePolicy": "OnRootMismatch",
        }
    if spec.security.seccomp == "unconfined":  # AMD's advice for ROCm performance and profiling
        context["seccompProfile"] = {"type": "Unconfined"}
    vendor = resolve(spec).vendor
    if vendor.key == "amd":
        context["supplementalGroups"] = list(vendor.host_group_ids)
    return context


def container_security(spec: Spec) -> Dict[str, Any]:
    """IPC_LOCK lets RDMA register (pin) memory, plus ``security.cap_add``; OpenShift's restricted-v2 drops ALL."""
    capabilities: Dict[str, Any] = {}
    if spec.kubernetes.openshift:
        capabilities["drop"] = ["ALL"]
    add = ["IPC_LOCK"] if not spec.kubernetes.openshift or common.wants_rdma(spec) else []
    add += [cap for cap in spec.security.cap_add if cap not in add]
    if add:
        capabilities["add"] = add
    return {"allowPrivilegeEscalation": False, "capabilities": capabilities}


def anti_affinity(spec: Spec) -> Dict[str, Any]:
    """One pod per host: NCCL between pods on one host gains nothing and hides topology."""
    term = {"labelSelector": {"matchLabels": common.selector_labels(spec)}, "topologyKey": "kubernetes.io/hostname"}
    if spec.kubernetes.anti_affinity == "required":
        return {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]}


def container(spec: Spec, workload: str) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "name": common.CONTAINER,
        "image": resolve(spec).image,
        "imagePullPolicy": "IfNotPresent",
        "args": [spec.launcher.script, *spec.launcher.args],
        "workingDir": spec.workspace.path,
        "ports": [{"name": common.RENDEZVOUS_PORT_NAME, "containerPort": spec.launcher.master_port, "protocol": "TCP"}],
        "env": env(spec, workload),
    }
    resources = storage.resources(spec)
    if resources:
        body["resources"] = resources
    body["securityContext"] = container_security(spec)
    body["volumeMounts"] = [
        {"name": common.WORKSPACE_VOLUME, "mountPath": spec.workspace.path},
        {"name": common.CACHE_VOLUME, "mountPath": spec.cache.path},
        {"name": common.SHM_VOLUME, "mountPath": "/dev/shm"},
        *storage.extra_mounts(spec),
    ]
    return body


def env(spec: Spec, workload: str) -> List[Dict[str, Any]]:
    if workload in BATCH:
        index = f"metadata.annotations['{common.JOB_INDEX_ANNOTATION}']"
        # A Job pod's name is <job>-<N>-<random>, so no master can be derived from it;
        # its hostname <job>-0 under the subdomain resolves through the DNS search path.
        nnodes = common.contract_env(spec, only=("nnodes",))
        nnodes.append(common.env_var("MASTER_ADDR", common.batch_master(spec, workload)))
    else:
        index = f"metadata.labels['{common.POD_INDEX_LABEL}']"
        # A fixed-size StatefulSet leaves NNODES out: the entrypoint reads .spec.replicas,
        # so `oc scale` needs no edit. An elastic one passes its range to c10d instead.
        nnodes = common.contract_env(spec, only=("nnodes",)) if spec.nodes.elastic else []
    return (common.downward_env(index) + nnodes + common.contract_env(spec, omit=("nnodes",))
            + common.user_env(spec))


def claim_spec(spec: Spec, access_mode: str) -> Dict[str, Any]:
    body: Dict[str, Any] = {"accessModes": [access_mode]}
    if spec.kubernetes.storage_class:
        body["storageClassName"] = spec.kubernetes.storage_class
    body["resources"] = {"requests": {"storage": spec.kubernetes.storage_size}}
    return body


def volumes(spec: Spec, workload: str) -> List[Dict[str, Any]]:
    result: List[Dict[str, Any]] = []
    if spec.kubernetes.claim == "shared":
        result.append({"name": common.WORKSPACE_VOLUME, "persistentVolumeClaim": {"claimName": common.workspace_claim(spec)}})
    elif workload in BATCH:
        # A Job has no volumeClaimTemplates; a generic ephemeral volume gives each pod its own claim.
        template = {"metadata": {"labels": common.labels(spec, "workspace")}, "spec": claim_spec(spec, "ReadWriteOnce")}
        result.append({"name": common.WORKSPACE_VOLUME, "ephemeral": {"volumeClaimTemplate": template}})
    # per-pod StatefulSet: the controller adds the volume from volumeClaimTemplates.
    result.append({"name": common.CACHE_VOLUME, "emptyDir": {"sizeLimit": spec.cache.size}})
    result.append({"name": common.SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": common.SHM_SIZE}})
    return result + storage.extra_volumes(spec)
