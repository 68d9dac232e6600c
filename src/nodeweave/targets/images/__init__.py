"""Container images: the variant catalogue and the Dockerfiles rendered from it.

Pure: :func:`render_files` takes a spec and returns file texts, writing
nothing. Every catalogue variant is rendered (so ``make image VARIANT=rocm70``
works from a clone), each customised by the spec as ``nodeweave.resolve`` sees
it through that variant (``image.base`` and ``image.tag`` belong to the spec's
own variant only). How the result is built is the "Image build contract" in
docs/design.md.
"""

from __future__ import annotations

from importlib import resources
from typing import Dict

from nodeweave.catalogue import VARIANTS, Variant, get_variant
from nodeweave.targets.images.bake import render_bake
from nodeweave.targets.images.dockerfile import render_dockerfile
from nodeweave.resolve import resolve
from nodeweave.spec import Spec

__all__ = ["VARIANTS", "Variant", "context_paths", "get_variant", "render_dockerfile", "render_files", "hadolint_config"]


def _package_text(name: str) -> str:
    return resources.files("nodeweave.targets.images").joinpath(name).read_text(encoding="utf-8")


def hadolint_config() -> str:
    """The hadolint configuration every rendered Dockerfile must pass (ignores with reasons)."""
    return _package_text("hadolint.yaml")


def context_paths(spec: Spec) -> Dict[str, str]:
    """Field -> path of what the spec's image reads from the build context (``.dockerignore`` admits each)."""
    paths = {"image.requirements": spec.image.requirements} if spec.image.requirements else {}
    if spec.image.project and spec.image.project.source:
        paths["image.project.source"] = spec.image.project.source + "/"
    return paths


def _admitted(spec: Spec) -> str:
    """``.dockerignore`` lines letting in what the spec's image reads: its requirements file and project code."""
    paths = context_paths(spec)
    if not paths:
        return ""
    return "# What nodeweave.yaml's image section reads (image.requirements, image.project.source).\n" + "".join(
        f"!{path}\n" for path in paths.values())


def render_files(spec: Spec) -> Dict[str, str]:
    """Relative path to text: a Dockerfile per variant, the bake file, lint config, .dockerignore."""
    get_variant(spec.image.variant)  # an unknown variant fails here, with the accepted list
    views = [resolve(spec, key) for key in VARIANTS]
    files = {f"images/{r.variant.key}/Dockerfile": render_dockerfile(r) for r in views}
    files["images/docker-bake.json"] = render_bake(views)
    files["images/.hadolint.yaml"] = hadolint_config()
    files[".dockerignore"] = _package_text("templates/dockerignore.txt") + _admitted(spec)
    return dict(sorted(files.items()))
