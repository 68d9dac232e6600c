"""``nodeweave sync``'s plan: one ``sync`` phase of every target's agent exec; ``--dry-run`` prints it, a sync runs it.

Why a plan here too (issue 34): the dry run and the real run were assembled apart, so nothing said the
command a dry run showed was the one a sync would start. The plan holds, per target in order, the exec
that starts the nodeweave agent there (``session_argv``: ``make`` creates DEST, ``dry`` writes nothing -
``--check``, and with ``--shared`` every target after the first, whose view is checked), and as its
request what the sync moves (SRC, DEST, the file count and size, the git commit, the options). The
agent's program (some 50 KB of Python) stands in the argv as ``SYNC_AGENT``; its id is the request's
``agent``. What each target is then sent (which files, by stream, rsync or tar, relayed or not) is
decided by its answer to that exec, so it is the run's to report, not the plan's.

The real run hands the plan to ``nodeweave.cluster.execute``; its ``sync`` handler (:func:`planned_request`)
syncs exactly the phase's targets, in its order, with its DEST and options.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Tuple

from nodeweave.plan import NodeCommand, Plan, SyncPhase
from nodeweave.sync.request import SyncOptions, SyncRequest
from nodeweave.sync.transport.session import PROGRAM_ID, session_argv

AGENT = "SYNC_AGENT"  # where the agent's program goes in a planned argv (its id: the request's ``agent``)


@dataclass(frozen=True)
class SyncWork:
    """What one sync moves: the source as read once, where to, how (a ``sync`` phase's request)."""

    src: str
    dest: str
    files: int
    bytes: int
    commit: Optional[str]
    branch: Optional[str]
    dirty: bool
    held_back_secrets: Tuple[str, ...]
    held_back_state: Tuple[str, ...]
    held_back_checkpoints: Tuple[str, ...]
    swept_in: Tuple[Tuple[str, str], ...]
    agent: str
    options: SyncOptions


def sync_plan(req: SyncRequest, full: bool = False) -> Plan:
    """The sync ``req`` asks for, as the real run does it (a dry run's own read-only asking is no part of it);
    ``full`` (``-o wide``): every held-back path named, none cut to a few."""
    options = replace(req.options, dry_run=False)
    modes = [_mode(options, number) for number in range(len(req.targets))]
    nodes = tuple(NodeCommand(t.label, "checks DEST, writes nothing" if mode == "dry" else "writes DEST",
                              tuple(session_argv(t, req.dest, mode, program=AGENT)))
                  for t, mode in zip(req.targets, modes))
    git = req.git
    work = SyncWork(src=str(req.src), dest=req.dest, files=len(req.fileset.files), bytes=req.fileset.total_bytes,
                    commit=git.commit, branch=git.branch, dirty=bool(git.dirty),
                    held_back_secrets=tuple(req.fileset.held_back_secrets),
                    held_back_state=tuple(req.fileset.held_back_state),
                    held_back_checkpoints=tuple(req.filt.checkpoint_folders()),
                    swept_in=tuple(req.fileset.swept_in), agent=PROGRAM_ID, options=options)
    verb = "compare" if options.check else "push"
    what = (f"{verb} {work.files:,} file(s), {work.bytes / 2**20:.1f} MiB from {work.src} to {work.dest} on "
            f"{len(nodes)} target(s) at once"
            + (", and delete on each target what SRC lacks (excluded and held-back paths are kept there; nothing "
                  "where DEST is a mount point: each agent checks first)"
               if options.delete and not options.check else "")
            + f": one agent exec each ({AGENT}: the agent's program, id {PROGRAM_ID})"
            + ("" if options.check else "; each target's answer decides what it is sent and how")
            + held_back(work, full))
    kinds = sorted({t.kind for t in req.targets})
    return Plan("sync", f"{len(nodes)} target(s) ({', '.join(kinds)})", (SyncPhase(what, nodes=nodes, work=work),),
                notes=req.left_out)


def held_back(work: SyncWork, full: bool = False) -> str:
    """What the plan's first line says is left out on purpose: the job's checkpoints, nodeweave's own state and
    credential-like files. The hint names the pattern that sends the very folders held back (walk15a A5: it said
    `-x '!runs/'` whatever was held, which sends nothing of `.nodeweave/`)."""
    few = (lambda paths: ", ".join(paths)) if full else _few
    said = ""
    if work.held_back_checkpoints:
        said += (f"; held back as the job's checkpoints (recovery.checkpoint_dir), neither sent nor deleted on the "
                 f"targets: {few(work.held_back_checkpoints)}")
    if work.held_back_state:
        said += (f"; held back as nodeweave's own state: {few(work.held_back_state)} ({sends(work.held_back_state)} "
                 f"sends {'it' if len(work.held_back_state) == 1 else 'them'} anyway)")
    if work.swept_in:
        patterns = ", ".join(dict.fromkeys(spelt for _, spelt in work.swept_in))
        swept = tuple(path for path, _ in work.swept_in)
        said += (f"; sent although nodeweave's own state or the job's checkpoints, as {patterns} re-include{'s' if ', ' not in patterns else ''} "
                 f"them without naming them: {few(swept)} (name what to re-include instead, or "
                 f"{sends(swept)} to send {'it' if len(swept) == 1 else 'them'} on purpose)")
    if work.held_back_secrets:
        said += (f"; held back as credential-like: {few(work.held_back_secrets)}"
                 + ("" if work.options.check else " (--include-secrets sends them)"))
    return said


def sends(paths: "Tuple[str, ...]") -> str:
    """The ``-x '!PATH'`` patterns that send ``paths`` (the first of them, where many): each anchored at SRC, as
    the walk found it."""
    from nodeweave.entrypoint.quoting import as_typed

    shown = " ".join(f"-x {as_typed('!/' + path)}" for path in paths[:2])
    return f"`{shown}`" + (" ..." if len(paths) > 2 else "")


def _few(paths: "Tuple[str, ...]") -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _mode(options: SyncOptions, number: int) -> str:
    """``make`` for a target written, ``dry`` for one only compared (``--check``; shared storage after the first)."""
    if options.check or (options.shared and number > 0):
        return "dry"
    return "make"


def planned_request(req: SyncRequest, phase: SyncPhase) -> SyncRequest:
    """The request the executor runs for ``phase``: its targets in its order, its DEST and options."""
    work: SyncWork = phase.work
    by_label = {t.label: t for t in req.targets}
    return replace(req, dest=work.dest, targets=tuple(by_label[n.node] for n in phase.nodes), options=work.options)


class SyncSession:
    """What the sync plan's phase runs with (``Execution.syncs``): the request, its targets and DEST as the phase
    planned them, the outcome shown as ``fmt``."""

    def __init__(self, req, fmt: str):
        self.req, self.fmt = req, fmt

    def sync(self, phase) -> None:
        from nodeweave.sync.display import run_and_show

        run_and_show(planned_request(self.req, phase), self.fmt)

