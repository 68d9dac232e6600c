"""Uneven processes per node on real GPUs (NCCL): a hostfile whose lines give different slots, no container engine.

Two schedules, each node a real ``nodeweave-entrypoint`` (torchrun, ``--hostfile``) with its own TMPDIR,
``NCCL_HOSTID`` and GPUs, running tests/e2e/workspace/resumable.py with ``--cuda`` (an all-reduce per step):

- **even start**: ``a slots=1`` / ``b slots=2``: node 0 runs one rank on GPU 0, node 1 two ranks on GPUs 0 and 1
  (another NCCL_HOSTID, so sharing GPU 0 with node 0 is allowed); every rank must see a world of 3.
- **spare of more slots**: recovery on, 2 training nodes of 1 slot and a spare of 2: node 1's rank is killed at
  step ``--kill-step``; the spare takes its place with its own 2 processes, so generation 1's world is 1 + 2.

    python benchmarks/gpu_uneven.py        # 2 or more GPUs, NCCL

Prints one row per schedule: the worlds each generation ran (from the ranks' own ``RECOVERY-STEP`` lines), the
time from start to the first step, steps per second of the last generation, and the exits; exit 1 where a
world is not what the hostfile says.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from one_machine import one_machine_env  # noqa: E402
from stall_nodes import ENTRY, ROOT, Node, free_port_pair, stop  # noqa: E402

WORKLOAD = ROOT / "tests" / "e2e" / "workspace" / "resumable.py"


def spawn(folder, rank, port, gpus, extra, argv):
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    env = one_machine_env({
        **os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": path,
        "TMPDIR": str(folder / f"n{rank}"), "OMP_NUM_THREADS": "1", "NODEWEAVE_TEST_NODE": str(rank),
        "NODEWEAVE_WAIT_TIMEOUT": "120", "NCCL_HOSTID": f"sim-node-{rank}", "CUDA_VISIBLE_DEVICES": gpus, **extra})
    os.makedirs(env["TMPDIR"], exist_ok=True)
    work = [*ENTRY, "--launcher", "torchrun", "--hostfile", "hosts", "--node-rank", str(rank), "--master-addr",
            "127.0.0.1", "--master-port", str(port), "--", "resumable.py", "--cuda", *argv]
    return Node(subprocess.Popen(work, env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True))


def run(name, hosts, gpus, extra, argv, want, limit):
    folder = Path(tempfile.mkdtemp(prefix=f"gpu-uneven-{name}-"))
    shutil.copy(WORKLOAD, folder / "resumable.py")
    (folder / "hosts").write_text(hosts)
    port, began = free_port_pair(), time.monotonic()
    nodes = [spawn(folder, rank, port, g, extra, argv) for rank, g in enumerate(gpus)]
    try:
        codes = [node.wait(limit) for node in nodes]
    except subprocess.TimeoutExpired:
        codes = ["timeout"] * len(nodes)
    finally:
        stop(nodes)
    found = [(int(g), int(s), int(w), float(t), stamp) for node in nodes for stamp, _, line in node.lines
             for g, s, w, t in re.findall(r"RECOVERY-STEP gen=(\d+) step=(\d+) world=(\d+) t=([\d.]+)", line)]
    worlds = sorted({(g, w) for g, _, w, _, _ in found})
    first = min((stamp for *_, stamp in found), default=None)
    last_gen = max((g for g, *_ in found), default=None)
    times = sorted(t for g, _, _, t, _ in found if g == last_gen)
    steps = sorted({s for g, s, *_ in found if g == last_gen})
    rate = (len(steps) - 1) / (times[-1] - times[0]) if len(steps) > 1 and times[-1] > times[0] else None
    ok = worlds == want and all(code == 0 for code in codes)
    if not ok:
        for rank, node in enumerate(nodes):
            print(f"--- {name} node {rank} (exit {codes[rank]}) ---\n{node.text()[-3000:]}", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return {"schedule": name, "worlds": worlds, "want": want, "first_step_s": None if first is None else first - began,
            "steps_per_s": rate, "exits": codes, "ok": ok}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--kill-step", type=int, default=10)
    p.add_argument("--limit", type=int, default=240, help="seconds each schedule may take")
    args = p.parse_args()
    common = ["--steps", str(args.steps), "--interval", "0.1", "--save-every", "5", "--ckpt", "checkpoints"]
    results = [
        run("even start", "a slots=1\nb slots=2\n", ["0", "0,1"], {}, common, [(0, 3)], args.limit),
        run("spare of more slots", "n0 slots=1\nn1 slots=1\nn2 slots=2\n", ["0", "1", "0,1"],
            {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_NNODES": "2",
             "NODEWEAVE_CHECKPOINT_DIR": "checkpoints"},
            [*common, "--fault", "kill", "--fault-node", "1", "--fault-step", str(args.kill_step)],
            [(0, 2), (1, 3)], args.limit),
    ]
    print(f"| schedule | worlds (generation, world) | expected | start -> first step | steps/s (last gen) | exits |")
    print("|---|---|---|---:|---:|---|")
    for r in results:
        first = "-" if r["first_step_s"] is None else f"{r['first_step_s']:.1f} s"
        rate = "-" if r["steps_per_s"] is None else f"{r['steps_per_s']:.1f}"
        print(f"| {r['schedule']} | {r['worlds']} | {r['want']} | {first} | {rate} | {r['exits']} |")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
