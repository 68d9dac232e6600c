"""What writing the rendered files would do to each path, and doing it atomically.

A rendered value is text (written as UTF-8) or bytes (a binary such as the
entrypoint zipapp, written as they are). Ownership is one rule for both: a
file is nodeweave's when "by nodeweave" stands in its first five lines; for a
binary only its text head counts, what comes before the first NUL byte (the
zipapp's second line is the mark; the zip after it cannot fake one). A file
that starts with ``#!`` is a program and is written executable.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Dict, List

from nodeweave.targets.registry import Rendered

MARK = "by nodeweave"
MARK_LINES = 5


@dataclass(frozen=True)
class Planned:
    path: str
    bytes: int
    status: str  # new | changed | unchanged | refused | obsolete
    sha256: str


@dataclass(frozen=True)
class RenderPlan:
    """Every rendered file under ``out`` and what writing it would do."""

    out: Path
    files: Dict[str, Rendered] = field(repr=False)
    entries: List[Planned]

    @property
    def stale(self) -> List[str]:
        """Paths that differ from the rendering (what ``--check`` reports)."""
        return [p.path for p in self.entries if p.status != "unchanged"]

    @property
    def refused(self) -> List[str]:
        """Differing files without the mark: they look like the user's own."""
        return [p.path for p in self.entries if p.status == "refused"]

    def counts(self) -> Dict[str, int]:
        return {s: sum(1 for p in self.entries if p.status == s) for s in ("new", "changed", "unchanged", "obsolete")}

    def write(self, prune: bool = False) -> None:
        """Write new and changed files atomically (temp file + rename); remove obsolete ones if ``prune``.

        Refuses (ValueError) while any file is refused: a run does all it says or nothing.
        """
        if self.refused:
            raise ValueError(f"refusing to write over {self.refused}")
        for item in self.entries:
            target = self.out / item.path
            if item.status in ("new", "changed"):
                _write_atomically(target, _encoded(self.files[item.path]))
            elif item.status == "obsolete" and prune:
                target.unlink()


def is_marked(content: Rendered) -> bool:
    """Whether "by nodeweave" stands in the first five lines (of a binary's text head: before its first NUL)."""
    text = content if isinstance(content, str) else content.split(b"\0", 1)[0].decode("utf-8", errors="replace")
    head = "\n".join(text.splitlines()[:MARK_LINES]).lower()
    return MARK in head


def _encoded(content: Rendered) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def plan_render(files: Dict[str, Rendered], out: Path, force: bool = False) -> RenderPlan:
    """What writing ``files`` under ``out`` would do to each path, plus rendered files no longer made."""
    entries = []
    for path, content in files.items():
        data = _encoded(content)
        target = out / path
        if target.is_dir():
            status = "refused"
        elif not target.exists():
            status = "new"
        else:
            old = target.read_bytes()
            if old == data:
                status = "unchanged"
            elif force or is_marked(old):
                status = "changed"
            else:
                status = "refused"
        entries.append(Planned(path, len(data), status, hashlib.sha256(data).hexdigest()))
    return RenderPlan(out=out, files=files, entries=entries + _obsolete(files, out))


def _obsolete(files: Dict[str, Rendered], out: Path) -> List[Planned]:
    """Marked files under the rendered folders (compose/, images/, ...) that no renderer makes now."""
    folders = sorted({PurePosixPath(p).parts[0] for p in files if len(PurePosixPath(p).parts) > 1})
    found = []
    for folder in folders:
        root = out / folder
        if not root.is_dir():
            continue
        for file in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = file.relative_to(out).as_posix()
            if rel in files:
                continue
            data = file.read_bytes()
            if is_marked(data):
                found.append(Planned(rel, len(data), "obsolete", hashlib.sha256(data).hexdigest()))
    return found


def _write_atomically(target: Path, data: bytes) -> None:
    import tempfile  # here: `render --check` and dry runs write nothing (tempfile imports random)

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        mode = (target.stat().st_mode & 0o777) if target.exists() else 0o644
        os.chmod(temp, mode | 0o111 if data.startswith(b"#!") else mode)  # a program: runnable as it is
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
