"""The source's side of the consistency check: its digests, its commit, the stamp.

The source digests the filtered file set once per sync (a stat-keyed cache
makes an unchanged tree cost one ``lstat`` per file); each target digests
its own copy with the same code (``agent.py``, or ``sha256sum`` without
python3), so the check never trusts the transfer tool's word. The stamp,
``.nodeweave-sync.json``, records the source's git commit and branch on each
target, is written only when every file matches, and is read back from disk.
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
from nodeweave.usertext import as_bytes
from nodeweave.sync.node import digest as digest_module
from nodeweave.sync.node.digest import tree_digest
from nodeweave.sync.filters import FileSet


def local_cache_path(root: Path) -> Path:
    from nodeweave.cachedir import user_cache_base  # judged at start-up (walk13 A13, A14)

    base = user_cache_base()
    return base / "nodeweave" / "sync" / (hashlib.sha256(as_bytes(root)).hexdigest()[:16] + ".json")


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


def stamp_text(src: Path, git: GitInfo, local: "dict[str, str]", digest: "str | None" = None) -> str:
    digest = digest or tree_digest(local)
    return json.dumps(make_stamp(src, git, digest, len(local)), indent=2, sort_keys=True) + "\n"


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

    @classmethod
    def of(cls, local: "dict[str, str]", mismatched: "dict[str, str | None]", stamp: "dict | None",
           git: "GitInfo | None" = None, source_digest: "str | None" = None) -> "TargetCheck":
        """The target's tree digest from the source's and the differing paths; the stamp judged.

        A target that matches has the source's digest (``source_digest``, taken once per sync).
        """
        same = source_digest if source_digest and not mismatched else None
        check = cls(digest=same or tree_digest({**local, **mismatched}), mismatched=sorted(mismatched), stamp=stamp)
        if git is not None and not mismatched:
            written = stamp or {}
            if written.get("digest") != check.digest or written.get("commit") != git.commit:
                check.error = "the stamp read back differs from the one written"
        return check
