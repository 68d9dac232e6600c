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

    def cut_off(self, names):
        """"name (why)" for each of ``names`` that is empty or was cut off mid-write (:func:`file_cut_off`)."""
        found = []
        for name in names:
            why = file_cut_off(self, name)
            if why:
                found.append(f"{name} ({why})")
        return found


def step_in(name):
    """The last number in a folder or file name (``checkpoint-4200`` -> 4200), or None."""
    numbers = re.findall(r"\d+", name)
    return int(numbers[-1]) if numbers else None


def first_few(names, count=3):
    """Names for one line of text: the first few, and how many more."""
    shown = ", ".join(names[:count])
    return shown + (f" and {len(names) - count} more" if len(names) > count else "")


_ZIP_LOCAL = b"PK\x03\x04"
_ZIP_END = b"PK\x05\x06"
_ZIP_TAIL = (64 << 10) + 22  # the end-of-central-directory record plus the longest comment


def file_cut_off(listing, name):
    """Why a torch.save or safetensors file was cut off mid-write, or None when its end is there.

    ``torch.save`` writes a zip whose end-of-central-directory record comes
    last; a safetensors file's header says how many bytes its tensors take.
    Both are read from a few bytes at the ends, never the whole file. Other
    files (a legacy pickle ``torch.save``) pass when not empty.
    """
    size = listing.size(name)
    if not size:
        return "empty" if size == 0 else "not a regular file"
    try:
        with open(listing.join(name), "rb") as handle:
            head = handle.read(8)
            if head.startswith(_ZIP_LOCAL):
                return _zip_cut_off(handle, size)
            if name.endswith(".safetensors"):
                return _safetensors_cut_off(handle, head, size)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None


def _zip_cut_off(handle, size):
    tail = min(size, _ZIP_TAIL)
    handle.seek(size - tail)
    data = handle.read(tail)
    end = data.rfind(_ZIP_END)
    if end < 0 or len(data) - end < 22:
        return "a zip (torch.save) without its end record: cut off mid-write"
    comment = int.from_bytes(data[end + 20:end + 22], "little")
    if end + 22 + comment != len(data):
        return "a zip (torch.save) whose end record does not end the file: cut off or appended to"
    return None


def _safetensors_cut_off(handle, head, size):
    import json  # only here: most folders hold no safetensors

    if len(head) < 8:
        return "shorter than a safetensors header"
    length = int.from_bytes(head, "little")
    if length > SMALL_READ or 8 + length > size:
        return f"a safetensors header of {length} bytes in a {size}-byte file: cut off"
    try:
        header = json.loads(handle.read(length).decode("utf-8"))
        ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return "a safetensors header that does not parse"
    needed = 8 + length + max(ends, default=0)
    if size < needed:
        return f"safetensors holds {size} bytes, its header needs {needed}: cut off"
    return None
