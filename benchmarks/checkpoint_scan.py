"""How long node 0 takes at a restart to find the newest complete checkpoint among many, against a baseline.

Builds ``--count`` saves of each layout in a temporary folder, with the files
each writer writes (torch.save zips, whole safetensors and JSON files,
DeepSpeed model states that record their world sizes; the DCP ones copy the
real two-rank save in tests/fixtures/recovery/dcp-2ranks), ``--tensors N``
tensors in each (a large model's file: N entries in every torch.save zip and
safetensors header, and with torch installed a DCP save of N tensors made
here in place of the fixture), makes the newest
one half-written (what its writer writes last removed), and times, page
cache warm as at a restart:

- ``newest_complete``: judges newest first, stops at the first complete one;
- ``incomplete`` (judges every save) on its first call, when nothing is
  cached yet (its CPU time beside it: on a loaded machine the wall time
  also counts the waits for a core), and again (median of ``--runs``), when the pickles it read
  (DCP ``.metadata``, model states) are kept by (path, size, mtime_ns);
- the same two calls of the finder before issue 42 (``--baseline``, a git
  revision, read with ``git archive`` and run in a child process on the
  same folders), where it knew the layout.

Prints a Markdown table. Goal: newest <= 50 ms, every save <= 1 s for 1,000.

    .venv/bin/python benchmarks/checkpoint_scan.py [--count 1000] [--runs 5] [--baseline REV] [--tensors N] [--samples K]
"""

import argparse
import io
import json
import os
import pickle
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DCP = ROOT / "tests" / "fixtures" / "recovery" / "dcp-2ranks"
BEFORE_ISSUE_42 = "322a31b"  # main before issue 42's finder


TENSORS = int(os.environ.get("CHECKPOINT_SCAN_TENSORS", "1"))  # storages per torch.save zip (--tensors)


