"""Start-up benchmark: ``compose up`` of the rendered local 2-node job to its first all-reduce.

    .venv/bin/python benchmarks/engine_startup.py [--image localhost/nodeweave-e2e/e2e:cpu] [--repeat 2]

The nodeweave run is ``compose/local.yaml`` as rendered (the entrypoint finds
rank and master, waits for the master's port, execs torchrun). The baseline,
in the same run and alternating with it, is the same compose file with the
entrypoint replaced by a hand-written ``torchrun --node-rank i --master-addr
<name>-0 ...``: what nodeweave costs over writing the launcher line yourself.
Each run is split with the engine's timestamps (container start, the log
line of the exec) and the training script's (worker start, ``import torch``
done, rendezvous done, first all-reduce done). The image must exist: the
engine tests build it, or ``nodeweave image build cpu --base ... --offline``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
SCRIPT = REPO / "tests" / "e2e" / "workspace" / "allreduce.py"
NAME = "bench-up"
SPEC = f"""name: {NAME}
image: {{variant: cpu, registry: localhost/nodeweave-bench}}
nodes: 2
gpus_per_node: 2
launcher: {{script: allreduce.py, wait_timeout: 300}}
cache: {{host_path: ./cache}}
env: {{OMP_NUM_THREADS: "1"}}
"""
RECORD = "NODEWEAVE-E2E "
EXEC_LINE = re.compile(r"^(\S+) nodeweave-entrypoint: node \d+ of .* exec ")
WAITED = re.compile(r"accepts connections after ([\d.]+)s")


def epoch(stamp: str) -> float:
    """RFC 3339 with nanoseconds (podman logs -t) to epoch seconds."""
    stamp = stamp.replace("Z", "+00:00")
    head, _, tail = stamp.partition(".")
    fraction, zone = (tail[:9], tail[9:]) if tail else ("0", stamp[19:])
    fraction = re.match(r"\d+", fraction).group(0)
    return datetime.fromisoformat(head[:19] + zone).timestamp() + float("0." + fraction)


def compose_tool() -> list:
    beside = Path(sys.executable).parent / "podman-compose"
    return [str(beside) if beside.exists() else "podman-compose"]


def baseline_override(document: dict) -> dict:
    services = {}
    names = list(document["services"])
    for rank, name in enumerate(names):
        services[name] = {
            "entrypoint": ["tini", "-g", "--", "torchrun"],
            "command": ["--nnodes", str(len(names)), "--nproc-per-node", "2", "--node-rank", str(rank),
                        "--master-addr", names[0], "--master-port", "29500", "allreduce.py"],
        }
    return {"services": services}


def one_run(engine, files: list, names: list, image: str) -> dict:
    for name in names:
        subprocess.run([engine.kind, "rm", "-f", "-t", "0", name], capture_output=True)
    env = {**os.environ, "NODEWEAVE_IMAGE": image}
    base = compose_tool() + sum((["-f", str(f)] for f in files), [])
    t0 = time.time()
    subprocess.run(base + ["up", "-d"], check=True, capture_output=True, env=env, timeout=300)
    deadline = time.monotonic() + 600
    while any(engine.client.container.inspect(n).state.status == "running" for n in names):
        if time.monotonic() > deadline:
            raise SystemExit("the job did not finish in 600 s")
        time.sleep(0.5)
    nodes = {}
    records = []
    for name in names:
        state = engine.client.container.inspect(name).state
        logs = subprocess.run([engine.kind, "logs", "-t", name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True).stdout
        if state.exit_code != 0:
            raise SystemExit(f"{name} exited {state.exit_code}:\n{logs[-3000:]}")
        exec_at = next((epoch(m.group(1)) for m in map(EXEC_LINE.match, logs.splitlines()) if m), None)
        waited = WAITED.search(logs)
        nodes[name] = {"started": state.started_at.timestamp(), "exec": exec_at,
                       "waited": float(waited.group(1)) if waited else 0.0}
        records += [json.loads(line.split(RECORD, 1)[1]) for line in logs.splitlines() if RECORD in line]
    subprocess.run(base + ["down", "-t", "0"], capture_output=True, env=env, timeout=300)
    return summarize(t0, nodes, records)


def summarize(t0: float, nodes: dict, records: list) -> dict:
    if len(records) != 4 or any(r["sum"] != r["expected"] for r in records):
        raise SystemExit(f"wrong all-reduce: {records}")
    worker_start = min(r["started"] for r in records)
    out = {
        "total": max(r["first_allreduce"] for r in records) - t0,
        "compose up to containers running": max(n["started"] for n in nodes.values()) - t0,
        "worker python start": worker_start - max(n["started"] for n in nodes.values()),
        "import torch (worker)": statistics.mean(r["imported"] - r["started"] for r in records),
        "rendezvous (init_process_group)": max(r["joined"] for r in records) - max(r["imported"] for r in records),
        "first all-reduce": max(r["first_allreduce"] for r in records) - max(r["joined"] for r in records),
    }
    if all(n["exec"] for n in nodes.values()):
        own = [n["exec"] - n["started"] - n["waited"] for n in nodes.values()]
        out["entrypoint, own work (no wait)"] = max(own)
        out["entrypoint, waiting for master port"] = max(n["waited"] for n in nodes.values())
        out["launcher start: exec to worker start"] = worker_start - max(n["exec"] for n in nodes.values())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="localhost/nodeweave-e2e/e2e:cpu")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    from nodeweave.build import detect_engine
    from nodeweave.targets.compose import render_files
    from nodeweave.spec import load_spec

    engine = detect_engine()
    if not engine.client.image.exists(args.image):
        raise SystemExit(f"image {args.image} is missing: build it first (see this script's docstring)")
    console = Console()
    with tempfile.TemporaryDirectory(prefix="nodeweave-bench-up-") as tmp:
        work = Path(tmp)
        (work / "nodeweave.yaml").write_text(SPEC)
        shutil.copy(SCRIPT, work / "allreduce.py")
        (work / "cache").mkdir()
        for path in (work, work / "cache"):
            path.chmod(0o777)
        (work / "allreduce.py").chmod(0o644)
        text = render_files(load_spec(work / "nodeweave.yaml"))["compose/local.yaml"]
        (work / "compose").mkdir()
        local = work / "compose" / "local.yaml"
        local.write_text(text)
        document = yaml.safe_load(text)
        override = work / "compose" / "baseline.yaml"
        override.write_text(yaml.safe_dump(baseline_override(document)))
        names = [svc["container_name"] for svc in document["services"].values()]
        runs = {"nodeweave": [], "baseline": []}
        for index in range(args.repeat):
            for label, files in (("nodeweave", [local]), ("baseline", [local, override])):
                console.print(f"run {index + 1}/{args.repeat}: {label}")
                runs[label].append(one_run(engine, files, names, args.image))
    keys = list(runs["nodeweave"][0])
    table = Table(title=f"compose up to first all-reduce, 2 nodes x 2 processes, {engine} (median of {args.repeat})")
    table.add_column("phase (seconds)")
    table.add_column("nodeweave", justify="right")
    table.add_column("plain torchrun", justify="right")
    for key in keys:
        ours = statistics.median(run[key] for run in runs["nodeweave"])
        theirs = [run[key] for run in runs["baseline"] if key in run]
        table.add_row(key, f"{ours:.2f}", f"{statistics.median(theirs):.2f}" if theirs else "-")
    console.print(table)
    ours = statistics.median(run["total"] for run in runs["nodeweave"])
    theirs = statistics.median(run["total"] for run in runs["baseline"])
    own = statistics.median(run["entrypoint, own work (no wait)"] for run in runs["nodeweave"])
    console.print(f"total: nodeweave / plain torchrun = {ours / theirs:.2f}; the entrypoint's own work is "
                  f"{own:.2f} s of {ours:.1f} s ({own / ours:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
