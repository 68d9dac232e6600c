"""Where `nodeweave run`'s time to every rank's first line goes at 64 nodes against 2, the harness's share apart.

The nodes are those of ``benchmarks/verbs_scale.py``: bare hosts reached
through ``benchmarks/ssh_standin.sh`` as ``ssh``, all on this machine's cores.
Four ways to get a first line from every node are timed in the same run,
interleaved round by round, each started with all nodes at once (32 spawns in
flight, as ``nodeweave run`` does):

- ``stand-in``: ``ssh HOST -- sh -c 'echo first-line'``: the transport stand-in alone;
- ``python``: ``ssh HOST -- python -c 'print(...)'``: plus one Python start per node, the least any Python
  agent on the node costs (on a real cluster each node pays it on its own cores; here 64 share 2);
- ``nodes``: the exact argv ``nodeweave run`` gives each node (cd, env, ``nodeweave-entrypoint --mode run``,
  its planning and check-in with node 0), spawned by this script: nodeweave's node side without its CLI;
- ``nodeweave run``: the whole verb (CLI start-up, run folder, fan-out, output), to every ``[node-i] first-line``;
  with ``--baseline-src`` (repeatable), also ``nodes`` and the verb with another checkout's code (both sides),
  interleaved.

The nodes import nodeweave from bytecode where it is there, as a pip-installed nodeweave does (pip compiles
it at install). A checkout gets its ``__pycache__`` on first import, unless ``PYTHONDONTWRITEBYTECODE`` is
set (as on this shared machine): then every node compiles each entrypoint module again, ~50 ms more CPU per
node. So the script first compiles this checkout's package and every ``--baseline-src`` (``compileall``; the
``__pycache__`` folders are git-ignored), unless ``--no-compile``; the header says which trees have bytecode.

Each row also gives the CPU seconds of the processes it started (the nodes; for ``nodeweave run`` the CLI
and its nodes). What nodeweave adds over the harness at N nodes is ``run - python``; what its CLI adds is
``run - nodes``.

    nice .venv/bin/python benchmarks/run_fanout.py [--nodes 2,64] [--rounds 3] [--baseline-src /work/main/src]...
"""

import argparse
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_scale import NODEWEAVE, _cluster  # noqa: E402  (the same cluster and CLI wrapper)

FIRST = "first-line"
JOBS = 32  # nodeweave run's SPAWN_JOBS


def _children_cpu():
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _first_lines(argvs, env, cwd, wanted):
    """Start every argv at once (JOBS spawns in flight); seconds until ``wanted`` first lines, CPU-s used."""
    cpu0, started = _children_cpu(), time.monotonic()
    seen, done, lock, tail = set(), threading.Event(), threading.Lock(), []

    def spawn(argv):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, start_new_session=True, text=True)
        threading.Thread(target=read, args=(proc,), daemon=True).start()
        return proc

    def read(proc):
        for line in proc.stdout:
            tail[:] = (tail + [line])[-5:]
            if FIRST in line and "echo" not in line and "print" not in line:
                with lock:
                    seen.add(line.split(FIRST)[-1].strip())
                    if len(seen) >= wanted:
                        done.set()

    with ThreadPoolExecutor(JOBS) as pool:
        procs = list(pool.map(spawn, argvs))
    ok = done.wait(60)
    seconds = time.monotonic() - started
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    if not ok:
        raise SystemExit(f"only {len(seen)} of {wanted} first lines came; the last lines: {''.join(tail)}")
    return seconds, _children_cpu() - cpu0


