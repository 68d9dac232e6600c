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


class _Handler(BaseHTTPRequestHandler):
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

    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        try:
            if path == "/metrics":
                body = self._body(path, lambda: render(collect.families(self.live)).encode())
                kind = CONTENT_TYPE
            elif path == "/status.json":
                body = self._body(path, lambda: json.dumps(collect.status(self.live)).encode())
                kind = "application/json"
            elif path == "/":
                body, kind = b"nodeweave: /metrics (Prometheus), /status.json\n", "text/plain; charset=utf-8"
            else:
                self.send_error(404, "only /metrics and /status.json")
                return
        except Exception as err:  # noqa: BLE001 - a scrape that fails says why; the job goes on
            self.send_error(500, f"metrics: {err!r}"[:200])
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

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
