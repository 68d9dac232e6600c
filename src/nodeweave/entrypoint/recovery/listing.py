"""One directory's entries, listed once, with the small reads the layout rules need.

Every rule asks the same questions (is this name a regular file, how big, are
unfinished files left behind), so a folder is listed with ``os.scandir`` once
and its entries' ``stat`` is cached. Only regular files are ever opened (a
FIFO named ``.metadata`` must not block a restart), and only small ones
(whether a file is whole: ``whole_files.py``).
"""

import os
import re
import stat

from .whole_files import SMALL_READ, cut_off

# What writers leave while a file is still being written (atomic-rename temporaries, downloads).
TEMP_SUFFIXES = (".tmp", ".partial", ".part", ".incomplete")
# What checkpoint loaders open (torch.load, safetensors, json, pickle); each is checked whole (file_cut_off).
LOADER_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".json", ".pkl", ".ckpt")


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
        entry = self.entries.get(name)
        return entry.path if entry is not None else os.path.join(self.path, name)  # scandir joined it already

    def is_dir(self, name):
        entry = self.entries.get(name)
        try:
            return entry is not None and entry.is_dir()
        except OSError:
            return False

    def is_link(self, name):
        entry = self.entries.get(name)
        try:
            return entry is not None and entry.is_symlink()
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

    def mtime_ns(self, name):
        """The modification time of an entry in ns, or None."""
        try:
            return self.entries[name].stat().st_mtime_ns
        except (KeyError, OSError):
            return None

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

    def head(self, name, length):
        """The first ``length`` bytes of a regular file of any size (a large JSON's leading keys)."""
        if self.size(name) is None:
            raise Unreadable(f"{self.join(name)} is not a regular file")
        try:
            with open(self.join(name), "rb") as handle:
                return handle.read(length)
        except OSError as exc:
            raise Unreadable(f"cannot read {self.join(name)}: {exc.strerror or exc}") from None

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

    def loader_files(self):
        """The files a checkpoint loader opens, by suffix (``.pt``, ``.bin``, ``.safetensors``, ``.json``...)."""
        return [n for n in self.names if n.endswith(LOADER_SUFFIXES) and not n.startswith(".")]

    def cut_off(self, names):
        """"name (why)" for each of ``names`` that is empty or was cut off mid-write (:func:`file_cut_off`)."""
        found = []
        for name in names:
            why = file_cut_off(self, name)
            if why:
                found.append(f"{name} ({why})")
        return found


_NAMED_NUMBER = re.compile(r"(?i)(?:global_step|checkpoint|ckpt|step|iter|iteration)[^0-9a-z/]{0,3}(\d+)")


def named_step(name):
    """The number a checkpoint name gives after its own key (``checkpoint-4200``, ``ckpt_200_rank1.pt``,
    ``model_step300.pt`` -> 4200, 200, 300), or None. Never the last number: a rank, a loss, a date is no step."""
    match = _NAMED_NUMBER.search(name)
    return int(match.group(1)) if match else None


def first_few(names, count=3):
    """Names for one line of text: the first few, and how many more."""
    shown = ", ".join(names[:count])
    return shown + (f" and {len(names) - count} more" if len(names) > count else "")


def file_cut_off(listing, name):
    """Why a file a loader opens was cut off mid-write, or None when it is whole as far as its format says
    (``whole_files.cut_off``: a torch.save zip's ends and central directory, a safetensors header, a JSON
    parse, a pickle's STOP; read once per (path, size, mtime_ns))."""
    size = listing.size(name)
    if not size:
        return "empty" if size == 0 else "not a regular file"
    return cut_off(listing.join(name), name, size, listing.mtime_ns(name))
