"""Stragglers named on real GPUs with NCCL (issue 32's proof), and what the stall watch costs per step.

Two simulated nodes on one machine: each a real ``nodeweave-entrypoint`` running torchrun with NCCL, with
its own GPU (CUDA_VISIBLE_DEVICES), NCCL_HOSTID, TMPDIR and, where ``unshare --uts`` works (root), its own
hostname. The job (benchmarks/gpu_stragglers_job.py) queues 30 ms of matmuls and 20 ms of CPU work per
step, then all-reduces 4 MiB and synchronizes. Cases:

  cpu_slow        rank 1 spends 0.15 s more CPU per step              expect: rank 1 (node 1) named
  gpu_slow        rank 1 queues 0.15 s more GPU kernel time per step   expect: rank 1 (node 1) named
  shared_gpu      a busy process hammers node 1's GPU                  expect: rank 1 (node 1) named
  ddp_gpu_slow    a DDP model (nn.Linear stack, loss.backward(), optimizer.step(): the gradients are
                  all-reduced by DDP's reducer from C++), rank 1 queues 0.15 s more GPU kernel time per
                  step                                                 expect: rank 1 (node 1) named, from
                                                                               the flight recorder's durations
  healthy         --healthy-s seconds, nobody slowed                    expect: nothing named
  shared_tmpdir   cpu_slow with ONE TMPDIR for both nodes              expect: rank 1 named once; --status
                                                                               lists exactly 2 ranks
  overhead        one job, --rounds paired rounds of 25 steps (20 ms of matmuls, 4 all-reduces of 4 MiB):
                  through the hooked dist.all_reduce (the probe's record and the two CUDA events) and
                  through the plain function it wraps, the order alternating: median of the per-round
                  ratios of median step time, on / off (the answer thread's 1 Hz poll runs in both arms)

A straggler case ends as soon as node 0 prints its STRAGGLER line (or after --name-limit s). It prints one
table (case, named?, who, gap, seconds from the loop's start to the name, verdict) and keeps it with every
node's log in --out (gpu_stragglers.json); exit 0 only when every case is ok, and a failed case prints what
was named, --status's ranks and each node's last log lines. Every case with the quick healthy run (60 s)
took 246 s on 2x H100 before ddp_gpu_slow, about 5-6 minutes with it; the 5-minute healthy proof alone
about 6:

    PYTHONPATH=src python3 benchmarks/gpu_stragglers.py --out /tmp/gpu-stragglers
    PYTHONPATH=src python3 benchmarks/gpu_stragglers.py --out /tmp/gpu-ddp --cases ddp_gpu_slow --rounds 0
    PYTHONPATH=src python3 benchmarks/gpu_stragglers.py --out /tmp/gpu-healthy --cases healthy \
        --healthy-s 300 --rounds 0
    PYTHONPATH=src python3 benchmarks/gpu_stragglers.py --cpu --out /tmp/cpu-stragglers   # gloo smoke, no GPU

The overhead measure alone, short enough for a 4-minute call (``--budget-s`` stops starting rounds that would end
past it; the rounds done, the on/off ratio with its quartiles and the cost per collective are printed), one
all-reduce a step and a hundred (an FSDP-like step):

    PYTHONPATH=src python3 benchmarks/gpu_stragglers.py --out /tmp/gpu-cost1 --cases none --rounds 8 --block 10 \
        --collectives 1 --budget-s 150
    PYTHONPATH=src python3 benchmarks/gpu_stragglers.py --out /tmp/gpu-cost100 --cases none --rounds 8 --block 5 \
        --collectives 100 --collective-kb 256 --budget-s 150

``--cpu`` runs the same on CPU tensors with gloo (cpu_slow, healthy, shared_tmpdir, overhead; the GPU
cases, ddp_gpu_slow among them, are skipped): the smoke check of this script and of the gloo rule.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stall_nodes  # noqa: E402

JOB = Path(__file__).resolve().parent / "gpu_stragglers_job.py"
NAMED = re.compile(r"STRAGGLER: rank (\d+) \(node (\d+), host ([^,)]*)[^)]*\) is (\d+)% slower: (\d+) ms of own "
                   r"work per collective against (\d+) ms")
SLOW_MS = "150"
CASES = ("cpu_slow", "gpu_slow", "shared_gpu", "ddp_gpu_slow", "healthy", "shared_tmpdir")
GPU_ONLY = ("gpu_slow", "shared_gpu", "ddp_gpu_slow")


def hostnames():
    """{node: argv prefix} giving each node its own hostname, or {} where ``unshare --uts`` is refused."""
    if not shutil.which("unshare"):
        return {}
    probe = subprocess.run(["unshare", "--uts", "sh", "-c", "hostname simnode-x && hostname"], capture_output=True,
                           text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "simnode-x":
        return {}
    return {i: ["unshare", "--uts", "sh", "-c", f'hostname simnode-{i} && exec "$@"', "sh"] for i in (0, 1)}


def start(work, job_args, args, env=None, shared_tmpdir=False):
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(JOB, work / JOB.name)
    env = {"NODEWEAVE_STALL_WARN": "60", "NODEWEAVE_STALL_TIMEOUT": "0", "NODEWEAVE_EXCHANGE_ALLOW": "address",
           "NCCL_NVLS_ENABLE": "0", **(env or {})}
    per_node = {i: {} for i in (0, 1)}
    if not args.cpu:
        per_node = {i: {"CUDA_VISIBLE_DEVICES": str(args.gpus[i]), "NCCL_HOSTID": f"simnode{i}"} for i in (0, 1)}
    if shared_tmpdir:
        for i in (0, 1):
            per_node[i]["TMPDIR"] = str(work / "shared-tmp")
    command = [JOB.name, *(["--cpu"] if args.cpu else []), *job_args]
    return stall_nodes.start(work, "torchrun", command, env=env, per_node=per_node, prefix=args.prefix,
                             master="127.0.0.1" if args.cpu else stall_nodes.own_address())


def end(nodes, grace=30):
    """SIGTERM every entrypoint (it passes the stop to torchrun, which stops its ranks), SIGKILL after grace."""
    for node in nodes:
        if node.proc.poll() is None:
            node.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for node in nodes:
        try:
            node.wait(max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    stall_nodes.stop(nodes)


def ranks_status(nodes, args):
    """``nodeweave-entrypoint --status``'s ``ranks`` answer (asked through node 1, as a user would), or why none."""
    argv = nodes[1].proc.args[len(args.prefix.get(1, [])):]
    port = argv[argv.index("--master-port") + 1]
    master = argv[argv.index("--master-addr") + 1]
    out = subprocess.run([*stall_nodes.ENTRY, "--status", "--nnodes", "2", "--node-rank", "1", "--master-addr",
                          master, "--master-port", port], capture_output=True, text=True, timeout=60,
                         env={"PATH": os.environ["PATH"], "PYTHONPATH": str(stall_nodes.ROOT / "src")})
    try:
        return json.loads(out.stdout)["ranks"]
    except (ValueError, KeyError, TypeError):
        return f"no answer: {out.stderr.strip()[-200:]}"


