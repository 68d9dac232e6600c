"""``image build --target openshift``: the cluster builds the image from the spec's BuildConfig.

The ImageStream and BuildConfig ``render openshift-build`` writes are
applied from ``.nodeweave/openshift-build/<job>/`` beside the spec (kept, so a
dry run's commands can be inspected and rerun), then ``oc start-build <job>
--from-dir=<upload> --follow --wait`` uploads what the build reads (a binary
source; a git source builds from its repository) and streams the build's log
until it ends.

The upload is ``.nodeweave/openshift-upload/<job>/``: the Dockerfile rendered
for this spec at ``images/<variant>/Dockerfile`` (whatever the context holds
there: a nodeweave checkout given as ``--context`` would otherwise build its
own), the sources its COPY/ADD lines read from the context (less what the
context's ``.dockerignore`` keeps out), and the wheelhouse; a source the
context lacks is refused before anything is applied, naming it. Not the whole
folder: a team's repository holds data and checkpoints the build never reads.
``--follow`` alone can end 0 when the build fails on the cluster, so the step
waits (``--wait``), and the build's phase is read back when oc named the build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from nodeweave.steps import Step, execute, need_tool
from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.remote import RemoteOptions, kind_class

KEPT_TREE = ".nodeweave/openshift-build"
UPLOAD_TREE = ".nodeweave/openshift-upload"
# `oc start-build` prints "build.build.openshift.io/<name> started" before the log.
_STARTED = re.compile(r"^build(?:\.build\.openshift\.io)?/(\S+) started")


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def stage_upload(context: Path, dockerfile_text: str, variant: str, upload: Path) -> int:
    """Fill ``upload`` with what the build reads: the Dockerfile, its COPY/ADD sources, the wheelhouse.

    Returns the number of files staged. Files are hard-linked where the filesystem allows.
    """
    from nodeweave.build.context import WHEELHOUSE
    from nodeweave.build.sources import DockerIgnore, copied_sources

    shutil.rmtree(upload, ignore_errors=True)  # nodeweave's own folder: the last upload of this job
    (upload / WHEELHOUSE).mkdir(parents=True)
    dockerfile = upload / "images" / variant / "Dockerfile"
    dockerfile.parent.mkdir(parents=True)
    dockerfile.write_text(dockerfile_text, encoding="utf-8")
    ignore = DockerIgnore.of(context)
    count = 1
    for source in [*copied_sources(dockerfile_text), WHEELHOUSE]:
        root = context / source
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        for path in files:
            relative = path.relative_to(context).as_posix()
            if source == WHEELHOUSE or not ignore.excludes(relative):
                _link_or_copy(path, upload / relative)
                count += 1
    if (context / ".dockerignore").is_file():
        shutil.copy2(context / ".dockerignore", upload / ".dockerignore")
    return count


def build_steps(spec, spec_path: Path, context: Path, variant: str, kube_cli: str = "oc") -> Tuple[Step, Step]:
    """(apply the build objects, start the build and follow it); writes the kept tree the first one applies."""
    from nodeweave.targets import openshift_build
    from nodeweave.resolve import resolve

    r = resolve(spec)
    if variant != r.variant.key:
        raise UsageError(f"variant {variant!r} is not accepted for --target openshift: the spec's BuildConfig builds "
                         f"variant {r.variant.key} (image.variant); build that, or change image.variant")
    binary = spec.kubernetes.build is None or spec.kubernetes.build.source != "git"
    upload = spec_path.resolve().parent / UPLOAD_TREE / spec.name
    if binary:
        from nodeweave.build.context import check_context_paths, check_copied_sources, rendered_dockerfile

        check_context_paths(context, spec)
        text = rendered_dockerfile(r)
        check_copied_sources(context, text, f"images/{r.variant.key}/Dockerfile")
        stage_upload(context, text, r.variant.key, upload)
    tree = spec_path.resolve().parent / KEPT_TREE / spec.name
    shutil.rmtree(tree, ignore_errors=True)  # nodeweave's own folder: the last render of this job
    tree.mkdir(parents=True)
    for rel, text in openshift_build.render_files(spec).items():
        if rel.startswith(openshift_build.BUILD + "/"):
            (tree / rel[len(openshift_build.BUILD) + 1:]).write_text(text, encoding="utf-8")
    cli = kind_class(kube_cli)
    ns = spec.kubernetes.namespace
    apply = Step(f"apply the ImageStream and BuildConfig {spec.name} to {ns}",
                 tuple(cli.cli_argv("apply", RemoteOptions(), ns)) + ("-k", str(tree)), timeout=300)
    from_dir = (f"--from-dir={upload}",) if binary else ()
    start = Step(f"start the build {spec.name} on the cluster and follow its log",
                 tuple(cli.cli_argv("start-build", RemoteOptions(), None))
                 + (spec.name, "-n", ns, *from_dir, "--follow", "--wait"),
                 timeout=6 * 3600)
    return apply, start


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
