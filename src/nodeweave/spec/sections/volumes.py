"""``volumes``: extra mounts beside the workspace and cache (datasets, configs, secrets, scratch caches).

Each entry says where it lands (``path``) and where it comes from: a host
directory (compose, Slurm, and Kubernetes ``hostPath`` unless another source
is given), an existing claim, a ConfigMap or Secret (always files, never
environment), or a node-local ``cache`` of a given size. A volume that only
Kubernetes can provide (a claim, ConfigMap or Secret without ``host_path``)
is left out of compose and Slurm; docs/spec.md says so.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from yaml.nodes import Node

from nodeweave.spec import rules
from nodeweave.spec.fields import boolean, container_path, host_path, optional, rule_string
from nodeweave.spec.model import Volume
from nodeweave.spec.mounts import MountPoints
from nodeweave.spec.nodes import FAILED, Reader

KEYS = ("name", "path", "read_only", "host_path", "claim", "config_map", "secret", "cache")
KUBERNETES_SOURCES = ("claim", "config_map", "secret", "cache")
SOURCES = "host_path, claim, config_map, secret or cache"
# Volume names and mount paths nodeweave already uses in every pod.
RESERVED_NAMES = ("workspace", "cache", "dshm", "hugepages")


def volumes(r: Reader, node: Optional[Node], mounts: Optional[MountPoints], base_dir=None) -> Tuple[Volume, ...]:
    """The list; ``mounts`` holds the mount points already taken (workspace, cache, /dev/shm) and their rule (None:
    a part they come from was refused, so each volume's own fields are read and no mount point is weighed);
    ``base_dir``: the spec's folder, a relative host_path's."""
    out: List[Volume] = []
    names: Dict[str, str] = {}
    for path, item in r.sequence(node, "volumes", "mappings with name, path and a source"):
        volume = r.attempt(_volume, r, path, item, base_dir)  # each volume on its own: every one's mistake is named
        # its name is weighed against the others' whatever else it got wrong (walk16a A31: a second `a` was told
        # only once its host_path passed)
        name = volume.name if volume is not FAILED else _name_as_written(r, item)
        if name and (name in RESERVED_NAMES or name.startswith("hugepages-") or name in names):
            other = names.get(name, "nodeweave's own volumes")
            r.keep(r.fail(item, f"{path}.name", f"{name!r} is already used by {other}",
                          "a name not used by another volume nor " + ", ".join(RESERVED_NAMES)))
            continue
        if volume is FAILED:
            if name:
                names.setdefault(name, path)
            continue
        if mounts is not None:
            r.field(lambda: mounts.claim(item, f"{path}.path", volume.path), None)
        names[volume.name] = path
        out.append(volume)
    return tuple(out)


def _name_as_written(r: Reader, item: Node) -> Optional[str]:
    """A refused volume's ``name`` as written, when it is a plain string that its own rule takes (else None: its
    refusal is said already)."""
    from yaml.nodes import MappingNode, ScalarNode

    if not isinstance(item, MappingNode):
        return None
    for key, value in item.value:
        if isinstance(key, ScalarNode) and key.value == "name" and isinstance(value, ScalarNode) and \
                value.tag == "tag:yaml.org,2002:str" and rules.DNS_LABEL.check(value.value):
            return value.value
    return None


def _volume(r: Reader, path: str, item: Node, base_dir=None) -> Volume:
    f = r.fields(item, path, KEYS)
    # each field on its own: one entry's every mistake in one run (walk15 A23)
    name = r.field(lambda: rule_string(r, f.require("name", rules.DNS_LABEL.accepted), f.path_of("name"),
                                       rules.DNS_LABEL), "")
    mount = r.field(lambda: container_path(r, f.require("path", "the container path it is mounted at"),
                                           f.path_of("path")), "")
    sources = [key for key in KUBERNETES_SOURCES if f.get(key) is not None]
    if len(sources) > 1:
        r.keep(r.fail(f.get(sources[1]), f.path_of(sources[1]), f"a volume has one Kubernetes source, and "
                      f"{sources[0]} is already given", f"one of {', '.join(KUBERNETES_SOURCES)}, plus host_path if "
                      "wanted"))
    host = host_path(r, f, "host_path", None, base_dir)
    if not sources and host is None:
        raise r.fail(item, path, "has no source", f"one of {SOURCES}")
    if host is not None and not sources and not host.startswith("/"):
        raise r.fail(f.get("host_path"), f.path_of("host_path"), f"{host!r} is not absolute, and Kubernetes mounts it "
                     "as a hostPath, which must be", "an absolute host path, or a claim/config_map/secret/cache for "
                     "Kubernetes beside it")
    secret = optional(r, f, "secret", rules.DNS_SUBDOMAIN)
    read_only = boolean(r, f, "read_only", secret is not None or f.get("config_map") is not None)
    if secret is not None and not read_only:
        raise r.fail(f.get("read_only"), f.path_of("read_only"), "a Secret is always mounted read-only",
                     "true, or leave read_only out")
    return Volume(
        name=name, path=mount, read_only=read_only, host_path=host,
        claim=optional(r, f, "claim", rules.DNS_SUBDOMAIN),
        config_map=optional(r, f, "config_map", rules.DNS_SUBDOMAIN),
        secret=secret,
        cache=optional(r, f, "cache", rules.QUANTITY),
    )
