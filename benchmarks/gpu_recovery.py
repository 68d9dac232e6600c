"""Recovery on real GPUs (NCCL), no container engine: two simulated nodes and a spare, a rank killed and a rank
stalled mid-run; for each fault the time from the fault to the first training step after it, and who was left out.

Each simulated node is a real ``nodeweave-entrypoint`` (recovery on, torchrun, one rank) with its own TMPDIR,
``NCCL_HOSTID`` and ``CUDA_VISIBLE_DEVICES`` (node 0 -> GPU 0, node 1 and the spare -> GPU 1: the spare takes
the failed node's GPU), and, where ``unshare --uts`` works, its own hostname. The workload is
tests/e2e/workspace/resumable.py: an all-reduce per step, a checkpoint every ``--save-every`` steps, resumed
from ``NODEWEAVE_RESUME_FROM``. The schedule: node 1's rank is killed (SIGKILL) at step ``--kill-step`` of
generation 0 (the spare takes its place); then the spare's rank stops itself (SIGSTOP) at step
``--stop-step`` of generation 1 (the stall watch names it at ``--stall-warn``, stops the job at
``--stall-timeout``; node 1, left out once, comes back in its place); then, with ``--node0-step N``, node 0 is
lost at step N of generation 2 (its whole process tree SIGKILLed, as a container dies) and started again with
the same command (its restart policy): it takes the job's book on from the other nodes and relaunches.

    python benchmarks/gpu_recovery.py            # 2+ GPUs, NCCL
    python benchmarks/gpu_recovery.py --cpu      # anywhere: gloo on CPU, same schedule
    python benchmarks/gpu_recovery.py --warm-start both   # the schedule cold, then warm: the ratio per fault

Prints one row per fault: the fault, the node at fault, the node left out, fault -> first step after it
(the workload's own timestamps), heard -> relaunch (node 0's record), relaunch -> the ranks' start (node 0's
record to the first rank's ``[rank start]`` line: the launcher's start, the rendezvous and the ranks' own
import), the step resumed from, the steps lost. ``--warm-start`` (``recovery.warm_start``): ``on`` (the
default), ``off`` (every generation's launcher started cold), ``both`` (off, then on, and the ratio).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from one_machine import one_machine_env  # noqa: E402
from stall_nodes import (ENTRY, ROOT, Node, free_port_pair, own_hostname_allowed, stop,  # noqa: E402
                         with_hostname)

sys.path.insert(0, str(ROOT / "src"))
from nodeweave.entrypoint.running.descendants import signal_all  # noqa: E402
from nodeweave.entrypoint.running.runstate import descendants, process_table  # noqa: E402

WORKLOAD = ROOT / "tests" / "e2e" / "workspace" / "resumable.py"
GPUS = None  # set in main() from nvidia-smi


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu", action="store_true", help="gloo on CPU instead of NCCL on GPUs")
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--interval", type=float, default=0.25, help="seconds each step sleeps after its all-reduce")
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--kill-step", type=int, default=25)
    p.add_argument("--stop-step", type=int, default=55)
    p.add_argument("--stall-warn", type=int, default=10)
    p.add_argument("--stall-timeout", type=int, default=20)
    p.add_argument("--node0-step", type=int, default=0, help="lose node 0 at this step of generation 2 and "
                   "start it again (0: never)")
    p.add_argument("--node0-pause-step", type=int, default=0, help="freeze node 0 (SIGSTOP its whole tree, as a "
                   "paused VM) at this step of generation 2, for --node0-pause-s, then SIGCONT (0: never)")
    p.add_argument("--node0-pause-s", type=float, default=15.0)
    p.add_argument("--spare-pause-step", type=int, default=0, help="freeze the spare (SIGSTOP its whole tree, a "
                   "paused VM) at this step of generation 0 for --spare-pause-s, then SIGCONT: a node that trains "
                   "nothing must end no generation (walk17b B14)")
    p.add_argument("--spare-pause-s", type=float, default=15.0)
    p.add_argument("--warm-start", choices=("on", "off", "both"), default="on",
                   help="recovery.warm_start: the next launcher held ready (default on); both: off, then on")
    p.add_argument("--keep", action="store_true", help="keep the work folder (its path is printed)")
    return p.parse_args()


def node_argv(rank, port, folder, args, own_host):
    work = [*ENTRY, "--launcher", "torchrun", "--node-rank", str(rank), "--nproc-per-node", "1",
            "--master-addr", "127.0.0.1", "--master-port", str(port), "--",
            "resumable.py", "--ckpt", str(folder / "checkpoints"), "--steps", str(args.steps),
            "--interval", str(args.interval), "--save-every", str(args.save_every),
            "--faults", f"kill:1:0:{args.kill_step},stop:2:1:{args.stop_step}"] + ([] if args.cpu else ["--cuda"])
    return with_hostname(f"sim-node-{rank}", work) if own_host else work


def start(folder, args, warm):
    shutil.copy(WORKLOAD, folder / "resumable.py")
    port, own_host = free_port_pair(), own_hostname_allowed()
    return [spawn(rank, port, folder, args, own_host, warm) for rank in range(3)]


def gpu_count():
    """The GPUs nvidia-smi lists (1 where it lists none: the --cpu schedule never reads the answer)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return max(1, sum(line.startswith("GPU ") for line in out.splitlines()))


