"""Load ``nodeweave.yaml`` into a :class:`Spec`, refusing anything a renderer could not use.

The loader is the only place that sees raw YAML. It reads the composed node
tree (for line numbers), checks each field against its rule, and checks the
few cross-field constraints (elastic ranges need torchrun, ...), so renderers
can trust every value they receive.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Optional, Sequence

import yaml
from yaml.nodes import Node

from nodeweave.catalogue import known_variants
from nodeweave.errors import UsageError
from nodeweave.spec import rules
from nodeweave.spec.model import (
    ANTI_AFFINITIES,
    CLAIMS,
    LAUNCHERS,
    TOLERATION_EFFECTS,
    TOLERATION_OPERATORS,
    Cache,
    Image,
    Kubernetes,
    Launcher,
    Network,
    NodeRange,
    Spec,
    Toleration,
    Workspace,
)
from nodeweave.spec.nodes import Fields, Reader

# Variables the renderers set from the spec; a user value would silently fight them.
RESERVED_ENV = ("NODE_RANK", "NNODES", "MASTER_ADDR", "MASTER_PORT", "POD_NAME", "POD_NAMESPACE", "POD_IP")
NODES_ACCEPTED = 'a node count >= 1, or "MIN:MAX" with 1 <= MIN <= MAX for an elastic job (e.g. 2 or "2:4")'


def load_spec(path: "str | Path") -> Spec:
    """Read and validate a spec file; every problem is a UsageError naming file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: spec file not found; pass an existing file with --spec (default nodeweave.yaml)")
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory; pass the spec file itself (e.g. {path / 'nodeweave.yaml'})")
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); save the spec as UTF-8")
    except OSError as err:
        raise UsageError(f"{path}: cannot read the spec file: {err.strerror}")
    return parse_spec(text, str(path))


