"""Moving files to one target: probe, rsync, or tar over the same exec channel.

Each function does one attempt and raises :class:`TransferError` saying
whether a retry could help; the runner owns retries, threads and display.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
import threading
from dataclasses import dataclass, field
from typing import Callable

from nodeweave.remote import Remote
from nodeweave.sync.filters import STAMP_FILE, FileSet, Filter
from nodeweave.sync.transport import (RsyncOptions, list_files_argv, probe_argv, remove_argv,
                                      rmdir_argv, rsync_argv, tar_extract_argv)

Progress = Callable[[float, str], None]  # (fraction done 0..1, short note)

# rsync: 10 socket I/O, 12 protocol stream, 30 I/O timeout, 35 daemon timeout.
TRANSIENT_RSYNC_CODES = {10, 12, 30, 35}


class TransferError(Exception):
    def __init__(self, message: str, transient: bool):
        super().__init__(message)
        self.transient = transient


@dataclass
class Probe:
    tools: "set[str]" = field(default_factory=set)
    dest_ok: bool = False
    dest_absent: bool = False  # dry run only: DEST does not exist yet


@dataclass
class Moved:
    method: str  # "rsync" | "tar"
    files: int = 0  # regular files whose data was sent
    bytes: int = 0  # file data sent (rsync: literal data; tar: file sizes)
    changes: "list[str]" = field(default_factory=list)  # itemized lines (rsync) or planned actions (tar)
    tools: "set[str]" = field(default_factory=set)  # what the probe found on the target


def _stderr_tail(raw: "bytes | str") -> str:
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-2:])[-300:]


def probe(target: Remote, dest: str, timeout: float = 60, dry_run: bool = False) -> Probe:
    """Which tools the target has, and DEST created and writable (in a dry run: only looked at)."""
    try:
        out = subprocess.run(probe_argv(target, dest, dry_run), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TransferError(f"no answer from the target within {timeout:.0f}s", transient=True)
    except FileNotFoundError as err:
        raise TransferError(f"{err.filename} is not installed here", transient=False)
    text = out.stdout.decode(errors="replace")
    found = Probe(tools={ln[4:] for ln in text.splitlines() if ln.startswith("has:")},
                  dest_ok="dest:ok" in text.splitlines() or "dest:absent" in text.splitlines(),
                  dest_absent="dest:absent" in text.splitlines())
    if out.returncode != 0 and not found.tools:
        stderr = _stderr_tail(out.stderr)
        raise TransferError(f"cannot reach it (exit {out.returncode}): {stderr}",
                            target.transient(out.returncode, stderr))
    if not found.dest_ok:
        raise TransferError(f"cannot create or write {dest} there: {_stderr_tail(out.stderr)}",
                            transient=False)
    return found


_STAT = re.compile(r"^(Number of regular files transferred|Literal data|Total bytes sent): ([\d,.]+)")
_PROGRESS = re.compile(r"^\s*[\d,]+\s+(\d+)%")


def run_rsync(target: Remote, fileset: FileSet, dest: str, filt: Filter, rsync: RsyncOptions,
              progress: Progress) -> Moved:
    argv = rsync_argv(target, str(fileset.root), dest, filt.rsync_args(), rsync)
    moved = Moved("rsync")
    stats: "dict[str, int]" = {}
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    stderr_chunks: "list[bytes]" = []
    reader = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    pending = b""
    for chunk in iter(lambda: proc.stdout.read1(65536), b""):
        pending += chunk
        *lines, pending = re.split(rb"[\r\n]", pending)
        for raw in lines:
            line = raw.decode("utf-8", "surrogateescape")
            if (m := _PROGRESS.match(line)) is not None:
                progress(int(m.group(1)) / 100, "rsync")
            elif (m := _STAT.match(line)) is not None:
                stats[m.group(1)] = int(m.group(2).replace(",", "").split(".")[0])
            elif re.match(r"^([<>ch.*][fdLDS+]|\*deleting)", line):
                moved.changes.append(line)
    proc.wait()
    reader.join()
    # 24: source files vanished mid-transfer (an editor's temp file); the digest check that
    # follows judges the result, so it is not a failure by itself.
    if proc.returncode not in (0, 24):
        stderr = _stderr_tail(b"".join(stderr_chunks))
        transient = (proc.returncode in TRANSIENT_RSYNC_CODES
                     or target.transient(proc.returncode, stderr))
        raise TransferError(f"rsync exit {proc.returncode}: {stderr}", transient)
    moved.files = stats.get("Number of regular files transferred", 0)
    moved.bytes = stats.get("Literal data", 0)
    return moved


@dataclass(frozen=True)
class RemoteEntry:
    kind: str  # find %y: f, d, l, ...
    size: int
    mtime: float
    mode: int  # permission bits


def list_remote(target: Remote, dest: str, timeout: float = 300) -> "dict[str, RemoteEntry]":
    out = subprocess.run(list_files_argv(target, dest), capture_output=True, timeout=timeout)
    if out.returncode != 0:
        raise TransferError(f"listing {dest} failed: {_stderr_tail(out.stderr)}", transient=False)
    entries: "dict[str, RemoteEntry]" = {}
    for record in out.stdout.split(b"\0"):
        if not record:
            continue
        kind, size, mtime, mode, rel = record.decode("utf-8", "surrogateescape").split(" ", 4)
        entries[rel] = RemoteEntry(kind, int(size), float(mtime), int(mode, 8))
    return entries


def _protected(filt: Filter, rel: str, is_dir: bool) -> bool:
    """Excluded paths (or paths under an excluded directory) are never deleted, as in rsync."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        if filt.excluded("/".join(parts[:depth]), True):
            return True
    return filt.excluded(rel, is_dir) or rel == STAMP_FILE


