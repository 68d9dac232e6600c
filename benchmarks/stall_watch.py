"""The stall watch's numbers on this machine (gloo, CPU), printed as tables.

1. stall → report: two simulated nodes (benchmarks/stall_nodes.py) under torchrun, rank 1 sleeps at step 6;
   the time from its ``NODEWEAVE-STALL`` line to the ``STALL:`` report on each node, against ``stall_warn``
   (goal: stall_warn + at most 10 s);
2. straggler: rank 1 does its step's work 1.3x (and 1.15x) as long; the time from the check-in to the
   ``STRAGGLER:`` line (goal: within 60 s) and the gap it reports;
3. hook overhead: two gloo ranks doing ``--steps`` steps of matmul work + one all_reduce, with the rank hook
   (the probe's wrappers, its mmap record, faulthandler) and without it, alternated in paired rounds; the
   median of the per-round ratios (goal: at most 1% added step time).

    .venv/bin/python benchmarks/stall_watch.py [--rounds 3] [--warn 10] [--overhead-rounds 10]
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stall_nodes  # noqa: E402

WORKLOAD = stall_nodes.ROOT / "tests" / "e2e" / "workspace" / "allreduce.py"
HOOK = stall_nodes.ROOT / "src" / "nodeweave" / "entrypoint" / "stall" / "rankhook"
STEP = '''
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
a, t = torch.randn(160, 160), torch.ones(1024)
def step():
    for _ in range(6):
        a @ a
    dist.all_reduce(t)
for _ in range(50):
    step()
dist.barrier()
began = time.perf_counter()
for _ in range(int(sys.argv[1])):
    step()
took = time.perf_counter() - began
if dist.get_rank() == 0:
    print(f"STEP-TIME {took / int(sys.argv[1]) * 1e6:.1f}", flush=True)
dist.destroy_process_group()
'''


def workdir():
    path = Path(tempfile.mkdtemp(prefix="stall-bench-"))
    shutil.copy(WORKLOAD, path / "allreduce.py")
    return path


def stall_to_report(warn):
    path = workdir()
    args = ["allreduce.py", "--steps", "100000", "--interval", "0.2", "--stall-step", "6", "--stall-ranks", "1",
            "--stall-for", "600"]
    nodes = stall_nodes.start(path, "torchrun", args,
                              env={"NODEWEAVE_STALL_WARN": str(warn), "NODEWEAVE_STALL_TIMEOUT": str(warn + 5)})
    try:
        for node in nodes:
            node.wait(warn + 180)
    finally:
        stall_nodes.stop(nodes)
    began = nodes[1].first("NODEWEAVE-STALL", "out")
    return [node.first("STALL:") - began for node in nodes]


def straggler(factor):
    path = workdir()
    args = ["allreduce.py", "--steps", "400", "--work", "0.1", "--slow-rank", "1", "--slow-factor", str(factor)]
    nodes = stall_nodes.start(path, "torchrun", args, env={"NODEWEAVE_STALL_WARN": "60"})
    try:
        for node in nodes:
            node.wait(240)
    finally:
        stall_nodes.stop(nodes)
    began = nodes[0].first("check-in: 2 node(s) agree")
    found = nodes[0].first("STRAGGLER: rank 1")
    line = next((text for _, _, text in nodes[0].lines if "STRAGGLER: rank 1" in text), "")
    return (found - began if found else None), line.split(" is ", 1)[-1].split(":")[0]


def step_time(path, steps, hooked):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NODEWEAVE_RANKWATCH_DIR")}
    env.update(OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(stall_nodes.free_port_pair()),
               WORLD_SIZE="2")
    if hooked:
        env.update(PYTHONPATH=str(HOOK), NODEWEAVE_RANKWATCH_DIR=str(path))
    procs = [subprocess.Popen([sys.executable, str(path / "step.py"), str(steps)], stdout=subprocess.PIPE, text=True,
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in (0, 1)]
    out = [p.communicate(timeout=600)[0] for p in procs]
    return float(out[0].split("STEP-TIME")[1])


def overhead(rounds, steps):
    path = workdir()
    (path / "step.py").write_text(STEP)
    ratios, plain = [], []
    for i in range(rounds):
        order = (False, True) if i % 2 == 0 else (True, False)
        times = {hooked: step_time(path, steps, hooked) for hooked in order}
        ratios.append(times[True] / times[False])
        plain.append(times[False])
    return ratios, plain


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warn", type=int, default=10)
    parser.add_argument("--overhead-rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"python {platform.python_version()}")
    print(f"\n| stall → report (stall_warn {args.warn} s) | node 0 | node 1 |\n|---|---|---|")
    for i in range(args.rounds):
        got = stall_to_report(args.warn)
        print(f"| round {i + 1} | {got[0]:.1f} s | {got[1]:.1f} s |", flush=True)
    print("\n| straggler | named after | reported |\n|---|---|---|")
    for factor in (1.3, 1.15):
        took, said = straggler(factor)
        print(f"| rank 1 at {factor}x | {took:.1f} s |" if took else f"| rank 1 at {factor}x | not named |",
              f" {said} |", flush=True)
    ratios, plain = overhead(args.overhead_rounds, args.steps)
    print(f"\n| hook overhead ({args.overhead_rounds} paired rounds, {args.steps} steps) | value |\n|---|---|")
    print(f"| step without the hook (median) | {statistics.median(plain):.0f} µs |")
    print(f"| with / without (median of the rounds) | {statistics.median(ratios):.4f} |")
    print(f"| rounds' ratios | {', '.join(f'{r:.3f}' for r in ratios)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
