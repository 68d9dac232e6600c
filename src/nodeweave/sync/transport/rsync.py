"""rsync to one target over its exec channel: where the delta algorithm pays, or python3 is missing.

``oc rsync`` is rsync whose remote shell is ``oc rsh``; nodeweave does the
same for each target with the remote shell its class gives
(``nodeweave.remote``). ``--blocking-io`` as ``oc rsync`` passes it: exec
channels misbehave with rsync's non-blocking pipes. Each call is one
attempt and raises ``TransferError`` saying whether a retry could help.
"""

from __future__ import annotations

import re
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Callable

from nodeweave.errors import UsageError
from nodeweave.remote import Remote
from nodeweave.sync.filters import FileSet, Filter
from nodeweave.sync.transport.session import TransferError, stderr_tail

# rsync: 10 socket I/O, 12 protocol stream, 30 I/O timeout, 35 daemon timeout.
TRANSIENT_RSYNC_CODES = {10, 12, 30, 35}
Progress = Callable[[float, str], None]  # (fraction done 0..1, short note)


@dataclass
class Moved:
    files: int = 0  # regular files whose data was sent
    bytes: int = 0  # literal file data sent
    changes: "list[str]" = field(default_factory=list)  # rsync's itemized lines


@dataclass(frozen=True)
class RsyncOptions:
    delete: bool = False
    dry_run: bool = False
    compress: bool = False
    timeout_s: int = 120  # rsync --timeout: no data for this long = exit 30 (retried)


def rsync_argv(target: Remote, src: str, dest: str, filter_args: "list[str]",
               rsync: RsyncOptions = RsyncOptions(), files_from: bool = False) -> "list[str]":
    """rsync from the local ``src`` directory into ``dest`` on ``target``.

    ``-rlpt`` rather than ``-a``: owners and groups of a laptop mean nothing in
    a pod (and OpenShift's random UID cannot chown); ``--omit-dir-times`` as
    ``oc rsync`` does, since a non-root user may not set times on ``dest``.
    With ``files_from`` rsync sends exactly the NUL-separated paths on its
    stdin, each even when size and mtime agree (``--ignore-times``): the
    digests already said they differ, and the delta algorithm still sends
    only what changed in each.
    """
    if not src.startswith("/"):
        raise UsageError(f"SRC {src!r} must be made absolute before building rsync's argv")
    argv = ["rsync", "--recursive", "--links", "--perms", "--times", "--omit-dir-times",
            "--blocking-io", "--stats", "--itemize-changes", "--info=progress2",
            f"--timeout={rsync.timeout_s}", "--rsh", target.rsh()]
    if not target.network_link:
        argv.append("--whole-file")  # a local pipe: the delta algorithm only costs CPU
    if rsync.compress:
        argv.append("--compress")
    if rsync.delete:
        argv.append("--delete")
    if rsync.dry_run:
        argv.append("--dry-run")
    if files_from:
        argv += ["--files-from=-", "--from0", "--ignore-times"]
    argv += filter_args
    argv += [src.rstrip("/") + "/", f"{target.rsync_host}:{dest.rstrip('/')}/"]
    return argv


def _feed(proc: "subprocess.Popen[bytes]", files: "list[str]") -> None:
    try:
        proc.stdin.write(b"".join(f.encode("utf-8", "surrogateescape") + b"\0" for f in files))
        proc.stdin.close()
    except OSError:
        pass


_STAT = re.compile(r"^(Number of regular files transferred|Literal data|Total bytes sent): ([\d,.]+)")
_PROGRESS = re.compile(r"^\s*[\d,]+\s+(\d+)%")


def run_rsync(target: Remote, fileset: FileSet, dest: str, filt: Filter, rsync: RsyncOptions,
              progress: Progress, files: "list[str] | None" = None) -> Moved:
    """rsync SRC (or just ``files`` of it) into DEST on ``target`` with the sync's filter rules."""
    argv = rsync_argv(target, str(fileset.root), dest, filt.rsync_args(), rsync, files_from=files is not None)
    moved = Moved()
    stats: "dict[str, int]" = {}
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL if files is None else subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if files is not None:
        threading.Thread(target=_feed, args=(proc, files), daemon=True).start()
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
        stderr = stderr_tail(b"".join(stderr_chunks))
        transient = (proc.returncode in TRANSIENT_RSYNC_CODES
                     or target.transient(proc.returncode, stderr))
        raise TransferError(f"rsync exit {proc.returncode}: {stderr}", transient)
    moved.files = stats.get("Number of regular files transferred", 0)
    moved.bytes = stats.get("Literal data", 0)
    return moved
