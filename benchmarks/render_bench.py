"""How long the spec loader and the renderers take, and what the CI staleness check costs.

Rows, each the median of N runs interleaved with its baseline in the same run:

- ``parse_spec`` (node tree, every field rule, line numbers) against plain
  ``yaml.safe_load`` of the same text: the price of line-numbered errors;
- each renderer's ``render_files(spec)`` (pure, in-process);
- ``nodeweave render all --check`` as a process (what tests/test_rendered_up_to_date.py
  and CI run), on a fresh render in a temporary directory, against ``python -c pass``
  with the same interpreter.

Run: ``.venv/bin/python benchmarks/render_bench.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "nodeweave.yaml"


def median_ms(fn, runs: int) -> "tuple[float, float]":
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    from nodeweave.targets import compose, images
    from nodeweave.targets import kubernetes as manifests
    from nodeweave.spec import parse_spec

    text = SPEC.read_text()
    spec = parse_spec(text, str(SPEC))
    rows = []
    base, base90 = median_ms(lambda: yaml.safe_load(text), args.runs)
    rows.append(("yaml.safe_load(nodeweave.yaml)", base, base90, 1.0))
    ms, p90 = median_ms(lambda: parse_spec(text, str(SPEC)), args.runs)
    rows.append(("parse_spec(nodeweave.yaml)", ms, p90, ms / base))
    for name, module in (("compose", compose), ("images", images), ("manifests", manifests)):
        render = module.render_files
        ms, p90 = median_ms(lambda: render(spec), args.runs)
        rows.append((f"nodeweave.{name}.render_files", ms, p90, ms / base))

    out_dir = tempfile.mkdtemp(prefix="nodeweave-render-bench-")
    cli = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())",
           "render", "all", "--spec", str(SPEC), "--out", out_dir]
    subprocess.run(cli, capture_output=True, check=True)  # render once; the timed runs only check
    cli.append("--check")
    bare = [sys.executable, "-c", "pass"]
    proc_runs = max(5, args.runs // 3)
    bare_times, cli_times = [], []
    for _ in range(proc_runs):  # interleaved, so both see the same machine load
        for argv, bucket in ((bare, bare_times), (cli, cli_times)):
            start = time.perf_counter()
            out = subprocess.run(argv, capture_output=True, cwd=REPO)
            bucket.append((time.perf_counter() - start) * 1000)
            if out.returncode != 0:
                sys.stderr.write(out.stderr.decode())
                return out.returncode
    bare_ms, cli_ms = statistics.median(bare_times), statistics.median(cli_times)
    rows.append(("python -c pass (process)", bare_ms, sorted(bare_times)[int(0.9 * (proc_runs - 1))], None))
    rows.append(("nodeweave render all --check (process)", cli_ms, sorted(cli_times)[int(0.9 * (proc_runs - 1))],
                 cli_ms / bare_ms))

    print(f"runs: {args.runs} in-process, {proc_runs} processes; Python {sys.version.split()[0]}")
    print("| what | median ms | p90 ms | x baseline |")
    print("|---|---:|---:|---:|")
    for what, ms, p90, ratio in rows:
        shown = "1.00 (process baseline)" if ratio is None else f"{ratio:.2f}"
        print(f"| {what} | {ms:.2f} | {p90:.2f} | {shown} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