def torch_save_zip(obj):
    """The zip torch.save writes (data.pkl, its storages, version; the end record last), made without torch."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(obj, protocol=2))
        for index in range(TENSORS):
            archive.writestr(f"archive/data/{index}", bytes(256 if TENSORS == 1 else 16))
        archive.writestr("archive/version", b"3\n")
    return buffer.getvalue()


def safetensors_file():
    """A whole safetensors file of ``TENSORS`` 16-float tensors (its JSON header read whole by the finder)."""
    header = json.dumps({f"model.layers.{index}.weight": {"dtype": "F32", "shape": [16],
                                                          "data_offsets": [index * 64, index * 64 + 64]}
                         for index in range(TENSORS)}).encode()
    return len(header).to_bytes(8, "little") + header + bytes(64 * TENSORS)


SAFETENSORS = safetensors_file()
STATE = torch_save_zip({"state": {}, "param_groups": []})


def touch(path, data=None):
    """What a whole file of that name holds: a safetensors file, JSON, or a torch.save zip."""
    if data is None:
        data = SAFETENSORS if path.name.endswith(".safetensors") else b"{}" if path.name.endswith(".json") else STATE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def dcp_template(scratch):
    """A DCP save of ``TENSORS`` tensors to copy (its ``.metadata`` holds one storage entry per tensor), made
    with the installed torch in a child process; the two-tensor fixture when ``TENSORS`` is 1 or torch is
    not installed."""
    if TENSORS == 1:
        return DCP
    target = Path(scratch) / "dcp-template"
    script = ("import sys, torch, torch.distributed.checkpoint as dcp\n"
              "state = {'model': {f'layers.{i}.weight': torch.zeros(16) for i in range(int(sys.argv[2]))},"
              " 'step': 0}\n"
              "dcp.save(state, checkpoint_id=sys.argv[1], no_dist=True)\n")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script, str(target), str(TENSORS)],
                          capture_output=True, text=True)
    if done.returncode != 0 or not (target / ".metadata").exists():
        print(f"(no torch to make a DCP save of {TENSORS} tensors: the DCP rows copy the 2-tensor fixture)")
        return DCP
    return target


def torchtitan(root, step):
    shutil.copytree(DCP, root / f"step-{step}")
    return root / f"step-{step}" / ".metadata"


def deepspeed(root, step):
    tag = root / f"global_step{step}"
    states = torch_save_zip({"module": None, "global_steps": step, "dp_world_size": 4, "mp_world_size": 2,
                             "ds_config": {"zero_optimization": {"stage": 2}}})
    for mp in range(2):
        touch(tag / f"mp_rank_{mp:02d}_model_states.pt", states)
        for dp in range(4):
            touch(tag / f"bf16_zero_pp_rank_{dp}_mp_rank_{mp:02d}_optim_states.pt")
    touch(root / "latest", f"global_step{step}".encode())
    return tag / "bf16_zero_pp_rank_3_mp_rank_01_optim_states.pt"


def trainer(root, step):
    folder = root / f"checkpoint-{step}"
    for name in ("config.json", "model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth",
                 "training_args.bin"):
        touch(folder / name)
    touch(folder / "trainer_state.json", json.dumps({"global_step": step, "log_history": []}).encode())
    return folder / "trainer_state.json"


def megatron(root, step):
    for tp in range(2):
        for pp in range(2):
            touch(root / f"iter_{step:07d}" / f"mp_rank_{tp:02d}_{pp:03d}" / "model_optim_rng.pt")
    touch(root / "latest_checkpointed_iteration.txt", str(step).encode())
    return root / f"iter_{step:07d}" / "mp_rank_01_001" / "model_optim_rng.pt"


def accelerate(root, step):
    folder = root / "checkpoints" / f"checkpoint_{step // 100 - 1}"
    for name in ("model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl",
                 "random_states_1.pkl", "custom_checkpoint_0.pkl"):
        touch(folder / name)
    return folder / "custom_checkpoint_0.pkl"


def lightning(root, step):
    path = root / f"epoch={step // 1000}-step={step}-train_loss=0.{step % 97:02d}.ckpt"
    touch(path, torch_save_zip({"epoch": step // 1000, "global_step": step, "state_dict": {}}))
    return path


def per_rank(root, step):
    for rank in range(4):
        touch(root / f"ckpt_{step}_rank{rank}.pt")
    return root / f"ckpt_{step}_rank3.pt"


LAYOUTS = {"torchtitan (DCP)": torchtitan, "deepspeed": deepspeed, "hf-trainer": trainer, "megatron": megatron,
           "accelerate": accelerate, "lightning": lightning, "per-rank files": per_rank}


def timed(function, root, runs):
    """(result, first call's seconds, its CPU seconds, median seconds of ``runs`` more)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = function(root)
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function(root)
        times.append(time.perf_counter() - start)
    return result, first, first_cpu, statistics.median(times)


def measure(root, runs):
    """{newest, newest_s, newest_first_s, incomplete, every_first_s, every_s} of the finder on the path."""
    from nodeweave.entrypoint.recovery.checkpoints import incomplete, newest_complete

    found, newest_first, _, newest = timed(newest_complete, root, runs)
    bad, every_first, every_first_cpu, every = timed(incomplete, root, runs)
    return {"newest": Path(found.path).name if found else None, "newest_first_s": newest_first, "newest_s": newest,
            "incomplete": len(bad), "every_first_s": every_first, "every_first_cpu_s": every_first_cpu,
            "every_s": every}


def baseline_source(revision, scratch):
    """The finder at ``revision``, unpacked under ``scratch``, or None (no git, unknown revision)."""
    target = Path(scratch) / "baseline"
    target.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src/nodeweave/entrypoint"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    (target / "src" / "nodeweave" / "__init__.py").touch()
    return target / "src"


def measure_in_child(source, root, runs):
    env = dict(os.environ, PYTHONPATH=str(source))
    done = subprocess.run([sys.executable, __file__, "--measure", str(root), "--runs", str(runs)], env=env,
                          capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else None


def measure_pair(sources, root, runs, samples):
    """Each finder of ``sources`` timed in ``samples`` fresh processes, taking turns (a loaded machine moves
    one process's times by 2x or more, and its load drifts): each number is the median of the samples."""
    found = [[] for _ in sources]
    for _ in range(samples):
        for index, source in enumerate(sources):
            measured = measure_in_child(source, root, runs) if source else None
            if measured:
                found[index].append(measured)
    return [{key: statistics.median(f[key] for f in got) if isinstance(got[0][key], float) else got[0][key]
             for key in got[0]} if got else None for got in found]


def ms(seconds):
    return f"{seconds * 1000:.0f} ms"


def cpu(measured):
    """The first call's CPU time (a baseline too old to report it: ``?``): what the load does not inflate."""
    return ms(measured["every_first_cpu_s"]) if "every_first_cpu_s" in measured else "?"


def main():
    global TENSORS, STATE, SAFETENSORS, DCP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="saves per layout (default 1000)")
    parser.add_argument("--runs", type=int, default=5, help="timed scans after the first; the median is shown")
    parser.add_argument("--baseline", default=BEFORE_ISSUE_42, help="git revision of the finder to compare with")
    parser.add_argument("--samples", type=int, default=1,
                        help="fresh processes per finder; each time shown is their median (default 1)")
    parser.add_argument("--tensors", type=int, default=TENSORS,
                        help="storages in each torch.save zip (default 1; a 7B model's optimizer.pt holds ~600)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # a child: time the finder on its path, print JSON
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.runs)))
        return
    os.environ["CHECKPOINT_SCAN_TENSORS"] = str(args.tensors)
    TENSORS = args.tensors
    STATE = torch_save_zip({"state": {}, "param_groups": []})  # every whole torch.save file: N storages too
    SAFETENSORS = safetensors_file()  # and every safetensors header N tensors
    sys.path.insert(0, str(ROOT / "src"))
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"\nbaseline: the finder at {args.baseline}, same folders, in a child process; "
          f"{args.tensors} storage(s) per torch.save zip; median of {args.samples} process(es); "
          f"load average {os.getloadavg()[0]:.1f}")
    print("\n| layout | saves | newest complete | `newest_complete` | baseline | `incomplete` first call (CPU) | "
          "`incomplete` again | baseline first call (CPU) / again | baseline's pick |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as scratch:
        source = baseline_source(args.baseline, scratch)
        DCP = dcp_template(scratch)  # and every DCP .metadata N storage entries
        for name, build in LAYOUTS.items():
            root = Path(scratch) / name.split()[0]
            root.mkdir()
            last = None
            for index in range(1, args.count + 1):
                last = build(root, index * 100)
            last.unlink()  # the newest save: what its writer writes last is not there yet
            ours, theirs = measure_pair([ROOT / "src", source], root, args.runs, args.samples)
            base = (f"{ms(theirs['newest_s'])}", f"{ms(theirs['every_first_s'])} ({cpu(theirs)}) / "
                    f"{ms(theirs['every_s'])}", str(theirs["newest"])) if theirs else ("-", "-", "-")
            print(f"| {name} | {args.count} | {ours['newest']} | {ms(ours['newest_s'])} | {base[0]} "
                  f"| {ms(ours['every_first_s'])} ({cpu(ours)}; {ours['incomplete']} found) | {ms(ours['every_s'])} "
                  f"| {base[1]} | {base[2]} |", flush=True)


if __name__ == "__main__":
    main()
