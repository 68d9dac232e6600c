"""``nodeweave dashboard``: the running job (or a finished run's folder) as a web page on this machine
(docs/observability.md). The page and its data: ``nodeweave.cluster.dashboard``."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.cli.habits.coercion import seconds_option

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import REACH, SPEC, reach_options
from nodeweave.cli.habits.output import complete_single_run_ids, runs_folder_read, runs_parent, spec_job
from nodeweave.cli.top import METRICS_NODE, STATUS_URL, watched_node
from nodeweave.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EnvironmentProblem, UsageError

if TYPE_CHECKING:
    from nodeweave.cluster.options import ClusterOptions


def _finished_run(run: str, runs_dir: Optional[Path], spec_path: Optional[Path]):
    """(folder, run.json, goodput.json, recovery.json, heat.json) of a finished run, found as ``runs show`` finds
    it: beside the verb's own --spec (walk7 A9: it looked beside the nearest nodeweave.yaml instead)."""
    from nodeweave.runs.history import find_run, one_run, sweep_not_started

    from nodeweave.cli.habits.spec_path import reader_spec

    spec_path = reader_spec(spec_path)
    entry = find_run(runs_parent(runs_dir, spec_path, writes=False), run, spec_job(spec_path))
    waiting = sweep_not_started(entry)
    if waiting:  # the one sweep there, not started: said as logs --run says it
        raise EnvironmentProblem(f"--run {run}: {waiting}")
    entry = one_run(entry)  # a sweep: its point running now, or the last one, as logs --run reads it

    from nodeweave.runs.history import load_record

    def optional(name: str) -> Optional[dict]:  # a damaged record: nothing of it, said (record_problems)
        return load_record(entry.path, name)[0]

    from nodeweave.runs.goodput import run_timeline

    timeline = run_timeline(entry.path)  # goodput.json as runs show accounts it (a stop is no fault)
    return entry.path, entry.data, timeline, optional("recovery.json"), optional("heat.json")


@reach_options
def dashboard_command(
    node: List[str] = METRICS_NODE,
    url: Optional[str] = STATUS_URL,
    run: Optional[str] = typer.Option(None, "--run", autocompletion=complete_single_run_ids, help="Show a finished run's folder instead of the running job: "
                                      "a run id (`nodeweave runs ls`), a unique prefix, a folder, or last (a sweep: its point running now, or its last)"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", callback=runs_folder_read, help="With --run: where run folders are (default: "
                                            "runs/ beside the spec: --spec, else the nearest nodeweave.yaml)"),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="The port the page is served on (0: a free one, "
                             "printed)"),
    bind: str = typer.Option("127.0.0.1", "--bind", help="The address the page is served on (default: this machine "
                             "only; 0.0.0.0 shows the job's hosts and state to every machine that can reach it; "
                             "an IPv6 address such as ::1 or [::1] works too; the port goes in --port)"),
    interval: float = seconds_option(typer.Option(1.0, "--interval", min=0.2, help="Seconds between readings of node 0")),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in this machine's browser"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH,
) -> None:
    """The running job as a web page on this machine, read from node 0 every second: nodes and ranks with their
    state, the step and collective rates over time, a per-rank step-time heat map (a straggler in red), the
    generations on a timeline with each fault, left-out node, spare and resumed checkpoint, every node's GPUs and
    the goodput so far; --run shows a finished run's folder the same way.

    It only reads (changes nothing), so it takes no --dry-run."""
    from nodeweave.cluster import dashboard

    bind = bind_address(bind)
    if url is not None:
        from nodeweave.cluster.top import check_url

        check_url(url)
    stop = threading.Event()
    if run is not None:
        from nodeweave.runs.history import record_problems

        folder, data, timeline, book, heat = _finished_run(run, runs_dir, spec_path)
        problems = record_problems(folder)
        for problem in problems:  # here and on the page: nothing of a damaged record is shown, and why is said
            typer.echo(f"nodeweave: warning: {folder.name}/{problem}", err=True)
        fixed = run_page(folder, data, timeline, book, heat, problems)
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
    pages = page_urls(str(host), chosen)
    exposed = exposure_warning(bind)
    if exposed:
        typer.echo(f"nodeweave: warning: {exposed}", err=True)
    if open_browser:  # before the URL line, so that line is the last word and a script reading it has them all
        import webbrowser

        if not webbrowser.open(local_page(str(host), chosen)):  # False: no browser found here (a server, ssh)
            typer.echo("nodeweave: note: --open found no browser on this machine (none installed, or no display): "
                       "open the URL yourself", err=True)
    typer.echo(f"nodeweave: dashboard at {', '.join(pages)} ({source}); Ctrl-C stops it", err=False)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:  # how the page is stopped, yet an interruption: 130, as every verb's Ctrl-C (walk9 A17)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        stop.set()
        server.shutdown()


