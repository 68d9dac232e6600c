"""What ``nodeweave run`` adds: from the command to every rank's first line, against exec'ing by hand.

    .venv/bin/python benchmarks/cluster_run.py [--image localhost/nodeweave-e2e/e2e:cpu] [--rounds 5]

A 2-node local cluster is brought up in hold mode (``nodeweave up --hold``).
Then, alternating in the same run:

- **nodeweave**: ``nodeweave run -- first_line.py`` as a user types it (a new
  process: Python start, the command line, the spec, the run folder, one exec
  per node, the ``[node-i]`` printer); timed from its start to the moment its
  output shows each rank's line;
- **by hand**: ``podman exec <node> nodeweave-entrypoint --mode run -- first_line.py``
  started for both nodes at once by this script, timed to the same lines.

Both go through the same entrypoint and torchrun, whose static rendezvous
waits for both nodes' agents; ``first_line.py`` prints its rank as its first
statement. The table gives each round's time to the last rank's line, the
medians and the paired difference (nodeweave - by hand). The goal: <= 0.5 s.
The image must exist (the engine tests build it, or ``nodeweave image build
cpu --base ... --offline``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAME = "bench-run"
SPEC = f"""name: {NAME}
image: {{variant: cpu, registry: localhost/nodeweave-bench}}
nodes: 2
gpus_per_node: 1
launcher: {{script: first_line.py, wait_timeout: 120}}
cache: {{host_path: ./cache}}
env: {{OMP_NUM_THREADS: "1"}}
kubernetes: {{grace_period: 10}}
"""
FIRST_LINE = 'import os\nprint(f"first-line rank {os.environ[\'RANK\']}", flush=True)\n'
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
RANKS = 2


def timed_lines(argvs, marker="first-line rank", timeout=300):
    """Start every argv at once; seconds from the start until each distinct marker line was seen."""
    seen, lock = {}, threading.Lock()
    started = time.monotonic()
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for argv in argvs]

    def read(proc):
        for line in proc.stdout:
            if marker in line:
                rank = line.split(marker, 1)[1].split()[0]
                with lock:
                    seen.setdefault(rank, time.monotonic() - started)

    threads = [threading.Thread(target=read, args=(p,), daemon=True) for p in procs]
    for t in threads:
        t.start()
    for proc in procs:
        proc.wait(timeout=timeout)
    for t in threads:
        t.join(timeout=10)
    codes = [p.returncode for p in procs]
    if len(seen) != RANKS or any(codes):
        raise SystemExit(f"a round failed: exit codes {codes}, ranks seen {seen}")
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="localhost/nodeweave-e2e/e2e:cpu")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("podman") is None:
        raise SystemExit("podman is not installed: this benchmark needs the local cluster")
    work = Path(tempfile.mkdtemp(prefix="nodeweave-bench-run-"))
    (work / "nodeweave.yaml").write_text(SPEC)
    (work / "first_line.py").write_text(FIRST_LINE)
    (work / "cache").mkdir()
    for path in (work, work / "first_line.py", work / "cache"):
        path.chmod(0o777 if path.name == "cache" else 0o755 if path.is_dir() else 0o644)
    spec = ["--spec", str(work / "nodeweave.yaml")]
    try:
        up = subprocess.run([*NODEWEAVE, "up", *spec, "--hold", "--image", args.image, "--timeout", "180"],
                            capture_output=True, text=True)
        if up.returncode != 0:
            raise SystemExit(f"nodeweave up failed:\n{up.stdout}\n{up.stderr}")
        rows = measure(spec, args.rounds, work)
    finally:
        subprocess.run([*NODEWEAVE, "down", *spec], capture_output=True, text=True)
        shutil.rmtree(work, ignore_errors=True)
    report(rows)


def measure(spec, rounds, work):
    by_hand = [["podman", "exec", f"{NAME}-{i}", "nodeweave-entrypoint", "--mode", "run", "--", "first_line.py"]
               for i in range(2)]
    through = [[*NODEWEAVE, "run", *spec, "--runs-dir", str(work / "runs"), "--", "first_line.py"]]
    timed_lines(by_hand)  # warm: page cache, torch's first import in each container
    rows = []
    for round_ in range(1, rounds + 1):
        order = [("nodeweave", through), ("by hand", by_hand)]
        if round_ % 2 == 0:
            order.reverse()
        row = {"round": round_}
        for label, argvs in order:
            row[label] = max(timed_lines(argvs).values())
        rows.append(row)
        print(f"round {round_}: nodeweave {row['nodeweave']:.2f} s, by hand {row['by hand']:.2f} s", flush=True)
    return rows


def report(rows) -> None:
    a = [r["nodeweave"] for r in rows]
    b = [r["by hand"] for r in rows]
    diffs = [x - y for x, y in zip(a, b)]
    print()
    print("| round | nodeweave run (s) | by hand (s) | difference (s) |")
    print("|---|---|---|---|")
    for r, d in zip(rows, diffs):
        print(f"| {r['round']} | {r['nodeweave']:.2f} | {r['by hand']:.2f} | {d:+.2f} |")
    print(f"| median | {statistics.median(a):.2f} | {statistics.median(b):.2f} | {statistics.median(diffs):+.2f} |")
    verdict = "meets" if statistics.median(diffs) <= 0.5 else "MISSES"
    print(f"\nnodeweave adds {statistics.median(diffs):+.2f} s (median of paired rounds); {verdict} the 0.5 s goal "
          f"({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
