"""What every node's recovery loop reads once and keeps: the settings, the job's size, the record, the checkpoint."""

import os

from ..errors import EXIT_TOPOLOGY, EntrypointError
from ..planning.job_size import job_size

STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
RECORD = "recovery.json"


class Config:
    """The recovery settings and the job's size (from the node count as given, before spares are added)."""

    def __init__(self, settings, topo):
        from ..planning.contract import RECOVERY_NO_PROGRESS, RECOVERY_RESTARTS, setting_credit
        from . import decide  # with the typed book: recovery's alone, not the start-up path's (roles.py)

        self.spares = settings.get("spares", 0) or 0
        self.minimum, self.slots = job_size(settings) if self.spares else (topo.nnodes_min, topo.nnodes_max)
        self.nodes = self.slots + self.spares  # containers: every identity 0..nodes-1
        self.limits = decide.Limits(self.slots, self.minimum, settings.get("recovery_max_restarts", RECOVERY_RESTARTS),
                                    settings.get("no_progress_restarts", RECOVERY_NO_PROGRESS),
                                    settings.get("checkpoint_dir"),
                                    {key: setting_credit(settings, key)
                                     for key in ("recovery_max_restarts", "no_progress_restarts")})
        self.folder = settings.get("checkpoint_dir")


def with_flags(settings, why, **flags):
    """A copy of ``settings`` with topology flags set (a flag wins over every other source); ``why`` names what
    set them in every message (no ``flag --nnodes`` the user never gave)."""
    from ..planning.settings import Settings

    copy = Settings(**{name: getattr(settings, name) for name, _ in Settings.FIELDS})
    copy.flags = dict(settings.flags, **{k: str(v) for k, v in flags.items()})
    copy.flag_sources = dict(settings.flag_sources, **{k: why for k in flags})
    return copy


def derived(settings, why, **flags):
    """``settings`` for a plan derived from the one this node checks in with (a generation's members, ``--explain``'s
    generation 0, a spare's launch): the flags, NODEWEAVE_NNODES as ``nnodes`` (one count: no flag-over-variable
    warning), and none of the platform's per-process variables (``WORLD_SIZE``, ``RANK``, torchrun's ``ROLE_*``,
    ...): they speak of every container and this node's identity, were judged on the check-in's plan
    (``consistency.job_counts``), and the launcher sets its own for each process (walk16b B19-B21: ``WORLD_SIZE=3``
    on 2 training nodes + 1 spare passed the plan, then every generation refused it as the job's own error)."""
    from ..planning.reserved import LAUNCHER_ENV

    copy = with_flags(settings, why, **flags)
    copy.env = {name: value for name, value in settings.env.items() if name not in LAUNCHER_ENV}
    if "nnodes" in flags:
        copy.env["NODEWEAVE_NNODES"] = str(flags["nnodes"])
    return copy


def generation_settings(settings, book, identity, topo):
    """The settings node ``identity`` launches the book's generation with (node 0's decision): its rank among the
    members, their count, the rendezvous host where node 0's slot went to a spare, and the slots of its own
    hostfile line (``topo``: the plan it checked in with). The one way a start and ``--explain`` on a running
    job's node read a generation (walk17b B6: --explain planned every container)."""
    from ..world import from_a_line

    flags = {"node_rank": book.rank_of(identity), "nnodes": len(book.members)}
    if book.rendezvous() != 0:  # node 0's training slot went to a spare: the spare is the rendezvous host
        flags["master_addr"] = book.master
    # a fixed-size job of its members: derived sets NODEWEAVE_NNODES too (an elastic spec's MIN:MAX would be a
    # claim the flag overrides, with a warning every generation, and the ranks would read a range)
    copy = derived(settings, f"generation {book.generation}'s members (node 0's decision)", **flags)
    own = topo.nproc_per_node
    if from_a_line(own.source):  # its own line's slots, as it checked in with: a spare taking rank 1's
        # place read line 2's from a rank given (fix13d: a slots=2 spare ran 1 process, the world one short)
        copy = with_flags(copy, f"this node's own line ({own.source})", nproc_per_node=own.value)
    return copy


