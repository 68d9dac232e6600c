"""``nodeweave image variants``: the images catalogue, as a table or as JSON.

The table is for choosing ``image.variant``; ``--json`` is for scripts
(wheelhouse fillers, CI matrices), with every pinned field of each row.
"""

from __future__ import annotations

from dataclasses import asdict

import typer

from nodeweave.cli.habits.output import data_format, emit, emit_names, output_option, table_width


def variant_records() -> list:
    """Every catalogue row as a plain dict, derived fields included."""
    from nodeweave.catalogue import VARIANTS

    records = []
    for variant in VARIANTS.values():
        record = asdict(variant)
        record["accelerator_arch_arg"] = list(variant.accelerator_arch_arg) if variant.accelerator_arch_arg else None
        record["extra_apt_packages"] = list(variant.extra_apt_packages)
        record["apt_packages"] = list(variant.apt_packages)
        record["pip_requirements"] = list(variant.pip_requirements)
        records.append(record)
    return records


def variants(
    as_json: bool = typer.Option(False, "--json", help="print the catalogue as JSON (a list of objects) on stdout; "
                                 "the same as -o json"),
    output: str = output_option(names="variants"),
) -> None:
    """List the image variants: base image, PyTorch build, NCCL/RCCL (--json, -o json|yaml: every pinned field)."""
    from nodeweave.usertext import console as people_console
    from nodeweave.tables import Table

    records = variant_records()
    fmt = data_format(as_json, output)
    if emit(records, fmt) or emit_names((r["key"] for r in records), fmt):  # --json is -o json: one output
        return
    table = Table(title="nodeweave image variants (image.variant)")
    table.add_column("variant", no_wrap=True)
    table.add_column("vendor", no_wrap=True)
    # an image reference cut in two cannot be copied: keep it whole, let the prose column wrap at words
    table.add_column("base image", no_wrap=True, min_width=max(len(r["base_image"]) for r in records))
    table.add_column("torch", no_wrap=True)
    table.add_column("NCCL / RCCL")
    if output == "wide":
        table.add_column("python", no_wrap=True)
        table.add_column("torch index", no_wrap=True)
    for r in records:
        index = r["torch_index_url"].rsplit("/", 1)[-1]
        wide = [str(r.get("python") or "-"), r["torch_index_url"]] if output == "wide" else []
        table.add_row(r["key"], r["vendor"], r["base_image"], f"{r['torch_version']} {index}", r["collectives"], *wide)
    people_console(width=table_width()).print(table)


def deprecated_variants(
    as_json: bool = typer.Option(False, "--json", help="print the catalogue as JSON (a list of objects) on stdout"),
) -> None:
    """Deprecated spelling of `nodeweave image variants` (kept for one release)."""
    typer.echo("nodeweave: note: `nodeweave variants` is now `nodeweave image variants`; "
               "the old spelling goes in the next release", err=True)
    variants(as_json, "table")


def register(app: typer.Typer) -> None:
    app.command("variants", hidden=True)(deprecated_variants)
