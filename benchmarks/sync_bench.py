"""Benchmark ``nodeweave sync``: one target vs eight, and a no-change re-sync.

Makes a 200 MB, 5,000-file tree (random, incompressible), starts eight
podman containers from the offline base image, and times the whole
``nodeweave sync`` command (probe, rsync, remote digest, stamp) into fresh
directories. Targets: 8 targets <= 1.5x one; a re-sync of an unchanged tree
<= 10% of the first. CPU seconds (this process's children plus the
containers' cgroups) show when the machine's cores, not the fan-out, bound a
row. A one-at-a-time loop over the same 8 (``--jobs 1``, what
a shell loop of ``oc rsync`` does) is the baseline for the fan-out.
Containers and trees are removed at the end, also on failure.

    .venv/bin/python benchmarks/sync_bench.py [--files 5000] [--mb 200] [--targets 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

BASE_IMAGE = "localhost/nodeweave-base:bookworm"
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]


def make_tree(root: Path, files: int, total_mb: int, seed: int = 7) -> int:
    """``files`` files summing to ``total_mb`` MiB: many small sources, a few large blobs."""
    rng = random.Random(seed)
    big = max(1, files // 50)
    small_size = 8 * 1024
    big_size = (total_mb * 2**20 - (files - big) * small_size) // big
    total = 0
    for i in range(files):
        size = big_size if i < big else small_size
        path = root / f"pkg{i % 40:02d}" / f"mod{i % 7}" / f"f{i:05d}.{'bin' if i < big else 'py'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(size))
        total += size
    return total


def median(runs) -> tuple:
    """The run with the median wall time, with the median CPU seconds put in its place."""
    runs = sorted(runs, key=lambda r: r[0])
    mid = runs[len(runs) // 2]
    cpu = sorted(r[1] for r in runs)[len(runs) // 2]
    return (mid[0], cpu, *mid[2:])


def cpu_seconds(containers: "list[str]") -> float:
    """CPU used so far by our child processes plus the containers' cgroups (cgroup v1 cpuacct)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    for cid in containers:
        acct = Path(f"/sys/fs/cgroup/cpuacct/libpod_parent/libpod-{cid}/cpuacct.usage")
        if acct.is_file():
            total += int(acct.read_text()) / 1e9
    return total


def timed(argv: "list[str]", ids: "list[str]") -> "tuple[float, float, str]":
    cpu0, started = cpu_seconds(ids), time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(ids) - cpu0
    if out.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed (exit {out.returncode}): {out.stderr[-2000:]}")
    return elapsed, cpu, out.stdout


def sync(src: Path, dest: str, containers: "list[str]", ids: "list[str]", *extra: str) -> "tuple[float, float, dict]":
    argv = [*NODEWEAVE, "sync", "--json", str(src), dest, *[f"--to=podman:{c}" for c in containers], *extra]
    elapsed, cpu, stdout = timed(argv, ids)
    return elapsed, cpu, json.loads(stdout)


