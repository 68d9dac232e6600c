"""Make one node of a local podman cluster slow, from the host, the way real nodes go bad.

- ``throttle_link``: a token-bucket qdisc (``tc qdisc add dev <veth> root tbf``) on the host side of the
  container's veth: everything sent *into* the node passes the bucket (netem is not in every kernel);
- ``limit_cpus``: ``podman update --cpus`` (the cgroup's CFS quota), as ``--cpus`` at start would
  (``--cpus`` at start cannot differ per node of one compose cluster);
- ``shrink_shm``: the container's /dev/shm tmpfs remounted at a smaller size in its mount namespace
  (``nsenter -t PID -m``), what ``--shm-size 1m`` gives at start.
Each returns the command that undoes it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import List

from e2e_harness import container_pid


def _run(argv: List[str]) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"{argv} exited {out.returncode}: {out.stderr}"
    return out.stdout.strip()


def host_veth(container: str) -> str:
    """The host end of the container's eth0: the link whose index is eth0's iflink."""
    index = _run(["podman", "exec", container, "cat", "/sys/class/net/eth0/iflink"])
    for line in _run(["ip", "-o", "link"]).splitlines():
        number, name = line.split(":", 2)[:2]
        if number.strip() == index:
            return name.strip().split("@")[0]
    raise AssertionError(f"no host link with index {index} (eth0 of {container})")


def throttle_link(container: str, rate: str = "400mbit") -> List[str]:
    veth = host_veth(container)
    _run(["tc", "qdisc", "add", "dev", veth, "root", "tbf", "rate", rate, "burst", "64kb", "latency", "100ms"])
    return ["tc", "qdisc", "del", "dev", veth, "root"]


def limit_cpus(container: str, cpus: float) -> List[str]:
    """``podman update --cpus``; undone by writing -1 (no quota) to the container's cgroup v1 file,
    since ``podman update`` (4.3) keeps the quota for ``--cpu-quota -1`` and ``--cpus 0``."""
    _run(["podman", "update", "--cpus", f"{cpus:g}", container])
    ident = _run(["podman", "inspect", "--format", "{{.Id}}", container])
    found = list(Path("/sys/fs/cgroup/cpu").glob(f"**/*{ident}*/cpu.cfs_quota_us"))
    assert found, f"no cgroup v1 cpu.cfs_quota_us for {container}"
    return ["sh", "-c", 'echo -1 > "$0"', str(found[0])]


def shrink_shm(container: str, size: str = "1m", back: str = "1g") -> List[str]:
    pid = container_pid("podman", container)
    _run(["nsenter", "-t", pid, "-m", "mount", "-o", f"remount,size={size}", "/dev/shm"])
    return ["nsenter", "-t", pid, "-m", "mount", "-o", f"remount,size={back}", "/dev/shm"]


def undo(argv: List[str]) -> None:
    subprocess.run(argv, capture_output=True, text=True, timeout=120)
