"""Tables, the JSON document and the optional plot of a bench.

The JSON is the record: every run's full per-size results, the variables it
added, the ranking. The plot needs matplotlib, which nodeweave does not
depend on; without it the plot is skipped unless one was asked for.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Callable

from nodeweave.tables import Table

from nodeweave.bench.options import format_bytes
from nodeweave.bench.runner import RunResult
from nodeweave.errors import EnvironmentProblem, UsageError
from nodeweave.usertext import styled

SCHEMA = "nodeweave.bench/1"


def results_table(run: RunResult) -> Table:
    """One run's per-size table, in nccl-tests' columns."""
    report = run.report or {}
    title = (f"{run.label}: {report.get('backend', '?')} on {report.get('world_size', '?')}× "
             f"{report.get('device', '?')}, torch {report.get('torch', '?')}"
             + (f", NCCL {report['nccl']}" if report.get("nccl") else ""))
    table = Table(title=title)
    for name in ("op", "size", "count", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong"):
        table.add_column(name, justify="left" if name == "op" else "right", no_wrap=name in ("op", "size"))
    for row in report.get("results", []):
        table.add_row(row["op"], format_bytes(row["bytes"]), str(row["count"]), f"{row['time_us']:.1f}",
                      f"{row['algbw_gbps']:.2f}", f"{row['busbw_gbps']:.2f}",
                      str(row["wrong"]) if row["wrong"] == 0 else styled((str(row["wrong"]), "red")))
    return table


def ranking_table(ranking: "list[dict]", largest: "int | None") -> Table:
    op = ranking[0]["op"] if ranking else "?"
    size = format_bytes(largest) if largest else "largest size"
    table = Table(title=f"Sweep ranked by {op} busbw at {size}")
    for name in ("rank", "run", "busbw (GB/s)", "vs baseline", "result"):
        table.add_column(name, justify="left" if name in ("run", "result") else "right")
    for row in ranking:
        busbw = f"{row['busbw_gbps']:.2f}" if row["busbw_gbps"] is not None else "-"
        ratio = f"{row['ratio_vs_baseline']:.3f}" if row["ratio_vs_baseline"] is not None else "-"
        result = "ok" if row["correct"] else styled((f"failed (exit {row['exit_code']})", "red"))
        table.add_row(str(row["rank"]), row["label"], busbw, ratio, result)
    return table


def largest_size(runs: "list[RunResult]", op: str) -> "int | None":
    sizes = [row["bytes"] for run in runs for row in (run.report or {}).get("results", []) if row["op"] == op]
    return max(sizes) if sizes else None


def document(runs: "list[RunResult]", ranking: "list[dict]", sweep: "list[str]") -> dict:
    return {"schema": SCHEMA, "sweep": sweep, "ranking": ranking, "runs": [run.as_dict() for run in runs]}


def write_json(path: Path, doc: dict, replace_if=None, subject: "str | None" = None,
               next_name: "Callable[[Path], Path] | None" = None) -> Path:
    """``--json-out``, made exclusively (newfile.write_new): a result another bench wrote there meanwhile is kept,
    replaced only with --force (``replace_if``: cli.habits.replace.may_replace; walk12 A22). ``next_name``: the
    default name's rule, which takes the next free name instead (walk12 A21: two benches of one second both
    said "wrote" one file). The path written."""
    from nodeweave.newfile import Taken, create, write_new

    data = (json.dumps(doc, indent=2) + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        while next_name is not None:
            try:
                create(path, data)
                return path
            except Taken:
                path = next_name(path.parent)
        write_new(path, data, "--json-out", replace_if, subject, what="this bench's numbers are in the table above")
    except OSError as err:
        raise UsageError(f"--json-out: cannot write {path}: {err.strerror}") from err
    return path


def matplotlib_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_plot(path: Path, runs: "list[RunResult]", ops: "list[str]", replace_if=None) -> None:
    """busbw against size, one panel per operation, one line per run."""
    if not matplotlib_available():
        raise EnvironmentProblem(f"--plot {path}: matplotlib is not installed; `pip install matplotlib`, "
                                 "or leave --plot out (the JSON has every number)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ops), figsize=(5 * len(ops), 4), squeeze=False)
    for axis, op in zip(axes[0], ops):
        for run in runs:
            rows = [row for row in (run.report or {}).get("results", []) if row["op"] == op]
            if rows:
                axis.plot([row["bytes"] for row in rows], [row["busbw_gbps"] for row in rows], marker="o",
                          label=run.label)
        axis.set_xscale("log", base=2)
        axis.set_title(op)
        axis.set_xlabel("message size (bytes)")
        axis.set_ylabel("bus bandwidth (GB/s)")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize="small")
    fig.tight_layout()
    import io

    from nodeweave.newfile import write_new

    drawn = io.BytesIO()
    fig.savefig(drawn, dpi=120, format=path.suffix.lstrip(".").lower() or "png")
    try:  # drawn whole, then made exclusively as --json-out is
        path.parent.mkdir(parents=True, exist_ok=True)
        write_new(path, drawn.getvalue(), "--plot", replace_if)
    except OSError as err:
        raise UsageError(f"--plot: cannot write {path}: {err.strerror}") from err
    finally:
        plt.close(fig)
