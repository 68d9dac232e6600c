"""``image build --target openshift``: the cluster builds the image from the spec's BuildConfig.

The ImageStream and BuildConfig ``render openshift-build`` writes are
applied from ``.nodeweave/openshift-build/<job>/`` beside the spec (kept, so a
dry run's commands can be inspected and rerun), then ``oc start-build
<job> --from-dir=<context> --follow`` uploads the build context (a binary
source; a git source builds from its repository) and streams the build's log
until it ends. The BuildConfig builds ``images/<variant>/Dockerfile`` from the
upload, so that rendered file must be in the context.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable, List, Tuple

from nodeweave.steps import Step, execute, need_tool
from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.remote import RemoteOptions, kind_class

KEPT_TREE = ".nodeweave/openshift-build"


def build_steps(spec, spec_path: Path, context: Path, variant: str, kube_cli: str = "oc") -> Tuple[Step, Step]:
    """(apply the build objects, start the build and follow it); writes the kept tree the first one applies."""
    from nodeweave.targets import openshift_build
    from nodeweave.resolve import resolve

    r = resolve(spec)
    if variant != r.variant.key:
        raise UsageError(f"variant {variant!r} is not accepted for --target openshift: the spec's BuildConfig builds "
                         f"variant {r.variant.key} (image.variant); build that, or change image.variant")
    binary = spec.kubernetes.build is None or spec.kubernetes.build.source != "git"
    dockerfile = context / f"images/{r.variant.key}/Dockerfile"
    if binary and not dockerfile.is_file():
        raise UsageError(f"{dockerfile} is missing: the BuildConfig builds the rendered Dockerfile from the upload; "
                         f"`nodeweave render images --spec {spec_path}` writes it (or give --context)")
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
    upload = (f"--from-dir={context}",) if binary else ()
    start = Step(f"start the build {spec.name} on the cluster and follow its log",
                 tuple(cli.cli_argv("start-build", RemoteOptions(), None)) + (spec.name, "-n", ns, *upload, "--follow"),
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
    for line in proc.stdout:
        on_line(line.rstrip("\n"))
        tail = (tail + [line.strip()])[-3:]
    if proc.wait() != 0:
        raise NodeweaveError(f"{' '.join(start.argv[:2])} {start.argv[2]} failed (exit {proc.returncode}): "
                             + (" | ".join(t for t in tail if t) or "no output"))