def raw_rsync(src: Path, dest: str, container: str, ids: "list[str]") -> "tuple[float, float]":
    """Plain rsync over podman exec, no probe/verify/stamp: what the transport alone costs."""
    subprocess.run(["podman", "exec", container, "mkdir", "-p", dest], check=True)
    elapsed, cpu, _ = timed(["rsync", "-rlpt", "--whole-file", "--blocking-io", "--rsh", "podman exec -i",
                             f"{src}/", f"{container}:{dest}/"], ids)
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--targets", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the table shows medians")
    args = parser.parse_args()
    if shutil.which("podman") is None or subprocess.run(
            ["podman", "image", "exists", BASE_IMAGE]).returncode != 0:
        print(f"needs podman and {BASE_IMAGE} (bash .ci/setup-engine.sh; bash .ci/make-base-image.sh)",
              file=sys.stderr)
        return 3
    prefix = f"nwsync-bench-{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-{i}" for i in range(args.targets)]
    tmp = Path(tempfile.mkdtemp(prefix="nwsync-bench-"))
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")  # the digest caches go away with the tree
    started: "list[str]" = []
    rows: "list[tuple[str, int, float, float, str]]" = []
    try:
        total = make_tree(tmp / "src", args.files, args.mb)
        ids = []
        for name in names:
            subprocess.run(["podman", "run", "-d", "--name", name, BASE_IMAGE, "sleep", "infinity"],
                           check=True, capture_output=True)
            started.append(name)
            ids.append(subprocess.run(["podman", "inspect", "--format", "{{.Id}}", name], check=True,
                                      capture_output=True, text=True).stdout.strip())
        src = tmp / "src"
        n = len(names)
        sync(src, "/workspace/warmup", names[:1], ids, "--no-verify")  # page cache, podman exec warm

        def pairs(first, again, containers):
            """(first, no-change re-run) ``repeat`` times into fresh DESTs; medians of each."""
            runs = []
            for i in range(args.repeat):
                dest = f"/workspace/run{i}"
                runs.append((first(dest), again(dest)))
                for c in containers:
                    subprocess.run(["podman", "exec", c, "rm", "-rf", dest], check=True)
            return median(r[0] for r in runs), median(r[1] for r in runs)

        (raw1, raw1_cpu), (raw2, raw2_cpu) = pairs(
            lambda d: raw_rsync(src, d, names[0], ids), lambda d: raw_rsync(src, d, names[0], ids), names[:1])
        (one, one_cpu, one_data), (again1, again1_cpu, _) = pairs(
            lambda d: sync(src, d, names[:1], ids), lambda d: sync(src, d, names[:1], ids), names[:1])
        (many, many_cpu, many_data), (again, again_cpu, again_data) = pairs(
            lambda d: sync(src, d, names, ids), lambda d: sync(src, d, names, ids), names)
        (plain, plain_cpu, _), (quick, quick_cpu, _) = pairs(
            lambda d: sync(src, d, names, ids, "--no-verify"),
            lambda d: sync(src, d, names, ids, "--no-verify"), names)
        serial, serial_cpu, _ = sync(src, "/workspace/serial", names, ids, "--jobs", "1")
        rows += [
            ("plain rsync over podman exec, 1 target", 1, raw1, raw1_cpu, "transport alone"),
            ("plain rsync, no-change re-run, 1 target", 1, raw2, raw2_cpu, f"{raw2 / raw1:.1%} of its first"),
            ("nodeweave sync, 1 target", 1, one, one_cpu, "1.00x (baseline)"),
            (f"nodeweave sync, {n} targets in parallel", n, many, many_cpu, f"{many / one:.2f}x of 1 target"),
            ("  same, --no-verify", n, plain, plain_cpu, f"{plain / one:.2f}x of 1 target"),
            ("  same, one at a time (--jobs 1)", n, serial, serial_cpu, f"{serial / many:.2f}x of parallel"),
            (f"no-change re-sync, {n} targets", n, again, again_cpu, f"{again / many:.1%} of the first"),
            ("no-change re-sync, 1 target", 1, again1, again1_cpu, f"{again1 / one:.1%} of the first"),
            (f"no-change re-sync, {n} targets, --no-verify", n, quick, quick_cpu,
             f"{quick / plain:.1%} of its first"),
        ]

        moved = {r["bytes"] for r in again_data["targets"]} | {r["files"] for r in again_data["targets"]}
        digests = {r["digest"] for r in many_data["targets"]}
        table = Table(title=f"nodeweave sync: {args.files:,} files, {total / 2**20:.0f} MiB, "
                      f"podman containers, {os.cpu_count()} cores; median of {args.repeat} runs "
                      "(one at a time: 1 run)", title_justify="left")
        for column in ("case", "targets", "seconds", "CPU s", "ratio"):
            table.add_column(column, justify="left" if column in ("case", "ratio") else "right")
        for case, count, seconds, cpu, ratio in rows:
            table.add_row(case, str(count), f"{seconds:.2f}", f"{cpu:.1f}", ratio)
        console = Console(width=110)
        console.print(table)
        cores = os.cpu_count() or 1
        console.print(f"CPU floor: {n} first syncs used {many_cpu:.1f} CPU-s (ours + the containers'; conmon "
                      f"not counted); on {cores} cores that is >= {many_cpu / cores:.1f} s, "
                      f"{many_cpu / cores / one:.2f}x the 1-target wall")
        console.print(f"load average at the end: {os.getloadavg()[0]:.1f} (other work on the machine skews every row)")
        console.print(f"re-sync moved file data: {moved != {0}}; all {len(names)} targets digest-equal "
                      f"to the source: {digests == {many_data['source']['digest']}}")
        console.print(f"targets: {n} <= 1.5x one: {'met' if many <= 1.5 * one else 'NOT met'} "
                      f"({many / one:.2f}x); re-sync <= 10%: "
                      f"{'met' if again <= 0.10 * many else 'NOT met'} ({again / many:.1%})")
        return 0
    finally:
        if started:
            subprocess.run(["podman", "rm", "-f", "-t", "0", *started], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
