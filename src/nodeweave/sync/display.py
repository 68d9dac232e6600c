"""What a sync shows: a live row per target while it runs, a summary table after."""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from nodeweave.remote import Remote
from nodeweave.sync.runner import TargetResult

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
        self.progress = Progress(TextColumn("{task.fields[label]}", style="bold"),
                                 BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                                 TextColumn("{task.fields[stage]}"), TimeElapsedColumn(),
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


def summary_table(results: "list[TargetResult]", source_digest: "str | None", title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("target", no_wrap=True, min_width=max((len(r.target.label) for r in results), default=6))
    for column, justify in (("method", "left"), ("files", "right"),
                            ("bytes", "right"), ("seconds", "right"), ("digest", "left"),
                            ("status", "left")):
        table.add_column(column, justify=justify)
    for r in results:
        digest = r.check.digest[:12] if r.check and r.check.digest else "-"
        table.add_row(r.target.label, r.method, f"{r.files:,}", human_bytes(r.bytes),
                      f"{r.seconds:.1f}", digest,
                      f"[{_STATUS_STYLE.get(r.status, '')}]{r.status}[/]" + (
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
            commit = f"[yellow]{commit}[/]"
        digest = r.check.digest[:12] if r.check and r.check.digest else "-"
        table.add_row(r.target.label, commit, str(stamp.get("branch") or "-"),
                      str(stamp.get("synced_at") or "no stamp"), digest,
                      f"[{_STATUS_STYLE.get(r.status, '')}]{r.status}[/]")
    return table


def changes_text(results: "list[TargetResult]", limit: int = 20) -> "list[str]":
    """Per target, what a dry run would move (first ``limit`` lines)."""
    lines = []
    for r in results:
        if not r.ok:
            continue
        lines.append(f"{r.target.label}: {len(r.changes)} change(s) by {r.method}")
        lines += [f"  {c}" for c in r.changes[:limit]]
        if len(r.changes) > limit:
            lines.append(f"  ... and {len(r.changes) - limit} more")
    return lines
