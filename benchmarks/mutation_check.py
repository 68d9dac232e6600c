"""Mutation check, run by hand: flip comparisons, boolean operators and constants in the entrypoint's
policy, verdict, topology and sources modules one at a time, and see whether their tests notice.

Usage: nice -n 10 .venv/bin/python benchmarks/mutation_check.py [MODULE ...] [--list] [--survivors FILE]

Each mutant is the module's AST with one node changed (``==``/``!=``, ``<``/``>=``, ``<=``/``>``,
``in``/``not in``, ``is``/``is not``, ``and``/``or``, a ``not`` dropped, ``+``/``-``, an integer
``n`` -> ``n + 1``, ``True``/``False``), written back with ``ast.unparse`` into a copy of src/
that the tests import first (PYTHONPATH; no bytecode is written, so no stale .pyc). The unmutated
module goes through the same unparse and must pass first. A mutant is killed when its tests fail
(pytest -x, 120 s cap). Prints one row per module and lists the survivors: each either a test to add
or an equivalent mutant (a change no input can show), which the report names. CPU heavy: run it
under ``nice`` and only on these modules' fast tests.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRY = "src/nodeweave/entrypoint"
PATHS = {"policy": "planning/policy.py", "verdict": "checkin/verdict.py", "topology": "planning/topology.py",
         "sources": "planning/sources.py"}
TOPOLOGY_TESTS = ["tests/test_entrypoint_topology.py", "tests/test_entrypoint_contradictions.py",
                  "tests/test_entrypoint_rank_property.py", "tests/test_entrypoint_sources.py"]
MODULES = {
    "policy": ["tests/test_entrypoint_policy.py", "tests/test_entrypoint_contradictions.py"],
    "verdict": ["tests/test_exchange_verdict.py"],
    "topology": TOPOLOGY_TESTS,
    "sources": TOPOLOGY_TESTS,
}
SWAP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.LtE: ast.Gt, ast.Gt: ast.LtE,
        ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
        ast.And: ast.Or, ast.Or: ast.And, ast.Add: ast.Sub, ast.Sub: ast.Add}


def _docstrings(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def sites(tree):
    """[(node, what it becomes)] in ast.walk order: the same order on every fresh parse."""
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found += [(node, ("op", i)) for i, op in enumerate(node.ops) if type(op) in SWAP]
        elif isinstance(node, (ast.BoolOp, ast.BinOp)) and type(node.op) in SWAP:
            found.append((node, ("op", None)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append((node, ("drop-not", None)))
        elif isinstance(node, ast.Constant) and id(node) not in skip:
            if isinstance(node.value, bool) or (isinstance(node.value, int) and not isinstance(node.value, bool)):
                found.append((node, ("const", None)))
    return found


def describe(node, change) -> str:
    kind, index = change
    if kind == "op":
        op = node.ops[index] if index is not None else node.op
        return f"{type(op).__name__} -> {SWAP[type(op)].__name__}"
    if kind == "drop-not":
        return "not x -> x"
    return f"{node.value!r} -> {(not node.value) if isinstance(node.value, bool) else node.value + 1!r}"


class _Drop(ast.NodeTransformer):
    def __init__(self, target):
        self.target = target

    def visit_UnaryOp(self, node):
        return node.operand if node is self.target else self.generic_visit(node)


def mutant(source: str, number: int):
    """(mutated source, line, description) of site ``number``."""
    tree = ast.parse(source)
    node, change = sites(tree)[number]
    text = describe(node, change)
    kind, index = change
    if kind == "op" and index is not None:
        node.ops[index] = SWAP[type(node.ops[index])]()
    elif kind == "op":
        node.op = SWAP[type(node.op)]()
    elif kind == "const":
        node.value = (not node.value) if isinstance(node.value, bool) else node.value + 1
    else:
        tree = _Drop(node).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)), node.lineno, text


def run_tests(copy: Path, tests, timeout=120) -> int:
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        return subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                              cwd=REPO, env=env, capture_output=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return 124  # a mutant that hangs the tests is caught by their timeout: killed


def check(name: str, copy: Path, only_list: bool, numbers=None):
    path = copy / ENTRY / PATHS[name]
    original = (REPO / ENTRY / PATHS[name]).read_text()
    tests = [t for t in MODULES[name] if (REPO / t).is_file()]
    count = len(sites(ast.parse(original)))
    if only_list:
        return {"module": name, "mutants": count, "killed": 0, "survivors": [], "seconds": 0.0, "tests": tests}
    path.write_text(ast.unparse(ast.parse(original)))
    if run_tests(copy, tests) != 0:
        raise SystemExit(f"{name}: the tests fail on the unmutated (unparsed) module; fix that first")
    started, killed, survivors = time.monotonic(), 0, []
    chosen = range(count) if numbers is None else sorted(numbers)
    for number in chosen:
        text, line, what = mutant(original, number)
        path.write_text(text)
        code = run_tests(copy, tests)
        if code == 0:
            survivors.append(f"{ENTRY}/{PATHS[name]}:{line}: {what} [#{number}]")
        else:
            killed += 1
    path.write_text(original)
    return {"module": name, "mutants": len(chosen), "killed": killed, "survivors": survivors,
            "seconds": time.monotonic() - started, "tests": tests}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=f"of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--list", action="store_true", help="count the mutants, run nothing")
    parser.add_argument("--survivors", type=Path, help="also write the survivors to this file")
    parser.add_argument("--recheck", type=Path, help="run only the mutants listed in this survivors file")
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}: accepted {', '.join(MODULES)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="nodeweave-mutants-") as folder:
        copy = Path(folder)
        shutil.copytree(REPO / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        again = {}
        if args.recheck:
            for line in args.recheck.read_text().splitlines():
                module, number = Path(line.split(":")[0]).stem, int(line.rsplit("[#", 1)[1].rstrip("]"))
                again.setdefault(module, set()).add(number)
        for name in [m for m in (args.modules or list(MODULES)) if not args.recheck or m in again]:
            rows.append(check(name, copy, args.list, again.get(name)))
            row = rows[-1]
            print(f"{name}: {row['killed']}/{row['mutants']} killed in {row['seconds']:.0f} s", flush=True)
    print(f"\n| module | mutants | killed | survived | kill rate | time (s) | tests |\n|---|---|---|---|---|---|---|")
    for row in rows:
        rate = 100.0 * row["killed"] / row["mutants"] if row["mutants"] else 0.0
        print(f"| {row['module']} | {row['mutants']} | {row['killed']} | {len(row['survivors'])} | {rate:.1f}% | "
              f"{row['seconds']:.0f} | {', '.join(Path(t).name for t in row['tests'])} |")
    total, killed = sum(r["mutants"] for r in rows), sum(r["killed"] for r in rows)
    if total and not args.list:
        print(f"| all | {total} | {killed} | {total - killed} | {100.0 * killed / total:.1f}% | "
              f"{sum(r['seconds'] for r in rows):.0f} | |")
    survivors = [s for r in rows for s in r["survivors"]]
    if survivors:
        print("\nsurvivors:\n" + "\n".join(survivors))
        if args.survivors:
            args.survivors.write_text("\n".join(survivors) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
