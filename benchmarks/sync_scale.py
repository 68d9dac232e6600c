"""``nodeweave sync`` to 64 targets through the head, against one target: the source's CPU.

The targets are bare hosts reached through ``benchmarks/ssh_standin.sh`` as
``ssh``: every host a folder of this machine with its own HOME and TMPDIR (so
its own resident agent) and its own network namespace (a veth on one bridge,
address 198.18.0.x: the agents' relay hops and the head's dials to residents
cross real sockets between namespaces; sync refuses addresses that several
targets share, so a plain loopback stand-in would never relay). So the real
agents, relay, residents and tunnel run; ``--relay`` is given because relay is
off over ssh by default. What is missing is a physical network and each
node's own cores. Every remote command also runs in a mount namespace of its
own where ``/nwscale-remote`` (DEST's prefix) is that host's folder, so a
resident, which the head hands DEST directly, writes where an exec would.
Needs root (``ip netns``, ``unshare -m``); what it makes is named ``nws*``
with a random tag (and ``/nwscale-remote``, empty) and removed at the end.

The stand-in runs every remote command under ``/usr/bin/time`` (its
``NWSCALE_REMOTE_CPU``): the CPU of what runs "on a target" (the agent an exec
starts, the head with its tunnel, rsync's server) is written to that host's
file and taken out of the source's figure, which is the command's whole local
process tree (``RUSAGE_CHILDREN``) minus those. Residents are forked away and
never count on either side. Cases, into fresh directories, interleaved per
round: plain ``rsync`` to 1 target (the same stand-in as its ``--rsh``),
``nodeweave sync`` to 1 target, to N at first contact (no resident on
record: an exec per node) and to N through the head (residents on record:
one exec). Every nodeweave run is checked: every target ``ok`` with the
source's digest. Goal (issue 22): through the head, source CPU <= 1.5x one target's.

    nice .venv/bin/python benchmarks/sync_scale.py [--targets 64] [--files 500] [--mb 16] [--rounds 3]
        [--baseline-src /work/main/src]
"""

import argparse
import json
import os
import platform
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODEWEAVE = [sys.executable, "-c", "import atexit, os, resource, sys\n"
             "def note():\n    u = resource.getrusage(resource.RUSAGE_SELF)\n"
             "    open(os.environ['NWSYNC_BENCH_SELF'], 'w').write(str(u.ru_utime + u.ru_stime))\n"
             "atexit.register(note)\nfrom nodeweave.cli import main\nsys.exit(main())"]


def make_tree(root, files, mb):
    rng = random.Random(7)
    size = mb * 2 ** 20 // files
    for i in range(files):
        path = root / f"pkg{i % 20:02d}" / f"f{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(size))


class Namespaces:
    """One network namespace per host, each with a veth on a bridge of its own (its netfilter hook off, so the
    machine's firewall never sees the hops): ``198.18.0.0/16``, the benchmarking range."""

    def __init__(self, hosts):
        self.tag = os.urandom(2).hex()
        self.bridge, self.hosts, self.made = f"nwsbr{self.tag}", hosts, []

    def __enter__(self):
        self.mountpoint = not MOUNTPOINT.exists()  # each host's remote/ is bound here in its own mount namespace
        MOUNTPOINT.mkdir(exist_ok=True)
        _ip("link", "add", self.bridge, "type", "bridge")
        self.made.append(("link", "del", self.bridge))
        _ip("link", "set", self.bridge, "type", "bridge", "nf_call_iptables", "0")
        _ip("link", "set", self.bridge, "up")
        for i, host in enumerate(self.hosts):
            ns, outer, inner = f"nws-{self.tag}-{host}", f"nwv{self.tag}{i}", f"nwp{self.tag}{i}"
            _ip("netns", "add", ns)
            self.made.append(("netns", "del", ns))
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            _ip("link", "set", inner, "netns", ns)
            _ip("link", "set", outer, "master", self.bridge, "up")
            subprocess.run(["ip", "-n", ns, "-batch", "-"], check=True, text=True,
                           input=f"addr add 198.18.{i // 250}.{i % 250 + 1}/16 dev {inner}\n"
                                 f"link set {inner} up\nlink set lo up\n")
        return self

    def __exit__(self, *exc):
        for step in reversed(self.made):  # a namespace's end removes its veth pair
            subprocess.run(["ip", *step], capture_output=True)
        if self.mountpoint:
            try:
                MOUNTPOINT.rmdir()
            except OSError:
                pass


