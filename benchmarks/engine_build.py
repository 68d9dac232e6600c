"""Image build benchmark: cold build of a variant vs rebuilds, and the image's size over its base.

    .venv/bin/python benchmarks/engine_build.py [--variant cpu] [--base localhost/nodeweave-base:bookworm]

Builds with ``nodeweave.build`` (the code ``nodeweave image build`` runs), from
a still copy of the build inputs (the rendered .dockerignore lets in
entrypoint/nodeweave-entrypoint.pyz and wheelhouse/), offline from the wheelhouse
(.ci/wheelhouse.sh fills it). Scenarios, in one run:

- cold: ``--no-cache``; no layer is reused (cache *mounts*, such as apt's
  downloaded packages, stay as they are on this machine);
- no change: the same inputs again;
- code-only change: one module more in the entrypoint's zipapp (what an edit
  of the entrypoint changes in the context); the target is a rebuild of at most
  10% of the cold time, with only its COPY run again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

SPEC = """name: bench
image: {{variant: {variant}, registry: localhost/nodeweave-bench}}
nodes: 2
gpus_per_node: 2
launcher: {{script: train.py}}
"""


def snapshot(target: Path) -> Path:
    target.mkdir(parents=True)
    shutil.copy2(REPO / ".dockerignore", target / ".dockerignore")
    shutil.copytree(REPO / "entrypoint", target / "entrypoint")
    (target / "wheelhouse").mkdir()
    for wheel in (REPO / "wheelhouse").iterdir():
        if wheel.is_file():
            os.link(wheel, target / "wheelhouse" / wheel.name)
    return target


def heavy(steps) -> list:
    """Steps that execute something (RUN/COPY/ADD), as opposed to metadata."""
    return [s for s in steps if s.split(" ", 1)[0].upper() in ("RUN", "COPY", "ADD")]


LAYER_NAMES = (("apt-get install", "OS packages (apt)"), ('"torch==', "PyTorch"), ("deepspeed==", "DeepSpeed + Accelerate"),
               ("python3 -m venv", "venv"), ("useradd", "user and directories"),
               ("nodeweave-entrypoint", "nodeweave's entrypoint"),
               ("ADD file:", "base image"))


def layer_sizes(engine, image: str) -> list:
    """(size, what) of each layer with content, named by what its instruction does."""
    out = subprocess.run([engine.kind, "history", "--no-trunc", "--format", "{{.Size}}\t{{.CreatedBy}}", image],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        size, _, created = line.partition("\t")
        if size.endswith(("kB", "MB", "GB")) and not size.startswith("0"):
            name = next((label for needle, label in LAYER_NAMES if needle in created), " ".join(created.split())[-60:])
            rows.append((size, name))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="cpu")
    parser.add_argument("--base", default="localhost/nodeweave-base:bookworm")
    parser.add_argument("--network", default="host", help="build network (apt needs a mirror)")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    from nodeweave.build import detect_engine, prepare_build, run_build
    from nodeweave.spec import parse_spec

    engine = detect_engine()
    spec = parse_spec(SPEC.format(variant=args.variant), "bench.yaml")
    console = Console()
    with tempfile.TemporaryDirectory(prefix="nodeweave-bench-") as tmp:
        context = snapshot(Path(tmp) / "context")

        def build(label, no_cache=False):
            prepared = prepare_build(spec, args.variant, context, Path(tmp) / "scratch", base=args.base,
                                     offline=True, network=args.network, tag=f"{args.variant}-bench")
            console.print(f"[bold]{label}[/bold] ...")
            return run_build(engine, prepared.plan, no_cache=no_cache)

        cold = build("cold (--no-cache)", no_cache=True)
        # after --no-cache, buildah's lookup may first follow an older chain of the same
        # instructions; one cached build settles it on this context's chain
        build("settle the cache (not reported)")
        same = build("no change")
        sys.path.insert(0, str(REPO / "tests" / "e2e"))
        from e2e_harness import edit_entrypoint

        edit_entrypoint(context, "_benchmark_marker", "# benchmark: a code-only change\n")
        code = build("code-only change")

        table = Table(title=f"{args.variant} image builds, {engine}")
        for column in ("build", "seconds", "vs cold", "steps", "from cache", "RUN/COPY steps that ran"):
            table.add_column(column)
        for label, result in (("cold (--no-cache)", cold), ("no change", same), ("code-only change", code)):
            ran = heavy(result.rebuilt_steps)
            table.add_row(label, f"{result.seconds:.1f}", f"{result.seconds / cold.seconds:.1%}", str(result.steps),
                          str(result.cached_steps), str(len(ran)) if label.startswith("cold") else
                          ("; ".join(step[:40] for step in ran) or "none"))
        console.print(table)
        ratio = code.seconds / cold.seconds
        console.print(f"code-only rebuild / cold = {ratio:.1%} (target <= 10%): {'met' if ratio <= 0.10 else 'NOT met'}")

        base_size = engine.client.image.inspect(args.base).size
        sizes = Table(title="image size")
        sizes.add_column("image")
        sizes.add_column("MiB", justify="right")
        sizes.add_row(f"base {args.base}", f"{base_size / 2**20:,.0f}")
        sizes.add_row(f"{code.plan.image}", f"{code.size_bytes / 2**20:,.0f}")
        sizes.add_row("over the base", f"{(code.size_bytes - base_size) / 2**20:,.0f}")
        console.print(sizes)
        layers = Table(title="layers")
        layers.add_column("size")
        layers.add_column("created by")
        for size, created in layer_sizes(engine, code.plan.image):
            layers.add_row(size, created)
        console.print(layers)
        engine.client.image.remove([cold.plan.tags[0]], force=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
