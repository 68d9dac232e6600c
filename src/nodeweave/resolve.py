"""Facts derived from the spec, worked out once: what every renderer and backend reads.

``resolve(spec, variant=None)`` answers for one image variant (the spec's own
by default): the catalogue row and vendor, the image reference and its tags,
the base image, the Kubernetes GPU resource, and the environment of the
renderer-to-entrypoint contract (``nodeweave.entrypoint.planning.contract``). Compose,
manifests, the bake file and ``image build`` all read a :class:`Resolved`, so
they cannot disagree. A spec's ``image.tag`` and ``image.base`` belong to its
own variant only: an image of another variant (``make image VARIANT=rocm70``
with a cuda12 spec) keeps its moving tag and its catalogue base.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Collection, List, Optional, Tuple

from nodeweave.catalogue import Variant, Vendor, get_variant, get_vendor
from nodeweave.entrypoint.planning.contract import SETTINGS
from nodeweave.spec.model import Spec


@dataclass(frozen=True)
class Resolved:
    """One spec seen through one image variant."""

    spec: Spec
    variant: Variant
    vendor: Vendor

    @cached_property
    def capabilities(self) -> Tuple[str, ...]:
        """What the pods add after ``drop: [ALL]`` (:func:`pod_capabilities`), worked out once per render."""
        return pod_capabilities(self.spec)

    @property
    def own(self) -> bool:
        """Whether this is the spec's own ``image.variant`` (whose tag and base the spec sets)."""
        return self.variant.key == self.spec.image.variant

    @property
    def repository(self) -> str:
        return f"{self.spec.image.registry.rstrip('/')}/{self.spec.name}"

    @property
    def fixed_tag(self) -> Optional[str]:
        """The spec's ``image.tag``, for its own variant only."""
        return self.spec.image.tag if self.own else None

    @property
    def tag(self) -> str:
        """The tag deployments name: the fixed tag, else the moving ``<variant>`` every build pushes."""
        return self.fixed_tag or self.variant.key

    @property
    def image(self) -> str:
        """``<repository>:<tag>``, or ``<repository>:<tag>@<digest>`` when the spec pins its own variant's digest."""
        digest = self.spec.image.digest if self.own else None
        return f"{self.repository}:{self.tag}" + (f"@{digest}" if digest else "")

    @property
    def base_image(self) -> str:
        """``image.base`` for the spec's own variant, else the catalogue's base."""
        return (self.spec.image.base if self.own else None) or self.variant.base_image

    @property
    def base_overridden(self) -> bool:
        return self.base_image != self.variant.base_image

    @property
    def gpu_resource(self) -> Optional[str]:
        return self.variant.gpu_resource

    def build_tags(self, revision: Optional[str], fixed: Optional[str] = None) -> Tuple[str, ...]:
        """What a build tags: the immutable ``<variant>-<revision>`` (or a fixed tag) first, then ``<variant>``.

        ``fixed`` (``image build --tag``) wins over the spec's own fixed tag.
        """
        first = fixed or self.fixed_tag or (f"{self.variant.key}-{revision}" if revision else self.variant.key)
        tags = [f"{self.repository}:{first}"]
        if first != self.variant.key:
            tags.append(f"{self.repository}:{self.variant.key}")
        return tuple(tags)

    def contract_env(self, where: str, omit: Collection[str] = (),
                     only: Optional[Collection[str]] = None) -> List[Tuple[str, str]]:
        """``(variable, text)`` of every contract setting the spec gives, for renderer ``where``.

        ``where`` is ``compose`` or ``kubernetes``; ``omit``/``only`` filter by
        setting key. A spec value whose text is None (an empty list) is left out.
        """
        out = []
        for row in SETTINGS:
            if where not in row.where or row.key in omit or (only is not None and row.key not in only):
                continue
            text = row.text(spec_value(self.spec, row.spec))
            if text is not None:
                out.append((row.variable, text))
        return out

    def contract_pair(self, key: str) -> Tuple[str, Optional[str]]:
        """``(variable, text)`` of contract setting ``key`` for this spec, whichever renderer passes it: a target
        that leaves a setting to its platform may still need it (Slurm's node count beside spares)."""
        row = next(row for row in SETTINGS if row.key == key)
        return row.variable, row.text(spec_value(self.spec, row.spec))


def spec_value(spec: Spec, dotted: str):
    """The value at a dotted field path of the spec (``launcher.type``)."""
    value = spec
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def pod_capabilities(spec: Spec) -> Tuple[str, ...]:
    """What a pod adds back after ``drop: [ALL]``: IPC_LOCK where RDMA registers (pins) memory past
    RLIMIT_MEMLOCK, unless ``security.ipc_lock: false`` says the runtime's limit is already unlimited,
    then ``security.cap_add``. The one rule the pods, the OpenShift SCC, the Pod Security level and
    checkov's skips read (through :attr:`Resolved.capabilities`)."""
    add = ("IPC_LOCK",) if spec.network.rdma and spec.security.ipc_lock else ()
    return add + tuple(cap for cap in spec.security.cap_add if cap not in add)


def resolve(spec: Spec, variant: Optional[str] = None) -> Resolved:
    """``spec`` seen through ``variant`` (default: its own); an unknown variant is a usage error."""
    row = get_variant(variant or spec.image.variant)
    return Resolved(spec=spec, variant=row, vendor=get_vendor(row.vendor))