MOUNTPOINT = Path("/nwscale-remote")


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class Harness:
    def __init__(self, root, targets):
        self.root = root
        self.hosts_root = root / "hosts"
        (root / "bin").mkdir(parents=True)
        shutil.copy(HERE / "ssh_standin.sh", root / "bin" / "ssh")
        (root / "bin" / "ssh").chmod(0o755)
        self.hosts = [f"127.3.{i // 250}.{i % 250 + 1}" for i in range(targets)]
        self.env = dict(os.environ, NWSCALE_ROOT=str(self.hosts_root), NWSCALE_REMOTE_CPU="1",
                        XDG_CACHE_HOME=str(root / "cache"), NWSYNC_BENCH_SELF=str(root / "self-cpu"),
                        PATH=f"{root / 'bin'}:{Path(sys.executable).parent}:{os.environ['PATH']}")
        self.samples, self.execs = {}, {}
        self.baseline_env = None  # set: the through-the-head case again with another checkout's code

    def remote_cpu(self):
        """CPU-s of every command the stand-in ran "on a host" so far (``/usr/bin/time`` lines)."""
        total = 0.0
        for record in self.hosts_root.glob("*/remote-cpu"):
            for line in record.read_text().splitlines():
                parts = line.split()
                if len(parts) == 2:
                    total += float(parts[0]) + float(parts[1])
        return total

    def measure(self, case, argv, env=None):
        """Run ``argv``; record (seconds, source CPU-s, nodeweave's own CPU-s, targets' exec'd CPU-s)."""
        own = self.root / "self-cpu"
        own.unlink(missing_ok=True)
        use0, remote0, started = resource.getrusage(resource.RUSAGE_CHILDREN), self.remote_cpu(), time.monotonic()
        out = subprocess.run(argv, env=env or self.env, capture_output=True, text=True, timeout=900)
        seconds = time.monotonic() - started
        use1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:
            bad = [t for t in _targets(out.stdout) if t.get("status") != "ok"]
            raise SystemExit(f"{case}: exit {out.returncode}: {out.stderr[-3000:]}\nthe targets that failed: "
                             f"{json.dumps(bad, indent=1)[:6000]}")
        tree = use1.ru_utime + use1.ru_stime - use0.ru_utime - use0.ru_stime
        remote = self.remote_cpu() - remote0
        mine = float(own.read_text()) if own.exists() else 0.0
        self.samples.setdefault(case, []).append((seconds, tree - remote, mine, remote))
        return out.stdout

    def sync(self, case, src, dest, hosts, head=None, env=None):
        """One ``nodeweave sync --relay``; ``head``: every session went through a head (True) or none did."""
        out = self.measure(case, [*NODEWEAVE, "sync", "--json", "--relay", str(src), dest,
                                  *[f"--to=ssh:{h}" for h in hosts]], env)
        data = json.loads(out)
        if {(t["status"], t["digest"]) for t in data["targets"]} != {("ok", data["source"]["digest"])}:
            raise SystemExit(f"{case}: a target does not hold the source: {data['targets'][:3]}")
        channels = [t.get("channel") or "" for t in data["targets"]]
        heads = channels.count("exec, tunnel head")
        tunnelled = all(c == "exec, tunnel head" or c.startswith("via ") for c in channels)
        if head is not None and (head != tunnelled or head != bool(heads)):
            raise SystemExit(f"{case}: the sessions {'did not go' if head else 'went'} through a head: "
                             f"{sorted(set(channels))[:4]}")
        self.execs.setdefault(case, []).append(heads if heads else len(hosts))

    def rsync(self, case, src, dest):
        self.measure(case, ["rsync", "-rlpt", "--whole-file", "--rsh", "ssh", f"{src}/", f"{self.hosts[0]}:{dest}/"])

    def forget_residents(self):
        (self.root / "cache" / "nodeweave" / "sync" / "residents.json").unlink(missing_ok=True)

    def stop_residents(self):
        for state in self.hosts_root.glob("*/tmp/nodeweave-sync-*/resident.json"):
            try:
                os.kill(int(json.loads(state.read_text())["pid"]), signal.SIGTERM)
            except (OSError, ValueError, KeyError):
                pass


