"""What benchmarks/sync_bench.py measures of one command, and how.

- CPU of the command's whole process tree on this side: ``RUSAGE_CHILDREN``
  (every descendant is reaped into its parent, so the tree's CPU arrives here).
- Disk reads of that tree: ``read_bytes`` of this process's ``/proc/self/io``,
  which the kernel grows by each reaped child's (and theirs, recursively).
- The receivers' CPU: each container's cgroup (cgroup v1 ``cpuacct``).
- Logical reads of SRC's files, cached or not: ``strace -f -y`` in a separate,
  untimed run (tracing slows every process it follows).
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple


class Sample(NamedTuple):
    seconds: float
    cpu: float  # source side: the command's process tree
    own_cpu: float  # of which nodeweave's own process (not its exec clients, rsync or git); 0 if not nodeweave
    disk_mib: float  # read from storage by that tree
    receivers: float  # CPU in the targets' containers
    stdout: str


def _read_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Meter:
    def __init__(self, containers: "list[str]"):
        ids = subprocess.run(["podman", "inspect", "--format", "{{.Id}}", *containers], check=True,
                             capture_output=True, text=True).stdout.split()
        self.cgroups = [Path(f"/sys/fs/cgroup/cpuacct/libpod_parent/libpod-{cid}/cpuacct.usage") for cid in ids]

    def receivers(self) -> float:
        return sum(int(p.read_text()) / 1e9 for p in self.cgroups if p.is_file())

    def run(self, argv: "list[str]", stdin: "bytes | None" = None) -> Sample:
        note = Path(tempfile.mkstemp(prefix="nwsync-self-")[1])
        env = {**os.environ, "NWSYNC_BENCH_SELF": str(note)}
        cpu0, disk0, recv0, t0 = _children_cpu(), _read_bytes(), self.receivers(), time.perf_counter()
        out = subprocess.run(argv, input=stdin, capture_output=True, timeout=1800, env=env)
        seconds = time.perf_counter() - t0
        own = float(note.read_text() or 0)
        note.unlink()
        sample = Sample(seconds, _children_cpu() - cpu0, own, (_read_bytes() - disk0) / 2**20,
                        self.receivers() - recv0, out.stdout.decode(errors="replace"))
        if out.returncode != 0:
            raise SystemExit(f"{argv[:4]} failed (exit {out.returncode}): {out.stderr.decode()[-2000:]}")
        return sample


def evict(root: Path) -> None:
    """Drop the tree's (clean) pages from the page cache, so the next read of it goes to disk."""
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


_READ = re.compile(r"^\d+\s+(?:p?readv?|pread64)\((\d+)<([^>]*)>.*?\)\s+=\s+(\d+)")
_UNFINISHED = re.compile(r"^(\d+)\s+(?:p?readv?|pread64)\(\d+<([^>]*)>.*<unfinished \.\.\.>")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (?:p?readv?|pread64) resumed>.*\)\s+=\s+(\d+)")


def logical_reads(argv: "list[str]", root: Path) -> float:
    """MiB the command's whole process tree read from files under ``root`` (page cache or not)."""
    prefix = str(root) + "/"
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        subprocess.run(["strace", "-f", "-qq", "-y", "-s", "0", "-e", "trace=read,pread64,readv,preadv",
                        "-e", "signal=none", "-o", log.name, *argv], check=True, capture_output=True, timeout=3600)
        total, pending = 0, set()
        for line in open(log.name, errors="replace"):
            if (m := _READ.match(line)) and m.group(2).startswith(prefix):
                total += int(m.group(3))
            elif (m := _UNFINISHED.match(line)) and m.group(2).startswith(prefix):
                pending.add(m.group(1))
            elif (m := _RESUMED.match(line)) and m.group(1) in pending:
                pending.discard(m.group(1))
                total += int(m.group(2))
    return total / 2**20


def relay_floor(root: Path, containers: "list[str]", meter: Meter) -> Sample:
    """``podman exec -i C sh -c 'cat >/dev/null'`` per container, all fed the tree's tar stream at once.

    The source side's CPU here is only the exec clients': what any fan-out
    through ``podman exec`` pays per target for these bytes.
    """
    data = subprocess.run(["tar", "-C", str(root), "-cf", "-", "."], check=True, capture_output=True).stdout
    cpu0, recv0, t0 = _children_cpu(), meter.receivers(), time.perf_counter()
    procs = [subprocess.Popen(["podman", "exec", "-i", c, "sh", "-c", "cat >/dev/null"], stdin=subprocess.PIPE)
             for c in containers]
    feeders = [threading.Thread(target=lambda p=p: (p.stdin.write(data), p.stdin.close())) for p in procs]
    for f in feeders:
        f.start()
    for f, p in zip(feeders, procs):
        f.join()
        p.wait()
    return Sample(time.perf_counter() - t0, _children_cpu() - cpu0, 0.0, 0.0, meter.receivers() - recv0, "")
