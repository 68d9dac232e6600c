"""Wait for the master: its name must resolve and its port accept a TCP connection.

An nslookup loop is not enough (the record can exist before anything
listens); a connect with backoff and a deadline is. The message at the
deadline names host, port and the last error, so a wrong Service name or port
is obvious from the log.
"""

import socket
import sys
import time

from ..detection import names
from ..detection.net import lookup_host
from ..errors import EXIT_UNREACHABLE, EntrypointError
from ..hostport import host_port

DROPPED_AFTER_S = 15.0  # connections that only time out for this long: packets are dropped, not refused


def dropped_line(what, host, port, address, since_s, attempts):
    """The one line naming a likely firewall: every connection timed out, none was refused or reset."""
    return (f"{what} {host_port(host, port)}: every connection for {since_s:.0f}s timed out ({attempts} attempts; "
            f"{host} is {address}): packets to it are dropped, not refused — likely a firewall or a Kubernetes "
            f"NetworkPolicy between this node and node 0; let TCP port {port} through (and the master port, and the "
            "ports NCCL/Gloo open)")


def wait_for(host, port, timeout_s, log=None, first_delay=0.25, max_delay=5.0, clock=time.monotonic,
             what="master", steady_s=0.0, hint=""):
    """Return seconds waited once ``host:port`` accepts; raise EntrypointError at the deadline.

    ``what`` names the port in messages: the master's, or node 0's check-in exchange.
    For the first ``steady_s`` seconds every retry waits ``first_delay``, so
    nodes started together find node 0 as soon as it listens; then the delay grows. ``hint``: what the deadline's
    line adds for this job (a command job's exchange closes once it started: :func:`after_start_hint`).
    """
    log = log or (lambda text: print(f"nodeweave-entrypoint: {text}", file=sys.stderr, flush=True))
    start = clock()
    deadline = start + timeout_s
    delay, last_error, attempts, next_log = first_delay, None, 0, start + 10.0
    dropping, dropped, said = None, 0, False  # since when every connection timed out, how many
    while True:
        attempts += 1
        try:
            infos = names.getaddrinfo(lookup_host(host), port, 0, socket.SOCK_STREAM)
        except socket.gaierror as err:
            last_error = f"{host} does not resolve ({err.strerror})"
            infos = []
        except UnicodeError:
            raise EntrypointError(f"{what} address {host!r} is not a valid host name", EXIT_UNREACHABLE) from None
        for family, kind, proto, _, addr in infos:
            remaining = max(0.1, min(2.0, deadline - clock()))
            try:
                with socket.socket(family, kind, proto) as s:
                    s.settimeout(remaining)
                    s.connect(addr)
                return clock() - start
            except socket.timeout:
                last_error = f"{host_port(addr[0], port)}: timed out"
                dropping, dropped = dropping or clock(), dropped + 1
            except OSError as err:
                last_error = f"{host_port(addr[0], port)}: {err.strerror or err}"
                dropping, dropped = None, 0
        now = clock()
        if dropping is not None and not said and now - dropping >= DROPPED_AFTER_S and dropped >= 3:
            log(dropped_line(what, host, port, infos[0][4][0], now - dropping, dropped))
            said = True
        if now >= deadline:
            raise EntrypointError(
                f"{what} {host_port(host, port)} not reachable after {timeout_s}s ({attempts} attempts; last: "
                f"{last_error}). "
                "Check MASTER_ADDR/the headless Service (publishNotReadyAddresses: true) and that node 0 is running"
                + ("" if what == "master" else "; node 0 opens this port before its launcher, and a firewall must let it "
                   "through as well as the master port (NODEWEAVE_EXCHANGE_PORT sets it)")
                + hint + "; NODEWEAVE_WAIT_TIMEOUT sets the deadline", EXIT_UNREACHABLE)
        if now >= next_log:
            log(f"waiting for {what} {host_port(host, port)} ({int(now - start)}s of {timeout_s}s; {last_error})")
            next_log = now + 10.0
        time.sleep(max(0.0, min(delay, deadline - now)))
        if now - start >= steady_s:
            delay = min(max_delay, delay * 1.6)


def after_start_hint(launcher, what):
    """What a node waiting for node 0's exchange is told when node 0 keeps no exchange once the job started: with
    launcher command, node 0 execs the command and its exchange closes, so a node that comes late or restarts (a
    container restarted) finds the port refused for the whole wait, and MASTER_ADDR was never the cause (walk11b
    B2); "" for the others, whose node 0 keeps it open and turns such a node away at once."""
    if launcher != "command" or what == "master":
        return ""
    return ("; if the job had started already: with launcher command node 0 execs the command and its exchange "
            "closes, so a node that comes late or restarts cannot join it; restart every node together")
