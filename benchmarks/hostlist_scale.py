"""What each host list source costs a node's start: ``nodeweave-entrypoint --explain`` as node 5 of N.

walk14b B4/B7: a Slurm node list of 8,193 hosts took 15.6 s a node (a ``list.count`` per host, the list read four
times), and a typo'd range was expanded until the OOM killer came. Every host list (``planning/hostlists.py``) is
now bounded at 65,536 before it is expanded and read in linear time. This runs each source at each size, the
hostfile (``--hostfile``, read linearly since left12b: ``benchmarks/hostfile_scale.py``) as the baseline row, and
prints a Markdown table: the median CPU time (user + system of the child: a loaded machine inflates it far less
than wall time) and its ratio to the hostfile at the same size. A list set in one variable cannot pass 128 KiB
(Linux's MAX_ARG_STRLEN: exec refuses it), so those sources stop where their list no longer fits ("-").
``--baseline-src DIR`` (e.g. /work/main/src) runs the same from that ``src``, each run cut at ``--timeout``.

    .venv/bin/python benchmarks/hostlist_scale.py [--runs 3] [--sizes 1024,8192,65536] [--baseline-src DIR]
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANK = 5
ARG_MAX_STRING = 128 * 1024  # MAX_ARG_STRLEN: the longest NAME=value exec passes


def addresses(count):
    """``count`` IPv4 addresses in 10.0.0.0/8, none this machine's."""
    return [f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in range(1, count + 1)]


def hostfile(folder, n):
    path = folder / f"hosts{n}"
    path.write_text("".join(f"{a}\n" for a in addresses(n)))
    return {}, ["--hostfile", str(path), "--node-rank", str(RANK)]


def slurm(folder, n, recovery=False):
    env = {"SLURM_NNODES": str(n), "SLURM_NODEID": str(RANK), "SLURM_JOB_NODELIST": f"node[00000-{n - 1:05d}]"}
    args = ["--recovery", "on", "--spares", "1", "--checkpoint-dir", "ck", "--nnodes", str(n - 1)] if recovery else []
    return env, args


def batch(folder, n):
    """This machine's name on line RANK + 1: Google Batch's file lists every VM, this one too."""
    path = folder / f"batch{n}"
    hosts = addresses(n)
    hosts[RANK] = platform.node()
    path.write_text("".join(f"{a}\n" for a in hosts))
    return {"BATCH_TASK_INDEX": str(RANK), "BATCH_TASK_COUNT": str(n), "BATCH_HOSTS_FILE": str(path)}, []


def sagemaker(folder, n):
    hosts = [f"algo-{i}" for i in range(1, n + 1)]
    return {"SM_CURRENT_HOST": hosts[RANK], "SM_HOSTS": json.dumps(hosts)}, []


def dstack(folder, n):
    return {"DSTACK_NODE_RANK": str(RANK), "DSTACK_NODES_NUM": str(n), "DSTACK_NODES_IPS": "\n".join(addresses(n))}, []


def skypilot(folder, n):
    return {"SKYPILOT_NODE_RANK": str(RANK), "SKYPILOT_NUM_NODES": str(n),
            "SKYPILOT_NODE_IPS": "\n".join(addresses(n))}, []


def volcano(folder, n):
    return {"VC_TASK_INDEX": str(RANK), "VC_WORKER_HOSTS": ",".join(addresses(n))}, []


SOURCES = [("hostfile (baseline)", hostfile), ("SLURM_JOB_NODELIST", slurm),
           ("SLURM_JOB_NODELIST, recovery", lambda folder, n: slurm(folder, n, True)),
           ("BATCH_HOSTS_FILE", batch), ("SM_HOSTS", sagemaker), ("DSTACK_NODES_IPS", dstack),
           ("SKYPILOT_NODE_IPS", skypilot), ("VC_WORKER_HOSTS", volcano)]


def fits(env):
    return all(len(name) + 1 + len(value.encode()) < ARG_MAX_STRING for name, value in env.items())


def once(src, folder, env, args, timeout):
    """(CPU s, exit code) of one ``--explain`` run from ``src``; exit None when cut at ``timeout``."""
    env = dict({"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(folder)}, PYTHONPATH=src, **env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        code = subprocess.run([sys.executable, "-m", "nodeweave.entrypoint", "--explain", *args, "--", "train.py"],
                              cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), code


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="1024,4096,8192,16384,65536")
    parser.add_argument("--baseline-src", default=None)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    sides = [("this", str(ROOT / "src"))] + ([("baseline", args.baseline_src)] if args.baseline_src else [])
    cpu = {}
    started = time.time()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "train.py").write_text("print(1)\n")
        cases = {(name, n): make(folder, n) for name, make in SOURCES for n in sizes}
        for _ in range(args.runs):
            for side, src in sides:
                for (name, n), (env, extra) in cases.items():
                    if not fits(env) or cpu.get((side, name, n)) == "cut":
                        continue
                    seconds, code = once(src, folder, env, extra, args.timeout)
                    if code is None:
                        cpu[side, name, n] = "cut"
                        continue
                    if code != 0:
                        print(f"error: {side} {name} at {n} exited {code}", file=sys.stderr)
                        return 1
                    cpu.setdefault((side, name, n), []).append(seconds)
    print(f"{platform.node()}: {os.cpu_count()} CPU(s), Python {platform.python_version()}, load "
          f"{os.getloadavg()[0]:.1f}, {args.runs} run(s) each, interleaved, {time.time() - started:.0f} s\n")
    print("| code | source | " + " | ".join(f"{n:,} nodes" for n in sizes) + " |")
    print("|---|---|" + "---:|" * len(sizes))
    for side, _ in sides:
        for name, _ in SOURCES:
            cells = []
            for n in sizes:
                seen = cpu.get((side, name, n))
                base = cpu.get((side, SOURCES[0][0], n))
                if seen is None:
                    cells.append("-")
                elif seen == "cut":
                    cells.append(f"> {args.timeout:.0f} s")
                else:
                    median = statistics.median(seen)
                    ratio = f" ({median / statistics.median(base):.1f}x)" if isinstance(base, list) else ""
                    cells.append(f"{median:.2f} s{ratio}")
            print(f"| {side} | {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
