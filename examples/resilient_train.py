"""A small DDP training job that checkpoints and resumes: the workload of recovery's tests and benchmark.

It trains the two-layer regression model of examples/train.py (gloo on CPU,
NCCL on GPUs), saves a checkpoint every ``--ckpt-every`` steps (``50``) or
seconds (``30s``) into ``--ckpt-dir`` (by default ``NODEWEAVE_CHECKPOINT_DIR``, the
folder recovery scans: ``recovery.checkpoint_dir``), and resumes:

- from ``NODEWEAVE_RESUME_FROM`` when nodeweave's recovery sets it (the newest
  *complete* checkpoint it found), else
- with ``--resume-latest``, from the save its own ``latest`` file names (what
  a script does on its own under ``torchrun --max-restarts``), else from scratch.

Saves are written the two common ways (``--format``): ``dcp``, a PyTorch
Distributed Checkpoint folder ``step-N`` every rank writes into (``.metadata``
renamed into place last), or ``torch``, rank 0's ``torch.save`` to
``step-N.pt.tmp`` renamed to ``step-N.pt``. ``--half-written`` also leaves,
beside each save, a newer one cut off mid-write (``step-<N+1000>``: DCP shards
without ``.metadata``, or a torch.save zip without its end), which a resume
must never take. ``--bad-node-marker PATH`` makes a node whose PATH exists
fail at every start, as a node with a broken GPU does.

Rank 0 prints one line per step and one per resume, for tests to parse::

    [rank 0/4 gen 1] step 812 loss 0.0713 t=1764245501.203
    [rank 0/4 gen 1] resumed from step 800 (/ckpt/step-800)
    [rank 0/4 gen 1] saved step 850 (/ckpt/step-850) in 0.04 s
    [rank 0/4 gen 1] done: step 2000 world_size=4 ok
"""

import argparse
import os
import socket
import sys
import time

STARTED = time.monotonic()  # before torch's import: each rank says how long its start took (a restart's cost)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

IMPORTED = time.monotonic()

WIDTH = 32


def every(text):
    """``--ckpt-every``: ``50`` (steps) or ``30s`` (seconds) -> (number, unit)."""
    unit = "seconds" if text.endswith("s") else "steps"
    try:
        value = float(text[:-1]) if unit == "seconds" else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give steps (50) or seconds (30s)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be above 0")
    return value, unit


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="train up to this global step (default 200)")
    parser.add_argument("--step-time", type=float, default=0.0,
                        help="pad each step to at least this many seconds, so runs compare in steps")
    parser.add_argument("--ckpt-dir", default=os.environ.get("NODEWEAVE_CHECKPOINT_DIR") or "checkpoints",
                        help="where saves go (default: NODEWEAVE_CHECKPOINT_DIR, the folder nodeweave's recovery "
                             "scans for the newest complete save, else ./checkpoints)")
    parser.add_argument("--ckpt-every", type=every, default=(50, "steps"), help="50 (steps) or 30s (seconds)")
    parser.add_argument("--format", choices=("dcp", "torch"), default="dcp")
    parser.add_argument("--resume-latest", action="store_true",
                        help="without NODEWEAVE_RESUME_FROM, resume from the save ./latest names")
    parser.add_argument("--half-written", action="store_true", help="also leave a newer save cut off mid-write")
    parser.add_argument("--bad-node-marker", default=None, help="fail at start on a node where this file exists")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


class Trainer:
    """The model, its optimizer, the global step and the rank's tag; saves and loads all of them."""

    def __init__(self, args, device):
        self.args, self.device = args, device
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        gen = os.environ.get("NODEWEAVE_RESTART_COUNT", os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        self.tag = f"[rank {self.rank}/{self.world} gen {gen}]"
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(WIDTH, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 1)).to(device)
        self.model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=3e-3, momentum=0.9)
        self.step = 0

    def say(self, text):
        if self.rank == 0:
            print(f"{self.tag} {text}", flush=True)

    def state(self):
        """Model and optimizer as DCP wants them: fully qualified names, momentum buffers already made."""
        from torch.distributed.checkpoint.state_dict import get_state_dict
        model, optim = get_state_dict(self.model, self.optimizer)
        return {"model": model, "optim": optim, "step": torch.tensor(self.step)}

    def load(self, state):
        from torch.distributed.checkpoint.state_dict import set_state_dict
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        self.step = int(state["step"])

    def train_step(self):
        generator = torch.Generator().manual_seed(self.step * 1000 + self.rank)  # the data follows the step
        x = torch.randn(self.args.batch_size, WIDTH, generator=generator)
        target = torch.sin(x.sum(dim=1, keepdim=True) / WIDTH ** 0.5)
        loss = nn.functional.mse_loss(self.model(x.to(self.device)), target.to(self.device))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.step += 1
        return loss.item()


