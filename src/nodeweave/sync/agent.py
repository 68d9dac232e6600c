"""The receiving end of a sync: one exec per target says what it holds, takes a payload, checks it.

Runs on the target as ``python3 -I -S -c DIGEST_SOURCE+AGENT_SOURCE DEST``
(``nodeweave.sync.session``): stdlib only and Python 3.6-compatible, so any
image with a python3 receives. One session: a request line (the source's
paths) -> a manifest line (tools, the digest of every path held, from the
stat-keyed cache; missing directories; extras for --delete; the stamp) -> a
plan line and, when there is something to send, the payload (plain tar) ->
each file written beside its place and renamed in, hashed as it is written;
deletions; every path checked against the source (files written by the hash
made while writing, the rest by their manifest digest, each while its
``lstat`` holds); the stamp written only when all match -> a result line.
docs/sync.md walks through it.
"""

import hashlib
import json
import os
import sys

try:  # in the program sent to a target this source follows digest.py's, which defines these
    digest_with  # noqa: B018
except NameError:
    from nodeweave.sync.digest import digest_with, load_cache, quick_files, save_cache, stat_key

STAMP_NAME = ".nodeweave-sync.json"
CACHE_NAME = ".nodeweave-sync.cache"
TOOLS = ("rsync", "tar", "find", "sha256sum")


def _send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _read_line(stream):
    line = stream.readline()
    if not line:
        raise SystemExit(3)  # the source went away
    return json.loads(line.decode("utf-8", "surrogateescape"))


def _read_stamp(root):
    try:
        with open(os.path.join(root, STAMP_NAME)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _extras(root, wanted, dirs):
    """Everything under ``root`` that is not in the source's file set (``--delete`` decides)."""
    found = []
    for here, subdirs, files in os.walk(root):
        rel_here = os.path.relpath(here, root)
        prefix = "" if rel_here == "." else rel_here + "/"
        for name in subdirs:
            if prefix + name not in dirs:
                found.append([prefix + name, True])
        for name in files:
            if prefix + name not in wanted:
                found.append([prefix + name, False])
    return found


def manifest(root, request, cache):
    """Step 1: make DEST, then say what it holds of the source's paths (``cache`` is kept current)."""
    import shutil
    dry = request.get("dry")
    if not (dry and not os.path.exists(root)):
        try:
            os.makedirs(root, exist_ok=True)
        except OSError:
            pass
    exists = os.path.isdir(root)
    answer = {"tools": [t for t in TOOLS if shutil.which(t)], "dest_absent": not exists,
              "dest_ok": (exists and os.access(root, os.W_OK)) or (dry and not exists)}
    paths, dirs = request["paths"], request["dirs"]
    held = {}
    if exists and request.get("quick"):
        held = quick_files(root, paths)
    elif exists:
        held, kept = digest_with(root, paths, cache)
        cache.clear()
        cache.update(kept)
    answer["have"] = dict((rel, d) for rel, d in held.items() if d is not None)
    answer["missing_dirs"] = [d for d in dirs if not (exists and os.path.isdir(os.path.join(root, d)))]
    if request.get("extras") and exists:
        answer["extras"] = _extras(root, set(paths), set(dirs))
    answer["stamp"] = _read_stamp(root) if exists else None
    return answer


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
    try:
        os.replace(tmp, path)
    except OSError:
        os.unlink(tmp)
        raise
    return digest


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
            errors.append("%s: %s" % (member.name, err))
            continue
        if digest is not None:
            written[member.name] = (stat_key(os.lstat(os.path.join(root, member.name))), digest)
            files += member.kind == "0"
            size += member.size if member.kind == "0" else 0
    return files, size, errors


def _delete(root, files, dirs, errors):
    for rel in files:
        try:
            os.unlink(os.path.join(root, rel))
        except FileNotFoundError:
            pass
        except OSError as err:
            errors.append("%s: %s" % (rel, err))
    for rel in dirs:  # deepest first; a directory still holding protected files stays
        try:
            os.rmdir(os.path.join(root, rel))
        except OSError:
            pass


def check(root, paths, expect, written, cache):
    """Step 3b: paths whose content is not what the source expects (hashes of this session reused)."""
    digests, kept = digest_with(root, paths, cache, written=written)
    cache.clear()
    cache.update(kept)
    return dict((rel, digests[rel]) for rel in paths if rel not in expect or digests[rel] != expect[rel])


def _write_stamp(root, text):
    path = os.path.join(root, STAMP_NAME)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def session(root, stdin):
    cache_path = os.path.join(root, CACHE_NAME)
    stored = load_cache(cache_path)
    cache = dict(stored)  # one load and at most one save per session
    request = _read_line(stdin)
    answer = manifest(root, request, cache)
    _send(answer)
    if request.get("then") != "plan":
        _keep(cache_path, stored, cache)
        return _drain(stdin)
    plan = _read_line(stdin)
    written = {}
    result = {"files": 0, "bytes": 0, "errors": []}
    if plan.get("receive"):
        result["files"], result["bytes"], result["errors"] = receive(root, stdin, written)
    _delete(root, plan.get("delete", []), plan.get("rmdirs", []), result["errors"])
    expect = dict(answer["have"])
    expect.update(plan.get("expect", {}))
    quick = request.get("quick")  # --no-verify: nothing hashed, nothing stamped
    result["mismatched"] = {} if quick else check(root, request["paths"], expect, written, cache)
    _keep(cache_path, stored, cache)
    if plan.get("stamp") and not result["mismatched"] and not result["errors"]:
        _write_stamp(root, plan["stamp"])
    result["stamp"] = _read_stamp(root)
    _send(result)
    _drain(stdin)


def _keep(cache_path, stored, cache):
    if cache != stored and os.path.isdir(os.path.dirname(cache_path)):
        save_cache(cache_path, cache)


def _drain(stdin):
    """Exit only after the source's EOF (podman 4.3's exec can drop output otherwise)."""
    while stdin.read(1 << 16):
        pass


if __name__ == "__main__":
    session(sys.argv[1], sys.stdin.buffer)
