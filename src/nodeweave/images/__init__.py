"""Container images: the variant catalogue and the Dockerfiles rendered from it.

Pure: :func:`render_files` takes a spec and returns file texts, writing
nothing. Every catalogue variant is rendered (so ``make image VARIANT=rocm70``
works from a clone), each customised by the spec; ``image.base`` replaces the
base of the spec's own variant only, since a base made for one stack (say a
local Debian for ``cpu``) would be wrong for the others. How the result is
built is the "Image build contract" in docs/design.md.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, Dict

from nodeweave.images.bake import render_bake
from nodeweave.images.catalogue import VARIANTS, Variant, get_variant
from nodeweave.images.dockerfile import render_dockerfile

__all__ = ["VARIANTS", "Variant", "get_variant", "render_dockerfile", "render_files", "hadolint_config"]


def _package_text(name: str) -> str:
    return resources.files("nodeweave.images").joinpath(name).read_text(encoding="utf-8")


def hadolint_config() -> str:
    """The hadolint configuration every rendered Dockerfile must pass (ignores with reasons)."""
    return _package_text("hadolint.yaml")


def render_files(spec: Any) -> Dict[str, str]:
    """Relative path to text: a Dockerfile per variant, the bake file, lint config, .dockerignore."""
    get_variant(spec.image.variant)  # an unknown variant fails here, with the accepted list
    files = {}
    for key, variant in VARIANTS.items():
        base = spec.image.base if key == spec.image.variant else None
        files[f"images/{key}/Dockerfile"] = render_dockerfile(variant, spec, base)
    files["images/docker-bake.json"] = render_bake(VARIANTS, spec)
    files["images/.hadolint.yaml"] = hadolint_config()
    files[".dockerignore"] = _package_text("templates/dockerignore.txt")
    return dict(sorted(files.items()))