WILDCARDS = ("0.0.0.0", "::", "")


def bind_address(text: str) -> str:
    """``--bind`` as the socket takes it: an IPv6 address is written in brackets in every URL (the dashboard prints
    its own that way), so ``[::1]`` is taken as ``::1``; a port pasted on is the user's slip, said as such (walk8 A9)."""
    import ipaddress

    from nodeweave.errors import UsageError

    accepted = "an address of this machine (127.0.0.1, 0.0.0.0, ::1 or [::1], a host name) with the port in --port"
    inner, bracketed = (text[1:-1], True) if text.startswith("[") and text.endswith("]") else (text, False)
    host, _, port = text.rpartition(":")
    if not bracketed and port.isdigit() and (host.startswith("[") and host.endswith("]") or host.count(":") == 0):
        raise UsageError(f"--bind {text}: an address with a port; accepted: {accepted} (--bind {host} --port {port})")
    try:
        ipaddress.ip_address(inner)
    except ValueError:
        if bracketed or "[" in text or "]" in text:
            raise UsageError(f"--bind {text}: not an IPv6 address in brackets; accepted: {accepted}") from None
    return inner


def _url(host: str, port: int) -> str:
    from nodeweave.entrypoint.hostport import http_url

    return http_url(host, port)


def page_urls(host: str, port: int) -> "list[str]":
    """The URLs the page is reached at: the bound address, or for a wildcard (0.0.0.0, ::) each address of this
    machine a browser elsewhere can use (walk6 W22: http://0.0.0.0:PORT/ opens nowhere), loopback last."""
    if host not in WILDCARDS:
        return [_url(host, port)]
    from nodeweave.sync.node.addresses import local_addresses

    found = [a for a in local_addresses() if host != "0.0.0.0" or ":" not in a]
    return [_url(a, port) for a in found] + [_url("127.0.0.1" if host == "0.0.0.0" else "::1", port)]


def local_page(host: str, port: int) -> str:
    """The URL this machine's own browser opens: loopback for a wildcard bind."""
    return _url("127.0.0.1" if host == "0.0.0.0" else "::1", port) if host in WILDCARDS else _url(host, port)


def exposure_warning(bind: str) -> str:
    """The warning for a page served beyond this machine (any address but loopback), or "" (observability.md)."""
    import ipaddress

    try:
        loopback = ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        loopback = bind == "localhost"
    if loopback:
        return ""
    return (f"--bind {bind} serves the page to every machine that can reach this one: it shows the job's hosts, "
            "nodes and state, with no login; --bind 127.0.0.1 (the default) keeps it on this machine (reach it from "
            "elsewhere with `ssh -L PORT:127.0.0.1:PORT`)")


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard_command)


def run_page(folder, data: dict, timeline, book, heat=None, problems=()) -> dict:
    """A finished run's page document, its header's state read as `runs ls`/`runs show` read it
    (``RunEntry.state``): a run `nodeweave stop` ended says stopped, not the run's own "exit 1" (fix12x)."""
    from nodeweave.cluster import dashboard
    from nodeweave.runs.history import RunEntry

    return dashboard.run_state(folder, data, timeline, book, heat, list(problems), RunEntry(folder, "run", data).state)