def ranks_listed(nodes, args):
    """The (node, rank) pairs ``--status`` lists, or why none."""
    answer = ranks_status(nodes, args)
    return [(r["node"], r["rank"]) for r in answer["ranks"]] if isinstance(answer, dict) else answer


def straggler_case(name, job_args, args, expect_rank=1, busy=None, shared_tmpdir=False):
    """Run until node 0 names a straggler (or --name-limit s after the loop started); what it said and when."""
    nodes = start(args.out / name, ["--seconds", "3600", *job_args], args, shared_tmpdir=shared_tmpdir)
    result = {"case": name, "expect": f"rank {expect_rank} (node 1)"}
    try:
        began = wait_for(nodes, lambda: nodes[0].first("NWBENCH-START", "out") or nodes[1].first("NWBENCH-START",
                                                                                                     "out"), 240)
        if began is None:
            return dict(result, verdict="FAIL: the job never started its loop", logs=logs(nodes))
        named_at = wait_for(nodes, lambda: nodes[0].first("STRAGGLER: rank"), args.name_limit, since=began)
        if shared_tmpdir and named_at:
            result["status_ranks"] = ranks_listed(nodes, args)
        time.sleep(1)
        said = [m.groups() for m in NAMED.finditer(nodes[0].text())]
        result.update(named=bool(said), who=[f"rank {r} (node {n}, host {h})" for r, n, h, *_ in said],
                      gap=[f"{g}%: {p} ms vs {q} ms" for *_, g, p, q in said],
                      seconds_to_name=round(named_at - began, 1) if named_at else None)
        ok = said and {(int(r), int(n)) for r, n, *_ in said} == {(expect_rank, 1)} and len(said) == 1
        if shared_tmpdir:
            listed = result.get("status_ranks")
            ok = ok and isinstance(listed, list) and sorted(listed) == [(0, 0), (1, 1)]
        result["verdict"] = "ok" if ok and named_at - began <= 60 else "FAIL"
        if result["verdict"] != "ok":  # each rank's counts and device sums, the verdicts: why nothing or who
            result["status"] = ranks_status(nodes, args)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        end(nodes)
    return dict(result, logs=logs(nodes))