def identity_settings(settings):
    """The settings a node checks in with: with spares, the job's containers are nodes + spares."""
    spares = settings.get("spares", 0) or 0
    if not spares:
        _spares_forgotten(settings)
        return settings
    slots = job_size(settings)[1]
    _platform_holds(settings, slots, spares)
    from ..planning.topology import RECOVERY_CONTAINERS

    ident = with_flags(settings, f"{RECOVERY_CONTAINERS} ({slots} training + {spares} spare(s))",
                       nnodes=slots + spares)
    ident.env = dict(settings.env, NODEWEAVE_NNODES=ident.flags["nnodes"])  # one count: no flag-over-variable warning
    return ident


# The schedulers whose node count recovery.md says includes the spares (the allocation holds every container), and
# what to give instead when it is short: the hosts list every hosts target writes is nodes + spares too (issue 43 N4)
COUNTS_CONTAINERS = {
    "Slurm": "an allocation of {n} nodes (sbatch --nodes {n})",
    "torchrun PET_* (Kubeflow)": "a job of {n} nodes (TrainJob numNodes: {n}, PET_NNODES={n})",
    "hostfile": "a hosts file of {n} hosts (node 0 first, the spares last)",
    "plain variables": "NNODES={n} (every container) or NNODES={slots} (the training nodes, as NODEWEAVE_NNODES)",
}
# A plain NNODES is torchrun's count of every container to a person who typed it, and the training count where
# `nodeweave up` wrote it (compose and hosts targets: NNODES beside NODEWEAVE_NNODES, the same value): either
# agrees; any other contradicts both, as it does without recovery (walk14b B19: NNODES=7 beside
# NODEWEAVE_NNODES=3 and one spare was overridden behind a warning)
TRAINING_COUNT_TOO = ("plain variables",)


def fits(origin, count, slots, spares):
    """Whether a count of ``origin`` agrees with recovery's ``slots`` training nodes and ``spares``."""
    return count == slots + spares or (origin in TRAINING_COUNT_TOO and count == slots)


def container_counts(settings):
    """[(source, count, origin)] of the node counts the scheduler gives that hold every container (training nodes and
    spares): what :func:`_platform_holds` weighs against nodes + spares, and what ``--explain`` compares its
    nnodes notes with (``roles.shown_plan``)."""
    from ..detection.node import detect
    from ..detection.host import host_networking
    from ..detection.kube import read_kube
    from ..detection.sysfs import Root
    from ..planning.sources import Scene, collect

    root = Root(settings.sysroot)
    node = detect(settings.sysroot, settings.env)
    scene = Scene(settings, node, root, read_kube(root, settings.env), host_networking(node))
    found = []
    for claim in collect(scene).get("nnodes", ()):
        count, origin = str(claim.value).strip(), getattr(claim.origin, "name", None)
        if origin in COUNTS_CONTAINERS and count.isdigit():
            found.append((claim.source, int(count), origin))
    return found


def count_shown(source, count):
    """A count's source as a message names it: ``SLURM_NNODES=2`` says its value, a list of hosts gets its length."""
    return source if "=" in source else f"{source} ({count})"


