"""Fan a sync out to every target at once, retry what is transient, check the result.

One worker thread per target (bounded), each doing probe -> transfer ->
digest -> stamp, with exponential backoff only for failures a retry can fix
(rsync 10/12/30/35, ssh 255, dropped API connections). Progress goes to a
callback so the CLI can draw a rich Live view; a failed target never stops
the others.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from nodeweave.remote import Remote
from nodeweave.sync.request import SyncRequest
from nodeweave.sync.transfer import Moved, Probe, TransferError, probe, run_rsync, run_tar
from nodeweave.sync.transport import PROBE_TOOLS, RsyncOptions
from nodeweave.sync.digest import tree_digest
from nodeweave.sync.verify import TargetCheck, check_on_target, local_digests, make_stamp

OnProgress = Callable[[Remote, str, float], None]  # (target, stage, fraction of the transfer)


@dataclass
class TargetResult:
    target: Remote
    status: str = "pending"  # ok | failed | mismatch | dry-run
    method: str = "-"
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    attempts: int = 0
    error: "str | None" = None
    changes: "list[str]" = field(default_factory=list)
    check: "TargetCheck | None" = None

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "dry-run")


def _rsync_options(req: SyncRequest) -> RsyncOptions:
    return RsyncOptions(delete=req.options.delete, dry_run=req.options.dry_run,
                        compress=req.options.compress)


def _with_retries(req: SyncRequest, result: TargetResult, attempt: Callable[[], Moved],
                  on_progress: OnProgress) -> Moved:
    delay = req.options.backoff_s
    while True:
        result.attempts += 1
        try:
            return attempt()
        except TransferError as err:
            if not err.transient or result.attempts > req.options.retries:
                raise
            on_progress(result.target, f"retry in {delay:.0f}s: {str(err)[:60]}", 0.0)
            time.sleep(delay * (1 + random.random() / 4))
            delay *= 2


def _pre_check(req: SyncRequest, target: Remote, local: "dict[str, str]") -> "TargetCheck | None":
    """One exec that probes the target and digests what it already holds.

    A target that already holds every file's content is stamped and not
    re-sent; otherwise the probe half saves the transfer its own probe.
    Skipped for --delete (extra files need rsync), --dry-run and --no-verify.
    Any failure here (no python3, target down) just means: take the normal path.
    """
    if not req.options.verify or req.options.dry_run or req.options.delete:
        return None
    check = check_target(req, target, local, has_python=True, probe_tools=PROBE_TOOLS)
    return None if check.error else check


def sync_target(req: SyncRequest, target: Remote, local: "dict[str, str] | None",
                on_progress: OnProgress) -> TargetResult:
    """Probe, transfer, digest and stamp one target; never raises."""
    result = TargetResult(target=target)
    started = time.monotonic()
    known: "list[Probe]" = []  # a probe the pre-check already made, for the first attempt only

    def attempt() -> Moved:
        on_progress(target, "probe", 0.0)
        found = known.pop() if known else probe(target, req.dest, dry_run=req.options.dry_run)
        use_rsync = "rsync" in found.tools and req.options.method != "tar"
        if not use_rsync and "tar" not in found.tools:
            raise TransferError("the target has neither rsync nor tar", transient=False)
        result.method = "rsync" if use_rsync else "tar"
        progress = lambda frac, note: on_progress(target, note, frac)  # noqa: E731
        if use_rsync:
            moved = run_rsync(target, req.fileset, req.dest, req.filt, _rsync_options(req), progress)
        else:
            moved = run_tar(target, req.fileset, req.dest, req.filt, _rsync_options(req), progress,
                            has_find="find" in found.tools, dest_absent=found.dest_absent)
        moved.tools = found.tools
        return moved

    try:
        pre = _pre_check(req, target, local) if local is not None else None
        if pre is not None and pre.ok:
            result.method, result.check, result.status, result.attempts = "up-to-date", pre, "ok", 1
            result.seconds = time.monotonic() - started
            on_progress(target, result.status, 1.0)
            return result
        if pre is not None and pre.tools is not None and pre.dest_ok:
            known.append(Probe(tools=pre.tools, dest_ok=True))
        moved = _with_retries(req, result, attempt, on_progress)
        result.files, result.bytes, result.changes = moved.files, moved.bytes, moved.changes
        if req.options.dry_run:
            result.status = "dry-run"
        elif req.options.verify and local is not None:
            on_progress(target, "verify", 1.0)
            result.check = check_target(req, target, local, has_python="python3" in moved.tools)
            result.status = "ok" if result.check.ok else "mismatch"
            if result.check.error:
                result.error = result.check.error
            elif result.check.mismatched:
                result.error = (f"{len(result.check.mismatched)} file(s) differ after sync, e.g. "
                                + ", ".join(result.check.mismatched[:3]))
        else:
            result.status = "ok"
    except TransferError as err:
        result.status, result.error = "failed", str(err)
    except Exception as err:  # a worker must report, not die: the others go on
        result.status, result.error = "failed", f"{type(err).__name__}: {err}"
    result.seconds = time.monotonic() - started
    on_progress(target, result.status, 1.0)
    return result


def check_target(req: SyncRequest, target: Remote, local: "dict[str, str]", *,
                 has_python: bool, write: bool = True,
                 probe_tools: "tuple[str, ...]" = ()) -> TargetCheck:
    """Digest the target's copy of the file set; write (or just read) the stamp."""
    stamp = make_stamp(req.src, req.git, tree_digest(local), len(local)) if write else None
    try:
        check = check_on_target(target, req.dest, local, stamp, has_python=has_python,
                                probe_tools=probe_tools)
    except Exception as err:
        return TargetCheck(error=f"check failed: {err}")
    if write and not check.mismatched:
        written = check.stamp or {}
        if written.get("digest") != check.digest or written.get("commit") != req.git.commit:
            check.error = "the stamp read back differs from the one written"
    return check


