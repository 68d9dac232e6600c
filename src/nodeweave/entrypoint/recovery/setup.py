"""What every node's recovery loop reads once and keeps: the settings, the job's size, the record, the checkpoint."""

import os

from ..errors import EXIT_TOPOLOGY, EntrypointError

STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
RECORD = "recovery.json"


class Config:
    """The recovery settings and the job's size (from the node count as given, before spares are added)."""

    def __init__(self, settings, topo):
        from ..planning.contract import RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS
        from . import decide  # with the typed book: recovery's alone, not the start-up path's (roles.py)

        self.spares = settings.get("spares", 0) or 0
        self.minimum, self.slots = job_size(settings) if self.spares else (topo.nnodes_min, topo.nnodes_max)
        self.nodes = self.slots + self.spares  # containers: every identity 0..nodes-1
        self.limits = decide.Limits(self.slots, self.minimum, settings.get("recovery_max_restarts", RECOVERY_RESTARTS),
                                    settings.get("no_progress_restarts", RECOVERY_NO_PROGRESS))
        self.folder = settings.get("checkpoint_dir")


def job_size(settings):
    """(fewest, most) training nodes, from --nnodes or NODEWEAVE_NNODES."""
    from ..planning.topology import normalize_nnodes

    text = settings.flags.get("nnodes") or settings.env.get("NODEWEAVE_NNODES")
    if not text:
        raise EntrypointError("recovery.spares needs the node count (NODEWEAVE_NNODES or --nnodes) to tell nodes "
                              "from spares", EXIT_TOPOLOGY)
    _, lo, hi = normalize_nnodes(text, "--nnodes" if settings.flags.get("nnodes") else "NODEWEAVE_NNODES")
    return lo, hi


def with_flags(settings, why, **flags):
    """A copy of ``settings`` with topology flags set (a flag wins over every other source); ``why`` names what
    set them in every message (no ``flag --nnodes`` the user never gave)."""
    from ..planning.settings import Settings

    copy = Settings(**{name: getattr(settings, name) for name, _ in Settings.FIELDS})
    copy.flags = dict(settings.flags, **{k: str(v) for k, v in flags.items()})
    copy.flag_sources = dict(settings.flag_sources, **{k: why for k in flags})
    return copy


def identity_settings(settings):
    """The settings a node checks in with: with spares, the job's containers are nodes + spares."""
    spares = settings.get("spares", 0) or 0
    if not spares:
        return settings
    slots = job_size(settings)[1]
    ident = with_flags(settings, f"recovery's containers ({slots} training + {spares} spare(s))",
                       nnodes=slots + spares)
    ident.env = dict(settings.env, NODEWEAVE_NNODES=ident.flags["nnodes"])  # one count: no flag-over-variable warning
    return ident


def newest_checkpoint(folder, log, unjudged=None):
    """(path, step, mark) of the newest complete checkpoint in ``folder``, or (None, None, None).

    ``mark`` is what the no-progress brake compares (``checkpoints.progress_mark``): the step, or the save's
    time for one that records no step. Folders in a layout the finder cannot judge are said in the log, and
    added to ``unjudged`` ("path: why") for node 0's record.
    """
    if not folder:
        return None, None, None
    try:
        from .checkpoints import progress_mark, scan
    except ImportError:
        return None, None, None
    try:
        found = scan(folder, stop_at_complete=True)
    except OSError as err:
        log(f"recovery: cannot read the checkpoint folder {folder}: {err.strerror or err}")
        return None, None, None
    for path, why in found.unjudged:
        log(f"recovery: cannot judge {path}: {why}")
        if unjudged is not None:
            unjudged.append(f"{path}: {why}")
    newest = found.newest()
    return (newest.path, newest.step, progress_mark(newest)) if newest is not None else (None, None, None)


def user_stopped(received):
    import signal

    stops = tuple(getattr(signal, name) for name in STOP_SIGNALS)
    return any(s in stops for s in received)


def keep(settings, book):
    """The book (``book.Book``) beside the check-in record, and in the run's folder when `nodeweave run` started
    it: its JSON, as `nodeweave runs show`, `status` and a restarted container read it."""
    from ..running.runstate import run_dir, state_root, write_json

    paths = [os.path.join(state_root(settings.env), RECORD)]
    if settings.get("run_id"):
        paths.append(os.path.join(run_dir(settings.env, settings.get("run_id")), RECORD))
    data = book.to_json()
    for path in paths:
        try:
            write_json(path, data)
        except OSError:
            pass  # a record for later reading; the job does not depend on it


def last_book(settings):
    """The recovery record this node kept last (node 0's book, a worker's copy) as a ``book.Book``, or None;
    one an older nodeweave wrote reads too (``Book.from_json``)."""
    import json

    from ..running.runstate import state_root
    from .book import Book

    try:
        with open(os.path.join(state_root(settings.env), RECORD)) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return Book.from_json(data)
    except (TypeError, ValueError, AttributeError):
        return None  # not a book this nodeweave can read: as if none was kept
