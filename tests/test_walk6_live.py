"""Walk 6, W51/W52/W53: every reader of node 0's live picture (top --url, the dashboard's poll, the entrypoint's
``--node live``) checks the answer's shape once when read: JSON of another shape is one line naming what it got,
never a traceback in top or in the dashboard's server."""

from __future__ import annotations

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cli_run
import live_status
import pytest

from nodeweave.cluster import dashboard
from nodeweave.cluster.top import ask_live, picture
from nodeweave.entrypoint.metrics.shape import live_problem

# what another program on the port (or a proxy) might answer, and the phrase each gets
OTHER_SHAPES = {
    "list": ([1, 2, 3], "a list, not an object with schema nodeweave.live/1"),
    "empty": ({}, "no schema"),
    "other schema": ({"schema": "otel/1", "nodes": []}, "schema 'otel/1'"),
    "types": ({"schema": "nodeweave.live/1", "job": 5, "book": 7, "nodes": "x"}, "job is a whole number"),
    "nodes": ({"schema": "nodeweave.live/1", "nodes": "x"}, "nodes is a string, not a list"),
    "ranks": ({"schema": "nodeweave.live/1", "ranks": {"a": 1}}, "ranks is an object, not a list"),
    "rank row": ({"schema": "nodeweave.live/1", "ranks": [{"inside_s": "1"}]}, "ranks[0].inside_s is a string"),
    "goodput": ({"schema": "nodeweave.live/1", "goodput": {"wall_s": 3, "buckets": {}}}, "goodput.buckets lacks"),
}
NOT_JSON = "<html>Grafana</html>"
GOOD = {"schema": "nodeweave.live/1", "now": 10.0, "job": "team", "book": {"generation": 1, "restarts": 1},
        "nodes": [{"node": 0, "host": "a", "state": "running", "role": "hub", "heartbeat_age_s": 0.0}],
        "ranks": [{"node": 0, "rank": 0, "seq": 5, "state": "in", "collectives_per_s": 2.0, "inside_s": 1.0,
                   "outside_s": 1.0, "straggler_ratio": None}], "verdicts": {}, "gpus": [], "node_gpus": [],
        "step": ["torchtitan", 12, 9.0], "steps_per_s": 1.5, "goodput": None, "timeline": {}}


@pytest.fixture
def answering():
    """A server that answers ``body`` (JSON) at every path, as another program on the metrics port would."""
    servers = []

    def start(body, raw=False):
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                data = body.encode() if raw else json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()


@pytest.mark.parametrize("name", sorted(OTHER_SHAPES))
def test_every_other_shape_is_named(name):
    """Each shape another program might answer is named in words by the one check."""
    body, phrase = OTHER_SHAPES[name]
    assert phrase in live_problem(body)


def test_the_real_picture_passes_and_draws():
    assert live_problem(GOOD) is None
    picture(GOOD)


def test_node_zeros_own_picture_passes():
    """What collect.status really writes is accepted (the checker is not stricter than the writer)."""
    assert live_problem(live_status.document()) is None


@pytest.mark.parametrize("name", ["list", "types", "empty", "ranks", "not json"])
def test_top_url_says_one_line(answering, name):
    port = answering(*((NOT_JSON, True) if name == "not json" else (OTHER_SHAPES[name][0],)))
    cli = cli_run.nodeweave("top", "--url", f"http://127.0.0.1:{port}", "--once")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "Traceback" not in cli.stderr
    lines = cli.stderr.strip().splitlines()
    said = "not JSON" if name == "not json" else OTHER_SHAPES[name][1]
    assert len(lines) == 1 and "not a nodeweave status answer" in lines[0] and said in lines[0]


def test_dashboard_poll_never_raises_in_the_server(answering):
    """W53: the page's /state.json with a poll of another shape: the document says why, nothing raises."""
    port = answering(OTHER_SHAPES["types"][0])
    history = dashboard.History()
    history.add(*ask_live(url=f"http://127.0.0.1:{port}"))
    readings, asked = history.snapshot()
    document = dashboard.state(readings, asked, "test")
    assert document["live"] is None and document["answering"] is False
    assert "job is a whole number" in document["why"]
    server = dashboard.serve(lambda: dashboard.state(*history.snapshot(), "test"), "127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/state.json", timeout=10) as got:
            assert json.loads(got.read())["why"] == document["why"]
    finally:
        server.shutdown()


@pytest.mark.parametrize("body", [[1, 2, 3], {"schema": "nodeweave.live/1", "ranks": {"a": 1}}, "junk"])
def test_entrypoint_live_names_another_program_on_the_port(answering, body):
    """W52: something answered on the metrics port, but not nodeweave: the likely cause is named."""
    port = answering(body)
    cli = cli_run.entrypoint("--node", "live", "--port", str(port))
    answer = json.loads(cli.stdout.strip().splitlines()[-1])
    assert answer["live"] is None and cli.returncode != 0
    assert "another program answers" in answer["error"] and "metrics.port" in answer["error"]


@pytest.mark.parametrize("name", ["list", "types", "empty"])
def test_dashboard_url_of_another_shape_says_one_line(answering, name):
    """W51's dashboard half: it asks once before serving; an answer of another shape is that one line, exit 1."""
    port = answering(OTHER_SHAPES[name][0])
    cli = cli_run.nodeweave("dashboard", "--url", f"http://127.0.0.1:{port}", "--port", "0", timeout=60)
    assert cli.returncode == 1 and "Traceback" not in cli.stderr, cli.stderr
    line = cli.stderr.strip().splitlines()
    assert len(line) == 1 and "no live picture from" in line[0] and OTHER_SHAPES[name][1] in line[0]
