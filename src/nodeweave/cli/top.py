"""``nodeweave top``: the running job as node 0 sees it, redrawn every few seconds (docs/observability.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.cli.habits.coercion import seconds_option

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import REACH, SPEC, console, open_cluster, reach_options
from nodeweave.cli.habits.nodes import checked_selectors, pick_one
from nodeweave.cli.habits.output import data_format, emit, json_option, output_option
from nodeweave.errors import EXIT_FAILURE, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from nodeweave.cluster.options import ClusterOptions


# the options top and the dashboard share: which node serves the picture, or a URL that does
METRICS_NODE = typer.Option([], "--node", metavar="NODE", help="The node that serves the job's metrics (default: node "
                            "0): its index, name or address KIND:NAME, as every verb's --node",
                            callback=checked_selectors)
STATUS_URL = typer.Option(None, "--url", help="Read node 0's /status.json here instead of through the cluster (a "
                          "published or forwarded metrics port: http://127.0.0.1:9464)")


def watched_node(spec_path: Optional[Path], reach: "ClusterOptions", node: List[str], verb: str):
    """The node whose /status.json top and the dashboard read; nothing up is exit 3 and `nodeweave up`, as every
    verb."""
    import os

    from nodeweave.cluster.onbackend import live_nodes, require_up
    from nodeweave.errors import UsageError

    path = find_spec(spec_path)
    try:
        spec, backend, _ = open_cluster(path, reach)
    except UsageError as err:
        if spec_path is not None or os.path.lexists(path):
            raise
        # no spec here or above: the way to watch a job started as processes (walk9 B13: the hint named only
        # `init` and --spec, for the verbs that read node 0 without one)
        raise UsageError(f"{err}; a job started without a spec (nodeweave-entrypoint on its hosts) is watched at "
                         f"node 0's metrics port: nodeweave {verb} --url http://NODE0:9464") from None
    target = pick_one(live_nodes(backend, "watch"), node, verb, backend)
    require_up(backend, [target], "watch")
    return target


@reach_options
def top_command(
    node: List[str] = METRICS_NODE,
    url: Optional[str] = STATUS_URL,
    interval: float = seconds_option(typer.Option(2.0, "--interval", min=0.2, help="Seconds between redraws")),
    once: bool = typer.Option(False, "--once", help="Draw once and exit (scripts, a log)"),
    everything: bool = typer.Option(False, "--all", help="Every node, rank and GPU in the tables, even past 64 "
                                    "(else counts by state and the 16 most worth a look, as "
                                    "nodeweave-entrypoint --status)"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH,
    output: str = output_option(), as_json: bool = json_option(),
) -> None:
    """The running job, redrawn: nodes and their heartbeats, ranks with their collective rate and straggler
    ratio, the stall state, the step, every node's GPUs and the goodput so far. Once node 0 stops answering (the job
    ended, node 0 is down) a line says since when, and top stops 30 s after its last answer (exit 1).

    With -o wide the ranks table also shows each rank's host, flight-recorder seq and seconds inside and outside
    collectives. With -o json or yaml it reads node 0's /status.json once and prints it (what the picture is drawn from: job,
    generation, restarts, step and rate, stall state, ranks, GPUs, goodput). It only reads (changes nothing), so
    it takes no --dry-run."""
    from rich.live import Live

    from nodeweave.cluster.top import ask_live, check_url, picture

    fmt = data_format(as_json, output)
    target = None
    if url is not None:
        check_url(url)
    if url is None:
        target = watched_node(spec_path, reach, node, "top")
    out = console()
    live, why = ask_live(target, url)
    if live is None:
        typer.echo(f"nodeweave: top: no live picture from {why}", err=True)
        raise typer.Exit(EXIT_FAILURE)
    if emit(live, fmt):  # the data the picture is drawn from, once (walk6 W1: the hint named a verb without it)
        return
    if once:
        out.print(picture(live, everything, wide=fmt == "wide"))
        return
    watch = Watch(live, lambda: ask_live(target, url), lambda data: picture(data, everything, wide=fmt == "wide"))
    try:
        if not out.is_terminal:  # a file or a pipe: a frame per redraw, a log (walk9 B26: nothing came for 50 s)
            out.print(watch.frame())
            while watch.next(interval):
                out.print(watch.frame())
        else:
            with Live(watch.frame(), console=out, refresh_per_second=4, screen=False) as screen:
                while watch.next(interval):
                    screen.update(watch.frame())
    except KeyboardInterrupt:  # how a watch ends, yet an interruption: 130, as every verb's Ctrl-C (walk9 A17)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    typer.echo(f"nodeweave: top: {watch.gone_line()}", err=True)
    raise typer.Exit(EXIT_FAILURE)


GIVE_UP_S = 30.0  # top stops this long after node 0 last answered: the job ended, or node 0 is down


class Watch:
    """top's frames: node 0's last picture, under a line saying since when node 0 has not answered once it stops
    (walk9 B26: the last picture was redrawn, still `moving`, without a word, until someone killed top), as the
    dashboard's page says it (``cluster/dashboard.History``: answering, why); ``next`` is False once node 0 has
    not answered for ``GIVE_UP_S`` seconds."""

    def __init__(self, live, ask, draw, clock=None, sleep=None, give_up_s=None):
        self.live, self.ask, self.draw = live, ask, draw
        self.clock, self.sleep = clock or time.time, sleep or time.sleep  # looked up when made, not at import
        self.give_up_s = GIVE_UP_S if give_up_s is None else give_up_s
        self.gone_since, self.why = None, ""

    def next(self, interval: float) -> bool:
        self.sleep(interval)
        live, why = self.ask()
        if live is not None:
            self.live, self.gone_since, self.why = live, None, ""
            return True
        if self.gone_since is None:
            self.gone_since = self.clock()
        self.why = why
        return self.clock() - self.gone_since < self.give_up_s

    def _since(self) -> str:
        return time.strftime("%H:%M:%S", time.gmtime(self.gone_since))

    def frame(self):
        shown = self.draw(self.live)
        if self.gone_since is None:
            return shown
        from rich.console import Group
        from rich.text import Text

        return Group(Text(f"node 0 not answering since {self._since()} UTC ({self.why}): the job ended or node 0 is "
                          f"down; the picture below is its last; top stops {self.give_up_s:.0f} s after its last "
                          "answer", style="bold red"), shown)

    def gone_line(self) -> str:
        return (f"node 0 has not answered since {self._since()} UTC ({self.why}): the job ended or node 0 is down; "
                "stopped (the last picture is above)")


def register(app: typer.Typer) -> None:
    app.command("top")(top_command)
