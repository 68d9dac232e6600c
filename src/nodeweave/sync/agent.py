"""The receiving end of a sync: one exec per target says what it holds, takes a payload, checks it.

Runs on the target as ``python3 -c DIGEST_SOURCE+AGENT_SOURCE DEST`` (see
``nodeweave.sync.session``): stdlib only and Python 3.6-compatible, so any
image with a python3 can receive. One session is one exec, three steps:

1. request (a JSON line on stdin): the source's paths and directories;
   the agent makes DEST (unless a dry run) and answers (a JSON line) with
   its tools, the content digest of every path it holds (its stat-keyed
   cache makes an unchanged tree cost one ``lstat`` per file), the source
   directories it lacks, what else DEST holds (``--delete`` only) and the
   stamp.
2. plan (a JSON line): what to delete, the digests expected of the files
   that will arrive, the stamp text; then, when the source has files to
   send, a tar stream - the same bytes for every target of a group.
3. the agent writes each file beside its place and renames it in (as rsync
   does), hashing the bytes as it writes them, deletes, then checks every
   path of the file set against what the source expects - files it wrote by
   the hash it made while writing them, others by the digest it reported in
   step 1, both only while their ``lstat`` is unchanged - and writes the
   stamp only when everything matches. It answers with what it did.
"""

import hashlib
import json
import os
import sys
import tarfile

try:  # in the program sent to a target this source follows digest.py's, which defines these
    digest_files  # noqa: B018
except NameError:
    from nodeweave.sync.digest import digest_files, quick_files, stat_key

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
    """Step 1: make DEST, then say what it holds of the source's paths."""
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
    signatures = quick_files if request.get("quick") else (lambda r, p: digest_files(r, p, cache))
    held = signatures(root, paths) if exists else {}
    answer["have"] = dict((rel, d) for rel, d in held.items() if d is not None)
    answer["missing_dirs"] = [d for d in dirs if not (exists and os.path.isdir(os.path.join(root, d)))]
    if request.get("extras") and exists:
        answer["extras"] = _extras(root, set(paths), set(dirs))
    answer["stamp"] = _read_stamp(root) if exists else None
    return answer


def _safe(rel):
    parts = rel.split("/")
    return rel and not rel.startswith("/") and ".." not in parts and "" not in parts


def _place(root, member, tar, counter):
    """Write one member beside its place and rename it in; its digest from the bytes written."""
    path = os.path.join(root, member.name)
    if member.isdir():
        if not os.path.isdir(path):
            os.makedirs(path)
            os.chmod(path, member.mode & 0o7777)
        return None
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, ".nwsync-%d-%d.tmp" % (os.getpid(), counter))
    if member.issym():
        os.symlink(member.linkname, tmp)
        digest = "l:" + hashlib.sha256(os.fsencode(member.linkname)).hexdigest()
    elif member.isfile():
        source, h = tar.extractfile(member), hashlib.sha256()
        with open(tmp, "wb") as f:
            for block in iter(lambda: source.read(1 << 20), b""):
                h.update(block)
                f.write(block)
            os.fchmod(f.fileno(), member.mode & 0o7777)
        os.utime(tmp, (member.mtime, member.mtime))
        digest = ("x:" if member.mode & 0o100 else "") + h.hexdigest()
    else:
        raise OSError("%s: only files, symlinks and directories are synced" % member.name)
    try:
        os.replace(tmp, path)
    except OSError:
        os.unlink(tmp)
        raise
    return digest


def receive(root, stream, written):
    """Step 3a: unpack the tar stream; ``written`` gains {rel: (stat key, digest)} of each file placed."""
    files, size, errors = 0, 0, []
    tar = tarfile.open(fileobj=stream, mode="r|", bufsize=1 << 20)
    for counter, member in enumerate(tar):
        if not _safe(member.name):
            errors.append("%s: refused (absolute or '..' path)" % member.name)
            continue
        try:
            digest = _place(root, member, tar, counter)
        except OSError as err:
            errors.append("%s: %s" % (member.name, err))
            continue
        if digest is not None:
            written[member.name] = (stat_key(os.lstat(os.path.join(root, member.name))), digest)
            files += member.isfile()
            size += member.size if member.isfile() else 0
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


def check(root, paths, expect, written, cache_path):
    """Step 3b: paths whose content is not what the source expects (hashes of this session reused)."""
    digests = digest_files(root, paths, cache_path, written=written)
    return dict((rel, digests[rel]) for rel in paths if rel not in expect or digests[rel] != expect[rel])


def _write_stamp(root, text):
    path = os.path.join(root, STAMP_NAME)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def session(root, stdin):
    cache_path = os.path.join(root, CACHE_NAME)
    request = _read_line(stdin)
    answer = manifest(root, request, cache_path)
    _send(answer)
    if request.get("then") != "plan":
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
    result["mismatched"] = {} if quick else check(root, request["paths"], expect, written, cache_path)
    if plan.get("stamp") and not result["mismatched"] and not result["errors"]:
        _write_stamp(root, plan["stamp"])
    result["stamp"] = _read_stamp(root)
    _send(result)
    _drain(stdin)


def _drain(stdin):
    """Exit only after the source's EOF (podman 4.3's exec can drop output otherwise)."""
    while stdin.read(1 << 16):
        pass


if __name__ == "__main__":
    session(sys.argv[1], sys.stdin.buffer)