def _platform_holds(settings, slots, spares):
    """The scheduler's node count is every container, training nodes and spares: an allocation with room for
    fewer (``salloc -N 2`` for 2 + 1 spare) is refused now, naming both, as two counts that disagree are without
    recovery; else every node would wait out the check-in deadline for a spare that never starts and the whole
    job be refused as missing it (walk7 B40)."""
    for source, count, origin in container_counts(settings):
        if not fits(origin, count, slots, spares):
            holds = ("it is read as every container, or as the training nodes where nodeweave up wrote it beside "
                     "NODEWEAVE_NNODES, and is neither" if origin in TRAINING_COUNT_TOO
                     else "the scheduler's count holds the spares too")
            raise EntrypointError(
                f"node count sources disagree: {count_shown(source, count)} but recovery's containers are "
                f"{slots + spares} (NODEWEAVE_NNODES {slots} training + NODEWEAVE_SPARES {spares} spare(s)), and "
                f"{holds}; accepted: "
                f"{COUNTS_CONTAINERS[origin].format(n=slots + spares, slots=slots)}, or NODEWEAVE_SPARES "
                f"{max(0, count - slots)}, or NODEWEAVE_NNODES {max(1, count - spares)}",
                EXIT_TOPOLOGY)


def _spares_forgotten(settings):
    """Under recovery with no spares set, a scheduler's count (an allocation, a hosts file, PET_NNODES, NNODES)
    larger than the training count typed (NODEWEAVE_NNODES) is the spares forgotten, on this node or in the steps:
    refused on every node at once naming NODEWEAVE_SPARES, as a rank past the count is (walk17b B18), never the
    bare "remove one" that made every node train (note18: under Slurm). A count typed as a flag overrides, as
    without recovery."""
    text = settings.env.get("NODEWEAVE_NNODES") or ""
    if "nnodes" in settings.flags or not text.isdigit():
        return
    slots = int(text)
    for source, count, origin in container_counts(settings):
        if count > slots:
            holds = ("NNODES is read as every container" if origin in TRAINING_COUNT_TOO
                     else "the scheduler's count holds the spares too")
            raise EntrypointError(
                f"node count sources disagree: {count_shown(source, count)} but NODEWEAVE_NNODES is {slots} and "
                f"NODEWEAVE_SPARES is not set; with recovery on, {holds}, so "
                f"{f'node {slots} would be a spare' if count == slots + 1 else f'nodes {slots}..{count - 1} would be spares'}"
                f" nobody counted; accepted: NODEWEAVE_SPARES={count - slots} on every node (as `nodeweave "
                f"render` exports it beside NODEWEAVE_NNODES), or "
                f"{COUNTS_CONTAINERS[origin].format(n=slots, slots=slots).split(' or ')[0]}", EXIT_TOPOLOGY)


NAMED = 5  # paths a note of the checkpoint finder names for one reason; then the count of the rest


def grouped(notes, name=str, named=NAMED):
    """(path, why) notes as one phrase per reason, in the order first met: ``a, b, c, d, e and 195 more: why``
    (walk7 B2: a script saving epoch_<N>.pt each epoch made --explain's line 47,751 characters, one sentence per
    file). ``name``: how a path is written (relative to the folder, for --explain)."""
    reasons = {}
    for path, why in notes:
        reasons.setdefault(why, []).append(name(path))
    phrases = []
    for why, paths in reasons.items():
        paths.sort(key=_natural)  # epoch_2 before epoch_10
        more = f" and {len(paths) - named} more" if len(paths) > named else ""
        phrases.append(f"{', '.join(paths[:named])}{more}: {why}")
    return phrases


def _natural(text):
    import re

    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)]


