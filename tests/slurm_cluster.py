"""A real Slurm cluster on this machine for the tests: slurmctld and two slurmd "nodes" (or more: ``Cluster(root,
node_names(3))``, recovery's spare).

Debian's slurm-wlm (22.05) is built with multiple-slurmd support, so one host
can run two slurmd daemons (``slurmd -N HOST``, ``-N HOST-nw2``) on their own
ports, each offering 2 CPUs, 4000 MB, the feature ``ib`` and 2 GPUs as GRES
(the "GPUs" are /dev/tty1-2: Slurm only counts files, which is what
--gpus-per-node is checked against). The first node is named after this
machine: the entrypoint takes the master from the first host of
SLURM_JOB_NODELIST, and on one machine that name is the one that resolves to
it (Slurm refuses ``localhost`` beside a second slurmd); the second node's
name is never looked up (its rank comes from SLURM_NODEID). Auth
and credentials are ``none``, everything lives in a temporary directory, and
only the daemons started here are stopped. Starting needs root (slurmd runs
jobs as their user); anything missing is a skip with the reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, Optional, Tuple

from free_ports import free_port as _free_port


def node_names(count: int = 2) -> Tuple[str, ...]:
    """HOST, HOST-nw2, ...: Slurm sorts them so, and the first (the master) is the name that reaches this machine."""
    host = socket.gethostname().split(".")[0]
    return (host, *(f"{host}-nw{i}" for i in range(2, count + 1)))


NODES = node_names(2)
NODELIST = ",".join(NODES)  # as Slurm prints it (sbatch --test-only, SLURM_JOB_NODELIST)


def problem() -> Optional[str]:
    """Why no local Slurm cluster can start here, or None."""
    missing = [tool for tool in ("slurmctld", "slurmd", "sbatch", "sinfo") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (Debian: apt-get install slurm-wlm)"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs"
    try:
        socket.gethostbyname(NODES[0])
    except OSError as err:
        return f"this machine's name {NODES[0]!r} does not resolve ({err}): node 0 of the test cluster is named so"
    if not all(Path(f"/dev/tty{i}").exists() for i in (1, 2)):
        return "/dev/tty1 and /dev/tty2 (the fake GPU files) are absent"
    return None


CONF = """ClusterName=nodeweave
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
{nodes}
PartitionName=debug Nodes={nodelist} Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    def __init__(self, root: Path, nodes: Tuple[str, ...] = NODES):
        self.root, self.nodes = root, nodes
        self.env: Dict[str, str] = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
        self.pids = []

    def start(self, timeout: float = 30) -> None:
        (self.root / "state").mkdir(parents=True)
        (self.root / "spool").mkdir()
        host = socket.gethostname()
        nodes = "\n".join(f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={_free_port()} CPUs=2 "
                          f"RealMemory=4000 Feature=ib Gres=gpu:2" for n in self.nodes)
        (self.root / "slurm.conf").write_text(CONF.format(host=host, ctld_port=_free_port(), root=self.root, nodes=nodes,
                                                              nodelist=",".join(self.nodes)))
        (self.root / "gres.conf").write_text("AutoDetect=off\n" + "".join(
            f"NodeName={n} Name=gpu File=/dev/tty[1-2]\n" for n in self.nodes))
        self._daemon(["slurmctld", "-i", "-c"], "slurmctld.pid")
        for node in self.nodes:
            self._daemon(["slurmd", "-N", node], f"slurmd-{node}.pid")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False).stdout.split()
            if states == ["idle"] * len(self.nodes):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the local Slurm cluster did not come up (node states {states}):\n" + self.logs())

    def _daemon(self, argv, pid_file: str) -> None:
        out = subprocess.run([*argv, "-f", self.env["SLURM_CONF"]], env=self.env, capture_output=True, text=True,
                             timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {out.stderr.strip()}\n" + self.logs())
        pid_path = self.root / pid_file
        for _ in range(50):
            if pid_path.is_file() and pid_path.read_text().strip():
                self.pids.append(int(pid_path.read_text()))
                return
            time.sleep(0.1)
        raise RuntimeError(f"{argv[0]} wrote no pid file {pid_path}\n" + self.logs())

    def run(self, argv, check: bool = True, cwd: Optional[Path] = None, env: Optional[Dict[str, str]] = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        out = subprocess.run(argv, env={**self.env, **(env or {})}, capture_output=True, text=True, cwd=cwd,
                             timeout=timeout)
        if check and out.returncode != 0:
            raise AssertionError(f"{' '.join(map(str, argv))} exited {out.returncode}:\n{out.stdout}\n{out.stderr}")
        return out

    def logs(self) -> str:
        parts = []
        for log in sorted(self.root.glob("*.log")):
            parts.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(parts)

    def stop(self) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in self.pids:
            for _ in range(50):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
