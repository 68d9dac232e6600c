"""The stall watch on real GPUs with NCCL: two simulated nodes (each an entrypoint with its own GPU through
CUDA_VISIBLE_DEVICES, its own NCCL_HOSTID and TMPDIR), torchrun, one rank misbehaving.

Cases: ``sleep`` (rank 1 sleeps inside step 5), ``skip`` (rank 1 skips the all_reduce of step 5, ends its
loop one collective early and sleeps) and ``ddp`` (DistributedDataParallel; rank 1 sleeps before step 5's
backward, so rank 0 waits in the all-reduce DDP's reducer issued from C++: only torch's flight recorder counts
it). Each prints and keeps in ``--out/stall_gpu.json``: the time from the
stall's start (the rank's own line) to the report on each node, to every node's exit, the exit codes and the
report. Needs torch with CUDA and two GPUs; run from a checkout (no install needed):

    PYTHONPATH=src python3 benchmarks/stall_gpu.py --out gpu-out [--warn 10] [--timeout 20]
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stall_nodes  # noqa: E402

WORKLOAD = '''
import os, sys, time, datetime
import torch, torch.distributed as dist
case = sys.argv[1]
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=600))
rank = dist.get_rank()
torch.cuda.set_device(0)
a = torch.randn(4096, 4096, device="cuda")
if case == "ddp":
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4096, 4096).cuda(), device_ids=[0])
    for step in range(int(sys.argv[2])):
        loss = model(a).square().mean()
        if rank == 1 and step == 5:
            os.write(1, f"NODEWEAVE-STALL rank={rank} step={step}\\n".encode())
            time.sleep(600)
        loss.backward()
        model.module.weight.grad = None
        total = loss.item()
        time.sleep(0.1)
for step in range(int(sys.argv[2])):
    b = a @ a
    t = torch.ones(1 << 20, device="cuda") * (rank + 1)
    if rank == 1 and step == 5 and case == "sleep":
        os.write(1, f"NODEWEAVE-STALL rank={rank} step={step}\\n".encode())
        time.sleep(600)
    if not (rank == 1 and step == 5 and case == "skip"):
        dist.all_reduce(t)
    total = t[0].item()
    time.sleep(0.1)
if rank == 1 and case == "skip":
    os.write(1, f"NODEWEAVE-STALL rank={rank} skipped step 5\\n".encode())
    time.sleep(600)
dist.destroy_process_group()
'''


def run_case(case, out, warn, timeout):
    work = out / case
    work.mkdir(parents=True, exist_ok=True)
    (work / "gpu_stall.py").write_text(WORKLOAD)
    env = {"NODEWEAVE_STALL_WARN": str(warn), "NODEWEAVE_STALL_TIMEOUT": str(timeout), "NCCL_NVLS_ENABLE": "0",
           "NODEWEAVE_EXCHANGE_ALLOW": "address"}
    per_node = {i: {"CUDA_VISIBLE_DEVICES": str(i), "NCCL_HOSTID": f"simnode{i}"} for i in (0, 1)}
    steps = "40" if case == "skip" else "100000"
    nodes = stall_nodes.start(work, "torchrun", ["gpu_stall.py", case, steps], env=env, per_node=per_node,
                              master=stall_nodes.own_address())
    try:
        codes = [node.wait(timeout + warn + 240) for node in nodes]
    finally:
        stall_nodes.stop(nodes)
    began = nodes[1].first("NODEWEAVE-STALL", "out")
    result = {"case": case, "codes": codes, "warn_s": warn, "timeout_s": timeout,
              "report_after_s": [round(n.first("STALL:") - began, 2) if began and n.first("STALL:") else None
                                 for n in nodes],
              "exit_after_s": [round(n.ended - began, 2) if began else None for n in nodes],
              "node0_log": nodes[0].text().splitlines()[-60:], "node1_log": nodes[1].text().splitlines()[-60:]}
    print(f"{case}: exit codes {codes}; report {result['report_after_s']} s and exit {result['exit_after_s']} s "
          f"after the stall began (stall_warn {warn} s, stall_timeout {timeout} s)", flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--warn", type=int, default=10)
    parser.add_argument("--timeout", type=int, default=20)
    parser.add_argument("--cases", default="sleep,skip,ddp")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()
    import torch

    results = {"gpus": gpu, "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
               "cases": []}
    for case in args.cases.split(","):
        results["cases"].append(run_case(case, args.out, args.warn, args.timeout))
        (args.out / "stall_gpu.json").write_text(json.dumps(results, indent=1))
    for case in results["cases"]:
        print(f"--- {case['case']}: node 0")
        print("\n".join(line for line in case["node0_log"] if "nodeweave-entrypoint" in line))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    sys.exit(main())
