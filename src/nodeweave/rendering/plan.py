"""What writing the rendered files would do to each path, and doing it atomically.

A rendered value is text (written as UTF-8) or bytes (a binary such as the
entrypoint zipapp, written as they are). Overwriting follows one rule for both: a
file is nodeweave's to replace when the last render recorded it with the digest it
still has, or when "by nodeweave" stands in its first five lines; for a
binary only its text head counts, what comes before the first NUL byte (the
zipapp's second line is the mark; the zip after it cannot fake one). A file
that starts with ``#!`` is a program and is written executable.

Removing (``--prune``) never trusts the mark: only a file the record
(``<out>/.nodeweave/rendered.json``, :mod:`nodeweave.rendering.record`) says a
render of this job wrote, for a target rendered now, that no renderer makes any
more and whose bytes still have the recorded digest. One the user changed since
is kept and named (``kept``), and forgotten by the record: it is the user's now.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

from nodeweave.entrypoint import bounded
from nodeweave.rendering import record
from nodeweave.targets.registry import Rendered

MARK = "by nodeweave"
MARK_LINES = 5


@dataclass(frozen=True)
class Planned:
    path: str
    bytes: int
    status: str  # new | changed | unchanged | refused | obsolete | kept (obsolete, but changed by the user)
    sha256: str


@dataclass(frozen=True)
class RenderPlan:
    """Every rendered file under ``out`` and what writing it would do."""

    out: Path
    files: Dict[str, Rendered] = field(repr=False)
    entries: List[Planned]
    owners: Dict[str, str] = field(default_factory=dict, repr=False)  # path -> the target that rendered it
    job: str = ""
    recorded: Dict[str, record.Entry] = field(default_factory=dict, repr=False)

    @property
    def stale(self) -> List[str]:
        """Paths that differ from the rendering (what ``--check`` reports)."""
        return [p.path for p in self.entries if p.status not in ("unchanged", "kept")]

    @property
    def refused(self) -> List[str]:
        """Differing files without the mark: they look like the user's own."""
        return [p.path for p in self.entries if p.status == "refused"]

    @property
    def kept(self) -> List[str]:
        """Files an earlier render wrote that no renderer makes now, changed by the user since: never pruned."""
        return [p.path for p in self.entries if p.status == "kept"]

    def counts(self) -> Dict[str, int]:
        return {s: sum(1 for p in self.entries if p.status == s)
                for s in ("new", "changed", "unchanged", "obsolete", "kept")}

    def write(self, prune: bool = False) -> None:
        """Write new and changed files, remove obsolete ones if ``prune``, and record what this render wrote
        (with ``job`` set: the CLI's renders, not ``up``'s own file): all of it, or none of it.

        Why staged: a render stopped part-way (a read-only folder, a full disk, Ctrl-C) used to leave some
        files new and others old, and no record for ``--prune``. Every file is first written beside its
        target; only then is each renamed into place, the file it replaces kept aside until all are in.
        A failure at any point puts back what was there. Refuses (ValueError) while any file is refused.
        """
        if self.refused:
            raise ValueError(f"refusing to write over {self.refused}")
        recorded = dict(self.recorded)
        changes: "list[tuple[Path, bytes | None]]" = []  # (target, new bytes; None: remove it)
        for item in self.entries:
            target = self.out / item.path
            if item.status in ("new", "changed", "unchanged"):
                if item.status != "unchanged":
                    changes.append((target, _encoded(self.files[item.path])))
                recorded[item.path] = record.Entry(item.sha256, self.owners.get(item.path, ""), self.job)
            elif prune and item.status == "obsolete":
                changes.append((target, None))
                recorded.pop(item.path, None)
            elif prune and item.status == "kept":
                recorded.pop(item.path, None)
        if self.job:
            written = {target for target, data in changes if data is not None}
            removed = {target for target, data in changes if data is None}
            recorded = {path: entry for path, entry in recorded.items() if (self.out / path) in written
                        or ((self.out / path).is_file() and (self.out / path) not in removed)}
            changes.append((self.out / record.RECORD, record.dumps(recorded).encode("utf-8")))
        write_all(changes)


