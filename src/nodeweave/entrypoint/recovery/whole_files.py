"""Is one saved file whole? Judged from the bytes its format records (zip ends, safetensors header, JSON, STOP).

A restart may look at thousands of files (1,000 DeepSpeed tags hold 10,000),
so each is opened once with ``os.open`` (no buffered file object), a small one
read in one call and judged in memory, a large one read at the few offsets
its format names with ``os.pread``; never the tensors between. A verdict is
kept per (path, size, mtime_ns): a file that did not change is read once per
process. A ``torch.save`` zip's central directory is judged at a glance
(its two end entries and C-speed searches over it; a large model's file holds
hundreds of entries, 1,000 saves millions) and walked entry by entry only when
the glance cannot tell; either finds the place of its ``data.pkl``, kept with
the verdict, so reading that pickle later (DeepSpeed's model states,
Lightning's ``global_step``) costs one read more, not a second pass.
"""

import os
import struct

TORCH_SUFFIXES = (".pt", ".pth", ".bin", ".ckpt")  # torch.save writes a zip (or, before 1.6, a pickle) there
JSON_READ = 8 << 20  # bytes: a JSON file up to this is parsed whole; a larger one only has its end looked at
SMALL_READ = 8 << 20  # bytes: pointer files, JSON indexes, safetensors headers
_READ_WHOLE = 1 << 20  # bytes: a smaller file is read in one call and judged in memory

_ZIP_LOCAL = b"PK\x03\x04"
_ZIP_END = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_END = b"PK\x06\x06"
_ZIP_CENTRAL = b"PK\x01\x02"
_DATA_PKL = b"/data.pkl"  # torch.save's pickle: <archive folder>/data.pkl
_GLANCE_FROM = 16  # entries: a smaller central directory is walked whole (as fast as a glance, 3 entries: 11 us)
_ZERO_SECTOR = bytes(512)  # what a lost disk sector reads back as; no whole central directory holds it
# a central directory entry: signature, method, compressed and uncompressed size, name/extra/comment lengths,
# local header offset (the version, flags, time, CRC, disk, attributes between are skipped)
_CENTRAL_ENTRY = struct.Struct("<4s6xH8xIIHHH8xI")
_ZIP_TAIL = (64 << 10) + 22  # the end-of-central-directory record plus the longest comment
_CENTRAL_READ = 64 << 20     # bytes of central directory read at most (a million tensors)
_LEGACY_TORCH = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"  # the magic number torch.save pickled first (<1.6)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)  # a FIFO never blocks


class NotWhole(Exception):
    """A file could not be read, or is not what the caller asked for; the text says why."""


def cut_off(path, name, size, mtime_ns):
    """Why the file at ``path`` (``name`` decides its format, ``size`` and ``mtime_ns`` from its stat) was cut
    off mid-write, or None when it is whole as far as its format says:

    - ``torch.save`` (a zip): the end record parses and the central
      directory it points to ends where it begins; that directory holds as
      many entries as it counts, chained to its end, each entry's data ends
      before the directory, and the first and last entry's local headers sit
      where it says (at a glance: the first and last entries, and data.pkl's,
      read, the rest counted by signature; see :func:`_central_glance`);
    - safetensors: the file holds the header's length and every tensor's bytes;
    - ``.json``: it parses (a larger one: it ends in ``}`` or ``]``);
    - a plain pickle: it ends with the STOP opcode;
    - ``.pt``/``.pth``/``.bin``/``.ckpt``: a zip or a pickle, nothing else
      (a file cut inside its first bytes is neither).
    A file of another kind passes when not empty.
    """
    return _verdict(path, name, size, mtime_ns)[0]