def run_sync(req: SyncRequest, on_progress: OnProgress) -> "tuple[list[TargetResult], str | None]":
    """Sync every target in parallel; results in target order and the source digest.

    With ``req.shared`` (every target mounts the same storage at DEST, as the
    pods of a ``claim: shared`` StatefulSet do) only the first target is
    written; the others are then checked, which also proves the storage is
    shared and coherent.
    """
    local = None if req.options.dry_run or not req.options.verify else local_digests(req.fileset)
    digest = tree_digest(local) if local is not None else None
    workers = max(1, min(req.options.jobs, len(req.targets)))
    if not req.options.shared or len(req.targets) == 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(sync_target, req, t, local, on_progress) for t in req.targets]
            return [f.result() for f in futures], digest
    first = sync_target(req, req.targets[0], local, on_progress)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rest = list(pool.map(lambda t: _shared_result(req, t, local, first, on_progress), req.targets[1:]))
    return [first, *rest], digest


def _shared_result(req: SyncRequest, target: Remote, local: "dict[str, str] | None",
                   first: TargetResult, on_progress: OnProgress) -> TargetResult:
    via = f"shared via {first.target.label}"
    if not first.ok:
        result = TargetResult(target=target, method=via, status="failed",
                              error=f"not checked: the write through {first.target.label} failed")
    elif req.options.dry_run or local is None:
        result = TargetResult(target=target, method=via, status=first.status)
    else:
        result = _check_one(req, target, local, on_progress, method=via)
    on_progress(target, result.status, 1.0)
    return result


def _check_one(req: SyncRequest, target: Remote, local: "dict[str, str]", on_progress: OnProgress,
               method: str = "check") -> TargetResult:
    """Digest the target's copy and read its stamp; moves and writes nothing."""
    result = TargetResult(target=target, method=method, attempts=1)
    started = time.monotonic()
    on_progress(target, "probe", 0.0)
    try:
        found = probe(target, req.dest, dry_run=True)
        on_progress(target, "verify", 0.5)
        result.check = check_target(req, target, local, has_python="python3" in found.tools, write=False)
        result.status = "ok" if result.check.ok else "mismatch"
        result.error = result.check.error or (
            f"{len(result.check.mismatched)} file(s) differ from the source, e.g. "
            + ", ".join(result.check.mismatched[:3]) if result.check.mismatched else None)
    except TransferError as err:
        result.status, result.error = "failed", str(err)
    result.seconds = time.monotonic() - started
    on_progress(target, result.status, 1.0)
    return result


def run_check(req: SyncRequest, on_progress: OnProgress) -> "tuple[list[TargetResult], str]":
    """Compare every target with the source without moving anything (``--check``)."""
    local = local_digests(req.fileset)
    with ThreadPoolExecutor(max_workers=max(1, min(req.options.jobs, len(req.targets)))) as pool:
        results = list(pool.map(lambda t: _check_one(req, t, local, on_progress), req.targets))
    return results, tree_digest(local)
