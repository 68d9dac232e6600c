"""The kernel log, read the first way this node is allowed: ``/dev/kmsg``, then ``dmesg``, then ``journalctl -k``.

Each needs a permission a container often lacks: with ``kernel.dmesg_restrict = 1`` (the default on
many distributions) ``/dev/kmsg`` and ``dmesg`` need ``CAP_SYSLOG``, which podman, docker and
Kubernetes drop unless asked; ``journalctl`` needs the host's journal, which images rarely carry.
What each way answered is kept word for word, so a node whose log cannot be read says so instead of
reporting no events. ``/dev/kmsg`` is read non-blocking: every record in the ring buffer, then
``EAGAIN`` ends the read; ``EPIPE`` means the kernel overwrote the record being read, and reading goes
on. A record is ``PRIORITY,SEQUENCE,MICROSECONDS,FLAGS;MESSAGE`` followed by continuation lines that
start with a space (``SUBSYSTEM=pci``); see Documentation/ABI/testing/dev-kmsg.
"""

import errno
import os
import re
import shutil
import stat
import subprocess
from typing import List, Optional, Tuple

Line = Tuple[Optional[float], str]  # seconds since boot (when the source says), the message
MAX_RECORDS = 1 << 20
CAPTURE_CAP = 64 << 20  # a saved capture read as the device: at most this much of it
DMESG_TIME = re.compile(r"^\[\s*(\d+\.\d+)\]\s?")


def kmsg_record(record: str) -> Optional[Line]:
    """One ``/dev/kmsg`` record: (seconds since boot, message); None for what is not a record."""
    head, sep, rest = record.partition(";")
    fields = head.split(",")
    if not sep or len(fields) < 3 or not fields[2].isdigit():
        return None
    return int(fields[2]) / 1e6, rest.split("\n", 1)[0]


def read_kmsg(path: str = "/dev/kmsg") -> List[Line]:
    """Every record the ring buffer holds now; OSError when the node may not open it. A regular file is
    read as a saved capture of the device, one record a line."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return _drain(fd)
    finally:
        os.close(fd)


def _drain(fd: int) -> List[Line]:
    """The records from ``fd``'s place on (a device: one record per read, ``EAGAIN`` at the end)."""
    if stat.S_ISREG(os.fstat(fd).st_mode):
        chunks, size = [], 0
        while size < CAPTURE_CAP:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        text = b"".join(chunks).decode("utf-8", errors="replace")
        return [r for r in map(kmsg_record, (line for line in text.splitlines() if line and not line[0].isspace()))
                if r]
    lines: List[Line] = []
    for _ in range(MAX_RECORDS):
        try:
            chunk = os.read(fd, 8192)  # one record per read
        except OSError as err:
            if err.errno == errno.EPIPE:  # overwritten while we read: the next one is there
                continue
            if err.errno == errno.EAGAIN:
                break
            raise
        if not chunk:
            break
        line = kmsg_record(chunk.decode("utf-8", errors="replace"))
        if line:
            lines.append(line)
    return lines


class KmsgFollower:
    """``/dev/kmsg`` held open from now on: :meth:`new` returns the records written since the last call (an
    open descriptor keeps its place in the ring buffer), so a long-running node counts events as they come
    without reading the whole buffer again. ``error`` says why it could not be opened (None when it was)."""

    def __init__(self, path: str = "/dev/kmsg") -> None:
        self.fd: Optional[int] = None
        self.error: Optional[str] = None
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)  # the device: after the last record; a capture: its end
        except OSError as err:
            self.close()
            self.error = f"{path}: {os.strerror(err.errno) if err.errno else err}"

    def new(self) -> List[Line]:
        if self.fd is None:
            return []
        try:
            return _drain(self.fd)
        except OSError as err:
            self.error = f"reading stopped: {os.strerror(err.errno) if err.errno else err}"
            self.close()
            return []

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def text_lines(text: str) -> List[Line]:
    """``dmesg`` or ``journalctl -k -o short-monotonic`` output: ``[  123.456789] message`` lines."""
    out: List[Line] = []
    for line in text.splitlines():
        stamp = DMESG_TIME.match(line)
        out.append((float(stamp.group(1)), line[stamp.end():]) if stamp else (None, line))
    return out


def _command(argv: List[str]) -> Tuple[Optional[str], str]:
    if not shutil.which(argv[0]):
        return None, f"{argv[0]}: not installed"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{argv[0]}: {err}"
    if done.returncode != 0 or not done.stdout.strip():
        said = (done.stderr or done.stdout).strip().splitlines()
        return None, f"{' '.join(argv)}: exit {done.returncode}" + (f" ({said[-1][:160]})" if said else "")
    return done.stdout, ""


def read_kernel_log(kmsg: str = "/dev/kmsg") -> dict:
    """``{"source", "lines", "errors"}``: the first source that answered (None when none did) and what the
    others said."""
    errors = []
    try:
        return {"source": kmsg, "lines": read_kmsg(kmsg), "errors": errors}
    except OSError as err:
        errors.append(f"{kmsg}: {os.strerror(err.errno) if err.errno else err}")
    for argv in (["dmesg"], ["journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-q"]):
        text, why = _command(argv)
        if text is not None:
            return {"source": " ".join(argv), "lines": text_lines(text), "errors": errors}
        errors.append(why)
    return {"source": None, "lines": [], "errors": errors}
