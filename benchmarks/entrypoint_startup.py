"""Start-up cost of nodeweave-entrypoint: process start → exec of ``true``.

Runs, in the same process and interleaved so machine noise hits all alike:
  python -c pass                               bare interpreter start-up (the reference)
  nodeweave-entrypoint ... -- true             the console script, HGX H100 fixture, launcher command
  python -m nodeweave.entrypoint ... -- true   the same through -m
  python entrypoint/nodeweave-entrypoint.pyz   the zipapp (docs/images.md): no cached bytecode in a zip
  the zipapp as the images install it         unpacked and compiled, run by the image's three-line script
  worker check-in imports                      what a worker's check-in adds (its modules, one proof)
Each sample is the wall time of the whole child (fork+exec → exit), so the
entrypoint's number includes exec'ing ``true``. The sources are compiled
first, so every case but the zipapp runs with its bytecode cached. Prints a
Markdown table, the milliseconds over bare start-up and the ratio; the
target is at most 40 ms over bare start-up (the console script).

    .venv/bin/python benchmarks/entrypoint_startup.py [--runs 40]
"""

import argparse
import compileall
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "synthetic" / "hgx-h100"
PLAN = ["--sysroot", str(FIX), "--launcher", "command", "--nnodes", "2", "--node-rank", "0",
        "--master-addr", "hgx-a01", "--", "true"]
CHECK_IN = ("from nodeweave.entrypoint.__main__ import main\n"
            "from nodeweave.entrypoint.checkin import exchange, fingerprint, session, wire\n"
            "wire.proof(b'k', 'n', {'a': 1}); fingerprint.sha256(b'x').hexdigest()\n")
TARGET_MS = 40  # over bare start-up, the console script


def cases():
    script = Path(sys.executable).parent / "nodeweave-entrypoint"
    out = {"python -c pass": [sys.executable, "-c", "pass"]}
    if script.exists():
        out["nodeweave-entrypoint (console script)"] = [str(script), *PLAN]
    out["python -m nodeweave.entrypoint"] = [sys.executable, "-m", "nodeweave.entrypoint", *PLAN]
    zipapp = ROOT / "entrypoint" / "nodeweave-entrypoint.pyz"
    if zipapp.exists():
        out["python nodeweave-entrypoint.pyz (zipapp)"] = [sys.executable, str(zipapp), *PLAN]
        out["the zipapp unpacked and compiled (images)"] = [sys.executable, str(unpacked(zipapp)), *PLAN]
    out["worker check-in imports (python -c)"] = [sys.executable, "-c", CHECK_IN]
    return out


def unpacked(zipapp):
    """What the rendered Dockerfile does with the archive: unpack, compile, a three-line script runs it."""
    import tempfile
    import zipfile

    lib = Path(tempfile.mkdtemp(prefix="nw-entrypoint-")) / "lib"
    zipfile.ZipFile(zipapp).extractall(lib)
    compileall.compile_dir(str(lib), quiet=1)
    script = lib.parent / "nodeweave-entrypoint"
    script.write_text(f"import sys\nsys.path.insert(0, {str(lib)!r})\n"
                      "from nodeweave.entrypoint.__main__ import main\nsys.exit(main())\n")
    return script


def sample(argv, env):
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT / "src")}
    compileall.compile_dir(str(ROOT / "src"), quiet=1)  # bytecode cached, even under PYTHONDONTWRITEBYTECODE
    todo = cases()
    for argv in todo.values():  # warm the page cache
        sample(argv, env)
    times = {name: [] for name in todo}
    for _ in range(args.runs):
        for name, argv in todo.items():
            times[name].append(sample(argv, env))
    base = statistics.median(times["python -c pass"])
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{args.runs} runs each, interleaved")
    print()
    print("| command | median ms | p90 ms | ms over bare | x bare start-up |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        values.sort()
        med = statistics.median(values)
        p90 = values[int(len(values) * 0.9) - 1]
        print(f"| {name} | {med * 1000:.1f} | {p90 * 1000:.1f} | {(med - base) * 1000:.1f} | {med / base:.2f} |")
    print()
    print(f"target: the console script at most {TARGET_MS} ms over bare start-up")


if __name__ == "__main__":
    sys.exit(main())
