"""The render targets: one row per pure renderer, and the union of their files.

Each row imports its renderer when called, so a command that renders one
target (or none: ``nodeweave --help``) does not load jinja2 and the others.
``render all`` renders the targets a spec asks for: images, compose,
manifests and the entrypoint zipapp always; the others when the spec has their
section (``slurm:``, ``kubernetes.build``); Kubeflow's TrainJob and JobSet only
when named. A renderer's value is text (written as UTF-8) or, for a binary
such as the zipapp, bytes (written as they are).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Callable, Dict, Iterable, List, Mapping, Tuple, Union

from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.spec import Spec

Rendered = Union[str, bytes]  # text, or a binary file's exact bytes
Renderer = Callable[[Spec], Dict[str, Rendered]]


@dataclass(frozen=True)
class Target:
    """One render target: its renderer, what it makes, where (``roots``), and whether ``all`` includes it for a spec.

    ``roots``: the only paths the renderer writes, a folder (``images/``: anything under it) or one file
    (``.dockerignore``); checked on every render, and the bound of what ``--prune`` may ever remove for it."""

    name: str
    render: Renderer
    summary: str
    roots: Tuple[str, ...]
    wanted: Callable[[Spec], bool] = lambda spec: True

    def __call__(self, spec: Spec) -> Dict[str, Rendered]:
        return self.render(spec)

    def makes(self, path: str) -> bool:
        """Whether ``path`` (relative, with /) is one this target can render: under one of its roots."""
        return any(path.startswith(root) if root.endswith("/") else path == root for root in self.roots)


def _never(spec: Spec) -> bool:
    return False


def _images(spec: Spec) -> Dict[str, str]:
    from nodeweave.targets.images import render_files

    return render_files(spec)


def _compose(spec: Spec) -> Dict[str, str]:
    from nodeweave.targets.compose import render_files

    return render_files(spec)


def _manifests(spec: Spec) -> Dict[str, str]:
    from nodeweave.targets.kubernetes import render_files

    return render_files(spec)


def _slurm(spec: Spec) -> Dict[str, str]:
    from nodeweave.targets.slurm import render_files

    return render_files(spec)


def _openshift_build(spec: Spec) -> Dict[str, str]:
    from nodeweave.targets.openshift_build import render_files

    return render_files(spec)


def _trainjob(spec: Spec) -> Dict[str, str]:
    from nodeweave.targets.trainjob import render_files

    return render_files(spec)


def _jobset(spec: Spec) -> Dict[str, str]:
    from nodeweave.targets.jobset import render_files

    return render_files(spec)


def _zipapp(spec: Spec) -> Dict[str, bytes]:
    from nodeweave.targets.zipapp import render_files

    return render_files(spec)


_ROWS = (
    Target("images", _images, "a Dockerfile per variant, the bake file, .dockerignore", ("images/", ".dockerignore")),
    Target("compose", _compose, "compose files per host and for a local simulation", ("compose/",)),
    Target("manifests", _manifests, "the kustomize tree: StatefulSet, Indexed Job, overlays", ("manifests/",)),
    Target("entrypoint", _zipapp, "the stdlib entrypoint as one file (a zipapp) for images you bring",
           ("entrypoint/",)),
    Target("slurm", _slurm, "an sbatch script (pyxis, Apptainer or a host venv)", ("slurm/",),
           wanted=lambda spec: spec.slurm is not None),
    Target("openshift-build", _openshift_build, "ImageStream + BuildConfig, workloads following the image tag",
           ("openshift/",), wanted=lambda spec: spec.kubernetes.build is not None),
    Target("trainjob", _trainjob, "a Kubeflow Trainer TrainJob (torch-distributed runtime)", ("kubeflow/",),
           wanted=_never),
    Target("jobset", _jobset, "a JobSet of one replicated Indexed Job", ("jobset/",), wanted=_never),
)
RENDERERS: Mapping[str, Target] = MappingProxyType({row.name: row for row in _ROWS})


def wanted_targets(spec: Spec) -> List[str]:
    """What ``render all`` renders for ``spec``."""
    return [name for name, row in RENDERERS.items() if row.wanted(spec)]


def render_targets(spec: Spec, targets: Iterable[str]) -> Dict[str, Rendered]:
    """Every file the chosen renderers make, by relative path; two renderers may not claim one path."""
    files: Dict[str, Rendered] = {}
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
    if not RENDERERS[renderer].makes(path):
        raise NodeweaveError(f"renderer {renderer} returned the path {path!r}, outside its roots "
                             f"{', '.join(RENDERERS[renderer].roots)} (what --prune is bounded by)")
