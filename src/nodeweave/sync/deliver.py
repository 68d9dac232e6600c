"""One round of a sync over a batch of targets: ask all, group, send each payload once, check all.

1. Every target's session starts at once and answers what it holds.
2. Each target's difference and method are worked out (``plan``, pure).
3. Targets that need the same files form a group; the group's tar stream is
   made once and written to all of them concurrently (``payload``), while
   rsync targets run their own rsync.
4. Each target then finishes: deletions, the check of every file against
   the source, the stamp - in the same session where python3 runs.

Nothing raises: each target's result says what happened, and whether a
retry could fix a failure.
"""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from nodeweave.remote import Remote
from nodeweave.sync import plain
from nodeweave.sync.outcome import OnProgress, Source, TargetResult
from nodeweave.sync.payload import Fanout, Sink, tar_stream
from nodeweave.sync.plan import Difference, Manifest, choose_method, difference, group_payloads, itemize
from nodeweave.sync.request import SyncRequest
from nodeweave.sync.rsync import RsyncOptions, run_rsync
from nodeweave.sync.session import Session, TransferError, plan_line
from nodeweave.sync.verify import TargetCheck


@dataclass
class Job:
    """One target's way through a round."""

    target: Remote
    result: TargetResult
    session: "Session | None" = None
    manifest: "Manifest | None" = None
    diff: Difference = field(default_factory=Difference)
    method: str = "-"
    tar: "subprocess.Popen[bytes] | None" = None  # the ``tar -x`` process of a tar target
    plan_sent: bool = False  # a stream target's plan went ahead of its payload
    error: "TransferError | None" = None


def _connect(req: SyncRequest, src: Source, job: Job, then: str) -> None:
    """Start the target's session and learn what it holds (a ``find`` listing without python3)."""
    opts = req.options
    dry = opts.dry_run or opts.check
    job.session = Session(job.target, req.dest, dry=dry)
    request = {"paths": sorted(src.fileset.files), "dirs": src.fileset.dirs, "dry": dry,
               "quick": src.quick, "extras": opts.delete, "then": then}
    manifest = job.session.open(request)
    if not manifest.python:
        manifest = plain.with_listing(job.target, req.dest, src.fileset, manifest)
    if not manifest.dest_ok:
        raise TransferError(f"cannot create or write {req.dest} there", transient=False)
    job.manifest = manifest


def _signatures(src: Source, manifest: Manifest) -> "dict[str, str]":
    return src.quick_signatures() if manifest.quick else src.signatures


def _plan(req: SyncRequest, src: Source, job: Job, local_rsync: bool) -> None:
    job.diff = difference(src.fileset, _signatures(src, job.manifest), job.manifest, req.filt, req.options.delete)
    method, why = choose_method(req.options.method, job.manifest, job.diff,
                                network_link=job.target.network_link, local_rsync=local_rsync)
    if method is None:
        raise TransferError(why, transient=False)
    job.method = method
    if job.diff.empty:
        job.method = "up-to-date"  # by content, or by size and mtime with --no-verify


def _agent_plan(src: Source, job: Job, receive: bool) -> dict:
    """What the agent does after the payload: deletions, the check of every file, the stamp."""
    return {"receive": receive, "stamp": src.stamp,
            "expect": {rel: src.signatures[rel] for rel in job.diff.send},
            "delete": list(job.diff.delete), "rmdirs": list(job.diff.rmdirs)}


def _open_sink(req: SyncRequest, src: Source, job: Job, report) -> Sink:
    if job.method == "stream":
        job.plan_sent = True
        return Sink(job.session.payload_fd(), plan_line(_agent_plan(src, job, True)), report)
    job.tar = plain.start_tar(job.target, req.dest)
    return Sink(_detach(job.tar), b"", report)


