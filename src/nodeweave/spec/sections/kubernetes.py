"""``kubernetes``: namespace, storage, placement, scheduling, metadata, and the OpenShift build.

Placement rules the API server enforces at apply time (a toleration's value
with ``Exists``, ``Gt`` with a non-number) are checked here, so they fail
with a line number instead of a rejected ``kubectl apply``.
"""

from __future__ import annotations

from typing import Mapping, Optional

from yaml.nodes import Node

from nodeweave.spec import rules
from nodeweave.spec.sections.image import url_credential
from nodeweave.spec.fields import boolean, choice, each, integer, optional, rule_list, rule_string, string_map
from nodeweave.spec.model import (
    AFFINITY_OPERATORS, ANTI_AFFINITIES, BUILD_SOURCES, CLAIMS, SPREAD_POLICIES, TOLERATION_EFFECTS,
    TOLERATION_OPERATORS, AffinityTerm, IngressPeer, Kubernetes, OpenShiftBuild, Toleration, TopologySpread,
)  # fmt: skip
from nodeweave.spec.nodes import Fields, Reader

KEYS = (
    "namespace", "service", "storage_class", "storage_size", "claim", "node_selector", "tolerations",
    "anti_affinity", "grace_period", "openshift", "cluster_domain", "labels", "annotations", "pod_labels",
    "pod_annotations", "node_names", "node_affinity", "topology_spread", "scheduler_name", "queue", "build",
    "network_policy", "ingress_from",
)  # fmt: skip
# Labels nodeweave sets to find its own pods, and annotations it writes itself.
OWN_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
              "app.kubernetes.io/managed-by", "kueue.x-k8s.io/queue-name")
OWN_ANNOTATIONS = ("k8s.v1.cni.cncf.io/networks", "scheduling.volcano.sh/queue-name", "image.openshift.io/triggers")
# What sets each of them: a spec field, or nodeweave alone (a refusal names it, never "the matching field": W16).
OWN_KEY_SET_BY = {"app.kubernetes.io/name": "nodeweave alone (always nodeweave)",
                  "app.kubernetes.io/instance": "the spec's name",
                  "app.kubernetes.io/component": "nodeweave alone (each object's part, e.g. job-token)",
                  "app.kubernetes.io/managed-by": "nodeweave alone",
                  "kueue.x-k8s.io/queue-name": "the spec's kubernetes.queue",
                  "k8s.v1.cni.cncf.io/networks": "the spec's network.attachments",
                  "scheduling.volcano.sh/queue-name": "the spec's kubernetes.queue",
                  "image.openshift.io/triggers": "the spec's kubernetes.build"}