def healthy_case(args):
    nodes = start(args.out / "healthy", ["--seconds", str(args.healthy_s)], args)
    try:
        codes = [node.wait(args.healthy_s + 300) for node in nodes]
    finally:
        end(nodes)
    text = nodes[0].text() + nodes[1].text()
    named = sorted(set(re.findall(r"STRAGGLER[^\n]*", text)))
    ran = re.search(r"NWBENCH-DONE rank=0 steps=(\d+) median_step_ms=([\d.]+)", nodes[0].text("out"))
    ok = codes == [0, 0] and not named and "STALL" not in text and ran
    return {"case": "healthy", "expect": "nothing named", "named": bool(named), "who": named, "gap": [],
            "seconds_to_name": None, "ran_s": args.healthy_s, "steps": int(ran.group(1)) if ran else None,
            "codes": codes, "verdict": "ok" if ok else "FAIL", "logs": logs(nodes)}


def overhead(args):
    """One job of ``--rounds`` paired rounds (gpu_stragglers_job.py --overhead-rounds); rank 0's numbers."""
    job = ["--steps", "1", "--overhead-rounds", str(args.rounds), "--block", str(args.block),
           "--collectives", str(args.collectives), "--collective-kb", str(args.collective_kb),
           "--gpu-ms", str(args.step_gpu_ms), "--cpu-ms", "0" if not args.cpu else "5",
           "--overhead-budget-s", str(args.budget_s)]
    began = time.monotonic()
    nodes = start(args.out / "overhead", job, args)
    try:
        codes = [node.wait(args.budget_s + 120 if args.budget_s else 600) for node in nodes]
    finally:
        end(nodes)
    ended = re.search(r"NWBENCH-OVERHEAD-END rank=0 rounds=(\d+) of=(\d+) seconds=([\d.]+)", nodes[0].text("out"))
    rounds = [{"on": float(on), "off": float(off)} for on, off in
              re.findall(r"NWBENCH-OVERHEAD rank=0 round=\d+ on_ms=([\d.]+) off_ms=([\d.]+)", nodes[0].text("out"))]
    ratios = sorted(r["on"] / r["off"] for r in rounds if r["off"])
    per_call = sorted((r["on"] - r["off"]) * 1000 / args.collectives for r in rounds)
    return {"rounds": rounds, "codes": codes, "logs": logs(nodes), "collectives": args.collectives,
            "collective_kb": args.collective_kb, "block": args.block,
            "wall_s": round(time.monotonic() - began, 1), "loop_s": float(ended.group(3)) if ended else None,
            "rounds_asked": args.rounds,
            "us_per_collective_median": round(statistics.median(per_call), 2) if per_call else None,
            "ratio_median": round(statistics.median(ratios), 4) if ratios else None,
            "ratio_quartiles": [round(q, 4) for q in statistics.quantiles(ratios, n=4)] if len(ratios) > 1 else None,
            "step_ms_off": round(statistics.median(r["off"] for r in rounds), 3) if rounds else None}


