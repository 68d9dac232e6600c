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

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
from typing import List, Optional, Tuple

Line = Tuple[Optional[float], str]  # seconds since boot (when the source says), the message
MAX_RECORDS = 1 << 20
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
        if stat.S_ISREG(os.fstat(fd).st_mode):
            with os.fdopen(os.dup(fd), encoding="utf-8", errors="replace") as capture:
                records = [line for line in capture.read().splitlines() if line and not line[0].isspace()]
            return [r for r in map(kmsg_record, records) if r]
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
            line = kmsg_record(chunk.decode("utf-8", errors="replace")) if chunk else None
            if not chunk:
                break
            if line:
                lines.append(line)
        return lines
    finally:
        os.close(fd)


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
