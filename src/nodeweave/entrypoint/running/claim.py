"""One job at a time over a checkpoint folder: node 0's claim on its ``checkpoint_dir`` (walk8 B25).

Node 0 hands a fault's next generation the newest complete save written after the job started: a save another
job writes into the same folder meanwhile (two sweep points started together, a re-run while the old run still
goes) passes that time line, and the ranks would load weights this job never trained. So node 0 of a job with
recovery on writes ``<checkpoint_dir>/.nodeweave-claim`` (its job, run, host and pid, as JSON) before it opens its
exchange and rewrites it every few seconds while the job lives; a second job's node 0 finding a claim that is
fresh and not its own refuses its start (exit 3) naming the first. A claim not rewritten for :data:`FRESH_S` is a
job that ended or died: taken over. Node 0 started again in its own job (a container restarted: same job, same
host, and the pid that wrote the claim no longer runs there, or is this very process) goes on.

The file is node 0's own and removed when it exits; the saves' finder passes over every dot file.
"""

import json
import os
import socket
import threading
import time

from ..errors import EXIT_TOPOLOGY, EntrypointError

NAME = ".nodeweave-claim"
REFRESH_S = 5.0
FRESH_S = 30.0  # six refreshes missed: the job that wrote it is gone


def take(folder, job, run_id, log):
    """Claim ``folder`` for this job (None: no folder, nothing to claim); raises EntrypointError (exit 3) when
    another job's node 0 holds it now. The claim is kept fresh by a daemon thread until this process exits."""
    if not folder:
        return None
    path = os.path.join(folder, NAME)
    mine = _mine(job, run_id)
    refused = refusal(folder, job, run_id)
    if refused is not None:
        raise refused
    try:
        os.makedirs(folder, exist_ok=True)
        in_the_way = _in_the_way(path)  # the user's: never written over, nor removed at exit
        if in_the_way is None:
            _write(path, mine)
    except OSError as err:
        in_the_way = _in_the_way(path) or err.strerror or str(err)
    if in_the_way is not None:
        log(f"warning: cannot claim checkpoint_dir {folder} ({in_the_way}): a second job started over "
            "the same folder would not be refused")
        return None
    claim = Claim(path, mine)
    threading.Thread(target=claim.keep, name="nodeweave-claim", daemon=True).start()
    import atexit

    atexit.register(claim.release)
    return claim


def _in_the_way(path):
    """What lies where nodeweave's claim file goes when it is no file (walk14b B13: a folder there, a restored
    backup or a `mkdir -p` typo, was said as 'Is a directory'; a link or a pipe would have been written over and
    removed at exit), naming it and what to do; None when nothing or a file is there. The user's: left alone."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    what = ("a folder" if stat.S_ISDIR(mode) else "a link" if stat.S_ISLNK(mode)
            else "a device, a pipe or a socket")
    return f"{path} is {what}, not nodeweave's claim file: remove it{' (rm -r)' if stat.S_ISDIR(mode) else ''}"


def _mine(job, run_id):
    return {"job": job, "run": run_id or None, "host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}


def refusal(folder, job, run_id):
    """The refusal (exit 3) of a start over ``folder`` while another job's node 0 holds it now, or None: read only,
    so ``--explain`` says what the start would refuse (walk9 B14: the plan said "none complete yet" of a folder
    another job trained into) and :func:`take` refuses by the same words."""
    if not folder:
        return None
    path = os.path.join(folder, NAME)
    held = _read(path)
    if held is None or not _someone_else(held, _mine(job, run_id)):
        return _nested_refusal(folder, job, run_id)
    age = max(0.0, time.time() - held["written"])
    run = f", run {held['run']}" if held.get("run") else ""
    if held.get("job") == job:  # walk16b B8: the running job's own claim is no other job's
        return EntrypointError(
            f"checkpoint_dir {folder} is claimed by this job itself: {runs_now(held)}, its claim {path} rewritten "
            f"{age:.0f} s ago; a start of node 0 here now is a second node 0 of it (two nodes claim rank 0): stop "
            "one first; a second job of the same name wants a NODEWEAVE_JOB_ID and a folder of its own", EXIT_TOPOLOGY)
    return EntrypointError(
        f"checkpoint_dir {folder} is in use by another job now: job {held.get('job')!r}{run}, node 0 on "
        f"{held.get('host')} (pid {held.get('pid')}), its claim {path} rewritten {age:.0f} s ago; two jobs over "
        "one folder would resume from each other's saves (weights this job never trained): give each run its "
        "own folder (e.g. checkpoints/<run id>), or wait for that job to end", EXIT_TOPOLOGY)


def _nested_refusal(folder, job, run_id):
    """The refusal (exit 3) of a start over ``folder`` while a folder above it, or one below it that node 0's scan
    reads, is claimed by another job's node 0 now, or None (walk17b B19: a job over ``ckcl/sub`` started beside
    one over ``ckcl``, and the first job's node 0 handed out the second's saves)."""
    mine = _mine(job, run_id)
    for other, relation in _nested(folder):
        held = _read(os.path.join(other, NAME))
        if held is None or not _someone_else(held, mine):
            continue
        age = max(0.0, time.time() - held["written"])
        run = f", run {held['run']}" if held.get("run") else ""
        who = (f"job {held.get('job')!r}{run}, node 0 on {held.get('host')} (pid {held.get('pid')}), its claim "
               f"{os.path.join(other, NAME)} rewritten {age:.0f} s ago")
        scanned = ("that job's node 0 scans its folder's subfolders for saves and would hand out this job's"
                   if relation == "is inside" else
                   "this job's node 0 scans its folder's subfolders for saves and would hand out that job's")
        return EntrypointError(
            f"checkpoint_dir {folder} {relation} {other}, which is in use by another job now: {who}; {scanned} "
            "(weights the other never trained): give each run its own folder beside the other's, never inside it "
            "(e.g. checkpoints/<run id>), or wait for that job to end", EXIT_TOPOLOGY)
    return None


def _nested(folder):
    """(folder, 'is inside' or 'holds') for every folder above ``folder`` (as written and where its links lead)
    and every folder below it as deep as node 0's scan looks (``recovery.checkpoints.SEARCH_DEPTH``, at most
    ``SEARCH_FOLDERS`` of them, through no link and no dot folder): the claims that meet this one's saves."""
    from ..ownfolders import SEARCH_DEPTH, SEARCH_FOLDERS

    seen, found = set(), []
    for start in (os.path.abspath(folder), os.path.realpath(folder)):
        above = os.path.dirname(start)
        while above not in seen:
            seen.add(above)
            found.append((above, "is inside"))
            if os.path.dirname(above) == above:
                break
            above = os.path.dirname(above)
    level, count = [folder], 0
    for _ in range(SEARCH_DEPTH):
        deeper = []
        for here in level:
            try:
                with os.scandir(here) as entries:
                    names = sorted(e.name for e in entries if not e.name.startswith(".")
                                   and e.is_dir(follow_symlinks=False))
            except OSError:
                continue
            for name in names:
                count += 1
                if count > SEARCH_FOLDERS:
                    return found
                deeper.append(os.path.join(here, name))
                found.append((deeper[-1], "holds"))
        level = deeper
    return found


