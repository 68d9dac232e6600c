"""The program every node runs under torchrun for ``nodeweave check`` (one process per node).

Started like training (``nodeweave-entrypoint --mode run`` execs torchrun,
torchrun runs ``-m nodeweave.check.worker``), so the process group uses the
job's backend, interface and NCCL/Gloo variables. In order: the node's
facts; its probes (CPU in turns among nodes on one machine, so they do not
measure each other; GPUs at once); the pair rounds; what is close to the
line measured again; one ring all-reduce. Rank 0 prints the whole document
on one line after ``MARK``; the workstation judges it (``verdict``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import threading
import time

import torch
import torch.distributed as dist

from nodeweave.check import MARK, SCHEMA, probes
from nodeweave.check.facts import node_facts
from nodeweave.check.gpu_facts import dcgm_diag, nvidia_smi
from nodeweave.check.vendor.amd_smi import amd_smi
from nodeweave.entrypoint.detection.xid import node_xids
from nodeweave.check.links import CONFIRM_STEPS, link_values, references, suspects
from nodeweave.check.rounds import machines, partner, schedule
from nodeweave.check.peers import to_repeat

DEFAULT_BYTES = {"gloo": 4 << 20, "nccl": 64 << 20}
ALLREDUCE_BYTES = {"gloo": 16 << 20, "nccl": 256 << 20}
CPU_SECONDS = 0.1  # one CPU sample
CPU_PASSES = 3  # interleaved samples per node in one CPU stage


def say(text: str) -> None:
    print(f"check: {text}", flush=True)


def setup(backend: str, timeout: float):
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    limit = datetime.timedelta(seconds=timeout)
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=limit, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=limit)
    return backend, device


def gather(value):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def decide(value):
    """Rank 0's decision, known to every rank."""
    box = [value if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def cpu_in_turns(boot_ids, samples, passes: int = CPU_PASSES) -> None:
    """``passes`` CPU samples of every rank, one per pass; ranks on one machine (one boot id) take
    turns, so they do not measure each other, and a pass is short, so load elsewhere touches a pass's
    samples alike."""
    rank, world = dist.get_rank(), dist.get_world_size()
    turn = {r: [q for q in range(world) if boot_ids[q] == boot_ids[r]].index(r) for r in range(world)}
    for _ in range(passes):
        for step in range(max(turn.values()) + 1):
            if turn[rank] == step:
                speed, share = probes.cpu_gflops(CPU_SECONDS)
                samples.setdefault("cpu_gflops", []).append(round(speed, 3))
                samples.setdefault("cpu_share", []).append(round(share, 3))
            dist.barrier()


def gpu_probes(samples, addresses=None, vendor="nvidia") -> dict:
    """Every visible GPU's matmul and copy; nvidia-smi (amd-smi on ROCm) read while they run (throttling
    shows under load)."""
    found = {}
    tool = amd_smi if vendor == "amd" else nvidia_smi
    reader = threading.Thread(target=lambda: found.update(tool(addresses)), daemon=True)
    reader.start()
    flops = [probes.gpu_tflops(torch.device("cuda", i)) for i in range(torch.cuda.device_count())]
    copies = [probes.gpu_mem_gbps(torch.device("cuda", i)) for i in range(torch.cuda.device_count())]
    reader.join(timeout=60)
    samples.setdefault("gpu_tflops", []).append(round(min(flops), 2))
    samples.setdefault("gpu_mem_gbps", []).append(round(min(copies), 1))
    samples.setdefault("per_gpu", []).append({"tflops": [round(f, 2) for f in flops],
                                             "mem_gbps": [round(c, 1) for c in copies]})
    return found


def node_stage(args, device, boot_ids, addresses, vendor):
    """Every node's probes in passes; while a node is near the line, more passes of every node
    (``repeats`` at most), so the verdict compares figures taken side by side."""
    samples, smi = {}, {"tool": None, "gpus": []}
    cpu_in_turns(boot_ids, samples)
    if device.type == "cuda":
        smi = gpu_probes(samples, addresses, vendor)
        gpu_probes(samples)
    repeated = {"cpu_gflops": [], "gpu": []}
    for _ in range(args.repeats):
        records = gather(samples)
        near = {metric: to_repeat({r: s.get(metric, []) for r, s in enumerate(records) if s.get(metric)},
                                  args.threshold) for metric in ("cpu_gflops", "gpu_tflops", "gpu_mem_gbps")}
        again = decide({"cpu_gflops": near["cpu_gflops"], "gpu": sorted(set(near["gpu_tflops"] + near["gpu_mem_gbps"]))})
        if not any(again.values()):
            break
        for key, ranks in again.items():
            repeated[key] = sorted(set(repeated[key]) | set(ranks))
        if again["cpu_gflops"]:
            cpu_in_turns(boot_ids, samples)
        if again["gpu"] and device.type == "cuda":
            gpu_probes(samples)
            dist.barrier()
    return samples, smi, repeated


def measure(round_, nbytes, seconds, device, results) -> None:
    rank = dist.get_rank()
    peer = partner(round_, rank)
    if peer is not None:
        low = rank < peer
        forward = probes.stream(peer, low, nbytes, device, seconds)
        back = probes.stream(peer, not low, nbytes, device, seconds)
        latency = probes.ping_pong(peer, low, device)
        pair = (min(rank, peer), max(rank, peer))
        if low:
            results.append({"pair": pair, "forward_gbps": forward, "latency_us": latency})
        else:
            results.append({"pair": pair, "back_gbps": back})
    dist.barrier()


def merge(per_rank) -> dict:
    links = {}
    for results in per_rank:
        for item in results:
            link = links.setdefault(tuple(item["pair"]), {"pair": list(item["pair"]), "forward_gbps": [],
                                                            "back_gbps": [], "latency_us": []})
            for key in ("forward_gbps", "back_gbps", "latency_us"):
                if item.get(key) is not None:
                    link[key].append(round(item[key], 4 if key != "latency_us" else 1))
    return links


def link_stage(args, device, nbytes, where):
    """One pass of the pair rounds (each round in turns where pairs would share a machine); while a link
    is near the line, another pass of every link (``repeats`` at most), so each link is judged against
    the others of the same pass."""
    plan, results, passes = schedule(dist.get_world_size(), where), [], 1

    def one_pass():
        for round_ in plan:
            for turn in round_:
                measure(turn, nbytes, args.seconds, device, results)

    one_pass()
    for _ in range(args.repeats):
        links = merge(gather(results))
        series = {pair: [min(f, b) for f, b in zip(l["forward_gbps"], l["back_gbps"])] for pair, l in links.items()}
        if not decide(bool(to_repeat(series, args.threshold)) if len(series) > 1 else False):
            break
        passes += 1
        one_pass()
    return list(merge(gather(results)).values()), plan, passes


def confirm_stage(args, device, nbytes, links) -> list:
    """Each link slow pass by pass measured again alone, then its reference alone (order alternating,
    ``CONFIRM_STEPS`` times): nothing else runs beside either, so load on a busy machine cannot single
    one of them out for long; the verdict names the suspect only if it stays below the line each step."""
    plan = decide(references(sorted(suspects(link_values(links), args.threshold)),
                             sorted(tuple(l["pair"]) for l in links)))
    out = []
    for pair, reference in sorted(plan.items()):
        if reference is None:
            continue
        results = []
        for step in range(CONFIRM_STEPS):
            for one in ((pair, reference) if step % 2 == 0 else (reference, pair)):
                measure([one], nbytes, args.seconds, device, results)
        merged = merge(gather(results))
        figures = {key: [min(f, b) for f, b in zip(merged[key]["forward_gbps"], merged[key]["back_gbps"])]
                   for key in (pair, reference)}
        out.append({"pair": list(pair), "reference": list(reference), "pair_gbps": figures[pair],
                    "reference_gbps": figures[reference]})
    return out


def allreduce_stage(backend, device, nbytes) -> dict:
    """One ring all-reduce, timed and checked the way ``nodeweave bench`` does it."""
    from nodeweave.bench.options import bandwidths
    from nodeweave.bench.worker import Collective, time_collective

    world = dist.get_world_size()
    coll = Collective("all_reduce", nbytes, torch.float32, device, dist.get_rank(), world)
    seconds = time_collective(coll, 2, 5, device)
    wrong, _ = coll.check()
    timing = torch.tensor([seconds, float(wrong)], dtype=torch.float64, device=device)
    dist.all_reduce(timing, op=dist.ReduceOp.MAX)
    seconds, wrong = timing.tolist()
    algbw, busbw = bandwidths("all_reduce", coll.nbytes, seconds, world)
    return {"bytes": coll.nbytes, "time_us": round(seconds * 1e6, 1), "algbw_gbps": round(algbw, 4),
            "busbw_gbps": round(busbw, 4), "correct": wrong == 0}


def describe(backend, device) -> dict:
    nccl = None
    if backend == "nccl":
        version = torch.cuda.nccl.version()
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    return {"backend": backend, "torch": torch.__version__, "nccl": nccl,
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"}


def run(args) -> dict:
    clock = {"start": time.monotonic()}
    backend, device = setup(args.backend, args.timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    facts = node_facts(os.environ, args.workspace)
    vendor = facts.get("gpu_vendor")
    dcgm = dcgm_diag() if device.type == "cuda" and vendor != "amd" else None
    xid = node_xids(facts.get("gpu_pci") or None) if vendor == "nvidia" else None
    boot_ids = gather(facts.get("boot_id") or f"rank-{rank}")
    where = machines(boot_ids, gather(os.environ.get("NCCL_HOSTID", "")))
    clock["facts"] = time.monotonic()
    say(f"node {rank} of {world}: facts read; probing ({backend})")
    samples, smi, node_again = node_stage(args, device, boot_ids, facts.get("gpu_pci"), vendor)
    clock["probes"] = time.monotonic()
    nbytes = args.bytes or DEFAULT_BYTES[backend]
    links, plan, link_passes = link_stage(args, device, nbytes, where) if world > 1 else ([], [], 0)
    confirmations = confirm_stage(args, device, nbytes, links) if world > 2 else []
    clock["links"] = time.monotonic()
    allreduce = allreduce_stage(backend, device, args.allreduce_bytes or ALLREDUCE_BYTES[backend]) if world > 1 else None
    clock["allreduce"] = time.monotonic()
    node = {"node": rank, "group_rank": int(os.environ.get("GROUP_RANK", rank)), "facts": facts,
            "samples": {k: v for k, v in samples.items() if k != "per_gpu"}, "per_gpu": samples.get("per_gpu", []),
            "gpus": smi.get("gpus", []), "gpu_tool": {k: v for k, v in smi.items() if k != "gpus"}, "dcgm": dcgm,
            "xid": xid}
    nodes = gather(node)
    stages = {name: round(clock[name] - clock[before], 3) for before, name in
              (("start", "facts"), ("facts", "probes"), ("probes", "links"), ("links", "allreduce"))}
    return {"schema": SCHEMA, **describe(backend, device), "world": world, "threshold": args.threshold,
            "repeats": args.repeats, "message_bytes": nbytes, "nodes": sorted(nodes, key=lambda n: n["node"]),
            "links": sorted(links, key=lambda l: l["pair"]),
            "rounds": [sorted(p for turn in round_ for p in turn) for round_ in plan], "turns": plan,
            "machines": [sorted(keys) for keys in where], "confirmations": confirmations,
            "repeated": {"nodes": node_again, "link_passes": link_passes}, "allreduce": allreduce, "stage_seconds": stages}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nodeweave.check.worker", description=__doc__.split("\n")[0])
    parser.add_argument("--threshold", type=float, default=0.25, help="fraction below the peers' median")
    parser.add_argument("--repeats", type=int, default=2, help="extra samples of what is close to the line")
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    parser.add_argument("--bytes", type=int, default=0, help="point-to-point message size (0: by backend)")
    parser.add_argument("--seconds", type=float, default=0.25, help="time per direction of a link")
    parser.add_argument("--allreduce-bytes", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a collective may wait")
    parser.add_argument("--workspace", default=os.getcwd(), help="where disk free is measured")
    args = parser.parse_args(argv)
    document = run(args)
    if dist.get_rank() == 0:
        print(MARK + json.dumps(document, sort_keys=True), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
