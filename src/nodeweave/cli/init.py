"""``nodeweave init``: a first nodeweave.yaml from what this machine (or a captured tree) shows.

Why: the first spec is where new users stall. The entrypoint's own detection (no torch) sees the
GPUs, their vendor and count, and the active RDMA ports; those pick ``image.variant``,
``gpus_per_node`` and ``network.rdma``. The written spec is loaded back through the validator
before it is kept, and an existing file is never overwritten without ``--force``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from nodeweave.errors import UsageError

VARIANT_BY_VENDOR = {"nvidia": "cuda12", "amd": "rocm70", "none": "cpu"}
TEMPLATE = """\
# nodeweave cluster spec, written by `nodeweave init` from what {source} showed:
# {found}.
# docs/spec.md documents every field; `nodeweave validate` checks it, `nodeweave render all` renders it.

name: {name}  # DNS-1123 label: containers, pods and hosts <name>-0..N-1

image:
  variant: {variant}  # `nodeweave image variants` lists the catalogue

nodes: {nodes}
gpus_per_node: {gpus}  # processes per node{gpu_note}

launcher:
  type: {launcher}
  script: {script}  # relative to workspace.path (this folder, mounted there)
  args: []
{network}"""


def init(
    path: Path = typer.Option(Path("nodeweave.yaml"), "--out", help="Where to write the spec"),
    name: Optional[str] = typer.Option(None, "--name", help="The job's name (default: this folder's, made a DNS label)"),
    nodes: int = typer.Option(2, "--nodes", min=1, max=2048, help="Node count"),
    script: str = typer.Option("train.py", "--script", help="The training script, relative to this folder"),
    launcher: str = typer.Option("torchrun", "--launcher", help="torchrun, deepspeed, accelerate or command"),
    sysroot: Path = typer.Option(Path("/"), "--sysroot", help="Detect from this captured sysfs/procfs tree "
                                 "instead of this machine"),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out file"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the spec; write nothing"),
) -> None:
    """Write a first spec from this machine's GPUs and RDMA ports (the entrypoint's detection), validated."""
    from nodeweave.entrypoint import detect
    from nodeweave.spec import parse_spec

    if not sysroot.is_dir():
        raise UsageError(f"--sysroot {sysroot}: not a directory; accepted: / or a captured tree")
    node = detect(str(sysroot))
    text = spec_text(node, name or _label(Path.cwd().name), nodes, script, launcher, sysroot)
    parse_spec(text, str(path), base_dir=path.resolve().parent)  # the validator's word before anything is kept
    if dry_run:
        typer.echo(text, nl=False)
        return
    if path.exists() and not force:
        raise UsageError(f"{path} exists; nodeweave never overwrites a spec: pass --force, or --out another file")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        from nodeweave.failures import path_problem

        raise path_problem(err, "init --out") from None
    typer.echo(f"nodeweave: wrote {path}: {spec_summary(node)}; next: nodeweave validate, nodeweave render all",
               err=True)


def spec_text(node, name: str, nodes: int, script: str, launcher: str, sysroot: Path) -> str:
    gpus = node.gpus
    active = [p for p in node.nics if p.active]
    network = ("\nnetwork:\n  rdma: true  # active RDMA ports: "
               + ", ".join(p.name for p in active[:8]) + "\n") if active else ""
    return TEMPLATE.format(
        source="this machine" if str(sysroot) == "/" else f"the tree under {sysroot}", found=spec_summary(node),
        name=name, variant=VARIANT_BY_VENDOR.get(gpus.vendor, "cpu"), nodes=nodes,
        gpus=gpus.count if gpus.count else 1, gpu_note=f": {gpus.count}x {gpus.model}" if gpus.count else ": CPU",
        launcher=launcher, script=script, network=network)


def spec_summary(node) -> str:
    gpus = node.gpus
    found = f"{gpus.count}x {gpus.model} ({gpus.vendor})" if gpus.count else "no GPU"
    active = sum(1 for p in node.nics if p.active)
    return f"{found}, {active} active RDMA port(s)"


def _label(text: str) -> str:
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:52].strip("-")
    return label if label and label[0].isalpha() else f"job-{label}".strip("-")[:52]


def register(app: typer.Typer) -> None:
    app.command("init")(init)
