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
from nodeweave.tables import Table
from rich.text import Text

from nodeweave.cluster.base import Node
from nodeweave.entrypoint import bounded
from nodeweave.entrypoint.checkin.summary import WHOLE_UP_TO, WORST
from nodeweave.entrypoint.metrics.shape import SERVER_NAME as METRICS_SERVER, live_problem, not_http_problem
from nodeweave.usertext import cell
from nodeweave.cluster.dashboard import motion

BUCKETS = ("training", "startup", "recovery", "redone", "stalled", "idle")
BUCKET_STYLES = {"training": "green", "startup": "cyan", "recovery": "yellow", "redone": "magenta",
                 "stalled": "red", "idle": "bright_black"}
BAR = 40


def check_url(url: str) -> None:
    """A ``--url`` that cannot be node 0's metrics port is the user's mistake (exit 2), not a job that is down."""
    from urllib.parse import urlsplit

    from nodeweave.entrypoint.hostport import PORT_ACCEPTED
    from nodeweave.errors import UsageError

    accepted = "node 0's metrics port as a URL, e.g. http://127.0.0.1:9464 or http://[fd00::1]:9464"
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise UsageError(f"--url {url!r}: a URL holds no spaces or control characters (a pasted line break, a "
                         f"quoted name?); accepted: {accepted}")
    try:
        parts = urlsplit(url)
        parts.hostname  # a bracketed host that is no IPv6 address fails only here
    except ValueError as err:
        why = ("an IPv6 address needs its closing ]" if "]" not in url else
               "a ] with no opening [" if "[" not in url else f"the host in brackets is not an IPv6 address ({err})")
        raise UsageError(f"--url {url}: not a URL: {why}; accepted: {accepted}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--url {url}: not an http(s) URL with a host; accepted: {accepted}")
    where = parts.netloc.rpartition("@")[2]
    if where.count(":") > 1 and not where.startswith("["):  # urllib would read http://fd00::1:9464 as host fd00
        raise UsageError(f"--url {url}: an IPv6 address in a URL goes in brackets, the port after them; "
                         f"accepted: {accepted}")
    try:
        parts.port
    except ValueError:
        raise UsageError(f"--url {url}: the port {where.rpartition(':')[2]!r} is not {PORT_ACCEPTED}; "
                         f"accepted: {accepted}") from None


def ask_live(node: Optional[Node] = None, url: Optional[str] = None, timeout: float = 20) -> Tuple[Optional[dict], str]:
    """(node 0's /status.json, "") or (None, why not); an answer of another shape is a why, checked here once for
    every reader (top, the dashboard's poll)."""
    if url is not None:
        import http.client
        from urllib.error import HTTPError

        job = _exchange_next_door(url)
        wait = min(timeout, MASTER_PORT_WAIT_S) if job is not None else timeout
        try:
            with urllib.request.urlopen(status_url(url), timeout=wait) as answer:
                live = json.loads(bounded.read_stream(answer, bounded.RECORD_CAP, "node 0's status", url).decode("utf-8"))
        except http.client.HTTPException as err:  # no HTTP at all there: the exchange's challenge, another protocol
            said = not_http_problem(err)
            return None, f"{url}: {said if job is None or 'exchange' in said else _master_port(url, job, wait)}"
        except (OSError, ValueError) as err:
            if job is not None and not isinstance(err, HTTPError):
                return None, f"{url}: {_master_port(url, job, wait)}"
            return None, f"{url}: {_url_failure(err, url)}"
        if isinstance(live, dict) and live.get("schema") == DASHBOARD_SCHEMA:
            return None, f"{url}: {_dashboard_line(live)}"
        problem = live_problem(live)
        return (None, f"{url}: not a nodeweave status answer: {problem}") if problem else (live, "")
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
    if not answer.get("live"):
        return None, f"{node.name}: {_holding(node) or answer.get('error')}"
    problem = live_problem(answer["live"])  # an older entrypoint passes on whatever the port answered
    return (None, f"{node.name}: its metrics port gave no nodeweave status answer: {problem}") if problem else \
        (answer["live"], "")


def _holding(node: Node) -> str:
    """Why node 0 has no picture when its nodes hold with no run in progress, said as the user's next step, or "".
    walk14 A10: top said "nothing answers at http://127.0.0.1:9464/status.json ...: not node 0, no job running, or
    its metrics off", an address inside the node, while the plain answer was that nothing runs yet."""
    from nodeweave.cluster.base import ask_status

    data = ask_status(node, [], timeout=20).data or {}
    if data.get("mode") != "hold" or data.get("runs"):
        return ""
    return ("the nodes hold: no run in progress (`nodeweave run` starts one); node 0's /status.json and /metrics "
            "answer only while a run is in progress")


