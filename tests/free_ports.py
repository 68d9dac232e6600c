"""Ports a test can listen on without racing the rest of a parallel suite.

A port the kernel hands out (``bind(("", 0))``) lies in its ephemeral range, which is every other
process's next outgoing connection: between the test closing its probe socket and torchrun's store or
the check-in exchange listening there, another worker's connection can take it (CI saw
``EADDRINUSE`` on a Slurm test's master port). So ports here come from below that range, and each
pytest-xdist worker draws from a slice of its own: two workers never pick the same port, and no
connection ever lands on one.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

LOWEST = 10000


def _ephemeral_floor() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _slice() -> range:
    """This worker's share of the ports between LOWEST and the ephemeral range."""
    top = max(_ephemeral_floor(), LOWEST + 1000)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    worker = int((os.environ.get("PYTEST_XDIST_WORKER") or "gw0").removeprefix("gw") or 0) % workers
    size = (top - LOWEST) // workers
    return range(LOWEST + worker * size, LOWEST + (worker + 1) * size - 1)


_SLICE = _slice()
_NEXT = itertools.cycle(random.sample(_SLICE, len(_SLICE)))  # a worker walks its slice without repeating soon


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def free_ports(count: int = 1) -> int:
    """The first of ``count`` neighbouring free ports (a master port and its + 1, the check-in exchange)."""
    for _ in range(500):
        port = next(_NEXT)
        if all(_free(port + k) for k in range(count)):
            return port
    raise RuntimeError(f"no {count} free neighbouring ports in {_SLICE}")


def free_port() -> int:
    """One free port."""
    return free_ports(1)


def free_port_pair() -> int:
    """A master port whose + 1 (the check-in exchange) is free as well."""
    return free_ports(2)