def save(trainer):
    """Write step-N the chosen way, then point ``latest`` at it (rank 0, atomic rename)."""
    args, started = trainer.args, time.perf_counter()
    os.makedirs(args.ckpt_dir, exist_ok=True)
    name = f"step-{trainer.step}" + (".pt" if args.format == "torch" else "")
    path = os.path.join(args.ckpt_dir, name)
    if args.format == "dcp":
        import torch.distributed.checkpoint as dcp
        dcp.save(trainer.state(), checkpoint_id=path)
    elif trainer.rank == 0:
        torch.save(trainer.state(), path + ".tmp")
        os.replace(path + ".tmp", path)
    if trainer.rank == 0:
        replace_text(os.path.join(args.ckpt_dir, "latest"), name)
        if args.half_written:
            leave_half_written(args, trainer.step + 1000, path)
    trainer.say(f"saved step {trainer.step} ({path}) in {time.perf_counter() - started:.2f} s")


def replace_text(path, text):
    with open(path + ".tmp", "w") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


def leave_half_written(args, step, complete_path):
    """A newer save cut off mid-write: what a node killed during its save leaves."""
    if args.format == "dcp":
        cut = os.path.join(args.ckpt_dir, f"step-{step}")
        os.makedirs(cut, exist_ok=True)
        for shard in sorted(os.listdir(complete_path)):
            if shard.endswith(".distcp"):  # the shards, never the .metadata written last
                with open(os.path.join(complete_path, shard), "rb") as src, open(os.path.join(cut, shard), "wb") as dst:
                    dst.write(src.read())
    else:
        with open(complete_path, "rb") as src:
            data = src.read()
        with open(os.path.join(args.ckpt_dir, f"step-{step}.pt"), "wb") as dst:
            dst.write(data[:len(data) // 2])


def resume_path(args):
    """NODEWEAVE_RESUME_FROM, else (with --resume-latest) the save ./latest names, else None."""
    path = os.environ.get("NODEWEAVE_RESUME_FROM")
    if path:
        return path
    latest = os.path.join(args.ckpt_dir, "latest")
    if args.resume_latest and os.path.isfile(latest):
        with open(latest) as handle:
            return os.path.join(args.ckpt_dir, handle.read().strip())
    return None


def resume(trainer, path):
    if os.path.isdir(path):
        import torch.distributed.checkpoint as dcp
        state = trainer.state()
        dcp.load(state, checkpoint_id=path)
    else:
        state = torch.load(path, map_location=trainer.device, weights_only=True)
    trainer.load(state)
    trainer.say(f"resumed from step {trainer.step} ({path})")


def save_now(trainer, last_save):
    """Every rank must agree (a DCP save is collective): rank 0 decides, the others follow its word."""
    amount, unit = trainer.args.ckpt_every
    due = trainer.step % amount == 0 if unit == "steps" else time.monotonic() - last_save >= amount
    flag = torch.tensor([1 if due else 0], device=trainer.device)
    dist.broadcast(flag, src=0)
    return bool(flag.item())


def setup(args):
    if args.bad_node_marker and os.path.exists(args.bad_node_marker):
        print(f"bad node {socket.gethostname()}: {args.bad_node_marker} exists, failing at start", flush=True)
        sys.exit(1)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cpu")
    if use_cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if use_cuda else "gloo")
    print(f"[rank {dist.get_rank()} start] torch imported in {IMPORTED - STARTED:.1f} s, the group joined "
          f"{time.monotonic() - IMPORTED:.1f} s later", file=sys.stderr, flush=True)
    return device


def main(argv=None):
    args = parse_args(argv)
    trainer = Trainer(args, setup(args))
    trainer.say(f"host {socket.gethostname()} world {trainer.world}")
    path = resume_path(args)
    if path:
        resume(trainer, path)
    last_save = time.monotonic()
    while trainer.step < args.steps:
        started = time.monotonic()
        loss = trainer.train_step()
        trainer.say(f"step {trainer.step} loss {loss:.4f} t={time.time():.3f}")
        if save_now(trainer, last_save):
            save(trainer)
            last_save = time.monotonic()
        time.sleep(max(0.0, args.step_time - (time.monotonic() - started)))
    trainer.say(f"done: step {trainer.step} world_size={trainer.world} ok")
    dist.barrier()
    del trainer
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