def _send_group(req: SyncRequest, src: Source, diff: Difference, jobs: "list[Job]", on_progress: OnProgress) -> None:
    """Make this group's tar stream once, write it to every member at once, then finish each."""
    total = sum(src.fileset.root.joinpath(rel).lstat().st_size for rel in diff.send) or 1
    sinks = []
    for job in jobs:
        report = (lambda j: lambda sent: on_progress(j.target, "send", min(1.0, sent / total)))(job)
        _guard(job, lambda j=job, r=report: sinks.append(_open_sink(req, src, j, r)))
    try:
        Fanout(sinks).run(tar_stream(src.fileset.root, diff.dirs, diff.send, src.fileset.files))
    except OSError as err:  # the source changed under us: no member can be right
        for job in jobs:
            job.error = job.error or TransferError(f"reading the source failed: {err}", transient=False)
            if job.session is not None:
                job.session.kill()
    for job in jobs:
        _guard(job, lambda j=job: _finish(req, src, j, on_progress))


def _detach(proc: "subprocess.Popen[bytes]") -> int:
    """A descriptor of the process's stdin for a payload writer, which closes it when done."""
    fd = os.dup(proc.stdin.fileno())
    proc.stdin.close()
    return fd


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
    if job.manifest.python:
        answer = job.session.finish(None if job.plan_sent else _agent_plan(src, job, False))
        if job.method == "stream":
            res.files, res.bytes = answer["files"], answer["bytes"]
        if answer["errors"]:
            res.status, res.error = "failed", "; ".join(answer["errors"][:3])
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
    res.judge(TargetCheck.of(src.signatures, mismatched, stamp, req.git))


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


def _guard(job: Job, step) -> None:
    """Run one step of one target; a failure is recorded on it, never raised to the others."""
    if job.error is not None:
        return
    try:
        step()
    except TransferError as err:
        job.error = err
    except Exception as err:  # a worker must report, not die: the others go on
        job.error = TransferError(f"{type(err).__name__}: {err}", transient=False)
    if job.error is not None and job.session is not None:
        job.session.kill()


def deliver(req: SyncRequest, src: Source, targets: "list[Remote]", on_progress: OnProgress,
            local_rsync: bool) -> "list[Job]":
    """One round over ``targets``: each job's result filled in, or its error set."""
    started = time.monotonic()
    jobs = [Job(t, TargetResult(t, attempts=1)) for t in targets]
    then = "exit" if req.options.dry_run else "plan"
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        for job in jobs:
            on_progress(job.target, "connect", 0.0)
        list(pool.map(lambda j: _guard(j, lambda: _connect(req, src, j, then)), jobs))
        for job in jobs:
            _guard(job, lambda j=job: _plan(req, src, j, local_rsync))
        if req.options.dry_run:
            _dry_run(src, jobs)
        else:
            _transfer(req, src, jobs, pool, on_progress)
    for job in jobs:
        job.result.seconds = time.monotonic() - started
        job.result.method = job.method
        if job.error is not None:
            job.result.status, job.result.error = "failed", str(job.error)
    return jobs


def _dry_run(src: Source, jobs: "list[Job]") -> None:
    for job in jobs:
        if job.error is None:
            job.result.changes = itemize(job.diff, job.manifest, src.fileset)
            job.result.files = sum(1 for rel in job.diff.send if src.fileset.files.get(rel) == "f")
            job.result.status = "dry-run"
        if job.session is not None:
            job.session.close()


def _transfer(req: SyncRequest, src: Source, jobs: "list[Job]", pool: ThreadPoolExecutor,
              on_progress: OnProgress) -> None:
    live = {job.target: job for job in jobs if job.error is None}
    streamed = {t: j.diff for t, j in live.items() if j.method in ("stream", "tar")}
    work = []
    for number, (diff, members) in enumerate(group_payloads(streamed), start=1):
        group = [live[t] for t in members]
        for job in group:
            job.result.group = number
        work.append(pool.submit(_guard, group[0], lambda d=diff, g=group: _send_group(req, src, d, g, on_progress)))
    for job in live.values():
        if job.method == "rsync":
            work.append(pool.submit(_guard, job, lambda j=job: _rsync(req, src, j, on_progress)))
        elif job.method == "up-to-date" or (job.method in ("stream", "tar") and not _sent(job)):
            work.append(pool.submit(_guard, job, lambda j=job: _finish(req, src, j, on_progress)))
    for future in work:
        future.result()
