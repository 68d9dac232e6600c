"""What the check-in exchange adds to a multi-node start, and what the heartbeat costs while a job runs.

Start-up: N simulated nodes (N ``nodeweave-entrypoint`` processes on this
machine, master 127.0.0.1, live root, launcher ``command`` running ``true``)
are spawned at once; a sample is the wall time from the first spawn until
the last exits. Interleaved in the same run:
  exchange off   NODEWEAVE_EXCHANGE=off: workers wait for the master port (held open by this script, as
                 node 0's launcher would), then every node execs
  exchange on    the defaults: workers wait for node 0's exchange, all check in, node 0 judges, all exec
The difference of the medians is what the check-in adds with every node
present (target: at most 0.2 s at 2 and 8 nodes).

Heartbeat: N nodes run a stand-in ``torchrun`` (``sleep``) under the
entrypoint with the exchange on and off; the entrypoints' CPU time (the
run time of all its threads, /proc/<pid>/task/*/schedstat) is sampled over a window after the start.

    .venv/bin/python benchmarks/exchange_startup.py [--runs 15] [--nodes 2,8] [--window 20]
"""

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from one_machine import LOOPBACK, master_address, one_machine_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENTRY = Path(sys.executable).parent / "nodeweave-entrypoint"
OFF = {"NODEWEAVE_EXCHANGE": "off"}


def _port():
    """A master port whose + 1 (the exchange) is free too, below the ephemeral range (where the nodes' own
    connections and check ports come from, so a chosen port cannot be taken by one of them meanwhile)."""
    import random

    while True:
        port = random.randrange(20000, 32000)
        try:
            for candidate in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("", candidate))
            return port
        except OSError:
            continue


def _argv(nodes, rank, port, launcher, command, master=LOOPBACK):
    program = [str(ENTRY)] if ENTRY.exists() else [sys.executable, "-m", "nodeweave.entrypoint"]
    return program + ["--launcher", launcher, "--nnodes", str(nodes), "--node-rank", str(rank),
                      "--master-addr", master, "--master-port", str(port), "--", *command]


def _env(extra, workdir):
    return one_machine_env({"PATH": f"{workdir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                            "PYTHONPATH": str(ROOT / "src"), "TMPDIR": workdir, **extra})


def _master(port, extra):
    """With the exchange off, workers wait for the master port: hold it open, as node 0's launcher would."""
    return socket.create_server(("", port), backlog=64) if extra.get("NODEWEAVE_EXCHANGE") == "off" else None


def start_sample(nodes, extra, workdir):
    """Seconds from the first spawn until every node's process has exited (0 each)."""
    port = _port()
    master = _master(port, extra)
    started = time.perf_counter()
    procs = [subprocess.Popen(_argv(nodes, rank, port, "command", ["true"], master_address(extra)),
                              env=_env(extra, workdir), cwd=workdir,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for rank in range(nodes)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise SystemExit(f"a node exited {proc.returncode}: {err.decode()[-2000:]}")
    took = time.perf_counter() - started
    if master is not None:
        master.close()
    return took


def _cpu_seconds(pid):
    """CPU time of every thread of ``pid`` so far, in ns precision (/proc/<pid>/task/*/schedstat)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended between the listing and the read
    return total / 1e9


def heartbeat_cpu(nodes, extra, workdir, window):
    """CPU seconds per node per minute the entrypoints spend while their launchers sleep."""
    fake = Path(workdir) / "torchrun"
    fake.write_text(f"#!/bin/sh\nexec sleep {window + 8}\n")
    fake.chmod(0o755)
    (Path(workdir) / "train.py").write_text("")
    port = _port()
    master = _master(port, extra)
    procs = [subprocess.Popen(_argv(nodes, rank, port, "torchrun", ["train.py"], master_address(extra)),
                              env=_env(extra, workdir),
                              cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for rank in range(nodes)]
    try:
        time.sleep(4)  # past the start and the check-in
        before = [_cpu_seconds(p.pid) for p in procs]
        time.sleep(window)
        after = [_cpu_seconds(p.pid) for p in procs]
    finally:
        for proc in procs:
            proc.wait(timeout=window + 60)
        if master is not None:
            master.close()
    per_node = [(b - a) * 60 / window for a, b in zip(before, after)]
    return statistics.mean(per_node), max(per_node)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--nodes", default="2,8")
    parser.add_argument("--window", type=float, default=20.0, help="seconds of heartbeat to measure")
    args = parser.parse_args()
    counts = [int(n) for n in args.nodes.split(",")]
    with tempfile.TemporaryDirectory(prefix="nodeweave-bench-") as workdir:
        cases = [(n, name, extra) for n in counts for name, extra in (("off", OFF), ("on", {}))]
        for n, _, extra in cases:
            start_sample(n, extra, workdir)  # warm the page cache and .pyc files
        times = {(n, name): [] for n, name, _ in cases}
        for _ in range(args.runs):
            for n, name, extra in cases:
                times[(n, name)].append(start_sample(n, extra, workdir))
        print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
              f"{args.runs} runs each, interleaved")
        print()
        print("| nodes | exchange off: median s | exchange on: median s | on p90 s | added s (target <= 0.2) |")
        print("|---:|---:|---:|---:|---:|")
        for n in counts:
            off, on = sorted(times[(n, "off")]), sorted(times[(n, "on")])
            p90 = on[max(0, int(len(on) * 0.9) - 1)]
            added = statistics.median(on) - statistics.median(off)
            print(f"| {n} | {statistics.median(off):.3f} | {statistics.median(on):.3f} | {p90:.3f} | {added:.3f} |")
        print()
        print(f"| nodes | heartbeat | entrypoint CPU per node, mean ms/min | max ms/min | ({args.window:g} s window) |")
        print("|---:|---|---:|---:|---|")
        for n in counts:
            for name, extra in (("off", OFF), ("on", {})):
                mean, worst = heartbeat_cpu(n, extra, workdir, args.window)
                print(f"| {n} | {name} | {mean * 1000:.1f} | {worst * 1000:.1f} | |")


if __name__ == "__main__":
    sys.exit(main())