def torch_save_pickle(path, limit):
    """The bytes of a ``torch.save`` zip's ``archive/data.pkl`` (at most ``limit``); :class:`NotWhole` when the
    file is cut off, not a torch.save zip, or cannot be read."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise NotWhole(f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        why, member = _verdict(path, os.path.basename(path), info.st_size, info.st_mtime_ns, fd)
        if why:
            raise NotWhole(why)
        if member is None:
            raise NotWhole("not a torch.save zip (no data.pkl in it)")
        offset, compressed, method, uncompressed = member
        if uncompressed > limit:
            raise NotWhole(f"its data.pkl is {uncompressed} bytes, more than the {limit} read")
        local = os.pread(fd, 30, offset)
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        data = os.pread(fd, compressed, offset + 30 + name_len + extra_len)
    except OSError as exc:
        raise NotWhole(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if method == 8:
        import zlib

        try:
            return zlib.decompress(data, -15)
        except zlib.error as exc:
            raise NotWhole(f"its data.pkl does not inflate ({exc})") from None
    if method != 0:
        raise NotWhole(f"its data.pkl is compressed with zip method {method}, which is not read")
    return data


_VERDICTS = {}  # (path, size, mtime_ns) -> (why cut off or None, data.pkl's (offset, size, method, uncompressed))
_VERDICTS_LIMIT = 100_000


def _verdict(path, name, size, mtime_ns, fd=None):
    key = (path, size, mtime_ns)
    found = _VERDICTS.get(key)
    if found is None:
        if len(_VERDICTS) >= _VERDICTS_LIMIT:
            _VERDICTS.clear()
        found = _VERDICTS[key] = _judge(path, name, size, fd)
    return found


def _judge(path, name, size, fd):
    if not size:
        return ("empty", None) if size == 0 else ("not a regular file", None)
    own = fd is None
    try:
        if own:
            fd = os.open(path, _OPEN_FLAGS)
        try:
            return _judge_bytes(_Bytes(fd, size), name, size)
        finally:
            if own:
                os.close(fd)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}", None


class _Bytes:
    """A file's bytes at an offset: from memory when it is small (read in one call), else ``os.pread``."""

    __slots__ = ("fd", "data")

    def __init__(self, fd, size):
        self.fd = fd
        self.data = os.read(fd, size + 1) if size <= _READ_WHOLE else None

    def at(self, offset, length):
        if self.data is not None:
            return self.data[offset:offset + length]
        return os.pread(self.fd, length, offset)


def _judge_bytes(file, name, size):
    head = file.at(0, len(_LEGACY_TORCH))
    if head.startswith(_ZIP_LOCAL):
        return _zip_cut_off(file, size)
    if name.endswith(".safetensors"):
        return _safetensors_cut_off(file, head, size), None
    if name.endswith(".json"):
        return _json_cut_off(file, size), None
    if head[:1] == b"\x80" and not head.startswith(_LEGACY_TORCH):
        if file.at(size - 1, 1) != b".":
            return "a pickle without its STOP opcode at the end: cut off mid-write", None
    elif name.endswith(TORCH_SUFFIXES) and head[:1] != b"\x80":
        if _ZIP_LOCAL.startswith(head[:4]):
            return f"{size} byte(s) of a zip (torch.save): cut off mid-write", None
        return "neither a torch.save zip nor a pickle: cut off, or not torch's", None
    return None, None