def kubernetes(r: Reader, top: Fields, name: str) -> Kubernetes:
    f = r.fields(top.get("kubernetes"), "kubernetes", KEYS)
    return Kubernetes(
        namespace=optional(r, f, "namespace", rules.JOB_NAMESPACE) or "default",
        service=optional(r, f, "service", rules.SERVICE_NAME) or name,
        storage_class=optional(r, f, "storage_class", rules.DNS_SUBDOMAIN),
        storage_size=optional(r, f, "storage_size", rules.QUANTITY) or "100Gi",
        claim=choice(r, f, "claim", CLAIMS, "shared"),
        node_selector=string_map(r, f.get("node_selector"), "kubernetes.node_selector", rules.LABEL_KEY, rules.LABEL_VALUE),
        tolerations=each(r, f.get("tolerations"), "kubernetes.tolerations", "tolerations (mappings)",
                         lambda p, item: _toleration(r, p, item)),
        anti_affinity=choice(r, f, "anti_affinity", ANTI_AFFINITIES, "required"),
        grace_period=integer(r, f, "grace_period", 120, 0, 86400, unit="seconds"),
        openshift=boolean(r, f, "openshift", False),
        cluster_domain=optional(r, f, "cluster_domain", rules.DNS_SUBDOMAIN),
        labels=_metadata(r, f, "labels", rules.LABEL_VALUE, OWN_LABELS),
        annotations=_metadata(r, f, "annotations", None, OWN_ANNOTATIONS),
        pod_labels=_metadata(r, f, "pod_labels", rules.LABEL_VALUE, OWN_LABELS),
        pod_annotations=_metadata(r, f, "pod_annotations", None, OWN_ANNOTATIONS),
        node_names=rule_list(r, f.get("node_names"), "kubernetes.node_names", rules.DNS_SUBDOMAIN, unique=True),
        node_affinity=each(r, f.get("node_affinity"), "kubernetes.node_affinity",
                           "match expressions (key, operator, values)", lambda p, item: _affinity(r, p, item)),
        topology_spread=each(r, f.get("topology_spread"), "kubernetes.topology_spread", "mappings with topology_key",
                             lambda p, item: _spread(r, p, item)),
        scheduler_name=optional(r, f, "scheduler_name", rules.DNS_SUBDOMAIN),
        queue=optional(r, f, "queue", rules.DNS_SUBDOMAIN),
        build=r.field(lambda: _build(r, f.get("build")), None),
        network_policy=boolean(r, f, "network_policy", True),
        ingress_from=each(r, f.get("ingress_from"), "kubernetes.ingress_from",
                          "mappings with pod_labels and/or namespace_labels", lambda p, item: _peer(r, p, item)),
    )


def _metadata(r: Reader, f: Fields, key: str, value_rule: Optional[rules.Rule], own: tuple) -> Mapping[str, str]:
    path = f.path_of(key)

    def refuse(reader: Reader, node: Node, key_path: str, name: str) -> None:
        if name in own:
            raise reader.fail(node, key_path, "is set by nodeweave (selectors, networks, queue, image trigger)",
                              f"another key; {OWN_KEY_SET_BY[name]} sets this one")

    return string_map(r, f.get(key), path, rules.LABEL_KEY, value_rule, refuse_key=refuse)


def _toleration(r: Reader, path: str, item: Node) -> Toleration:
    """One toleration, with the rules the API server would otherwise enforce at apply time."""
    f = r.fields(item, path, ("key", "operator", "value", "effect", "tolerationSeconds"))
    # each field on its own, so one item's every mistake is named in one run (walk16a A32: `effect` was told only
    # once `key` and `operator` passed); the checks across fields after a refused one are dropped (Reader.attempt)
    key = r.field(lambda: optional(r, f, "key", rules.LABEL_KEY), None)
    operator = r.field(lambda: choice(r, f, "operator", TOLERATION_OPERATORS, "Equal"), "Equal")
    value = r.field(lambda: optional(r, f, "value", rules.LABEL_VALUE), None)
    effect = None if f.get("effect") is None else r.field(lambda: choice(r, f, "effect", TOLERATION_EFFECTS, ""), None)
    seconds_node = f.get("tolerationSeconds")
    seconds = None if seconds_node is None else \
        r.field(lambda: r.integer(seconds_node, f.path_of("tolerationSeconds"), 0), None)
    if operator == "Exists" and value is not None:
        raise r.fail(f.get("value"), f.path_of("value"), "must be empty when operator is Exists", "no value with Exists")
    if key is None and operator != "Exists":
        raise r.fail(item, f.path_of("key"), "may be left out only with operator Exists", "a taint key, or operator: Exists")
    if seconds is not None and effect != "NoExecute":
        raise r.fail(
            seconds_node, f.path_of("tolerationSeconds"), "applies only to effect NoExecute", "effect: NoExecute with it"
        )
    return Toleration(key=key, operator=operator, value=value, effect=effect, tolerationSeconds=seconds)