def newest_checkpoint(folder, log, unjudged=None, passed_over=None, written_after=None, found_out=None):
    """(path, step, mark) of the newest complete checkpoint in ``folder`` this job wrote, or (None, None, None).

    ``mark`` is what the no-progress brake compares (``checkpoints.progress_mark``): the step, or the save's
    time for one that records no step. Folders in a layout the finder cannot judge are said in the log, and
    added to ``unjudged`` ("path: why") for node 0's record. ``passed_over`` gets (path, why) of everything
    set aside on the way: a pointer file naming no save there, saves newer than the one found that are not
    complete, folders it cannot judge,
    plain files whose name gives no step (``--explain`` names them: walk6 W19).

    ``written_after``: the newest save already in the folder as the job started (``Book.saves_before``); a
    save not newer is another job's, never handed out, and the log says so in one line (walk7 B30).
    ``found_out``: a list that gets the ``checkpoints.Checkpoint`` found (its layout and why it is complete).
    """
    if not folder:
        return None, None, None
    try:
        from .checkpoints import progress_mark, scan
    except ImportError:
        return None, None, None
    try:
        found = scan(folder, stop_at_complete=True, written_after=written_after)
    except OSError as err:
        log(f"recovery: cannot read the checkpoint folder {folder}: {err.strerror or err}")
        return None, None, None
    for phrase in grouped(found.unjudged):
        log(f"recovery: cannot judge {phrase}")
    for path, why in found.unjudged:
        if unjudged is not None:
            unjudged.append(f"{path}: {why}")
    import os

    # the saves set aside on the way, as --explain names them (walk11b B14: a resume from step 160 beside
    # step-1160 in the folder, and no word of the eight newer saves cut off mid-write)
    # and the folders never looked into (walk13b B13: a scan stopped at its folder limit, unsaid, while the newest
    # save lay in a folder it never reached), at every restart
    for phrase in grouped(found.pointers + found.incomplete + found.unscanned,
                          name=lambda path: os.path.relpath(path, folder)):
        log(f"recovery: passed over {phrase}")
    earlier = found.earlier_line(folder)
    if earlier:
        log(f"recovery: passed over {earlier}")
    if passed_over is not None:
        passed_over.extend(found.pointers + found.incomplete + found.unjudged + found.stepless + found.unscanned
                           + ([(folder, earlier)] if earlier else []))
    newest = found.newest()
    if found_out is not None and newest is not None:
        found_out.append(newest)
    return (newest.path, newest.step, progress_mark(newest)) if newest is not None else (None, None, None)


def saves_before(folder, log):
    """The time node 0 hands out saves written after, taken as generation 0 starts: the newest save already in
    ``folder`` (``checkpoints.already_saved``: the storage's clock), or None when it holds none. The saves
    already there are said in one warning, since a fault resumes from none of them (walk7 B30)."""
    if not folder:
        return None
    try:
        from .checkpoints import already_saved
    except ImportError:
        return None
    try:
        found = already_saved(folder)
    except OSError:
        return None
    if found is None:
        return None
    log(f"warning: {earlier_saves(folder, found)}")
    return found.newest


WRITING_NOW_S = 60  # a save this young as a job starts: someone is writing into the folder now (walk8 B25)


def earlier_saves(folder, found, now=None):
    """The sentence for the saves already in a checkpoint folder as a job starts (``checkpoints.Saved``)."""
    import time

    age = max(0, (now if now is not None else time.time()) - found.newest)
    age = f"{age / 3600:.1f} h" if age >= 5400 else f"{age / 60:.0f} min" if age >= 90 else f"{age:.0f} s"
    upto = _judged_saves(folder, found)
    fresh = (now if now is not None else time.time()) - found.newest < WRITING_NOW_S
    writing = ("; one was written moments ago: another program may be saving here now, and its next save would pass "
               "for this job's (node 0 refuses a second nodeweave job over this folder, not any other writer)"
               if fresh else "")
    return (f"checkpoint_dir {folder} already holds {found.count} save(s) from before this job{upto} (the newest "
            f"written {age} ago): node 0 never hands them out (another run's), so a fault before this job's first save "
            f"restarts the script from scratch{writing}; give each run its own folder (e.g. checkpoints/<run id>) "
            "or empty it, and to go on from one, load it in the script yourself")


CUT_OFF_SHOWN = 3  # cut-off saves named in the saves-before sentence