def plan_tar(fileset: FileSet, remote: "dict[str, RemoteEntry]", filt: Filter,
             delete: bool) -> "tuple[list[str], list[str], list[str]]":
    """(files to send, files to delete, dirs to remove) against a remote listing."""
    send = []
    for rel, kind in sorted(fileset.files.items()):
        have = remote.get(rel)
        path = fileset.root / rel
        st = path.lstat()
        if have is None or have.kind != kind or kind == "l":
            send.append(rel)
        elif (have.size != st.st_size or int(have.mtime) != int(st.st_mtime)
              or (have.mode & 0o100) != (st.st_mode & 0o100)):  # size, mtime or the owner's x bit
            send.append(rel)
    send += [d for d in fileset.dirs if d not in remote]
    drop_files, drop_dirs = [], []
    if delete:
        local_dirs = set(fileset.dirs)
        for rel, have in remote.items():
            is_dir = have.kind == "d"
            if rel in fileset.files or rel in local_dirs or _protected(filt, rel, is_dir):
                continue
            (drop_dirs if is_dir else drop_files).append(rel)
    return send, sorted(drop_files), sorted(drop_dirs, key=lambda d: (-d.count("/"), d))


def run_tar(target: Remote, fileset: FileSet, dest: str, filt: Filter, rsync: RsyncOptions,
            progress: Progress, has_find: bool,
            dest_absent: bool = False) -> Moved:
    """Send changed files as a tar stream into ``tar -x`` on the target."""
    remote = list_remote(target, dest) if has_find and not dest_absent else {}
    send, drop_files, drop_dirs = plan_tar(fileset, remote, filt, rsync.delete)
    moved = Moved("tar")
    moved.changes = ([f"send {rel}" for rel in send] + [f"delete {rel}" for rel in drop_files]
                     + [f"delete {rel}/" for rel in drop_dirs])
    if rsync.dry_run:
        moved.files = sum(1 for rel in send if fileset.files.get(rel) == "f")
        return moved
    total = sum((fileset.root / rel).lstat().st_size for rel in send if fileset.files.get(rel) == "f") or 1
    proc = subprocess.Popen(tar_extract_argv(target, dest), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr_chunks: "list[bytes]" = []
    reader = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        with tarfile.open(fileobj=proc.stdin, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for rel in send:
                tar.add(fileset.root / rel, arcname=rel, recursive=False)
                if fileset.files.get(rel) == "f":
                    moved.files += 1
                    moved.bytes += (fileset.root / rel).lstat().st_size
                    progress(moved.bytes / total, "tar")
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    proc.wait()
    reader.join()
    if proc.returncode != 0:
        stderr = _stderr_tail(b"".join(stderr_chunks))
        raise TransferError(f"tar -x exit {proc.returncode}: {stderr}",
                            target.transient(proc.returncode, stderr))
    base = dest.rstrip("/")
    for argv, paths in ((remove_argv(target), drop_files), (rmdir_argv(target), drop_dirs)):
        if paths:
            payload = b"\0".join(f"{base}/{rel}".encode("utf-8", "surrogateescape") for rel in paths)
            out = subprocess.run(argv, input=payload, capture_output=True, timeout=300)
            if out.returncode != 0:
                raise TransferError(f"deleting extra files failed: {_stderr_tail(out.stderr)}", False)
    return moved
