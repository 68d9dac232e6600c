"""``nodeweave dashboard``: the running job (or a finished run's folder) as a web page on this machine
(docs/observability.md). The page and its data: ``nodeweave.cluster.dashboard``."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import REACH, SPEC, reach_options
from nodeweave.cli.habits.output import runs_folder_read, runs_parent
from nodeweave.cli.top import METRICS_NODE, STATUS_URL, watched_node
from nodeweave.errors import EXIT_FAILURE, UsageError

if TYPE_CHECKING:
    from nodeweave.cluster.options import ClusterOptions


def _finished_run(run: str, runs_dir: Optional[Path]):
    """(folder, run.json, goodput.json, recovery.json, heat.json) of a finished run, found as ``runs show`` finds
    it."""
    from nodeweave.entrypoint import bounded
    from nodeweave.runs.history import find_run

    parent = runs_parent(runs_dir, find_spec(None), writes=False)
    entry = find_run(parent, run)
    if entry.kind != "run":
        raise UsageError(f"--run {run}: {entry.path} is a sweep; accepted: one run (a sweep's point: "
                         "`nodeweave runs show` lists them)")

    def optional(name: str) -> Optional[dict]:
        try:
            found = json.loads(bounded.read_own(entry.path / name, bounded.RECORD_CAP, name))
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    return entry.path, entry.data, optional("goodput.json"), optional("recovery.json"), optional("heat.json")


@reach_options
def dashboard_command(
    node: List[str] = METRICS_NODE,
    url: Optional[str] = STATUS_URL,
    run: Optional[str] = typer.Option(None, "--run", help="Show a finished run's folder instead of the running job: "
                                      "a run id (`nodeweave runs ls`), a unique prefix, a folder, or last"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", callback=runs_folder_read, help="With --run: where run folders are (default: "
                                            "runs/ beside the spec)"),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="The port the page is served on (0: a free one, "
                             "printed)"),
    bind: str = typer.Option("127.0.0.1", "--bind", help="The address the page is served on (default: this machine "
                             "only; 0.0.0.0 shows the job's hosts and state to every machine that can reach it)"),
    interval: float = typer.Option(1.0, "--interval", min=0.2, help="Seconds between readings of node 0"),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in this machine's browser"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH,
) -> None:
    """The running job as a web page on this machine, read from node 0 every second: nodes and ranks with their
    state, the step and collective rates over time, a per-rank step-time heat map (a straggler in red), the
    generations on a timeline with each fault, left-out node, spare and resumed checkpoint, every node's GPUs and
    the goodput so far; --run shows a finished run's folder the same way.

    It only reads (changes nothing), so it takes no --dry-run."""
    from nodeweave.cluster import dashboard

    if url is not None:
        from nodeweave.cluster.top import check_url

        check_url(url)
    stop = threading.Event()
    if run is not None:
        folder, data, timeline, book, heat = _finished_run(run, runs_dir)
        fixed = dashboard.run_state(folder, data, timeline, book, heat)
        document, source = (lambda: fixed), f"the run folder {folder}"
    else:
        from nodeweave.cluster.top import ask_live

        target = None
        if url is None:
            target = watched_node(spec_path, reach, node, "dashboard")
        source = url or f"{target.name} (its /status.json through the exec channel)"
        history = dashboard.History()

        def document():
            readings, asked = history.snapshot()
            return dashboard.state(readings, asked, url or target.name)
    try:
        server = dashboard.serve(document, bind, port)
    except OSError as err:
        raise UsageError(f"--bind {bind} --port {port}: cannot listen there: {err.strerror or err}; accepted: an "
                         "address of this machine and a free port (--port 0 picks one)") from None
    if run is None:  # asked once bound, before the URL is printed: a refusal above is the only line, never after
        first, why = ask_live(target, url)  # a poll's; a source with nothing to show (a URL, node 0 with no job's
        if first is None:  # metrics) is said, as `top` says it, and no empty page is served
            server.shutdown()
            server.server_close()
            typer.echo(f"nodeweave: dashboard: no live picture from {why}", err=True)
            raise typer.Exit(EXIT_FAILURE)
        history.add(first, why)
        dashboard.poll(history, lambda: ask_live(target, url), interval, stop)
    host, chosen = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    page = f"http://{shown}:{chosen}/"
    typer.echo(f"nodeweave: dashboard at {page} ({source}); Ctrl-C stops it", err=False)
    if open_browser:
        import webbrowser

        webbrowser.open(page)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.shutdown()


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard_command)
