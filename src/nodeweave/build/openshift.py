"""``image build --target openshift``: the cluster builds the image from the spec's BuildConfig.

The ImageStream and BuildConfig ``render openshift-build`` writes are
applied from ``.nodeweave/<job>/openshift-build/`` beside the spec (kept, so a
real build's commands can be inspected and rerun), then ``oc start-build <job>
--from-dir=<upload> --follow --wait`` uploads what the build reads (a binary
source; a git source builds from its repository) and streams the build's log
until it ends.

The upload is ``.nodeweave/<job>/openshift-upload/``: the Dockerfile rendered
for this spec at ``images/<variant>/Dockerfile`` (whatever the context holds
there: a nodeweave checkout given as ``--context`` would otherwise build its
own), the sources its COPY/ADD lines read from the context (less what the
context's ``.dockerignore`` keeps out), and the wheelhouse; a source the
context lacks is refused before anything is applied, naming it. Not the whole
folder: a team's repository holds data and checkpoints the build never reads.
``--follow`` alone can end 0 when the build fails on the cluster, so the step
waits (``--wait``), and the build's phase is read back when oc named the build.

``build_steps`` only plans (:class:`ClusterBuild`: the tree's files, the upload's
list, the two steps); the CLI's executor writes the tree, stages the upload
(``stage_upload``) and runs the steps, so a dry run writes nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from nodeweave.steps import Step, execute, need_tool
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError
from nodeweave.remote import RemoteOptions, kind_class
from nodeweave.jobstate import JobState

KEPT_TREE = "openshift-build"  # in the job's folder: .nodeweave/<job>/openshift-build
UPLOAD_TREE = "openshift-upload"
# `oc start-build` prints "build.build.openshift.io/<name> started" before the log.
_STARTED = re.compile(r"^build(?:\.build\.openshift\.io)?/(\S+) started")


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


@dataclass(frozen=True)
class Upload:
    """What ``oc start-build --from-dir`` uploads, as planned: the folder, the Dockerfile, the context's files."""

    folder: Path
    variant: str
    dockerfile_text: str = field(repr=False)
    sources: Tuple[str, ...]  # paths relative to the context, in order

    def to_dict(self) -> dict:
        digest = "sha256:" + hashlib.sha256(self.dockerfile_text.encode("utf-8")).hexdigest()
        return {"folder": str(self.folder), "dockerfile": f"images/{self.variant}/Dockerfile",
                "dockerfile_digest": digest, "files": list(self.sources)}


def upload_sources(context: Path, dockerfile_text: str) -> Tuple[str, ...]:
    """The context's files the build reads (its COPY/ADD sources less what .dockerignore keeps out, the
    wheelhouse, the .dockerignore itself), relative to the context: read, never written."""
    from nodeweave.build.context import WHEELHOUSE
    from nodeweave.build.sources import DockerIgnore, copied_sources

    ignore = DockerIgnore.of(context)
    found = []
    for source in [*copied_sources(dockerfile_text), WHEELHOUSE]:
        root = context / source
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        for path in files:
            relative = path.relative_to(context).as_posix()
            if source == WHEELHOUSE or not ignore.excludes(relative):
                found.append(relative)
    if (context / ".dockerignore").is_file():
        found.append(".dockerignore")
    return tuple(found)


def stage_upload(context: Path, upload: Upload) -> int:
    """Fill the upload folder as planned (hard links where the filesystem allows); the number of files staged."""
    from nodeweave.build.context import WHEELHOUSE

    shutil.rmtree(upload.folder, ignore_errors=True)  # nodeweave's own folder: the last upload of this job
    (upload.folder / WHEELHOUSE).mkdir(parents=True)
    dockerfile = upload.folder / "images" / upload.variant / "Dockerfile"
    dockerfile.parent.mkdir(parents=True, exist_ok=True)
    dockerfile.write_text(upload.dockerfile_text, encoding="utf-8")
    for relative in upload.sources:
        _link_or_copy(context / relative, upload.folder / relative)
    return 1 + len(upload.sources)


# image build takes no --kube-context: the hint for an unreachable cluster names the one way it picks another
NO_CONTEXT_FLAG = "`{tool} config use-context NAME` for another (image build uses the current context)"


@dataclass(frozen=True)
class ClusterBuild:
    """The cluster build as planned: the kept tree's files (path under the spec's folder -> text), the upload
    (None: a git source), then the two steps (apply, start-build and follow)."""

    tree: Dict[str, str]
    upload: Optional[Upload]
    steps: Tuple[Step, Step]
    asks: Tuple[str, ...] = ()  # a read of the namespace that changes nothing: whether oc reaches the cluster
    notes: Tuple[str, ...] = ()  # what the plan says first: where the build lands against what the pods pull

    def refusal(self):
        """What the real build ends with before it writes or stages anything, and its dry run notes (exit 3): no
        oc on this machine, or a cluster oc cannot reach (replay N1's class: the dry run said nothing, the real
        build wrote its tree and failed on the apply with exit 1)."""
        from nodeweave.errors import EnvironmentProblem
        from nodeweave.failures import unreachable_cluster

        program = self.steps[0].argv[0]
        if shutil.which(program) is None:  # no --kube-cli remedy here: `oc start-build` has no kubectl form
            return EnvironmentProblem(f"{program} is not on PATH; it applies the BuildConfig and starts the build on "
                                      "the cluster (install the OpenShift client: `oc start-build` has no kubectl "
                                      "form)")
        if not self.asks:
            return None
        return unreachable_cluster(self.asks, f"get imagestream {self.asks[self.asks.index('imagestream') + 1]}",
                                   switch=NO_CONTEXT_FLAG.format(tool=self.asks[0]))