def live_claim(folder):
    """The claim on ``folder`` of a node 0 that runs now and is not this process, or None: node 0's scan never
    hands out a save in a subfolder another job claims (walk17b B19)."""
    held = _read(os.path.join(folder, NAME))
    return held if held is not None and _someone_else(held, _mine(None, None)) else None


def running(folder, job):
    """The claim of ``job`` itself on ``folder`` while its node 0 runs now (fresh, its writer alive and not this
    process), or None: --explain on a node of the running job reads its traces as that job's own (walk16b B8)."""
    held = _read(os.path.join(folder, NAME)) if folder else None
    if held is None or held.get("job") != job or not _someone_else(held, _mine(job, None)):
        return None
    return held


def runs_now(held):
    """``job 'w16d' runs now (node 0 on vm, pid 4247, since 12:01:30 UTC)``, of a claim :func:`running` read."""
    run = f", run {held['run']}" if held.get("run") else ""
    since = held.get("since")
    when = time.strftime(", since %H:%M:%S UTC", time.gmtime(since)) if isinstance(since, (int, float)) else ""
    return f"job {held.get('job')!r} runs now (node 0 on {held.get('host')}, pid {held.get('pid')}{run}{when})"


class Claim:
    def __init__(self, path, mine):
        self.path, self.mine, self.stopped = path, mine, threading.Event()

    def keep(self):
        while not self.stopped.wait(REFRESH_S):
            try:
                _write(self.path, self.mine)
            except OSError:
                pass  # the folder went away or is read-only now: the saves will say so louder

    def release(self):
        """Remove the claim if it is still this process's (never another job's that took it over)."""
        self.stopped.set()
        held = _read(self.path)
        if held is not None and held.get("pid") == self.mine["pid"] and held.get("host") == self.mine["host"]:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _someone_else(held, mine):
    """Whether a claim read from the folder is another job's that still runs: rewritten within :data:`FRESH_S`,
    and, written on this host, by a process that still runs and is not this one."""
    if time.time() - held["written"] > FRESH_S:
        return False
    if held.get("host") != mine["host"]:
        return True  # fresh from another host: the same job id there is a second job of the same name
    pid = held.get("pid")
    if pid == mine["pid"] or not isinstance(pid, int) or isinstance(pid, bool):
        return False  # this very process (pid 1 in a restarted container)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False  # its writer is gone (node 0 before this one, a job stopped): taken over
    except OSError:
        return True  # runs, as another user
    return True


def _read(path):
    """The claim at ``path`` with ``written`` (its mtime, the storage's clock read as this node's), or None."""
    from .. import bounded

    try:
        held = json.loads(bounded.read_text(path, bounded.TEXT_CAP, "a checkpoint folder's claim"))
        written = os.stat(path).st_mtime
    except (OSError, ValueError):
        return None
    if not isinstance(held, dict):
        return None
    held["written"] = written
    return held


def _write(path, mine):
    from .runstate import write_whole

    write_whole(path, json.dumps(mine), f"{path}.{mine['pid']}.tmp")
