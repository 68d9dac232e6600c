"""One round of a sync over a batch of targets: ask all, group, send each payload once, check all.

1. Every target's session starts at once (one request, encoded once) and
   answers what differs there; one that holds everything stamps itself.
2. Each target's difference and method are worked out (``plan``, pure).
3. Targets that need the same files form a group; the group's tar stream is
   made once and written to the targets the source feeds (``group``): all
   of them, or with relay only the first, which forwards it along the
   chain; rsync targets run their own rsync.
4. Each target then finishes: deletions, the check of every file against
   the source, the stamp - in the same session where python3 runs.

Nothing raises: each target's result says what happened, and whether a
retry could fix a failure.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from nodeweave.remote import Remote
from nodeweave.sync.source import registry
from nodeweave.sync.transport import plain
from nodeweave.sync.source.group import agent_plan, open_sinks
from nodeweave.sync.source.headlink import RESIDENT_IDLE_S, Tunnel
from nodeweave.sync.source.job import Job, guard
from nodeweave.sync.outcome import OnProgress, Source, TargetResult
from nodeweave.sync.transport.payload import Fanout, tar_stream
from nodeweave.sync.transport.plan import Difference, choose_method, difference, group_payloads, itemize
from nodeweave.sync.request import SyncRequest
from nodeweave.sync.transport.rsync import RsyncOptions, run_rsync
from nodeweave.sync.transport.session import Request, Session, TransferError
from nodeweave.sync.verify import TargetCheck


def requests(req: SyncRequest, src: Source, relay_mode: str, keep: "float | None" = None) -> "dict[bool, Request]":
    """The round's first line, with and without relay, each encoded once for every target."""
    opts = req.options
    then = "exit" if opts.dry_run else "plan"
    made = {}
    for relay in (False, True):
        peers = relay and then == "plan" and relay_mode != "off"
        made[relay] = Request(src.signatures, list(src.fileset.dirs), then=then, dry=opts.dry_run or opts.check,
                              quick=src.quick, extras=opts.delete, stamp=src.stamp, relay=peers,
                              keep=keep if peers else None)  # residents only where nodes may talk to each other
    return made


def _connect(req: SyncRequest, src: Source, job: Job, request: Request, tunnel: "Tunnel | None",
             starts: "threading.Semaphore") -> None:
    """Start the target's session (through the tunnel where it can) and learn what differs there; at most
    ``--jobs`` execs start at once (a round through the head may hold every target)."""
    channel = tunnel.channel(job.target) if tunnel is not None else None
    if channel is not None:
        try:
            _open(req, src, job, request, channel)
            head = tunnel.link.head
            job.result.channel = "exec, tunnel head" if job.target == head else f"via {head.label}"
            return
        except TransferError as err:  # the node's resident is gone or the head cannot reach it
            tunnel.lost(job.target)
            if job.session is not None:
                job.session.kill()
            job.result.channel = f"exec (the tunnel could not: {str(err)[:120]})"
    with starts:
        _open(req, src, job, request, None)


def _open(req: SyncRequest, src: Source, job: Job, request: Request, channel) -> None:
    """The session's request and answer (a ``find`` listing without python3)."""
    opts = req.options
    job.session = Session(job.target, req.dest, dry=opts.dry_run or opts.check, proc=channel)
    manifest = job.session.open(request)
    if not manifest.python:
        manifest = plain.with_listing(job.target, req.dest, src.fileset, manifest)
    if not manifest.dest_ok:
        raise TransferError(unwritable_dest(req.dest, manifest.dest_why), transient=False)
    job.manifest = manifest


def unwritable_dest(dest: str, why: "str | None") -> str:
    """The one line for a DEST the target cannot make or write: why (the agent's word: the folder there, its owner
    and mode, the user the sync runs as; a target without python3 gives none) and what to give instead (walk12 C5)."""
    return (f"cannot create or write {dest} there" + (f": {why}" if why else "") + "; give a DEST that user may "
            "write: under /tmp, in the workspace, or on a volume of the spec (a folder of root's needs the image to "
            "make it the user's)")


def _signatures(src: Source, job: Job) -> "dict[str, str]":
    return src.quick_signatures() if job.manifest.quick else src.signatures


