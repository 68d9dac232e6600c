"""A tiny gloo all-reduce, the training script of the end-to-end tests.

Every rank contributes rank + 1, so the sum over a world of W is W(W+1)/2;
each rank prints one ``NODEWEAVE-E2E`` line with what it saw and the epoch
times of its start, of ``import torch``, of the rendezvous and of the first
all-reduce (the engine benchmark splits the start-up time with them).
``--steps N --interval S`` keeps it all-reducing, for the fault tests;
``--min-world W`` keeps it all-reducing until the world has W ranks (an
elastic job waiting for a node to join; torchrun then restarts the workers).
``--fail-rank R --fail-step S`` makes rank R exit 1 at step S;
``--stall-ranks 0,1 --stall-step S --stall-for T`` makes those ranks sleep T
seconds at step S, as a rank stuck in a long step or a hung collective does —
nothing but the heartbeat tells them a peer is gone (the heartbeat test);
``--expect-world W`` fails unless the world has W ranks (uneven node counts).
The stall watch's cases: ``--fifo-rank R --fifo PATH`` makes rank R block
reading a FIFO nobody writes at --stall-step; ``--skip-rank R`` makes rank R
skip the all-reduce of --stall-step (it ends its loop one collective early and
sleeps --stall-for seconds while the others wait in their last one); ``--save-rank R --save-for T`` makes
rank R save checkpoints (torch.save) for T seconds at --stall-step while the
others wait at a barrier; ``--work S`` spends S seconds per step before the
all-reduce (``--slow-rank R --slow-factor F``: rank R spends F x S); ``--burn-ms M`` spends M ms of
the process's own CPU time per step (a node whose CPUs are cut takes longer to), and
``--stop-self R`` makes rank R SIGSTOP itself at --stall-step. ``--ddp`` does each step's
all-reduce through DistributedDataParallel's reducer instead (issued from C++ during backward; the sum is
read back from the averaged gradient).
Works under torchrun, deepspeed (--local_rank) and accelerate.
"""

import time

STARTED = time.time()

import argparse  # noqa: E402
import datetime  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

IMPORTED = time.time()


def burn(cpu_s) -> None:
    """Spend ``cpu_s`` seconds of this process's CPU time (wall time grows when its CPUs are limited)."""
    until = time.process_time() + cpu_s
    x = 0
    while time.process_time() < until:
        for i in range(2000):
            x += i * i


def ddp_step(ddp, rank, world) -> float:
    """One step through DDP: each rank's input is rank + 1, so the averaged weight gradient is 4 (W + 1) / 2."""
    ddp(torch.full((4, 8), float(rank + 1))).sum().backward()
    grad = ddp.module.weight.grad
    total = grad[0, 0].item() * world / 4
    grad.zero_()
    return total


