"""Simulated nodes for the stall watch: real ``nodeweave-entrypoint`` processes on one machine, each with its
own TMPDIR (and, on GPUs, its own CUDA_VISIBLE_DEVICES and NCCL_HOSTID), every output line timed as it arrives.

Used by benchmarks/stall_watch.py, benchmarks/stall_gpu.py and tests/stall_harness.py.
"""

import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from one_machine import master_address, one_machine_env, own_address  # noqa: E402,F401 - stall_gpu: own_address

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "nodeweave-entrypoint"
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "nodeweave.entrypoint"]


def free_port_pair():
    """A master port whose + 1 (the exchange) is free too, below the ephemeral range."""
    for _ in range(200):
        port = random.randrange(20000, 32000)
        try:
            for candidate in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("", candidate))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port pair")


def own_hostname_allowed():
    """Whether ``unshare --uts`` may give a node a hostname of its own here (root, or user namespaces)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--uts", "--map-root-user", "true"], capture_output=True)
    return probe.returncode == 0


def with_hostname(name, argv):
    """``argv`` run under a hostname of its own (``own_hostname_allowed`` first)."""
    return ["unshare", "--uts", "--map-root-user", "sh", "-c", f'hostname {name} && exec "$@"', "sh", *argv]


class Node:
    """One entrypoint process; ``lines`` holds (monotonic time, 'out'|'err', text) as they arrive."""

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
        return next((t for t, s, line in list(self.lines) if needle in line and stream in (None, s)), None)

    def text(self, stream="err"):
        return "\n".join(line for _, s, line in self.lines if s == stream)

    def wait(self, timeout):
        code = self.proc.wait(timeout=timeout)
        self.ended = time.monotonic()
        for reader in self.readers:
            reader.join(5)
        return code


def start(workdir, launcher, command, nodes=2, nproc=1, env=None, per_node=None, master=None, prefix=None):
    """``nodes`` entrypoints running ``command`` under ``launcher``, each with TMPDIR ``workdir/n<i>`` (unless
    ``per_node`` sets it), all on this one machine (``one_machine``: its variables, and by default its master
    address); ``prefix``: {node: argv in front of the entrypoint's} (e.g. ``unshare --uts``)."""
    port = free_port_pair()
    started = []
    for rank in range(nodes):
        node_env = one_machine_env({
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p),
            "HOME": str(workdir), "TMPDIR": str(Path(workdir) / f"n{rank}"), "OMP_NUM_THREADS": "1",
            "NODEWEAVE_WAIT_TIMEOUT": "60", **(env or {}), **((per_node or {}).get(rank, {}))})
        os.makedirs(node_env["TMPDIR"], exist_ok=True)
        argv = [*ENTRY, "--launcher", launcher, "--nnodes", str(nodes), "--node-rank", str(rank),
                "--nproc-per-node", str(nproc), "--master-addr", master or master_address(node_env),
                "--master-port", str(port), "--", *command]
        argv = [*(prefix or {}).get(rank, []), *argv]
        started.append(Node(subprocess.Popen(argv, env=node_env, cwd=workdir, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True)))
    return started


def stop(nodes):
    for node in nodes:
        if node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait()
