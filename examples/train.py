"""A small real training job: a two-layer regression model trained with DDP on synthetic data.

It is what the example spec (nodeweave.yaml) runs, so a first multi-node run
needs nothing else: the entrypoint starts it under torchrun, deepspeed or
accelerate, it joins the process group (NCCL on GPUs, gloo on CPU), trains a
few steps on data every rank generates from its own seed, and prints one line
per logged step and a final summary line per rank::

    [rank 0/4 node 0] step 10/20 loss 0.4127 samples/s 8531.2
    [rank 0/4 node 0] done: world_size=4 backend=gloo final_loss=0.1032 ok

The last line says ``ok`` only when every rank holds identical weights after
training (DDP kept them in sync) and the world size matches what the launcher
promised (``WORLD_SIZE``), so a mis-wired job fails loudly. ``--expect-world
N`` also checks the world size against a number you know.
"""

import argparse
import gc
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--expect-world", type=int, default=0, help="fail unless the world has this many ranks")
    parser.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)  # deepspeed
    return parser.parse_args(argv)


def setup():
    """Join the process group the launcher prepared; the device this rank trains on."""
    use_cuda = torch.cuda.is_available()
    backend = "nccl" if use_cuda else "gloo"
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if use_cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend)
    return backend, device


def synthetic_batch(generator, batch, width, device):
    """y = sin(x . w*) + noise: smooth enough that a few steps visibly lower the loss."""
    x = torch.randn(batch, width, generator=generator)
    target = torch.sin(x.sum(dim=1, keepdim=True) / width ** 0.5) + 0.01 * torch.randn(batch, 1, generator=generator)
    return x.to(device), target.to(device)


def weights_agree(model, device):
    """True when every rank holds the same parameters (the max of a checksum equals its min)."""
    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1).to(device)
    low, high = checksum.clone(), checksum.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    return bool(torch.isclose(low, high, rtol=0, atol=1e-9).item())


def main(argv=None):
    args = parse_args(argv)
    backend, device = setup()
    rank, world = dist.get_rank(), dist.get_world_size()
    node = os.environ.get("NODE_RANK", os.environ.get("GROUP_RANK", "?"))
    tag = f"[rank {rank}/{world} node {node}]"
    torch.manual_seed(0)  # the same initial weights everywhere; DDP also broadcasts rank 0's
    width = 32
    model = nn.Sequential(nn.Linear(width, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 1)).to(device)
    model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    generator = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard of the data
    print(f"{tag} host {socket.gethostname()} backend {backend} device {device}", flush=True)
    started, loss = time.perf_counter(), None
    for step in range(1, args.steps + 1):
        x, target = synthetic_batch(generator, args.batch_size, width, device)
        loss = nn.functional.mse_loss(model(x), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % args.log_every == 0 or step == args.steps:
            rate = step * args.batch_size * world / (time.perf_counter() - started)
            print(f"{tag} step {step}/{args.steps} loss {loss.item():.4f} samples/s {rate:.1f}", flush=True)
    promised = int(os.environ.get("WORLD_SIZE", world))
    problems = []
    if world != promised:
        problems.append(f"world size {world} but WORLD_SIZE={promised}")
    if args.expect_world and world != args.expect_world:
        problems.append(f"world size {world} but --expect-world {args.expect_world}")
    if not weights_agree(model.module, device):
        problems.append("ranks hold different weights")
    verdict = "ok" if not problems else "FAILED: " + "; ".join(problems)
    print(f"{tag} done: world_size={world} backend={backend} final_loss={loss.item():.4f} {verdict}", flush=True)
    dist.barrier()  # leave together: gloo aborts a rank whose peer tears its connections down first
    # DDP's reducer holds the process group: free it now, or the group outlives destroy_process_group
    # until interpreter shutdown, where gloo's threads abort the rank ("terminate called ...", exit -6).
    del model, optimizer, loss
    gc.collect()
    dist.destroy_process_group()
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
