"""Process-tree nodes for benchmarks/recovery_goodput.py: the same job and faults on a machine with no
container engine (the lent GPU machines), each node a process tree on this one machine.

What stands in for a container:

- membership: every process of node N carries ``NWRB_NODE=<prefix>-N`` in its environment (inherited by the
  entrypoint, the launcher and the ranks, and kept by a rank whose launcher died), found in
  ``/proc/<pid>/environ``; its state and command line come from ``/proc/<pid>/stat`` (``runstate.proc_stat``) and ``cmdline``;
- its own hostname (``unshare --uts``, where this user may), ``TMPDIR`` (``<work>/nN``, where the
  entrypoint keeps its run record) and ``NCCL_HOSTID``, so NCCL joins the nodes only over its network
  transport, as it would join hosts; with ``gpus`` > 0 node N sees GPU ``N % gpus`` alone
  (``CUDA_VISIBLE_DEVICES``: nodes beyond the GPU count share one, which distinct host ids allow), with 0 none
  (gloo on CPU);
- "container killed": SIGKILL to every process of the node at once; "node 0 killed" does that and starts
  its command again (a restart policy); a bad node's marker is a file in its own folder.

Node 0 is reached at 127.0.0.1 on a port pair of its own, so modes run side by side.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recovery_cluster import Nodes  # noqa: E402
from stall_nodes import ROOT, free_port_pair, own_hostname_allowed, with_hostname  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))
from nodeweave.entrypoint.running.runstate import proc_stat  # noqa: E402

MARK = "NWRB_NODE"


class ProcessNodes(Nodes):
    """The nodes of one mode as process trees; ``work`` is the workspace every node shares."""

    python = sys.executable

    def __init__(self, prefix, work, gpus=0):
        self.prefix, self.workdir, self.gpus = prefix, str(work), gpus
        self.port, self.own_hostname = free_port_pair(), own_hostname_allowed()
        self.killed = set()

    def name(self, index):
        return f"{self.prefix}-{index}"

    def master(self):
        return "127.0.0.1", self.port

    def bad_marker(self, index):
        return f"{self.workdir}/n{index}/bad-node"

    def torchrun_node_args(self, index):
        """Every node is on this machine: torchrun cannot tell node 0 by its hostname (say which hosts the
        rendezvous), and a node's own hostname resolves nowhere (give the address its ranks' store is on)."""
        return ["--rdzv-conf", f"is_host={'true' if index == 0 else 'false'}", "--local-addr", "127.0.0.1"]

    def up(self, image, work, count):
        """Each node's folder (``image`` is the container kind's: processes run this machine's Python)."""
        self.down(count)
        for index in range(count):
            os.makedirs(f"{self.workdir}/n{index}", exist_ok=True)

    def down(self, count):
        """SIGKILL every process of every node of this mode (SIGSTOPped ranks included)."""
        for pid, _, _ in self._members(f"{MARK}={self.prefix}-"):
            _send(pid, signal.SIGKILL)

    def spawn(self, index, argv, env):
        bin_dir = str(Path(sys.executable).parent)
        node_env = {**os.environ, **env, MARK: self.name(index), "TMPDIR": f"{self.workdir}/n{index}",
                    "NCCL_HOSTID": self.name(index), "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
                    "CUDA_VISIBLE_DEVICES": str(index % self.gpus) if self.gpus else ""}
        if self.own_hostname:
            argv = with_hostname(self.name(index), argv)
        return subprocess.Popen(argv, env=node_env, cwd=self.workdir, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def processes(self, index):
        return self._members(f"{MARK}={self.name(index)}\0")

    def send(self, index, pid, signal_name):
        _send(pid, getattr(signal, f"SIG{signal_name}"))

    def kill(self, index):
        """Every process of the node SIGKILLed at once: the host time just before."""
        at = time.time()
        for pid, _, _ in self.processes(index):
            _send(pid, signal.SIGKILL)
        self.killed.add(index)
        return at

    def restart(self, node):
        at = self.kill(node.index)
        node.proc.wait()
        self.killed.discard(node.index)
        node.start()
        return at

    def make_bad(self, index):
        Path(self.bad_marker(index)).touch()

    def goodput_record(self, index):
        """The node's goodput timeline (``<work>/nN/nodeweave/jobs/<job>-<port>/goodput.json``: node 0 keeps it in
        its job's folder; one job here), or None."""
        for record in sorted(Path(f"{self.workdir}/n{index}/nodeweave/jobs").glob("*/goodput.json")):
            try:
                return json.loads(record.read_text())
            except (OSError, ValueError):
                return None
        return None

    def alive(self, index):
        return index not in self.killed

    @staticmethod
    def _members(entry):
        """[(pid, state, command line)] of the processes whose environment holds ``entry``."""
        found, needle = [], b"\0" + entry.encode()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle not in b"\0" + f.read() + b"\0":
                        continue
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            stat = proc_stat(int(name))
            if stat is not None:
                found.append((int(name), stat[0], args))
        return found


def _send(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
