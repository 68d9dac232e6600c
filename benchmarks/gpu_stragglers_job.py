"""The training step of benchmarks/gpu_stragglers.py: GPU matmuls and CPU work, then collectives, one rank slowed.

Per step: ``--gpu-ms`` of matmuls queued on the GPU (calibrated at start), ``--cpu-ms`` of busy CPU work,
then ``--collectives`` all-reduces of ``--collective-kb`` (4 MiB) and ``torch.cuda.synchronize()`` (NCCL), or
the same on CPU tensors (gloo: ``--cpu``). ``--slow-rank R`` adds ``--slow-cpu-ms`` of busy CPU work and/or
``--slow-gpu-ms`` of GPU kernel time (``torch.cuda._sleep``, calibrated) to rank R's steps. Runs
``--seconds`` (or ``--steps``) and prints ``NWBENCH-START`` when the loop starts and ``NWBENCH-DONE`` with
the median step time.

``--ddp`` trains instead a small model under ``DistributedDataParallel``: an ``nn.Linear`` stack, forward,
``loss.backward()`` (the reducer all-reduces the gradients from C++, no Python collective), an
optimizer step; the batch is sized so that the step takes about ``--gpu-ms`` and the slow rank's
``--slow-gpu-ms`` of ``torch.cuda._sleep`` is queued before its forward. The stop flag rides on one
``dist.all_reduce`` every 10 steps. With ``--cpu`` the same runs on gloo (a check of the script; the
slow rank's GPU sleep is left out).

``--overhead-rounds N`` measures instead what the stall watch's rank hook adds per step: N paired rounds of
``--block`` steps each through the hooked ``dist.all_reduce`` (the probe's record, the device events) and
through the function it wraps (``__wrapped__``), the order alternating; one ``NWBENCH-OVERHEAD`` line per
round with both median step times; ``--overhead-budget-s`` stops starting rounds that would end past it (the
rounds done are printed, ``NWBENCH-OVERHEAD-END`` says how many). Needs the hook (run under the stall watch).
"""

import argparse
import datetime
import os
import statistics
import time

import torch
import torch.distributed as dist


def burn(ms):
    """Spin the CPU for ``ms`` milliseconds of wall time."""
    until = time.perf_counter() + ms / 1000
    x = 0
    while time.perf_counter() < until:
        x += 1