def _zip_cut_off(file, size):
    """(why, data.pkl's place) from the end record, the central directory it points to, every entry's data
    before it, and the local headers of the first and last entry: read from the file's ends."""
    tail_size = min(size, _ZIP_TAIL)
    tail = file.at(size - tail_size, tail_size)
    end = tail.rfind(_ZIP_END)
    if end < 0 or len(tail) - end < 22:
        return "a zip (torch.save) without its end record: cut off mid-write", None
    entries, cd_size, cd_offset, comment = struct.unpack("<HIIH", tail[end + 10:end + 22])
    if end + 22 + comment != len(tail):
        return "a zip (torch.save) whose end record does not end the file: cut off or appended to", None
    end_at = size - tail_size + end
    locator = tail[end - 20:end] if end >= 20 else b""
    if 0xFFFFFFFF in (cd_size, cd_offset) or entries == 0xFFFF or locator.startswith(_ZIP64_LOCATOR):
        # torch.save writes the zip64 end record and its locator before the end record always; its reader
        # (miniz) takes a zip64 value only where the end record's field is at its maximum
        if not locator.startswith(_ZIP64_LOCATOR):
            return "a zip64 (torch.save) without its zip64 locator: cut off mid-write", None
        end_at = struct.unpack("<Q", locator[8:16])[0]
        record = file.at(end_at, 56)
        if len(record) < 56 or not record.startswith(_ZIP64_END):
            return "a zip64 (torch.save) without its zip64 end record: cut off mid-write", None
        entries64, cd_size64, cd_offset64 = struct.unpack("<QQQ", record[32:56])
        entries = entries64 if entries == 0xFFFF else entries
        cd_size = cd_size64 if cd_size == 0xFFFFFFFF else cd_size
        cd_offset = cd_offset64 if cd_offset == 0xFFFFFFFF else cd_offset
    if cd_offset + cd_size > end_at:
        return "a zip (torch.save) whose central directory runs past its end record: cut off mid-write", None
    if cd_offset + cd_size != end_at:
        # torch.save (and zipfile) write the end record right after the table; an end record whose fields
        # were lost (a zero-filled tail past its signature reads as "no table at 0") is not whole
        return (f"a zip (torch.save) whose central directory ({cd_size} bytes at {cd_offset}) does not end where "
                f"its end record begins ({end_at}): cut off, zero-filled or overwritten"), None
    if not entries:
        return "a zip (torch.save) whose end record counts no entries: cut off, zero-filled or overwritten", None
    if cd_size > _CENTRAL_READ:
        return None, None  # the ends are whole; a directory this large is not read
    central = file.at(cd_offset, cd_size)
    glance = _central_glance(file, central, entries, cd_offset) if entries >= _GLANCE_FROM else None
    if glance is not None:
        return None, glance[0]
    return _central_walk(file, central, entries, cd_offset)


def _central_glance(file, central, entries, cd_offset):
    """(data.pkl's place or None,) when the central directory is whole by what C-speed searches and its two
    ends say, else None: then it is walked entry by entry (:func:`_central_walk`), which gives the verdict.

    A table of 300 entries costs ~0.1 ms to walk in Python and 1,000 saves of a
    large model hold millions; this reads only the first and last entries. It
    agrees when the table starts with an entry, holds exactly as many entry
    signatures as the end record counts (so no name or extra holds one, and a
    lost or zeroed stretch of the table, which takes signatures with it, is
    never counted whole), holds no run of zero bytes a lost disk sector
    leaves (an entry longer than a sector could lose one without its
    signature), the first entry ends where the second begins and the last
    where the table ends; and the first and last entries (writers append in
    the order of their data: the last one's lies nearest the table), and
    data.pkl's, have their data before the table and a local header where
    they say. Anything else, including entries out of order, goes to the walk.
    """
    if not entries or not central.startswith(_ZIP_CENTRAL) or central.count(_ZIP_CENTRAL) != entries \
            or _ZERO_SECTOR in central:
        return None
    first = _glanced_entry(central, 0, cd_offset)
    last_at = central.rfind(_ZIP_CENTRAL)
    last = _glanced_entry(central, last_at, cd_offset)
    if first is None or last is None or last[0] != len(central) or first[1] > last[1] or (
            entries > 1 and not central.startswith(_ZIP_CENTRAL, first[0])):
        return None
    member = None
    found = central.find(_DATA_PKL)
    while found >= 0:  # the first entry whose name is <folder>/data.pkl, as the walk takes it
        at = central.rfind(_ZIP_CENTRAL, 0, found)
        entry = _glanced_entry(central, at, None) if at >= 0 else None
        name_end = found + len(_DATA_PKL)
        if entry is not None and entry[2] == name_end and central.count(b"/", at + 46, name_end) == 1:
            if _glanced_entry(central, at, cd_offset) is None:
                return None  # its data runs past the table: the walk says so
            member = entry[3]
            break
        found = central.find(_DATA_PKL, name_end)
    for offset in {first[1], last[1]}:
        if file.at(offset, 4) != _ZIP_LOCAL:
            return None
    return (member,)


