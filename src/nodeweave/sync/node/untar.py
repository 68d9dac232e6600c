"""The payload's reader on a target: plain tar (ustar and PAX) into DEST, each file hashed as written.

Part of the program a target runs (``session.AGENT_PROGRAM``: ``digest.py``,
this, ``peer.py``, ``agent.py``), so stdlib only and Python 3.6-compatible.
Reads half of what ``tarfile`` costs: headers parsed directly, file data
copied in 1 MiB blocks. Each file is written beside its place and renamed
in (a reader never sees half a file); its digest comes from the bytes
written. PAX extended headers are bounded (``PAX_MAX``): a stream is never
trusted to say how much memory to use.
"""

import errno
import hashlib
import os
import re

try:  # in the program sent to a target this source follows digest.py's, which defines these
    stat_key  # noqa: B018
except NameError:
    from nodeweave.sync.node.digest import stat_key

PAX_MAX = 1 << 20  # a PAX header longer than this is refused (names and link targets fit easily)
TEMP_NAME = re.compile(r"^\.nwsync-(\d+)-\d+\.tmp$")  # _place's file beside its place, until renamed in


def _safe(rel):
    parts = rel.split("/")
    return rel and not rel.startswith("/") and ".." not in parts and "" not in parts


class _Member(object):
    """One entry of the payload: what its (ustar or PAX) header says, and how much is left to read."""

    __slots__ = ("name", "kind", "mode", "size", "mtime", "link", "left")


def _exact(stream, size):
    """Exactly ``size`` bytes from the stream (a short read means the source went away)."""
    parts, left = [], size
    while left > 0:
        part = stream.read(min(left, 1 << 20))
        if not part:
            raise EOFError("the payload ended early")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _text(raw):
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _number(raw):
    raw = raw.split(b"\0", 1)[0].strip()
    return int(raw, 8) if raw else 0


def _pax(data):
    """{key: value} of a PAX extended header's ``LEN key=value\\n`` records."""
    records = {}
    while data:
        space = data.index(b" ")
        length = int(data[:space])
        key, _, value = data[space + 1:length - 1].partition(b"=")
        records[key.decode("ascii")] = value.decode("utf-8", "surrogateescape")
        data = data[length:]
    return records


def _parse(header, pax):
    if _number(header[148:156]) != sum(header[:148]) + 256 + sum(header[156:]):
        raise ValueError("the payload is not a tar stream (bad header checksum)")
    m = _Member()
    prefix, name = _text(header[345:500]), _text(header[0:100])
    m.name = (pax.get("path") or (prefix + "/" + name if prefix else name)).rstrip("/")
    m.kind = header[156:157].decode("ascii").replace("\0", "0") or "0"
    m.mode, m.size = _number(header[100:108]), int(pax.get("size") or _number(header[124:136]))
    m.mtime = int(float(pax.get("mtime") or _number(header[136:148])))
    m.link = pax.get("linkpath") or _text(header[157:257])
    m.left = m.size
    return m


def _members(stream):
    """The payload's entries in order; whatever a consumer leaves unread is skipped."""
    pax = {}
    while True:
        header = _exact(stream, 512)
        if not header.strip(b"\0"):
            return  # the end-of-archive blocks
        m = _parse(header, pax)
        pad = -m.size % 512
        if m.kind in ("x", "g"):
            if m.size > PAX_MAX:
                raise ValueError("a PAX header of %d bytes (more than %d) is refused" % (m.size, PAX_MAX))
            data = _exact(stream, m.size + pad)[:m.size]
            pax = _pax(data) if m.kind == "x" else {}
            continue
        pax = {}
        yield m
        left = m.left + pad
        while left > 0:
            left -= len(_exact(stream, min(left, 1 << 20)))


def _place(root, member, stream, counter, made):
    """Write one member beside its place and rename it in; its digest from the bytes written."""
    path = os.path.join(root, member.name)
    if member.kind == "5":
        if not os.path.isdir(path):
            os.makedirs(path)
            os.chmod(path, member.mode & 0o7777)
        made.add(path)
        return None
    if member.kind not in ("0", "2"):
        raise OSError("only files, symlinks and directories are synced (tar type %r)" % member.kind)
    parent = os.path.dirname(path)
    if parent not in made:
        os.makedirs(parent, exist_ok=True)
        made.add(parent)
    tmp = os.path.join(parent, ".nwsync-%d-%d.tmp" % (os.getpid(), counter))
    try:  # a payload cut (EOFError), an interrupt or a refused rename leaves no half-received file (walk17 A29)
        if member.kind == "2":
            os.symlink(member.link, tmp)
            digest = "l:" + hashlib.sha256(os.fsencode(member.link)).hexdigest()
        else:
            h = hashlib.sha256()
            with open(tmp, "wb") as f:
                while member.left > 0:
                    block = _exact(stream, min(member.left, 1 << 20))
                    member.left -= len(block)
                    h.update(block)
                    f.write(block)
                os.fchmod(f.fileno(), member.mode & 0o7777)
                f.flush()
                os.utime(f.fileno(), (member.mtime, member.mtime))
            digest = ("x:" if member.mode & 0o100 else "") + h.hexdigest()
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    return digest


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: there
    return True


def stale_temps(root, rels):
    """The temporary files (relative paths) a sync of ``root`` killed mid-file left (its agent is gone: SIGKILL, a
    node restart) in the folders of the source's files ``rels``, where ``_place`` writes them (walk17 A29)."""
    found = []
    for folder in sorted(set(os.path.dirname(rel) for rel in rels) | {""}):
        try:
            names = os.listdir(os.path.join(root, folder))
        except OSError:
            continue
        for name in names:
            match = TEMP_NAME.match(name)
            if match and int(match.group(1)) != os.getpid() and not _alive(int(match.group(1))):
                found.append(folder + "/" + name if folder else name)
    return found


def cannot_write(err):
    """Why a file could not be written, as a person fixes it: who the sync runs as, where permission is denied
    (walk15a A21: "[Errno 13] Permission denied: '.nwsync-7-3.tmp'" named a temporary file and no user)."""
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied for uid %d" % os.getuid()
    return err.strerror or str(err)


def receive(root, stream, written):
    """Step 3a: unpack the payload; ``written`` gains {rel: (stat key, digest)} of each file placed."""
    files, size, errors, made = 0, 0, [], set()
    for counter, member in enumerate(_members(stream)):
        if not _safe(member.name):
            errors.append("%s: refused (absolute or '..' path)" % member.name)
            continue
        try:
            digest = _place(root, member, stream, counter, made)
        except OSError as err:
            errors.append("cannot write %s: %s" % (os.path.join(root, member.name), cannot_write(err)))
            continue
        if digest is not None:
            written[member.name] = (stat_key(os.lstat(os.path.join(root, member.name))), digest)
            files += member.kind == "0"
            size += member.size if member.kind == "0" else 0
    return files, size, errors
