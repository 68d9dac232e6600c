"""``nodeweave logs``: every node's output, merged with ``[node-i]`` prefixes.

In run mode a container's own log is the job's (its entrypoint is the
training), read with ``podman/docker logs``, ``kubectl/oc logs`` or over ssh.
In hold mode the job runs in ``nodeweave run``, which writes every node's
output to the run folder as it arrives: those files are the logs, followed
(``-f``) until the run's ``run.json`` says it ended.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import List

from rich.console import Console
from rich.text import Text

from nodeweave.cluster.base import Backend, Node
from nodeweave.cluster.runner import COLOURS


def _print(console: Console, node_name: str, index: int, width: int, line: str) -> None:
    prefix = Text(f"[{node_name}]".ljust(width + 3), style=COLOURS[index % len(COLOURS)])
    console.print(prefix + Text(line), highlight=False, soft_wrap=True)


def container_logs(backend: Backend, nodes: List[Node], follow: bool, console: Console) -> int:
    """Each node's container log; with ``follow``, interleaved as lines arrive until Ctrl-C."""
    width = max(len(n.name) for n in nodes)
    procs = [(n, subprocess.Popen(backend.logs_argv(n, follow), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)) for n in nodes]
    lines: "queue.Queue" = queue.Queue()

    def read(node, proc):
        for raw in iter(proc.stdout.readline, b""):
            lines.put((node, raw.decode("utf-8", errors="replace").rstrip("\r\n")))
        lines.put((node, None))

    if not follow:
        for node, proc in procs:
            for raw in proc.stdout:
                _print(console, node.name, node.index, width, raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            proc.wait()
        return max((p.returncode for _, p in procs), default=0)
    for node, proc in procs:
        threading.Thread(target=read, args=(node, proc), daemon=True).start()
    open_streams = len(procs)
    try:
        while open_streams:
            node, line = lines.get()
            if line is None:
                open_streams -= 1
            else:
                _print(console, node.name, node.index, width, line)
    except KeyboardInterrupt:
        pass
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.terminate()
    return 0


def run_logs(folder: Path, indices: List[int], follow: bool, console: Console, poll: float = 0.3) -> int:
    """The node logs of a run folder; with ``follow``, new lines until the run has ended."""
    files = sorted(folder.glob("node-*.log"), key=lambda p: int(p.stem.split("-")[1]))
    files = [f for f in files if not indices or int(f.stem.split("-")[1]) in indices]
    width = max((len(f.stem) for f in files), default=6)
    handles = {f: open(f, "rb") for f in files}
    pending = {f: b"" for f in files}
    try:
        while True:
            ended = _ended(folder)
            for f, handle in handles.items():
                data = pending[f] + handle.read()
                *complete, pending[f] = data.split(b"\n")
                for raw in complete:
                    _print(console, f.stem, int(f.stem.split("-")[1]), width,
                           raw.decode("utf-8", errors="replace").rstrip("\r"))
            if not follow or ended:
                for f, rest in pending.items():  # a last line without its newline
                    if rest:
                        _print(console, f.stem, int(f.stem.split("-")[1]), width, rest.decode("utf-8", "replace"))
                break
            time.sleep(poll)
    except KeyboardInterrupt:
        pass
    finally:
        for handle in handles.values():
            handle.close()
    return 0


def _ended(folder: Path) -> bool:
    try:
        return json.loads((folder / "run.json").read_text(encoding="utf-8")).get("ended") is not None
    except (OSError, ValueError):
        return False
