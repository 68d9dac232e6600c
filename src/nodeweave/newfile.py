"""One way to write a file nodeweave makes on a user's behalf: never over a file that appeared meanwhile.

Why: every verb that writes a file the user names (``init --out``, ``bench --json-out``/``--plot``, the default
``runs/<UTC time>-bench.json``, ``hosts probe --write-hostfile``, ``runs compare --chart``,
``$NODEWEAVE_PLAN_RECORD``) judges the path when it starts (cli/habits/replace.py: an existing file is replaced only
with ``--force``, and only when it is of the option's kind). A file that appeared after that check (a second bench
or init writing the same name, started in another terminal) was then replaced silently, and both printed "wrote X"
(walk12 A21, A22, A23). The write itself now holds the rule: the whole file is written beside the target under a
temporary name and linked into place, which fails when the name is taken; only a writer allowed to replace
(``--force``, judged again at that moment) renames over it. ``render --out`` (``rendering.plan.write_all``: a file
planned new is linked into place only while its name is free) and ``doctor --capture DIR`` (``entrypoint.snapshot
.claim``: its ``capture/`` folder made exclusively before anything is copied) hold the same rule (fix13c).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Callable, Optional

from nodeweave.errors import UsageError


class Taken(Exception):
    """The name was taken (a file, a link, a folder appeared there) and the writer may not replace it."""


def _exclusive(name: str, data: bytes) -> None:
    """``data`` in a file made at ``name`` only if nothing is there (FileExistsError otherwise); a half-written file
    is taken back out."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException:
        _unlink(name)
        raise


def _scratch(path: Path, data: bytes) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    for n in range(100):
        scratch = os.path.join(folder, f".{path.name}.{os.getpid()}.{n}.partial")
        try:
            _exclusive(scratch, data)
        except FileExistsError:
            continue
        return scratch
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it", str(path))


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def create(path: Path, data: bytes, replace_if: Optional[Callable[[Path], None]] = None) -> None:
    """``data`` at ``path``, whole or not at all. A name that is free is taken exclusively (a hard link of the
    finished file: two writers of one name never both succeed); a taken one raises :class:`Taken` unless
    ``replace_if`` is given, which is called with ``path`` at that moment (it raises to refuse) before the file is
    renamed over it. OSError for what the file system refuses (the caller names it)."""
    scratch = _scratch(path, data)
    try:
        try:
            os.link(scratch, path)
            return
        except FileExistsError:
            pass
        except OSError as err:  # a file system without hard links: an exclusive create, written in place
            if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK,
                                 errno.ENOSYS):
                raise
            try:
                _exclusive(str(path), data)
                return
            except FileExistsError:
                pass
        if replace_if is None:
            raise Taken(str(path))
        replace_if(path)
        os.replace(scratch, path)
    finally:
        _unlink(scratch)


def appeared(subject: str, flag: str, what: str = "") -> UsageError:
    """The refusal for a name taken after the verb's start-up check (exit 2): the file is kept."""
    lost = f"; {what}" if what else ""
    return UsageError(f"{subject}: the file appeared after this command started (another nodeweave writing the same "
                      f"name?), and nodeweave never replaces a file without --force: it is kept{lost}; give {flag} "
                      "another file, or pass --force to replace it")


def write_new(path: Path, data: bytes, flag: str, replace_if: Optional[Callable[[Path], None]] = None,
              subject: Optional[str] = None, what: str = "") -> None:
    """:func:`create`, with a taken name said as :func:`appeared` (``subject``: how the line names the path)."""
    try:
        create(path, data, replace_if)
    except Taken:
        raise appeared(subject or f"{flag} {path}", flag, what) from None
