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
# What checkpoint loaders open (torch.load, safetensors, json, pickle); each is checked whole (file_cut_off).
LOADER_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".json", ".pkl", ".ckpt")
TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")  # torch.save writes a zip (or, before 1.6, a pickle) there
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


_ZIP_LOCAL = b"PK\x03\x04"


_LEGACY_TORCH = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"  # the magic number torch.save pickled first (<1.6)
JSON_READ = 8 << 20  # bytes: a JSON file up to this is parsed whole; a larger one only has its end looked at


def file_cut_off(listing, name):
    """Why a file a loader opens was cut off mid-write, or None when it is whole as far as its format says.

    - ``torch.save`` (a zip): the end record and the central directory it
      points to parse, and every entry's local header sits where the central
      directory says, its data ending before the central directory.
    - safetensors: the file holds the header's length and every tensor's bytes.
    - ``.json``: it parses (a larger one: it ends in ``}`` or ``]``).
    - a plain pickle: it ends with the STOP opcode.
    - ``.pt``/``.pth``/``.bin``/``.ckpt``: a zip or a pickle, nothing else
      (a file cut inside its first bytes is neither).
    Nothing is read whole but a small JSON; a file of another kind passes when not empty.
    """
    size = listing.size(name)
    if not size:
        return "empty" if size == 0 else "not a regular file"
    key = (listing.join(name), size, listing.mtime_ns(name))
    if key not in _VERDICTS:
        if len(_VERDICTS) >= _VERDICTS_LIMIT:
            _VERDICTS.clear()
        _VERDICTS[key] = _read_cut_off(listing.join(name), name, size)
    return _VERDICTS[key]


_VERDICTS = {}  # (path, size, mtime_ns) -> why cut off, or None: a file that did not change is read once
_VERDICTS_LIMIT = 100_000


_READ_WHOLE = 1 << 20  # bytes: a smaller file is read in one call and judged in memory


def _read_cut_off(path, name, size):
    import io

    try:
        with open(path, "rb") as handle:
            if size <= _READ_WHOLE:
                handle = io.BytesIO(handle.read(size + 1))
            head = handle.read(8)
            if head.startswith(_ZIP_LOCAL):
                return _zip_cut_off(handle, size)
            if name.endswith(".safetensors"):
                return _safetensors_cut_off(handle, head, size)
            if name.endswith(".json"):
                return _json_cut_off(handle, size)
            if head[:1] == b"\x80" and not (head + handle.read(len(_LEGACY_TORCH) - 8)).startswith(_LEGACY_TORCH):
                handle.seek(size - 1)
                if handle.read(1) != b".":
                    return "a pickle without its STOP opcode at the end: cut off mid-write"
            elif name.endswith(TORCH_SUFFIXES) and head[:1] != b"\x80":
                if _ZIP_LOCAL.startswith(head[:4]):
                    return f"{size} byte(s) of a zip (torch.save): cut off mid-write"
                return "neither a torch.save zip nor a pickle: cut off, or not torch's"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None


_ZIP_END = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_END = b"PK\x06\x06"
_ZIP_CENTRAL = b"PK\x01\x02"
_ZIP_TAIL = (64 << 10) + 22  # the end-of-central-directory record plus the longest comment
_CENTRAL_READ = 64 << 20     # bytes of central directory read at most (a million tensors)


def _zip_cut_off(handle, size):
    """The end record, the central directory it points to, every entry's data before it, and the local
    headers of the first and last entry: read from the file's ends, never the tensors between."""
    import struct

    tail_size = min(size, _ZIP_TAIL)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    end = tail.rfind(_ZIP_END)
    if end < 0 or len(tail) - end < 22:
        return "a zip (torch.save) without its end record: cut off mid-write"
    entries, cd_size, cd_offset, comment = struct.unpack("<HIIH", tail[end + 10:end + 22])
    if end + 22 + comment != len(tail):
        return "a zip (torch.save) whose end record does not end the file: cut off or appended to"
    end_at = size - tail_size + end
    if 0xFFFFFFFF in (cd_size, cd_offset) or entries == 0xFFFF:
        locator = tail[end - 20:end] if end >= 20 else b""
        if not locator.startswith(_ZIP64_LOCATOR):
            return "a zip64 (torch.save) without its zip64 locator: cut off mid-write"
        end_at = struct.unpack("<Q", locator[8:16])[0]
        handle.seek(end_at)
        record = handle.read(56)
        if len(record) < 56 or not record.startswith(_ZIP64_END):
            return "a zip64 (torch.save) without its zip64 end record: cut off mid-write"
        entries, cd_size, cd_offset = struct.unpack("<QQQ", record[32:56])
    if cd_offset + cd_size > end_at:
        return "a zip (torch.save) whose central directory runs past its end record: cut off mid-write"
    if cd_size > _CENTRAL_READ:
        return None  # the ends are whole; a directory this large is not read
    handle.seek(cd_offset)
    central = handle.read(cd_size)
    offsets = []
    at = 0
    while at + 46 <= len(central) and central[at:at + 4] == _ZIP_CENTRAL:
        compressed, uncompressed = struct.unpack("<II", central[at + 20:at + 28])
        name_len, extra_len, note_len = struct.unpack("<HHH", central[at + 28:at + 34])
        offset, = struct.unpack("<I", central[at + 42:at + 46])
        if 0xFFFFFFFF in (compressed, offset):
            compressed, offset = _zip64_sizes(central[at + 46 + name_len:at + 46 + name_len + extra_len],
                                              uncompressed, compressed, offset)
        if offset + 30 + name_len + compressed > cd_offset:
            return "a zip (torch.save) whose entry runs past its central directory: cut off or overwritten"
        offsets.append(offset)
        at += 46 + name_len + extra_len + note_len
    if len(offsets) != entries or at != len(central):
        return (f"a zip (torch.save) whose central directory holds {len(offsets)} of its {entries} entries: "
                "cut off or overwritten")
    for offset in {min(offsets, default=0), max(offsets, default=0)} if offsets else ():
        handle.seek(offset)
        if handle.read(4) != _ZIP_LOCAL:
            return "a zip (torch.save) whose entry has no local header: cut off or overwritten"
    return None


def _zip64_sizes(extra, uncompressed, compressed, offset):
    """(compressed size, local header offset) from a central entry's zip64 extra field."""
    import struct

    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack("<HH", extra[at:at + 4])
        if kind == 1:
            values = list(struct.unpack(f"<{length // 8}Q", extra[at + 4:at + 4 + length - length % 8]))
            # in order: uncompressed, compressed, offset, each only when its 32-bit field is 0xFFFFFFFF
            fields = []
            for present in (uncompressed == 0xFFFFFFFF, compressed == 0xFFFFFFFF, offset == 0xFFFFFFFF):
                fields.append(values.pop(0) if present and values else None)
            return (fields[1] if fields[1] is not None else compressed), (
                fields[2] if fields[2] is not None else offset)
        at += 4 + length
    return compressed, offset


def _json_cut_off(handle, size):
    import json

    handle.seek(0)
    if size <= JSON_READ:
        try:
            json.loads(handle.read(size + 1).decode("utf-8"))
        except ValueError as exc:
            return f"JSON that does not parse ({exc}): cut off mid-write"
        return None
    handle.seek(max(0, size - 64))
    if not handle.read(64).rstrip().endswith((b"}", b"]")):
        return "JSON that does not end in } or ]: cut off mid-write"
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
