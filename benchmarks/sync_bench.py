"""Benchmark ``nodeweave sync``: one target vs eight, and a no-change re-sync.

Makes a 200 MB, 5,000-file tree (random, incompressible), starts eight
podman containers from the offline base image, and times the whole
``nodeweave sync`` command (probe, rsync, remote digest, stamp) into fresh
directories. Targets: 8 targets <= 1.5x one; a re-sync of an unchanged tree
<= 10% of the first. A one-at-a-time loop over the same 8 (``--jobs 1``, what
a shell loop of ``oc rsync`` does) is the baseline for the fan-out.
Containers and trees are removed at the end, also on failure.

    .venv/bin/python benchmarks/sync_bench.py [--files 5000] [--mb 200] [--targets 8]
"""

from __future__ import annotations

import argparse
import json
import os
import random
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


def sync(src: Path, dest: str, containers: "list[str]", *extra: str) -> "tuple[float, dict]":
    argv = [*NODEWEAVE, "sync", "--json", str(src), dest, *[f"--to=podman:{c}" for c in containers], *extra]
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"sync failed (exit {out.returncode}): {out.stderr[-2000:]}")
    return elapsed, json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--targets", type=int, default=8)
    args = parser.parse_args()
    if shutil.which("podman") is None or subprocess.run(
            ["podman", "image", "exists", BASE_IMAGE]).returncode != 0:
        print(f"needs podman and {BASE_IMAGE} (bash .ci/setup-engine.sh; bash .ci/make-base-image.sh)",
              file=sys.stderr)
        return 3
    prefix = f"nwsync-bench-{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-{i}" for i in range(args.targets)]
    tmp = Path(tempfile.mkdtemp(prefix="nwsync-bench-"))
    started: "list[str]" = []
    rows: "list[tuple[str, int, float, str]]" = []
    try:
        total = make_tree(tmp / "src", args.files, args.mb)
        for name in names:
            subprocess.run(["podman", "run", "-d", "--name", name, BASE_IMAGE, "sleep", "infinity"],
                           check=True, capture_output=True)
            started.append(name)
        src = tmp / "src"
        sync(src, "/workspace/warmup", names[:1], "--no-verify")  # page cache, podman exec warm

        one, one_data = sync(src, "/workspace/one", names[:1])
        rows.append(("first sync, 1 target", 1, one, "1.00x (baseline)"))
        many, many_data = sync(src, "/workspace/many", names)
        rows.append((f"first sync, {len(names)} targets in parallel", len(names), many, f"{many / one:.2f}x of 1 target"))
        again, again_data = sync(src, "/workspace/many", names)
        rows.append((f"no-change re-sync, {len(names)} targets", len(names), again,
                     f"{again / many:.1%} of the first"))
        again1, _ = sync(src, "/workspace/one", names[:1])
        rows.append(("no-change re-sync, 1 target", 1, again1, f"{again1 / one:.1%} of the first"))
        plain, _ = sync(src, "/workspace/plain", names, "--no-verify")
        rows.append((f"first sync, {len(names)} targets, --no-verify", len(names), plain,
                     f"{plain / one:.2f}x of 1 target"))
        serial, _ = sync(src, "/workspace/serial", names, "--jobs", "1")
        rows.append((f"first sync, {len(names)} targets one at a time (--jobs 1)", len(names), serial,
                     f"{serial / many:.2f}x of parallel"))

        moved = {r["bytes"] for r in again_data["targets"]} | {r["files"] for r in again_data["targets"]}
        digests = {r["digest"] for r in many_data["targets"]}
        table = Table(title=f"nodeweave sync: {args.files:,} files, {total / 2**20:.0f} MiB, "
                      f"podman containers, {os.cpu_count()} cores", title_justify="left")
        for column in ("case", "targets", "seconds", "ratio"):
            table.add_column(column, justify="right" if column in ("targets", "seconds") else "left")
        for case, n, seconds, ratio in rows:
            table.add_row(case, str(n), f"{seconds:.2f}", ratio)
        console = Console(width=110)
        console.print(table)
        console.print(f"re-sync moved file data: {moved != {0}}; all {len(names)} targets digest-equal "
                      f"to the source: {digests == {many_data['source']['digest']}}")
        console.print(f"targets: 8 <= 1.5x one: {'met' if many <= 1.5 * one else 'NOT met'} "
                      f"({many / one:.2f}x); re-sync <= 10%: "
                      f"{'met' if again <= 0.10 * many else 'NOT met'} ({again / many:.1%})")
        return 0
    finally:
        if started:
            subprocess.run(["podman", "rm", "-f", "-t", "0", *started], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