def gpu_timed(fn, repeat):
    """Milliseconds per call of ``fn`` on the GPU."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / repeat


def wall_timed(fn, repeat):
    """Milliseconds per call of ``fn`` on the CPU."""
    fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) * 1000 / repeat


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", action="store_true", help="gloo on CPU tensors")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: --seconds)")
    parser.add_argument("--gpu-ms", type=float, default=30.0)
    parser.add_argument("--cpu-ms", type=float, default=20.0)
    parser.add_argument("--collectives", type=int, default=1)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-cpu-ms", type=float, default=0.0)
    parser.add_argument("--slow-gpu-ms", type=float, default=0.0)
    parser.add_argument("--overhead-rounds", type=int, default=0)
    parser.add_argument("--block", type=int, default=25)
    parser.add_argument("--collective-kb", type=int, default=4096, help="the size of each all-reduce")
    parser.add_argument("--overhead-budget-s", type=float, default=0.0,
                        help="start no overhead round that would end past this many seconds (0: every round)")
    parser.add_argument("--ddp", action="store_true", help="a DDP model: the collectives come from C++")
    args = parser.parse_args()
    if args.ddp:
        return ddp(args)

    dist.init_process_group("gloo" if args.cpu else "nccl", timeout=datetime.timedelta(seconds=600))
    rank = dist.get_rank()
    device = "cpu" if args.cpu else "cuda"
    if not args.cpu:
        torch.cuda.set_device(0)
    buffers = [torch.ones(max(1, args.collective_kb * 256), device=device) for _ in range(args.collectives)]
    matmuls, a, cycles = 0, None, 0
    if not args.cpu:
        a = torch.randn(2048, 2048, device=device)
        per = gpu_timed(lambda: a @ a, 20)
        matmuls = max(1, round(args.gpu_ms / per)) if args.gpu_ms else 0
        if args.slow_gpu_ms and rank == args.slow_rank:
            cycles = int(10 ** 7 * args.slow_gpu_ms / gpu_timed(lambda: torch.cuda._sleep(10 ** 7), 3))
    slow = rank == args.slow_rank
    if args.overhead_rounds:
        return overhead(args, rank, buffers, matmuls, a)
    dist.barrier()
    os.write(1, f"NWBENCH-START rank={rank} matmuls={matmuls} sleep_cycles={cycles}\n".encode())
    began, times, step, done = time.monotonic(), [], 0, False
    while not done:
        t0 = time.perf_counter()
        if not args.steps:  # rank 0's clock decides, through the step's own all-reduce: every rank stops together
            buffers[0][0] = float(rank == 0 and time.monotonic() - began >= args.seconds)
        for _ in range(matmuls):
            a @ a
        burn(args.cpu_ms + (args.slow_cpu_ms if slow else 0))
        if cycles:
            torch.cuda._sleep(cycles)
        for buffer in buffers:
            dist.all_reduce(buffer)
        if not args.cpu:
            torch.cuda.synchronize()
        step += 1
        done = step >= args.steps if args.steps else buffers[0][0].item() > 0
        times.append(time.perf_counter() - t0)
    warm = times[len(times) // 10:] or times
    os.write(1, f"NWBENCH-DONE rank={rank} steps={step} median_step_ms={statistics.median(warm) * 1000:.3f}\n"
             .encode())
    dist.destroy_process_group()


def ddp(args):
    """Train an ``nn.Linear`` stack under DDP; rank ``--slow-rank`` queues ``--slow-gpu-ms`` more per step."""
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo" if args.cpu else "nccl", timeout=datetime.timedelta(seconds=600))
    rank = dist.get_rank()
    device = "cpu" if args.cpu else "cuda"  # --cpu: a check of this function on gloo, no slow rank
    if not args.cpu:
        torch.cuda.set_device(0)
    timed = wall_timed if args.cpu else gpu_timed
    torch.manual_seed(0)
    width = 1024  # 8 layers: 33.6 MB of gradients, ~5 buckets of 8 MB (the simulated nodes talk over sockets)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(8)]).to(device)
    model = DistributedDataParallel(model, device_ids=None if args.cpu else [0], bucket_cap_mb=8)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    batch = torch.randn(256, width, device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        model(batch).square().mean().backward()
        optimizer.step()

    per = timed(step, 5)
    batch = torch.randn(min(16384, 256 * max(1, round(args.gpu_ms / per))), width, device=device)
    per = timed(step, 5)  # one optimizer step of about --gpu-ms
    cycles = 0
    if args.slow_gpu_ms and rank == args.slow_rank and not args.cpu:
        cycles = int(10 ** 7 * args.slow_gpu_ms / gpu_timed(lambda: torch.cuda._sleep(10 ** 7), 3))
    flag = torch.zeros(1, device=device)
    dist.barrier()
    said = f"NWBENCH-START rank={rank} ddp_step_ms={per:.2f} batch={len(batch)} sleep_cycles={cycles}"
    os.write(1, f"{said} TORCH_NCCL_ENABLE_TIMING={os.environ.get('TORCH_NCCL_ENABLE_TIMING')}\n".encode())
    began, times, count = time.monotonic(), [], 0
    while True:
        t0 = time.perf_counter()
        if cycles:
            torch.cuda._sleep(cycles)
        step()
        count += 1
        if count % 10 == 0:  # rank 0's clock decides; the only Python-issued collective of the loop
            flag[0] = float(rank == 0 and time.monotonic() - began >= args.seconds)
            dist.all_reduce(flag)
            if flag.item() > 0:
                break
        if not args.cpu:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if args.steps and count >= args.steps:
            break
    warm = times[len(times) // 10:] or times
    os.write(1, f"NWBENCH-DONE rank={rank} steps={count} median_step_ms={statistics.median(warm) * 1000:.3f}\n"
             .encode())
    dist.destroy_process_group()


def overhead(args, rank, buffers, matmuls, a):
    """Paired rounds: the hooked all_reduce against the plain one it wraps, same steps, alternating order."""
    hooked = dist.all_reduce
    if not getattr(hooked, "__wrapped_by_nodeweave__", False):
        os.write(1, b"NWBENCH-OVERHEAD-ERROR the stall watch's hook is not on dist.all_reduce\n")
        return

    def block(reduce):
        times = []
        for _ in range(args.block):
            t0 = time.perf_counter()
            for _ in range(matmuls):
                a @ a
            burn(args.cpu_ms)
            for buffer in buffers:
                reduce(buffer)
            if not args.cpu:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1000

    plain = hooked.__wrapped__
    began = time.monotonic()
    block(hooked)  # warm-up: the device timer's events, NCCL's channels
    done, last = 0, time.monotonic() - began
    for i in range(args.overhead_rounds):
        if args.overhead_budget_s:  # rank 0's clock decides, through a collective: every rank stops together
            stop = torch.tensor([float(time.monotonic() - began + 1.5 * last > args.overhead_budget_s)],
                                device=buffers[0].device)
            plain(stop)
            if stop.item() > 0:
                break
        t0 = time.monotonic()
        order = (("on", hooked), ("off", plain)) if i % 2 else (("off", plain), ("on", hooked))
        got = {name: block(reduce) for name, reduce in order}
        last = time.monotonic() - t0
        done += 1
        os.write(1, f"NWBENCH-OVERHEAD rank={rank} round={i} on_ms={got['on']:.4f} off_ms={got['off']:.4f}\n"
                 .encode())
    os.write(1, f"NWBENCH-OVERHEAD-END rank={rank} rounds={done} of={args.overhead_rounds} "
             f"seconds={time.monotonic() - began:.1f}\n".encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
