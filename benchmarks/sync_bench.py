"""Benchmark ``nodeweave sync``'s fan-out: one target against plain rsync, eight against one.

Makes a 200 MiB, 5,000-file tree (random, incompressible), starts eight
podman containers from the offline base image and times whole ``nodeweave
sync`` commands into fresh directories, each case against baselines measured
in the same run: plain ``rsync`` over ``podman exec`` (one target, and eight
at once, which is what a per-target fan-out costs), eight targets with relay
(the default: the first target forwards to the next over TCP) - at first
contact (no node's resident agent on record: an exec per node) and through
the head (the residents known: one exec) - and with ``--no-relay`` (every
target's bytes through its own exec client), and eight ``podman exec``
clients relaying the same bytes to ``cat`` (the exec channel's own cost, the
floor of a fan-out through it). Re-syncs and edits go to the DEST the first
contact made, through the head. Per case:

- seconds: wall time of the command;
- source CPU s: the command's whole process tree on this side (nodeweave,
  rsync, the ``podman exec`` clients), from ``RUSAGE_CHILDREN``; and of it,
  nodeweave's own process (it notes its ``RUSAGE_SELF`` at exit);
- disk MiB: bytes the tree read from storage (``read_bytes`` of
  ``/proc/self/io``, which gains each reaped child's), with the source
  tree's pages dropped from the page cache before each run;
- receivers CPU s: the containers' cgroups (cgroup v1 cpuacct; conmon, shared
  by every container of the machine, is not counted);
- and, in one extra traced run per fan-out case, the logical bytes read from
  files under SRC by the whole tree (``strace -f -y``), cached or not.

Goals (issue 13): one target <= 1.2x plain rsync; eight targets' source CPU
<= 1.5x one target's and disk reads <= 1.1x; a no-change re-sync of eight
<= 10% of the first; a one-file edit to eight <= 2x the same edit to one.
Other work on the machine skews every row: ``uptime`` is printed at the
start and the end; run it under ``flock -o /tmp/nodeweave-engine.lock``.

    .venv/bin/python benchmarks/sync_bench.py [--files 5000] [--mb 200] [--targets 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from sync_meter import Meter, Sample, evict, logical_reads, relay_floor  # noqa: E402

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

BASE_IMAGE = "localhost/nodeweave-base:bookworm"
# nodeweave, plus a note of its own process's CPU (the tree's minus its children's) for the table
NODEWEAVE = [sys.executable, "-c", "import atexit, os, resource, sys\n"
             "def note():\n    u = resource.getrusage(resource.RUSAGE_SELF)\n"
             "    open(os.environ['NWSYNC_BENCH_SELF'], 'w').write(str(u.ru_utime + u.ru_stime))\n"
             "atexit.register(note)\nfrom nodeweave.cli import main\nsys.exit(main())"]
RSYNC = "rsync -rlpt --whole-file --blocking-io --rsh 'podman exec -i'"
N = "N targets"  # case names say N; the table says the number


def make_tree(root: Path, files: int, total_mb: int, seed: int = 7) -> int:
    """``files`` files summing to ``total_mb`` MiB: many small sources, a few large blobs."""
    rng = random.Random(seed)
    big = max(1, files // 50)
    small_size = 8 * 1024
    big_size = (total_mb * 2**20 - (files - big) * small_size) // big
    total = 0
    for i in range(files):
        size = big_size if i < big else small_size
        path = root / f"pkg{i % 40:02d}" / f"mod{i % 7}" / f"f{i:05d}.{'bin' if i < big else 'py'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(size))
        total += size
    return total


class Bench:
    def __init__(self, src: Path, names: "list[str]", meter: Meter):
        self.src, self.names, self.meter = src, names, meter
        self.samples: "dict[str, list[Sample]]" = {}
        self.uptime_start = ""

    def record(self, case: str, sample: Sample) -> Sample:
        self.samples.setdefault(case, []).append(sample)
        return sample

    def nodeweave(self, case: str, dest: str, names: "list[str]", *extra: str, relayed: bool = False,
                  tunnel: bool = False) -> Sample:
        evict(self.src)
        sample = self.meter.run([*NODEWEAVE, "sync", "--json", str(self.src), dest,
                                 *[f"--to=podman:{c}" for c in names], *extra])
        data = json.loads(sample.stdout)
        if {(t["status"], t["digest"]) for t in data["targets"]} != {("ok", data["source"]["digest"])}:
            raise SystemExit(f"{case}: a target does not hold the source: {data['targets']}")
        fed = [t["relay"] for t in data["targets"][1:]]
        if relayed and not all(r and r.startswith("from ") for r in fed):
            raise SystemExit(f"{case}: the payload was not relayed: {fed}")
        if not relayed and any(fed):
            raise SystemExit(f"{case}: the payload was relayed: {fed}")
        channels = [t["channel"] for t in data["targets"][1:]]
        if tunnel != (bool(channels) and all(c.startswith("via ") for c in channels)):
            raise SystemExit(f"{case}: the sessions {'did not go' if tunnel else 'went'} through the head: {channels}")
        return self.record(case, sample)

    def forget_residents(self) -> None:
        """The source's record of the nodes' resident agents gone: the next sync execs into every node."""
        Path(os.environ["XDG_CACHE_HOME"], "nodeweave", "sync", "residents.json").unlink(missing_ok=True)

    def rsync(self, case: str, dest: str, names: "list[str]") -> Sample:
        for c in names:
            subprocess.run(["podman", "exec", c, "mkdir", "-p", dest], check=True)
        evict(self.src)
        return self.record(case, self.meter.run(["sh", "-c", rsync_all(self.src, dest, names)]))

    def clean(self, dest: str) -> None:
        for c in self.names:
            subprocess.run(["podman", "exec", c, "rm", "-rf", dest], check=True)

    def median(self, case: str) -> Sample:
        runs = self.samples[case]
        return Sample(*(statistics.median(getattr(r, f) for r in runs) for f in Sample._fields[:-1]), "")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def rsync_all(src: Path, dest: str, names: "list[str]") -> str:
    """A shell line running one plain rsync per container, all at once."""
    return " ".join(f"{RSYNC} {src}/ {c}:{dest}/ &" for c in names) + " wait"


def one_round(b: Bench, i: int, edit: Path) -> None:
    """Every timed case once, into fresh directories, in the same order each round."""
    one, many = [b.names[0]], b.names
    d_raw, d_one, d_many, d_warm, d_direct = (f"/workspace/{kind}{i}"
                                              for kind in ("raw", "one", "many", "warm", "direct"))
    b.rsync("plain rsync, 1 target", d_raw, one)
    b.nodeweave("nodeweave sync, 1 target", d_one, one)
    b.forget_residents()  # as on a cluster just started: no node has a resident on record yet
    b.nodeweave(f"nodeweave sync, {N}, relay, first contact", d_many, many, relayed=True)
    b.nodeweave(f"nodeweave sync, {N}, relay", d_warm, many, relayed=True, tunnel=True)
    b.nodeweave(f"nodeweave sync, {N}, --no-relay", d_direct, many, "--no-relay")
    b.nodeweave(f"no-change re-sync, {N}", d_many, many, tunnel=True)
    b.nodeweave("no-change re-sync, 1 target", d_one, one)
    edit.write_bytes(os.urandom(edit.stat().st_size))
    b.nodeweave("one-file edit, 1 target", d_one, one)
    b.nodeweave(f"one-file edit, {N}", d_many, many, tunnel=True)
    for dest in (d_raw, d_one, d_many, d_warm, d_direct):
        b.clean(dest)


def ratios(m: "dict[str, Sample]") -> "dict[str, str]":
    raw, one, many = m["plain rsync, 1 target"], m["nodeweave sync, 1 target"], m[f"nodeweave sync, {N}, relay"]
    direct, first = m[f"nodeweave sync, {N}, --no-relay"], m[f"nodeweave sync, {N}, relay, first contact"]
    edit1, editn = m["one-file edit, 1 target"], m[f"one-file edit, {N}"]
    return {
        "plain rsync, 1 target": "baseline for 1 target",
        "nodeweave sync, 1 target": f"{one.seconds / raw.seconds:.2f}x plain rsync's time (goal <= 1.2x)",
        f"nodeweave sync, {N}, relay": (f"through the head: source CPU {many.cpu / one.cpu:.2f}x 1 target's "
                                        f"(goal <= 1.5x), nodeweave's own {many.own_cpu / one.own_cpu:.2f}x; disk reads "
                                        f"{many.disk_mib / max(one.disk_mib, 1):.2f}x (goal <= 1.1x)"),
        f"nodeweave sync, {N}, relay, first contact": (f"source CPU {first.cpu / one.cpu:.2f}x 1 target's (an exec per "
                                                       f"node; they start their resident agents)"),
        f"nodeweave sync, {N}, --no-relay": (f"source CPU {direct.cpu / one.cpu:.2f}x 1 target's, nodeweave's own "
                                             f"{direct.own_cpu / one.own_cpu:.2f}x"),
        f"plain rsync, {N}": f"source CPU {m[f'plain rsync, {N}'].cpu / raw.cpu:.2f}x plain rsync to 1 target",
        f"no-change re-sync, {N}": (f"{m[f'no-change re-sync, {N}'].seconds / first.seconds:.1%} of the first sync of "
                                    f"this DEST (first contact; goal <= 10%), "
                                    f"{m[f'no-change re-sync, {N}'].seconds / many.seconds:.1%} of a tunnelled one"),
        "no-change re-sync, 1 target": f"{m['no-change re-sync, 1 target'].seconds / one.seconds:.1%} of the first",
        f"one-file edit, {N}": f"{editn.seconds / edit1.seconds:.2f}x the same edit to 1 target (goal <= 2x)",
    }


def table(b: Bench, title: str, traced: "dict[str, float]", floors: "dict[str, Sample]") -> Table:
    m = {case: b.median(case) for case in b.samples}
    notes, n = ratios(m), str(len(b.names))
    t = Table(title=title, title_justify="left")
    for col in ("case", "s", "source CPU s", "of it nodeweave", "disk MiB", "read MiB (strace)", "receivers CPU s",
                "ratio"):
        t.add_column(col, justify="left" if col in ("case", "ratio") else "right")
    for case, s in [*m.items(), *floors.items()]:
        t.add_row(case.replace("N targets", f"{n} targets"), f"{s.seconds:.2f}", f"{s.cpu:.2f}",
                  f"{s.own_cpu:.2f}" if s.own_cpu else "", f"{s.disk_mib:.0f}", f"{traced[case]:.0f}" if case in traced else "", f"{s.receivers:.1f}",
                  notes.get(case, ""))
    return t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--targets", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the table shows medians")
    args = parser.parse_args()
    if shutil.which("podman") is None or subprocess.run(["podman", "image", "exists", BASE_IMAGE]).returncode:
        print(f"needs podman and {BASE_IMAGE} (bash .ci/setup-engine.sh; bash .ci/make-base-image.sh)",
              file=sys.stderr)
        return 3
    names = [f"nwsync-bench-{uuid.uuid4().hex[:6]}-{i}" for i in range(args.targets)]
    tmp = Path(tempfile.mkdtemp(prefix="nwsync-bench-"))
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")  # the digest caches go away with the tree
    started: "list[str]" = []
    try:
        src = tmp / "tree"
        total = make_tree(src, args.files, args.mb)
        os.sync()  # clean pages, so dropping them before each run really makes the next read go to disk
        for name in names:
            subprocess.run(["podman", "run", "-d", "--name", name, BASE_IMAGE, "sleep", "infinity"],
                           check=True, capture_output=True)
            started.append(name)
        meter = Meter(names)
        b = Bench(src, names, meter)
        b.uptime_start = uptime()  # after the tree is made and the containers started
        b.nodeweave("warm-up", "/workspace/warmup", names[:1])  # the source digest cache, as after any sync
        b.clean("/workspace/warmup")
        edit = next(p for p in sorted(src.rglob("*.py")))
        for i in range(args.repeat):
            one_round(b, i, edit)
        b.rsync(f"plain rsync, {N}", "/workspace/rsyncN", names)
        b.clean("/workspace/rsyncN")
        traced = trace_cases(b)
        floors = {f"podman exec relaying {total / 2**20:.0f} MiB to cat, {k} client(s)": relay_floor(src, names[:k], meter)
                  for k in (1, len(names))}
        b.samples.pop("warm-up")
        report(b, args, total, traced, floors)
        return 0
    finally:
        if started:
            subprocess.run(["podman", "rm", "-f", "-t", "0", *started], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def trace_cases(b: Bench) -> "dict[str, float]":
    """Logical MiB read from SRC's files by each fan-out case's process tree, one traced run each."""
    out = {}
    for case, dest, names, extra in (("nodeweave sync, 1 target", "/workspace/trace1", b.names[:1], []),
                                     (f"nodeweave sync, {N}, relay", "/workspace/traceN", b.names, []),
                                     (f"nodeweave sync, {N}, --no-relay", "/workspace/traceD", b.names,
                                      ["--no-relay"])):
        out[case] = logical_reads([*NODEWEAVE, "sync", "--json", str(b.src), dest,
                                   *[f"--to=podman:{c}" for c in names], *extra], b.src)
        b.clean(dest)
    for case, names in (("plain rsync, 1 target", b.names[:1]), (f"plain rsync, {N}", b.names)):
        for c in names:
            subprocess.run(["podman", "exec", c, "mkdir", "-p", "/workspace/traceR"], check=True)
        out[case] = logical_reads(["sh", "-c", rsync_all(b.src, "/workspace/traceR", names)], b.src)
        b.clean("/workspace/traceR")
    return out


def report(b: Bench, args, total: int, traced: "dict[str, float]", floors: "dict[str, Sample]") -> None:
    n, cores = len(b.names), os.cpu_count() or 1
    console = Console(width=180)
    console.print(table(b, f"nodeweave sync: {args.files:,} files, {total / 2**20:.0f} MiB, {n} podman containers, "
                        f"{cores} cores; median of {args.repeat} (plain rsync to {n} at once: 1 run)", traced, floors))
    for case in (f"nodeweave sync, {N}, relay", f"nodeweave sync, {N}, --no-relay"):
        many = b.median(case)
        console.print(f"receivers' CPU floor, {case.replace(N, f'{n} targets')}: the targets used {many.receivers:.1f} "
                      f"CPU-s in their containers; with the source's {many.cpu:.1f} on {cores} cores that is >= "
                      f"{(many.receivers + many.cpu) / cores:.1f} s of wall time ({many.seconds:.1f} s measured)")
    console.print(f"uptime at the start: {b.uptime_start}")
    console.print(f"uptime at the end:   {uptime()} (other work on the machine skews every row)")
    console.print("every nodeweave run: every target ok and digest-equal to the source (checked per run)")


if __name__ == "__main__":
    sys.exit(main())
