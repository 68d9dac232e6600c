"""The typed cluster spec: frozen dataclasses whose attribute names equal the YAML keys.

Renderers receive only these objects, never raw YAML, so a field that passed
the loader is known to be well-formed. Lists are tuples and mappings are
read-only views (``types.MappingProxyType``): take ``dict(spec.env)`` before
dumping one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional, Tuple, Union

EMPTY: Mapping[str, str] = MappingProxyType({})


def _empty():
    return field(default_factory=lambda: EMPTY)

LAUNCHERS = ("torchrun", "deepspeed", "accelerate", "command")
CLAIMS = ("shared", "per-pod")
ANTI_AFFINITIES = ("required", "preferred", "none")
TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True)
class NodeRange:
    """A fixed node count (``min == max``) or an elastic ``MIN:MAX`` range (torchrun c10d)."""

    min: int
    max: int

    @property
    def elastic(self) -> bool:
        return self.max != self.min

    def __str__(self) -> str:
        return f"{self.min}:{self.max}" if self.elastic else str(self.min)


@dataclass(frozen=True)
class Image:
    variant: str
    registry: str = "localhost/nodeweave"
    tag: Optional[str] = None
    base: Optional[str] = None
    build_args: Mapping[str, str] = _empty()


@dataclass(frozen=True)
class Launcher:
    script: str
    type: str = "torchrun"
    args: Tuple[str, ...] = ()
    master_port: int = 29500
    max_restarts: int = 0
    wait_timeout: int = 600  # seconds a worker waits for the master's port (NODEWEAVE_WAIT_TIMEOUT)


@dataclass(frozen=True)
class Workspace:
    path: str = "/workspace"
    host_path: str = "."


@dataclass(frozen=True)
class Cache:
    path: str = "/cache"
    host_path: str = "~/.cache/nodeweave"
    size: str = "200Gi"


@dataclass(frozen=True)
class Network:
    interfaces: Tuple[str, ...] = ()
    exclude_hcas: Tuple[str, ...] = ()
    rdma: bool = False  # pass RDMA devices (/dev/infiniband) and let verbs lock memory
    rdma_resources: Mapping[str, int] = _empty()
    attachments: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Toleration:
    """One Kubernetes toleration; keys spelled as Kubernetes spells them."""

    key: Optional[str] = None
    operator: str = "Equal"
    value: Optional[str] = None
    effect: Optional[str] = None
    tolerationSeconds: Optional[int] = None

    def to_kubernetes(self) -> dict:
        """The toleration as a manifest mapping, without unset fields."""
        fields = {
            "key": self.key,
            "operator": self.operator,
            "value": self.value,
            "effect": self.effect,
            "tolerationSeconds": self.tolerationSeconds,
        }
        return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True)
class Kubernetes:
    service: str  # resolved: the job name when the file leaves it out
    namespace: str = "default"
    storage_class: Optional[str] = None
    storage_size: str = "100Gi"
    claim: str = "shared"
    node_selector: Mapping[str, str] = _empty()
    tolerations: Tuple[Toleration, ...] = ()
    anti_affinity: str = "required"
    grace_period: int = 120
    openshift: bool = False
    cluster_domain: Optional[str] = None  # None: the pod reads it from /etc/resolv.conf


@dataclass(frozen=True)
class Spec:
    name: str
    image: Image
    nodes: NodeRange
    gpus_per_node: Union[int, str]  # a count, or "auto" (one process per detected GPU)
    launcher: Launcher
    workspace: Workspace
    cache: Cache
    network: Network
    env: Mapping[str, str]
    kubernetes: Kubernetes
