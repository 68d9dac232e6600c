"""The check-in and the heartbeat at 64 to 8,192 nodes: node 0's critical path, its CPU, failure spread.

Node 0 is always the real thing: a ``nodeweave-entrypoint`` process (rank 0,
master 127.0.0.1, live root), with the launcher ``command true`` for the
check-in and a stand-in ``torchrun`` (``sleep``) for the heartbeat. The other
nodes are, by ``--mode``:

  swarm   ``scale_swarm.py``: N-1 simulated nodes in one process, each with its own 127.2.x.y address and
          check port, speaking the real wire (challenge, hello with a real fingerprint and HMAC, connect-back,
          verdict, beats). Light enough for 1,024 nodes on 2 cores.
  real    N-2 real entrypoint processes (as benchmarks/exchange_startup.py), plus one simulated node that
          checks in last; only where N processes fit (64 here).

What is measured, each with ``time.monotonic()`` (one clock for every process of the machine):

  check-in   the critical path: the last node's hello -> its verdict on every node, and the verdict's bytes:
             the most one node got, and all node 0 sent (issue 45: N, not N²). The other nodes are in
             first (node 0 has probed each of them), so process start-up is not in it; it is printed beside
             it (spawn -> every other node in). Real workers: -> their process exit (an upper bound).
  heartbeat  node 0's CPU (every thread of the entrypoint, /proc/<pid>/task/*/schedstat) per minute of
             steady heartbeat, over ``--window`` seconds.
  failure    exit:   a node reports exit 1 -> every other node has node 0's abort (and node 0 exited 5)
             close:  a node's connection closes without a report (its entrypoint killed) -> every abort
             silent: a node stops beating, connection open (its host gone) -> every abort, from its last beat

Bounded: every wait has a deadline, every process is ended. Only 127.0.0.0/8 is used (node 0's own
exchange port listens on the wildcard address, as it does in a container).

    .venv/bin/python benchmarks/exchange_scale.py [--nodes 64,256,1024] [--window 60] [--mode swarm|real]
        [--only checkin|heartbeat|status|recovery]   (status: a real ``--status`` process's answer: the summary,
                                             then ``--status --all``; node 0's resident memory)

  recovery   node 0 with recovery on and one spare per 64 nodes (``--nodes`` are the training nodes), the others
             ``scale_swarm.py --recover`` in ``--swarms`` processes; ``--fails`` exit|close|silent, ``--rack`` nodes
             within a second: the first check-in (the baseline), then the fault -> every node that lives on told
             its role in the next generation, node 0's CPU then, the generations, restarts, nodes left out and
             spares taken (one event: one of each per rack), and node 0's own steps timed from the fault;
             then a table of the goal's measure, fault heard (node 0's first line naming the failure: for a
             silent node LOST_S after its last beat) -> every surviving node told its role, the median of
             ``--runs``, beside the 3 s goal. ``--profile FILE``: node 0's every thread under cProfile.

    the issue's goal on a machine with the cores (the lead's 16-core run):
        python3 benchmarks/exchange_scale.py --only recovery --nodes 4096 --fails close,silent,exit --rack 32 \
            --swarms 8 --connecting 1024 --runs 3
"""

import argparse
import collections
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from exchange_startup import ENTRY, _argv, _cpu_seconds, _env, _port  # noqa: E402

SWARM = HERE / "scale_swarm.py"
NODE0_SRC = {"path": str(HERE.parent / "src")}  # --src: node 0 (and real workers) run this code instead
CONNECTING = {"at_once": 4096}  # --connecting: simulated nodes connecting at once
PROFILE = {"path": None}  # --profile: node 0 runs under benchmarks/profiled.py, its stats written here


def _load():
    return os.getloadavg()[0]


