"""A training loop that saves and resumes its own checkpoints: recovery's workload (tests, benchmarks/gpu_recovery.py).

Each step all-reduces a tensor (gloo on CPU, NCCL with ``--cuda``) and sleeps
``--interval``; every ``--save-every`` steps rank 0 saves ``step-N.pt`` into
``--ckpt`` (written to ``.tmp``, then renamed: complete or absent). At start
it resumes from ``NODEWEAVE_RESUME_FROM`` when set, and says so. Rank 0 prints
``RECOVERY-START`` (when its process started, torch was imported, the group
joined), ``RECOVERY-STEP gen=G step=S world=W t=T`` per step, ``RECOVERY-RESUME`` and
``RECOVERY-DONE``. Faults, on the node named ``--fault-node`` (matched
against ``NODEWEAVE_TEST_NODE``, else the hostname), in generation
``--fault-gen`` (``-1``: every generation) at step ``--fault-step``:
``--fault exit`` (exit 1), ``kill`` (SIGKILL itself), ``stop`` (SIGSTOP itself), ``raise`` (a
PermissionError, as a save into a folder the image's user cannot write raises); ``--fault-node '*'``
faults every node (the job's own error, not a node's).
``--faults KIND:NODE:GEN:STEP,...`` lists several such faults.
``--slow-node NODE --slow-s S`` makes the ranks on that node sleep S more per
step, in every generation (a straggler that lasts while it runs there).
``--half-written`` leaves a ``step-<big>.pt`` without its rename, as a save
cut off mid-write would (the resume must not take it).
``--hold GEN:STEP,...`` makes every rank, in generation GEN, after step STEP
(its all-reduce done, its save written), wait until the file
``<--release>-GEN-STEP`` exists (rank 0 says ``RECOVERY-HOLD``): a test acts
on a node (kills its container, removes it) at that very step however loaded
the machine, then creates the file. Every rank waits alike, outside any
collective, so the stall watch sees no stall; ``--hold-s`` bounds the wait.
"""

import argparse
import os
import signal
import socket
import sys
import time

STARTED = time.time()  # before torch's import: RECOVERY-START says where a rank's start went

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

IMPORTED = time.time()


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--interval", type=float, default=0.2)
    p.add_argument("--save-every", type=int, default=5)
    p.add_argument("--ckpt", default="checkpoints")
    p.add_argument("--fault", choices=("exit", "kill", "stop", "raise"), default=None)
    p.add_argument("--fault-node", default=None)
    p.add_argument("--fault-gen", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=8)
    p.add_argument("--faults", default="", help="KIND:NODE:GEN:STEP,... (several faults)")
    p.add_argument("--slow-node", default=None)
    p.add_argument("--slow-s", type=float, default=0.0)
    p.add_argument("--cuda", action="store_true")
    p.add_argument("--half-written", action="store_true")
    p.add_argument("--hold", default="", help="GEN:STEP,... where every rank waits for the release file")
    p.add_argument("--release", default="release", help="the release file's prefix: <prefix>-GEN-STEP")
    p.add_argument("--hold-s", type=float, default=600.0, help="the longest a hold waits")
    p.add_argument("--local_rank", "--local-rank", type=int, default=None)  # deepspeed's
    return p.parse_args()


def say(text):
    os.write(1, (text + "\n").encode())


def this_node():
    return os.environ.get("NODEWEAVE_TEST_NODE") or socket.gethostname()


def faults(args):
    """(kind, node, generation, step) of every fault asked for."""
    listed = [tuple(item.split(":")) for item in args.faults.split(",") if item]
    if args.fault:
        listed.append((args.fault, args.fault_node, str(args.fault_gen), str(args.fault_step)))
    return [(kind, node, int(gen), int(step)) for kind, node, gen, step in listed]


def fault(args, gen, step):
    for kind, node, when, at in faults(args):
        if step != at or node not in (this_node(), "*") or when not in (-1, gen):
            continue
        say(f"RECOVERY-FAULT {kind} node={this_node()} gen={gen} step={step} t={time.time():.3f}")
        if kind == "exit":
            sys.exit(1)
        if kind == "raise":
            raise PermissionError(13, "Permission denied", os.path.join(args.ckpt, f"step-{step}.pt.tmp"))
        os.kill(os.getpid(), signal.SIGKILL if kind == "kill" else signal.SIGSTOP)


def hold(args, rank, gen, step):
    """At a step ``--hold`` names: wait until the test created ``<release>-GEN-STEP`` (at most ``--hold-s``)."""
    held = {tuple(int(n) for n in item.split(":")) for item in args.hold.split(",") if item}
    if (gen, step) not in held:
        return
    release = f"{args.release}-{gen}-{step}"
    if rank == 0:
        say(f"RECOVERY-HOLD gen={gen} step={step} until={release} t={time.time():.3f}")
    until = time.monotonic() + args.hold_s
    while not os.path.exists(release) and time.monotonic() < until:
        time.sleep(0.1)


def save(args, step, state):
    os.makedirs(args.ckpt, exist_ok=True)
    path = os.path.join(args.ckpt, f"step-{step}.pt")
    torch.save({"step": step, "state": state}, path + ".tmp")
    os.replace(path + ".tmp", path)
    if args.half_written:  # a save cut off: the name of a finished one, a file torch cannot read
        with open(os.path.join(args.ckpt, f"step-{step + 1000}.pt"), "wb") as f:
            f.write(b"PK\x03\x04 cut off")


def main():
    args = parse()
    gen = int(os.environ.get("NODEWEAVE_RESTART_COUNT", "0"))
    rank, local = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local}") if args.cuda else torch.device("cpu")
    if args.cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if args.cuda else "gloo")
    world = dist.get_world_size()
    if rank == 0:
        say(f"RECOVERY-START gen={gen} started={STARTED:.3f} imported={IMPORTED:.3f} joined={time.time():.3f}")
    step, state = 0, torch.zeros(4, device=device)
    resume = os.environ.get("NODEWEAVE_RESUME_FROM")
    if resume:
        saved = torch.load(resume, map_location=device)
        step, state = saved["step"], saved["state"].to(device)
        if rank == 0:
            say(f"RECOVERY-RESUME gen={gen} from={resume} step={step}")
    while step < args.steps:
        step += 1
        fault(args, gen, step)
        grad = torch.ones(4, device=device)
        dist.all_reduce(grad)
        state += grad / world
        if args.cuda:
            torch.cuda.synchronize()
        if rank == 0:
            say(f"RECOVERY-STEP gen={gen} step={step} world={world} t={time.time():.3f}")
            if step % args.save_every == 0:
                save(args, step, state.cpu())
        hold(args, rank, gen, step)
        time.sleep(args.interval + (args.slow_s if this_node() == args.slow_node else 0.0))
    dist.barrier()
    if rank == 0:
        say(f"RECOVERY-DONE gen={gen} step={step} state={state[0].item():g}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
