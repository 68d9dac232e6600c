"""Node 0's real hub on loopback and nodes checking in from threads: the harness the exchange, heartbeat,
stall-watch and recovery tests share (one place, so a change to check-in is made once for all of them).
"""

import socket
import threading
import time

from nodeweave.entrypoint.checkin.exchange import Hub, check_in
from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch
from nodeweave.entrypoint.checkin.wire import ExchangeError, job_token
from test_exchange_verdict import fp as full_fp


def free_port():
    """A free port below the ephemeral range, so no connection of the test takes it meanwhile."""
    import random

    while True:
        port = random.randrange(20000, 32000)
        try:
            with socket.socket() as s:
                s.bind(("", port))
            return port
        except OSError:
            continue


def fp(rank, nnodes=3, address="127.0.0.1", **changes):
    return full_fp(rank, nnodes=str(nnodes), address=address, route_address=address,
                   hostname_address=address, **changes)


TOKEN = job_token({}, "trainer", 29500)


class Cluster:
    """Node 0's hub and ``workers`` nodes checking in from threads, to node 0 at ``host``."""

    def __init__(self, workers, changes=None, token=TOKEN, nnodes=None, host="127.0.0.1"):
        self.port, self.host = free_port(), host
        self.nnodes = nnodes or workers + 1
        self.log = []
        self.hub = Hub(self.port, TOKEN, fp(0, self.nnodes), self.log.append)
        self.results, self.channels, self.errors = {}, {}, {}
        self.threads = []
        for rank in range(1, workers + 1):
            mine = fp(rank, self.nnodes, address=host, **(changes or {}).get(rank, {}))
            thread = threading.Thread(target=self._node, args=(rank, mine, token), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _node(self, rank, mine, token):
        try:
            self.results[rank], self.channels[rank] = check_in(self.host, self.port, mine, token,
                                                               time.monotonic() + 20)
        except ExchangeError as err:
            self.errors[rank] = err

    def decide(self, deadline_s=10, allow=()):
        self.hub.gather(self.nnodes, time.monotonic() + deadline_s)
        verdict = self.hub.decide(self.nnodes, self.nnodes, "torchrun", allow)
        self.hub.announce(verdict)
        for thread in self.threads:
            thread.join(20)
        return verdict

    def close(self):
        for channel in self.channels.values():
            channel.close()
        self.hub.close()


class Launcher:
    """Stands in for a supervised launcher: remembers being stopped."""

    def __init__(self):
        self.stopped = threading.Event()

    def stop(self, grace):
        self.stopped.set()


def started_watches(workers, elastic=False, hear_back=False):
    """Node 0's hub after a check-in of ``workers`` nodes, its heartbeat started (``hear_back``: as under
    recovery), each node's link started, a stand-in launcher each: cluster, hub watch, links, launchers, logs."""
    cluster = Cluster(workers)
    verdict = cluster.decide()
    assert verdict["decision"] == "start"
    logs = {rank: [] for rank in range(workers + 1)}
    hub_watch = HubWatch(cluster.hub, logs[0].append, elastic=elastic, hear_back=hear_back)
    links = {rank: LinkWatch(cluster.channels[rank], logs[rank].append, elastic=elastic)
             for rank in range(1, workers + 1)}
    launchers = {rank: Launcher() for rank in range(workers + 1)}
    hub_watch.start(launchers[0].stop)
    for rank, link in links.items():
        link.start(launchers[rank].stop)
    return cluster, hub_watch, links, launchers, logs


def serving_hub():
    """Node 0's real hub of job 'trainer' (master port 29500) with one node checked in, serving on loopback while the
    generator is held: the body of the ``running_exchange`` fixtures (a status request, a token refusal)."""
    import threading

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    stop = threading.Event()
    server = threading.Thread(target=lambda: [cluster.hub.step(0.05) for _ in iter(stop.is_set, True)])
    server.start()
    try:
        yield cluster
    finally:
        stop.set()
        server.join(10)
        cluster.close()