def status_url(url: str) -> str:
    """Where ``--url`` reads the picture: a URL to ``.json`` as given; the metrics port's root or its ``/metrics``
    (the URL Prometheus scrapes, pasted as is) is the same port's ``/status.json``."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.path.endswith(".json"):
        return url
    path = parts.path.rstrip("/")
    if path.endswith("/metrics"):
        path = path[: -len("/metrics")]
    return urlunsplit(parts._replace(path=path + "/status.json"))


# How long --url waits for HTTP on a port whose next port is node 0's check-in exchange (the master port + 1): the
# master port itself (torchrun's store) takes the connection and never answers, which cost the whole 20 s.
MASTER_PORT_WAIT_S = 3.0
_NEXT_DOOR: dict = {}  # url -> the job id node 0's exchange names on the url's port + 1, or None; asked once a run


def _exchange_next_door(url: str) -> Optional[str]:
    """The job of node 0's check-in exchange greeting on the port after ``url``'s, or None: asked once per url
    (a poll of top or the dashboard does not knock on node 0's exchange every time)."""
    if url not in _NEXT_DOOR:
        from urllib.parse import urlsplit

        from nodeweave.entrypoint.checkin.exchange import exchange_holding

        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            host, port = None, None
        _NEXT_DOOR[url] = exchange_holding(port + 1, host, timeout=1.0) if host and port and port < 65535 else None
    return _NEXT_DOOR[url]


def _master_port(url: str, job: str, waited: float) -> str:
    """Why a URL on the master port gave no picture: node 0's exchange greets on the next port (walk9 B4)."""
    from urllib.parse import urlsplit

    port = urlsplit(url).port
    return (f"no HTTP answer in {waited:g}s, and node 0's check-in exchange (job {job}) answers on the next port, "
            f"{port + 1}: {port} is the job's master port (the launcher's rendezvous: torchrun's store), which speaks "
            "no HTTP; /status.json is on metrics.port (9464 unless set; NODEWEAVE_METRICS_PORT on the node)")


# nodeweave's dashboard (``cluster/dashboard.py``): its server's name and its document's schema (walk11 A9: its URL,
# pasted into top --url, was "not node 0's metrics port", never named as nodeweave's own page)
DASHBOARD_SERVER = "nodeweave-dashboard"
DASHBOARD_SCHEMA = "nodeweave.dashboard/1"


def _dashboard_state(url: str) -> Optional[dict]:
    """The dashboard's own /state.json beside ``url`` (None when it does not answer one)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        with urllib.request.urlopen(urlunsplit(parts._replace(path="/state.json", query="")), timeout=5) as answer:
            doc = json.loads(bounded.read_stream(answer, bounded.RECORD_CAP, "the dashboard's state", url).decode())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _dashboard_line(doc: Optional[dict]) -> str:
    """Why a nodeweave dashboard's URL gives no picture, and the source it reads (the URL to give instead)."""
    source = (doc or {}).get("source")
    said = "that is a nodeweave dashboard (`nodeweave dashboard`'s page), not node 0's metrics port"
    if isinstance(source, str) and source.startswith(("http://", "https://")):
        return f"{said}; it reads {source}: give --url {source}"
    if isinstance(source, str) and source:
        return f"{said}; it shows {source}: give --url node 0's metrics port (http://HOST:9464), or leave --url off"
    return f"{said}; give --url node 0's metrics port (http://HOST:PORT, metrics.port: 9464 unless set)"


def _url_failure(err: Exception, url: str = "") -> str:
    """Why ``--url`` gave no picture, in words (no ``[Errno 111]``, no OpenSSL's ``WRONG_VERSION_NUMBER``), with
    what to check."""
    import socket
    import ssl
    from urllib.error import HTTPError

    if isinstance(err, HTTPError):
        server = (err.headers.get("Server") if err.headers is not None else None) or ""
        if server.startswith(DASHBOARD_SERVER):  # nodeweave's own dashboard: what it reads is the URL to give
            return _dashboard_line(_dashboard_state(err.url or ""))
        if not server.startswith(METRICS_SERVER):
            return f"HTTP {err.code} {err.reason}: not node 0's metrics port (it serves /status.json)"
        if err.code == 404:  # node 0's own metrics server, asked at another path (walk9 B3: it was called another's)
            from urllib.parse import urlsplit

            return (f"HTTP 404 at {urlsplit(err.url or '').path or '/'}: node 0's metrics port answers there, but not "
                    "at that path; give the port alone (http://HOST:PORT), its /status.json or its /metrics")
        return f"HTTP {err.code} {err.reason}: node 0's metrics port answered with an error (node 0's log says more)"
    reason = getattr(err, "reason", None) or err
    if isinstance(reason, ssl.SSLError):
        return _tls_failure(reason, url)
    if isinstance(reason, ConnectionRefusedError):
        said = "nothing listens there (connection refused)"  # node 0 serves from its check-in on (walk12b B13)
    elif isinstance(reason, (socket.timeout, TimeoutError)):
        said = "no answer in time"
    elif isinstance(reason, socket.gaierror):
        said = "the host name does not resolve"
    elif isinstance(reason, OSError) and reason.strerror:
        said = reason.strerror[:1].lower() + reason.strerror[1:]
    else:
        return f"not a nodeweave status answer: not JSON ({reason})"
    return (f"{said}; is node 0 running, and is that its metrics port (metrics.port in the spec, "
            "NODEWEAVE_METRICS_PORT on a node; default 9464; a forwarded or published port: kubectl port-forward, "
            "podman port)?")  # with --url there may be no spec here for `nodeweave status` to read (walk8 B41)


def _tls_failure(err: Exception, url: str) -> str:
    """Why an ``https://`` URL gave no picture: node 0's metrics port serves plain HTTP, never TLS (walk15 B14: https
    typed from habit got OpenSSL's "[SSL: WRONG_VERSION_NUMBER]"); said as that where plain HTTP answers there."""
    from urllib.error import HTTPError
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    plain = urlunsplit(parts._replace(scheme="http", netloc=parts.netloc if parts.port else f"{parts.netloc}:443"))
    try:
        with urllib.request.urlopen(status_url(plain), timeout=5):
            answered = True
    except HTTPError:
        answered = True  # an HTTP answer, even an error's: the port speaks plain HTTP
    except (OSError, ValueError):
        answered = False
    if answered:
        return (f"that port answers plain HTTP, not TLS (https): node 0's metrics port serves no TLS; give "
                f"--url {plain}")
    said = getattr(err, "reason", None) or type(err).__name__
    return (f"no TLS (https) answer there ({said}); node 0's metrics port serves plain HTTP only: give --url "
            f"http://HOST:PORT (a TLS proxy in front of it, an OpenShift route, needs a certificate this machine "
            "trusts)")


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


def _cut(rows: list, everything: bool, worst_first) -> Tuple[list, Optional[str]]:
    """The rows a table draws: all of them up to ``WHOLE_UP_TO`` (or with ``everything``), else the ``WORST``
    most worth a look (``worst_first``: a sort key, worst first) and a line saying what was left out, as
    ``nodeweave-entrypoint --status`` cuts a large job (walk7 B16: 65,536 rank rows took 111 s to draw once)."""
    if everything or len(rows) <= WHOLE_UP_TO:
        return rows, None
    import heapq

    return heapq.nsmallest(WORST, rows, key=worst_first), f"the {WORST} most worth a look of {len(rows)}"


def _order(value) -> tuple:
    """A node's or rank's number as a sort key (numbers in their order, anything else after them)."""
    return (0, value, "") if isinstance(value, int) else (1, 0, str(value))


def _counted(rows: list, key: str) -> str:
    counts: dict = {}
    for row in rows:
        counts[str(row.get(key) or "-")] = counts.get(str(row.get(key) or "-"), 0) + 1
    return ", ".join(f"{state} {count}" for state, count in sorted(counts.items(), key=lambda kv: -kv[1]))


def _said(title: str, rows: list, key: str, left: Optional[str]) -> Optional[Text]:
    """The line above a cut table (a table's title wraps to the table's width)."""
    if left is None:
        return None
    return Text(f"{title}: {len(rows)} ({_counted(rows, key)}); {left}, --all for every row")


# the columns `-o wide` adds to the ranks table (walk10 B23: `top -o wide` drew exactly the table): rank row key ->
# (column, how its value is shown)
WIDE_RANK_COLUMNS = {"host": ("host", lambda v: cell(v)), "seq": ("flight seq", lambda v: cell(v)),
                     "inside_s": ("in s", lambda v: "-" if v is None else f"{v:.1f}"),
                     "outside_s": ("out s", lambda v: "-" if v is None else f"{v:.1f}")}


def picture(live: dict, everything: bool = False, wide: bool = False) -> Group:
    """The job now: a header line, the nodes, the ranks (a straggler in red), every node's GPUs, the goodput.
    Past ``WHOLE_UP_TO`` rows a table shows counts by state and its ``WORST`` rows (``everything``: all).
    ``wide`` (``-o wide``): the ranks table also shows each rank's host, flight-recorder seq and the seconds it
    spent inside and outside collectives (``WIDE_RANK_COLUMNS``)."""
    book = live.get("book") or {}
    step = live.get("step")
    head = Text(f"job {live.get('job') or '?'}  generation {book.get('generation', 0)}  "
                f"restarts {book.get('restarts', 0)}  ", style="bold")
    if step:
        head.append(f"step {step[1]} ({step[0]})  {_rate(live.get('steps_per_s'))} steps/s  ")
    elif live.get("step_note"):
        head.append(f"{live['step_note']}  ", style="yellow")
    said = motion(live)  # the page's header word too (walk9 A18: "moving" above failed nodes and no rank)
    head.append(said["said"], style={"bad": "bold red", "wait": "bold yellow"}.get(said["kind"], "green"))
    every_node = live.get("nodes") or []
    # a waiting spare or left-out node (`spare (waiting)`, walk12 B1) is as healthy as a running one: not "worst"
    shown, left = _cut(every_node, everything, lambda n: (n.get("state") == "running" or str(n.get("state") or "")
                                                          .endswith("(waiting)"), -(n.get("heartbeat_age_s") or 0),
                                                          _order(n.get("node"))))
    nodes_said = _said("nodes", every_node, "state", left)
    nodes = Table(title="nodes", title_justify="left", expand=False)
    for column in ("node", "host", "state", "role", "heartbeat"):
        nodes.add_column(column)
    for n in shown:
        late = (n.get("heartbeat_age_s") or 0) > 5
        nodes.add_row(cell(n.get("node")), cell(n.get("host")), n.get("state") or "-", n.get("role") or "-",
                      Text(_seconds(n.get("heartbeat_age_s")), style="red" if late else ""))
    every_rank = live.get("ranks") or []
    shown, left = _cut(every_rank, everything, lambda r: (-(r.get("straggler_ratio") or 0), r.get("seq") or 0,
                                                          _order(r.get("rank"))))
    ranks_said = _said("ranks", every_rank, "state", left)
    ranks = Table(title="ranks", title_justify="left", expand=False)
    for column in ("node", "rank", "state", "collectives", "per s", "straggler", "in collectives") + (
            tuple(name for name, _ in WIDE_RANK_COLUMNS.values()) if wide else ()):
        ranks.add_column(column)
    for r in shown:
        ratio = r.get("straggler_ratio")
        slow = ratio is not None and ratio >= 1.1
        busy = (r.get("inside_s") or 0) + (r.get("outside_s") or 0)
        held = str(r.get("state")).startswith(("stopped", "in uninterruptible", "exited", "gone"))
        ranks.add_row(cell(r.get("node")), cell(r.get("rank")), Text(cell(r.get("state")), style="red" if held else ""),
                      cell(r.get("collectives", r.get("seq"))),
                      _rate(r.get("collectives_per_s")),
                      Text("-" if ratio is None else f"{ratio:.2f}x", style="bold red" if slow else ""),
                      "-" if not busy else f"{100 * (r.get('inside_s') or 0) / busy:.0f}%",
                      *([shown_as(r.get(key)) for key, (_, shown_as) in WIDE_RANK_COLUMNS.items()] if wide else []))
    parts = [part for part in (head, nodes_said, nodes, ranks_said, ranks) if part is not None]
    every = live.get("node_gpus") or ([{"node": "0", "source": live.get("gpu_source"), "gpus": live["gpus"]}]
                                      if live.get("gpus") else [])
    if any(entry.get("gpus") for entry in every):
        every_gpu = [(entry, g) for entry in every for g in entry.get("gpus") or []]
        shown, left = _cut(every_gpu, everything, lambda pair: (-(pair[1].get("xid_errors") or 0),
                                                                pair[1].get("util_ratio") or 0))
        gpus_said = None if left is None else Text(f"GPUs: {len(every_gpu)}; {left} (Xid errors, then the least "
                                                   "busy), --all for every row")
        gpus = Table(title="GPUs", title_justify="left", expand=False)
        for column in ("node", "gpu", "busy", "memory", "power", "Xid"):
            gpus.add_column(column)
        for entry, g in shown:
            used, total = g.get("mem_used_bytes"), g.get("mem_total_bytes")
            gpus.add_row(cell(entry.get("node")), cell(g.get("index")),
                         "-" if g.get("util_ratio") is None else f"{100 * g['util_ratio']:.0f}%",
                         "-" if used is None else f"{used / 2**30:.1f}/{(total or 0) / 2**30:.0f} GiB",
                         "-" if g.get("power_watts") is None else f"{g['power_watts']:.0f} W",
                         Text("-" if "xid_errors" not in g else str(g["xid_errors"]) + (
                             f" (last {g['xid_last']})" if g.get("xid_last") is not None else ""),
                              style="bold red" if g.get("xid_errors") else ""))
        parts.extend(part for part in (gpus_said, gpus) if part is not None)
    if live.get("goodput"):
        parts.append(goodput_bar(live["goodput"]))
    return Group(*parts)