def _entrypoints_cpu(hosts_root):
    """CPU-s of every live recorded run's process (the entrypoint, exec'd into the command), from /proc."""
    total = 0.0
    for record in hosts_root.glob("*/tmp/nodeweave/runs/*/run.json"):
        try:
            pid = json.loads(record.read_text())["pid"]
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except (OSError, ValueError, KeyError):
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _node_argvs(work, env, nodes):
    """The argv `nodeweave run` gave each node, from a run folder's run.json, and a fresh run id for each use."""
    command = ["sh", "-c", f'echo {FIRST} "$NODE_RANK"; exec sleep 600']
    proc = subprocess.Popen([*NODEWEAVE, "run", "--spec", str(work / "nodeweave.yaml"), "--", *command], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    seen = 0
    for line in proc.stdout:
        seen += FIRST in line and "echo" not in line
        if seen == nodes:
            break
    subprocess.run([*NODEWEAVE, "stop", "--spec", str(work / "nodeweave.yaml"), "--grace", "1"], cwd=work, env=env,
                   capture_output=True, timeout=120)
    proc.wait(60)
    run_json = max((work / "runs").glob("*/run.json"), key=lambda p: p.stat().st_mtime)
    data = json.loads(run_json.read_text())
    return [n["argv"] for n in data["nodes"]], data["run_id"]


def _ways(work, env, nodes, argvs, run_id, baseline_srcs=()):
    hosts = [f"127.3.{i // 250}.{i % 250 + 1}" for i in range(nodes)]
    ssh = str(work / "bin" / "ssh")
    counter = iter(range(1, 10 ** 6))

    def fresh():
        run = f"{run_id}-b{next(counter)}"
        return [[a.replace(run_id, run) for a in argv] for argv in argvs]

    def then_stop(way):
        """``way``'s numbers, its CPU-s plus the entrypoints' own (their runs lead process groups of their own,
        so their CPU never comes back to this process); then ``nodeweave stop`` (untimed) ends them."""
        def timed():
            seconds, cpu = way()
            result = seconds, cpu + _entrypoints_cpu(Path(env["NWSCALE_ROOT"]))
            subprocess.run([*NODEWEAVE, "stop", "--spec", str(work / "nodeweave.yaml"), "--grace", "1"], cwd=work,
                           env=env, capture_output=True, timeout=120)
            return result
        return timed

    def run_verb(with_env=env):
        command = ["sh", "-c", f'echo {FIRST} "$NODE_RANK"; exec sleep 600']
        return _first_lines([[*NODEWEAVE, "run", "--spec", str(work / "nodeweave.yaml"), "--", *command]], with_env,
                            work, nodes)

    ways = {
        "stand-in": lambda: _first_lines([[ssh, h, "--", f"sh -c 'echo {FIRST} {i}'"] for i, h in enumerate(hosts)],
                                         env, work, nodes),
        "python": lambda: _first_lines([[ssh, h, "--", f"{sys.executable} -c 'print(\"{FIRST} {i}\")'"]
                                        for i, h in enumerate(hosts)], env, work, nodes),
        "nodes": then_stop(lambda: _first_lines(fresh(), env, work, nodes)),
        "nodeweave run": then_stop(run_verb),
    }
    for src in baseline_srcs:  # another checkout's code, on this side and (PYTHONPATH travels) the nodes'
        older = dict(env, PYTHONPATH=os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")])))
        ways[f"nodes, {src}"] = then_stop(lambda older=older: _first_lines(fresh(), older, work, nodes))
        ways[f"nodeweave run, {src}"] = then_stop(lambda older=older: run_verb(older))
    return ways


def _bytecode(trees, compile_them):
    """Compile each tree's ``nodeweave`` package (unless not ``compile_them``); '<tree>: bytecode yes/no' each."""
    said = []
    for tree in trees:
        package = Path(tree) / "nodeweave"
        if compile_them:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        sources = list((package / "entrypoint").rglob("*.py"))
        cached = [p for p in sources if list((p.parent / "__pycache__").glob(f"{p.stem}.*.pyc"))]
        said.append(f"{tree}: bytecode for {len(cached)}/{len(sources)} entrypoint modules")
    return said


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="2,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", action="append", default=[],
                        help="another checkout's src/ (e.g. /work/main/src): its nodes and `nodeweave run` too")
    parser.add_argument("--no-compile", action="store_true", help="leave the trees' bytecode as it is")
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent.parent / "src")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f}", flush=True)
    for line in _bytecode([here, *args.baseline_src], not args.no_compile):
        print(f"  {line}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="nwscale-fanout-") as root:
        for n in [int(x) for x in args.nodes.split(",")]:
            work, env = _cluster(root, n)
            ways = _ways(work, env, n, *_node_argvs(work, env, n), baseline_srcs=args.baseline_src)
            for round_ in range(args.rounds):
                for name, way in ways.items():
                    seconds, cpu = way()
                    results.setdefault((n, name), []).append((seconds, cpu))
                    print(f"  {n} nodes, round {round_ + 1}, {name}: {seconds:.2f} s, {cpu:.2f} CPU-s "
                          f"(load {os.getloadavg()[0]:.1f})", flush=True)
    _table(results)
    return 0


def _table(results):
    counts = sorted({n for n, _ in results})
    names = list(dict.fromkeys(name for _, name in results))
    med = {key: (statistics.median(s for s, _ in v), statistics.median(c for _, c in v)) for key, v in results.items()}
    print(f"\n| to every node's first line | " + " | ".join(f"{n} nodes, s (CPU-s)" for n in counts)
          + f" | {counts[-1]} against {counts[0]}, s |")
    print("|---|" + "---:|" * (len(counts) + 1))
    for name in names:
        cells = " | ".join(f"{med[(n, name)][0]:.2f} ({med[(n, name)][1]:.2f})" for n in counts)
        print(f"| {name} | {cells} | +{med[(counts[-1], name)][0] - med[(counts[0], name)][0]:.2f} |")
    hi, lo = counts[-1], counts[0]
    grow = {name: med[(hi, name)][0] - med[(lo, name)][0] for name in names}
    print(f"\nnodeweave's share of the growth ({lo} -> {hi} nodes): run - python = "
          f"{grow['nodeweave run'] - grow['python']:+.2f} s; its CLI's (run - nodes) = "
          f"{grow['nodeweave run'] - grow['nodes']:+.2f} s; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
