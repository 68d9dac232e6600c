"""Targets without python3: ``find`` lists, ``tar -x`` receives, ``sha256sum`` checks, ``sh`` stamps.

Each step is a fixed argv through the target's exec channel, user values
(DEST, paths) as separate arguments or NUL-separated on stdin, never in a
shell string. A ``find`` listing gives rsync's quick check (size, mtime,
owner's execute bit), so without python3 the difference is found that way;
``sha256sum`` then checks content (symlinks and execute bits cannot be
checked by it).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

from nodeweave.remote import Remote
from nodeweave.remote.replace import replace_from_stdin
from nodeweave.sync.node.digest import quick_signature
from nodeweave.sync.filters import STAMP_FILE, FileSet
from nodeweave.sync.transport.plan import Difference, Manifest
from nodeweave.sync.transport.session import TransferError, stderr_tail

# Writes the stamp from stdin by one rename (remote/replace.py: nodes may share DEST) and prints what landed on disk.
# $1 = the folder, $2 = the stamp's name.
STAMP_SCRIPT = replace_from_stdin('"$1"', '"$2"') + ' && cat -- "$1/$2"'


# tar -x writes each file at its own name: a stream cut mid-file (Ctrl-C, SIGTERM, a lost channel) left it
# truncated there, the old file gone (note18: rsync removes its own temp file on an interrupt, the agent since
# fix19g). So the stream goes into a stage of nodeweave's own inside DEST (one per host and process: nodes may share
# DEST), and only a whole stream's files are renamed into place; the stage is removed on every exit, an interrupt's
# too (the traps). $1 = DEST. GNU and busybox tools only (find -exec +, mv, mkdir -p).
UNTAR_SCRIPT = (
    's="$1/.nodeweave-untar-$(uname -n 2>/dev/null)-$$" && trap \'rm -rf -- "$s"\' EXIT && '
    'trap \'rm -rf -- "$s"; exit 130\' HUP INT TERM PIPE && mkdir -p -- "$s" && tar -x -o -f - -C "$s" && cd -- "$s" && '
    'find . -mindepth 1 -type d -exec sh -c \'for d; do mkdir -p -- "$0/$d" || exit 1; done\' "$1" {} + && '
    'find . -mindepth 1 ! -type d -exec sh -c \'for f; do mv -f -- "$f" "$0/$f" || exit 1; done\' "$1" {} +'
)


def tar_extract_argv(target: Remote, dest: str) -> "list[str]":
    """Unpack a tar stream from stdin into ``dest`` through a stage (:data:`UNTAR_SCRIPT`; ``-o``: don't restore
    owners; GNU and busybox)."""
    return target.exec_argv(["sh", "-c", UNTAR_SCRIPT, "sh", dest.rstrip("/") or "/"])


def list_files_argv(target: Remote, dest: str) -> "list[str]":
    """NUL-separated ``type size mtime mode relpath`` and link target of everything under ``dest`` (GNU find)."""
    return target.exec_argv(["find", dest, "-mindepth", "1", "-printf", r"%y %s %T@ %m %P\0%l\0"])


def _run(argv: "list[str]", stdin: bytes = b"", timeout: float = 300) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)


def _nul(paths: "list[str]") -> bytes:
    return b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths)


def with_listing(target: Remote, dest: str, fileset: FileSet, manifest: Manifest) -> Manifest:
    """``manifest`` (from the launcher's probe) completed from a ``find`` listing of DEST."""
    if manifest.dest_absent or "find" not in manifest.tools:
        return replace(manifest, missing_dirs=frozenset(fileset.dirs))
    out = _run(list_files_argv(target, dest))
    if out.returncode != 0:
        raise TransferError(f"listing {dest} failed: {stderr_tail(out.stderr)}", transient=False)
    fields = out.stdout.decode("utf-8", "surrogateescape").split("\0")
    have, dirs, extras = {}, set(), []
    for record, link in zip(fields[0::2], fields[1::2]):
        kind, size, mtime, mode, rel = record.split(" ", 4)
        if kind == "d":
            dirs.add(rel)
        if rel in fileset.files and kind in ("f", "l"):
            have[rel] = quick_signature(kind, int(size), float(mtime), int(mode, 8), link)
        elif rel not in fileset.files and (kind != "d" or rel not in fileset.dirs):
            extras.append((rel, kind == "d"))
    return replace(manifest, have=have, extras=extras,
                   missing_dirs=frozenset(d for d in fileset.dirs if d not in dirs))


def start_tar(target: Remote, dest: str) -> "subprocess.Popen[bytes]":
    return subprocess.Popen(tar_extract_argv(target, dest), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_tar(target: Remote, proc: "subprocess.Popen[bytes]") -> None:
    stderr = proc.stderr.read()
    if proc.wait() != 0:
        tail = stderr_tail(stderr)
        raise TransferError(f"tar -x exit {proc.returncode}: {tail}", target.transient(proc.returncode, tail))


def delete(target: Remote, dest: str, diff: Difference) -> None:
    """Remove extra files, then extra directories deepest first (one still holding protected files stays)."""
    base = dest.rstrip("/")
    for command, paths in ((["xargs", "-0", "-r", "rm", "-f", "--"], diff.delete),
                           (["xargs", "-0", "-r", "rmdir", "--ignore-fail-on-non-empty", "--"], diff.rmdirs)):
        if paths:
            out = _run(target.exec_argv(command), _nul([f"{base}/{rel}" for rel in paths]))
            if out.returncode != 0:
                raise TransferError(f"deleting extra files failed: {stderr_tail(out.stderr)}", False)


def sha256sum_digests(target: Remote, dest: str, rels: "list[str]", timeout: float = 900) -> "dict[str, str | None]":
    """``sha256sum`` over the absolute paths of regular files (no python3 on the target)."""
    out = _run(target.exec_argv(["xargs", "-0", "-r", "sha256sum", "--"]),
               _nul([f"{dest.rstrip('/')}/{r}" for r in rels]), timeout)
    found: "dict[str, str | None]" = {r: None for r in rels}
    prefix = dest.rstrip("/") + "/"
    for line in out.stdout.decode("utf-8", "surrogateescape").splitlines():
        escaped = line.startswith("\\")
        digest, _, name = line.lstrip("\\").partition("  ")
        if escaped:
            name = name.replace("\\n", "\n").replace("\\\\", "\\")
        if name.startswith(prefix):
            found[name[len(prefix):]] = digest
    return found


def check(target: Remote, dest: str, local: "dict[str, str]", stamp_text: str) -> "tuple[dict, dict | None]":
    """(mismatched {path: digest}, stamp read back): stamped only when every regular file matches."""
    files = sorted(rel for rel, d in local.items() if not d.startswith("l:"))
    remote = sha256sum_digests(target, dest, files)
    # sha256sum sees content only: the execute-bit marker and symlinks cannot be checked this way.
    mismatched = {rel: remote.get(rel) for rel in files if remote.get(rel) != local[rel].replace("x:", "", 1)}
    path = f"{dest.rstrip('/')}/{STAMP_FILE}"
    if stamp_text and not mismatched:
        out = _run(target.exec_argv(["sh", "-c", STAMP_SCRIPT, "sh", dest.rstrip("/") or "/", STAMP_FILE]),
                   stamp_text.encode(), 60)
        if out.returncode != 0:
            raise TransferError(f"writing {STAMP_FILE} failed: {stderr_tail(out.stderr)}", False)
    else:
        out = _run(target.exec_argv(["cat", "--", path]), b"", 60)
    try:
        stamp = json.loads(out.stdout) if out.returncode == 0 else None
    except ValueError:
        stamp = None
    return mismatched, stamp
