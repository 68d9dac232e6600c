"""The cluster verbs at 64 nodes, against 2: ``status``, ``run`` (to every rank's first line) and ``stop``.

The nodes are bare hosts (``--target hosts --engine none``) reached through
``benchmarks/ssh_standin.sh`` put on PATH as ``ssh``: every host is a folder
of this machine (its own HOME, TMPDIR and remote dir; addresses 127.3.0.x,
loopback only), so nodeweave's hosts backend, its fan-out (16 at a time, 32 for `run`), the
run engine and the entrypoint on every node (check-in and heartbeat with
node 0 included) run unchanged; what is missing is the network hop, and all
nodes share this machine's cores. The run is a plain command (``sh -c 'echo
first-line; sleep'``): what is timed is nodeweave's own path, not a launcher.

    .venv/bin/python benchmarks/verbs_scale.py [--nodes 2,64] [--rounds 3] [--grace 5]
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the CLI, adding its own CPU seconds (not its children's: those are the nodes) to $NWSCALE_CPU when it exits
NODEWEAVE = [sys.executable, "-c", "import atexit, os, resource, sys\n"
             "def mine():\n"
             "    use = resource.getrusage(resource.RUSAGE_SELF)\n"
             "    with open(os.environ['NWSCALE_CPU'], 'a') as f:\n"
             "        f.write(f'{sys.argv[1]} {use.ru_utime + use.ru_stime}\\n')\n"
             "atexit.register(mine)\n"
             "from nodeweave.cli import main; sys.exit(main())"]
SPEC = """name: nwscale
image: {{variant: cpu, registry: localhost/nwscale}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{type: command, script: sh, wait_timeout: 120}}
"""
FIRST = "first-line"


def _cluster(root, nodes):
    """A work folder with the spec, ``ssh`` on PATH, and the cluster brought up (bare hosts)."""
    work = Path(root) / f"n{nodes}"
    (work / "bin").mkdir(parents=True)
    shutil.copy(HERE / "ssh_standin.sh", work / "bin" / "ssh")
    (work / "bin" / "ssh").chmod(0o755)
    (work / "nodeweave.yaml").write_text(SPEC.format(nodes=nodes))
    env = dict(os.environ, NWSCALE_ROOT=str(work / "hosts"), COLUMNS="200", NWSCALE_CPU=str(work / "cpu.txt"),
               PATH=f"{work / 'bin'}:{Path(sys.executable).parent}:{os.environ['PATH']}")
    hosts = [f"--host=127.3.{i // 250}.{i % 250 + 1}" for i in range(nodes)]
    _nodeweave(work, env, "up", "--target", "hosts", "--engine", "none", "--remote-dir", "/nwscale-remote", *hosts,
               "--timeout", "120")
    return work, env


def _nodeweave(work, env, *args, timeout=300):
    started = time.monotonic()
    out = subprocess.run([*NODEWEAVE, args[0], "--spec", str(work / "nodeweave.yaml"), *args[1:]], cwd=work, env=env,
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode not in (0,):
        raise SystemExit(f"nodeweave {' '.join(args[:1])} exited {out.returncode}: {out.stderr[-2000:]}")
    return time.monotonic() - started, out.stdout


def _run_and_stop(work, env, nodes, grace):
    """Seconds to the last rank's first line, then ``stop`` and until the run command ended."""
    command = ["sh", "-c", f'echo {FIRST} "$NODE_RANK"; exec sleep 600']
    started = time.monotonic()
    proc = subprocess.Popen([*NODEWEAVE, "run", "--spec", str(work / "nodeweave.yaml"), "--", *command], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen, all_in = set(), threading.Event()

    def read():
        for line in proc.stdout:
            if FIRST in line and "echo" not in line:
                seen.add(line.split(FIRST)[-1].strip())
                if len(seen) == nodes:
                    all_in.set()
    threading.Thread(target=read, daemon=True).start()
    if not all_in.wait(180):
        proc.kill()
        raise SystemExit(f"only {len(seen)} of {nodes} ranks printed their first line")
    first = time.monotonic() - started
    stop_s, _ = _nodeweave(work, env, "stop", "--grace", str(grace))
    try:
        proc.wait(timeout=grace + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return first, stop_s, time.monotonic() - started - first


def _client_cpu(work):
    """Median CPU seconds of the nodeweave process itself, per verb."""
    by_verb = {}
    for line in (work / "cpu.txt").read_text().splitlines():
        verb, seconds = line.split()
        by_verb.setdefault(verb, []).append(float(seconds))
    return {verb: statistics.median(values) for verb, values in by_verb.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="2,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grace", type=int, default=5)
    args = parser.parse_args()
    counts = [int(n) for n in args.nodes.split(",")]
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f}", flush=True)
    rows = {}
    with tempfile.TemporaryDirectory(prefix="nwscale-verbs-") as root:
        for n in counts:
            up_started = time.monotonic()
            work, env = _cluster(root, n)
            up_s = time.monotonic() - up_started
            status, first, stop, ended = [], [], [], []
            for round_ in range(args.rounds):
                status.append(_nodeweave(work, env, "status")[0])
                f, s, e = _run_and_stop(work, env, n, args.grace)
                first.append(f)
                stop.append(s)
                ended.append(e)
                print(f"  {n} nodes, round {round_ + 1}: status {status[-1]:.2f} s, run to every first line "
                      f"{f:.2f} s, stop {s:.2f} s, run ended {e:.2f} s after the first lines", flush=True)
            rows[n] = (up_s, *(statistics.median(v) for v in (status, first, stop, ended)), _client_cpu(work))
    print(f"\n| nodes | up, s | status, s | run: every rank's first line, s | stop --grace {args.grace}, s "
          f"| run command ended after the first lines, s | nodeweave's own CPU: status / run / stop, s | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, (up_s, status_s, first_s, stop_s, ended_s, cpu) in rows.items():
        own = " / ".join(f"{cpu.get(verb, 0):.2f}" for verb in ("status", "run", "stop"))
        print(f"| {n} | {up_s:.2f} | {status_s:.2f} | {first_s:.2f} | {stop_s:.2f} | {ended_s:.2f} | {own} | "
              f"{os.getloadavg()[0]:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