def explain(result):
    """On a failed case: what was named, and the end of each node's log (the ranks' output is in it)."""
    print(f"  {result['case']} FAILED: named {result.get('who') or 'nobody'}; gaps {result.get('gap') or '-'}; "
          f"s to name {result.get('seconds_to_name')}", flush=True)
    if result.get("status"):
        print(f"  --status then: {json.dumps(result['status'])}")
    for node, lines in enumerate(result.get("logs") or []):
        print(f"  --- node {node}, last {len(lines)} lines of its log ---")
        for line in lines:
            print(f"    {line}")
    sys.stdout.flush()


def wait_for(nodes, found, limit, since=None):
    deadline = (since or time.monotonic()) + limit
    while time.monotonic() < deadline:
        at = found()
        if at is not None:
            return at
        if all(node.proc.poll() is not None for node in nodes):
            return found()
        time.sleep(0.5)
    return None


def logs(nodes):
    """Each node's last 60 lines, its own (err) and its ranks' output (out) as they came."""
    return [[f"{stream}: {line}" for _, stream, line in list(node.lines)][-60:] for node in nodes]


def table(results, cost):
    rows = [("case", "expect", "named?", "who", "gap (own work per collective)", "s to name", "verdict")]
    for r in results:
        rows.append((r["case"], r["expect"], "skipped" if r.get("skipped") else ("yes" if r.get("named") else "no"),
                     "; ".join((r.get("who") or []) + ([f"--status lists (node, rank) {r['status_ranks']}"]
                                                       if "status_ranks" in r else [])) or "-",
                     "; ".join(r.get("gap") or []) or "-",
                     "-" if r.get("seconds_to_name") is None else str(r["seconds_to_name"]),
                     r.get("skipped") or r["verdict"]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if cost:
        ratio = cost["ratio_median"]
        lines.append("")
        lines.append(f"overhead: step time with the rank hook on / off, median of {len(cost['rounds'])} paired "
                     f"rounds = {ratio if ratio else 'n/a (see the overhead logs in the json)'}"
                     + (f" ({(ratio - 1) * 100:+.2f}%; goal <= +1%) on a {cost['step_ms_off']} ms step"
                        if ratio else "")
                     + (f"; quartiles of the round ratios {cost['ratio_quartiles'][0]}-{cost['ratio_quartiles'][2]}"
                        " (the spread is the noise)" if cost.get("ratio_quartiles") else ""))
        lines.append(f"  {cost['collectives']} all-reduce(s) of {cost['collective_kb']} KiB a step, blocks of "
                     f"{cost['block']} steps, {len(cost['rounds'])} of {cost['rounds_asked']} rounds done "
                     f"(loop {cost['loop_s']} s, {cost['wall_s']} s with the start-up); (on - off) / collectives "
                     f"= {cost['us_per_collective_median']} us per collective (median of the rounds)")
    return "\n".join(lines)


def machine(args):
    if args.cpu:
        return {"gpus": [], "note": "CPU, gloo"}
    import torch

    try:
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip().splitlines()
    except OSError:
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    nccl = torch.cuda.nccl.version()
    return {"gpus": gpus, "torch": torch.__version__,
            "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="work folder; gpu_stragglers.json is kept here")
    parser.add_argument("--cpu", action="store_true", help="gloo on CPU (smoke check; the GPU cases are skipped)")
    parser.add_argument("--healthy-s", type=int, default=60, help="length of the healthy run (300 for the proof)")
    parser.add_argument("--name-limit", type=int, default=75, help="seconds a straggler case waits for the name")
    parser.add_argument("--rounds", type=int, default=16, help="paired rounds of the overhead measure (0: skip)")
    parser.add_argument("--gpus", default="0,1", help="the two GPUs, node 0's first (0,0: both nodes share one)")
    parser.add_argument("--collectives", type=int, default=4, help="all-reduces per step of the overhead measure "
                        "(100: an FSDP-like step)")
    parser.add_argument("--block", type=int, default=25, help="steps a block of the overhead measure (one arm of a "
                        "round)")
    parser.add_argument("--collective-kb", type=int, default=4096, help="the size of each all-reduce of the overhead "
                        "measure, KiB")
    parser.add_argument("--step-gpu-ms", type=float, default=20.0, help="matmul milliseconds a step of the overhead "
                        "measure")
    parser.add_argument("--budget-s", type=float, default=0.0, help="the overhead measure starts no round that would "
                        "end past this many seconds of its loop (0: every round); what ran is reported")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}; "
                        "none: only the overhead measure")
    args = parser.parse_args()
    if args.cases == "none":
        args.cases = ""
    args.gpus = args.gpus.split(",")
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    args.prefix = hostnames()
    began = time.monotonic()
    info = machine(args)
    print(f"machine: {info}; hostnames per node: {'yes (unshare --uts)' if args.prefix else 'no (same host name)'}",
          flush=True)
    slow_cpu = ["--slow-rank", "1", "--slow-cpu-ms", SLOW_MS]
    if args.cpu:
        slow_cpu = ["--gpu-ms", "0", "--cpu-ms", "50", *slow_cpu]
    chosen = [case for case in args.cases.split(",") if case]
    unknown = [case for case in chosen if case not in CASES]
    if unknown:
        parser.error(f"--cases: unknown case {unknown[0]!r} (of {', '.join(CASES)})")
    results = []
    for case in chosen:
        print(f"case {case} ...", flush=True)
        if args.cpu and case in GPU_ONLY:
            results.append({"case": case, "expect": "rank 1 (node 1)", "skipped": "skipped (needs GPUs)"})
            print(f"  {case}: skipped (needs GPUs)", flush=True)
            continue
        if case == "cpu_slow":
            results.append(straggler_case(case, slow_cpu, args))
        elif case == "gpu_slow":
            results.append(straggler_case(case, ["--slow-rank", "1", "--slow-gpu-ms", SLOW_MS], args))
        elif case == "ddp_gpu_slow":
            results.append(straggler_case(case, ["--ddp", "--slow-rank", "1", "--slow-gpu-ms", SLOW_MS], args))
        elif case == "shared_gpu":
            busy = subprocess.Popen([sys.executable, "-c", "import torch\na = torch.randn(8192, 8192, device='cuda')"
                                     "\nwhile True:\n    a @ a\n    torch.cuda.synchronize()"],
                                    env=dict(os.environ, CUDA_VISIBLE_DEVICES=args.gpus[1]))
            results.append(straggler_case(case, [], args, busy=busy))
        elif case == "healthy":
            results.append(healthy_case(args))
        elif case == "shared_tmpdir":
            results.append(straggler_case(case, slow_cpu, args, shared_tmpdir=True))
        else:
            parser.error(f"--cases: unknown case {case!r} ({', '.join(CASES)})")
        print(f"  {case}: {results[-1].get('skipped') or results[-1]['verdict']}", flush=True)
        if not results[-1].get("skipped") and results[-1]["verdict"] != "ok":
            explain(results[-1])
    if args.rounds:
        print("overhead ...", flush=True)
    cost = overhead(args) if args.rounds else None
    kept = {"machine": info, "cases": results, "overhead": cost, "wall_s": round(time.monotonic() - began)}

    (args.out / "gpu_stragglers.json").write_text(json.dumps(kept, indent=1))
    print()
    print(f"stragglers on {'CPU (gloo)' if args.cpu else ', '.join(info['gpus']) + ' (NCCL ' + info['nccl'] + ')'}: "
          f"two simulated nodes x 1 rank, torchrun; {round(time.monotonic() - began)} s in all")
    print(table(results, cost))
    print(f"\nevery node's log: {args.out / 'gpu_stragglers.json'}")
    failed = [r["case"] for r in results if not r.get("skipped") and r["verdict"] != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
