"""The cluster spec (``nodeweave.yaml``): loaded into frozen dataclasses, validated with line numbers.

``load_spec(path)`` and ``parse_spec(text, source_name)`` are the whole
interface; everything downstream (renderers, CLI) receives a :class:`Spec`
whose fields already passed their rules. docs/spec.md documents each field.
"""

from nodeweave.catalogue import known_variants
from nodeweave.spec.loader import load_spec, parse_spec
from nodeweave.spec.model import (
    AffinityTerm,
    Cache,
    Image,
    Kubernetes,
    Launcher,
    Network,
    NodeRange,
    OpenShiftBuild,
    Project,
    Resources,
    Security,
    Slurm,
    Spec,
    Toleration,
    TopologySpread,
    Volume,
    Workspace,
)

__all__ = [
    "AffinityTerm",
    "Cache",
    "Image",
    "Kubernetes",
    "Launcher",
    "Network",
    "NodeRange",
    "OpenShiftBuild",
    "Project",
    "Resources",
    "Security",
    "Slurm",
    "Spec",
    "Toleration",
    "TopologySpread",
    "Volume",
    "Workspace",
    "known_variants",
    "load_spec",
    "parse_spec",
]
