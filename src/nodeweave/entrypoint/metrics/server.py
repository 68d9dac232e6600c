"""``/metrics`` (Prometheus' text format) and ``/status.json`` on node 0, from a daemon thread.

Stdlib ``http.server``: one thread per scrape, none of them shared with the heartbeat, so a slow or stuck
scraper costs the job nothing but that thread. Bound on every address, IPv6 too: Prometheus scrapes from
another pod or host, at a pod's IPv6 address on an IPv6 cluster.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import collect
from .exposition import CONTENT_TYPE, render
from .shape import SERVER_NAME
from ..hostport import listen_family

CACHE_S = 2.0  # scrapes this close together (two Prometheus replicas, top beside them) share one rendering


class PlainHandler(BaseHTTPRequestHandler):
    """What every HTTP server of nodeweave's answers alike (node 0's /metrics, the dashboard; walk10 B11): GET and
    HEAD (a HEAD as its GET without the body: ``curl -I``, uptime checkers, load balancers' probes), a path with
    or without a trailing slash or a query, and every error as one plain-text line naming the paths served, never
    http.server's HTML page; any other method is 405 with ``Allow: GET, HEAD``. A subclass gives ``PATHS`` (for
    the error line) and ``answer(path)``: (body, content type, extra headers) or None for a path it does not
    serve."""

    PATHS = ()

    def answer(self, path):
        return None

    def do_GET(self):  # noqa: N802 - http.server's name
        self._reply(head=False)

    def do_HEAD(self):  # noqa: N802 - http.server's name
        self._reply(head=True)

    def _refuse_method(self):
        self.send_error(405, f"{self.command} is not served")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method

    def _reply(self, head):
        path = self.path.split("?", 1)[0]
        path = path.rstrip("/") or "/"  # /metrics/ is /metrics
        try:
            answered = self.answer(path)
        except Exception as err:  # noqa: BLE001 - an answer that fails says why; the job goes on
            self.send_error(500, f"{err!r}"[:200])
            return
        if answered is None:
            self.send_error(404, f"{path} is not served")
            return
        body, kind, headers = answered
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def send_error(self, code, message=None, explain=None):
        """One plain-text line, naming what is served, in place of http.server's HTML page."""
        text = (f"{self.server_version}: {message or code}; served: {', '.join(self.PATHS)} (GET or HEAD)\n"
                ).encode("utf-8", "replace")
        try:
            self.send_response(code, None)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(text)))
            if code == 405:
                self.send_header("Allow", "GET, HEAD")
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(text)
        except OSError:
            pass  # the asker went away


class _Handler(PlainHandler):
    PATHS = ("/metrics", "/status.json")
    live = None
    cache = None  # path -> (time.monotonic() of the rendering, body), per server
    lock = None
    server_version = SERVER_NAME

    def _body(self, path, make):
        with self.lock:
            hit = self.cache.get(path)
            if hit is not None and time.monotonic() - hit[0] < CACHE_S:
                return hit[1]
            body = make()
            self.cache[path] = (time.monotonic(), body)
            return body

    def answer(self, path):
        if path == "/metrics":
            return self._body(path, lambda: render(collect.families(self.live)).encode()), CONTENT_TYPE, ()
        if path == "/status.json":
            return self._body(path, lambda: json.dumps(collect.status(self.live)).encode()), "application/json", ()
        if path == "/":
            return b"nodeweave: /metrics (Prometheus), /status.json\n", "text/plain; charset=utf-8", ()
        return None

    def log_message(self, format, *args):  # noqa: A002 - http.server's signature
        pass  # a scrape every 15 s is not news in the job's log


def http_server(bind, port, handler):
    """A ThreadingHTTPServer of ``handler`` on ``bind`` (empty: every address, IPv6 too where the kernel has it;
    ``hostport.listen_family``): http.server alone listens on IPv4 only. OSError when it cannot listen there."""
    family, dual_stack = listen_family(bind)

    class Server(ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

        def server_bind(self):
            if dual_stack:
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()

    return Server((bind, port), handler)


def serve(port, live, bind=""):
    """Start serving ``live`` on ``port``; the server (its thread is a daemon). OSError when the port is taken."""
    handler = type("Handler", (_Handler,), {"live": live, "cache": {}, "lock": threading.Lock()})
    server = http_server(bind, port, handler)
    threading.Thread(target=server.serve_forever, name="nodeweave-metrics", daemon=True).start()
    return server
