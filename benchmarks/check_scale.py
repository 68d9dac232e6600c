"""Wall time of ``nodeweave check`` on 2, 4 and 8 local nodes, and how it grows.

    flock /work/engine.lock .venv/bin/python benchmarks/check_scale.py [--image IMAGE] [--nodes 2,4,8] [--runs 2]

For each node count a local cluster is brought up in hold mode (``nodeweave
up --hold``, not timed), then ``nodeweave check --json`` runs ``--runs``
times as a user types it (a new process each time), timed from its start to
its exit. The table gives the median wall time, the worker's own stages
(facts, probes, links, all-reduce: rank 0's clock), the pair rounds per pass
(⌈log2 N⌉) and the turns they took (nodes on one machine: one pair at a time), the link passes and the machine's load average. The goal:
<= 60 s for 8 nodes on the CI-size machine, rounds growing as log N. The
image must exist (the engine tests build it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = """name: bench-check
image: {{variant: cpu, registry: localhost/nodeweave-bench}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{script: train.py, wait_timeout: 120}}
cache: {{host_path: ./cache}}
env: {{OMP_NUM_THREADS: "1"}}
kubernetes: {{grace_period: 10}}
"""
NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())"]
DEFAULT_IMAGE = ("localhost/nodeweave-e2e-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:8] + "/e2e:cpu")


def nodeweave(spec: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([*NODEWEAVE, args[0], "--spec", str(spec), *args[1:]], capture_output=True, text=True,
                          timeout=timeout, cwd=spec.parent, env={**os.environ, "COLUMNS": "200"})


def one_size(nodes: int, image: str, runs: int, folder: Path, keep: str = "") -> dict:
    spec = folder / "nodeweave.yaml"
    spec.write_text(SPEC.format(nodes=nodes))
    (folder / "cache").mkdir(exist_ok=True)
    (folder / "train.py").write_text("print('unused')\n")
    nodeweave(spec, "down", timeout=300)
    up = nodeweave(spec, "up", "--hold", "--image", image, "--timeout", "300")
    if up.returncode != 0:
        raise SystemExit(f"up of {nodes} nodes failed:\n{up.stdout}\n{up.stderr}")
    rows = []
    try:
        for _ in range(runs):
            load = os.getloadavg()[0]
            begin = time.monotonic()
            out = nodeweave(spec, "check", "--json")
            wall = time.monotonic() - begin
            report = json.loads(out.stdout)
            doc = report["check"] or {}
            rows.append({"wall": wall, "exit": out.returncode, "named": [f["subject"] for f in report["findings"]],
                         "stages": doc.get("stage_seconds", {}), "rounds": len(doc.get("rounds", [])),
                         "turns": sum(len(r) for r in doc.get("turns", [])) or len(doc.get("rounds", [])),
                         "passes": doc.get("repeated", {}).get("link_passes"), "load": load})
    finally:
        nodeweave(spec, "down", timeout=300)
        if keep:
            shutil.copytree(folder / "runs", Path(keep) / f"n{nodes}", dirs_exist_ok=True)
    return {"nodes": nodes, "runs": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--image", default=DEFAULT_IMAGE)
    parser.add_argument("--nodes", default="2,4,8")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", default="/tmp/nw-check-bench-runs", help="where the checks' run folders are copied")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="nw-check-bench-") as tmp:
        for nodes in (int(n) for n in args.nodes.split(",")):
            folder = Path(tmp) / f"n{nodes}"
            folder.mkdir()
            results.append(one_size(nodes, args.image, args.runs, folder, args.keep))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    print(f"machine: {os.cpu_count()} CPUs; image {args.image}")
    print("| nodes | rounds (turns) per pass | link passes | wall (median of runs) s | facts s | probes s | links s | "
          "all-reduce s | named | load avg (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for result in results:
        rows = result["runs"]
        stages = {k: statistics.median(r["stages"].get(k, 0) for r in rows)
                  for k in ("facts", "probes", "links", "allreduce")}
        walls = ", ".join(f"{r['wall']:.1f}" for r in rows)
        loads = ", ".join(f"{r['load']:.1f}" for r in rows)
        passes = ", ".join(str(r["passes"]) for r in rows)
        median_wall = statistics.median(r["wall"] for r in rows)
        print(f"| {result['nodes']} | {rows[0]['rounds']} ({rows[0]['turns']}) | {passes} | {median_wall:.1f} ({walls}) | "
              f"{stages['facts']:.1f} | {stages['probes']:.1f} | {stages['links']:.1f} | {stages['allreduce']:.1f} | "
              f"{sum(bool(r['named']) for r in rows)} of {len(rows)} | {loads} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
