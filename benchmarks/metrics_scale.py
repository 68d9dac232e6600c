"""Node 0's /metrics and /status.json at 1, 64 and 1,024 nodes: how long a scrape takes (goal: 50 ms at 1,024).

A stand-in for the heartbeat's live state, not the exchange benchmark's swarm: a HubWatch-shaped object whose
hub holds N checked-in peers (fingerprint, last beat, role) and whose stall watch holds 8 rank views per node
(the fields ``stall/ranks.py`` samples), served by the real metrics room (``metrics/live.py``,
``collect.py``, ``server.py``) over a real loopback HTTP connection; each size is scraped ``--scrapes``
times, every scrape rendered anew (the server's 2 s cache off), and the median and 95th percentile printed
beside the 1-node baseline measured in the same run. The stall watch's straggler judge is the real one
(``stall/judge.py``), fed a full window of beats, so the per-rank straggler ratio costs what it costs in a job.
``--before SRC`` runs the same sizes against another checkout's sources (e.g. ``/work/main/src``) first, in a
child process of the same run, and prints both tables and the ratio of their medians.
``--varied`` gives each rank its own values (times rounded as ``stall/ranks.py`` rounds them, rates, straggler
ratios), as in a running job: without it every rank reports the same, which flatters a renderer that formats
a value shared by many ranks once (``exposition.family_lines``).
What it leaves out: the heartbeat thread's own load at that size (it runs beside the scrape, which never
waits for it).

    .venv/bin/python benchmarks/metrics_scale.py [--scrapes 50] [--ranks 8] [--varied] [--before /work/main/src]
"""

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import subprocess
import time
import urllib.request
from pathlib import Path

SRC = os.environ.get("NODEWEAVE_BENCH_SRC") or str(Path(__file__).resolve().parents[1] / "src")
sys.path.insert(0, SRC)

from nodeweave.entrypoint.metrics import server  # noqa: E402
from nodeweave.entrypoint.metrics.live import Live  # noqa: E402
from nodeweave.entrypoint.stall.judge import WINDOW_S, Stragglers  # noqa: E402

server.CACHE_S = 0.0  # every scrape renders anew: the cost of a cold scrape, not of the 2 s cache


class Settings:
    def __init__(self, env, port):
        self.env, self.values = env, {"metrics_port": port}

    def get(self, key, default=None):
        return self.values.get(key, default)


class Peer:
    def __init__(self, rank, now):
        self.fp = {"rank": rank, "hostname": f"gpu{rank:04d}", "job": "bench"}
        self.done, self.last_heard, self.role, self.ranks = None, now - 1.0, "member", None


def own_work(rank, varied):
    """A rank's own work a beat: rank 8 10% slower; with ``varied``, each rank up to 9.6% off the typical."""
    return 1.1 if rank == 8 else 1.0 + varied * (rank % 97) / 1000


class Stall:
    """The stall watch's state at a beat: the rank views and a straggler judge fed a window of beats (1 s apart,
    each rank one collective further a beat, rank 0 of node 1 10% slower)."""

    def __init__(self, views, varied=False):
        self.last_views, self.verdicts = views, {"stall": None, "stragglers": []}
        self.now = 0.0
        self.clock = lambda: self.now
        self.stragglers = Stragglers()
        beats = int(WINDOW_S) + 2
        for beat in range(beats):
            self.now = float(beat)
            self.stragglers.feed(self.now, [dict(v, seq=v["seq"] + beat * 10,
                                                 outside_s=v["outside_s"] + beat * own_work(v["rank"], varied))
                                            for v in views])
            self.stragglers.evaluate(self.now)


