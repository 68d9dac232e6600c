"""Start-up cost of the ``nodeweave`` command: ``--help``, ``status`` and ``render all --check``.

Runs every case interleaved with ``python -c pass`` (the same interpreter), so machine noise
hits all alike, and prints a Markdown table: median and p90 wall time of the whole child
process, the median's ratio to bare start-up, and whether the median is within the target
(issue 20: 0.2 s each on the development machine).

- ``nodeweave --help``: typer builds and prints the whole command tree; to a pipe as plain text,
  on a terminal (a pseudo-terminal here) with rich's panels, which import rich's markdown and
  traceback modules (typer's).
- ``nodeweave render all --check``: the repository's nodeweave.yaml, every renderer, compared
  with a tree the same code rendered into the scratch folder first (nothing written; a checkout
  whose own files are stale while it is worked on can be measured too). Repeated, an identical
  check is answered from its memo (``nodeweave.rendering.memo``, issue 43); "nothing kept" sets a
  variable of a new value each run, so every run is the full check (and keeps its record).
- ``nodeweave status`` (no engine on PATH): everything before the first node is asked: the
  spec found and loaded, the cluster options merged, the backend opened, the tool looked up
  (exit 3). ``--engine`` adds ``status`` of a local cluster that is down, on podman, which
  is the engine's own inspect and exec calls on top (run it under ``flock /work/engine.lock``).

``--baseline-src DIR`` adds the same commands run from another checkout's ``src`` (e.g.
/work/main/src: the code before this change) through the same interpreter, interleaved too.
Besides wall time it prints CPU time (user + system of the child), which a loaded machine
inflates far less than wall time. The children run without PYTHONDONTWRITEBYTECODE (a shell
may set it): an installed nodeweave has its .pyc files, and compiling sources is not start-up.

    .venv/bin/python benchmarks/cli_startup.py [--runs 21] [--engine] [--baseline-src /work/main/src]
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import pty
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.2
BIN = Path(sys.executable).parent
RUNS = itertools.count()
DOWN_SPEC = "name: nwbench-down\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def render_check(out: Path) -> "list[str]":
    """The repository's spec checked against a tree rendered by the same code (a checkout's own files may be
    stale while it is worked on: the lead re-renders after merging), so each side checks its own tree."""
    return ["render", "all", "--check", "--spec", str(ROOT / "nodeweave.yaml"), "--out", str(out)]


def render_once(program: "list[str]", out: Path, extra: dict) -> None:
    out.mkdir()
    subprocess.run([*program, *render_check(out)[:2], *render_check(out)[3:]], check=True, cwd=ROOT,
                   env={**os.environ, **extra}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cases(engine: bool, scratch: Path, baseline_src):
    nodeweave = str(BIN / "nodeweave")
    (scratch / "nodeweave.yaml").write_text(DOWN_SPEC)
    bare_path = str(BIN)  # the venv's own commands, no podman/docker/kubectl
    out = {
        "python -c pass": ([sys.executable, "-c", "pass"], ROOT, None, {0}, {}),
        "nodeweave --help (to a pipe: plain)": ([nodeweave, "--help"], ROOT, None, {0}, {}),
        "nodeweave --help (on a terminal: rich panels)": ([nodeweave, "--help"], ROOT, None, {0}, {"TTY": "1"}),
        "nodeweave render all --check": ([nodeweave, *render_check(scratch / "rendered")], ROOT, None, {0}, {}),
        "nodeweave render all --check (nothing kept: a new variable each run)":  # its own tree: its own record
            ([nodeweave, *render_check(scratch / "rendered-fresh")], ROOT, None, {0}, {"FRESH": "1"}),
        "nodeweave status (no engine: up to the nodes)": ([nodeweave, "status"], scratch, bare_path, {3}, {}),
    }
    trees = ("rendered", "rendered-fresh")
    for tree in trees:
        render_once([nodeweave], scratch / tree, {})
    if baseline_src is not None:
        there = {"PYTHONPATH": str(baseline_src)}
        for tree in trees:
            render_once([sys.executable, "-m", "nodeweave.cli"], scratch / f"{tree}-baseline", there)
        theirs = {str(scratch / tree): str(scratch / f"{tree}-baseline") for tree in trees}
        for name, (argv, cwd, path, codes, extra) in list(out.items())[1:]:
            run_there = [sys.executable, "-m", "nodeweave.cli", *[theirs.get(w, w) for w in argv[1:]]]
            out[f"{name} [baseline]"] = (run_there, cwd, path, codes | {1}, {**extra, **there})
    if engine:
        out["nodeweave status (podman, cluster down)"] = ([nodeweave, "status", "--engine", "podman"], scratch, None,
                                                          {1}, {})
    return out


def sample(argv, cwd, path, codes, extra) -> "tuple[float, float]":
    extra = dict(extra)
    tty = extra.pop("TTY", None)
    if extra.pop("FRESH", None):
        extra["NWBENCH_RUN"] = str(next(RUNS))
    env = {**os.environ, "COLUMNS": "120", **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed nodeweave has its .pyc files; compiling is not start-up
    if path is not None:
        env["PATH"] = path
    leader, stdout = (pty.openpty() if tty else (None, subprocess.DEVNULL))
    drain = threading.Thread(target=_drain, args=(leader,), daemon=True) if tty else None
    if drain:
        drain.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if tty:
        os.close(stdout)
        drain.join(timeout=5)
        os.close(leader)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in codes:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return seconds, cpu


def _drain(fd) -> None:
    """Read a pseudo-terminal's output as it comes, so a long help never blocks on a full buffer."""
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--engine", action="store_true", help="also status of a down local cluster on podman")
    parser.add_argument("--baseline-src", type=Path, help="also run every command from this checkout's src/")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nwbench-") as scratch:
        todo = cases(args.engine, Path(scratch), args.baseline_src)
        for case in todo.values():  # warm the page cache and the .pyc files
            sample(*case)
        times = {name: [] for name in todo}
        for _ in range(args.runs):
            for name, case in todo.items():
                times[name].append(sample(*case))
    base = statistics.median(t for t, _ in times["python -c pass"])
    load = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {args.runs} runs each, interleaved")
    print()
    base_cpu = statistics.median(c for _, c in times["python -c pass"])
    print(f"| command | median wall ms | p90 wall ms | median CPU ms | wall x python -c pass | "
          f"CPU x python -c pass | within {TARGET_S * 1000:.0f} ms |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, pairs in times.items():
        walls = sorted(t for t, _ in pairs)
        median = statistics.median(walls)
        p90 = walls[max(0, int(len(walls) * 0.9) - 1)]
        cpu = statistics.median(c for _, c in pairs)
        within = "-" if name == "python -c pass" else ("yes" if median <= TARGET_S else "NO")
        print(f"| {name} | {median * 1000:.1f} | {p90 * 1000:.1f} | {cpu * 1000:.1f} | {median / base:.2f} | "
              f"{cpu / base_cpu:.2f} | {within} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
