"""What a sync shows: a live row per target while it runs, a summary table after, or JSON.

With ``--json`` the JSON document is the only thing on stdout; the live
view, notes and per-target errors go to stderr, so a script can pipe it.
"""

from __future__ import annotations

import json
import os
import sys
import threading

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from nodeweave.tables import Table

from nodeweave.entrypoint.nodelists import ranges
from nodeweave.errors import EnvironmentProblem, NodeweaveError
from nodeweave.failures import ssh_cut_off, ssh_unreached
from nodeweave.remote.kube import api_unreachable
from nodeweave.usertext import console as people_console, styled
from nodeweave.remote import Remote
from nodeweave.sync.request import SyncRequest
from nodeweave.sync.outcome import TargetResult
from nodeweave.sync.source.runner import run_check, run_sync

_STATUS_STYLE = {"ok": "green", "dry-run": "cyan", "failed": "bold red", "mismatch": "bold red"}


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class LiveTargets:
    """A rich Progress with one row per target; safe to update from worker threads."""

    def __init__(self, targets: "list[Remote]", console: Console):
        self.progress = Progress(TextColumn("{task.fields[label]}", style="bold", markup=False),
                                 BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                                 TextColumn("{task.fields[stage]}", markup=False), TimeElapsedColumn(),
                                 console=console, transient=False, disable=not console.is_terminal)
        self._tasks: "dict[Remote, TaskID]" = {
            t: self.progress.add_task("", total=100, label=t.label, stage="queued") for t in targets}
        self._lock = threading.Lock()

    def update(self, target: Remote, stage: str, fraction: float) -> None:
        with self._lock:
            self.progress.update(self._tasks[target], completed=round(fraction * 100), stage=stage)

    def __enter__(self) -> "LiveTargets":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()


def summary_table(results: "list[TargetResult]", source_digest: "str | None", title: str,
                  delete: bool = False) -> Table:
    """One row per target: ``files`` counts the regular files whose data went there, and the links made or changed
    beside them (``1 +1 link``), and with --delete a ``deleted`` column counts what it removed (walk12 C4)."""
    table = Table(title=title, title_justify="left")
    table.add_column("target", no_wrap=True, min_width=max((len(r.target.label) for r in results), default=6))
    for column, justify in (("method", "left"), ("files", "right"), *((("deleted", "right"),) if delete else ()),
                            ("bytes", "right"), ("seconds", "right"), ("digest", "left"),
                            ("status", "left")):
        table.add_column(column, justify=justify)
    for r in results:
        digest = r.check.digest[:12] if r.check and r.check.digest else "-"
        method = f"{r.method} {r.relay}" if r.relay and r.relay.startswith("from ") else r.method
        files = f"{r.files:,}" + (f" +{r.links:,} link{'s' if r.links > 1 else ''}" if r.links else "")
        table.add_row(r.target.label, method, files, *((f"{len(r.deleted):,}",) if delete else ()),
                      human_bytes(r.bytes), f"{r.seconds:.1f}", digest,
                      styled((r.status, _STATUS_STYLE.get(r.status, "")),
                             f" ({r.attempts} tries)" if r.attempts > 1 else ""))
    return table


def check_table(results: "list[TargetResult]", source_digest: str, git_commit: "str | None") -> Table:
    table = Table(title=f"source digest {source_digest[:12]}"
                  + (f", commit {git_commit[:12]}" if git_commit else ""), title_justify="left")
    table.add_column("target", no_wrap=True, min_width=max((len(r.target.label) for r in results), default=6))
    for column in ("commit", "branch", "synced at", "digest", "status"):
        table.add_column(column)
    for r in results:
        stamp = (r.check.stamp if r.check else None) or {}
        commit = str(stamp.get("commit") or "-")[:12]
        if git_commit and stamp.get("commit") and stamp.get("commit") != git_commit:
            commit = styled((commit, "yellow"))
        digest = r.check.digest[:12] if r.check and r.check.digest else "-"
        table.add_row(r.target.label, commit, str(stamp.get("branch") or "-"),
                      str(stamp.get("synced_at") or "no stamp"), digest,
                      styled((r.status, _STATUS_STYLE.get(r.status, ""))))
    return table


def named(paths, limit: "int | None") -> str:
    """``paths`` named, the first ``limit`` of them and how many more; every one where ``limit`` is None (``-o
    wide``: each list a dry run or a sync shows has its full form, walk15a A31)."""
    paths = list(paths)
    if limit is None or len(paths) <= limit:
        return ", ".join(paths)
    return f"{', '.join(paths[:limit])} and {len(paths) - limit} more"