def gpu_of(rank):
    """Node 0 -> GPU 0, node 1 and the spare -> GPU 1 (the spare takes the failed node's GPU); on a machine of
    one GPU every simulated node shares it, as NCCL allows for processes with distinct NCCL_HOSTIDs."""
    return "0" if rank == 0 or GPUS == 1 else "1"


def spawn(rank, port, folder, args, own_host, warm):
    """One simulated node in a session of its own, so losing it takes its whole tree (launcher, rank) at once."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    env = one_machine_env({
           **os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": path,
           "TMPDIR": str(folder / f"n{rank}"), "OMP_NUM_THREADS": "1", "NODEWEAVE_TEST_NODE": str(rank),
           "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_NNODES": "2",
           "NODEWEAVE_CHECKPOINT_DIR": str(folder / "checkpoints"), "NODEWEAVE_WAIT_TIMEOUT": "120",
           "NODEWEAVE_STALL_WARN": str(args.stall_warn), "NODEWEAVE_STALL_TIMEOUT": str(args.stall_timeout),
           "NCCL_HOSTID": f"sim-node-{rank}", "CUDA_VISIBLE_DEVICES": gpu_of(rank),
           "NODEWEAVE_WARM_START": warm})
    os.makedirs(env["TMPDIR"], exist_ok=True)
    node = Node(subprocess.Popen(node_argv(rank, port, folder, args, own_host), env=env, cwd=folder,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True))
    node.how = (rank, port, folder, args, own_host, warm)
    return node


def lose_node_0(nodes, args):
    """At step ``--node0-step`` of generation 2: SIGKILL node 0's whole tree, start it again; (the old node,
    the host time of the kill) or (None, None) when the job never got there. The whole tree, found by
    /proc's parent links as the entrypoint finds its launcher's ranks: the launcher has a process group of its
    own, so a killpg of the entrypoint's would leave it to its parent-death signal."""
    import signal

    while any(node.proc.poll() is None for node in nodes):
        if any(int(s["gen"]) == 2 and int(s["step"]) >= args.node0_step for s in lines(nodes, "RECOVERY-STEP")):
            old, at = nodes[0], time.time()
            signal_all(descendants(old.proc.pid, process_table()), signal.SIGKILL)  # as a container dies
            old.proc.wait()
            nodes[0] = spawn(*old.how)
            return old, at
        time.sleep(0.1)
    return None, None


def lines(nodes, tag):
    """Every ``tag`` line any node printed, as a dict of its key=value fields."""
    found = []
    for node in nodes:
        for line in node.text("out").split("\n"):
            if line.startswith(tag):
                found.append(dict(re.findall(r"(\w+)=(\S+)", line), word=line.split()[1]))
    return found


def rows(nodes, record):
    faults, step_lines = lines(nodes, "RECOVERY-FAULT"), lines(nodes, "RECOVERY-STEP")
    resumes = {int(r["gen"]): int(r["step"]) for r in lines(nodes, "RECOVERY-RESUME")}
    history = {h["generation"]: h for h in record.get("history") or []}
    out = []
    for fault in faults:
        gen, at = int(fault["gen"]), float(fault["t"])
        after = [float(s["t"]) for s in step_lines if int(s["gen"]) == gen + 1]
        last = max([int(s["step"]) for s in step_lines if int(s["gen"]) == gen] or [0])
        h = history.get(gen, {})
        resumed = resumes.get(gen + 1)
        out.append({"fault": fault["word"], "node": fault["node"],
                    "left_out": h.get("node"), "cause": h.get("cause"),
                    "fault_to_step_s": round(min(after) - at, 1) if after else None,
                    "heard_to_relaunch_s": h.get("recover_s"), "resumed_step": resumed,
                    "steps_lost": None if resumed is None else last - resumed,
                    **start_parts(nodes, gen + 1, h.get("relaunched"), after)})
    return out


