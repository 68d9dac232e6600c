"""Faults on 4 podman nodes + 1 spare: time to train again, steps lost, goodput; torchrun and no recovery beside.

    flock /tmp/nw-engine.lock .venv/bin/python benchmarks/recovery_goodput.py --quick --mode nodeweave --out r.json
    .venv/bin/python benchmarks/recovery_goodput.py --table r.json        # the Markdown tables of saved modes
    python3 benchmarks/recovery_goodput.py --nodes processes --gpus 1 --mode nodeweave   # no engine: see below

Each mode's containers are its own (``nwrb-<mode>-N``, ``-soak`` for ``--soak``), so the modes can run side by
side, one process each, and meet the same machine load: ``--mode nodeweave`` and ``--mode torchrun`` started
together are the fairest comparison on a shared machine. ``--soak`` runs without faults and lists every
line of a recovery, a node left out or a stall report (the goal: none).

``--nodes processes`` makes each node a process tree on this machine instead of a container
(recovery_processes.py: its own hostname, TMPDIR and ``NCCL_HOSTID``, with ``--gpus N`` GPU ``N % GPUS``),
for the lent GPU machines, which have no container engine: the same job under NCCL, the same faults.

Each mode trains examples/resilient_train.py (DDP, gloo, one rank per node,
a checkpoint every ``--ckpt-every``) for ``--minutes`` on fresh containers and
meets the same fault schedule, one fault every ``--fault-every`` seconds, in
this order: ``kill -9`` of a rank, a SIGSTOPped rank, a killed container
(node lost for good), a node that fails at every start (a marker file, then
its rank killed), node 0's container killed and started again with its
command (a restart policy). Modes:

- ``nodeweave``: every node runs this checkout's entrypoint (the zipapp in
  entrypoint/) with recovery on (``NODEWEAVE_RECOVERY=on``, the spec's
  ``recovery.enabled``; ``NODEWEAVE_SPARES=1``; ``NODEWEAVE_CHECKPOINT_DIR``),
  5 nodes for a job of 4 (elastic ``3:4`` unless ``--min-nodes 4``: once the
  spare is spent and a node is lost for good, it goes on with 3); the ranks
  resume from ``NODEWEAVE_RESUME_FROM``; stall watch ``--stall-timeout``.
- ``nodeweave-cold``: the same with ``recovery.warm_start`` off (``NODEWEAVE_WARM_START=off``): every
  generation's launcher started cold, as before warm start; beside ``nodeweave`` it measures what the held
  launcher saves;
- ``torchrun``: plain ``torchrun --max-restarts`` with c10d rendezvous on
  node 0, 4 nodes, restarting in place; the script resumes from its own
  ``latest`` (``--resume-latest``).
- ``none``: the entrypoint without recovery, 4 nodes: the first fault ends it.

Per fault: the seconds from the fault to the first step completed after the
job resumed (its ``resumed from step N`` line), the steps lost (the last step
done before the fault minus N) and the node the entrypoint left out (its
line, as printed). Goodput: the time of the steps the final model kept (each
step's last execution) over the wall time of the run. A fault the job did not
recover from before the next one is shown as such; the wall time still counts.

With nodeweave, node 0's own goodput accounting (its ``goodput.json``, the step lines read through
``metrics.step_pattern``) is put beside the workload's truth, bucket by bucket (goodput_truth.py): a
machine whose ranks take a minute to start (a loaded 2-core VM: torch's import ~35 s) needs a longer
schedule than ``--quick``, e.g. ``--minutes 11.5 --fault-every 120 --first-fault 150`` (docs/benchmarks.md).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from goodput_truth import compare, truth  # noqa: E402
from recovery_cluster import PodmanNodes  # noqa: E402
from recovery_processes import ProcessNodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "resilient_train.py"
MODES = ("nodeweave", "nodeweave-cold", "torchrun", "none")
SHORT = {"nodeweave": "nodew", "nodeweave-cold": "nwcold", "torchrun": "torch", "none": "none"}  # container names
FAULTS = ("kill -9 rank", "SIGSTOP rank", "container killed", "bad node", "node 0 killed")
STEP = re.compile(r"\] step (\d+) loss \S+ t=([0-9.]+)")
STEP_PATTERN = r"\] step (?P<step>\d+) loss "  # for node 0's goodput timeline (its accounting is compared)
RESUMED = re.compile(r"\] resumed from step (\d+) ")
LEFT_OUT = re.compile(r"LEFT OUT|takes (?:its|the) place|did not check in again: left out")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, action="append",
                        help="which to run (repeat; default all three, one after another)")
    parser.add_argument("--minutes", type=float, default=30.0, help="run length per mode (default 30)")
    parser.add_argument("--fault-every", type=float, default=300.0, help="seconds between faults (default 300)")
    parser.add_argument("--ckpt-every", default="30s", help="the script's checkpoint period (default 30s)")
    parser.add_argument("--step-time", type=float, default=0.25, help="seconds per step at least (default 0.25)")
    parser.add_argument("--stall-timeout", type=int, default=30, help="nodeweave's stall_timeout (default 30 s)")
    parser.add_argument("--min-nodes", type=int, default=3, choices=(1, 2, 3, 4),
                        help="nodeweave: the elastic minimum (default 3: nodes 3:4, so the job goes on with 3 "
                        "once the spare is spent); 4 = a fixed-size job, which ends when no spare is left")
    parser.add_argument("--quick", action="store_true", help="a few minutes: 5 min per mode, a fault every 55 s, "
                        "a checkpoint every 10 s, stall_timeout 20 s")
    parser.add_argument("--soak", action="store_true", help="no faults: count the recoveries a healthy run "
                        "starts (generations, nodes left out, stall reports; the goal is 0)")
    parser.add_argument("--image", default="localhost/nodeweave-bench/recovery:cpu")
    parser.add_argument("--nodes", choices=("podman", "processes"), default="podman",
                        help="podman: a container per node (default); processes: a process tree per node on this "
                        "machine, for a machine with GPUs and no container engine (recovery_processes.py)")
    parser.add_argument("--gpus", type=int, default=0, help="--nodes processes: node N sees GPU N %% GPUS alone, "
                        "NCCL over its network transport (default 0: no GPU, gloo on CPU)")
    parser.add_argument("--first-fault", type=float, default=None,
                        help="seconds to the first fault (default: --fault-every)")
    parser.add_argument("--zipapp", default=str(ROOT / "entrypoint" / "nodeweave-entrypoint.pyz"),
                        help="the entrypoint the nodes run (default: the rendered one; `nodeweave render entrypoint "
                        "--out DIR` makes one from this checkout's sources)")
    parser.add_argument("--out", help="add each mode's results to this JSON file")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the tables of saved results and stop")
    parser.add_argument("--account", nargs="+", metavar="JSON", help="account saved results' node 0 timelines and "
                        "truth again with this checkout's arithmetic, print their tables and stop")
    args = parser.parse_args(argv)
    if args.quick:
        args.minutes, args.fault_every, args.ckpt_every, args.stall_timeout = 5.0, 55.0, "10s", 20
    if args.first_fault is None:
        args.first_fault = args.fault_every
    return args


def node_commands(mode, args, nodes):
    """{node index: (argv, env)} for a mode: 5 nodes with nodeweave (one spare), 4 otherwise."""
    ckpt = f"{nodes.workdir}/checkpoints"
    address, port = nodes.master()

    def train(index):
        return [SCRIPT, "--steps", "100000000", "--step-time", str(args.step_time), "--hidden", "64",
                "--ckpt-every", args.ckpt_every, "--ckpt-dir", ckpt, "--bad-node-marker", nodes.bad_marker(index)]

    base_env = {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    if mode == "torchrun":
        return {i: (["torchrun", "--nnodes", "4", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                     "--rdzv-endpoint", f"{address}:{port}", "--rdzv-id", "bench", *nodes.torchrun_node_args(i),
                     "--max-restarts", "1000", "--monitor-interval", "1", *train(i), "--resume-latest"], base_env)
                for i in range(4)}
    env = dict(base_env, NODEWEAVE_WAIT_TIMEOUT="120", NODEWEAVE_NNODES="4",
               NODEWEAVE_STALL_TIMEOUT=str(args.stall_timeout), NODEWEAVE_STALL_WARN=str(args.stall_timeout // 2))
    if mode.startswith("nodeweave"):
        if mode == "nodeweave-cold":
            env["NODEWEAVE_WARM_START"] = "off"
        env.update(NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR=ckpt,
                   NODEWEAVE_STEP_PATTERN=STEP_PATTERN,  # metrics.step_pattern: the script's own step lines
                   NODEWEAVE_NNODES=f"{args.min_nodes}:4" if args.min_nodes < 4 else "4")
    count = 5 if mode.startswith("nodeweave") else 4
    return {i: ([nodes.python, f"{nodes.workdir}/nodeweave-entrypoint.pyz", "--launcher", "torchrun",
                 "--node-rank", str(i), "--nproc-per-node", "1", "--master-addr", address, "--master-port",
                 str(port), "--", *train(i)], env) for i in range(count)}


def training_nodes(nodes, started):
    """Indices whose node runs a rank now (node 0 last, so faults aim at the others first)."""
    found = [i for i in started if nodes.alive(i) and nodes.rank_pids(i, SCRIPT)]
    return sorted(found, key=lambda i: (i == 0, i))


def inject(kind, nodes, started):
    """Apply one fault: (the node it hit, the host time it was applied); (None, now) when no node was training."""
    if kind == "node 0 killed":
        return 0, nodes.restart(started[0])
    others = [i for i in training_nodes(nodes, started) if i != 0]
    if not others:
        return None, time.time()
    target = others[0]
    if kind == "kill -9 rank":
        at = nodes.signal_rank(target, SCRIPT, "KILL")
    elif kind == "SIGSTOP rank":
        at = nodes.signal_rank(target, SCRIPT, "STOP")
    elif kind == "container killed":
        at = nodes.kill(target)
    else:  # bad node: from now on it fails at every start; its rank dies now
        nodes.make_bad(target)
        at = nodes.signal_rank(target, SCRIPT, "KILL")
    return (target, at) if at is not None else (None, time.time())


SPURIOUS = re.compile(r"recovery: generation \d+ ended|LEFT OUT")  # a recovery: what a healthy run must not do
WARNED = re.compile(r"STALL:|STRAGGLER:")  # reports that stop or restart nothing (straggler_is_fault off)


def run_mode(mode, args):
    prefix = f"nwrb-{SHORT[mode]}{'-soak' if args.soak else ''}"  # modes may run side by side
    work = Path(tempfile.mkdtemp(prefix=f"nw-recovery-{mode}-"))
    nodes = ProcessNodes(prefix, work, args.gpus) if args.nodes == "processes" else PodmanNodes(prefix)
    shutil.copy(ROOT / "examples" / SCRIPT, work / SCRIPT)
    shutil.copy(args.zipapp, work / "nodeweave-entrypoint.pyz")
    for path in (work, *work.iterdir()):
        path.chmod(0o777 if path.is_dir() else 0o644)
    commands = node_commands(mode, args, nodes)
    nodes.up(args.image, work, len(commands))
    faults = []
    try:
        started = time.time()
        running = {i: nodes.start(i, argv, env) for i, (argv, env) in commands.items()}
        deadline = started + args.minutes * 60
        for number, kind in enumerate(_schedule(args)):
            at = started + args.first_fault + number * args.fault_every
            if at >= deadline:
                break
            time.sleep(max(0.0, at - time.time()))
            target, fault_time = inject(kind, nodes, running)
            faults.append({"kind": kind, "node": target, "t": fault_time})
            print(f"[{mode}] {fault_time - started:6.1f} s: {kind} on node {target}", flush=True)
        time.sleep(max(0.0, deadline - time.time()))
        ended = time.time()
        leftovers = {i: nodes.stopped_pids(i, SCRIPT) for i in running if nodes.alive(i)}
        timeline = nodes.goodput_record(0) if mode.startswith("nodeweave") else None
    finally:
        nodes.down(len(commands))
        shutil.rmtree(work, ignore_errors=True)
    lines = sorted((t, i, text) for i, node in running.items() for t, text in node.lines)
    result = measure(mode, args, lines, faults, started, ended)
    if timeline is not None:
        result["accounting"] = check_accounting(timeline, lines, faults, started, ended)
    result["stopped_ranks_at_end"] = {str(i): pids for i, pids in leftovers.items() if pids}
    result["fault_times_s"] = [[f["kind"], f["node"], round(f["t"] - started, 3)] for f in faults]  # from the start
    result["nodes"] = args.nodes if args.nodes == "podman" else f"processes, {args.gpus} GPU(s)"
    return result


def _schedule(args):
    if args.soak:
        return []
    count = int(args.minutes * 60 // args.fault_every) + 1
    return [FAULTS[k % len(FAULTS)] for k in range(count)]


def measure(mode, args, lines, faults, started, ended):
    """Per fault: recovery time, steps lost, who was left out; and the run's goodput."""
    steps = [(float(m.group(2)), int(m.group(1))) for _, _, text in lines for m in [STEP.search(text)] if m]
    steps.sort()
    rows = []
    for k, fault in enumerate(faults):
        window_end = faults[k + 1]["t"] if k + 1 < len(faults) else ended
        rows.append(_fault_row(fault, lines, steps, window_end))
    return {"mode": mode, "minutes": args.minutes, "fault_every": args.fault_every, "ckpt_every": args.ckpt_every,
            "step_time": args.step_time, "faults": rows, "goodput": goodput(steps, started, ended),
            "final_step": max((s for _, s in steps), default=0), "wall_s": ended - started, "soak": args.soak,
            "spurious": [f"{t - started:.1f} node{i}: {text}" for t, i, text in lines if SPURIOUS.search(text)],
            "warnings": [f"{t - started:.1f} node{i}: {text}" for t, i, text in lines if WARNED.search(text)],
            "log": [f"{t - started:.1f} node{i}: {text}" for t, i, text in lines]}