def deleted_text(results: "list[TargetResult]", limit: "int | None" = 10) -> "list[str]":
    """What --delete removed, one line per set of targets that lost the same paths (rsync's ``deleting PATH``)."""
    by_paths: "dict[tuple[str, ...], list[str]]" = {}
    for r in results:
        if r.ok and r.deleted:
            by_paths.setdefault(tuple(r.deleted), []).append(r.target.label)
    lines = []
    for paths, labels in by_paths.items():
        where = "every target" if len(labels) == len(results) > 1 else ", ".join(labels)
        lines.append(f"deleted on {where}: {named(paths, limit)}")
    return lines


def specials_line(fileset, limit: "int | None" = 5) -> "str | None":
    """The one line naming what SRC holds that no sync sends (a fifo, a socket, a device), as rsync says "skipping
    non-regular file"; None when it holds none (walk12 C4)."""
    if not fileset.specials:
        return None
    shown = named((f"{rel} ({kind})" for rel, kind in fileset.specials), limit)
    return f"left out {len(fileset.specials)} file(s) that are not regular files: {shown} (as rsync skips them)"


def changes_text(results: "list[TargetResult]", limit: "int | None" = 20) -> "list[str]":
    """Per target, what a dry run would move (first ``limit`` lines; None: every one)."""
    lines = []
    for r in results:
        if not r.ok:
            continue
        lines.append(f"{r.target.label}: {len(r.changes)} change(s) by {r.method}")
        lines += [f"  {c}" for c in r.changes[:limit]]
        if limit is not None and len(r.changes) > limit:
            lines.append(f"  ... and {len(r.changes) - limit} more (-o wide lists every one)")
    return lines


def run_and_show(req: SyncRequest, fmt: str = "table", stderr: bool = False) -> "list[TargetResult]":
    """Run the sync (or check) under a live view, print the outcome (``fmt`` json or yaml: the document on
    stdout, everything else on stderr; ``stderr``: the tables too, as a dry run under ``-o json`` shows what
    would move; ``wide``: every path of every list); NodeweaveError names failures. The results, for a dry run's
    document."""
    as_data = fmt in ("json", "yaml")
    limit = None if fmt == "wide" else 5
    console = people_console(stderr=as_data or stderr, width=_table_width())
    secrets = req.fileset.held_back_secrets
    if secrets:
        console.print(f"held back {len(secrets)} credential-like path(s): {named(secrets, limit)}"
                      " (--include-secrets sends them)", style="yellow")
    special = specials_line(req.fileset, limit)
    if special:
        console.print(special, style="yellow", markup=False, highlight=False, soft_wrap=True)
    with LiveTargets(list(req.targets), console) as live:
        results, digest = (run_check if req.options.check else run_sync)(req, _marking(live.update))
    cut = None if req.options.dry_run else _cut_off(results, req.options.check)
    if as_data:
        _emit(as_document(req, results, digest), fmt)
    elif cut is not None:  # no target reached: the one line, not a table of failed rows (replay10 A35)
        raise cut
    elif req.options.check:
        console.print(check_table(results, digest, req.git.commit))
    else:
        if req.options.dry_run:
            for line in changes_text(results, limit and 20):
                console.print(line, markup=False, highlight=False)
        console.print(summary_table(results, digest, _title(req), req.options.delete))
        if not req.options.dry_run:  # a dry run's changes_text names them already
            for line in deleted_text(results, limit and 10):
                console.print(line, markup=False, highlight=False, soft_wrap=True)
    for r in results:
        if r.relay and r.relay.startswith("direct:"):
            console.print(f"relay: {r.target.label} was sent the payload {r.relay}", style="yellow", highlight=False,
                          soft_wrap=True)
    _raise_on_failure(req, results)
    return results


def would_move(results: "list[TargetResult]") -> "list[dict]":
    """What a dry run found each target would be sent, for ``-o json|yaml``: every change, by target."""
    return [{"target": r.target.label, "status": r.status, "method": r.method, "changes": list(r.changes),
             **({"error": r.error} if r.error else {})} for r in results]


def _marking(update):
    """``update`` (the live table's), each target's stage also kept as where it stands (``nodeprogress``: what a
    Ctrl-C's line says of each node, walk12c C15): ended ok, failed, reached with nothing sent, or part-way."""
    from nodeweave import nodeprogress

    def marked(target, stage: str, fraction: float) -> None:
        if fraction >= 1.0 and stage in ("ok", "dry-run"):
            state = nodeprogress.DONE
        elif fraction >= 1.0 and stage in ("failed", "mismatch"):
            state = nodeprogress.FAILED
        elif stage == "connect":
            state = nodeprogress.WAITING
        else:  # sending, from a relay, being checked, waiting to be retried
            state = nodeprogress.PARTIAL
        nodeprogress.mark(target.label, state)
        update(target, stage, fraction)
    return marked