def start_parts(nodes, gen, relaunched, after):
    """Where generation ``gen``'s start went (rank 0's RECOVERY-START): relaunch -> its process (the launcher's
    start and rendezvous), its torch import, the group joined -> its first step (DDP, NCCL, the resume)."""
    start = next((line for line in lines(nodes, "RECOVERY-START") if int(line["gen"]) == gen), None)
    if start is None:
        return {"launch_s": None, "import_s": None, "joined_to_step_s": None}
    began, imported, joined = (float(start[key]) for key in ("started", "imported", "joined"))
    return {"launch_s": round(began - relaunched, 1) if relaunched else None,
            "import_s": round(imported - began, 1),
            "joined_to_step_s": round(min(after) - joined, 1) if after else None}


def merged_record(folder):
    """Node 0's record, with the history of earlier generations from the others' copies (a node 0 that came
    back keeps only what it saw since)."""
    records = []
    for rank in range(3):  # the book is in the job's folder, $TMPDIR/nodeweave/jobs/<job>-<port>/ (one job here)
        for book in sorted((folder / f"n{rank}" / "nodeweave" / "jobs").glob("*/recovery.json")):
            try:
                records.append(json.loads(book.read_text()))
            except (OSError, ValueError):
                pass
    if not records:
        return {}
    history = {}
    for record in records:
        for item in record.get("history") or []:
            history.setdefault(item["generation"], item)
    return dict(records[0], history=[history[g] for g in sorted(history)])


def node_0_row(nodes, at, record):
    """The row of node 0's loss: its kill to the first step of generation 3; the new node 0's decision (its
    history's ``relaunched`` for generation 2, when it kept one) splits it into kill -> relaunch and the start."""
    if at is None:
        return []
    relaunched = next((h.get("relaunched") for h in record.get("history") or [] if h.get("generation") == 2), None)
    after = [float(s["t"]) for s in lines(nodes, "RECOVERY-STEP") if int(s["gen"]) == 3]
    last = max([int(s["step"]) for s in lines(nodes, "RECOVERY-STEP") if int(s["gen"]) == 2] or [0])
    resumed = {int(r["gen"]): int(r["step"]) for r in lines(nodes, "RECOVERY-RESUME")}.get(3)
    return [{"fault": "node0", "node": 0, "left_out": None, "cause": "lost",
             "fault_to_step_s": round(min(after) - at, 1) if after else None,
             "heard_to_relaunch_s": round(relaunched - at, 2) if relaunched else None,
             "resumed_step": resumed, "steps_lost": None if resumed is None else last - resumed,
             **start_parts(nodes, 3, relaunched, after)}]


KINDS = {"kill": "rank killed (SIGKILL)", "stop": "rank stalled (SIGSTOP)", "node0": "node 0 lost, restarted"}


def pause_node_0(nodes, args):
    """At step ``--node0-pause-step`` of generation 2: SIGSTOP node 0's whole tree (entrypoint, launcher, rank) for
    ``--node0-pause-s``, then SIGCONT: past the heartbeat the others declare it lost, and node 0, awake, must end the
    generation as its own fault and regather them (walk13b B15/B16); the host time it woke, or None."""
    import signal

    while any(node.proc.poll() is None for node in nodes):
        if any(int(s["gen"]) == 2 and int(s["step"]) >= args.node0_pause_step
               for s in lines(nodes, "RECOVERY-STEP")):
            tree = descendants(nodes[0].proc.pid, process_table())
            signal_all(tree, signal.SIGSTOP)
            time.sleep(args.node0_pause_s)
            signal_all(tree, signal.SIGCONT)
            return time.time()
        time.sleep(0.1)
    return None


def pause_spare(nodes, args):
    """At step ``--spare-pause-step`` of generation 0: SIGSTOP the spare's whole tree for ``--spare-pause-s``, then
    SIGCONT, and wait 10 s more: the generation the ranks train in then (0: the spare's loss and return ended
    nothing), or None when the job never reached the step."""
    import signal

    while any(node.proc.poll() is None for node in nodes):
        steps = lines(nodes, "RECOVERY-STEP")
        if any(int(s["gen"]) == 0 and int(s["step"]) >= args.spare_pause_step for s in steps):
            tree = descendants(nodes[2].proc.pid, process_table())
            signal_all(tree, signal.SIGSTOP)
            time.sleep(args.spare_pause_s)
            signal_all(tree, signal.SIGCONT)
            time.sleep(10)
            return max(int(s["gen"]) for s in lines(nodes, "RECOVERY-STEP"))
        time.sleep(0.1)
    return None


