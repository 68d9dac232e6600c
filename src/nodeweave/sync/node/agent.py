"""The receiving end of a sync: one exec per target says what differs, takes a payload, checks it.

Runs on the target as ``python3 -I -S -c PROGRAM DEST``, PROGRAM being
``digest.py``, ``untar.py``, ``peer.py``, ``resident.py``, ``tunnel.py`` and
this (``session.AGENT_PROGRAM``); the same session also runs in a resident's
child and as the head's own channel of a tunnel (``DEST tunnel``):
stdlib only and Python 3.6-compatible, so any image with a python3
receives. One session: a request line (the source's signature of every
path, the stamp) -> an answer (the paths whose content differs here, from
the stat-keyed cache; missing directories; extras for --delete; with relay,
a listener's port and addresses). A target that already holds everything
is stamped right there: one round trip. Otherwise -> a plan line (deletions;
with relay, the next target(s) to forward to and this hop's token) -> the
payload (plain tar) from stdin or from the upstream target, forwarded as it
is read -> every path checked against the source's signatures (files
written by the hash made while writing, the rest by this session's digest,
each while its ``lstat`` holds); the stamp written only when all match ->
a result line. docs/sync.md walks through it.
"""

import json
import os
import sys
import threading
import time

try:  # in the program sent to a target this source follows the modules it uses
    digest_with  # noqa: B018
except NameError:
    from nodeweave.sync.node.digest import digest_with, load_cache, quick_files, save_cache
    from nodeweave.sync.node.peer import ACCEPT_S, Listener, Tee, connect
    from nodeweave.sync.node.resident import ensure
    from nodeweave.sync.node.tunnel import serve_tunnel
    from nodeweave.sync.node.untar import receive, stale_temps

STAMP_NAME = ".nodeweave-sync.json"
CACHE_NAME = ".nodeweave-sync.cache"
TOOLS = ("rsync", "tar", "find", "sha256sum")
MAX_LINE = 256 << 20  # a request, plan or go line longer than this is refused


def _send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _read_line(stream):
    line = stream.readline(MAX_LINE + 1)
    if not line:
        raise SystemExit(3)  # the source went away
    if len(line) > MAX_LINE:
        raise SystemExit("a line from the source is longer than %d bytes" % MAX_LINE)
    return json.loads(line.decode("utf-8", "surrogateescape"))