def _emit(document: dict, fmt: str) -> None:
    if fmt == "json":
        typer.echo(json.dumps(document, indent=2))
        return
    from nodeweave.yamltext import dump_yaml  # the renderers' dumper: a number-like string stays a string

    typer.echo(dump_yaml(json.loads(json.dumps(document)), sort_keys=False).rstrip())


def _title(req: SyncRequest) -> str:
    git = req.git
    at = (f" @ {git.commit[:12]} ({git.branch}{', uncommitted changes' if git.dirty else ''})"
          if git.commit else "")
    return (f"{len(req.fileset.files):,} files, {req.fileset.total_bytes / 2**20:.1f} MiB from {req.src} "
            f"to {req.dest}{at}")


def _cut_off(results: "list[TargetResult]", check: bool = False) -> "EnvironmentProblem | None":
    """The one line (exit 3) when no failed target was reached at all (the Kubernetes API, or ssh, reached none of
    them: nothing about the targets is known, as every verb says it), else None."""
    failed = [r for r in results if not r.ok]
    cut_off = [r for r in failed if api_unreachable(r.error)]
    if cut_off and all(r in cut_off or str(r.error).startswith("not checked") for r in failed):
        from nodeweave.failures import api_cut_off

        return api_cut_off([(r.target.label, str(r.error if r in cut_off else cut_off[0].error)) for r in failed],
                           "nothing synced to")
    if failed and all(r.target.kind.startswith("ssh") and ssh_unreached(str(r.error or ""))
                      for r in failed):  # replay10 A35: as status, run, logs ...; only ssh's own words (A21)
        return ssh_cut_off([(getattr(r.target, "host", None) or r.target.label, str(r.error)) for r in failed],
                           "nothing checked on" if check else "nothing synced to",
                           getattr(getattr(failed[0].target, "options", None), "ssh_options", ()))
    return None


def _raise_on_failure(req: SyncRequest, results: "list[TargetResult]") -> None:
    failed = [r for r in results if not r.ok]
    commits = {str((r.check.stamp or {}).get("commit")) for r in results if r.check and r.check.stamp}
    split = req.options.check and len(commits) > 1
    if split:
        typer.echo(f"nodeweave: targets disagree on the commit: {', '.join(sorted(commits))}", err=True)
    ending: "NodeweaveError | None" = _cut_off(results, req.options.check)  # one cause, none reached: exit 3
    if ending is None and failed:
        ending = NodeweaveError(f"{len(failed)} of {len(results)} target(s) did not "
                                f"{'match' if req.options.check else 'sync'}: "
                                + ranges(r.target.label for r in failed))
    if ending is not None and req.options.dry_run:  # a dry run, as every verb's, notes what the real sync would
        typer.echo(f"nodeweave: note: the real sync would end with exit {ending.exit_code}: {ending}", err=True)
        for r in failed:  # meet, and exits 0
            typer.echo(f"nodeweave: the real sync would fail on {r.target.label}: {r.error}", err=True)
        return
    if isinstance(ending, EnvironmentProblem):
        raise ending
    for r in failed:
        typer.echo(f"nodeweave: {r.status}: {r.target.label}: {r.error}", err=True)
    if ending is not None:
        raise ending
    if split:
        raise NodeweaveError("targets hold different commits")


def as_document(req: SyncRequest, results: "list[TargetResult]", digest: "str | None") -> dict:
    """The ``--json`` document: the source, then one entry per target in target order."""
    fileset, git = req.fileset, req.git
    return {
        "source": {"path": str(fileset.root), "files": len(fileset.files), "bytes": fileset.total_bytes,
                   "digest": digest, "commit": git.commit, "branch": git.branch,
                   "held_back_secrets": fileset.held_back_secrets, "held_back_state": fileset.held_back_state,
                   "held_back_checkpoints": fileset.held_back_checkpoints,
                   "left_out": [{"path": rel, "kind": kind} for rel, kind in fileset.specials]},
        "targets": [{"target": r.target.label, "status": r.status, "method": r.method, "group": r.group,
                     "relay": r.relay, "channel": r.channel,
                     "files": r.files, "links": r.links, "deleted": r.deleted, "bytes": r.bytes,
                     "seconds": round(r.seconds, 3),
                     "attempts": r.attempts, "error": r.error, "changes": r.changes,
                     "digest": r.check.digest if r.check else None,
                     "mismatched": (r.check.mismatched or [])[:50] if r.check else [],
                     "stamp": r.check.stamp if r.check else None} for r in results],
    }


def _table_width() -> "int | None":
    """Rich's default off a terminal is 80 columns, too narrow for these tables; COLUMNS still wins."""
    return None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
