"""A 2048-node job with 64 spares (2112 containers) and nothing up: what each verb costs and prints.

Issue 43 (walk6 W4, W5, W6): at this size ``status`` and ``logs`` said nothing for two minutes, ``run --dry-run``
took a minute and lost its "the real run would end with exit 3" first line, and ``up --dry-run`` printed every
node's name in one 30 KB line after 14 s. Each verb runs in a scratch folder holding the walk's spec, once from
this checkout's ``src`` and once from a baseline's (``--baseline-rev``, default the commit before this branch's
first change, exported with ``git archive``; or ``--baseline-src DIR``), interleaved, through the same
interpreter, on the engine this machine has (podman, which answers "no such container" for every name). It
prints a Markdown table: wall and CPU time (user + system of the child, which a loaded machine inflates far less
than wall time), exit status, the longest line, and the first line, cut.

    .venv/bin/python benchmarks/big_job.py [--baseline-rev REV | --baseline-src DIR] [--timeout 150]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = """name: team
image: {variant: cuda12}
nodes: 2048
gpus_per_node: 8
launcher: {type: torchrun, script: train.py}
recovery: {enabled: true, spares: 64, checkpoint_dir: checkpoints}
"""
VERBS = {
    "status": ["status"],
    "logs": ["logs"],
    "run --dry-run": ["run", "--dry-run"],
    "up --dry-run": ["up", "--dry-run"],
    "up -t kubernetes --dry-run": ["up", "-t", "kubernetes", "--dry-run"],
    "down --dry-run": ["down", "--dry-run"],
}


def folder(parent: Path) -> Path:
    made = parent / "big"
    made.mkdir()
    (made / "nodeweave.yaml").write_text(SPEC)
    (made / "train.py").write_text("print('hi')\n")
    (made / "checkpoints").mkdir()
    (made / "checkpoints").chmod(0o777)  # the image's user writes it: up refuses a folder it cannot
    return made


def measure(src: Path, argv: "list[str]", cwd: Path, timeout: float) -> dict:
    """One run of ``nodeweave ARGV`` from ``src``: wall, CPU, exit status, its output's lines."""
    env = {**os.environ, "PYTHONPATH": str(src), "HOME": str(cwd)}
    env.pop("NODEWEAVE_ENGINE", None)
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "nodeweave.cli", *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = child.communicate(timeout=timeout)
        code = child.returncode
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
        code = None
    wall = time.monotonic() - started
    lines = out.decode("utf-8", "replace").splitlines()
    return {"wall": wall, "code": code, "lines": lines, "cpu": _cpu()}


_LAST = [0.0]


def _cpu() -> float:
    """The CPU the last child used: the growth of every waited-for child's user + system time (engine calls
    included: they are its children)."""
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = now.ru_utime + now.ru_stime
    used, _LAST[0] = total - _LAST[0], total
    return used


def baseline_tree(rev: str, into: Path) -> Path:
    tree = into / f"baseline-{rev[:12]}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree / "src"


def default_rev() -> str:
    """The commit before this branch's first walk6 scale change (the code the walk ran)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "log", "--format=%H %s"], capture_output=True, text=True,
                            check=True).stdout.splitlines()
    firsts = [line.split()[0] for line in listed if line.split(" ", 1)[1].startswith("walk6 W4/W5")]
    return f"{firsts[-1]}~1" if firsts else "HEAD"


def row(name: str, side: str, result: dict) -> str:
    lines = result["lines"]
    first = (lines[0] if lines else "(no output)").replace("|", "\\|")
    code = "killed" if result["code"] is None else str(result["code"])
    longest = max((len(line) for line in lines), default=0)
    return (f"| {name} | {side} | {result['wall']:.1f} | {result['cpu']:.1f} | {code} | {len(lines)} | {longest} | "
            f"`{first[:90]}{'...' if len(first) > 90 else ''}` |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-rev", help="a commit of this repository (default: before walk6 W4/W5)")
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src instead")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds before a verb is killed")
    parser.add_argument("--verbs", nargs="*", default=list(VERBS), help="which verbs (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nw-bigjob-") as scratch:
        scratch = Path(scratch)
        if args.baseline_src is not None:
            base, said = args.baseline_src.resolve(), str(args.baseline_src)
        else:
            rev = args.baseline_rev or default_rev()
            base = baseline_tree(subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True,
                                                text=True, check=True).stdout.strip(), scratch)
            said = f"git {rev}"
        where = folder(scratch)
        print(f"# 2048 nodes + 64 spares (2112 containers), nothing up; {platform.node()}, {os.cpu_count()} CPU(s), "
              f"load {os.getloadavg()[0]:.1f}; baseline: {said}\n")
        print("| verb | code | wall s | CPU s | exit | lines | longest line | first line |")
        print("|---|---|---:|---:|---|---:|---:|---|")
        for name in args.verbs:
            for side, src in (("baseline", base), ("this", ROOT / "src")):
                print(row(name, side, measure(src, VERBS[name], where, args.timeout)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