def special_step(args, rank) -> None:
    """The stall watch's cases at --stall-step (see the module docstring)."""
    if rank == args.fifo_rank:
        os.write(1, f"NODEWEAVE-STALL rank={rank} reads {args.fifo}\n".encode())
        with open(args.fifo) as fifo:  # blocks: nobody opens it for writing
            fifo.read()
    if rank == args.stop_self:
        os.write(1, f"NODEWEAVE-STALL rank={rank} stops itself at={time.time():.3f}\n".encode())
        os.kill(os.getpid(), 19)  # SIGSTOP
    if args.save_for:
        if rank == args.save_rank:
            os.write(1, f"NODEWEAVE-SAVE rank={rank} for {args.save_for:g}s\n".encode())
            until = time.time() + args.save_for
            # 4 MiB per save into memory: nearly all the time inside torch.save, as in one real checkpoint,
            # and rarely parked at the loop's own line (where a rank thread taking the GIL stops it)
            while time.time() < until:
                torch.save({"w": torch.zeros(1024, 1024)}, io.BytesIO())
        dist.barrier()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--interval", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="gloo collective timeout, seconds")
    parser.add_argument("--min-world", type=int, default=0, help="all-reduce until the world is this large")
    parser.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 1 at --fail-step")
    parser.add_argument("--fail-step", type=int, default=0)
    parser.add_argument("--stall-ranks", default="", help="comma list of ranks that sleep at --stall-step")
    parser.add_argument("--stall-step", type=int, default=0)
    parser.add_argument("--stall-for", type=float, default=0.0)
    parser.add_argument("--expect-world", type=int, default=0, help="exit 1 unless the world has this many ranks")
    parser.add_argument("--fifo-rank", type=int, default=-1)
    parser.add_argument("--fifo", default="")
    parser.add_argument("--skip-rank", type=int, default=-1)
    parser.add_argument("--save-rank", type=int, default=-1)
    parser.add_argument("--save-for", type=float, default=0.0)
    parser.add_argument("--work", type=float, default=0.0)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-factor", type=float, default=1.0)
    parser.add_argument("--stop-self", type=int, default=-1)
    parser.add_argument("--burn-ms", type=float, default=0.0)
    parser.add_argument("--ddp", action="store_true", help="all-reduce through DDP's reducer (C++)")
    args, _unknown = parser.parse_known_args()  # deepspeed adds --local_rank=N

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    joined = time.time()
    rank, world = dist.get_rank(), dist.get_world_size()
    total = None
    first = None
    step = 0
    ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1)) if args.ddp else None
    if args.expect_world and world != args.expect_world:
        print(f"NODEWEAVE-E2E-WRONG-WORLD rank={rank} world={world} expected={args.expect_world}", flush=True)
        return 1
    while step < args.steps or world < args.min_world:
        if rank == args.fail_rank and step == args.fail_step:
            os.write(2, f"NODEWEAVE-FAIL rank={rank} at={time.time():.3f}: failing on purpose\n".encode())
            os._exit(1)
        if str(rank) in args.stall_ranks.split(",") and step == args.stall_step:
            os.write(1, f"NODEWEAVE-STALL rank={rank} for {args.stall_for:g}s at={time.time():.3f}\n".encode())
            time.sleep(args.stall_for)
        if step == args.stall_step:
            special_step(args, rank)
        if args.work:
            time.sleep(args.work * (args.slow_factor if rank == args.slow_rank else 1.0))
        if args.burn_ms:
            burn(args.burn_ms / 1000)
        tensor = torch.tensor([float(rank + 1)])
        if ddp is not None:
            total = ddp_step(ddp, rank, world)
        elif not (rank == args.skip_rank and step == args.stall_step):
            dist.all_reduce(tensor)
        if ddp is None:
            total = tensor.item()
        if first is None:
            first = time.time()
        if args.interval:
            os.write(1, f"NODEWEAVE-STEP rank={rank} world={world} step={step}\n".encode())
            time.sleep(args.interval)
        step += 1
    if rank == args.skip_rank:
        os.write(1, f"NODEWEAVE-SKIPPED rank={rank} step={args.stall_step}\n".encode())
        time.sleep(args.stall_for)  # one collective short, alive elsewhere (gloo would fail its peers at exit)
        os._exit(0)
    record = {
        "rank": rank, "world": world, "sum": total, "expected": world * (world + 1) / 2,
        "host": socket.gethostname(), "local_rank": int(os.environ.get("LOCAL_RANK", "-1")),
        "node_rank": int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "-1"))),
        "started": STARTED, "imported": IMPORTED, "joined": joined, "first_allreduce": first,
    }
    # one write(2) per line: ranks of a node share stdout, and a pipe keeps writes under 4 KiB whole
    sys.stdout.flush()
    os.write(1, ("NODEWEAVE-E2E " + json.dumps(record, sort_keys=True) + "\n").encode())
    dist.barrier()
    dist.destroy_process_group()
    return 0 if total == record["expected"] else 1


if __name__ == "__main__":
    sys.exit(main())
