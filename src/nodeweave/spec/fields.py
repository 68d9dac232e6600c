"""Readers for the value shapes every spec section uses: rule-checked strings, choices, paths, maps.

Each takes the :class:`Reader` of the file (for line numbers) and a field's
node or its parent :class:`Fields`, and raises the one-line UsageError the
loader promises (file:line, field, the value, what is accepted). Sections
(``nodeweave.spec.sections``) are built from these and nothing else.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Mapping, Optional, Sequence, TypeVar

from yaml.nodes import Node

from nodeweave.spec import rules
from nodeweave.spec.nodes import FAILED, Fields, Reader

T = TypeVar("T")
CONTAINER_PATH = "an absolute, single-line container path without ':' such as /workspace"
HOST_PATH = "a host directory: absolute, ~/..., or relative to the spec file's directory; single line, no ':'"
# Host paths that hand a node the host itself: its whole file system, its configuration, the kernel's views, or a
# container engine's socket or store (root on the host). No host_path (workspace, cache, a volume) may be one, be
# inside one, or hold one (/var holds /var/run/docker.sock), read-only or not: a socket answers through a
# read-only mount.
_ENGINE_STORE = "a container engine's or the kubelet's store (root on the host)"
HOST_ONLY = MappingProxyType({
    "/etc": "the host's configuration (passwords, sudoers)", "/proc": "the host's processes",
    "/sys": "the host kernel's settings", "/dev": "the host's devices", "/boot": "the host's kernel",
    "/root": "root's home", "/run": "the container engines' sockets (root on the host)",
    "/var/run": "the container engines' sockets (root on the host)", "/var/lib/docker": _ENGINE_STORE,
    "/var/lib/containers": _ENGINE_STORE, "/var/lib/containerd": _ENGINE_STORE, "/var/lib/kubelet": _ENGINE_STORE,
    # a home's keys and credentials, and a rootless engine's socket and store (the user on the host)
    "~/.ssh": "the user's ssh keys", "~/.gnupg": "the user's keys", "~/.aws": "the user's cloud credentials",
    "~/.kube": "the user's cluster credentials", "~/.docker": "the user's registry credentials",
    "~/.config/containers": "the user's registry credentials (auth.json)",
    "~/.local/share/containers": "the user's rootless engine store (the user on the host)"})


def _normal(path: str) -> str:
    import posixpath

    if path == "~" or path.startswith("~/"):
        return posixpath.normpath(path)
    return "/" + posixpath.normpath(path).lstrip("/")


def host_only(host: str) -> Optional[str]:
    """The host folder an absolute or ``~/`` ``host`` would hand a container ("/" for the whole host), or None."""
    if not host.startswith(("/", "~")):
        return None
    path = _normal(host)
    if path == "/":
        return "/"
    for folder in HOST_ONLY:
        if path == folder or path.startswith(folder + "/") or folder.startswith(path + "/"):
            return folder
    return None


def rule_string(r: Reader, node: Node, path: str, rule: rules.Rule) -> str:
    if not rule.numbers:
        r.refuse_number(node, path, rule.accepted, rule.check)
    value = r.string(node, path, rule.accepted)
    if rule.sized and rules.unitless(value):
        raise r.fail(node, path, rules.unitless_problem(value), f"{rule.accepted}: write {value}Gi or {value}Mi")
    if not rule.check(value):
        raise r.bad_value(node, path, rule.accepted)
    return value


def optional(r: Reader, fields: Fields, key: str, rule: rules.Rule) -> Optional[str]:
    node = fields.get(key)
    return None if node is None else r.field(lambda: rule_string(r, node, fields.path_of(key), rule), None)


def choice(r: Reader, fields: Fields, key: str, choices: Sequence[str], default: str) -> str:
    node = fields.get(key)
    if node is None:
        return default
    accepted = "one of " + ", ".join(choices)

    def read() -> str:
        value = r.string(node, fields.path_of(key), accepted)
        if value not in choices:
            raise r.bad_value(node, fields.path_of(key), accepted)
        return value

    return r.field(read, default)


def integer(r: Reader, fields: Fields, key: str, default: int, low: int, high: Optional[int] = None,
            unit: Optional[str] = None) -> int:
    node = fields.get(key)
    return default if node is None else r.field(lambda: r.integer(node, fields.path_of(key), low, high, unit), default)


def boolean(r: Reader, fields: Fields, key: str, default: bool) -> bool:
    node = fields.get(key)
    return default if node is None else r.field(lambda: r.boolean(node, fields.path_of(key)), default)


def rule_list(r: Reader, node: Optional[Node], path: str, rule: rules.Rule, unique: bool = False,
              same: Callable[[str], str] = str) -> tuple:
    """A list of rule-checked strings; ``unique`` refuses a repeated item, naming its first line; ``same`` maps an
    item to what makes two items one (``hostport.host_key``: hosts are case-insensitive)."""
    values, seen = [], {}
    for item_path, item in r.field(lambda: list(r.sequence(node, path, rule.accepted)), []):
        value = r.field(lambda: rule_string(r, item, item_path, rule), None)  # each item on its own (walk15 A1)
        if value is None:
            continue
        key = same(value)
        if unique and key in seen:
            line, first = seen[key]
            also = "" if first == value else f" as {first!r}"
            r.keep(r.fail(item, item_path, f"{value!r} is listed twice (first on line {line}{also})", "each item once"))
            continue
        seen.setdefault(key, (item.start_mark.line + 1, value))
        values.append(value)
    return tuple(values)


def each(r: Reader, node: Optional[Node], path: str, accepted: str, read: Callable[[str, Node], T],
         words: bool = False) -> tuple:
    """``read(item_path, item)`` for every item of a list, each on its own: an item refused is left out and the
    items after it are still read, so one run names every item's mistakes (walk15 A23). ``words``: as
    :meth:`Reader.sequence` takes it."""
    read_items = ((item_path, r.field(lambda: read(item_path, item), FAILED))
                  for item_path, item in r.field(lambda: list(r.sequence(node, path, accepted, words)), []))
    return tuple(value for _, value in read_items if value is not FAILED)


KeyCheck = Callable[[Reader, Node, str, str], None]


def string_map(r: Reader, node: Optional[Node], path: str, key_rule: rules.Rule,
               value_rule: Optional[rules.Rule] = None, refuse_key: Optional[KeyCheck] = None) -> Mapping[str, str]:
    """A free-form mapping of rule-checked keys to strings, sorted and read-only.

    ``refuse_key(reader, value_node, key_path, key)`` raises for keys nodeweave owns.
    """
    values = {}
    value_accepted = value_rule.accepted if value_rule else "a string (any scalar but null; write '' for empty)"

    def entry(key: str, key_path: str, value_node: Node) -> str:
        if not key_rule.check(key):
            raise r.fail(value_node, key_path, f"key {key!r} is invalid", key_rule.accepted)
        if refuse_key is not None:
            refuse_key(r, value_node, key_path, key)
        value = r.string(value_node, key_path, value_accepted)
        if value_rule and not value_rule.check(value):
            raise r.bad_value(value_node, key_path, value_rule.accepted)
        return value

    for key, key_path, value_node in _entries(r, node, path, key_rule, "strings"):
        value = r.field(lambda: entry(key, key_path, value_node), None)  # each entry on its own (walk15 A1)
        if value is not None:
            values[key] = value
    return MappingProxyType(dict(sorted(values.items())))


def _entries(r: Reader, node: Optional[Node], path: str, key_rule: rules.Rule, values: str) -> list:
    """A free-form mapping's entries, or none where it is no mapping: refused in one line that says it is a
    mapping, what its keys and values are, and shows one (walk15 A33: "an environment variable name ... mapped to
    strings" named no mapping and showed none)."""
    key = path.rpartition(".")[2]
    example = next((shown for rule, shown in MAP_EXAMPLES if rule is key_rule), "name: value")
    accepted = f"a mapping of names to {values}, e.g. {key}: {{{example}}}; each name is {key_rule.accepted}"
    return r.field(lambda: list(r.mapping(node, path, accepted)), [])


# One entry of each kind of free-form mapping, for the refusal of one given something else.
MAP_EXAMPLES = ((rules.ENV_NAME, "HF_HOME: /cache/hf"), (rules.LABEL_KEY, "team: ml"),
                (rules.RESOURCE_NAME, "rdma/rdma_shared_device_a: 1"))


def count_map(r: Reader, node: Optional[Node], path: str, key_rule: rules.Rule, high: int = 1024) -> Mapping[str, int]:
    """Resource name -> count (1..``high``), sorted and read-only."""
    values = {}

    def entry(key: str, key_path: str, value_node: Node) -> int:
        if not key_rule.check(key):
            raise r.fail(value_node, key_path, f"resource name {key!r} is invalid", key_rule.accepted)
        return r.integer(value_node, key_path, 1, high)

    for key, key_path, value_node in _entries(r, node, path, key_rule, f"counts from 1 to {high}"):
        value = r.field(lambda: entry(key, key_path, value_node), None)
        if value is not None:
            values[key] = value
    return MappingProxyType(dict(sorted(values.items())))


def container_path(r: Reader, node: Node, path: str) -> str:
    r.refuse_number(node, path, CONTAINER_PATH, rules.absolute_path)
    value = r.string(node, path, CONTAINER_PATH)
    if not rules.absolute_path(value):
        raise r.bad_value(node, path, CONTAINER_PATH)
    return value.rstrip("/") or "/"


def optional_container_path(r: Reader, fields: Fields, key: str, default: str) -> str:
    node = fields.get(key)
    return default if node is None else r.field(lambda: container_path(r, node, fields.path_of(key)), default)


def home_handed(value: str, base_dir=None) -> Optional[str]:
    """What of a home the host folder ``value`` (absolute, ``~/...``, or relative to ``base_dir``, the spec's
    folder) would hand every node, as written and where links lead, or None: a home itself by its path
    (``/home/lab``, this user's own ``$HOME`` or passwd home wherever it is: ``systemdirs.a_home``, the judge
    sync's SRC and workspace.host_path use), or the folder homes are in (``/home``, ``/Users``), above every home's
    keys (replay11 A22: ``~`` was refused and ``/tmp/me``, the same home by its path, was mounted)."""
    import os
    import posixpath

    from nodeweave.systemdirs import HOMES, a_home

    if value.startswith("~"):
        path = os.path.expanduser(value)
    elif value.startswith("/"):
        path = value
    elif base_dir is not None:
        path = os.path.join(os.path.abspath(str(base_dir)), value)
    else:
        return None
    if not path.startswith("/"):  # ~user of no one
        return None
    for seen in dict.fromkeys((posixpath.normpath(path), os.path.realpath(path))):
        home = a_home(seen)
        if home:
            return f"{seen}, {home}, with its keys and credentials"
        if seen in HOMES:
            return f"{seen}, the folder homes are in, with every home's keys and credentials"
    return None


def host_path(r: Reader, fields: Fields, key: str, default: Optional[str], base_dir=None,
              homes: bool = True) -> Optional[str]:
    """A host folder field (``workspace.host_path``, ``cache.host_path``, a volume's): the form, and never one that
    hands a node the host (``HOST_ONLY``) or a home (``home_handed``; ``homes`` False where the field's own rule
    judges homes already: the workspace's, ``sections.job.workspace_folder_problem``)."""
    node = fields.get(key)
    return default if node is None else r.field(lambda: _host_path(r, node, fields.path_of(key), base_dir, homes),
                                                default)


def _host_path(r: Reader, node: Node, path: str, base_dir, homes: bool) -> str:
    r.refuse_number(node, path, HOST_PATH)
    value = r.string(node, path, HOST_PATH)
    if not rules.single_line(value) or ":" in value:
        raise r.bad_value(node, path, HOST_PATH)
    taken = host_only(value)
    if taken is not None:
        what = "the host's whole file system" if taken == "/" else \
            "the user's whole home, keys and credentials" if _normal(value) == "~" else HOST_ONLY[taken]
        holds = f" (it holds {taken})" if taken != "/" and _normal(value) != "~" and \
            taken.startswith(_normal(value) + "/") else ""
        raise r.fail(node, path, f"{value!r} would hand every node {what}{holds}, read-only or not",
                     "a host folder of the job's own, such as /data/datasets or /scratch/job: not /, nor inside "
                     "or above " + ", ".join(HOST_ONLY))
    home = home_handed(value, base_dir) if homes else None
    if home is not None:
        raise r.fail(node, path, f"{value!r} would hand every node {home}, read-only or not",
                     "a host folder of the job's own, such as /data/datasets, /scratch/job or a folder in a home")
    return value