def _glanced_entry(central, at, cd_offset):
    """(where the entry at ``at`` ends, its local header offset, where its name ends, (offset, compressed,
    method, uncompressed)), or None when it does not parse or its data runs past the table at ``cd_offset``
    (not asked when None)."""
    if at + 46 > len(central):
        return None
    signature, method, compressed, uncompressed, name_len, extra_len, note_len, offset = _CENTRAL_ENTRY.unpack_from(
        central, at)
    end = at + 46 + name_len + extra_len + note_len
    if signature != _ZIP_CENTRAL or end > len(central):
        return None
    if compressed == 0xFFFFFFFF or uncompressed == 0xFFFFFFFF or offset == 0xFFFFFFFF:
        uncompressed, compressed, offset = _zip64_sizes(
            central[at + 46 + name_len:at + 46 + name_len + extra_len], uncompressed, compressed, offset)
    if cd_offset is not None and offset + 30 + name_len + compressed > cd_offset:
        return None
    return end, offset, at + 46 + name_len, (offset, compressed, method, uncompressed)


def _central_walk(file, central, entries, cd_offset):
    """(why, data.pkl's place) from every entry of the central directory: each one's data ends before the
    table, they chain to its end, their count is the end record's, and the first and last local headers
    (by offset) are where they say."""
    first = last = member = None
    count = at = 0
    entry = _CENTRAL_ENTRY.unpack_from  # one call per entry: a 7B model's optimizer.pt holds ~600 of them
    while at + 46 <= len(central):
        signature, method, compressed, uncompressed, name_len, extra_len, note_len, offset = entry(central, at)
        if signature != _ZIP_CENTRAL:
            break
        if compressed == 0xFFFFFFFF or uncompressed == 0xFFFFFFFF or offset == 0xFFFFFFFF:
            uncompressed, compressed, offset = _zip64_sizes(
                central[at + 46 + name_len:at + 46 + name_len + extra_len], uncompressed, compressed, offset)
        if offset + 30 + name_len + compressed > cd_offset:
            return "a zip (torch.save) whose entry runs past its central directory: cut off or overwritten", None
        if member is None and central.endswith(_DATA_PKL, at + 46, at + 46 + name_len) and \
                central.count(b"/", at + 46, at + 46 + name_len) == 1:
            member = (offset, compressed, method, uncompressed)
        if first is None or offset < first:
            first = offset
        if last is None or offset > last:
            last = offset
        count += 1
        at += 46 + name_len + extra_len + note_len
    if count != entries or at != len(central):
        return (f"a zip (torch.save) whose central directory holds {count} of its {entries} entries: "
                "cut off or overwritten"), None
    for offset in {first, last} if count else ():
        if file.at(offset, 4) != _ZIP_LOCAL:
            return "a zip (torch.save) whose entry has no local header: cut off or overwritten", None
    return None, member


def _zip64_sizes(extra, uncompressed, compressed, offset):
    """(uncompressed, compressed, local header offset) from a central entry's zip64 extra field."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack("<HH", extra[at:at + 4])
        if kind == 1:
            values = list(struct.unpack(f"<{length // 8}Q", extra[at + 4:at + 4 + length - length % 8]))
            # in order: uncompressed, compressed, offset, each only when its 32-bit field is 0xFFFFFFFF
            fields = []
            for value in (uncompressed, compressed, offset):
                fields.append(values.pop(0) if value == 0xFFFFFFFF and values else value)
            return tuple(fields)
        at += 4 + length
    return uncompressed, compressed, offset


def _json_cut_off(file, size):
    import json

    if size <= JSON_READ:
        try:
            json.loads(file.at(0, size + 1).decode("utf-8"))
        except ValueError as exc:
            return f"JSON that does not parse ({exc}): cut off mid-write"
        return None
    if not file.at(max(0, size - 64), 64).rstrip().endswith((b"}", b"]")):
        return "JSON that does not end in } or ]: cut off mid-write"
    return None


def _safetensors_cut_off(file, head, size):
    import json  # only here: most folders hold no safetensors

    if len(head) < 8:
        return "shorter than a safetensors header"
    length = int.from_bytes(head[:8], "little")
    if length > SMALL_READ or 8 + length > size:
        return f"a safetensors header of {length} bytes in a {size}-byte file: cut off"
    try:
        header = json.loads(file.at(8, length).decode("utf-8"))
        ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return "a safetensors header that does not parse"
    needed = 8 + length + max(ends, default=0)
    if size < needed:
        return f"safetensors holds {size} bytes, its header needs {needed}: cut off"
    return None
