"""The render targets: one row per pure renderer, and the union of their files.

Each row imports its renderer when called, so a command that renders one
target (or none: ``nodeweave --help``) does not load jinja2 and the others.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Callable, Dict, Iterable, Mapping

from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.spec import Spec

Renderer = Callable[[Spec], Dict[str, str]]


def _images(spec: Spec) -> Dict[str, str]:
    from nodeweave.images import render_files

    return render_files(spec)


def _compose(spec: Spec) -> Dict[str, str]:
    from nodeweave.compose import render_files

    return render_files(spec)


def _manifests(spec: Spec) -> Dict[str, str]:
    from nodeweave.manifests import render_files

    return render_files(spec)


RENDERERS: Mapping[str, Renderer] = MappingProxyType({
    "images": _images,
    "compose": _compose,
    "manifests": _manifests,
})


def render_targets(spec: Spec, targets: Iterable[str]) -> Dict[str, str]:
    """Every file the chosen renderers make, by relative path; two renderers may not claim one path."""
    files: Dict[str, str] = {}
    for name in targets:
        renderer = RENDERERS.get(name)
        if renderer is None:
            raise UsageError(f"unknown render target {name!r}; accepted: {', '.join(RENDERERS)} or all")
        for path, text in renderer(spec).items():
            _check_relative(name, path)
            if path in files:
                raise NodeweaveError(f"renderers disagree: {path} is rendered twice (second time by {name})")
            files[path] = text
    return dict(sorted(files.items()))


def _check_relative(renderer: str, path: str) -> None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise NodeweaveError(f"renderer {renderer} returned the path {path!r}, which would leave --out")
