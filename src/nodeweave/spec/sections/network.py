"""``network``: socket interfaces, HCAs to leave out, RDMA devices, and SR-IOV attachments.

An attachment is the Multus name of a NetworkAttachmentDefinition, written
either as Multus' own short form (``ns/name@iface``) or as a mapping whose
``resource`` names the SR-IOV resource its NetworkAttachmentDefinition
requests (one VF per attachment), so nothing about a NIC is guessed.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Dict, List, Optional, Tuple

from yaml.nodes import MappingNode, Node

from nodeweave.spec import rules
from nodeweave.spec.fields import count_map, optional, rule_list, rule_string
from nodeweave.spec.model import Network
from nodeweave.spec.nodes import Fields, Reader

KEYS = ("interfaces", "exclude_hcas", "rdma", "rdma_resources", "attachments")
ATTACHMENT_KEYS = ("name", "namespace", "interface", "resource")


def network(r: Reader, top: Fields) -> Network:
    f = r.fields(top.get("network"), "network", KEYS)
    resources: Dict[str, int] = dict(count_map(r, f.get("rdma_resources"), "network.rdma_resources", rules.RESOURCE_NAME))
    attachments = r.field(lambda: _attachments(r, f.get("attachments"), resources), ())
    rdma_node = f.get("rdma")
    rdma = bool(resources or attachments) if rdma_node is None else \
        r.field(lambda: r.boolean(rdma_node, "network.rdma"), None)
    if rdma is False and (resources or attachments):
        raise r.fail(rdma_node, "network.rdma", "false contradicts network.rdma_resources/attachments, which "
                     "give the pods RDMA devices", "true, or leave rdma out (true whenever RDMA resources are listed)")
    return Network(
        interfaces=rule_list(r, f.get("interfaces"), "network.interfaces", rules.INTERFACE, unique=True),
        exclude_hcas=rule_list(r, f.get("exclude_hcas"), "network.exclude_hcas", rules.HCA, unique=True),
        rdma=bool(rdma),
        rdma_resources=MappingProxyType(dict(sorted(resources.items()))),
        attachments=attachments,
    )


def _attachments(r: Reader, node: Optional[Node], resources: Dict[str, int]) -> Tuple[str, ...]:
    """Multus short forms; a mapping's ``resource`` adds one VF of it to ``resources``."""
    out: List[str] = []
    listed = set(resources)
    for path, item in r.sequence(node, "network.attachments", "NetworkAttachmentDefinition names or mappings"):
        if isinstance(item, MappingNode):
            text, resource = r.field(lambda: _attachment_mapping(r, path, item), (None, None))  # each on its own
            if resource is not None:
                if resource in listed:
                    r.keep(r.fail(item, f"{path}.resource", f"{resource} is also in network.rdma_resources",
                                  "a resource in one place: per attachment, or counted in rdma_resources"))
                    continue
                resources[resource] = resources.get(resource, 0) + 1
        else:
            text = r.field(lambda: rule_string(r, item, path, rules.ATTACHMENT), None)
        if text is not None:
            out.append(text)
    return tuple(out)


def _attachment_mapping(r: Reader, path: str, item: Node) -> Tuple[str, Optional[str]]:
    f = r.fields(item, path, ATTACHMENT_KEYS)
    name = r.field(lambda: rule_string(r, f.require("name", rules.DNS_SUBDOMAIN.accepted), f.path_of("name"),
                                       rules.DNS_SUBDOMAIN), "")
    namespace = optional(r, f, "namespace", rules.DNS_LABEL)
    interface = optional(r, f, "interface", rules.INTERFACE)
    resource = optional(r, f, "resource", rules.RESOURCE_NAME)
    text = (f"{namespace}/" if namespace else "") + name + (f"@{interface}" if interface else "")
    return text, resource
