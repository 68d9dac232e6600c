"""What a sync reports per target, and the source it compared against (read once per sync)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from nodeweave.remote import Remote
from nodeweave.sync.node.digest import tree_digest
from nodeweave.sync.filters import FileSet
from nodeweave.sync.transport.plan import local_quick
from nodeweave.sync.request import SyncRequest
from nodeweave.sync.verify import TargetCheck, local_digests, stamp_text

OnProgress = Callable[[Remote, str, float], None]  # (target, stage, fraction of its transfer)


@dataclass
class TargetResult:
    target: Remote
    status: str = "pending"  # ok | failed | mismatch | dry-run
    method: str = "-"  # stream | tar | rsync | up-to-date | check | shared via ...
    files: int = 0  # the regular files whose data went there
    bytes: int = 0
    links: int = 0  # the symlinks made or changed there (no file data, still a change: walk12 C4)
    deleted: "list[str]" = field(default_factory=list)  # what --delete removed there (a folder ends with /)
    seconds: float = 0.0
    attempts: int = 0
    error: "str | None" = None
    changes: "list[str]" = field(default_factory=list)
    check: "TargetCheck | None" = None
    group: "int | None" = None  # targets with the same number were sent one payload, read once
    relay: "str | None" = None  # "from TARGET" when another target forwarded the payload; why not, if planned
    channel: str = "exec"  # how the session reached the target: its own exec, or "via HEAD" (a tunnel)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "dry-run")

    def judge(self, check: TargetCheck, verb: str = "differ after sync") -> None:
        """Status and error from a finished check."""
        self.check = check
        self.status = "ok" if check.ok else "mismatch"
        if check.error:
            self.error = check.error
        elif check.mismatched:
            self.error = (f"{len(check.mismatched)} file(s) {verb}, e.g. " + ", ".join(check.mismatched[:3]))


@dataclass
class Source:
    """The source side, read once: the file set, its signatures, and the stamp to write."""

    fileset: FileSet
    signatures: "dict[str, str]"  # content digests, or quick signatures with ``quick``
    quick: bool
    stamp: str = ""  # the stamp's text ("" = write none: --no-verify, a dry run)
    digest: "str | None" = None  # the tree digest of ``signatures`` (content digests only)
    _quick: "dict[str, str] | None" = field(default=None, repr=False)

    @classmethod
    def read(cls, req: SyncRequest, write_stamp: bool = True) -> "Source":
        """Walked already; now hashed once (the cache answers for unchanged files)."""
        if not req.options.verify and not req.options.check:
            return cls(req.fileset, local_quick(req.fileset), quick=True)
        digests = local_digests(req.fileset)
        digest = tree_digest(digests)
        stamp = stamp_text(req.src, req.git, digests, digest) if write_stamp and not req.options.dry_run else ""
        return cls(req.fileset, digests, quick=False, stamp=stamp, digest=digest)

    def quick_signatures(self) -> "dict[str, str]":
        """Quick signatures for targets listed by ``find`` (made once, only when one needs them)."""
        if self.quick:
            return self.signatures
        if self._quick is None:
            self._quick = local_quick(self.fileset)
        return self._quick
