"""The rendered StatefulSet, run as its pods ``<name>-0..N-1`` under ``podman kube play``.

podman 4.3 plays Pods, not StatefulSets, so each pod is made from the
*rendered* ``manifests/base/statefulset.yaml`` (parsed from the renderer's
text, not rebuilt from the spec): the pod template with the name and the
``apps.kubernetes.io/pod-index`` label the controller would give it. Changed,
because one machine is not a cluster (docs/engine.md lists these):

- no cluster DNS: each pod gets a fixed address on a network made for the
  test, and ``hostAliases`` map ``<name>-<i>.<service>.<namespace>.svc.cluster.local``
  to it, as the headless Service would;
- no API server: ``NODEWEAVE_NNODES`` is set to the replica count, since the
  entrypoint cannot read ``.spec.replicas`` (only where the template names none: an elastic range, or the
  training count beside recovery's spares, is the template's own, as in a cluster);
- podman refuses ``fieldRef`` to ``metadata.namespace`` and ``status.podIP``:
  the namespace becomes a literal, ``POD_IP`` is left out;
- podman 4.3 publishes every ``containerPort`` on the host (two pods would
  fight over 29500), so ``ports`` (informational in a cluster) are dropped;
- the workspace claim becomes a ``hostPath`` of the test's directory, and
  the image is the locally built one;
- podman 4.3 makes a disk ``emptyDir`` a *named* volume (the volume's name),
  which every pod with that name shares; a kubelet gives each pod its own, so
  each becomes a ``hostPath`` folder of its own pod (under ``scratch``).
"""

from __future__ import annotations

import copy
import os
from typing import Dict, List

import yaml

POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REFUSED_FIELDS = ("status.podIP",)


def _env(container: dict, namespace: str, extra: Dict[str, str]) -> List[dict]:
    out = []
    for var in container.get("env", []):
        field = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if field == "metadata.namespace":
            var = {"name": var["name"], "value": namespace}
        elif field in REFUSED_FIELDS:
            continue
        if var["name"] not in extra:
            out.append(var)
    return out + [{"name": key, "value": value} for key, value in extra.items()]


def _own_empty_dir(volume: dict, scratch: str, pod: str) -> None:
    """A disk emptyDir as the pod's own folder (owned by the images' UID 1000, group 0, as fsGroup 0 makes it)."""
    folder = os.path.join(scratch, pod, volume["name"])
    os.makedirs(folder, exist_ok=True)
    os.chown(folder, 1000, 0)
    volume.pop("emptyDir")
    volume["hostPath"] = {"path": folder, "type": "Directory"}


def pods_from_statefulset(statefulset_text: str, image: str, workspace: str, addresses: List[str],
                          scratch: str, replicas: int = None) -> List[dict]:
    """Pod documents for ``podman kube play``, one per replica, from the rendered StatefulSet.

    ``scratch`` holds the pods' disk emptyDirs: the caller's own folder, removed with it."""
    sts = yaml.safe_load(statefulset_text)
    assert sts["kind"] == "StatefulSet", sts["kind"]
    name = sts["metadata"]["name"]
    namespace = sts["metadata"].get("namespace", "default")
    service = sts["spec"]["serviceName"]
    count = replicas if replicas is not None else sts["spec"]["replicas"]
    aliases = [{"ip": addresses[i], "hostnames": [f"{name}-{i}.{service}.{namespace}.svc.cluster.local"]}
               for i in range(count)]
    pods = []
    for index in range(count):
        template = copy.deepcopy(sts["spec"]["template"])
        metadata = template["metadata"]
        metadata["name"] = f"{name}-{index}"
        metadata.setdefault("labels", {})[POD_INDEX_LABEL] = str(index)
        metadata["labels"]["statefulset.kubernetes.io/pod-name"] = f"{name}-{index}"
        body = template["spec"]
        body["hostname"] = f"{name}-{index}"
        body["subdomain"] = service
        body["restartPolicy"] = "Never"
        body["hostAliases"] = aliases
        for container in body["containers"]:
            container["image"] = image
            container.pop("ports", None)
            told = any(var["name"] == "NODEWEAVE_NNODES" for var in container.get("env", []))
            container["env"] = _env(container, namespace, {} if told else {"NODEWEAVE_NNODES": str(count)})
        for volume in body.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                volume.pop("persistentVolumeClaim")
                volume["hostPath"] = {"path": workspace, "type": "Directory"}
            elif "emptyDir" in volume and volume["emptyDir"].get("medium") != "Memory":
                _own_empty_dir(volume, scratch, f"{name}-{index}")
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body})
    return pods
