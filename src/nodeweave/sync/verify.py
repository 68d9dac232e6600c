"""The consistency check: same content and same commit on every target.

The local side digests the filtered file set; each target digests the same
relative paths itself (a constant stdlib script run by the target's python3,
paths on stdin, DEST as an argument; ``sha256sum`` where there is no python3),
so the check never trusts the transfer tool's word. A stamp,
``.nodeweave-sync.json``, records the source's git commit and branch on each
target and is read back from disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from nodeweave.sync.filters import STAMP_FILE, FileSet
from nodeweave.sync.targets import Target
from nodeweave.sync.transport import (TransportOptions, read_stamp_argv, remote_argv,
                                      write_stamp_argv)

# Runs on the target: argv[1] = DEST, stdin = NUL-separated relative paths.
REMOTE_DIGEST_SCRIPT = r"""
import hashlib, json, os, sys
root = sys.argv[1]
out = {}
for raw in sys.stdin.buffer.read().split(b"\0"):
    if not raw:
        continue
    rel = raw.decode("utf-8", "surrogateescape")
    path = os.path.join(root, rel)
    try:
        if os.path.islink(path):
            out[rel] = "l:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
        elif os.path.isfile(path):
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out[rel] = h.hexdigest()
        else:
            out[rel] = None
    except OSError:
        out[rel] = None
json.dump(out, sys.stdout)
"""


def file_digest(path: Path, kind: str) -> str:
    if kind == "l":
        return "l:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def local_digests(fileset: FileSet) -> "dict[str, str]":
    return {rel: file_digest(fileset.root / rel, kind) for rel, kind in fileset.files.items()}


def tree_digest(digests: "dict[str, str | None]") -> str:
    """One hex digest over sorted (path, content digest) pairs."""
    h = hashlib.sha256()
    for rel in sorted(digests):
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + str(digests[rel]).encode() + b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class GitInfo:
    commit: "str | None" = None
    branch: "str | None" = None
    dirty: "bool | None" = None


def git_info(src: Path) -> GitInfo:
    """Commit, branch and dirtiness when ``src`` is inside a git checkout."""
    def git(*args: str) -> "str | None":
        try:
            out = subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True,
                                 timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "--verify", "-q", "HEAD")
    if commit is None:
        return GitInfo()
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    return GitInfo(commit, git("rev-parse", "--abbrev-ref", "HEAD"), bool(status))


def make_stamp(src: Path, git: GitInfo, digest: str, files: int) -> "dict[str, object]":
    return {
        "tool": "nodeweave sync",
        "source": f"{socket.gethostname()}:{src}",
        "commit": git.commit,
        "branch": git.branch,
        "dirty": git.dirty,
        "digest": digest,
        "files": files,
        "synced_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


@dataclass
class TargetCheck:
    """What one target holds, against what the source has."""

    digest: "str | None" = None
    mismatched: "list[str] | None" = None  # relative paths whose content differs or is missing
    stamp: "dict[str, object] | None" = None
    error: "str | None" = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.mismatched


def _run(argv: "list[str]", stdin: bytes, timeout: float) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)


def remote_digests(target: Target, dest: str, rels: "list[str]", *, has_python: bool,
                   opts: TransportOptions, timeout: float = 600) -> "dict[str, str | None]":
    """Per-file digests computed on the target for ``rels`` (None = missing)."""
    payload = b"\0".join(r.encode("utf-8", "surrogateescape") for r in rels)
    if has_python:
        out = _run(remote_argv(target, ["python3", "-c", REMOTE_DIGEST_SCRIPT, dest], opts),
                   payload, timeout)
        if out.returncode != 0:
            raise RuntimeError(f"digest on target failed (exit {out.returncode}): "
                               f"{out.stderr.decode(errors='replace').strip()[:300]}")
        return json.loads(out.stdout)
    return _sha256sum_digests(target, dest, rels, opts, timeout)


def _sha256sum_digests(target: Target, dest: str, rels: "list[str]", opts: TransportOptions,
                       timeout: float) -> "dict[str, str | None]":
    """Fallback without python3: ``sha256sum`` over absolute paths (regular files only)."""
    paths = [f"{dest.rstrip('/')}/{r}" for r in rels]
    out = _run(remote_argv(target, ["xargs", "-0", "-r", "sha256sum", "--"], opts),
               b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths), timeout)
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


def compare(local: "dict[str, str]", remote: "dict[str, str | None]") -> "list[str]":
    """Relative paths whose remote digest differs from the local one (sorted)."""
    return sorted(rel for rel, digest in local.items() if remote.get(rel) != digest)


def write_stamp(target: Target, dest: str, stamp: "dict[str, object]", opts: TransportOptions,
                timeout: float = 60) -> "dict[str, object]":
    """Write the stamp atomically and return what was read back from the target's disk."""
    text = json.dumps(stamp, indent=2, sort_keys=True) + "\n"
    out = _run(write_stamp_argv(target, f"{dest.rstrip('/')}/{STAMP_FILE}", opts), text.encode(), timeout)
    if out.returncode != 0:
        raise RuntimeError(f"writing {STAMP_FILE} failed: {out.stderr.decode(errors='replace').strip()[:300]}")
    return json.loads(out.stdout)


def read_stamp(target: Target, dest: str, opts: TransportOptions,
               timeout: float = 60) -> "dict[str, object] | None":
    out = _run(read_stamp_argv(target, f"{dest.rstrip('/')}/{STAMP_FILE}", opts), b"", timeout)
    if out.returncode != 0:
        return None
    try:
        return json.loads(out.stdout)
    except ValueError:
        return None
