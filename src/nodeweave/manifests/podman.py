"""The StatefulSet's pod, as the Pod ``<name>-<N>`` that ``podman kube play`` (4.3+) runs on one machine.

This is the same pod template the cluster gets, not a copy, changed only where
a single machine lacks what a cluster has. Checked against podman 4.3.1:
``fieldRef`` to ``metadata.namespace`` or ``status.podIP`` is refused
outright ("fieldPath ... is either not valid or not supported"), so the
namespace becomes a literal and ``POD_IP`` is left to the entrypoint (it
finds its address itself); the StatefulSet controller's pod-index label and
per-pod claim are added by hand; and with no API to read replicas from,
``NODEWEAVE_NNODES`` is given. Podman ignores affinity, tolerations, node
selectors and extended resource limits, and mounts a memory ``emptyDir`` on
disk.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Optional

from nodeweave.manifests import common
from nodeweave.manifests.pod import pod_template

UNSUPPORTED_FIELDS = ("metadata.namespace", "status.podIP")


def kube_play_pod(spec, index: int, image: Optional[str] = None, extra_env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Pod ``<name>-<index>`` of the StatefulSet, runnable by ``podman kube play``.

    ``image`` replaces the registry image (a local build); ``extra_env`` adds or
    overrides variables (e.g. ``MASTER_ADDR`` where no cluster DNS exists).
    """
    template = copy.deepcopy(pod_template(spec, "statefulset"))
    metadata = template["metadata"]
    metadata["name"] = f"{spec.name}-{index}"
    metadata["labels"][common.POD_INDEX_LABEL] = str(index)
    body = template["spec"]
    body["restartPolicy"] = "Never"
    if spec.kubernetes.claim == "per-pod":
        # What the StatefulSet controller adds from volumeClaimTemplates: claim <template>-<pod>.
        claim = {"claimName": f"{common.WORKSPACE_VOLUME}-{metadata['name']}"}
        body["volumes"].insert(0, {"name": common.WORKSPACE_VOLUME, "persistentVolumeClaim": claim})
    container = body["containers"][0]
    if image is not None:
        container["image"] = image
    env = [_local(var, spec) for var in container["env"]]
    env = [var for var in env if var is not None]
    overrides = {"NODEWEAVE_NNODES": str(spec.nodes), **(extra_env or {})}
    env = [var for var in env if var["name"] not in overrides]
    container["env"] = env + [common.env_var(name, value) for name, value in overrides.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}


def _local(var: Dict[str, Any], spec) -> "Dict[str, Any] | None":
    field = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    if field == "metadata.namespace":
        return common.env_var(var["name"], spec.kubernetes.namespace)
    if field in UNSUPPORTED_FIELDS:
        return None
    return var
