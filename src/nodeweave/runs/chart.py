"""Charts of a metric per run (or sweep point) and per node: in the terminal, or PNG/SVG via matplotlib.

The terminal chart needs nothing but rich: one bar per run, scaled to the largest value, the
nodes' own values beside it. A file chart needs the optional ``plot`` extra (matplotlib); without
it ``--chart FILE`` (and ``bench --plot FILE``) exits 3 naming the install line before anything is printed, never
a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

from nodeweave.tables import Table
from rich.text import Text

from nodeweave.cluster.sweep import metric_text
from nodeweave.errors import EnvironmentProblem, UsageError

BAR = "█"
FORMATS = (".png", ".svg")


def terminal_chart(rows: List[dict], metric: str, width: int = 40) -> Table:
    """Bars of each row's mean, the per-node values as numbers beside them."""
    values = [r["mean"] for r in rows if r["mean"] is not None]
    top = max(values, default=0.0) or 1.0
    table = Table(title=f"{metric} (mean of nodes)", title_justify="left", show_edge=False, box=None)
    table.add_column("run", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("mean", justify="right", no_wrap=True)
    table.add_column("per node", overflow="fold")
    for row in rows:
        mean = row["mean"]
        bar = Text(BAR * max(1, round(width * mean / top)) if mean else "", style="cyan")
        per_node = " ".join("-" if v is None else metric_text(v) for v in row["per_node"])
        table.add_row(row["label"], bar, "-" if mean is None else metric_text(mean), per_node)
    return table


# What each chart option's command still gives without the chart (said when matplotlib is missing).
WITHOUT = {"--chart": "the terminal chart needs nothing", "--plot": "the JSON has every number"}


def check_chart_path(path: Path, flag: str = "--chart", library: bool = True) -> None:
    """Refuse a chart (``runs compare --chart``, ``bench --plot``) that cannot be written, before any run is read,
    table printed or launch started: a path it cannot be written to (a name like train.py first, walk6 W70), then
    (``library``) no matplotlib here (walk11 A6: `runs compare` printed its whole table and chart, then exit 3).
    The verbs judge the path, then an earlier file there (usage, exit 2), then the library (exit 3)."""
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"{flag} {path}: accepted: a file name ending in .png or .svg")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: the folder {folder} does not exist; give a path in an existing folder")
    if library:
        require_matplotlib(path, flag)


def require_matplotlib(path: Path, flag: str) -> None:
    """Exit 3 naming the install line where matplotlib cannot be found (looked for, not imported: seconds)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise matplotlib_missing(path, flag)


def matplotlib_missing(path: Path, flag: str) -> EnvironmentProblem:
    """The one refusal of a chart option without matplotlib (exit 3)."""
    return EnvironmentProblem(f"{flag} {path}: matplotlib is not installed; pip install 'nodeweave[plot]', or leave "
                              f"{flag} out ({WITHOUT.get(flag, 'nothing else needs it')})")


def file_chart(rows: List[dict], metric: str, path: Path, replace_if=None) -> Path:
    """A grouped bar chart (one group per run, one bar per node) written to ``path`` (.png or .svg)."""
    check_chart_path(path)
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:  # found by check_chart_path, then not importable
        raise matplotlib_missing(path, "--chart") from None
    nodes = max((len(r["per_node"]) for r in rows), default=0)
    figure, axes = pyplot.subplots(figsize=(max(6, 1.2 * len(rows) + 2), 4))
    step = 0.8 / max(nodes, 1)
    for node in range(nodes):
        heights = [(r["per_node"][node] if node < len(r["per_node"]) and r["per_node"][node] is not None else 0)
                   for r in rows]
        axes.bar([i + node * step for i in range(len(rows))], heights, step, label=f"node-{node}")
    axes.set_xticks([i + 0.4 - step / 2 for i in range(len(rows))], [r["label"] for r in rows], rotation=20,
                    ha="right")
    axes.set_ylabel(metric)
    axes.legend()
    figure.tight_layout()
    import io

    from nodeweave.newfile import write_new

    drawn = io.BytesIO()
    try:  # drawn whole, then made exclusively: a chart written there meanwhile is kept without --force (walk12 A23)
        figure.savefig(drawn, format=path.suffix.lstrip(".").lower() or "png")
        write_new(path, drawn.getvalue(), "--chart", replace_if)
    except OSError as err:
        raise UsageError(f"--chart {path}: cannot write it: {err.strerror or err}") from None
    finally:
        pyplot.close(figure)
    return path
