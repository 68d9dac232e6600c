"""What a hostfile's length costs a node's start: ``nodeweave-entrypoint --explain --hostfile H --node-rank 5``.

Every node reads the whole hostfile at start (its own line, the count, the master, each line's checks), and the
rank given by hand is taken when this host is not listed (walk11b B18). A hostfile of IPv4 addresses that are not
this machine's, 8 lines (the baseline) and 8,192 (and more with ``--sizes``), each case run ``--runs`` times
interleaved so machine noise hits all alike. Prints a Markdown table: median wall and CPU time (user + system of
the child: a loaded machine inflates far less), the ratio of each to the 8-line case in the same run, and, with
``--baseline-src DIR`` (e.g. /work/main/src: the code before a change), the same commands run from that ``src``.

    .venv/bin/python benchmarks/hostfile_scale.py [--runs 5] [--sizes 8,1024,8192] [--baseline-src /work/main/src]
"""

import argparse
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


def write_hostfile(folder: Path, lines: int) -> Path:
    """``lines`` IPv4 addresses in 10.0.0.0/8, none this machine's, one a line."""
    path = folder / f"hf{lines}"
    path.write_text("".join(f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}\n" for i in range(1, lines + 1)))
    return path


def once(src: str, hostfile: Path, work: Path) -> "tuple[float, float, int]":
    """(wall s, CPU s, exit code) of one ``--explain`` run of the entrypoint from ``src``."""
    env = dict(os.environ, PYTHONPATH=src, PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    env.pop("NODE_RANK", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nodeweave.entrypoint", "--explain", "--hostfile", str(hostfile),
                           "--node-rank", "5", "--", "train.py"], cwd=work, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="8,1024,8192")
    parser.add_argument("--baseline-src", default=None)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    sides = [("this", str(ROOT / "src"))] + ([("baseline", args.baseline_src)] if args.baseline_src else [])
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "train.py").write_text("print(1)\n")
        files = {size: write_hostfile(folder, size) for size in sizes}
        seen = {(side, size): [] for side, _ in sides for size in sizes}
        for _ in range(args.runs):
            for side, src in sides:
                for size in sizes:
                    wall, cpu, code = once(src, files[size], folder)
                    if code != 0:
                        print(f"error: {side} {size} lines exited {code}", file=sys.stderr)
                        return 1
                    seen[side, size].append((wall, cpu))
    load = os.getloadavg()[0]
    print(f"{platform.node()}: {os.cpu_count()} CPU(s), Python {platform.python_version()}, load {load:.1f}, "
          f"{args.runs} runs each, interleaved\n")
    print("| code | lines | wall median s | CPU median s | wall x 8 lines | CPU x 8 lines |")
    print("|---|---:|---:|---:|---:|---:|")
    for side, _ in sides:
        base_wall = statistics.median(w for w, _ in seen[side, sizes[0]])
        base_cpu = statistics.median(c for _, c in seen[side, sizes[0]])
        for size in sizes:
            wall = statistics.median(w for w, _ in seen[side, size])
            cpu = statistics.median(c for _, c in seen[side, size])
            print(f"| {side} | {size:,} | {wall:.3f} | {cpu:.3f} | {wall / base_wall:.1f}x | {cpu / base_cpu:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