def parse_spec(text: str, source_name: str = "nodeweave.yaml") -> Spec:
    """Validate spec text; ``source_name`` is the file name errors show."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise UsageError(f"{source_name}{where}: not valid YAML: {problem}")
    except ValueError as err:  # e.g. a NUL character, which the YAML reader refuses outright
        raise UsageError(f"{source_name}: not valid YAML: {err}")
    reader = Reader(source_name)
    if reader.is_null(root):
        raise UsageError(
            f"{source_name}: the spec is empty; accepted: a mapping with at least 'name', "
            "'image: {variant: ...}' and 'launcher: {script: ...}' (see nodeweave.yaml in the repository)"
        )
    return _spec(reader, root)


def _spec(r: Reader, root: Node) -> Spec:
    top = r.fields(
        root,
        "",
        ("name", "image", "nodes", "gpus_per_node", "launcher", "workspace", "cache", "network", "env", "kubernetes"),
    )
    name = _rule_string(r, top.require("name", rules.JOB_NAME.accepted), "name", rules.JOB_NAME)
    launcher = _launcher(r, top)
    nodes = _nodes(r, top.get("nodes"))
    if nodes.elastic and launcher.type != "torchrun":
        raise r.fail(
            top.get("nodes"),
            "nodes",
            f"the elastic range {nodes} needs launcher.type torchrun (got {launcher.type})",
            "a fixed node count with " + launcher.type,
        )
    return Spec(
        name=name,
        image=_image(r, top),
        nodes=nodes,
        gpus_per_node=_gpus(r, top.get("gpus_per_node")),
        launcher=launcher,
        workspace=_workspace(r, top),
        cache=_cache(r, top),
        network=_network(r, top),
        env=_env(r, top.get("env")),
        kubernetes=_kubernetes(r, top, name),
    )


def _rule_string(r: Reader, node: Node, path: str, rule: rules.Rule) -> str:
    value = r.string(node, path, rule.accepted)
    if not rule.check(value):
        raise r.bad_value(node, path, rule.accepted)
    return value


def _optional(r: Reader, fields: Fields, key: str, rule: rules.Rule) -> Optional[str]:
    node = fields.get(key)
    return None if node is None else _rule_string(r, node, fields.path_of(key), rule)


def _choice(r: Reader, fields: Fields, key: str, choices: Sequence[str], default: str) -> str:
    node = fields.get(key)
    if node is None:
        return default
    accepted = "one of " + ", ".join(choices)
    value = r.string(node, fields.path_of(key), accepted)
    if value not in choices:
        raise r.bad_value(node, fields.path_of(key), accepted)
    return value


def _int(r: Reader, fields: Fields, key: str, default: int, low: int, high: Optional[int] = None) -> int:
    node = fields.get(key)
    return default if node is None else r.integer(node, fields.path_of(key), low, high)


def _list(r: Reader, node: Optional[Node], path: str, rule: rules.Rule) -> tuple:
    return tuple(_rule_string(r, item, p, rule) for p, item in r.sequence(node, path, rule.accepted))


def _nodes(r: Reader, node: Optional[Node]) -> NodeRange:
    if node is None:
        return NodeRange(1, 1)
    if r.is_int(node):
        count = r.integer(node, "nodes", 1)
        return NodeRange(count, count)
    text = r.string(node, "nodes", NODES_ACCEPTED).strip()
    low, sep, high = text.partition(":")
    if not (low.isdigit() and (not sep or high.isdigit())):
        raise r.bad_value(node, "nodes", NODES_ACCEPTED)
    low_n, high_n = int(low), int(high) if sep else int(low)
    if low_n < 1:
        raise r.fail(node, "nodes", f"MIN must be at least 1 (got '{text}')", NODES_ACCEPTED)
    if high_n < low_n:
        raise r.fail(node, "nodes", f"MAX ({high_n}) must be >= MIN ({low_n})", NODES_ACCEPTED)
    return NodeRange(low_n, high_n)


def _gpus(r: Reader, node: Optional[Node]):
    accepted = 'processes per node: an integer from 1 to 1024, or "auto" (one per detected GPU)'
    if node is None:
        return "auto"
    if r.is_int(node):
        return r.integer(node, "gpus_per_node", 1, 1024)
    if r.string(node, "gpus_per_node", accepted) != "auto":
        raise r.bad_value(node, "gpus_per_node", accepted)
    return "auto"


def _image(r: Reader, top: Fields) -> Image:
    keys = ("variant", "registry", "tag", "base", "build_args")
    f = r.fields(top.require("image", "a mapping with at least 'variant'"), "image", keys)
    variant = _variant(r, f)
    return Image(
        variant=variant,
        registry=_optional(r, f, "registry", rules.REGISTRY) or Image.registry,
        tag=_optional(r, f, "tag", rules.IMAGE_TAG),
        base=_optional(r, f, "base", rules.IMAGE_REFERENCE),
        build_args=_string_map(r, f.get("build_args"), "image.build_args", rules.ENV_NAME),
    )


def _variant(r: Reader, f: Fields) -> str:
    known = known_variants()
    accepted = "one of " + ", ".join(known) + " (see `nodeweave image variants`)"
    node = f.require("variant", accepted)
    value = r.string(node, "image.variant", accepted)
    if value not in known:
        raise r.bad_value(node, "image.variant", accepted)
    return value


def _launcher(r: Reader, top: Fields) -> Launcher:
    keys = ("type", "script", "args", "master_port", "max_restarts", "wait_timeout")
    f = r.fields(top.require("launcher", "a mapping with at least 'script'"), "launcher", keys)
    script_node = f.require("script", "the training script, relative to workspace.path (for type command: argv[0])")
    script = r.string(script_node, "launcher.script", "a path such as train.py")
    if not rules.single_line(script):
        raise r.bad_value(script_node, "launcher.script", "a non-empty, single-line path such as train.py")
    items = r.sequence(f.get("args"), "launcher.args", "strings")
    args = tuple(r.string(item, path, "a string (any scalar but null)") for path, item in items)
    return Launcher(
        type=_choice(r, f, "type", LAUNCHERS, "torchrun"),
        script=script,
        args=args,
        master_port=_int(r, f, "master_port", 29500, 1, 65535),
        max_restarts=_int(r, f, "max_restarts", 0, 0, 1000),
        wait_timeout=_int(r, f, "wait_timeout", 600, 1, 86400),
    )


def _path(r: Reader, f: Fields, key: str, default: str) -> str:
    node = f.get(key)
    if node is None:
        return default
    value = r.string(node, f.path_of(key), "an absolute container path such as /workspace")
    if not rules.absolute_path(value):
        raise r.bad_value(node, f.path_of(key), "an absolute, single-line container path without ':' such as /workspace")
    return value.rstrip("/") or "/"


def _host_path(r: Reader, f: Fields, key: str, default: str) -> str:
    accepted = "a host directory: absolute, ~/..., or relative to the spec file's directory; single line, no ':'"
    node = f.get(key)
    if node is None:
        return default
    value = r.string(node, f.path_of(key), accepted)
    if not rules.single_line(value) or ":" in value:
        raise r.bad_value(node, f.path_of(key), accepted)
    return value


def _workspace(r: Reader, top: Fields) -> Workspace:
    f = r.fields(top.get("workspace"), "workspace", ("path", "host_path"))
    return Workspace(path=_path(r, f, "path", "/workspace"), host_path=_host_path(r, f, "host_path", "."))


def _cache(r: Reader, top: Fields) -> Cache:
    f = r.fields(top.get("cache"), "cache", ("path", "host_path", "size"))
    return Cache(
        path=_path(r, f, "path", "/cache"),
        host_path=_host_path(r, f, "host_path", "~/.cache/nodeweave"),
        size=_optional(r, f, "size", rules.QUANTITY) or "200Gi",
    )


def _network(r: Reader, top: Fields) -> Network:
    f = r.fields(top.get("network"), "network", ("interfaces", "exclude_hcas", "rdma", "rdma_resources", "attachments"))
    resources = {}
    for key, path, node in r.mapping(f.get("rdma_resources"), "network.rdma_resources", "resource name: count"):
        if not rules.RESOURCE_NAME.check(key):
            raise r.fail(node, path, f"resource name {key!r} is invalid", rules.RESOURCE_NAME.accepted)
        resources[key] = r.integer(node, path, 1, 1024)
    attachments = _list(r, f.get("attachments"), "network.attachments", rules.ATTACHMENT)
    rdma_node = f.get("rdma")
    rdma = bool(resources or attachments) if rdma_node is None else r.boolean(rdma_node, "network.rdma")
    if not rdma and (resources or attachments):
        raise r.fail(rdma_node, "network.rdma", "false contradicts network.rdma_resources/attachments, which "
                     "give the pods RDMA devices", "true, or leave rdma out (true whenever RDMA resources are listed)")
    return Network(
        interfaces=_list(r, f.get("interfaces"), "network.interfaces", rules.INTERFACE),
        exclude_hcas=_list(r, f.get("exclude_hcas"), "network.exclude_hcas", rules.HCA),
        rdma=rdma,
        rdma_resources=MappingProxyType(dict(sorted(resources.items()))),
        attachments=attachments,
    )


def _string_map(r: Reader, node: Optional[Node], path: str, key_rule: rules.Rule, value_rule: Optional[rules.Rule] = None):
    values = {}
    value_accepted = value_rule.accepted if value_rule else "a string (any scalar but null; write '' for empty)"
    for key, key_path, value_node in r.mapping(node, path, f"{key_rule.accepted} mapped to strings"):
        if not key_rule.check(key):
            raise r.fail(value_node, key_path, f"key {key!r} is invalid", key_rule.accepted)
        if path == "env" and (key.startswith("NODEWEAVE_") or key in RESERVED_ENV):
            raise r.fail(
                value_node,
                key_path,
                "is set by nodeweave from the spec (nodes, launcher.master_port, ...) or by the platform",
                "any other variable name; change the matching spec field instead",
            )
        values[key] = r.string(value_node, key_path, value_accepted)
        if value_rule and not value_rule.check(values[key]):
            raise r.bad_value(value_node, key_path, value_rule.accepted)
    return MappingProxyType(dict(sorted(values.items())))


def _env(r: Reader, node: Optional[Node]):
    return _string_map(r, node, "env", rules.ENV_NAME)


def _tolerations(r: Reader, node: Optional[Node]) -> tuple:
    items = r.sequence(node, "kubernetes.tolerations", "tolerations (mappings)")
    return tuple(_toleration(r, path, item) for path, item in items)


def _toleration(r: Reader, path: str, item: Node) -> Toleration:
    """One toleration, with the rules the API server would otherwise enforce at apply time."""
    f = r.fields(item, path, ("key", "operator", "value", "effect", "tolerationSeconds"))
    key = _optional(r, f, "key", rules.LABEL_KEY)
    operator = _choice(r, f, "operator", TOLERATION_OPERATORS, "Equal")
    value = _optional(r, f, "value", rules.LABEL_VALUE)
    if operator == "Exists" and value is not None:
        raise r.fail(f.get("value"), f.path_of("value"), "must be empty when operator is Exists", "no value with Exists")
    if key is None and operator != "Exists":
        raise r.fail(item, f.path_of("key"), "may be left out only with operator Exists", "a taint key, or operator: Exists")
    effect = None if f.get("effect") is None else _choice(r, f, "effect", TOLERATION_EFFECTS, "")
    seconds_node = f.get("tolerationSeconds")
    seconds = None if seconds_node is None else r.integer(seconds_node, f.path_of("tolerationSeconds"), 0)
    if seconds is not None and effect != "NoExecute":
        raise r.fail(
            seconds_node, f.path_of("tolerationSeconds"), "applies only to effect NoExecute", "effect: NoExecute with it"
        )
    return Toleration(key=key, operator=operator, value=value, effect=effect, tolerationSeconds=seconds)


def _kubernetes(r: Reader, top: Fields, name: str) -> Kubernetes:
    keys = (
        "namespace", "service", "storage_class", "storage_size", "claim", "node_selector",
        "tolerations", "anti_affinity", "grace_period", "openshift", "cluster_domain",
    )  # fmt: skip
    f = r.fields(top.get("kubernetes"), "kubernetes", keys)
    openshift_node = f.get("openshift")
    return Kubernetes(
        namespace=_optional(r, f, "namespace", rules.DNS_LABEL) or "default",
        service=_optional(r, f, "service", rules.DNS_LABEL) or name,
        storage_class=_optional(r, f, "storage_class", rules.DNS_SUBDOMAIN),
        storage_size=_optional(r, f, "storage_size", rules.QUANTITY) or "100Gi",
        claim=_choice(r, f, "claim", CLAIMS, "shared"),
        node_selector=_string_map(r, f.get("node_selector"), "kubernetes.node_selector", rules.LABEL_KEY, rules.LABEL_VALUE),
        tolerations=_tolerations(r, f.get("tolerations")),
        anti_affinity=_choice(r, f, "anti_affinity", ANTI_AFFINITIES, "required"),
        grace_period=_int(r, f, "grace_period", 120, 0, 86400),
        openshift=False if openshift_node is None else r.boolean(openshift_node, "kubernetes.openshift"),
        cluster_domain=_optional(r, f, "cluster_domain", rules.DNS_SUBDOMAIN),
    )
