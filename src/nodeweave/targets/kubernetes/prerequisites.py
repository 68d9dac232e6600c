"""What the job's pods reference that ``apply -k`` of the rendered tree does not make (walk6, W10/W33/W37).

A ConfigMap, Secret or claim a volume names, a NetworkAttachmentDefinition an SR-IOV attachment names,
the SCC a cluster admin grants, the PodMonitor left out of the kustomization: without the first ones
every pod waits in ``ContainerCreating``/``Pending`` and ``up`` waits its whole timeout for nothing. Pure:
the Kubernetes backend turns these into its plan's notes and into one ``get`` before its ``apply``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from nodeweave.resolve import Resolved

NAD_RESOURCE = "network-attachment-definitions.k8s.cni.cncf.io"  # the Multus CRD's plural, for `kubectl get`


@dataclass(frozen=True)
class Needed:
    """One object the pods reference and ``up`` does not apply, in ``namespace``."""

    kind: str  # as a person reads it: ConfigMap, Secret, PersistentVolumeClaim, NetworkAttachmentDefinition
    resource: str  # as ``kubectl get`` takes it
    name: str
    namespace: str
    why: str  # what in the spec references it

    @property
    def ref(self) -> str:
        return f"{self.resource}/{self.name}"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name} ({self.why})"


def needed_objects(r: Resolved, namespace: str) -> List[Needed]:
    """Every object the pods reference by name that the rendered tree does not hold, in the spec's order."""
    needed = []
    for volume in r.spec.volumes:
        kind = volume.kubernetes_source
        if kind in KINDS:
            shown, resource = KINDS[kind]
            needed.append(Needed(shown, resource, getattr(volume, kind), namespace,
                                 f"volume {volume.name} at {volume.path}"))
    for attachment in r.spec.network.attachments:
        space, _, rest = attachment.rpartition("/")
        name, _, interface = rest.partition("@")
        needed.append(Needed("NetworkAttachmentDefinition", NAD_RESOURCE, name, space or namespace,
                             "network.attachments" + (f", {interface}" if interface else "")))
    return needed


KINDS = {"config_map": ("ConfigMap", "configmap"), "secret": ("Secret", "secret"),
         "claim": ("PersistentVolumeClaim", "pvc")}


def by_namespace(needed: List[Needed]) -> List[Tuple[str, List[Needed]]]:
    """``needed`` grouped by namespace, in first-seen order (one ``get`` per namespace)."""
    groups: dict = {}
    for item in needed:
        groups.setdefault(item.namespace, []).append(item)
    return list(groups.items())