def _targets(stdout):
    try:
        return json.loads(stdout)["targets"]
    except (ValueError, KeyError, TypeError):
        return []


def one_round(h, src, i):
    n = len(h.hosts)
    h.rsync("plain rsync, 1 target", src, f"/nwscale-remote/raw{i}")
    h.sync("nodeweave sync, 1 target", src, f"/nwscale-remote/one{i}", h.hosts[:1])
    h.forget_residents()
    h.sync(f"nodeweave sync, {n} targets, first contact", src, f"/nwscale-remote/first{i}", h.hosts, head=False)
    h.sync(f"nodeweave sync, {n} targets, through the head", src, f"/nwscale-remote/head{i}", h.hosts, head=True)
    if h.baseline_env:
        h.sync(f"nodeweave sync, {n} targets, through the head, baseline", src, f"/nwscale-remote/base{i}", h.hosts,
               head=True, env=h.baseline_env)
    for host in h.hosts:
        for kind in ("raw", "one", "first", "head", "base"):
            shutil.rmtree(h.hosts_root / host / "remote" / f"{kind}{i}", ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=64)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--mb", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", help="another checkout's src/ (e.g. /work/main/src): the through-the-head "
                        "case with its code too, interleaved")
    args = parser.parse_args()
    if not Path("/usr/bin/time").exists() or not shutil.which("rsync"):
        print("needs /usr/bin/time (GNU time) and rsync", file=sys.stderr)
        return 3
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{args.targets} targets, {args.files} files, {args.mb} MiB, {args.rounds} rounds; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="nwsync-scale-"))
    h = Harness(root, args.targets)
    spaces = Namespaces(h.hosts)
    h.env["NWSCALE_NETNS"] = spaces.tag
    if args.baseline_src:
        h.baseline_env = dict(h.env, PYTHONPATH=args.baseline_src)
    try:
        spaces.__enter__()
        make_tree(root / "tree", args.files, args.mb)
        h.sync("warm-up", root / "tree", "/nwscale-remote/warm", h.hosts[:1])  # the source's digest cache
        for i in range(args.rounds):
            one_round(h, root / "tree", i)
            print(f"  round {i + 1} done (load {os.getloadavg()[0]:.1f})", flush=True)
        h.samples.pop("warm-up")
        report(h, args)
        return 0
    finally:
        h.stop_residents()
        spaces.__exit__(None, None, None)
        shutil.rmtree(root, ignore_errors=True)


def report(h, args):
    med = {case: [statistics.median(v[k] for v in runs) for k in range(4)] for case, runs in h.samples.items()}
    one = med["nodeweave sync, 1 target"]
    print("\n| case | s | source CPU-s | of it nodeweave's process | targets' exec'd CPU-s | execs from the source "
          "| source CPU x 1 target's |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case, (seconds, source, mine, remote) in med.items():
        execs = statistics.median(h.execs[case]) if case in h.execs else 1
        print(f"| {case} | {seconds:.2f} | {source:.2f} | {mine:.2f} | {remote:.2f} | {execs:.0f} "
              f"| {source / one[1]:.2f}x |")
    head = med[f"nodeweave sync, {args.targets} targets, through the head"]
    print(f"\nthrough the head: source CPU {head[1] / one[1]:.2f}x one target's (goal <= 1.5x); medians of "
          f"{args.rounds}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
