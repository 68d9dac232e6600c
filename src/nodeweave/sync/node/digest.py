"""Content digests of a file set, with a stat-keyed cache; the same code on both ends.

Stdlib only and Python 3.6-compatible on purpose: the local side imports it,
and each target runs this module's own source ahead of ``agent.py``'s (the
receiving end), so source and targets hash with identical code. A cached digest is reused only while
size, mtime, ctime and inode all still match (what git's index trusts; ctime
cannot be set back by ``touch``) and never for files changed in the last two
seconds (git's "racily clean" rule).
"""

import hashlib
import json
import os
import time

RACY_S = 2.0


def _hash(path, st):
    import stat as _stat
    if _stat.S_ISLNK(st.st_mode):
        return "l:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    if not _stat.S_ISREG(st.st_mode):
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    # The owner's execute bit is part of what a sync must deliver (a script made
    # executable must not count as "already there").
    return ("x:" if st.st_mode & 0o100 else "") + h.hexdigest()


def load_cache(cache_path):
    try:
        with open(cache_path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_cache(cache_path, cache):
    tmp = "%s.%d.tmp" % (cache_path, os.getpid())
    try:
        text = json.dumps(cache)  # dumps is C-accelerated; dump (to a file) is pure Python, ten times slower
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, cache_path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def stat_key(st):
    """What must not change for a cached digest to stay true (what git's index trusts)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def digest_files(root, rels, cache_path=None, written=None):
    """{relpath: digest or None (missing)} for ``rels`` under ``root``, with the cache file kept."""
    cache = load_cache(cache_path) if cache_path else {}
    out, fresh = digest_with(root, rels, cache, written)
    if cache_path and fresh != cache:
        save_cache(cache_path, fresh)
    return out


def digest_with(root, rels, cache, written=None):
    """(digests, the cache to keep) for ``rels``, given the cache {relpath: stat key + [digest]}.

    ``written`` maps paths this process has just written to (stat key taken
    after its last write, digest of the bytes it wrote): they are trusted
    while that key holds and cached at once, though new - their digest does
    not come from a read a concurrent writer could have raced. A cache hit
    stays cached; a file hashed now is cached only once it is two seconds old.
    """
    written = written or {}
    fresh = {}
    out = {}
    now = time.time()
    for rel in rels:
        path = os.path.join(root, rel)
        try:
            st = os.lstat(path)
        except OSError:
            out[rel] = None
            continue
        key = stat_key(st)
        hit = cache.get(rel)
        mine = written.get(rel)
        if mine and mine[0] == key:
            out[rel] = mine[1]
            fresh[rel] = key + [mine[1]]
            continue
        if hit and hit[:4] == key:  # trusted when it was stored, so still trusted
            out[rel] = hit[4]
            fresh[rel] = hit
            continue
        try:
            out[rel] = _hash(path, st)
        except OSError:
            out[rel] = None
        if out[rel] is not None and now - max(st.st_mtime, st.st_ctime) > RACY_S:
            fresh[rel] = key + [out[rel]]
    return out, fresh


def quick_signature(kind, size, mtime, mode, link=None):
    """rsync's quick check as one string (size, whole-second mtime, owner's x bit); links by target."""
    if kind == "l":
        return "l:" + hashlib.sha256(os.fsencode(link or "")).hexdigest()
    return "q:%d:%d:%d" % (size, int(mtime), 1 if mode & 0o100 else 0)


def quick_files(root, rels):
    """{relpath: quick signature or None (missing)}: what ``--no-verify`` compares, no file read."""
    import stat as _stat
    out = {}
    for rel in rels:
        path = os.path.join(root, rel)
        try:
            st = os.lstat(path)
            link = os.readlink(path) if _stat.S_ISLNK(st.st_mode) else None
        except OSError:
            out[rel] = None
            continue
        if link is None and not _stat.S_ISREG(st.st_mode):
            out[rel] = None
            continue
        out[rel] = quick_signature("l" if link is not None else "f", st.st_size, st.st_mtime, st.st_mode, link)
    return out


def tree_digest(digests):
    """One hex digest over sorted (path, content digest) pairs."""
    h = hashlib.sha256()
    for rel in sorted(digests):
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + str(digests[rel]).encode() + b"\n")
    return h.hexdigest()
