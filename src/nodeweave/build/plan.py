"""What an image build will do, decided before any engine runs.

A :class:`BuildPlan` holds the Dockerfile, the context, the tags, the build
arguments and the labels, and the steps it becomes (``BuildPlan.steps``: the
engine's argv, its variables, one push per tag); ``nodeweave image build
--dry-run`` prints those steps and stops, the real build executes the very
same steps. Pure: no I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Mapping, Optional, Tuple

from nodeweave.build.engine import BUILDX, CLASSIC_BUILDKIT
from nodeweave.resolve import Resolved
from nodeweave.steps import Step

# The build argument the rendered Dockerfiles take their FROM image from.
BASE_IMAGE_ARG = "BASE_IMAGE"
BUILD_TIMEOUT_S = 6 * 3600  # a cold CUDA image builds for an hour or more


@dataclass(frozen=True)
class Revision:
    """The source revision an image is built from: a commit, and whether the tree had edits."""

    sha: str
    dirty: bool = False

    @property
    def tag_suffix(self) -> str:
        return f"{self.sha}-dirty" if self.dirty else self.sha


@dataclass(frozen=True)
class BuildPlan:
    variant: str
    dockerfile: Path
    context: Path
    tags: Tuple[str, ...]  # the immutable tag first, then the moving one
    build_args: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    push: bool = False
    network: Optional[str] = None  # build-time network ("host" lets apt reach a mirror)

    @property
    def image(self) -> str:
        """The immutable reference; what a deployment should name."""
        return self.tags[0]

    def build_argv(self, builder: str = BUILDX, no_cache: bool = False, engine_kind: str = "podman") -> List[str]:
        """The build's arguments after the engine's name: ``buildx build ...`` (docker's with ``--progress plain
        --load``: its log streams, the image lands in the engine), or, for a docker client with BuildKit built
        in, ``build --progress plain ...`` (run with DOCKER_BUILDKIT=1)."""
        argv = ["build", "--progress", "plain"] if builder == CLASSIC_BUILDKIT else ["buildx", "build"]
        if builder != CLASSIC_BUILDKIT and engine_kind == "docker":
            argv += ["--progress", "plain", "--load"]
        argv += ["--file", str(self.dockerfile)]
        if self.network:
            argv += ["--network", self.network]
        for key, value in sorted(self.build_args.items()):
            argv += ["--build-arg", f"{key}={value}"]
        for key, value in sorted(self.labels.items()):
            argv += ["--label", f"{key}={value}"]
        if no_cache:
            argv.append("--no-cache")
        for tag in self.tags:
            argv += ["--tag", tag]
        argv.append(str(self.context))
        return argv

    def steps(self, engine_kind: str = "podman", builder: str = BUILDX, no_cache: bool = False) -> Tuple[Step, ...]:
        """What ``image build`` runs, in order: the build, then (``--push``) one push per tag; ``--dry-run`` prints
        these very steps and the real build executes them (``nodeweave.build.builder``)."""
        from nodeweave.build.pushed import push_step

        env = (("DOCKER_BUILDKIT", "1"),) if builder == CLASSIC_BUILDKIT else ()
        build = Step(f"build {self.image} ({self.variant})",
                     (engine_kind, *self.build_argv(builder, no_cache, engine_kind)), env=env, timeout=BUILD_TIMEOUT_S)
        return (build, *(push_step(engine_kind, tag) for tag in self.tags)) if self.push else (build,)

    def command(self, engine_kind: str = "podman", builder: str = BUILDX, no_cache: bool = False) -> str:
        """The steps as shell lines (a log's, a person's)."""
        return "\n".join(step.text() for step in self.steps(engine_kind, builder, no_cache))


def plan_build(r: Resolved, context: Path, dockerfile: Path, revision: Optional[Revision],
               base: Optional[str] = None, push: bool = False, fixed_tag: Optional[str] = None,
               extra_args: Optional[Mapping[str, str]] = None, offline: bool = False,
               network: Optional[str] = None, version: Optional[str] = None,
               source: Optional[str] = None) -> BuildPlan:
    """The build of the spec seen through one variant: tags, arguments and OCI labels.

    Build arguments, later ones winning: the contract's VERSION/REVISION/SOURCE,
    ``image.build_args``, ``--build-arg`` values, then the base override (``--base``,
    else the spec's ``image.base`` when this is its own variant) and PIP_NO_INDEX
    for offline builds (docs/design.md, image build contract).
    """
    spec = r.spec
    build_args = {}
    if version:
        build_args["VERSION"] = version
    if revision is not None:
        build_args["REVISION"] = revision.sha + ("-dirty" if revision.dirty else "")
    if source:
        build_args["SOURCE"] = source
    build_args.update(left_on_the_command_line(spec.image.build_args))
    build_args.update(left_on_the_command_line(extra_args or {}))
    chosen_base = base or (r.base_image if r.base_overridden else None)
    if chosen_base:
        build_args[BASE_IMAGE_ARG] = chosen_base
    if offline:
        build_args["PIP_NO_INDEX"] = "1"
    labels = {"io.nodeweave.job": spec.name, "io.nodeweave.variant": r.variant.key}
    labels.update(_per_build_labels(build_args))
    tags = r.build_tags(revision.tag_suffix if revision else None, fixed=fixed_tag)
    return BuildPlan(variant=r.variant.key, dockerfile=dockerfile, context=context, tags=tags,
                     build_args=build_args, labels=labels, push=push, network=network)


def left_on_the_command_line(build_args: Mapping[str, str]) -> dict:
    """The build args a build passes: a secret-looking one (``looks_secret``) is not declared in the rendered
    Dockerfile, so no build step would see it, and on the engine's command line ``ps`` and the dry run would."""
    from nodeweave.spec.rules import looks_secret

    return {name: value for name, value in build_args.items() if not looks_secret(name)}


# The OCI labels whose values change from one build to the next. The Dockerfile
# sets them from build arguments too (for hand builds), but buildah (podman 4.x)
# leaves build-argument values out of its layer-cache key, so a cached LABEL step
# would keep the previous build's revision; ``--label`` is applied at commit.
_PER_BUILD_LABELS = {"REVISION": "org.opencontainers.image.revision",
                     "VERSION": "org.opencontainers.image.version",
                     "SOURCE": "org.opencontainers.image.source",
                     BASE_IMAGE_ARG: "org.opencontainers.image.base.name"}


def _per_build_labels(build_args: Mapping[str, str]) -> dict:
    return {label: build_args[arg] for arg, label in _PER_BUILD_LABELS.items() if arg in build_args}


def image_plan(prepared, scratch: str, kind: str, builder: str, no_cache: bool, would_fail: Tuple[str, ...] = ()):
    """``image build`` (this machine's engine) as a :class:`nodeweave.plan.Plan`: the Dockerfile rendered for the
    spec (unless the context's matches), then one ``build`` phase: the engine's build step, then one push per tag
    (--push). Its notes: what else the build writes in the context (the entrypoint zipapp refreshed, the
    wheelhouse linked) and, for a dry run, what would fail. ``prepared``: ``nodeweave.build.PreparedBuild``."""
    from nodeweave.plan import BuildPhase, FilesPhase, Plan, PlannedFile

    build = prepared.plan
    phases = []
    if prepared.dockerfile_text is not None:
        dockerfile = PlannedFile(f"{scratch}/Dockerfile", f"the Dockerfile of {build.variant}, rendered for the spec",
                                 prepared.dockerfile_text.encode())
        phases.append(FilesPhase("the Dockerfile the build reads", files=(dockerfile,)))
    what = f"build {build.image} ({build.variant})" + (f", then push {len(build.tags)} tag(s)" if build.push else "")
    phases.append(BuildPhase(what, steps=build.steps(kind, builder, no_cache)))
    return Plan("image build", f"{kind} ({builder})", tuple(phases), notes=(*would_fail, *prepared.notes))


def cluster_image_plan(cluster, variant: str):
    """``image build -t openshift`` as a :class:`nodeweave.plan.Plan`: the kept BuildConfig tree, the upload staged
    (a context upload, not a git source), then apply and start-build. ``cluster``: ``openshift.ClusterBuild``."""
    from nodeweave.plan import BuildPhase, FilesPhase, Plan, PlannedFile, StagePhase

    kept = tuple(PlannedFile(path, "the ImageStream and BuildConfig (kept: apply -k reads them)", text.encode())
                 for path, text in cluster.tree.items())
    phases = [FilesPhase("the build objects", files=kept)]
    if cluster.upload is not None:
        phases.append(StagePhase("the upload: what the build reads", folder=str(cluster.upload.folder),
                                 upload=cluster.upload.to_dict()))
    phases.append(BuildPhase(f"build {variant} on the cluster", steps=cluster.steps))
    return Plan("image build", "openshift (the spec's BuildConfig)", tuple(phases), notes=cluster.notes)
