"""The commands a sync runs on a target, as argv: pure functions, no I/O.

``oc rsync`` is rsync whose remote shell is ``oc rsh``; nodeweave does the
same for each target with the remote shell its class gives
(``nodeweave.remote``). ``--blocking-io`` as ``oc rsync`` passes it: exec
channels misbehave with rsync's non-blocking pipes. Every other command is a
fixed argv run through the target's ``exec_argv``, user values as separate
arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeweave.errors import UsageError
from nodeweave.remote import Remote


@dataclass(frozen=True)
class RsyncOptions:
    delete: bool = False
    dry_run: bool = False
    compress: bool = False
    timeout_s: int = 120  # rsync --timeout: no data for this long = exit 30 (retried)


def rsync_argv(target: Remote, src: str, dest: str, filter_args: "list[str]",
               rsync: RsyncOptions = RsyncOptions()) -> "list[str]":
    """rsync from the local ``src`` directory into ``dest`` on ``target``.

    ``-rlpt`` rather than ``-a``: owners and groups of a laptop mean nothing in
    a pod (and OpenShift's random UID cannot chown); ``--omit-dir-times`` as
    ``oc rsync`` does, since a non-root user may not set times on ``dest``.
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
    argv += filter_args
    argv += [src.rstrip("/") + "/", f"{target.rsync_host}:{dest.rstrip('/')}/"]
    return argv


# What a target has, and its DEST made, in one round trip. Constant text; DEST is $1.
# $2 = "dry": create nothing, and report a missing DEST as such.
PROBE_SCRIPT = (
    'for t in rsync tar python3 find sha256sum; do command -v "$t" >/dev/null 2>&1 && echo "has:$t"; done; '
    'if [ "$2" = dry ] && [ ! -e "$1" ]; then echo dest:absent; '
    'else mkdir -p -- "$1" && test -w "$1" && echo dest:ok; fi'
)
PROBE_TOOLS = ("rsync", "tar", "python3", "find", "sha256sum")


def probe_argv(target: Remote, dest: str,
               dry_run: bool = False) -> "list[str]":
    return target.exec_argv(["sh", "-c", PROBE_SCRIPT, "sh", dest, "dry" if dry_run else "make"])


def tar_extract_argv(target: Remote, dest: str) -> "list[str]":
    """Unpack a tar stream from stdin into ``dest`` (``-o``: don't restore owners; GNU and busybox)."""
    return target.exec_argv(["tar", "-x", "-o", "-f", "-", "-C", dest])


def list_files_argv(target: Remote, dest: str) -> "list[str]":
    """NUL-separated ``type size mtime mode relpath`` of everything under ``dest`` (GNU find)."""
    return target.exec_argv(["find", dest, "-mindepth", "1", "-printf", r"%y %s %T@ %m %P\0"])


def remove_argv(target: Remote) -> "list[str]":
    """Remove the NUL-separated absolute paths on stdin (files and links)."""
    return target.exec_argv(["xargs", "-0", "-r", "rm", "-f", "--"])


def rmdir_argv(target: Remote) -> "list[str]":
    return target.exec_argv(["xargs", "-0", "-r", "rmdir", "--ignore-fail-on-non-empty", "--"])


# Writes the stamp atomically from stdin and prints what landed on disk. $1 = path.
STAMP_SCRIPT = 'cat > "$1.tmp" && mv -f -- "$1.tmp" "$1" && cat -- "$1"'


def write_stamp_argv(target: Remote, path: str) -> "list[str]":
    return target.exec_argv(["sh", "-c", STAMP_SCRIPT, "sh", path])


def read_stamp_argv(target: Remote, path: str) -> "list[str]":
    return target.exec_argv(["cat", "--", path])
