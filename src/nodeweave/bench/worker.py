"""The collective benchmark that runs in every process under torchrun.

It is started the way training is (``nodeweave-entrypoint`` execs torchrun,
torchrun runs this file), so it sees exactly the environment a training job
would. For each operation and size: warm-up iterations, then timed ones
(CUDA events on GPUs, ``perf_counter`` around a barrier on CPU); the time is
the slowest rank's mean. A separate call on patterned data then checks the
result element by element, so a fast but wrong transport cannot pass.
Rank 0 writes one JSON document to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import time

import torch
import torch.distributed as dist

from nodeweave.bench.options import (DEFAULT_SIZES, DTYPES, OPS, bandwidths, measured_bytes, measured_sizes,
                                     parse_ops, parse_sizes)

SCHEMA = "nodeweave.bench.run/1"
_PATTERN = 7  # element i carries i % 7: a chunk in the wrong place shows up


def _all_gather(output, tensor):
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    gather(output, tensor)


def _reduce_scatter(output, tensor):
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    scatter(output, tensor)


class Collective:
    """Buffers and expected results for one operation at one total size."""

    def __init__(self, op, nbytes, dtype, device, rank, nranks):
        self.op, self.rank, self.nranks = op, rank, nranks
        item = torch.tensor([], dtype=dtype).element_size()
        # nccl-tests rounds the count down so the array splits evenly over ranks (options.measured_bytes).
        self.nbytes = measured_bytes(nbytes, item, nranks)
        self.count = self.nbytes // item
        chunk = self.count // nranks
        sizes = {"all_reduce": (self.count, self.count), "all_gather": (chunk, self.count),
                 "reduce_scatter": (self.count, chunk)}[op]
        self.input = torch.zeros(sizes[0], dtype=dtype, device=device)
        self.output = self.input if op == "all_reduce" else torch.zeros(sizes[1], dtype=dtype, device=device)

    def run(self):
        if self.op == "all_reduce":
            dist.all_reduce(self.input)
        elif self.op == "all_gather":
            _all_gather(self.output, self.input)
        else:
            _reduce_scatter(self.output, self.input)

    def check(self):
        """Run once on patterned data; return (elements wrong, max abs error) on this rank."""
        n, r, device = self.nranks, self.rank, self.input.device
        chunk = self.count // n
        if self.op == "all_gather":
            index = torch.arange(r * chunk, (r + 1) * chunk, device=device)
            self.input.copy_(index % _PATTERN + r)
            index = torch.arange(self.count, device=device)
            expected = index % _PATTERN + index // chunk
        else:
            index = torch.arange(self.count, device=device)
            self.input.copy_(index % _PATTERN + r + 1)
            expected = n * (index % _PATTERN) + n * (n + 1) // 2
            if self.op == "reduce_scatter":
                expected = expected[r * chunk:(r + 1) * chunk]
        self.run()
        error = (self.output.double() - expected.double()).abs()
        tolerance = float(torch.finfo(self.output.dtype).eps) * float(expected.max()) if self.output.is_floating_point() else 0.0
        wrong = int((error > tolerance).sum())
        return wrong, float(error.max())


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_collective(coll, warmup, iters, device):
    """Mean seconds per call on this rank, after warm-up."""
    for _ in range(warmup):
        coll.run()
    _sync(device)
    dist.barrier()
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            coll.run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0 / iters
    begin = time.perf_counter()
    for _ in range(iters):
        coll.run()
    return (time.perf_counter() - begin) / iters


def _reduce_max(values, device):
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def _reduce_sum(value, device):
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor)
    return int(tensor.item())


def _setup(backend):
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise SystemExit("nodeweave bench: --backend nccl needs a CUDA/ROCm GPU, and torch sees none")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    return backend, device


def _describe(backend, device):
    nccl = None
    if backend == "nccl":
        version = torch.cuda.nccl.version()
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    return {
        "backend": backend,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "nccl": nccl,
        "world_size": dist.get_world_size(),
        "nnodes": int(os.environ.get("GROUP_WORLD_SIZE", "0")) or None,
        "host": socket.gethostname(),
        # What small collectives are sensitive to: the launcher's OMP_NUM_THREADS and torch's resulting pool.
        "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "torch": torch.get_num_threads()},
        "env": {k: v for k, v in sorted(os.environ.items())
                if k.startswith(("NCCL_", "GLOO_", "RCCL_", "TORCH_NCCL_", "CUDA_VISIBLE", "NODEWEAVE_"))},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nodeweave.bench.worker", description=__doc__.split("\n")[0])
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--sizes", default=None, help="default: by backend " + str(DEFAULT_SIZES))
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    parser.add_argument("--out", required=True, help="JSON file rank 0 writes")
    args = parser.parse_args(argv)

    backend, device = _setup(args.backend)
    rank, nranks = dist.get_rank(), dist.get_world_size()
    sizes = parse_sizes(args.sizes or DEFAULT_SIZES[backend])
    if args.sizes:  # two asked sizes measured as one: refused, as the driver refuses them where it knows the ranks
        from nodeweave.errors import UsageError

        try:
            measured_sizes(sizes, args.dtype, nranks, args.sizes)
        except UsageError as err:
            raise SystemExit(f"nodeweave bench: {err}") from None
    else:  # the default range: each size once, as measured
        sizes = sorted({measured_bytes(size, DTYPES[args.dtype], nranks) for size in sizes})
    dtype = getattr(torch, args.dtype)
    results = []
    for op in parse_ops(args.ops):
        for nbytes in sizes:
            coll = Collective(op, nbytes, dtype, device, rank, nranks)
            seconds = time_collective(coll, args.warmup, args.iters, device)
            wrong, error = coll.check()
            seconds, error = _reduce_max([seconds, error], device)
            wrong = _reduce_sum(wrong, device)
            algbw, busbw = bandwidths(op, coll.nbytes, seconds, nranks)
            results.append({"op": op, "bytes": coll.nbytes, "count": coll.count, "time_us": seconds * 1e6,
                            "algbw_gbps": algbw, "busbw_gbps": busbw, "wrong": wrong, "max_abs_error": error})
            if rank == 0:
                print(f"{op:>15} {coll.nbytes:>12} B {seconds * 1e6:>11.1f} us {algbw:>8.2f} {busbw:>8.2f} GB/s"
                      f"  wrong={wrong}", flush=True)
            del coll
            if device.type == "cuda":
                torch.cuda.empty_cache()
    report = {"schema": SCHEMA, **_describe(backend, device), "dtype": args.dtype, "warmup": args.warmup,
              "iters": args.iters, "results": results, "correct": all(r["wrong"] == 0 for r in results)}
    if rank == 0:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if report["correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
