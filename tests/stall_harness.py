"""Simulated nodes (real entrypoints on loopback) running the e2e workload under a real launcher, with every
output line timed as it arrives: what the stall watch's process-level tests and its benchmark read."""

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from test_exchange_processes import ENTRY, SRC, free_port_pair

WORKLOAD = Path(__file__).resolve().parent / "e2e" / "workspace" / "allreduce.py"
VENV_BIN = str(Path(sys.executable).parent)


class Node:
    def __init__(self, proc):
        self.proc, self.lines, self.ended = proc, [], None
        self.readers = [threading.Thread(target=self._read, args=(stream, name), daemon=True)
                        for stream, name in ((proc.stdout, "out"), (proc.stderr, "err"))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, name):
        for line in stream:
            self.lines.append((time.monotonic(), name, line.rstrip("\n")))

    def first(self, needle, stream=None):
        """Arrival time of the first line containing ``needle``, or None."""
        return next((t for t, s, line in list(self.lines) if needle in line and stream in (None, s)), None)

    def text(self, stream="err"):
        return "\n".join(line for _, s, line in self.lines if s == stream)

    def wait(self, timeout):
        code = self.proc.wait(timeout=timeout)
        self.ended = time.monotonic()
        for reader in self.readers:
            reader.join(5)
        return code


def start(tmp_path, launcher, args, nodes=2, nproc=1, env=None, per_node=None):
    """``nodes`` entrypoints, each its own TMPDIR, running allreduce.py ``args`` under ``launcher``."""
    shutil.copy(WORKLOAD, tmp_path / "allreduce.py")
    port = free_port_pair()
    started = []
    for rank in range(nodes):
        node_env = {"PATH": f"{VENV_BIN}:{os.environ['PATH']}", "PYTHONPATH": str(SRC), "HOME": str(tmp_path),
                    "TMPDIR": str(tmp_path / f"n{rank}"), "OMP_NUM_THREADS": "1", "NODEWEAVE_WAIT_TIMEOUT": "60",
                    **(env or {}), **((per_node or {}).get(rank, {}))}
        os.makedirs(node_env["TMPDIR"], exist_ok=True)
        argv = [*ENTRY, "--launcher", launcher, "--nnodes", str(nodes), "--node-rank", str(rank),
                "--nproc-per-node", str(nproc), "--master-addr", "127.0.0.1", "--master-port", str(port),
                "--", "allreduce.py", *args]
        started.append(Node(subprocess.Popen(argv, env=node_env, cwd=tmp_path, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True)))
    return started


def stop(nodes):
    for node in nodes:
        if node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()
