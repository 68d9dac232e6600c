"""Podman nodes for benchmarks/recovery_goodput.py: containers, the job's processes in them, and the faults.

(recovery_processes.py holds the same nodes as process trees on one machine, for a machine with GPUs and no
container engine.)

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

import json
import subprocess
import threading
import time

BAD_NODE_MARKER = "/tmp/nw-bad-node"  # inside a container: that node alone is bad


def podman(*args, timeout=120, check=True):
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise SystemExit(f"podman {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


class Nodes:
    """What every kind of node shares: its command started as a :class:`Node`, the job's processes found by
    command line, a rank signalled. A kind gives ``spawn``, ``processes`` and ``send``."""

    def start(self, index, argv, env):
        return Node(self, index, argv, env)

    def rank_pids(self, index, script):
        """Pids of the running training processes of a node, newest first (not the entrypoint, not torchrun;
        not a stopped or dead one: a rank SIGSTOPped earlier may outlive its launcher)."""
        return sorted((pid for pid, state, args in self.processes(index)
                       if state[0] not in "TtZ" and is_rank(args, script)), reverse=True)

    def stopped_pids(self, index, script):
        """Training processes of a node that are stopped (state T): what a SIGSTOP left behind."""
        return [pid for pid, state, args in self.processes(index) if state[0] in "Tt" and script in args]

    def signal_rank(self, index, script, signal_name):
        """Send KILL or STOP to the node's rank: the host time just before, or None when it runs none now."""
        pids = self.rank_pids(index, script)
        if not pids:
            return None
        at = time.time()
        self.send(index, pids[0], signal_name)
        return at


class PodmanNodes(Nodes):
    """The nodes of one mode: containers ``<prefix>-N`` on the network ``<prefix>-net`` (a prefix per mode,
    so modes run side by side from separate processes)."""

    python = "python3"
    workdir = "/work"  # the workspace as the nodes see it

    def __init__(self, prefix):
        self.prefix = prefix

    def name(self, index):
        return f"{self.prefix}-{index}"

    def master(self):
        """(address, port) of node 0 as the other nodes reach it."""
        return self.name(0), 29500

    def bad_marker(self, index):
        return BAD_NODE_MARKER

    def torchrun_node_args(self, index):
        """torchrun's arguments that make node 0 host the rendezvous: none, node 0's name is its own."""
        return []

    def up(self, image, work, count):
        """``count`` holding containers on a fresh network, the workspace at /work."""
        self.down(count)
        podman("network", "create", f"{self.prefix}-net")
        for index in range(count):
            podman("run", "-d", "--name", self.name(index), "--hostname", self.name(index), "--network",
                   f"{self.prefix}-net", "-v", f"{work}:/work", "-w", "/work", "--entrypoint", "sleep", image,
                   "infinity")

    def down(self, count):
        for index in range(count):
            podman("rm", "-f", "-t", "0", self.name(index), check=False)
        podman("network", "rm", "-f", f"{self.prefix}-net", check=False)

    def spawn(self, index, argv, env):
        env_args = [arg for key, value in sorted(env.items()) for arg in ("-e", f"{key}={value}")]
        return subprocess.Popen(["podman", "exec", *env_args, self.name(index), *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def processes(self, index):
        """[(pid, state, command line)] of the processes in the container."""
        done = podman("exec", self.name(index), "ps", "-eo", "pid,stat,args", check=False, timeout=60)
        found = []
        for line in done.stdout.splitlines()[1:]:
            fields = line.split(None, 2)
            if len(fields) == 3:
                found.append((int(fields[0]), fields[1], fields[2]))
        return found

    def send(self, index, pid, signal_name):
        podman("exec", self.name(index), "kill", f"-{signal_name}", str(pid), check=False, timeout=60)

    def kill(self, index):
        """``podman kill``: the host time just before."""
        at = time.time()
        podman("kill", self.name(index), check=False, timeout=60)
        return at

    def restart(self, node):
        """Kill the container, start it again and rerun its command (a restart policy); the time of the kill."""
        at = self.kill(node.index)
        podman("start", self.name(node.index), timeout=120)
        node.start()
        return at

    def make_bad(self, index):
        podman("exec", self.name(index), "touch", BAD_NODE_MARKER, check=False, timeout=60)

    def goodput_record(self, index):
        """The node's goodput timeline (``$TMPDIR/nodeweave/jobs/<job>-<port>/goodput.json``: node 0 keeps it in its
        job's folder; one job per container), or None."""
        done = podman("exec", self.name(index), "sh", "-c", 'cat "${TMPDIR:-/tmp}"/nodeweave/jobs/*/goodput.json',
                      check=False, timeout=60)
        try:
            return json.loads(done.stdout) if done.returncode == 0 else None
        except ValueError:
            return None

    def alive(self, index):
        done = podman("inspect", "-f", "{{.State.Running}}", self.name(index), check=False, timeout=60)
        return done.stdout.strip() == "true"


def is_rank(args, script):
    """A training process's command line: the script is its program, not an argument of its launcher or of the
    entrypoint (only the words before the script count: a path after it may hold any name)."""
    words = args.split()
    at = next((k for k, word in enumerate(words) if word.endswith(script)), None)
    launchers = ("torchrun", "nodeweave-entrypoint", "torch.distributed.run")
    return at is not None and not any(name in word for word in words[:at] for name in launchers)


class Node:
    """One node's command; ``lines`` holds (host time, text) as they arrive."""

    def __init__(self, nodes, index, argv, env):
        self.nodes, self.index, self.argv, self.env = nodes, index, argv, env
        self.lines, self.runs = [], 0
        self.start()

    def start(self):
        self.proc = self.nodes.spawn(self.index, self.argv, self.env)
        self.runs += 1
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc):
        for line in proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def ended(self):
        return self.proc.poll() is not None
