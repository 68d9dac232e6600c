"""Content digests of a file set, with a stat-keyed cache; the same code on both ends.

Stdlib only and Python 3.6-compatible on purpose: the local side imports it,
and the consistency check sends this module's own source to each target as
``python3 -c SOURCE DEST CACHE STAMP`` (expected digests on stdin), so source
and targets hash with identical code. A cached digest is reused only while
size, mtime, ctime and inode all still match (what git's index trusts; ctime
cannot be set back by ``touch``) and never for files changed in the last two
seconds (git's "racily clean" rule).
"""

import hashlib
import json
import os
import sys
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


def _load(cache_path):
    try:
        with open(cache_path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(cache_path, cache):
    tmp = "%s.%d.tmp" % (cache_path, os.getpid())
    try:
        with open(tmp, "w") as f:
            json.dump(cache, f)
        os.replace(tmp, cache_path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def digest_files(root, rels, cache_path=None):
    """{relpath: digest or None (missing)} for ``rels`` under ``root``."""
    cache = _load(cache_path) if cache_path else {}
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
        key = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        hit = cache.get(rel)
        if hit and hit[:4] == key:
            out[rel] = hit[4]
        else:
            try:
                out[rel] = _hash(path, st)
            except OSError:
                out[rel] = None
        if out[rel] is not None and now - max(st.st_mtime, st.st_ctime) > RACY_S:
            fresh[rel] = key + [out[rel]]
    if cache_path and fresh != cache:
        _save(cache_path, fresh)
    return out


def tree_digest(digests):
    """One hex digest over sorted (path, content digest) pairs."""
    h = hashlib.sha256()
    for rel in sorted(digests):
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + str(digests[rel]).encode() + b"\n")
    return h.hexdigest()


def probe_here(root, tools):
    """Make ``root`` and say which of ``tools`` exist: the sync's probe, folded into this exec."""
    import shutil
    try:
        os.makedirs(root, exist_ok=True)
    except OSError:
        pass
    return {"tools": [t for t in tools if shutil.which(t)],
            "dest_ok": os.path.isdir(root) and os.access(root, os.W_OK)}


def check_remote(root, cache_name, stamp_text, expected):
    """Digest ``expected``'s paths here; write the stamp only when all match; read it back."""
    digests = digest_files(root, sorted(expected), os.path.join(root, cache_name))
    mismatched = dict((rel, digests.get(rel)) for rel in expected if digests.get(rel) != expected[rel])
    stamp_path = os.path.join(root, ".nodeweave-sync.json")
    if stamp_text and not mismatched:
        tmp = stamp_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(stamp_text)
        os.replace(tmp, stamp_path)
    try:
        with open(stamp_path) as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        stamp = None
    return {"mismatched": mismatched, "stamp": stamp}


def main(argv):
    """argv: DEST CACHE-NAME STAMP-JSON-or-empty [TOOL...] (tools: also probe, first)."""
    root, cache_name, stamp_text, tools = argv[0], argv[1], argv[2], argv[3:]
    expected = json.loads(sys.stdin.buffer.read().decode("utf-8", "surrogateescape"))
    probed = probe_here(root, tools) if tools else {}
    answer = check_remote(root, cache_name, stamp_text, expected)
    answer.update(probed)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
