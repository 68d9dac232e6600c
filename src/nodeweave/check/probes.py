"""The short measurements, in torch: CPU and GPU matmul, GPU memory copy, point-to-point streams.

Each probe runs for a fixed, short time rather than a fixed amount of work,
so a slow node costs seconds, not minutes. GPU timings use CUDA events; CPU
ones ``perf_counter``. The point-to-point stream sizes its message count from
one timed message, so a shaped 100 Mb/s link and a 400 Gb/s one both take
about ``seconds``; the receiver's acknowledgement ends the sender's clock.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

CPU_MATMUL_N = 256
GPU_MATMUL_N = 8192
GPU_COPY_BYTES = 1 << 30


def cpu_gflops(seconds: float = 0.1) -> "tuple[float, float]":
    """One thread's float32 matmul: (GFLOP per CPU-second it got, the share of the wall time it got).

    The first is the CPU's speed, which load elsewhere hardly moves (measured here: within 2% at a load
    average of 12 on 2 cores); one thread, because OpenMP threads spin while they wait for each other
    and the CPU time they burn doing so is no work. The second is how much of a CPU the node had; any
    load on the machine moves it, so it is reported, not judged."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        a, b = torch.rand(CPU_MATMUL_N, CPU_MATMUL_N), torch.rand(CPU_MATMUL_N, CPU_MATMUL_N)
        torch.mm(a, b)
        count, begin, cpu_begin = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - begin < seconds:
            torch.mm(a, b)
            count += 1
        elapsed, cpu = time.perf_counter() - begin, max(time.process_time() - cpu_begin, 1e-6)
    finally:
        torch.set_num_threads(threads)
    return 2.0 * CPU_MATMUL_N ** 3 * count / 1e9 / cpu, min(1.0, cpu / elapsed)


def _cuda_time(device, work, iters: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.device(device):
        start.record()
        for _ in range(iters):
            work()
        end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0


def gpu_tflops(device, iters: int = 20) -> float:
    """Dense BF16 matmul, N = 8192, after a warm-up."""
    a = torch.randn(GPU_MATMUL_N, GPU_MATMUL_N, device=device, dtype=torch.bfloat16)
    b = torch.randn(GPU_MATMUL_N, GPU_MATMUL_N, device=device, dtype=torch.bfloat16)
    out = torch.empty_like(a)
    _cuda_time(device, lambda: torch.mm(a, b, out=out), 3)
    seconds = _cuda_time(device, lambda: torch.mm(a, b, out=out), iters)
    return 2.0 * GPU_MATMUL_N ** 3 * iters / seconds / 1e12


def gpu_mem_gbps(device, iters: int = 20) -> float:
    """Device-to-device copy of 1 GiB: bytes read plus bytes written per second."""
    src = torch.empty(GPU_COPY_BYTES, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    _cuda_time(device, lambda: dst.copy_(src), 3)
    seconds = _cuda_time(device, lambda: dst.copy_(src), iters)
    return 2.0 * GPU_COPY_BYTES * iters / seconds / 1e9


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def stream(peer: int, sending: bool, nbytes: int, device, seconds: float, max_count: int = 64) -> "float | None":
    """One direction of a link: the sender's GB/s (None on the receiving side)."""
    data = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    control = torch.zeros(1, dtype=torch.int64, device=device)
    for _ in range(2):  # a warm-up message (connections, buffers), then one that sizes the count
        begin = time.perf_counter()
        if sending:
            dist.send(data, peer)
            dist.recv(control, peer)
            _sync(device)
        else:
            dist.recv(data, peer)
            dist.send(control, peer)
        once = time.perf_counter() - begin
    if sending:
        control.fill_(max(1, min(max_count, int(seconds / max(once, 1e-6)))))
        dist.send(control, peer)
    else:
        dist.recv(control, peer)
    count = int(control.item())
    begin = time.perf_counter()
    for _ in range(count):
        (dist.send if sending else dist.recv)(data, peer)
    if sending:
        dist.recv(control, peer)
        _sync(device)
        return count * data.numel() * 4 / (time.perf_counter() - begin) / 1e9
    dist.send(control, peer)
    _sync(device)
    return None


def ping_pong(peer: int, first: bool, device, iters: int = 20) -> "float | None":
    """Half the median round trip of a one-element message, in microseconds (the first side's)."""
    token = torch.zeros(1, dtype=torch.float32, device=device)
    trips = []
    for _ in range(iters + 2):
        begin = time.perf_counter()
        if first:
            dist.send(token, peer)
            dist.recv(token, peer)
            _sync(device)
        else:
            dist.recv(token, peer)
            dist.send(token, peer)
        trips.append(time.perf_counter() - begin)
    trips = sorted(trips[2:])
    return trips[len(trips) // 2] / 2 * 1e6 if first else None