def _read_stamp(root):
    try:
        with open(os.path.join(root, STAMP_NAME)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _extras(root, wanted, dirs):
    """Everything under ``root`` that is not in the source's file set (``--delete`` decides).

    The stamp and the digest cache at the top are always kept, so never listed.
    """
    found = []
    for here, subdirs, files in os.walk(root):
        rel_here = os.path.relpath(here, root)
        prefix = "" if rel_here == "." else rel_here + "/"
        for name in subdirs:
            if prefix + name not in dirs:
                found.append([prefix + name, True])
        for name in files:
            if prefix + name not in wanted and (prefix or name not in (STAMP_NAME, CACHE_NAME)):
                found.append([prefix + name, False])
    return found


def dest_why(root):
    """Why ``root`` cannot be made or written here, as a person fixes it: the nearest folder that is there (itself,
    or the parent that refused the mkdir), its owner and mode, and the user this runs as (walk12 C5: `sync data
    /opt/data` said only "cannot create or write"; /opt is root's, the image's user uid 1000)."""
    import pwd

    def who(uid):
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        return "uid %d" % uid if name == str(uid) else "%s (uid %d)" % (name, uid)

    here = root
    while not os.path.exists(here) and os.path.dirname(here) != here:
        here = os.path.dirname(here)
    try:
        held = os.stat(here)
    except OSError as err:
        return "%s cannot be read (%s)" % (here, err.strerror)
    kind = "a folder" if os.path.isdir(here) else "a file, not a folder,"
    return "%s is %s of %s, mode %o, and the sync runs as %s" % (
        here, kind, who(held.st_uid), held.st_mode & 0o7777, who(os.getuid()))


def manifest(root, request, cache):
    """Step 1: make DEST, then say which of the source's paths differ here (``cache`` is kept current)."""
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
    if not answer["dest_ok"]:
        answer["dest_why"] = dest_why(root)
    sigs, dirs = request["sigs"], request["dirs"]
    stale = stale_temps(root, sigs) if exists else []
    if stale and request.get("then") == "plan" and not dry:  # an interrupted sync's half-received files: removed
        for rel in stale:
            try:
                os.unlink(os.path.join(root, rel))
            except OSError:
                pass
    elif stale:  # a dry run or --check writes nothing there: names them
        answer["leftovers"] = stale
    held = dict.fromkeys(sigs)
    if exists and request.get("quick"):
        held = quick_files(root, sigs)
    elif exists:
        held, kept = digest_with(root, sigs, cache)
        cache.clear()
        cache.update(kept)
    answer["differ"] = dict((rel, held[rel]) for rel, sig in sigs.items() if held[rel] != sig)
    answer["missing_dirs"] = [d for d in dirs if not (exists and os.path.isdir(os.path.join(root, d)))]
    if request.get("extras") and exists:
        answer["extras"] = _extras(root, sigs, set(dirs))
    answer["stamp"] = _read_stamp(root) if exists else None
    keep = request.get("keep")
    if keep and not dry:
        answer["resident"] = _resident(keep)
    return answer


def _resident(keep):
    """This node's resident agent (``resident.py``), started if none runs; None where it cannot be."""
    try:
        return ensure(str(keep["program"]), float(keep["idle"]), session)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _delete(root, files, dirs, errors):
    if (files or dirs) and os.path.ismount(root):  # a file system's root: other users' data (walk6, W36)
        errors.append("%s is a mount point: --delete removed nothing there (sync into a folder inside it)" % root)
        return
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


def check(root, sigs, written, cache):
    """Step 3b: paths whose content is not what the source has (hashes of this session reused)."""
    digests, kept = digest_with(root, sigs, cache, written=written)
    cache.clear()
    cache.update(kept)
    return dict((rel, digests[rel]) for rel, sig in sigs.items() if digests[rel] != sig)


def _write_stamp(root, text):
    path = os.path.join(root, STAMP_NAME)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _relay_input(relay, stdin, listener):
    """Connect to the next target(s), tell the source how it went, then read where the payload comes from.

    Returns (stream, forwarded connections). A forwarder reports its hops;
    then the source's ``go`` line is the
    only word on the input: ``peer`` once the upstream's handshake is done,
    ``stdin`` when the upstream could not connect (the source then streams here).
    """
    accepted, waiter = {}, None
    if relay.get("accept") and listener is not None:
        deadline = time.time() + ACCEPT_S

        def wait():
            try:
                accepted["conn"] = listener.accept(relay["accept"], deadline)
            except OSError as err:
                accepted["error"] = str(err)
        waiter = threading.Thread(target=wait)
        waiter.daemon = True
        waiter.start()
    elif listener is not None:
        listener.close()
    conns, hops = [], []
    for hop in relay.get("forward", []):
        try:
            conns.append(connect(hop))
            hops.append({"ok": True})
        except OSError as err:
            hops.append({"ok": False, "error": str(err)})
    if hops:  # a forwarder's report, read by the source before it says where anyone's payload comes from
        _send({"hops": hops})
    go = _read_line(stdin).get("go")
    if go == "peer" and waiter is not None:
        waiter.join(ACCEPT_S)
        if "conn" not in accepted:
            raise OSError("the upstream target never connected: %s" % accepted.get("error", "still waiting"))
        return accepted["conn"].makefile("rb"), conns
    if listener is not None:
        listener.close()
    if "conn" in accepted:
        accepted["conn"].close()
    return stdin, conns


def _take_payload(root, plan, stdin, listener, written, result):
    """Step 3a: receive the payload (forwarding it when the plan says so) into ``written``."""
    tee = None
    try:
        stream = stdin
        if plan.get("relay"):
            stream, conns = _relay_input(plan["relay"], stdin, listener)
            tee = Tee(stream, conns)
        result["files"], result["bytes"], errors = receive(root, tee or stream, written)
        result["errors"] += errors
    except (OSError, ValueError, EOFError) as err:
        result["errors"].append("the payload was cut: %s" % (err or "timed out"))
        result["cut"] = True
    finally:
        if tee is not None:
            result["forwarded"] = tee.close()
        if listener is not None:
            listener.close()


def _up_to_date(request, answer):
    return (request.get("then") == "plan" and answer["dest_ok"] and not answer["dest_absent"]
            and not answer["differ"] and not answer["missing_dirs"] and not answer.get("extras"))


def session(root, stdin):
    cache_path = os.path.join(root, CACHE_NAME)
    stored = load_cache(cache_path)
    cache = dict(stored)  # one load and at most one save per session
    request = _read_line(stdin)
    answer = manifest(root, request, cache)
    quick = request.get("quick")  # --no-verify: nothing hashed, nothing stamped
    listener = None
    if _up_to_date(request, answer):  # everything here already: stamp now, one round trip
        if request.get("stamp") and not quick:
            _write_stamp(root, request["stamp"])
        answer.update(done=True, mismatched={}, stamp=_read_stamp(root))
    elif request.get("relay") and request.get("then") == "plan":
        try:
            listener = Listener()
            answer["listen"] = listener.info()
        except (OSError, ValueError) as err:  # a bad NODEWEAVE_SYNC_BIND is named; the payload comes plain
            answer["listen_error"] = str(err)
            listener = None
    _send(answer)
    if answer.get("done") or request.get("then") != "plan":
        _keep(cache_path, stored, cache)
        return _drain(stdin)
    plan = _read_line(stdin)
    written = {}
    result = {"files": 0, "bytes": 0, "errors": []}
    if plan.get("receive"):
        _take_payload(root, plan, stdin, listener, written, result)
    elif listener is not None:
        listener.close()
    _delete(root, plan.get("delete", []), plan.get("rmdirs", []), result["errors"])
    result["mismatched"] = {} if quick else check(root, request["sigs"], written, cache)
    _keep(cache_path, stored, cache)
    if request.get("stamp") and not quick and not result["mismatched"] and not result["errors"]:
        _write_stamp(root, request["stamp"])
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


def _exit_on(signum, frame):
    """SIGTERM or SIGHUP (the exec's client gone) ends the session as SIGINT does: through every ``finally`` and
    ``_place``'s cleanup, so no half-received file is left (walk17 A29)."""
    sys.exit(128 + signum)


if __name__ == "__main__":
    import signal

    for _name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, _name), _exit_on)
    if sys.argv[2:3] == ["tunnel"]:
        serve_tunnel(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer, session)
    else:
        session(sys.argv[1], sys.stdin.buffer)
