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

import re
from dataclasses import dataclass
from functools import lru_cache
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

    ``roots``: the folders (``images/``) or single files (``.dockerignore``) the renderer writes in.
    ``paths``: the exact names it can render for any spec (``{variant}`` stands for each image variant's key);
    checked on every render, and the bound of what ``--prune`` may ever remove for it. Why names and not the
    roots: a user keeps files of their own inside the rendered folders (``compose/.env``, an overlay under
    ``manifests/overlays/``, a README), and a record listing them must not make them nodeweave's (walk6, W35)."""

    name: str
    render: Renderer
    summary: str
    roots: Tuple[str, ...]
    paths: Tuple[str, ...]
    wanted: Callable[[Spec], bool] = lambda spec: True
    # files of another target this one's files name (a kustomize resource ``../../manifests/job``): render says so
    # when a render writes this target without them and --out lacks them (walk7 A6: kustomize failed on lstat)
    needs: Tuple[str, ...] = ()

    def __call__(self, spec: Spec) -> Dict[str, Rendered]:
        return self.render(spec)

    def makes(self, path: str) -> bool:
        """Whether ``path`` (relative, with /) is one this target can render: one of its ``paths``."""
        return _path_pattern(self.paths).fullmatch(path) is not None


@lru_cache(maxsize=None)
def _path_pattern(paths: Tuple[str, ...]) -> "re.Pattern[str]":
    from nodeweave.catalogue import VARIANTS

    variant = "|".join(re.escape(key) for key in VARIANTS)
    return re.compile("|".join(f"(?:{re.escape(path).replace(re.escape('{variant}'), f'(?:{variant})')})"
                               for path in paths))


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


def _in(folder: str, *names: str) -> Tuple[str, ...]:
    return tuple(f"{folder}/{name}" for name in names)


_KUBE_OBJECTS = ("kustomization.yaml", "namespace.yaml", "networkpolicy.yaml", "podmonitor.yaml", "role.yaml",
                 "rolebinding.yaml", "service.yaml", "serviceaccount.yaml", "workspace-pvc.yaml")
_WORKLOAD_TREE = ("kustomization.yaml", "serviceaccount.yaml", "workspace-pvc.yaml")
_ROWS = (
    Target("images", _images, "a Dockerfile per variant, the bake file, .dockerignore", ("images/", ".dockerignore"),
           ("images/{variant}/Dockerfile", "images/docker-bake.json", "images/.hadolint.yaml", ".dockerignore",
            "images/nodeweave.dockerignore")),  # render's own rules beside a .dockerignore of the user's
    Target("compose", _compose, "compose files per host and for a local simulation", ("compose/",),
           _in("compose", ".env.example", "local.yaml", "node.yaml", "hosts")),
    Target("manifests", _manifests, "the kustomize tree: StatefulSet, Indexed Job, overlays", ("manifests/",),
           _in("manifests/base", *_KUBE_OBJECTS, "statefulset.yaml") + _in("manifests/job", *_KUBE_OBJECTS, "job.yaml")
           + _in("manifests/overlays/openshift", "kustomization.yaml", "statefulset-openshift.yaml", "scc.yaml",
                 "scc-ipc-lock.yaml")
           + _in("manifests/overlays/rocm", "kustomization.yaml", "statefulset-rocm.yaml")),
    Target("entrypoint", _zipapp, "the stdlib entrypoint as one file (a zipapp) for images you bring",
           ("entrypoint/",), ("entrypoint/nodeweave-entrypoint.pyz",)),
    Target("slurm", _slurm, "an sbatch script (pyxis, Apptainer or a host venv)", ("slurm/",), ("slurm/job.sbatch",),
           wanted=lambda spec: spec.slurm is not None),
    Target("openshift-build", _openshift_build, "ImageStream + BuildConfig, workloads following the image tag",
           ("openshift/",), _in("openshift/build", "kustomization.yaml", "imagestream.yaml", "buildconfig.yaml")
           + _in("openshift/deploy", "kustomization.yaml", "statefulset-trigger.yaml")
           + _in("openshift/job", "kustomization.yaml", "job-trigger.yaml"),
           wanted=lambda spec: spec.kubernetes.build is not None,
           needs=("manifests/overlays/openshift/kustomization.yaml", "manifests/job/kustomization.yaml")),
    Target("trainjob", _trainjob, "a Kubeflow Trainer TrainJob (torch-distributed runtime)", ("kubeflow/",),
           _in("kubeflow", *_WORKLOAD_TREE, "trainjob.yaml"), wanted=_never),
    Target("jobset", _jobset, "a JobSet of one replicated Indexed Job", ("jobset/",),
           _in("jobset", *_WORKLOAD_TREE, "jobset.yaml"), wanted=_never),
)
RENDERERS: Mapping[str, Target] = MappingProxyType({row.name: row for row in _ROWS})


def missing_needs(targets: Iterable[str], present: Callable[[str], bool]) -> List[Tuple[str, str, str]]:
    """(target, file it needs, the target that renders it) for each file a chosen target's files name that
    ``present`` (this render's files, or --out's) does not hold."""
    found = []
    for name in targets:
        for path in RENDERERS[name].needs:
            if not present(path):
                found.append((name, path, next(row.name for row in _ROWS if row.makes(path))))
    return found


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
        raise NodeweaveError(f"renderer {renderer} returned the path {path!r}, not one of its declared paths "
                             "(registry.Target.paths: what --prune is bounded by)")