def _fault_row(fault, lines, steps, window_end):
    t0 = fault["t"]
    before = [s for t, s in steps if t <= t0]
    resume = next(((t, int(m.group(1))) for t, _, text in lines if t0 < t < window_end
                   for m in [RESUMED.search(text)] if m), None)
    row = {"kind": fault["kind"], "node": fault["node"], "recovered_s": None, "steps_lost": None, "left_out": ""}
    if resume:
        after = [t for t, s in steps if t > resume[0] - 1 and t < window_end and s > resume[1]]
        if after:
            row["recovered_s"] = round(after[0] - t0, 1)
            row["steps_lost"] = max(before, default=0) - resume[1]
    left = next((text.strip() for t, _, text in lines if t0 < t < window_end and LEFT_OUT.search(text)), "")
    row["left_out"] = left[:160]
    return row


def goodput(steps, started, ended):
    """Time of each step's last execution (the work the final model kept) over the wall time."""
    last_run = {}
    previous = None
    gaps = []
    for t, step in steps:
        if previous is not None and step == previous[1] + 1:
            gaps.append(t - previous[0])
        previous = (t, step)
    typical = statistics.median(gaps) if gaps else 0.0
    previous = None
    for t, step in steps:
        took = t - previous[0] if previous is not None and step == previous[1] + 1 else typical
        last_run[step] = min(took, 10 * typical) if typical else took
        previous = (t, step)
    useful = sum(last_run.values())
    return round(useful / (ended - started), 3) if ended > started else 0.0


