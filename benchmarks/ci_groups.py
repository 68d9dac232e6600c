"""Per-group test time of a CI run, and the wall time xdist's ``--dist loadgroup`` would take with N workers.

Reads per-test durations from pytest JUnit XML files (``--junitxml``: each
test's setup + call + teardown) and/or ``--durations=0`` output (``12.34s call
tests/x.py::test_y@group`` lines, summed per test), collects the suite to learn
each test's markers and fixtures, and puts every test in its xdist group twice:

- before: every real-tool test in the one group ``real-tools`` (ci_gate.shares_machine_state);
- after:  tests/ci_gate.py's group_of (a group per test file, one for Slurm).

Then it replays xdist's LoadScope scheduler (units ordered by test count, the
largest first; a worker takes the next unit when its own run out) for each
worker count and prints the predicted wall time, the longest group (a floor:
one worker runs it in turn) and total/N (the other floor). The replay keeps
each test's measured duration: with more workers than cores the CPU-bound
tests stretch, so a row with N > cores is a lower bound, not a forecast.

Run: ``.venv/bin/python benchmarks/ci_groups.py DURATIONS... [--workers 2,3,4] [--top 15]``
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import ci_gate  # noqa: E402  (tests/ holds the one table of groups)

DURATION_LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)")


def read_junit(path: Path, into: Dict[str, float]) -> None:
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        nodeid = ci_gate.without_group(f"{module}.py::{case.get('name')}")
        into[nodeid] = into.get(nodeid, 0.0) + float(case.get("time") or 0)


def read_durations(path: Path, into: Dict[str, float]) -> None:
    for line in path.read_text(errors="replace").splitlines():
        match = DURATION_LINE.match(line)
        if match:
            nodeid = ci_gate.without_group(match.group(3))
            into[nodeid] = into.get(nodeid, 0.0) + float(match.group(1))


def collected() -> Dict[str, Tuple[Optional[str], Optional[str]]]:
    """Every test's (before, after) group, from a collection of the suite in a child pytest."""
    script = (
        "import json, sys, pytest, ci_gate\n"
        "class P:\n"
        "    def pytest_collection_finish(self, session):\n"
        "        for i in session.items:\n"
        "            m = {k.name for k in i.iter_markers()}\n"
        "            old = ci_gate.TOOL_GROUP if ci_gate.shares_machine_state(i.nodeid, m) else ''\n"
        "            print('GROUP', json.dumps([i.nodeid, old, ci_gate.group_of(i.nodeid, m, i.fixturenames) or '']))\n"
        "sys.exit(pytest.main(['-q', '--collect-only', '-p', 'no:cacheprovider', '-p', 'no:xdist'], plugins=[P()]))\n")
    path = os.pathsep.join(filter(None, [str(REPO / "tests"), os.environ.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": path}, timeout=600)
    groups = {}
    for line in out.stdout.splitlines():
        if line.startswith("GROUP "):
            nodeid, old, new = json.loads(line[len("GROUP "):])
            groups[nodeid] = (old or None, new or None)
    if not groups:
        sys.exit(f"ci_groups: collecting the suite found no test:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return groups


def units(groups: Dict[str, Optional[str]], seconds: Dict[str, float]) -> List[Tuple[int, float, str]]:
    """xdist's work units (a group, or a single ungrouped test): (tests, seconds, name), in its order."""
    count: Dict[str, int] = defaultdict(int)
    total: Dict[str, float] = defaultdict(float)
    for nodeid, group in groups.items():
        unit = group or nodeid
        count[unit] += 1
        total[unit] += seconds.get(nodeid, 0.0)
    order = list(count)  # collection order, then xdist's --loadscope-reorder: most tests first (a stable sort)
    order.sort(key=lambda unit: -count[unit])
    return [(count[unit], total[unit], unit) for unit in order]


def replay(work: List[Tuple[int, float, str]], workers: int) -> float:
    """The wall time of list scheduling in xdist's order: the worker free first takes the next unit."""
    free = [0.0] * workers
    heapq.heapify(free)
    for _, seconds, _ in work:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="JUnit XML (.xml) or --durations output (anything else)")
    parser.add_argument("--workers", default="2,3,4", help="worker counts to replay (default 2,3,4)")
    parser.add_argument("--top", type=int, default=15, help="groups listed (default 15)")
    args = parser.parse_args(argv)
    try:
        counts = [int(n) for n in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers {args.workers!r}: give worker counts separated by commas, e.g. 2,3,4")
    seconds: Dict[str, float] = {}
    for path in args.files:  # a test in two files: the later file's time
        if not path.is_file():
            parser.error(f"{path}: no such file")
        found: Dict[str, float] = {}
        (read_junit if path.suffix == ".xml" else read_durations)(path, found)
        seconds.update(found)
    groups = collected()
    unmeasured = [nodeid for nodeid in groups if nodeid not in seconds]
    before = units({nodeid: old for nodeid, (old, _) in groups.items()}, seconds)
    after = units({nodeid: new for nodeid, (_, new) in groups.items()}, seconds)

    grouped = sorted((u for u in after if u[0] > 1 or u[2].startswith(ci_gate.TOOL_GROUP)), key=lambda u: -u[1])
    pure = sum(s for n, s, unit in after if not unit.startswith(ci_gate.TOOL_GROUP))
    print(f"{len(groups)} tests, {len(seconds)} with a duration ({len(unmeasured)} without: counted as 0 s)")
    print("\n| group (after) | tests | seconds |\n|---|---:|---:|")
    for tests, secs, unit in grouped[:args.top]:
        print(f"| {unit} | {tests} | {secs:.0f} |")
    rest = grouped[args.top:]
    if rest:
        print(f"| {len(rest)} more groups | {sum(u[0] for u in rest)} | {sum(u[1] for u in rest):.0f} |")
    print(f"| pure tests (no group) | {sum(n for n, _, u in after if not u.startswith(ci_gate.TOOL_GROUP))} "
          f"| {pure:.0f} |")
    print("\n| workers | before: replay | before: floor | after: replay | after: floor |\n|---:|---:|---:|---:|---:|")
    for n in counts:
        cells = []
        for work in (before, after):
            total = sum(s for _, s, _ in work)
            cells += [f"{replay(work, n):.0f} s", f"{max(max(s for _, s, _ in work), total / n):.0f} s"]
        print(f"| {n} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
