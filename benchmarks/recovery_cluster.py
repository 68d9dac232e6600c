"""Podman nodes for benchmarks/recovery_goodput.py: containers, the job's processes in them, and the faults.

Each node is a container of the cpu image on one podman network, holding
(``sleep infinity``) until the benchmark ``podman exec``s a node's command in
it; the workspace (the training script, the entrypoint zipapp of this
checkout, the shared checkpoint folder) is bind-mounted at /work. Every line a
node prints is kept with the host time it arrived. Faults act as the real
thing would: ``kill -9`` / ``kill -STOP`` of the rank's process (found by
``ps`` in the container, by pid), ``podman kill`` of a container, a marker
file that makes a node fail at every start, and node 0's container killed and
started again with its command (what a restart policy does).
"""

import subprocess
import threading
import time

PREFIX = "nwrb"  # set per mode (use_prefix), so modes can run side by side from separate processes
BAD_NODE_MARKER = "/tmp/nw-bad-node"  # inside a container: that node alone is bad


def podman(*args, timeout=120, check=True):
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise SystemExit(f"podman {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def use_prefix(prefix):
    global PREFIX
    PREFIX = prefix


def network():
    return f"{PREFIX}-net"


def name(index):
    return f"{PREFIX}-{index}"


def up(image, work, count):
    """``count`` holding containers on a fresh network, the workspace at /work."""
    down(count)
    podman("network", "create", network())
    for index in range(count):
        podman("run", "-d", "--name", name(index), "--hostname", name(index), "--network", network(),
               "-v", f"{work}:/work", "-w", "/work", "--entrypoint", "sleep", image, "infinity")


def down(count):
    for index in range(count):
        podman("rm", "-f", "-t", "0", name(index), check=False)
    podman("network", "rm", "-f", network(), check=False)


class Node:
    """One node's command, run by ``podman exec``; ``lines`` holds (host time, text) as they arrive."""

    def __init__(self, index, argv, env):
        self.index, self.argv, self.env = index, argv, env
        self.lines, self.runs = [], 0
        self.start()

    def start(self):
        env_args = [arg for key, value in sorted(self.env.items()) for arg in ("-e", f"{key}={value}")]
        self.proc = subprocess.Popen(["podman", "exec", *env_args, name(self.index), *self.argv],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.runs += 1
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc):
        for line in proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def ended(self):
        return self.proc.poll() is not None


def rank_pids(index, script):
    """Pids of the running training processes in a container, newest first (not the entrypoint, not
    torchrun; not a stopped or dead one: a rank SIGSTOPped earlier may outlive its launcher)."""
    done = podman("exec", name(index), "ps", "-eo", "pid,stat,args", check=False, timeout=60)
    pids = []
    for line in done.stdout.splitlines()[1:]:
        fields = line.split(None, 2)
        if len(fields) < 3 or fields[1][0] in "TtZ":
            continue
        args = fields[2]
        if script in args and not any(x in args for x in ("torchrun", "nodeweave-entrypoint", "torch.distributed.run")):
            pids.append(int(fields[0]))
    return sorted(pids, reverse=True)


def stopped_pids(index, script):
    """Training processes in a container that are stopped (state T): what a SIGSTOP left behind."""
    done = podman("exec", name(index), "ps", "-eo", "pid,stat,args", check=False, timeout=60)
    return [int(f[0]) for f in (line.split(None, 2) for line in done.stdout.splitlines()[1:])
            if len(f) == 3 and f[1][0] in "Tt" and script in f[2]]


def signal_rank(index, script, signal_name):
    """Send KILL or STOP to the node's rank: the host time just before, or None when it runs none now."""
    pids = rank_pids(index, script)
    if not pids:
        return None
    at = time.time()
    podman("exec", name(index), "kill", f"-{signal_name}", str(pids[0]), check=False, timeout=60)
    return at


def kill_container(index):
    """``podman kill``: the host time just before."""
    at = time.time()
    podman("kill", name(index), check=False, timeout=60)
    return at


def restart_container(node):
    """Kill the container, start it again and rerun its command (a restart policy); the time of the kill."""
    at = kill_container(node.index)
    podman("start", name(node.index), timeout=120)
    node.start()
    return at


def make_bad(index):
    podman("exec", name(index), "touch", BAD_NODE_MARKER, check=False, timeout=60)


def alive(index):
    done = podman("inspect", "-f", "{{.State.Running}}", name(index), check=False, timeout=60)
    return done.stdout.strip() == "true"