def write_all(changes: "list[tuple[Path, bytes | None]]") -> None:
    """Each ``(target, bytes)`` written and each ``(target, None)`` removed, all or none (see RenderPlan.write)."""
    import tempfile  # here: `render --check` and dry runs write nothing (tempfile imports random)

    made: List[Path] = []  # folders this call created, outermost first
    staged: List["tuple[Path, Path | None]"] = []  # (target, its new file beside it; None: to be removed)
    aside: List["tuple[Path, Path | None]"] = []  # (target, where its old file waits; None: there was none)
    try:
        for target, data in changes:
            if data is None:
                staged.append((target, None))
                continue
            for folder in reversed([target.parent, *target.parent.parents]):
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            staged.append((target, Path(temp)))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            mode = (target.stat().st_mode & 0o777) if target.exists() else 0o644
            os.chmod(temp, mode | 0o111 if data.startswith(b"#!") else mode)  # a program: runnable as it is
        for target, temp in staged:
            old = None
            if target.exists() or target.is_symlink():
                old = target.with_name(f".{target.name}.{os.getpid()}.old")
                os.replace(target, old)
            aside.append((target, old))
            if temp is not None:
                os.replace(temp, target)
    except BaseException:
        _put_back(staged, aside, made)
        raise
    for _, old in aside:
        if old is not None:
            old.unlink(missing_ok=True)


def _put_back(staged, aside, made) -> None:
    """Undo a ``write_all`` stopped part-way: old files back in place, new ones and new folders gone."""
    for target, old in reversed(aside):
        try:
            if old is not None:
                os.replace(old, target)
            else:
                target.unlink(missing_ok=True)
        except OSError:
            pass
    for _, temp in staged:
        if temp is not None:
            temp.unlink(missing_ok=True)
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:
            pass


def is_marked(content: Rendered) -> bool:
    """Whether "by nodeweave" stands in the first five lines (of a binary's text head: before its first NUL)."""
    text = content if isinstance(content, str) else content.split(b"\0", 1)[0].decode("utf-8", errors="replace")
    head = "\n".join(text.splitlines()[:MARK_LINES]).lower()
    return MARK in head


def _encoded(content: Rendered) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def plan_render(files: Dict[str, Rendered], out: Path, force: bool = False, owners: "Dict[str, str] | None" = None,
                job: str = "") -> RenderPlan:
    """What writing ``files`` under ``out`` would do to each path, plus files an earlier render of ``job``
    wrote for the same targets (``owners``: path -> target) that no renderer makes now."""
    recorded = record.read(out) if job else {}
    entries = []
    for path, content in files.items():
        data = _encoded(content)
        target = out / path
        if target.is_dir():
            status = "refused"
        elif not target.exists():
            status = "new"
        else:
            old = bounded.read_bytes(target, bounded.RENDERED_CAP, "a rendered file")
            if old == data:
                status = "unchanged"
            elif force or is_marked(old) or _as_recorded(recorded.get(path), old):
                status = "changed"
            else:
                status = "refused"
        entries.append(Planned(path, len(data), status, hashlib.sha256(data).hexdigest()))
    owners = dict(owners or {})
    return RenderPlan(out=out, files=files, entries=entries + _obsolete(files, out, owners, job, recorded),
                      owners=owners, job=job, recorded=recorded)


def _as_recorded(entry: "record.Entry | None", data: bytes) -> bool:
    return entry is not None and entry.sha256 == hashlib.sha256(data).hexdigest()


def _obsolete(files: Dict[str, Rendered], out: Path, owners: Dict[str, str], job: str,
              recorded: Dict[str, "record.Entry"]) -> List[Planned]:
    """Recorded files of ``job``'s targets rendered now that no renderer makes any more: ``obsolete`` when
    their bytes are what was written, ``kept`` when the user changed them since."""
    targets = set(owners.values())
    found = []
    for rel, entry in sorted(recorded.items()):
        file = out / rel
        if rel in files or entry.job != job or entry.target not in targets or file.is_symlink() or not file.is_file():
            continue
        data = bounded.read_bytes(file, bounded.RENDERED_CAP, "a rendered file")
        status = "obsolete" if _as_recorded(entry, data) else "kept"
        found.append(Planned(rel, len(data), status, hashlib.sha256(data).hexdigest()))
    return found


def write_atomically(target: Path, data: bytes) -> None:
    """One file, replaced whole or not at all (temp file + rename)."""
    write_all([(target, data)])
