"""What each target lacks, and which targets can share one payload: pure functions, no I/O.

Both sides describe a file by one string, its *signature*: the content
digest (``sha256``, ``x:`` for the owner's execute bit, ``l:`` for a
symlink's target) when verifying, or ``q:SIZE:MTIME:X`` (rsync's quick
check) with ``--no-verify`` and for targets without python3, whose
listing comes from ``find``. A target's difference is every path whose
signature differs or is missing, the directories it lacks, and with
``--delete`` what it holds beyond SRC (excluded paths protected, as rsync
does). Targets whose files to send are the same get one payload: the
source reads those bytes once however many targets take them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodeweave.errors import NodeweaveError
from nodeweave.sync.node.digest import quick_files
from nodeweave.sync.filters import STAMP_FILE, FileSet, Filter

# auto picks rsync over a network link when at least this much changed data has an old copy there.
DELTA_MIN_BYTES = 1 << 20


def local_quick(fileset: FileSet) -> "dict[str, str]":
    """The source's quick signatures (``--no-verify``, and targets listed by ``find``)."""
    found = quick_files(str(fileset.root), sorted(fileset.files))
    missing = sorted(rel for rel, sig in found.items() if sig is None)
    if missing:
        raise NodeweaveError(f"{len(missing)} file(s) vanished from {fileset.root} while it was being read, "
                             f"e.g. {missing[0]}; run the sync again once writers stop")
    return found


@dataclass
class Manifest:
    """What one target holds of the source's file set, as its agent (or ``find``) reports it."""

    python: bool  # the nodeweave agent runs there (else: sh, find, tar, sha256sum)
    tools: "frozenset[str]" = frozenset()
    dest_ok: bool = False
    dest_absent: bool = False
    dest_why: "str | None" = None  # the agent's word on why DEST cannot be made or written (owner, mode, user)
    quick: bool = False  # signatures are quick ones, not content digests
    have: "dict[str, str]" = field(default_factory=dict)  # path -> signature held (a ``find`` listing)
    missing_dirs: "frozenset[str]" = frozenset()
    extras: "list[tuple[str, bool]]" = field(default_factory=list)  # (path, is_dir) beyond SRC
    stamp: "dict | None" = None
    differ: "dict[str, str | None] | None" = None  # the agent's word: path -> what it holds (None: nothing)
    done: bool = False  # the agent found everything there and stamped it (one round trip)
    listen: "dict | None" = None  # the agent's relay listener: {"port", "addrs", "bind"}
    listen_error: "str | None" = None  # why it has none (a NODEWEAVE_SYNC_BIND the node refused)
    resident: "dict | None" = None  # the node's resident agent: {"port", "addrs", "key", "program"}
    leftovers: "list[str]" = field(default_factory=list)  # half-received files an interrupted sync left there

    def differing(self, local: "dict[str, str]") -> "dict[str, str | None]":
        """Paths whose signature here is not ``local``'s, with what the target holds (None: nothing)."""
        if self.differ is not None:
            return self.differ
        return {rel: self.have.get(rel) for rel, sig in local.items() if self.have.get(rel) != sig}

    def holds(self, rel: str) -> bool:
        """Whether the target holds some version of ``rel``."""
        return (self.differ.get(rel, "") is not None) if self.differ is not None else rel in self.have


@dataclass(frozen=True)
class Difference:
    send: "tuple[str, ...]" = ()  # files and symlinks whose signature differs or is missing
    dirs: "tuple[str, ...]" = ()  # directories to create
    delete: "tuple[str, ...]" = ()  # extra files (--delete)
    rmdirs: "tuple[str, ...]" = ()  # extra directories, deepest first
    update_bytes: int = 0  # size of files in ``send`` that the target holds an older copy of

    @property
    def payload_key(self) -> "tuple[tuple[str, ...], tuple[str, ...]]":
        """Targets with equal keys can be sent the very same tar stream."""
        return self.send, self.dirs

    @property
    def empty(self) -> bool:
        return not (self.send or self.dirs or self.delete or self.rmdirs)


def protected(filt: Filter, rel: str, is_dir: bool) -> bool:
    """Excluded paths (or paths under an excluded directory) are never deleted, as in rsync."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        if filt.excluded("/".join(parts[:depth]), True):
            return True
    return filt.excluded(rel, is_dir) or rel == STAMP_FILE


def difference(fileset: FileSet, local: "dict[str, str]", manifest: Manifest, filt: Filter,
               delete: bool) -> Difference:
    """What ``manifest``'s target needs to hold exactly ``local`` (signatures of the same kind)."""
    differ = manifest.differing(local)
    send = tuple(sorted(differ))
    update = sum(_size(fileset, rel) for rel in send if differ[rel] is not None and fileset.files[rel] == "f")
    drop_files, drop_dirs = [], []
    if delete:
        for rel, is_dir in manifest.extras:
            if not protected(filt, rel, is_dir):
                (drop_dirs if is_dir else drop_files).append(rel)
    return Difference(send=send, dirs=tuple(sorted(manifest.missing_dirs)), delete=tuple(sorted(drop_files)),
                      rmdirs=tuple(sorted(drop_dirs, key=lambda d: (-d.count("/"), d))), update_bytes=update)


def _size(fileset: FileSet, rel: str) -> int:
    try:
        return (fileset.root / rel).lstat().st_size
    except OSError:
        return 0


def choose_method(requested: str, manifest: Manifest, diff: Difference, *, network_link: bool,
                  local_rsync: bool) -> "tuple[str | None, str | None]":
    """(method, None) or (None, why not): stream, tar or rsync for this target.

    auto: the nodeweave receiver (``stream``, one payload per group) where
    python3 runs; rsync instead over a network link when enough changed data
    has an old copy there (the delta algorithm then sends less); without
    python3, rsync where both ends have it, else ``tar -x``.
    """
    tools = manifest.tools
    if requested == "rsync":
        return ("rsync", None) if "rsync" in tools else (None, "--method rsync: the target has no rsync")
    if requested == "tar":
        return ("tar", None) if "tar" in tools else (None, "--tar: the target has no tar")
    if requested == "stream":
        return ("stream", None) if manifest.python else (None, "--method stream: the target has no python3")
    if manifest.python:
        pays = network_link and local_rsync and "rsync" in tools and diff.update_bytes >= DELTA_MIN_BYTES
        return ("rsync" if pays else "stream"), None
    if local_rsync and "rsync" in tools:
        return "rsync", None
    if "tar" in tools:
        return "tar", None
    return None, "the target has neither python3, rsync nor tar"


def group_payloads(diffs: "dict[object, Difference]") -> "list[tuple[Difference, list[object]]]":
    """Targets grouped by the payload they need, in first-seen order; empty payloads left out."""
    groups: "dict[tuple, tuple[Difference, list[object]]]" = {}
    for target, diff in diffs.items():
        if diff.send or diff.dirs:
            groups.setdefault(diff.payload_key, (diff, []))[1].append(target)
    return list(groups.values())


def itemize(diff: Difference, manifest: Manifest, fileset: FileSet) -> "list[str]":
    """What a dry run would do, in rsync's ``--itemize-changes`` words."""
    lines = [f"cd+++++++++ {rel}/" for rel in diff.dirs]
    for rel in diff.send:
        kind = "L" if fileset.files.get(rel) == "l" else "f"
        new = not manifest.holds(rel)
        lines.append(f"{'c' if kind == 'L' else '<'}{kind}{'+++++++++' if new else 'c........'} {rel}")
    lines += [f"*deleting   {rel}" for rel in diff.delete]
    lines += [f"*deleting   {rel}/" for rel in diff.rmdirs]
    return lines
