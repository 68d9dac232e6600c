"""``resources``: CPU and memory requests/limits, extra device resources, huge pages.

Quantities are checked as the API server would check them at apply time
(a request above its limit, huge pages without a CPU or memory request), so
the mistake shows up with its line number instead of on node 7.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Dict, Mapping, Optional

from yaml.nodes import Node

from nodeweave.quantities import binary_size, value as quantity_value
from nodeweave.spec import rules
from nodeweave.spec.fields import count_map, rule_string
from nodeweave.spec.model import Resources
from nodeweave.spec.nodes import Fields, Reader

KEYS = ("requests", "limits", "devices", "hugepages")
RULES = {"cpu": rules.CPU, "memory": rules.QUANTITY}
# The GPU and RDMA resources have fields of their own; listing them here would count them twice.
OWN_FIELDS = ("nvidia.com/gpu", "amd.com/gpu")


def resources(r: Reader, top: Fields, rdma_resources: Optional[Mapping[str, int]]) -> Resources:
    """``rdma_resources``: the network's, None where network was refused (its clash with devices is not weighed)."""
    f = r.fields(top.get("resources"), "resources", KEYS)
    requests = _amounts(r, f.get("requests"), "resources.requests")
    limits = _amounts(r, f.get("limits"), "resources.limits")
    for key, request in requests.items():
        if key in limits and quantity_value(request) > quantity_value(limits[key]):
            r.keep(r.fail(f.get("requests"), f"resources.requests.{key}",
                         f"{request} is above the limit {limits[key]}", f"a request <= resources.limits.{key}"))
    devices = count_map(r, f.get("devices"), "resources.devices", rules.RESOURCE_NAME)
    for key in devices:
        if key in OWN_FIELDS or key in (rdma_resources or ()):
            where = "gpus_per_node" if key in OWN_FIELDS else "network.rdma_resources"
            r.keep(r.fail(f.get("devices"), f"resources.devices.{key}", f"is set from {where}",
                          f"another extended resource; change {where} instead"))
    hugepages = _hugepages(r, f.get("hugepages"))
    if hugepages and not (requests or limits):
        raise r.fail(f.get("hugepages"), "resources.hugepages", "needs a CPU or memory request or limit "
                     "(Kubernetes refuses huge pages without one)", "resources.requests.memory (or cpu) beside it")
    return Resources(requests=requests, limits=limits, devices=devices, hugepages=hugepages)


def _amounts(r: Reader, node: Optional[Node], path: str) -> Mapping[str, str]:
    values: Dict[str, str] = {}

    def amount(key: str, key_path: str, value_node: Node) -> str:
        if key not in RULES:
            raise r.fail(value_node, key_path, "unknown key", "cpu or memory (GPUs: gpus_per_node; other devices: "
                         "resources.devices; huge pages: resources.hugepages)")
        return rule_string(r, value_node, key_path, RULES[key])

    for key, key_path, value_node in r.field(lambda: list(r.mapping(node, path, "a mapping of cpu and/or memory "
                                                                     f"to quantities, e.g. {path.rpartition('.')[2]}: "
                                                                     "{cpu: 8, memory: 64Gi}")), []):
        value = r.field(lambda: amount(key, key_path, value_node), None)  # each entry on its own
        if value is not None:
            values[key] = value
    return MappingProxyType(dict(sorted(values.items())))


def _hugepages(r: Reader, node: Optional[Node]) -> Mapping[str, str]:
    values: Dict[str, str] = {}

    def pages(key: str, key_path: str, value_node: Node) -> str:
        if not rules.HUGEPAGE_SIZE.check(key):
            raise r.fail(value_node, key_path, f"page size {key!r} is invalid", rules.HUGEPAGE_SIZE.accepted)
        written = str(getattr(value_node, "value", "")).strip()
        if written.isascii() and written.isdigit():  # a count of pages, as people say it: the size it comes to
            raise r.fail(value_node, key_path, f"{rules.unitless_problem(written)}, not pages",
                         f"the pages' total size with its unit, a multiple of {key}: {written} pages of {key} is "
                         f"{binary_size(int(written) * int(quantity_value(key)))}")
        amount = rule_string(r, value_node, key_path, rules.QUANTITY)
        if quantity_value(amount) % quantity_value(key):
            raise r.fail(value_node, key_path, f"{amount} is not a whole number of {key} pages",
                         f"a multiple of {key}, such as {'32Gi' if key == '16Gi' else '4Gi'}")
        return amount

    for key, key_path, value_node in r.field(lambda: list(r.mapping(node, "resources.hugepages", "a mapping of page "
                                                                     "sizes to amounts, e.g. hugepages: {2Mi: 1Gi}")),
                                             []):
        value = r.field(lambda: pages(key, key_path, value_node), None)  # each entry on its own
        if value is not None:
            values[key] = value
    return MappingProxyType(dict(sorted(values.items())))
