"""The stall watch's numbers on this machine (gloo, CPU), printed as tables.

1. stall → report: two simulated nodes (benchmarks/stall_nodes.py) under torchrun, rank 1 sleeps at step 6;
   the time from its ``NODEWEAVE-STALL`` line to the ``STALL:`` report on each node, against ``stall_warn``
   (goal: stall_warn + at most 10 s);
2. straggler: rank 1 does its step's work 1.3x (and 1.15x) as long; the time from the check-in to the
   ``STRAGGLER:`` line (goal: within 60 s) and the gap it reports;
3. hook overhead: two gloo ranks with the rank hook doing steps of matmul work + one all_reduce, in blocks
   of ``--steps`` steps through the probe's wrapped all_reduce and through the bare one it wraps, alternated
   in the same processes (paired rounds); the median of the per-pair ratios (goal: at most 1% added step
   time), and the wrapper's own cost per call measured in process;
4. flight recorder: the same steps (bare all_reduce) in fresh processes with torch's flight recorder on
   (``TORCH_FR_BUFFER_SIZE=2000``, what the entrypoint sets, and the rank's 1 Hz counting thread) and off
   (``0``), alternated; the median of the per-pair ratios of the median step times.
5. a 45 s save on rank 0 (``--parts save``): rank 0 calls torch.save for 45 s at step 6 while rank 1 waits at a
   barrier (stall_warn 10 s, stall_timeout 60 s): when the warning comes, that it names rank 0 and torch.save,
   when ``the stall is over`` comes, and that the job completes (exit 0 on both nodes);

    .venv/bin/python benchmarks/stall_watch.py [--rounds 3] [--warn 10] [--overhead-rounds 10] [--flight-pairs 8]
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
import statistics, sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
wrapped = dist.all_reduce
bare = getattr(wrapped, "__wrapped__", wrapped)  # the probe's wrapper keeps the original (functools.wraps)
a, t = torch.randn(160, 160), torch.ones(1024)
def block(reduce, steps):
    dist.barrier()
    began = time.perf_counter()
    for _ in range(steps):
        for _ in range(6):
            a @ a
        reduce(t)
    return (time.perf_counter() - began) / steps
block(bare, 50)
ratios, plain = [], []
for i in range(int(sys.argv[1])):
    order = (wrapped, bare) if i % 2 == 0 else (bare, wrapped)
    took = {fn: block(fn, int(sys.argv[2])) for fn in order}
    ratios.append(took[wrapped] / took[bare])
    plain.append(took[bare])
if dist.get_rank() == 0:
    print("STEP-RATIOS", " ".join(f"{r:.4f}" for r in ratios), flush=True)
    print(f"STEP-TIME {statistics.median(plain) * 1e6:.1f}", flush=True)
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
    nodes = stall_nodes.start(path, "torchrun", args, master=stall_nodes.own_address(),
                              env={"NODEWEAVE_STALL_WARN": str(warn), "NODEWEAVE_STALL_TIMEOUT": str(warn + 5)})
    try:
        for node in nodes:
            node.wait(warn + 180)
    finally:
        stall_nodes.stop(nodes)
    began = nodes[1].first("NODEWEAVE-STALL", "out")
    return [node.first("STALL:") - began for node in nodes], [node.ended - began for node in nodes]


def straggler(factor):
    path = workdir()
    args = ["allreduce.py", "--steps", "400", "--work", "0.1", "--slow-rank", "1", "--slow-factor", str(factor)]
    nodes = stall_nodes.start(path, "torchrun", args, env={"NODEWEAVE_STALL_WARN": "60"},
                              master=stall_nodes.own_address())
    try:
        for node in nodes:
            node.wait(240)
    finally:
        stall_nodes.stop(nodes)
    began = nodes[0].first("check-in: 2 node(s) agree")
    found = nodes[0].first("STRAGGLER: rank 1")
    line = next((text for _, _, text in nodes[0].lines if "STRAGGLER: rank 1" in text), "")
    return (found - began if found else None), line.split(" is ", 1)[-1].split(":")[0]


def wrapper_cost(calls=200000):
    """Seconds the probe adds to one collective call: a wrapped no-op against the bare no-op, in process."""
    import time

    sys.path.insert(0, str(HOOK))
    import nodeweave_rankprobe as probe

    record = probe.Probe(os.path.join(tempfile.mkdtemp(), "rank-0.bin"), 0, 0)
    bare = lambda: None  # noqa: E731
    wrapped = probe.wrap(record, "all_reduce", bare)
    best = {}
    for name, fn in (("bare", bare), ("wrapped", wrapped)) * 3:
        began = time.perf_counter()
        for _ in range(calls):
            fn()
        best[name] = min(best.get(name, 1e9), (time.perf_counter() - began) / calls)
    return best["wrapped"] - best["bare"]


def overhead(rounds, steps, extra_env=None):
    """Both ranks with the hook; blocks of ``steps`` steps through the wrapped all_reduce and through the bare
    one it wraps, alternated in the same processes (so process-to-process noise does not enter the ratio)."""
    path = workdir()
    (path / "step.py").write_text(STEP)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(stall_nodes.free_port_pair()),
               WORLD_SIZE="2", PYTHONPATH=str(HOOK), NODEWEAVE_RANKWATCH_DIR=str(path), **(extra_env or {}))
    procs = [subprocess.Popen([sys.executable, str(path / "step.py"), str(rounds), str(steps)], text=True,
                              stdout=subprocess.PIPE, env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in (0, 1)]
    out = [p.communicate(timeout=1200)[0] for p in procs][0]
    assert (path / "rank-0.bin").exists(), "the probe did not start"
    ratios = [float(x) for x in out.split("STEP-RATIOS")[1].split("\n")[0].split()]
    return ratios, float(out.split("STEP-TIME")[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warn", type=int, default=10)
    parser.add_argument("--overhead-rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--flight-pairs", type=int, default=8)
    parser.add_argument("--parts", default="stall,straggler,overhead,flight")
    args = parser.parse_args()
    parts = args.parts.split(",")
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"python {platform.python_version()}")
    if "stall" in parts:
        stall_table(args)
    if "straggler" in parts:
        straggler_table()
    if "overhead" in parts:
        overhead_table(args)
    if "flight" in parts:
        flight_table(args)
    if "save" in parts:
        save_table(args)
    return 0


def stall_table(args):
    print(f"\n| from the stall (stall_warn {args.warn} s, stall_timeout {args.warn + 5} s) | report on node 0 | "
          f"node 1 | exit of node 0 | node 1 |\n|---|---|---|---|---|")
    for i in range(args.rounds):
        got, ended = stall_to_report(args.warn)
        print(f"| round {i + 1} | {got[0]:.1f} s | {got[1]:.1f} s | {ended[0]:.1f} s | {ended[1]:.1f} s |", flush=True)


def straggler_table():
    print("\n| straggler | named after | reported |\n|---|---|---|")
    for factor in (1.3, 1.15):
        took, said = straggler(factor)
        print(f"| rank 1 at {factor}x | {took:.1f} s |" if took else f"| rank 1 at {factor}x | not named |",
              f" {said} |", flush=True)


def overhead_table(args):
    cost = wrapper_cost()
    ratios, plain = overhead(args.overhead_rounds, args.steps)
    print(f"\n| hook overhead ({args.overhead_rounds} paired blocks of {args.steps} steps) | value |\n|---|---|")
    print(f"| step without the wrapper (median) | {plain:.0f} µs |")
    print(f"| with / without (median of the rounds) | {statistics.median(ratios):.4f} |")
    print(f"| rounds' ratios | {', '.join(f'{r:.3f}' for r in ratios)} |")
    print(f"| the probe per collective call (in process, best of 3 x 200k) | {cost * 1e6:.2f} µs |")
    print(f"| that against the step without the wrapper (one collective per step) | "
          f"{cost / (plain * 1e-6) * 100:.3f} % |")


def long_save(save_s=45, warn=10, timeout=60):
    path = workdir()
    args = ["allreduce.py", "--steps", "40", "--interval", "0.2", "--stall-step", "6", "--save-rank", "0",
            "--save-for", str(save_s)]
    nodes = stall_nodes.start(path, "torchrun", args, master=stall_nodes.own_address(),
                              env={"NODEWEAVE_STALL_WARN": str(warn), "NODEWEAVE_STALL_TIMEOUT": str(timeout)})
    try:
        codes = [node.wait(save_s + 240) for node in nodes]
    finally:
        stall_nodes.stop(nodes)
    began = nodes[0].first("NODEWEAVE-SAVE", "out")
    report = nodes[0].text()
    named = "that rank 0 (node 0" in report and "torch.save (allreduce.py:" in report
    over = nodes[0].first("the stall is over")
    return {"codes": codes, "warned_s": nodes[0].first("STALL:") - began, "over_s": over - began if over else None,
            "reports": report.count("STALL:"), "named": named}


def save_table(args):
    got = long_save()
    print("\n| 45 s torch.save on rank 0, rank 1 at a barrier (stall_warn 10 s, stall_timeout 60 s) | value |\n|---|---|")
    print(f"| warning after the save began | {got['warned_s']:.1f} s ({got['reports']} report(s) per node; "
          f"names rank 0 and torch.save: {got['named']}) |")
    print(f"| `the stall is over` after the save began | {got['over_s']:.1f} s |" if got["over_s"] else
          "| `the stall is over` | never |")
    print(f"| exit codes | {got['codes']} |")


def flight_table(args):
    """Fresh processes with the recorder on and off, alternated (which goes first alternates too)."""
    ratios, times = [], {"2000": [], "0": []}
    for i in range(args.flight_pairs):
        pair = {}
        for size in (("2000", "0") if i % 2 == 0 else ("0", "2000")):
            pair[size] = overhead(5, args.steps, {"TORCH_FR_BUFFER_SIZE": size})[1]
            times[size].append(pair[size])
        ratios.append(pair["2000"] / pair["0"])
    print(f"\n| flight recorder ({args.flight_pairs} pairs of fresh processes, {args.steps} steps) | value |\n|---|---|")
    print(f"| step, recorder off / on (medians) | {statistics.median(times['0']):.0f} / "
          f"{statistics.median(times['2000']):.0f} µs |")
    print(f"| on / off (median of the pairs) | {statistics.median(ratios):.4f} |")
    diffs = sorted(on - off for on, off in zip(times["2000"], times["0"]))
    print(f"| on − off per step (one collective), median of the pairs | {statistics.median(diffs):.1f} µs "
          f"(pairs {diffs[0]:.0f} to {diffs[-1]:.0f} µs) |")
    print(f"| pairs' ratios | {', '.join(f'{r:.3f}' for r in ratios)} |")


if __name__ == "__main__":
    sys.exit(main())
