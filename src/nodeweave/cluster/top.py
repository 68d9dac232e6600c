"""``nodeweave top``: node 0's live picture of the job (its ``/status.json``), drawn for a terminal.

``picture`` is pure (the JSON in, a rich renderable out); ``ask_live`` gets the JSON through node 0's exec
channel (``nodeweave-entrypoint --node live``, which asks ``127.0.0.1:<metrics port>`` inside the node), so
it works on every target the other verbs reach, or straight from a URL (a published or forwarded port).
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from typing import Optional, Tuple

from rich.console import Group
from rich.table import Table
from rich.text import Text

from nodeweave.cluster.base import Node
from nodeweave.entrypoint import bounded

BUCKETS = ("training", "startup", "recovery", "redone", "stalled", "idle")
BUCKET_STYLES = {"training": "green", "startup": "cyan", "recovery": "yellow", "redone": "magenta",
                 "stalled": "red", "idle": "bright_black"}
BAR = 40


def check_url(url: str) -> None:
    """A ``--url`` that cannot be node 0's metrics port is the user's mistake (exit 2), not a job that is down."""
    from urllib.parse import urlsplit

    from nodeweave.errors import UsageError

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--url {url}: not an http(s) URL with a host; accepted: node 0's metrics port as a URL, "
                         "e.g. http://127.0.0.1:9464")


def ask_live(node: Optional[Node] = None, url: Optional[str] = None, timeout: float = 20) -> Tuple[Optional[dict], str]:
    """(node 0's /status.json, "") or (None, why not)."""
    if url is not None:
        try:
            with urllib.request.urlopen(url.rstrip("/") + ("" if url.endswith(".json") else "/status.json"),
                                        timeout=timeout) as answer:
                return json.loads(bounded.read_stream(answer, bounded.RECORD_CAP, "node 0's status", url).decode("utf-8")), ""
        except (OSError, ValueError) as err:
            return None, f"{url}: {_reason(err)}"
    argv = node.entrypoint_argv(["--node", "live"])
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{node.name}: {err}"
    lines = out.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):  # no entrypoint answered: the exec's own words say why
        said = (out.stderr.strip().splitlines() or [f"exit {out.returncode}, no answer"])[-1]
        return None, f"{node.name}: its entrypoint gave no picture ({said})"
    return (answer.get("live"), "") if answer.get("live") else (None, f"{node.name}: {answer.get('error')}")


def _reason(err: Exception) -> str:
    """Why a URL did not answer, in words ("connection refused"), not Python's ``[Errno 111] ...``; nothing
    listening there is said with what to check."""
    reason = getattr(err, "reason", None) or err
    words = getattr(reason, "strerror", None) or str(reason)
    if isinstance(reason, ConnectionRefusedError):
        return (f"{words.lower()}: nothing listens there (is the job up and node 0's metrics on? `nodeweave status`; "
                "the port is the spec's metrics.port)")
    return words


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _rate(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def goodput_bar(accounted: dict) -> Text:
    """The wall time as one bar, a colour per bucket, and the productive fraction."""
    wall = accounted.get("wall_s") or 0.0
    bar = Text()
    if wall > 0:
        for name in BUCKETS:
            width = round(BAR * accounted["buckets"][name] / wall)
            bar.append("█" * width, style=BUCKET_STYLES[name])
    productive = accounted.get("productive")
    bar.append(f"  goodput {'-' if productive is None else f'{100 * productive:.1f}%'} of {wall:g}s  ")
    for name in BUCKETS:
        if accounted["buckets"][name]:
            bar.append(f"{name} {accounted['buckets'][name]:g}s ", style=BUCKET_STYLES[name])
    return bar


def picture(live: dict) -> Group:
    """The job now: a header line, the nodes, the ranks (a straggler in red), every node's GPUs, the goodput."""
    book = live.get("book") or {}
    verdicts = live.get("verdicts") or {}
    step = live.get("step")
    head = Text(f"job {live.get('job') or '?'}  generation {book.get('generation', 0)}  "
                f"restarts {book.get('restarts', 0)}  ", style="bold")
    if step:
        head.append(f"step {step[1]} ({step[0]})  {_rate(live.get('steps_per_s'))} steps/s  ")
    stall = verdicts.get("stall")
    head.append(f"STALLED {stall.get('where')} for {stall.get('for_s', 0):.0f}s" if stall else "moving",
                style="bold red" if stall else "green")
    nodes = Table(title="nodes", title_justify="left", expand=False)
    for column in ("node", "host", "state", "role", "heartbeat"):
        nodes.add_column(column)
    for n in live.get("nodes") or []:
        late = (n.get("heartbeat_age_s") or 0) > 5
        nodes.add_row(str(n.get("node")), str(n.get("host")), n.get("state") or "-", n.get("role") or "-",
                      Text(_seconds(n.get("heartbeat_age_s")), style="red" if late else ""))
    ranks = Table(title="ranks", title_justify="left", expand=False)
    for column in ("node", "rank", "state", "collectives", "per s", "straggler", "in collectives"):
        ranks.add_column(column)
    for r in live.get("ranks") or []:
        ratio = r.get("straggler_ratio")
        slow = ratio is not None and ratio >= 1.1
        busy = (r.get("inside_s") or 0) + (r.get("outside_s") or 0)
        ranks.add_row(str(r.get("node")), str(r.get("rank")), str(r.get("state")), str(r.get("seq")),
                      _rate(r.get("collectives_per_s")),
                      Text("-" if ratio is None else f"{ratio:.2f}x", style="bold red" if slow else ""),
                      "-" if not busy else f"{100 * (r.get('inside_s') or 0) / busy:.0f}%")
    parts = [head, nodes, ranks]
    every = live.get("node_gpus") or ([{"node": "0", "source": live.get("gpu_source"), "gpus": live["gpus"]}]
                                      if live.get("gpus") else [])
    if any(entry["gpus"] for entry in every):
        gpus = Table(title="GPUs", title_justify="left", expand=False)
        for column in ("node", "gpu", "busy", "memory", "power", "Xid"):
            gpus.add_column(column)
        for entry, g in [(entry, g) for entry in every for g in entry["gpus"]]:
            used, total = g.get("mem_used_bytes"), g.get("mem_total_bytes")
            gpus.add_row(str(entry["node"]), str(g.get("index")),
                         "-" if g.get("util_ratio") is None else f"{100 * g['util_ratio']:.0f}%",
                         "-" if used is None else f"{used / 2**30:.1f}/{(total or 0) / 2**30:.0f} GiB",
                         "-" if g.get("power_watts") is None else f"{g['power_watts']:.0f} W",
                         Text("-" if "xid_errors" not in g else str(g["xid_errors"]) + (
                             f" (last {g['xid_last']})" if g.get("xid_last") is not None else ""),
                              style="bold red" if g.get("xid_errors") else ""))
        parts.append(gpus)
    if live.get("goodput"):
        parts.append(goodput_bar(live["goodput"]))
    return Group(*parts)
