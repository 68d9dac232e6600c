"""How long node 0 takes at a restart to find the newest complete checkpoint among many.

Builds ``--count`` checkpoint folders of each layout in a temporary folder
(file names as each writer writes them, 64-byte files; the DCP ones copy the
real two-rank save in tests/fixtures/recovery/dcp-2ranks), makes the newest
one half-written, and times ``newest_complete`` (page cache warm, as it is
at a restart: the ranks just wrote there; it judges newest first and stops
at the first complete one) and ``incomplete`` (judges every folder). Prints a
Markdown table; the target is well under a second for 1,000 folders.

    .venv/bin/python benchmarks/checkpoint_scan.py [--count 1000] [--runs 5]
"""

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from nodeweave.entrypoint.recovery.checkpoints import incomplete, newest_complete  # noqa: E402

DCP = ROOT / "tests" / "fixtures" / "recovery" / "dcp-2ranks"


SAFETENSORS_HEADER = b'{"w": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]}}'
SAFETENSORS = len(SAFETENSORS_HEADER).to_bytes(8, "little") + SAFETENSORS_HEADER + bytes(64)


def touch(path, data=None):
    """A 64-byte file, or a whole (tiny) safetensors file for a .safetensors name."""
    if data is None:
        data = SAFETENSORS if path.name.endswith(".safetensors") else b"x" * 64
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def torchtitan(root, step):
    shutil.copytree(DCP, root / f"step-{step}")


def deepspeed(root, step):
    tag = root / f"global_step{step}"
    for mp in range(2):
        touch(tag / f"mp_rank_{mp:02d}_model_states.pt")
        for dp in range(4):
            touch(tag / f"bf16_zero_pp_rank_{dp}_mp_rank_{mp:02d}_optim_states.pt")
    touch(root / "latest", f"global_step{step}".encode())


def trainer(root, step):
    folder = root / f"checkpoint-{step}"
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state_0.pth", "trainer_state.json"):
        touch(folder / name)


def megatron(root, step):
    for tp in range(2):
        for pp in range(2):
            touch(root / f"iter_{step:07d}" / f"mp_rank_{tp:02d}_{pp:03d}" / "model_optim_rng.pt")
    touch(root / "latest_checkpointed_iteration.txt", str(step).encode())


LAYOUTS = {"torchtitan (DCP)": (torchtitan, ".metadata"), "deepspeed": (deepspeed, "mp_rank_01_model_states.pt"),
           "hf-trainer": (trainer, "trainer_state.json"), "megatron": (megatron, "model_optim_rng.pt")}


def half_write(root, last_file):
    """Remove what the writer writes last from the newest folder."""
    newest = max((p for p in root.iterdir() if p.is_dir()), key=lambda p: int("".join(filter(str.isdigit, p.name))))
    for path in sorted(newest.rglob(last_file), reverse=True)[:1]:
        path.unlink()


def timed(function, root, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = function(root)
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="checkpoint folders per layout (default 1000)")
    parser.add_argument("--runs", type=int, default=5, help="timed scans per layout; the median is shown")
    args = parser.parse_args()
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print("\n| layout | folders | newest complete | newest_complete | incomplete (every folder judged) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name, (build, last_file) in LAYOUTS.items():
            root = Path(scratch) / name.split()[0]
            root.mkdir()
            for index in range(1, args.count + 1):
                build(root, index * 100)
            half_write(root, last_file)
            found, newest = timed(newest_complete, root, args.runs)
            bad, every = timed(incomplete, root, args.runs)
            print(f"| {name} | {args.count} | {Path(found.path).name} | {newest * 1000:.0f} ms "
                  f"| {every * 1000:.0f} ms ({len(bad)} found) |")


if __name__ == "__main__":
    main()