def _judged_saves(folder, found):
    """', 1 cut off (checkpoint-1000); the newest complete at step 500' of ``found`` (``checkpoints.Saved``): the
    judge's verdicts (walk10 B15: `already holds 4 save(s) up to step 1000` counted a cut-off save as the highest
    step)."""
    import os

    names = [os.path.relpath(path, folder) for path, _ in found.cut_off]
    cut = ""
    if names:
        shown = ", ".join(names[:CUT_OFF_SHOWN]) + (f" and {len(names) - CUT_OFF_SHOWN} more"
                                                    if len(names) > CUT_OFF_SHOWN else "")
        cut = f", {len(names)} cut off ({shown})"
    if found.complete is None:
        return f"{cut}; none of them complete"
    newest = os.path.relpath(found.complete.path, folder)
    at = f"at step {found.step}" if found.step is not None else "with no step"
    return f"{cut}; the newest complete {at} ({newest})"


def user_stopped(received):
    import signal

    stops = tuple(getattr(signal, name) for name in STOP_SIGNALS)
    return any(s in stops for s in received)


def keep(settings, topo, book):
    """The book (``book.Book``) in this job's folder beside the check-in record (``runstate.job_dir``), and in
    the run's folder when `nodeweave run` started it: its JSON, as `nodeweave runs show`, `status` and a restarted
    container read it. ``topo``: the job's (its id and master port name the folder)."""
    from ..running.runstate import job_dir_of, run_dir, write_json

    paths = [os.path.join(job_dir_of(settings.env, topo), RECORD)]
    if settings.get("run_id"):
        paths.append(os.path.join(run_dir(settings.env, settings.get("run_id")), RECORD))
    data = dict(book.to_json(), launch=this_launch(settings))
    for path in paths:
        try:
            write_json(path, data)
        except OSError:
            pass  # a record for later reading; the job does not depend on it


def this_launch(settings):
    """What tells this start's launch from another's (``Generations.ended_before``): the command, launcher and
    checkpoint folder it was started with, and the container it runs in (``host.container_key``: None on a bare
    host, where nothing restarts an entrypoint). Kept beside the book as ``launch``."""
    from ..detection.host import container_key

    return {"command": list(settings.command), "launcher": settings.get("launcher"),
            "checkpoint_dir": settings.get("checkpoint_dir"), "container": container_key(settings.sysroot)}


def kept_launch(settings, topo):
    """The ``launch`` (:func:`this_launch`) kept with the job's book, or None (an older nodeweave kept none)."""
    data = _kept(settings, topo)
    launch = data.get("launch") if isinstance(data, dict) else None
    return launch if isinstance(launch, dict) else None


def _kept(settings, topo):
    """The record's JSON: with a run id (``nodeweave run``, ``--run-id``) that run's own (``keep`` writes it in the
    run's folder too: the job folder's may be an earlier run's), else the job folder's; None where there is none."""
    import json

    from ..running.runstate import job_dir_of, run_dir

    run_id = settings.get("run_id")
    folder = run_dir(settings.env, run_id) if run_id else job_dir_of(settings.env, topo)
    try:
        with open(os.path.join(folder, RECORD)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def last_book(settings, topo):
    """The recovery record this node kept last for the job of ``topo`` (node 0's book, a worker's copy, in
    ``$TMPDIR/nodeweave/jobs/<job id>-<master port>/``) as a ``book.Book``, or None: another job's book beside it
    in the same TMPDIR is never this one's (walk10 B8). One an older nodeweave wrote reads too
    (``Book.from_json``); one an older nodeweave kept in ``$TMPDIR/nodeweave/`` itself is not read
    (docs/recovery.md). With a run id, that run's own book (``_kept``): ``--explain --run-id X`` plans run X
    (note18: it planned the first layout, the book of that run ignored)."""
    from .book import Book

    data = _kept(settings, topo)
    if not isinstance(data, dict):
        return None
    try:
        return Book.from_json(data)
    except (TypeError, ValueError, AttributeError):
        return None  # not a book this nodeweave can read: as if none was kept