def pause_row(nodes, woke):
    """'node 0 paused' and the seconds from its waking to the first step after it (the ranks' own stamps)."""
    if woke is None:
        return "node 0 paused: the job never reached the pause step"
    after = sorted((float(s["t"]), int(s["gen"]), int(s["step"])) for s in lines(nodes, "RECOVERY-STEP")
                   if float(s["t"]) > woke and int(s["gen"]) > 2)  # the next generation's (a rank woken mid-step
    # prints the step it was in)
    first = f"{after[0][0] - woke:.1f} s to generation {after[0][1]}'s step {after[0][2]}" if after else "no step"
    return f"node 0 paused (SIGSTOP, whole tree) at generation 2: woke -> the next generation's first step: {first}"


def run_once(args, warm):
    """The schedule once with ``recovery.warm_start`` = ``warm``: (rows, record, exit codes, seconds, done)."""
    folder = Path(tempfile.mkdtemp(prefix="nodeweave-gpu-recovery-"))
    started = time.monotonic()
    nodes = start(folder, args, warm)
    lost = (None, None)
    try:
        if args.spare_pause_step:
            gen = pause_spare(nodes, args)
            print(f"spare paused (SIGSTOP, whole tree) {args.spare_pause_s:g} s at generation 0 step "
                  f"{args.spare_pause_step}: 10 s after it woke the ranks train in generation {gen} "
                  f"({'nothing ended' if gen == 0 else 'a generation ended'})", flush=True)
        if args.node0_step:
            lost = lose_node_0(nodes, args)
        woke = pause_node_0(nodes, args) if args.node0_pause_step else None
        codes = [node.wait(900) for node in nodes]
    finally:
        stop(nodes + ([lost[0]] if lost[0] else []))
    took = time.monotonic() - started
    record = merged_record(folder)
    every = nodes + ([lost[0]] if lost[0] else [])
    found = rows(every, record) + node_0_row(every, lost[1], record)
    done = lines(every, "RECOVERY-DONE")
    if args.node0_pause_step:
        print(pause_row(every, woke))
    if args.keep or any(codes):
        print(f"work folder: {folder}")
        if any(codes):
            for rank, node in enumerate(nodes):
                print(f"--- node {rank} stderr (last lines)\n" + "\n".join(node.text().split("\n")[-15:]))
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return found, record, codes, took, done


def print_table(args, warm, found, record, codes, took, done):
    device = ("CPU, gloo" if args.cpu else "GPU, NCCL (node 0: GPU 0; node 1 and the spare: GPU 1)" if GPUS > 1
              else "GPU, NCCL (one GPU, shared by the three simulated nodes)")
    print(f"\nrecovery, two simulated nodes + one spare, {device}; stall_warn {args.stall_warn}s, "
          f"stall_timeout {args.stall_timeout}s; warm start {warm}; exit codes {codes}; {took:.0f}s in all")
    print(f"{'fault':<24} {'node':>4} {'left out':>8} {'cause':>6} {'fault->step s':>13} {'heard->relaunch s':>17} "
          f"{'relaunch->rank s':>16} {'rank import s':>13} {'joined->step s':>14} {'resumed at':>10} "
          f"{'steps lost':>10}")
    for row in found:
        print(f"{KINDS.get(row['fault'], row['fault']):<24} {row['node']:>4} {str(row['left_out']):>8} "
              f"{str(row['cause']):>6} {str(row['fault_to_step_s']):>13} {str(row['heard_to_relaunch_s']):>17} "
              f"{str(row['launch_s']):>16} {str(row['import_s']):>13} {str(row['joined_to_step_s']):>14} "
              f"{str(row['resumed_step']):>10} {str(row['steps_lost']):>10}")
    finished = f"step {done[0]['step']}, state {done[0]['state']}" if done else "no RECOVERY-DONE line"
    print(f"final: generation {record.get('generation')}, training nodes {record.get('members')}, {finished}")


def main():
    global GPUS
    args = parse()
    GPUS = 1 if args.cpu else gpu_count()
    runs = {}
    for warm in (("off", "on") if args.warm_start == "both" else (args.warm_start,)):
        runs[warm] = run_once(args, warm)
        print_table(args, warm, *runs[warm])
    if len(runs) == 2:
        print("\nfault -> first step after it, warm start off / on (the same schedule, one after the other):")
        for cold, warm in zip(runs["off"][0], runs["on"][0]):
            a, b = cold["fault_to_step_s"], warm["fault_to_step_s"]
            ratio = f"{a / b:.2f}x" if a and b else "-"
            print(f"  {KINDS.get(cold['fault'], cold['fault']):<24} {a} s / {b} s  ({ratio}); relaunch -> rank "
                  f"{cold['launch_s']} s / {warm['launch_s']} s")
    return 0 if not any(code for run in runs.values() for code in run[2]) else 1


if __name__ == "__main__":
    sys.exit(main())
