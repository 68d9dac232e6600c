"""What the run-time watch costs per collective on the CPU side, before (another checkout) and after (this one).

Parts, each measured in fresh processes that alternate between the two source trees (``--pairs`` times; the
best and the median of each printed, so a loaded machine's noise shows as the spread):

1. the rank hook (``stall/rankhook/nodeweave_rankprobe.py``) around one collective: a wrapped no-op
   ``all_reduce(t)`` against the bare no-op, on a CPU tensor (gloo's path: the record written on entry and
   exit, the device timer's check) and, where CUDA is there, on a GPU tensor (NCCL's path: also two CUDA
   events recorded and the earlier pair queried);
2. node 0's share (the metrics room, ``metrics/live.py``): the recorder's once-a-second tick over 8 ranks'
   views, in CPU microseconds a second, and the GPU sampler's reading (``metrics/gpus.py``: nvidia-smi or
   its peers, every 10 s), its CPU time with its child's, as a share of one core.

From the per-call cost, the shortest step that keeps the watch within 1% of step time with 1 and with 100
collectives a step (an FSDP-like step) is printed. On GPUs the paired on/off step-time measure is
``benchmarks/gpu_stragglers.py --cases none --rounds 8 ...``; this one needs no GPU.

    .venv/bin/python benchmarks/hook_cost.py [--before /work/main/src] [--pairs 5] [--calls 100000]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

CHILD = r'''
import json, os, resource, sys, tempfile, threading, time
src, calls = sys.argv[1], int(sys.argv[2])
sys.path[:0] = [os.path.join(src, "nodeweave", "entrypoint", "stall", "rankhook"), src]
import nodeweave_rankprobe as probe
import torch

def per_call(tensor):
    record = probe.Probe(os.path.join(tempfile.mkdtemp(), "rank-0.bin"), 0, 0)
    bare = lambda tensor, op=None, group=None, async_op=False: None
    wrapped = probe.wrap(record, "all_reduce", bare)
    best = {}
    for name, fn in (("bare", bare), ("wrapped", wrapped)) * 3:
        began = time.perf_counter()
        for _ in range(calls):
            fn(tensor)
        if tensor.is_cuda:
            torch.cuda.synchronize()
        best[name] = min(best.get(name, 1e9), (time.perf_counter() - began) / calls)
    return (best["wrapped"] - best["bare"]) * 1e6

out = {"cpu_us": per_call(torch.ones(16))}
if torch.cuda.is_available():
    out["cuda_us"] = per_call(torch.ones(16, device="cuda"))

from nodeweave.entrypoint.metrics.live import Live

class Settings:
    def __init__(self):
        self.env, self.values = {"TMPDIR": tempfile.mkdtemp()}, {"metrics": False}
    def get(self, key, default=None):
        return self.values.get(key, default)

class Watch:
    def __init__(self, views):
        self.clock, self.failed_at, self.failure, self.thread = time.monotonic, None, None, None
        self.own_done = threading.Event()
        self.hub = type("Hub", (), {"own_fp": {"rank": 0, "job": "bench"}, "peers": []})()
        self.stall = type("Stall", (), {"last_views": views, "verdicts": {"stall": None, "stragglers": []}})()

live = Live(Settings(), lambda line: None)
views = [{"node": 0, "rank": r, "host": "h", "seq": 100, "inside_s": 1.0, "outside_s": 2.0, "state": "S",
          "since_s": 0.01, "fr_enqueued": -1} for r in range(8)]
watch = Watch(views)
live.watch = watch
live.generation = {"generation": 0, "began": time.time(), "first": None, "last": None, "ended": None,
                   "fault": None, "stalls": [], "steps": []}
live.timeline["generations"].append(live.generation)
ticks, began, now = 300, time.process_time(), time.time()
for i in range(ticks):
    watch.stall.last_views = [dict(v, seq=v["seq"] + 10 * i, outside_s=v["outside_s"] + i) for v in views]
    live.saved_at = now + i  # the tick alone: goodput.json is written every 5 s, not measured here
    live.tick(now + i)
out["tick_us"] = (time.process_time() - began) / ticks * 1e6

from nodeweave.entrypoint.metrics import gpus
before, children = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
source, found = gpus.read_gpus()
after = resource.getrusage(resource.RUSAGE_CHILDREN)
out["sampler_source"] = source
out["sampler_cpu_ms"] = ((time.process_time() - before) + (after.ru_utime - children.ru_utime)
                         + (after.ru_stime - children.ru_stime)) * 1000
out["sampler_every_s"] = gpus.EVERY_S
print("HOOKCOST " + json.dumps(out))
'''


def measure(src, calls):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RANK", "LOCAL_RANK")}
    done = subprocess.run([sys.executable, "-c", CHILD, str(src), str(calls)], capture_output=True, text=True,
                          env=env, timeout=600)
    line = next((x for x in done.stdout.splitlines() if x.startswith("HOOKCOST ")), None)
    if line is None:
        raise SystemExit(f"the measuring process failed for {src}:\n{done.stderr[-3000:]}")
    return json.loads(line.split(" ", 1)[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="SRC", help="another checkout's src/ (the baseline), e.g. /work/main/src")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100000, help="calls per timed loop")
    args = parser.parse_args()
    trees = ([("before", Path(args.before).resolve())] if args.before else []) + [("after", HERE)]
    runs = {name: [] for name, _ in trees}
    print(f"# {platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}; load average "
          f"{os.getloadavg()[0]:.1f} at the start; {args.pairs} alternating processes per tree, {args.calls:,} calls "
          "a loop (best of 3 loops a process)")
    for _ in range(args.pairs):
        for name, src in trees:
            runs[name].append(measure(src, args.calls))
    print("\n| part | " + " | ".join(f"{name}: best | {name}: median" for name, _ in trees) + " |")
    print("|---|" + "---|---|" * len(trees))
    rows = [("rank hook per collective, CPU tensor (us)", "cpu_us"), ("rank hook per collective, CUDA tensor (us)",
                                                                      "cuda_us"),
            ("node 0's recorder tick, 8 ranks (CPU us a second)", "tick_us")]
    for label, key in rows:
        if all(key in r for name, _ in trees for r in runs[name]):
            cells = [f"{min(r[key] for r in runs[name]):.2f} | {statistics.median(r[key] for r in runs[name]):.2f}"
                     for name, _ in trees]
            print(f"| {label} | " + " | ".join(cells) + " |")
    last = runs["after"][-1]
    if last["sampler_source"]:
        share = statistics.median(r["sampler_cpu_ms"] for r in runs["after"]) / (last["sampler_every_s"] * 10)
        print(f"| GPU sampler ({last['sampler_source']}): one reading's CPU (ms), its share of one core | "
              f"{statistics.median(r['sampler_cpu_ms'] for r in runs['after']):.1f} ms every "
              f"{last['sampler_every_s']:.0f} s = {share:.2f}% |")
    else:
        print("| GPU sampler | no GPU tool on this machine: not measured |")
    print("\nThe shortest step within 1% of added time (100 x the per-collective cost x collectives a step), "
          "from the best per-call figure:\n")
    print("| tree | path | 1 collective a step | 100 collectives a step |\n|---|---|---|---|")
    for name, _ in trees:
        for path, key in (("CPU tensor", "cpu_us"), ("CUDA tensor", "cuda_us")):
            if all(key in r for r in runs[name]):
                best = min(r[key] for r in runs[name])
                print(f"| {name} | {path} | {best * 100 / 1000:.2f} ms | {best * 100 * 100 / 1000:.1f} ms |")


if __name__ == "__main__":
    main()
