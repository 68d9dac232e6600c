"""``nodeweave validate``: check the spec and say what it describes, without rendering or touching anything.

Why a verb of its own: users type it first (kubectl, compose and SkyPilot all have one), and
every other verb's first step is the same check; this one stops there and exits 0 or 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from nodeweave.cli.habits.base import find_spec, spec_option
from nodeweave.cli.habits.output import checked, emit, output_option


def validate(
    spec_path: Optional[Path] = spec_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout"),
    output: str = output_option(),
) -> None:
    """Check the spec (every mistake: file:line, field, what is accepted; exit 2) and summarise it."""
    from nodeweave.spec import load_spec

    spec_path = find_spec(spec_path)
    spec = load_spec(spec_path)
    summary = {"spec": str(spec_path), "name": spec.name, "nodes": str(spec.nodes),
               "processes_per_node": spec.gpus_per_node, "launcher": spec.launcher.type,
               "script": spec.launcher.script, "variant": spec.image.variant}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    if emit(summary, checked(output)):
        return
    typer.echo(f"{spec_path}: valid: {spec.name}, {spec.nodes} node(s) x {spec.gpus_per_node} process(es), "
               f"{spec.launcher.type} {spec.launcher.script}, image variant {spec.image.variant}")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