class Job:
    """Node 0 (a real entrypoint) and the other nodes for one measurement; always ended."""

    def __init__(self, nodes, workdir, launcher, window, extra_env=None):
        self.nodes, self.workdir = nodes, workdir
        self.port = _port()
        self.exchange = self.port + 1
        command = ["true"] if launcher == "command" else ["train.py"]
        fake = Path(workdir) / "torchrun"
        fake.write_text(f"#!/bin/sh\nexec sleep {window + 120}\n")
        fake.chmod(0o755)
        (Path(workdir) / "train.py").write_text("")
        self.env = dict(_env({"NODEWEAVE_WAIT_TIMEOUT": "180", **(extra_env or {})}, workdir),
                        PYTHONPATH=NODE0_SRC["path"])
        self.extra_env = extra_env or {}
        argv = _argv(nodes, 0, self.port, launcher, command)
        if PROFILE["path"]:  # every thread of node 0 under cProfile (benchmarks/profiled.py)
            argv = [sys.executable, str(HERE / "profiled.py"), PROFILE["path"], "-m", "nodeweave.entrypoint",
                    *argv[argv.index("--launcher"):]]
        self.node0 = subprocess.Popen(argv, env=self.env, cwd=workdir,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.launcher, self.command = launcher, command
        self.workers, self.exits, self.swarms = [], {}, []
        self.node0_exit = None
        self.node0_said = collections.deque(maxlen=40)  # node 0's last lines: read, so its log never fills the pipe
        self.node0_when = collections.deque(maxlen=40)  # (when read, line): recovery's steps timed
        threading.Thread(target=self._read_node0, daemon=True).start()
        threading.Thread(target=self._reap, args=(self.node0, "node0"), daemon=True).start()
        self.peak, self.cpu_at = {"threads": 0, "fds": 0}, []
        threading.Thread(target=self._sample, daemon=True).start()

    def _read_node0(self):
        for line in self.node0.stderr:
            self.node0_said.append(line)
            self.node0_when.append((time.monotonic(), line))

    def _sample(self):
        """Node 0's most threads and open descriptors, every 50 ms while it runs, and its CPU seconds then."""
        while self.node0.poll() is None:
            try:
                self.peak["threads"] = max(self.peak["threads"], len(os.listdir(f"/proc/{self.node0.pid}/task")))
                self.peak["fds"] = max(self.peak["fds"], len(os.listdir(f"/proc/{self.node0.pid}/fd")))
                self.cpu_at.append((time.monotonic(), _cpu_seconds(self.node0.pid)))
            except OSError:
                return
            time.sleep(0.05)

    def cpu_between(self, start, end):
        """Node 0's CPU seconds from ``start`` to ``end`` (monotonic), from the 50 ms samples around them."""
        before = [cpu for t, cpu in self.cpu_at if t <= start]
        after = [cpu for t, cpu in self.cpu_at if t >= end]
        return (after[0] - before[-1]) if before and after else None

    def _reap(self, proc, key):
        proc.wait()
        self.exits[key] = (time.monotonic(), proc.returncode)

    def real_workers(self, ranks):
        for rank in ranks:
            proc = subprocess.Popen(_argv(self.nodes, rank, self.port, self.launcher, self.command), env=self.env,
                                    cwd=self.workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            self.workers.append(proc)
            threading.Thread(target=self._reap, args=(proc, rank), daemon=True).start()

    def wait_in(self, count, timeout=180):
        """Until node 0 says ``count`` nodes (itself included) are in: asked with ``--status``'s own request."""
        from nodeweave.entrypoint.checkin.exchange import ask_status
        from nodeweave.entrypoint.checkin.wire import ExchangeError, frame_limit, job_token

        token = job_token({}, "nodeweave", self.port)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                answer = ask_status("127.0.0.1", self.exchange, "nodeweave", token, 5, limit=frame_limit(count))
                if len(answer["nodes"]) >= count:  # past ~1,100 nodes the answer is a frame (wire.py)
                    return
            except (ExchangeError, OSError):
                pass
            time.sleep(0.2)
        raise SystemExit(f"node 0 did not see {count} nodes in {timeout}s")

    def swarm(self, ranks, extra=(), on_ready=None):
        argv = [sys.executable, str(SWARM), "--port", str(self.exchange), "--nodes", str(self.nodes),
                "--ranks", ranks, "--launcher", self.launcher, "--connecting", str(CONNECTING["at_once"]), *extra]
        proc = subprocess.Popen(argv, cwd=self.workdir, env=dict(os.environ, TMPDIR=self.workdir, **self.extra_env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.swarms.append(proc)
        result = None
        for line in proc.stdout:
            if line.startswith("READY") and on_ready:
                on_ready()
            elif line.startswith("{"):
                result = json.loads(line)
        proc.wait(timeout=300)
        if result is None:
            raise SystemExit(f"swarm failed: {proc.stderr.read()[-3000:]}")
        return result

    def node0_cpu(self):
        return _cpu_seconds(self.node0.pid)

    def end(self):
        everyone = [self.node0] + self.workers + self.swarms
        for proc in everyone:
            if proc.poll() is None:
                proc.terminate()
        for proc in everyone:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _seconds(value):
    return "-" if value is None else f"{value:.2f}"


def _wait_exits(job, count, timeout):
    deadline = time.monotonic() + timeout
    while len(job.exits) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def check_in(nodes, workdir, mode):
    """The critical path (last hello -> every verdict) and, beside it, the start-up before it."""
    job = Job(nodes, workdir, "command", 0)
    try:
        started = time.monotonic()
        if mode == "real":
            job.real_workers(range(1, nodes - 1))
            job.wait_in(nodes - 1)
            out = job.swarm(f"{nodes - 1}:{nodes}")
            out["connected_s"] = time.monotonic() - started
        else:
            out = job.swarm(f"1:{nodes}", ["--last"])
        _wait_exits(job, 1 + len(job.workers), 60)
        last = out["last_hello"]
        if not job.exits:
            sys.stderr.write(f"node 0 did not end within 60 s of the last verdict ({out['decision']}); it said:\n"
                             + "".join(list(job.node0_said)[-15:]))
            job.exits["node0"] = (float("nan"), None)
        codes = sorted({c for _, c in job.exits.values()})
        if not (out["decision"] == "start" and codes == [0] and out["identical"] and out.get("own_rows") == nodes - 1):
            sys.stderr.write(f"{nodes} nodes: decision {out['decision']}, exit codes {codes}, shared part identical "
                             f"{out['identical']}, own rows {out.get('own_rows')}, closed without a verdict "
                             f"{out.get('gone')}; node 0's last lines:\n" + "".join(list(job.node0_said)[-8:]))
        return {"in_s": out["connected_s"], "path_s": out["verdict_last"] - last,
                "node0_cpu_s": job.cpu_between(last, out["verdict_last"]),
                "exit_s": max(t for t, _ in job.exits.values()) - last,
                "codes": sorted({c for _, c in job.exits.values()}), "bytes": out["verdict_bytes"],
                "bytes_all": out.get("verdict_bytes_all"), "own_rows": out.get("own_rows") == nodes - 1,
                "decision": out["decision"], "identical": out["identical"], **job.peak}
    finally:
        job.end()


def heartbeat(nodes, workdir, mode, window, fail, rack=1):
    """Node 0's CPU over ``window`` seconds of steady heartbeat (fail == exit), then one failure's spread."""
    job = Job(nodes, workdir, "torchrun", window)
    cpu = {}

    def sample():
        time.sleep(2)  # past the verdict's own work
        cpu["before"], cpu["at"] = job.node0_cpu(), time.monotonic()
        time.sleep(window)
        cpu["end"], cpu["end_at"] = job.node0_cpu(), time.monotonic()

    try:
        if mode == "real":
            job.real_workers(range(1, nodes - 1))
            job.wait_in(nodes - 1)
        ranks = f"{nodes - 1}:{nodes}" if mode == "real" else f"1:{nodes}"
        hold = window + 3 if fail == "exit" else 3
        sampler = threading.Thread(target=sample, daemon=True)
        out = job.swarm(ranks, ["--hold", str(hold), "--fail", fail, "--rack", str(rack)],
                        on_ready=sampler.start if fail == "exit" else None)
        _wait_exits(job, 1 + len(job.workers), 40)
        told = out["abort_after"]
        result = {"fail": fail, "abort_s": told and told["max"], "not_told": out["not_told"],
                  "beats": out.get("beats_heard"), "aborts_most": out.get("aborts_most"), "victims": out.get("victims")}
        if "node0" in job.exits:
            result["node0_exit_s"], result["node0_code"] = job.exits["node0"][0] - out["failed_at"], job.exits["node0"][1]
        workers = {key: value for key, value in job.exits.items() if key != "node0"}
        if workers:
            result["workers_exit_s"] = max(t for t, _ in workers.values()) - out["failed_at"]
            result["worker_codes"] = sorted({c for _, c in workers.values()})
        result.update(job.peak)
        if "end" in cpu:
            result["cpu_ms_per_min"] = (cpu["end"] - cpu["before"]) * 60000 / (cpu["end_at"] - cpu["at"])
        return result
    finally:
        job.end()


def recovery(slots, workdir, fail, rack, per_spare=64, swarms=1, deaf=()):
    """Recovery at ``slots`` training nodes and one spare per ``per_spare``: node 0 (a real entrypoint, recovery on,
    the stand-in ``torchrun``) and the others (``scale_swarm.py --recover``, in ``swarms`` processes: where the
    machine has the cores, the simulated nodes are not the bottleneck) check in; after a few beats ``rack``
    nodes fail (``fail``); every node that lives on checks in again and is told its role in the next generation.
    Measured: the first check-in (every node's hello -> its verdict: the baseline), then the fault -> every
    surviving node holding its next generation's verdict, node 0's CPU in between, and what the book says.
    ``deaf``: ranks that check in again with a check port refusing node 0's connect-back (left out, not refused)."""
    spares = max(1, slots // per_spare)
    if rack > spares:
        raise SystemExit(f"--rack {rack} is more than the {spares} spare(s) of {slots} training nodes (one per "
                         f"{per_spare}): the job would end (exit 8), not recover; use --nodes {rack * per_spare} "
                         "or more")
    env = {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": str(spares)}
    workdir = tempfile.mkdtemp(dir=workdir)  # each run its own: node 0's kept book must not carry over
    job = Job(slots, workdir, "torchrun", 120, extra_env=env)
    total, first = slots + spares, slots // 2
    cuts = [1 + (total - 1) * i // swarms for i in range(swarms + 1)]
    outs = [None] * swarms

    def one(i, proc):
        for line in proc.stdout:  # its one JSON line; then it beats on until every swarm has said its own
            if line.startswith("{"):
                outs[i] = json.loads(line)
                return
        sys.stderr.write(f"swarm {i} failed: {proc.stderr.read()[-3000:]}\n")
    try:
        procs = []
        for i in range(swarms):
            argv = [sys.executable, str(SWARM), "--port", str(job.exchange), "--nodes", str(total), "--ranks",
                    f"{cuts[i]}:{cuts[i + 1]}", "--launcher", "torchrun", "--connecting", str(CONNECTING["at_once"]),
                    "--recover", "--slots", str(slots), "--hold", "4", "--fail", fail, "--rack", str(rack),
                    "--first-victim", str(first), "--deaf", ",".join(map(str, deaf))]
            procs.append(subprocess.Popen(argv, cwd=workdir, env=dict(os.environ, TMPDIR=workdir, **env),
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
        job.swarms += procs
        threads = [threading.Thread(target=one, args=(i, proc)) for i, proc in enumerate(procs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(400)
        for proc in procs:
            proc.stdin.close()
        if None in outs:
            sys.stderr.write("node 0's last lines:\n" + "".join(list(job.node0_said)[-12:]))
            raise SystemExit("a swarm failed (its error above)")
        if PROFILE["path"]:  # the measurement is over: node 0 writes its profile now
            Path(PROFILE["path"] + ".now").touch()
            deadline = time.monotonic() + 120
            while not os.path.exists(PROFILE["path"] + ".done") and time.monotonic() < deadline:
                time.sleep(0.2)
        failed_at = next(o["failed_at"] for o in outs if o["failed_at"])
        told = sorted(t - failed_at for o in outs for t in o["told"])
        roles = collections.Counter()
        for o in outs:
            roles.update(o["roles"])
        victims = next(o for o in outs if o["failed_at"])
        checkin = max(o["verdict_last"] for o in outs) - max(o["last_hello"] for o in outs)
        # node 0 hears the fault: its first line naming a failure (a silent node's: LOST_S after its last beat)
        heard = next((when for when, line in job.node0_when if when >= failed_at - 0.5 and " failed" in line), None)
        # node 0 has queued every node its role: its next line after the announce (its own launch, or its role;
        # an upper bound: the line follows its own plan for the generation)
        sent = next((when for when, line in job.node0_when if heard is not None and when >= heard and
                     ("generation 1: node 0 of" in line or "generation 1: this node is" in line)), None)
        return {"nodes": total, "spares": spares, "checkin_s": checkin, "told_s": told[-1],
                "heard_told_s": failed_at + told[-1] - heard if heard is not None else None,
                "heard_sent_s": sent - heard if sent is not None else None,
                "told_median_s": told[len(told) // 2], "told_n": len(told), "roles": dict(roles),
                "node0_cpu_s": job.cpu_between(failed_at, failed_at + told[-1]), "victims": victims["victims"],
                "generations": max(o["generations"] for o in outs), "restarts": victims["restarts"],
                "left_out": victims["left_out"], "spares_in": victims["spares_in"],
                "aborts_most": max(o["aborts_most"] for o in outs), "hello_bytes": max(o["hello_bytes"] for o in outs),
                "retries": sum(o["retries"] for o in outs),
                "node0_said": [f"+{when - failed_at:.2f}s {line.rstrip()}" for when, line in job.node0_when
                               if when >= failed_at - 0.5][-10:], **job.peak}
    finally:
        job.end()


def _memory(pid):
    """(VmRSS, VmHWM) of a process in MiB: now, and its peak so far."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    found[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return found.get("VmRSS"), found.get("VmHWM")


def status(nodes, workdir, rank_views=8):
    """``nodeweave-entrypoint --status`` (a real process, as ``nodeweave status --ranks`` asks) against node 0
    with every node in, beating, each with ``rank_views`` ranks in its stall watch's view (``nodes`` x 8 ranks):
    the answer's bytes, the process's seconds, node 0's resident memory; the summary (the default past 64
    nodes) and ``--status --all`` (every node and rank: what `doctor --cluster` asks for)."""
    job = Job(nodes, workdir, "torchrun", 120)
    got = {}

    def ask(flags):
        argv = _argv(nodes, 1, job.port, "torchrun", [])[:-1] + ["--status", *flags]  # node 1's settings, no `--`
        started = time.monotonic()
        out = subprocess.run(argv, env=job.env, cwd=workdir, capture_output=True, text=True, timeout=120)
        seconds = time.monotonic() - started
        rss, peak = _memory(job.node0.pid)
        one = {"seconds": seconds, "code": out.returncode, "bytes": len(out.stdout), "error": out.stderr.strip()[-300:],
               "rss": rss, "peak": peak}
        if out.returncode == 0:
            answer = json.loads(out.stdout)
            ranks = (answer.get("ranks") or {}).get("ranks") or []
            one.update(listed=len(answer.get("nodes") or []), ranks=len(ranks),
                       counted=(answer.get("summary") or {}).get("nodes"),
                       wire=len(json.dumps(answer, separators=(",", ":"))))
        return one

    def raw():
        """The summary asked from this process (no interpreter to start): node 0's own answer time."""
        from nodeweave.entrypoint.checkin.exchange import ask_status
        from nodeweave.entrypoint.checkin.wire import frame_limit, job_token

        started = time.monotonic()
        answer = ask_status("127.0.0.1", job.exchange, "nodeweave", job_token({}, "nodeweave", job.port), 60,
                            limit=frame_limit(nodes))
        rss, peak = _memory(job.node0.pid)
        return {"seconds": time.monotonic() - started, "code": 0, "rss": rss, "peak": peak,
                "counted": answer["summary"]["nodes"], "listed": len(answer.get("nodes") or []),
                "ranks": len((answer.get("ranks") or {}).get("ranks") or []),
                "wire": len(json.dumps(answer, separators=(",", ":")))}

    def asks():
        time.sleep(3 + nodes / 2000)  # every node's first beat (its ranks' view) in
        got["before"] = _memory(job.node0.pid)
        got["summary_wire"] = raw()
        got["summary"] = ask([])
        got["all"] = ask(["--all"])
        got["summary_again"] = ask([])
        for proc in job.swarms:  # asked: the swarm's hold need not run out
            proc.terminate()
    try:
        try:
            job.swarm(f"1:{nodes}", ["--hold", str(40 + nodes / 100), "--fail", "exit", "--rank-views",
                                     str(rank_views)], on_ready=threading.Thread(target=asks).start)
        except SystemExit:
            if "summary_again" not in got:
                raise
        return got
    finally:
        job.end()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="64,256,1024")
    parser.add_argument("--mode", choices=("swarm", "real"), default="swarm")
    parser.add_argument("--window", type=float, default=60.0, help="seconds of heartbeat to measure node 0's CPU")
    parser.add_argument("--runs", type=int, default=3, help="samples per node count (check-in; recovery: per fault)")
    parser.add_argument("--only", choices=("checkin", "heartbeat", "status", "recovery"), default=None)
    parser.add_argument("--fails", default="exit,close,silent", help="the failures to time (exit: node 0's CPU too)")
    parser.add_argument("--connecting", type=int, default=4096, help="simulated nodes connecting at once (all, up "
                        "to 4,096; fewer where one swarm process cannot answer node 0's connect-backs in 3 s)")
    parser.add_argument("--rack", type=int, default=1, help="this many nodes fail within a second (a rack losing "
                        "power): every other node must be told once")
    parser.add_argument("--swarms", type=int, default=1, help="recovery: simulated nodes in this many processes "
                        "(one per spare core: one process for thousands of nodes is the bottleneck otherwise)")
    parser.add_argument("--src", default=NODE0_SRC["path"], help="the nodeweave src/ node 0 runs (a 'before' copy: "
                        "git archive main src | tar -x -C /tmp/before)")
    parser.add_argument("--profile", help="recovery: node 0's every thread under cProfile, the stats to this file "
                        "(and FILE.txt, the top functions), from its start until every node was told its role")
    args = parser.parse_args()
    NODE0_SRC["path"] = args.src
    PROFILE["path"] = os.path.abspath(args.profile) if args.profile else None
    CONNECTING["at_once"] = args.connecting
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run still ends its processes
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by node 0 and the swarm
    counts = [int(n) for n in args.nodes.split(",")]
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"nofile soft {soft} -> {hard} (hard); mode {args.mode}; node 0 runs {args.src}; {args.connecting} connecting at "
          "once")
    with tempfile.TemporaryDirectory(prefix="nodeweave-scale-") as workdir:
        if args.only == "recovery":
            print("\n| training nodes + spares | fault (nodes failing) | baseline: first check-in, every hello -> every "
                  "verdict, s | **fault heard -> every surviving node told its next role, s (goal <= 3)** | "
                  "fault heard -> node 0 has sent every role, s | "
                  "fault -> every surviving node told, s (median) | node 0's CPU then, s | "
                  "generations started | restarts spent | victims left out / spares in | roles told | most aborts "
                  "one node got | hello bytes (carried book) | retries | load |")
            print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|")
            medians = []
            for n in counts:
                for fail in args.fails.split(","):
                    heard, sent = [], []
                    for _ in range(args.runs):
                        r = recovery(n, workdir, fail, args.rack, swarms=args.swarms)
                        heard.append(r["heard_told_s"] if r["heard_told_s"] is not None else float("inf"))
                        sent.append(r["heard_sent_s"] if r["heard_sent_s"] is not None else float("inf"))
                        print(f"| {n:,} + {r['spares']} | {fail} ({r['victims']}) | {_seconds(r['checkin_s'])} | "
                              f"**{_seconds(r['heard_told_s'])}** | {_seconds(r['heard_sent_s'])} | "
                              f"{_seconds(r['told_s'])} "
                              f"({_seconds(r['told_median_s'])}) | {_seconds(r['node0_cpu_s'])} | "
                              f"{r['generations']} | {r['restarts']} | {r['left_out']} / {r['spares_in']} | "
                              f"{r['roles']} | {r['aborts_most']} | {r['hello_bytes']} | {r['retries']} | "
                              f"{_load():.1f} |", flush=True)
                        for line in r["node0_said"]:
                            print(f"    node 0: {line[:200]}")
                    medians.append((n, r["spares"], fail, args.rack, sorted(heard), sorted(sent)))
            print("\n| training nodes + spares | fault | nodes failing within 1 s | fault heard -> every surviving "
                  "node told, s: median (each run) | goal | met | fault heard -> node 0 sent every role, s: median |")
            print("|---|---|---:|---:|---:|---|---:|")
            for n, spares, fail, rack, heard, sent in medians:
                median = heard[len(heard) // 2]
                each = ", ".join(f"{h:.2f}" for h in heard)
                print(f"| {n:,} + {spares} | {fail} | {rack} | **{median:.2f}** ({each}) | 3.00 | "
                      f"{'yes' if median <= 3.0 else 'no'} | {sent[len(sent) // 2]:.2f} |")
            return 0
        if args.only == "status":
            print("\n| nodes x ranks | asked | exit | nodes counted / listed | ranks listed | answer, bytes | "
                  "`--status` process, s | node 0 RSS before -> after, MiB (peak) | load |")
            print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
            for n in counts:
                r = status(n, workdir)
                before = (r.get("before") or (None, None))[0]
                for key in ("summary_wire", "summary", "all", "summary_again"):
                    one = r.get(key) or {}
                    asked = {"summary_wire": "summary, asked in-process (no `--status` process)"}.get(key, key)
                    print(f"| {n} x 8 | {asked.replace('_', ' ')} | {one.get('code')} "
                          f"{one.get('error', '')[:80] if one.get('code') else ''} | {one.get('counted', '-')} / "
                          f"{one.get('listed', '-')} | {one.get('ranks', '-')} | {one.get('wire', 0)} | "
                          f"{one.get('seconds', 0):.2f} | {before or 0:.0f} -> {one.get('rss') or 0:.0f} "
                          f"({one.get('peak') or 0:.0f}) | {_load():.1f} |", flush=True)
            return 0
        if args.only != "heartbeat":
            print("\n| nodes | start-up: spawn -> others in, s | critical path: last hello -> every verdict, s "
                  "(median of runs; each) | -> node 0/workers exit, s | verdict bytes, most one node got | node 0 sent "
                  "all nodes, bytes | same verdict everywhere (shared part; own row) | node 0 peak threads / fds | "
                  "node 0's CPU on the path, s (each run; 50 ms samples around it) | load |")
            print("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
            for n in counts:
                runs = [check_in(n, workdir, args.mode) for _ in range(args.runs)]
                paths = sorted(r["path_s"] for r in runs)
                ok = all(r["decision"] == "start" and r["codes"] == [0] for r in runs)
                print(f"| {n} | {max(r['in_s'] for r in runs):.2f} | {paths[len(paths) // 2]:.3f} "
                      f"({', '.join(f'{p:.3f}' for p in paths)}) | {max(r['exit_s'] for r in runs):.3f} | "
                      f"{runs[0]['bytes']} | {runs[0]['bytes_all']} | "
                      f"{all(r['identical'] and r['own_rows'] for r in runs) and ok} | "
                      f"{max(r['threads'] for r in runs)} / {max(r['fds'] for r in runs)} | "
                      f"{', '.join(_seconds(r['node0_cpu_s']) for r in runs)} | "
                      f"{_load():.1f} |", flush=True)
        if args.only != "checkin":
            print("\n| nodes | node 0 CPU, ms/min (window) | failure (nodes failing) | every node told, s | most aborts "
                  "one node got | node 0 exit (code) | workers exit, s | node 0 peak threads / fds | load |")
            print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
            for n in counts:
                for fail in args.fails.split(","):
                    r = heartbeat(n, workdir, args.mode, args.window, fail, args.rack)
                    cpu = f"{r['cpu_ms_per_min']:.0f} ({args.window:g} s)" if "cpu_ms_per_min" in r else ""
                    n0 = f"{r['node0_exit_s']:.2f} ({r['node0_code']})" if "node0_exit_s" in r else "-"
                    workers = (f"{r['workers_exit_s']:.2f} ({r['worker_codes']})" if "workers_exit_s" in r else "-")
                    told = f"{r['abort_s']:.3f}" if r["abort_s"] is not None else "-"
                    print(f"| {n} | {cpu} | {fail} ({r['victims']}) | {told} (untold {r['not_told']}) | "
                          f"{r['aborts_most']} | {n0} | {workers} | "
                          f"{r['threads']} / {r['fds']} | {_load():.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