def _plan(req: SyncRequest, src: Source, job: Job, local_rsync: bool) -> None:
    if job.manifest.done:  # the agent found every file there and stamped it: nothing for any method to do
        job.method = "up-to-date"
        return
    job.diff = difference(src.fileset, _signatures(src, job), job.manifest, req.filt, req.options.delete)
    method, why = choose_method(req.options.method, job.manifest, job.diff,
                                network_link=job.target.network_link, local_rsync=local_rsync)
    if method is None:
        raise TransferError(why, transient=False)
    job.method = method
    if job.diff.empty:
        job.method = "up-to-date"  # by content, or by size and mtime with --no-verify


def _send_group(req: SyncRequest, src: Source, diff: Difference, jobs: "list[Job]", on_progress: OnProgress,
                relay_mode: str) -> None:
    """Make this group's tar stream once, write it to the targets the source feeds, then finish each."""
    sinks = open_sinks(req, src, diff, jobs, on_progress, relay_mode)
    try:
        Fanout(sinks).run(tar_stream(src.fileset.root, diff.dirs, diff.send, src.fileset.files))
    except OSError as err:  # the source changed under us: no member can be right
        for job in jobs:
            job.error = job.error or TransferError(f"reading the source failed: {err}", transient=False)
            if job.session is not None:
                job.session.kill()
    for job in jobs:
        guard(job, lambda j=job: _finish(req, src, j, on_progress))


def _moved(src: Source, diff: Difference) -> "tuple[int, int]":
    files = [rel for rel in diff.send if src.fileset.files.get(rel) == "f"]
    return len(files), sum(src.fileset.root.joinpath(rel).lstat().st_size for rel in files)


def _finish(req: SyncRequest, src: Source, job: Job, on_progress: OnProgress) -> None:
    """After the payload (or rsync): deletions, the check against the source, the stamp."""
    res, opts = job.result, req.options
    if job.method == "tar":
        if job.tar is not None:
            plain.wait_tar(job.target, job.tar)
        res.files, res.bytes = _moved(src, job.diff)
    on_progress(job.target, "verify", 1.0)
    if job.manifest.done:
        mismatched, stamp = {}, job.manifest.stamp
    elif job.manifest.python:
        answer = job.session.finish(None if job.plan_sent else agent_plan(job, False))
        if job.method == "stream":
            res.files, res.bytes = answer["files"], answer["bytes"]
        if answer["errors"]:
            if answer.get("cut") and job.upstream is not None:  # a retry, fed by the source, can fix it
                raise TransferError(f"the payload relayed from {job.upstream.target.label} was cut: "
                                    + "; ".join(answer["errors"][:2]), transient=True)
            res.status, res.error = "failed", _failed_there(answer)
            return
        mismatched, stamp = answer["mismatched"], answer["stamp"]
    else:
        if job.method == "tar":
            plain.delete(job.target, req.dest, job.diff)
        if not opts.verify:
            res.status = "ok"
            return
        mismatched, stamp = plain.check(job.target, req.dest, src.signatures, src.stamp)
    if src.quick:
        res.status = "ok"
        return
    res.judge(TargetCheck.of(src.signatures, mismatched, stamp, req.git, source_digest=src.digest))


def _failed_there(answer: dict) -> str:
    """What went wrong on a target that was reached (a file it could not write, a delete refused), and what it
    did write: the other files are there, unstamped (walk15a A21: said as ssh never reaching it)."""
    errors = answer["errors"]
    said = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
    if answer.get("files"):
        said += f"; the other {answer['files']:,} file(s) were written there, and DEST is not stamped"
    return said


def _sent(job: Job) -> bool:
    return bool(job.diff.send or job.diff.dirs)


def _rsync(req: SyncRequest, src: Source, job: Job, on_progress: OnProgress) -> None:
    """rsync this target's difference (the agent deletes), or without python3 the whole tree."""
    opts, python = req.options, job.manifest.python
    files = list(job.diff.send) if python else None
    moved = run_rsync(job.target, src.fileset, req.dest, req.filt,
                      RsyncOptions(delete=opts.delete and not python, compress=opts.compress),
                      lambda frac, note: on_progress(job.target, note, frac), files=files)
    job.result.files, job.result.bytes, job.result.changes = moved.files, moved.bytes, moved.changes
    _finish(req, src, job, on_progress)


