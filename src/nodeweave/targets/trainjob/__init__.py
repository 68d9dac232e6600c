"""Kubeflow Trainer (``trainer.kubeflow.org/v1alpha1``): the spec as a TrainJob on the torch-distributed runtime.

``render_files(spec)`` writes ``kubeflow/``: the ServiceAccount, the shared
workspace claim and a TrainJob. Trainer's torch plugin sets ``PET_NNODES``,
``PET_NPROC_PER_NODE``, ``PET_NODE_RANK`` and ``PET_MASTER_ADDR``/``PORT``
(``<name>-node-0-0.<name>:29500``), which the entrypoint reads, so the
TrainJob carries only the rest of the contract. The pod settings Trainer lets
a TrainJob patch (``runtimePatches``: security, placement, volumes, mounts)
come from the same code as the StatefulSet's; those it does not
(``topologySpreadConstraints``, ``schedulerName``) are the runtime's to set,
and docs/kubernetes.md says so. Checked against Trainer v2.3.0's CRD schema
(tests/fixtures/schemas/trainjob.json). Pure and byte-stable.
"""

from __future__ import annotations

from typing import Any, Dict, List

from nodeweave.targets.kubernetes import common, placement, storage
from nodeweave.targets.kubernetes.kustomize import workload_tree
from nodeweave.targets.kubernetes.pod import container_security, pod_template
from nodeweave.resolve import Resolved, resolve
from nodeweave.spec import Spec

FOLDER = "kubeflow"
RUNTIME = "torch-distributed"  # the ClusterTrainingRuntime Trainer installs
ENTRYPOINT = ["tini", "-g", "--", "nodeweave-entrypoint"]  # the image's own; a TrainJob's command replaces it
# What Trainer's runtimePatches accept of a pod and of its container (v2.3.0).
POD_PATCH_KEYS = ("affinity", "nodeSelector", "securityContext", "serviceAccountName", "terminationGracePeriodSeconds",
                  "tolerations", "volumes")
# Trainer's torch plugin sets the node count, processes per node, rank, master and port (PET_*).
FROM_TRAINER = ("nnodes", "service", "master_port", "nproc_per_node")


def _env(r: Resolved) -> List[Dict[str, Any]]:
    downward = [e for e in common.downward_env("") if e["name"] != "NODEWEAVE_POD_INDEX"]
    # PET_NNODES counts recovery's spares too (numNodes); the training count goes beside it
    omit = [key for key in FROM_TRAINER if not (key == "nnodes" and r.spec.recovery.spare_nodes)]
    return downward + common.contract_env(r, omit=omit, batch=True) + common.user_env(r)


def _trainer(r: Resolved) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "image": r.image,
        "command": list(ENTRYPOINT),
        "args": [r.spec.launcher.script, *r.spec.launcher.args],
        "env": _env(r),
        "numNodes": r.spec.nodes.max + r.spec.recovery.spare_nodes,  # spares: the nodes after the training ones
    }
    if r.spec.gpus_per_node != "auto":
        body["numProcPerNode"] = r.spec.gpus_per_node
    resources = storage.resources(r)
    if resources:
        body["resourcesPerNode"] = resources
    return body


def _pod_patch(r: Resolved) -> Dict[str, Any]:
    template = pod_template(r, "jobset")
    pod = {key: value for key, value in template["spec"].items() if key in POD_PATCH_KEYS}
    mounts = template["spec"]["containers"][0]["volumeMounts"]
    pod["containers"] = [{"name": common.REPLICATED_JOB, "securityContext": container_security(r), "volumeMounts": mounts}]
    return {"metadata": template["metadata"], "spec": pod}


def trainjob(r: Resolved) -> Dict[str, Any]:
    patch = {"name": common.REPLICATED_JOB, "template": {"spec": {"template": _pod_patch(r)}}}
    body = {
        "runtimeRef": {"name": RUNTIME},
        "trainer": _trainer(r),
        "runtimePatches": [{"manager": "nodeweave",
                            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [patch]}}}}],
    }
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": placement.workload_metadata(r, "trainer"), "spec": body}  # fmt: skip


def render_files(spec: Spec) -> Dict[str, str]:
    r = resolve(spec)  # the one derivation of this render: every part below reads it
    return workload_tree(r, FOLDER, "trainjob", ("trainjob.yaml", trainjob(r)))
