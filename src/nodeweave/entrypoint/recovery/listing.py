"""One directory's entries, listed once, with the small reads the layout rules need.

Every rule asks the same questions (is this name a regular file, how big, are
unfinished files left behind), so a folder is listed with ``os.scandir`` once
and its entries' ``stat`` is cached. Only regular files are ever opened (a
FIFO named ``.metadata`` must not block a restart), and only small ones.
"""

import os
import re
import stat

# What writers leave while a file is still being written (atomic-rename temporaries, downloads).
TEMP_SUFFIXES = (".tmp", ".partial", ".part", ".incomplete")
SMALL_READ = 8 << 20  # bytes: pointer files, JSON indexes


class Unreadable(Exception):
    """A folder or file the rules needed could not be listed or read; the text says which and why."""


class Listing:
    """The entries of one folder: ``names``, ``size(name)``, ``is_dir(name)``, ``read(name)``."""

    def __init__(self, path):
        self.path = path
        try:
            with os.scandir(path) as scan:
                self.entries = {entry.name: entry for entry in scan}
        except OSError as exc:
            raise Unreadable(f"cannot list {path}: {exc.strerror or exc}") from None
        self.names = sorted(self.entries)

    def __contains__(self, name):
        return name in self.entries

    def join(self, name):
        return os.path.join(self.path, name)

    def is_dir(self, name):
        entry = self.entries.get(name)
        try:
            return entry is not None and entry.is_dir()
        except OSError:
            return False

    def size(self, name):
        """Bytes of a regular file, or None when it is absent, not a regular file, or cannot be stat'ed."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        try:
            info = entry.stat()
        except OSError:
            return None
        return info.st_size if stat.S_ISREG(info.st_mode) else None

    def read(self, name, limit=SMALL_READ):
        """The bytes of a small regular file; :class:`Unreadable` names the file and why not."""
        size = self.size(name)
        where = self.join(name)
        if size is None:
            raise Unreadable(f"{where} is not a regular file")
        if size > limit:
            raise Unreadable(f"{where} is {size} bytes, more than the {limit} read for a pointer or index")
        try:
            with open(where, "rb") as handle:
                return handle.read(limit + 1)
        except OSError as exc:
            raise Unreadable(f"cannot read {where}: {exc.strerror or exc}") from None

    def leftovers(self):
        """Names an unfinished write leaves behind (``x.tmp``, ``x.partial``...)."""
        return [n for n in self.names if n.endswith(TEMP_SUFFIXES) or n.startswith(".tmp")]

    def matching(self, pattern):
        """(match, name) for the names the compiled regex matches in full."""
        found = []
        for name in self.names:
            match = pattern.fullmatch(name)
            if match:
                found.append((match, name))
        return found

    def empty_files(self, names):
        return [n for n in names if self.size(n) == 0]


def step_in(name):
    """The last number in a folder or file name (``checkpoint-4200`` -> 4200), or None."""
    numbers = re.findall(r"\d+", name)
    return int(numbers[-1]) if numbers else None


def first_few(names, count=3):
    """Names for one line of text: the first few, and how many more."""
    shown = ", ".join(names[:count])
    return shown + (f" and {len(names) - count} more" if len(names) > count else "")
