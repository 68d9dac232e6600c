"""``nodeweave exec``: one command on every node at once, without the launcher, like ``sky exec`` or pdsh.

Why: checking a driver, a mount or a variable on every node should not need a training run.
Each node runs the command through its own exec channel (``node.argv``: the same one ``run``
uses, with bare hosts' variables and folder); output arrives as it is printed, each line
prefixed with ``[node-i]``, and every node's exit code is collected, none lost to the first.
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import List, Mapping, Optional

from rich.console import Console

from nodeweave.cluster.base import Node
from nodeweave.cluster.logs import _print


@dataclass
class NodeResult:
    node: Node
    exit_code: Optional[int]  # None: still running when the timeout came (killed)
    seconds: float
    last_line: str = ""

    def to_dict(self) -> dict:
        return {"node": self.node.name, "reached_as": self.node.remote.label, "exit_code": self.exit_code,
                "seconds": round(self.seconds, 3), "last_line": self.last_line}


def exec_everywhere(nodes: List[Node], command: List[str], console: Optional[Console], env: Mapping[str, str] = (),
                    timeout: Optional[float] = None) -> List[NodeResult]:
    """Run ``command`` on every node at once; lines printed as they come (``console`` None: kept quiet)."""
    start = time.monotonic()
    width = max(len(n.name) for n in nodes)
    procs = [subprocess.Popen(node.argv(command, env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL) for node in nodes]
    lines: "queue.Queue" = queue.Queue()
    last = {node.index: "" for node in nodes}
    ended = {}

    def read(node, proc):
        for raw in iter(proc.stdout.readline, b""):
            lines.put((node, raw.decode("utf-8", errors="replace").rstrip("\r\n")))
        proc.wait()
        ended[node.index] = time.monotonic() - start
        lines.put((node, None))

    for node, proc in zip(nodes, procs):
        threading.Thread(target=read, args=(node, proc), daemon=True).start()
    _drain(lines, len(nodes), last, console, width, start, timeout, procs)
    return [NodeResult(node, proc.returncode if node.index in ended else None,
                       ended.get(node.index, time.monotonic() - start), last[node.index])
            for node, proc in zip(nodes, procs)]


def _drain(lines, streams: int, last: dict, console, width: int, start: float, timeout, procs) -> None:
    """Print lines until every stream closed; past ``timeout`` (or on Ctrl-C) the rest are killed."""
    try:
        while streams:
            left = None if timeout is None else timeout - (time.monotonic() - start)
            if left is not None and left <= 0:
                break
            try:
                node, line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                streams -= 1
                continue
            if line.strip():
                last[node.index] = line.strip()
            if console is not None:
                _print(console, node.name, node.index, width, line)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def summary(results: List[NodeResult]) -> str:
    """``2 node(s): all exit 0``, or which nodes failed and how."""
    bad = [r for r in results if r.exit_code != 0]
    if not bad:
        return f"{len(results)} node(s): all exit 0"
    described = ", ".join(f"{r.node.name} " + ("timed out" if r.exit_code is None else f"exit {r.exit_code}")
                          + (f" ({r.last_line[:80]})" if r.last_line else "") for r in bad)
    return f"{len(bad)} of {len(results)} node(s) failed: {described}"