def check_accounting(timeline, lines, faults, started, ended):
    """Node 0's goodput accounting (its goodput.json, closed at the run's end) beside the workload's own truth
    (goodput_truth.py), in percentage points of the run's wall time."""
    sys.path.insert(0, str(ROOT / "src"))
    from nodeweave.entrypoint.metrics.goodput import account

    accounted = account(timeline, now=ended)
    if timeline.get("ended"):  # the job ended before the run did (node 0 exited): both account its life
        ended = min(ended, timeline["ended"])
    true = truth(lines, faults, started, ended)
    wall = ended - started
    return {"wall_s": round(wall, 2), "accounted_wall_s": accounted["wall_s"],
            "launched_after_s": round(timeline["launched"] - started, 2), "accounted": accounted, "truth": true,
            "rows": [[name, a, t, round(d, 2)] for name, a, t, d in compare(accounted, true, wall)],
            "timeline": timeline}


def account_again(result):
    """A saved result with its accounting check redone from what it kept (node 0's timeline, the lines at
    0.1 s, the faults' times)."""
    check = result.get("accounting")
    if not check or "fault_times_s" not in result:
        return result
    started = check["timeline"]["launched"] - check["launched_after_s"]
    lines = []
    for line in result["log"]:
        at, rest = line.split(" ", 1)
        node, text = rest.split(": ", 1)
        lines.append((started + float(at), int(node[len("node"):]), text))
    faults = [{"kind": kind, "node": node, "t": started + at} for kind, node, at in result["fault_times_s"]]
    again = check_accounting(check["timeline"], lines, faults, started, started + result["wall_s"])
    return dict(result, accounting=again)