def build_steps(spec, spec_path: Path, context: Path, variant: str, kube_cli: str = "oc") -> ClusterBuild:
    """What ``image build --target openshift`` does, planned: nothing is written here."""
    from nodeweave.targets import openshift_build
    from nodeweave.resolve import resolve

    r = resolve(spec)
    if variant != r.variant.key:
        raise UsageError(f"variant {variant!r} is not accepted for --target openshift: the spec's BuildConfig builds "
                         f"variant {r.variant.key} (image.variant); build that, or change image.variant")
    binary = spec.kubernetes.build is None or spec.kubernetes.build.source != "git"
    job = JobState.of(spec_path, spec.name)
    upload = job.kept(UPLOAD_TREE)
    from nodeweave.jobstate import refuse_in_the_way

    for kept_tree in (upload, job.kept(KEPT_TREE)):  # emptied and filled: never through a link into your files
        refuse_in_the_way(job.spec_dir, kept_tree, folder=True)
    staged = None
    if binary:
        from nodeweave.build.context import check_context_paths, check_copied_sources, rendered_dockerfile

        check_context_paths(context, spec)
        text = rendered_dockerfile(r)
        check_copied_sources(context, text, f"the Dockerfile rendered for {r.variant.key}", spec_path)
        staged = Upload(upload, r.variant.key, text, upload_sources(context, text))
    tree = job.kept(KEPT_TREE)
    kept = {f"{job.shown(tree)}/{rel[len(openshift_build.BUILD) + 1:]}": text
            for rel, text in openshift_build.render_files(spec).items() if rel.startswith(openshift_build.BUILD + "/")}
    cli = kind_class(kube_cli)
    ns = spec.kubernetes.namespace
    apply = Step(f"apply the ImageStream and BuildConfig {spec.name} to {ns}",
                 tuple(cli.cli_argv("apply", RemoteOptions(), ns)) + ("-k", str(tree)), timeout=300)
    from_dir = (f"--from-dir={upload}",) if binary else ()
    start = Step(f"start the build {spec.name} on the cluster and follow its log",
                 tuple(cli.cli_argv("start-build", RemoteOptions(), None))
                 + (spec.name, "-n", ns, *from_dir, "--follow", "--wait"),
                 timeout=6 * 3600)
    asks = tuple(cli.cli_argv("get", RemoteOptions(), ns)) + ("imagestream", spec.name, "--ignore-not-found", "-o",
                                                             "name")
    unused = openshift_build.unused_build_note(r)
    return ClusterBuild(kept, staged, (apply, start), asks, (unused,) if unused else ())


def run_build_steps(steps: Tuple[Step, Step], on_line: Callable[[str], None]) -> None:
    """Apply, then start the build and stream its log; a failed build is one error naming the command."""
    apply, start = steps
    execute(apply)
    need_tool(start.argv[0], "it starts the build on the cluster")
    proc = subprocess.Popen(list(start.argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL)
    tail: List[str] = []
    build: Optional[str] = None
    for line in proc.stdout:
        on_line(line.rstrip("\n"))
        tail = (tail + [line.strip()])[-3:]
        found = _STARTED.match(line.strip())
        build = build or (found.group(1) if found else None)
    command = f"{' '.join(start.argv[:2])} {start.argv[2]}"
    if proc.wait() != 0:
        raise NodeweaveError(f"{command} failed (exit {proc.returncode}): "
                             + (" | ".join(t for t in tail if t) or "no output"))
    phase = _build_phase(start, build) if build else None
    if phase is not None and phase != "Complete":
        raise NodeweaveError(f"{command}: the build {build} ended {phase} on the cluster (`{start.argv[0]} logs "
                             f"build/{build} -n {_namespace(start)}` shows why): "
                             + (" | ".join(t for t in tail if t) or "no output"))


def _namespace(start: Step) -> str:
    argv = list(start.argv)
    return argv[argv.index("-n") + 1] if "-n" in argv else "default"


def _build_phase(start: Step, build: str) -> Optional[str]:
    """The build's ``status.phase`` (Complete, Failed, Error, Cancelled, ...); None when it cannot be read."""
    argv = [*start.argv[:start.argv.index("start-build")], "get", f"build/{build}", "-n", _namespace(start),
            "-o", "jsonpath={.status.phase}"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
