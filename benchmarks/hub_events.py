"""Node 0's CPU and bytes per control-plane event, 1,024 to 16,384 nodes, in one process (issue 45's model).

No sockets: node 0's real ``Hub`` (``entrypoint/checkin/exchange.py``) with N - 1 checked-in nodes made of
this machine's real fingerprint (rank, host and address changed), and its real code for each event:

  decide     judge every node (the verdict), as at the end of the check-in and of each generation's regather
  verdict    the bytes for every node: now each node's part (``Hub.verdict_messages``); the baseline, the
             whole verdict encoded once and sent to every node (what node 0 did before issue 45)
  status     ``--status``: the summary (the default past 64 nodes), and ``--all``, each with N x 8 rank views
             in the stall watch's shape, encoded as the wire sends it
  arrival    ``refused_early`` for one more node (every arrival during the check-in)

CPU is ``time.process_time()`` (this process only; the sockets' kernel work is what ``exchange_scale.py``
measures end to end); memory is ``tracemalloc``'s peak while the event's objects and bytes exist.

    PYTHONPATH=src python benchmarks/hub_events.py [--nodes 1024,2048,4096,8192,16384] [--repeat 3]
"""

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from nodeweave.entrypoint.checkin.exchange import Hub, Peer  # noqa: E402
from nodeweave.entrypoint.checkin.refusal import refused_early  # noqa: E402
from nodeweave.entrypoint.checkin.wire import encode, job_token  # noqa: E402


def fingerprint():
    """This machine's real fingerprint, as scale_swarm.py takes it."""
    from scale_swarm import template_fingerprint

    return template_fingerprint(2, 29501, "torchrun")


def hub_with(nodes, base):
    hub = Hub(0, job_token({}, "nodeweave", 29500), dict(base, rank=0, nnodes=str(nodes), address="10.0.0.1",
                                                         route_address="10.0.0.1"), lambda line: None)
    for rank in range(1, nodes):
        peer = Peer(None, "", 0.0)
        address = f"10.{rank // 65536}.{rank // 256 % 256}.{rank % 256 or 1}"
        peer.fp = dict(base, rank=rank, nnodes=str(nodes), hostname=f"scale-{rank}", address=address,
                       route_address=address, hostname_address=address)
        peer.seen, peer.probe = address, "ok"
        hub.peers.append(peer)
    return hub


def views(nodes, per=8):
    return [{"rank": r, "local_rank": r % per, "node": r // per, "host": f"scale-{r // per}", "pod": None,
             "pid": 1000 + r % per, "seq": 4711, "name": "all_reduce", "inside": True, "since_s": 0.5, "state": "S",
             "cpu_rate": 0.98, "fr_enqueued": 4711, "fr_completed": 4710, "device_wait_s": 0.0, "device_timed": 0,
             "fr_wait_s": 0.0, "fr_timed": 0, "fr_span_s": 0.0} for r in range(nodes * per)]


def timed(fn, repeat):
    """(least CPU seconds over ``repeat`` calls, tracemalloc peak MiB of one call, the last result)."""
    best, result = None, None
    for _ in range(repeat):
        started = time.process_time()
        result = fn()
        took = time.process_time() - started
        best = took if best is None else min(best, took)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / (1 << 20)
    tracemalloc.stop()
    return best, peak, result


def measure(nodes, base, repeat):
    hub = hub_with(nodes, base)
    try:
        out = {}
        out["decide"] = timed(lambda: hub.decide(nodes, nodes, "torchrun", ()), repeat)
        verdict = out["decide"][2]
        out["verdict"] = timed(lambda: sum(len(d) for _, d in hub.verdict_messages(hub.peers, dict(verdict))), repeat)
        out["whole"] = timed(lambda: len(encode({"t": "verdict", "verdict": verdict})) * (nodes - 1), repeat)
        hub.verdict = dict(verdict, digest="0" * 16)
        ranks = views(nodes)
        hub.live_status = lambda stacks=False: {"ranks": [dict(r) for r in ranks], "stall": None, "stragglers": []}
        out["summary"] = timed(lambda: len(encode(hub.status())), repeat)
        out["all"] = timed(lambda: len(encode(hub.status(whole=True))), 1)
        def arrival():  # every node but the last judged already: the last one's arrival
            hub.early = {"checked": nodes - 2, "ranks": set(range(nodes - 1)), "refused": False}
            return refused_early(hub, nodes, "torchrun", ())
        out["arrival"] = timed(arrival, repeat)
        return out
    finally:
        hub.sock.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1024,2048,4096,8192,16384")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    base = fingerprint()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load "
          f"{os.getloadavg()[0]:.1f}; fingerprint {len(json.dumps(base))} bytes; least of {args.repeat} runs")
    print("\n| nodes | decide, ms | each node's verdict: ms, bytes to all nodes | baseline whole verdict: "
          "encode ms, bytes all | `--status` summary: ms, bytes, MiB peak | `--status --all`: ms, bytes, MiB peak "
          "| one arrival's early check, ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in args.nodes.split(",")]:
        r = measure(n, base, args.repeat)
        print(f"| {n} | {r['decide'][0] * 1000:.0f} | {r['verdict'][0] * 1000:.0f}, {r['verdict'][2]:,} | "
              f"{r['whole'][0] * 1000:.0f}, {r['whole'][2]:,} | {r['summary'][0] * 1000:.0f}, {r['summary'][2]:,}, "
              f"{r['summary'][1]:.1f} | {r['all'][0] * 1000:.0f}, {r['all'][2]:,}, {r['all'][1]:.0f} | "
              f"{r['arrival'][0] * 1000:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