def _affinity(r: Reader, path: str, item: Node) -> AffinityTerm:
    f = r.fields(item, path, ("key", "operator", "values"))
    key = r.field(lambda: rule_string(r, f.require("key", rules.LABEL_KEY.accepted), f.path_of("key"),
                                      rules.LABEL_KEY), "")
    operator = r.field(lambda: choice(r, f, "operator", AFFINITY_OPERATORS, "In"), "In")
    values = r.field(lambda: rule_list(r, f.get("values"), f.path_of("values"), rules.LABEL_VALUE), [])
    wanted = {"In": "one or more values", "NotIn": "one or more values", "Exists": "no values",
              "DoesNotExist": "no values", "Gt": "exactly one integer value", "Lt": "exactly one integer value"}[operator]
    bad = (not values if operator in ("In", "NotIn") else bool(values) if operator in ("Exists", "DoesNotExist")
           else len(values) != 1 or not values[0].lstrip("-").isdigit())
    if bad:
        raise r.fail(item, f.path_of("values"), f"operator {operator} takes {wanted}", f"{wanted} with {operator}")
    return AffinityTerm(key=key, operator=operator, values=values)


def _spread(r: Reader, path: str, item: Node) -> TopologySpread:
    f = r.fields(item, path, ("topology_key", "max_skew", "when_unsatisfiable"))
    key_node = f.require("topology_key", "a node label key such as topology.kubernetes.io/zone")
    return TopologySpread(
        topology_key=r.field(lambda: rule_string(r, key_node, f.path_of("topology_key"), rules.LABEL_KEY), ""),
        max_skew=r.field(lambda: integer(r, f, "max_skew", 1, 1, 1000), 1),
        when_unsatisfiable=r.field(lambda: choice(r, f, "when_unsatisfiable", SPREAD_POLICIES, "DoNotSchedule"),
                                   "DoNotSchedule"),
    )


def _build(r: Reader, node: Optional[Node]) -> Optional[OpenShiftBuild]:
    if node is None:
        return None
    f = r.fields(node, "kubernetes.build", ("source", "git", "ref"))
    source = choice(r, f, "source", BUILD_SOURCES, "binary")
    git = optional(r, f, "git", rules.GIT_URL)
    credential = url_credential(git, "the rendered BuildConfig and the cluster's copy") if git else None
    if credential:  # the BuildConfig is a rendered file and a cluster object every reader of the namespace sees
        raise r.fail(f.get("git"), "kubernetes.build.git", credential[0], "the URL without its password: a source "
                     "secret on the BuildConfig (`oc set build-secret --source`), or a public repository")
    ref = optional(r, f, "ref", rules.GIT_REF)
    if source == "git" and git is None:
        raise r.fail(node, "kubernetes.build.git", "is required with source git", rules.GIT_URL.accepted)
    if source == "binary" and (git or ref):
        field = "git" if git else "ref"
        raise r.fail(f.get(field), f"kubernetes.build.{field}", "applies to source git only",
                     "source: git with git and ref, or leave them out for a binary build")
    return OpenShiftBuild(source=source, git=git, ref=ref)


def _peer(r: Reader, path: str, item: Node) -> IngressPeer:
    """One extra ingress peer of the NetworkPolicy: pods by label, in namespaces by label, on some ports."""
    f = r.fields(item, path, ("pod_labels", "namespace_labels", "ports"))
    pods = string_map(r, f.get("pod_labels"), f.path_of("pod_labels"), rules.LABEL_KEY, rules.LABEL_VALUE)
    namespaces = string_map(r, f.get("namespace_labels"), f.path_of("namespace_labels"), rules.LABEL_KEY,
                            rules.LABEL_VALUE)
    if not pods and not namespaces:
        raise r.fail(item, path, "names no pods", "pod_labels and/or namespace_labels (an empty peer would admit "
                     "every pod of the namespace: set kubernetes.network_policy: false for that)")
    ports = each(r, f.get("ports"), f.path_of("ports"), "port numbers (1-65535)",
                 lambda p, node: r.integer(node, p, 1, 65535))
    return IngressPeer(pod_labels=pods, namespace_labels=namespaces, ports=ports)