class Watch:
    def __init__(self, nodes, ranks, varied=False):
        now = time.monotonic()
        self.clock, self.failed_at, self.failure, self.thread = time.monotonic, None, None, None
        self.own_done = threading.Event()
        self.hub = type("Hub", (), {})()
        self.hub.own_fp = {"rank": 0, "hostname": "gpu0000", "job": "bench"}
        self.hub.peers = [Peer(r, now) for r in range(1, nodes)]
        views = [{"node": n, "rank": n * ranks + i, "host": f"gpu{n:04d}", "seq": 1000 + i, "name": "all_reduce",
                  "inside": False, "since_s": 0.01, "inside_s": 12.5, "outside_s": 40.1, "state": "S",
                  "fr_enqueued": 2000, "fr_completed": 2000} for n in range(nodes) for i in range(ranks)]
        if varied:  # each rank its own times (rounded as stall/ranks.py rounds them), not one value for all
            rnd = random.Random(nodes)
            for v in views:
                v["inside_s"], v["outside_s"] = round(rnd.random() * 100, 4), round(rnd.random() * 1000, 4)
        self.stall = Stall(views, varied)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(nodes, ranks, scrapes, varied=False):
    folder = tempfile.mkdtemp(prefix="nw-metrics-")
    for _ in range(5):  # a free port can be taken by another process before node 0's server binds it: another
        port = free_port()
        live = Live(Settings({"TMPDIR": folder}, port), lambda line: None)
        live.watching(Watch(nodes, ranks, varied))
        if live.server is not None:
            break
    else:
        raise SystemExit("node 0's metrics server could not bind a free port five times")
    rnd = random.Random(1)
    for _ in range(10):  # the recorder's first ticks: the rate histories fill
        if varied:
            for view in live.watch.stall.last_views:
                view["seq"] += rnd.randrange(20)
        live.tick()
        time.sleep(0.01)
    times = {}
    for path in ("/metrics", "/status.json"):
        taken, size = [], 0
        for _ in range(scrapes):
            start = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as answer:
                size = len(answer.read())
            taken.append((time.perf_counter() - start) * 1000)
        taken.sort()
        times[path] = (statistics.median(taken), taken[int(0.95 * (len(taken) - 1))], size)
    from nodeweave.entrypoint.metrics.collect import families
    from nodeweave.entrypoint.metrics.exposition import render

    cpu = []
    for _ in range(max(3, scrapes // 5)):  # the CPU time of one rendering, which a loaded machine's wall time hides
        start = time.process_time()
        render(families(live))
        cpu.append((time.process_time() - start) * 1000)
    times["cpu"] = statistics.median(cpu)
    live.server.shutdown()
    return times


def table(args, rows):
    print("| nodes | ranks | /metrics median ms | p95 ms | CPU ms (in process) | bytes | /status.json median ms "
          "| p95 ms | bytes |")
    print("|---|---|---|---|---|---|---|---|---|")
    baseline = None
    for nodes, times in rows:
        m, s = times["/metrics"], times["/status.json"]
        baseline = baseline or m[0]
        print(f"| {nodes} | {nodes * args.ranks} | {m[0]:.1f} ({m[0] / baseline:.1f}x the 1-node baseline) | "
              f"{m[1]:.1f} | {times['cpu']:.1f} | {m[2]:,} | {s[0]:.1f} | {s[1]:.1f} | {s[2]:,} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--ranks", type=int, default=8, help="ranks per node")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--varied", action="store_true", help="each rank its own values (times, rates, straggler "
                        "ratios), as in a running job; without it every rank reports the same")
    parser.add_argument("--before", metavar="SRC", help="another checkout's src/ to measure first (the baseline)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the --before child's answer
    args = parser.parse_args()
    if args.json:
        print(json.dumps([[nodes, measure(nodes, args.ranks, args.scrapes, args.varied)] for nodes in args.nodes]))
        return
    print(f"# {platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}; {args.ranks} ranks a "
          f"node, {args.scrapes} scrapes a size")
    print(f"# load average {os.getloadavg()[0]:.1f} at the start")
    before = None
    if args.before:
        child = [sys.executable, __file__, "--json", "--scrapes", str(args.scrapes), "--ranks", str(args.ranks),
                 "--nodes"] + [str(n) for n in args.nodes] + (["--varied"] if args.varied else [])
        answer = subprocess.run(child, env=dict(os.environ, NODEWEAVE_BENCH_SRC=args.before), capture_output=True,
                                text=True)
        if answer.returncode != 0:
            raise SystemExit(f"the baseline's run failed (exit {answer.returncode}):\n{answer.stderr[-3000:]}")
        before = json.loads(answer.stdout)
        print(f"\nBefore: {args.before}\n")
        table(args, before)
        print(f"\nAfter: {SRC}\n")
    after = [(nodes, measure(nodes, args.ranks, args.scrapes, args.varied)) for nodes in args.nodes]
    table(args, after)
    if before:
        print("\n| nodes | ranks | /metrics median before / after | CPU before / after | /status.json before / after |")
        print("|---|---|---|---|---|")
        for (nodes, b), (_, a) in zip(before, after):
            print(f"| {nodes} | {nodes * args.ranks} | {b['/metrics'][0]:.1f} / {a['/metrics'][0]:.1f} ms "
                  f"({b['/metrics'][0] / a['/metrics'][0]:.1f}x) | {b['cpu']:.1f} / {a['cpu']:.1f} ms | "
                  f"{b['/status.json'][0]:.1f} / {a['/status.json'][0]:.1f} ms |")


if __name__ == "__main__":
    main()
