"""The consistency check: same content and same commit on every target.

The local side digests the filtered file set; each target digests the same
relative paths itself (``digest.py``'s own source run by the target's
python3, expected digests on stdin, DEST as an argument; ``sha256sum`` where
there is no python3), so the check never trusts the transfer tool's word. A
stamp, ``.nodeweave-sync.json``, records the source's git commit and branch
on each target, is written only when every file matches, and is read back
from disk.
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

from nodeweave.errors import NodeweaveError
from nodeweave.remote import Remote
from nodeweave.sync import digest as digest_module
from nodeweave.sync.digest import tree_digest
from nodeweave.sync.filters import CACHE_FILE, STAMP_FILE, FileSet
from nodeweave.sync.transport import read_stamp_argv, write_stamp_argv

DIGEST_SOURCE = Path(digest_module.__file__).read_text(encoding="utf-8")


def local_cache_path(root: Path) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "nodeweave" / "sync" / (hashlib.sha256(str(root).encode()).hexdigest()[:16] + ".json")


def local_digests(fileset: FileSet) -> "dict[str, str]":
    """Digests of the file set, reusing the stat-keyed cache of earlier runs."""
    cache = local_cache_path(fileset.root)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        cache = None
    found = digest_module.digest_files(str(fileset.root), sorted(fileset.files),
                                       str(cache) if cache else None)
    missing = sorted(rel for rel, d in found.items() if d is None)
    if missing:
        raise NodeweaveError(f"{len(missing)} file(s) vanished from {fileset.root} or became unreadable while it was "
                             f"being read, e.g. {missing[0]}; run the sync again once writers stop")
    return found


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
    tools: "set[str] | None" = None  # when asked to probe: the tools the target has
    dest_ok: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.mismatched


def _run(argv: "list[str]", stdin: bytes, timeout: float) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)


def check_on_target(target: Remote, dest: str, local: "dict[str, str]",
                    stamp: "dict[str, object] | None", *, has_python: bool, timeout: float = 900,
                    probe_tools: "tuple[str, ...]" = ()) -> TargetCheck:
    """Digest the target's copy of ``local``'s paths; write ``stamp`` there when all match.

    With python3 on the target this is one round trip (digest.py's own source
    runs there); without it, ``sha256sum`` and a small ``sh`` writer.
    """
    check = TargetCheck()
    stamp_text = json.dumps(stamp, indent=2, sort_keys=True) + "\n" if stamp else ""
    if has_python:
        argv = target.exec_argv(["python3", "-c", DIGEST_SOURCE, dest, CACHE_FILE, stamp_text,
                                 *probe_tools])
        out = _run(argv, json.dumps(local).encode(), timeout)
        if out.returncode != 0:
            raise RuntimeError(f"digest on the target failed (exit {out.returncode}): "
                               f"{out.stderr.decode(errors='replace').strip()[-300:]}")
        answer = json.loads(out.stdout)
        differing = answer["mismatched"]
        check.stamp = answer["stamp"]
        if probe_tools:
            check.tools, check.dest_ok = set(answer["tools"]), bool(answer["dest_ok"])
    else:
        remote = _sha256sum_digests(target, dest, sorted(local), timeout)
        # sha256sum sees content only: the execute-bit marker cannot be checked this way.
        differing = {rel: remote.get(rel) for rel in local
                     if remote.get(rel) != local[rel].replace("x:", "", 1)}
        if stamp and not differing:
            check.stamp = write_stamp(target, dest, stamp_text)
        else:
            check.stamp = read_stamp(target, dest)
    check.mismatched = sorted(differing)
    check.digest = tree_digest({**local, **differing})
    return check


def _sha256sum_digests(target: Remote, dest: str, rels: "list[str]", timeout: float) -> "dict[str, str | None]":
    """Fallback without python3: ``sha256sum`` over absolute paths (regular files only)."""
    paths = [f"{dest.rstrip('/')}/{r}" for r in rels]
    out = _run(target.exec_argv(["xargs", "-0", "-r", "sha256sum", "--"]),
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


def write_stamp(target: Remote, dest: str, text: str, timeout: float = 60) -> "dict[str, object]":
    """Write the stamp atomically and return what was read back from the target's disk."""
    out = _run(write_stamp_argv(target, f"{dest.rstrip('/')}/{STAMP_FILE}"), text.encode(), timeout)
    if out.returncode != 0:
        raise RuntimeError(f"writing {STAMP_FILE} failed: {out.stderr.decode(errors='replace').strip()[:300]}")
    return json.loads(out.stdout)


def read_stamp(target: Remote, dest: str, timeout: float = 60) -> "dict[str, object] | None":
    out = _run(read_stamp_argv(target, f"{dest.rstrip('/')}/{STAMP_FILE}"), b"", timeout)
    if out.returncode != 0:
        return None
    try:
        return json.loads(out.stdout)
    except ValueError:
        return None