def table(results):
    print("| mode | fault | node | first step after it (s) | steps lost | left out (the entrypoint's line) |")
    print("|---|---|---|---|---|---|")
    for result in results:
        for row in result["faults"]:
            recovered = "not recovered" if row["recovered_s"] is None else f"{row['recovered_s']:.1f}"
            lost = "-" if row["steps_lost"] is None else str(row["steps_lost"])
            print(f"| {result['mode']} | {row['kind']} | {row['node']} | {recovered} | {lost} | "
                  f"{row['left_out'] or '-'} |")
    print("\n| mode | run (min) | fault every (s) | checkpoint every | final step | goodput |")
    print("|---|---|---|---|---|---|")
    for result in results:
        print(f"| {result['mode']} | {result['minutes']:g} | {result['fault_every']:g} | {result['ckpt_every']} "
              f"| {result['final_step']} | {result['goodput'] * 100:.0f}% |")
    for result in results:
        check = result.get("accounting")
        if not check:
            continue
        print(f"\n{result['mode']}: node 0's goodput accounting against the workload's own steps "
              f"(wall {check['wall_s']:g} s; node 0's entrypoint started {check['launched_after_s']:g} s in, "
              f"its wall {check['accounted_wall_s']:g} s)")
        print("\n| bucket | accounted (s) | truth (s) | difference (points of wall) |")
        print("|---|---|---|---|")
        for name, accounted, true, points in check["rows"]:
            unit = "%" if name == "productive" else ""
            print(f"| {name} | {accounted:g}{unit} | {true:g}{unit} | {points:+.1f} |")
    for result in results:
        if result.get("soak"):
            print(f"\n{result['mode']} soak, {result['minutes']:g} min without faults: "
                  f"{len(result['spurious'])} spurious recovery line(s), {len(result.get('warnings', []))} "
                  "stall/straggler report line(s) (reports only)" + "".join(
                      f"\n    {line}" for line in (result["spurious"] + result.get("warnings", []))[:20]))
    for result in results:
        if result.get("stopped_ranks_at_end"):
            print(f"\n{result['mode']}: SIGSTOPped ranks still there at the end (container: pids): "
                  f"{result['stopped_ranks_at_end']}")


def main(argv=None):
    args = parse_args(argv)
    if args.table or args.account:
        results = [r for path in args.table or args.account for r in json.loads(Path(path).read_text())]
        if args.account:
            results = [account_again(r) for r in results]
        table(results)
        return 0
    if args.nodes == "podman" and shutil.which("podman") is None:
        raise SystemExit("podman is not installed: run with --nodes processes, or install podman")
    saved = json.loads(Path(args.out).read_text()) if args.out and os.path.exists(args.out) else []
    results = []
    for mode in args.mode or ["nodeweave", "torchrun", "none"]:
        result = run_mode(mode, args)
        results.append(result)
        saved = [r for r in saved if (r["mode"], r.get("soak")) != (mode, args.soak)] + [result]
        if args.out:
            Path(args.out).write_text(json.dumps(saved, indent=1))
    nodes = f"podman, image {args.image}" if args.nodes == "podman" else f"process-tree nodes, {args.gpus} GPU(s)"
    print(f"\nmachine: {os.uname().nodename}, {os.cpu_count()} CPUs; {nodes}\n")
    table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