def deliver(req: SyncRequest, src: Source, targets: "list[Remote]", on_progress: OnProgress,
            local_rsync: bool, relay_mode: str = "off") -> "list[Job]":
    """One round over ``targets``: each job's result filled in, or its error set."""
    started = time.monotonic()
    jobs = [Job(t, TargetResult(t, attempts=1)) for t in targets]
    relayable = relay_mode == "on" or (relay_mode == "auto" and all(t.relay_by_default for t in targets))
    # Nodes that may talk to each other keep a resident agent, and the next round reaches them through one exec.
    peers = relayable and len(jobs) > 1 and not (req.options.dry_run or req.options.check)
    made = requests(req, src, relay_mode, keep=RESIDENT_IDLE_S if peers else None)
    tunnel = Tunnel.plan(targets, req.dest) if peers else None
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        for job in jobs:
            on_progress(job.target, "connect", 0.0)
        starts = threading.BoundedSemaphore(max(1, req.options.jobs))
        list(pool.map(lambda j: guard(j, lambda: _connect(req, src, j, made[relayable], tunnel, starts)), jobs))
        for job in jobs:
            guard(job, lambda j=job: _plan(req, src, j, local_rsync))
        if req.options.dry_run:
            _dry_run(src, jobs)
        else:
            _transfer(req, src, jobs, pool, on_progress, relay_mode if relayable else "off")
    if tunnel is not None:
        tunnel.link.close()
    registry.update({j.target: j.manifest.resident for j in jobs if j.manifest and j.manifest.resident},
                    tunnel.unreachable if tunnel is not None else [])
    for job in jobs:
        job.result.seconds = time.monotonic() - started
        job.result.method = job.method
        if job.error is not None:
            job.result.status, job.result.error = "failed", str(job.error)
        elif job.diff is not None:
            counted(job.result, job.diff, src.fileset)
    return jobs


def counted(result: TargetResult, diff: Difference, fileset) -> None:
    """Beside each method's own count of the regular files it sent (``files``), what every method changed on the
    target by the one difference it worked from: the links it made or changed (a change, as rsync counts one), and
    what --delete removed there, named (walk12 C4: a new link, and a --delete that removed one, were both "files 0"
    with nothing named). A target written through another one (``shared via``) changed nothing itself."""
    if result.method not in ("stream", "tar", "rsync"):
        return
    result.links = sum(1 for rel in diff.send if fileset.files.get(rel) == "l")
    result.deleted = [*diff.delete, *(f"{rel}/" for rel in diff.rmdirs)]


def _dry_run(src: Source, jobs: "list[Job]") -> None:
    for job in jobs:
        if job.error is None:
            job.result.changes = itemize(job.diff, job.manifest, src.fileset)
            job.result.files = sum(1 for rel in job.diff.send if src.fileset.files.get(rel) == "f")
            job.result.status = "dry-run"
        if job.session is not None:
            job.session.close()


def _transfer(req: SyncRequest, src: Source, jobs: "list[Job]", pool: ThreadPoolExecutor,
              on_progress: OnProgress, relay_mode: str) -> None:
    live = {job.target: job for job in jobs if job.error is None}
    streamed = {t: j.diff for t, j in live.items() if j.method in ("stream", "tar")}
    work = []
    for number, (diff, members) in enumerate(group_payloads(streamed), start=1):
        group = [live[t] for t in members]
        for job in group:
            job.result.group = number
        work.append(pool.submit(guard, group[0],
                                lambda d=diff, g=group: _send_group(req, src, d, g, on_progress, relay_mode)))
    for job in live.values():
        if job.method == "rsync":
            work.append(pool.submit(guard, job, lambda j=job: _rsync(req, src, j, on_progress)))
        elif job.method == "up-to-date" or (job.method in ("stream", "tar") and not _sent(job)):
            work.append(pool.submit(guard, job, lambda j=job: _finish(req, src, j, on_progress)))
    for future in work:
        future.result()
