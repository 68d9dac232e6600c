"""The newest *complete* checkpoint in a job's checkpoint folder, found by stat and small reads.

A restart hands the ranks ``NODEWEAVE_RESUME_FROM``; handing them a
half-written save turns one failure into a restart loop (Megatron-LM#5281:
44 loops on one). So every candidate is proved complete by what its writer
writes last (``layouts.py``), and a pointer file is never trusted alone:
DeepSpeed's ``latest`` and Megatron's ``latest_checkpointed_iteration.txt``
only rule out saves *newer* than the tag they name (those were still being
written); the named save is checked like any other, and when it fails the
newest complete one before it is taken.

A plain file (``ckpt_N.pt``, ``*step*N*.pt``) is complete when it is whole
(``listing.file_cut_off``) and no ``<name>.tmp``/``.partial`` lies beside it;
per-rank files (``ckpt_200_rank1.pt``) are one save, complete when ranks
0..N-1 are all there and whole. Lightning's ``ModelCheckpoint`` files
(``epoch=E-step=S[-metric=...].ckpt``, ``last.ckpt``) take the step from
their ``step=`` key or the ``global_step`` they hold; the ``last`` link is no
save of its own.

Steps come from what the library writes: the Trainer's ``global_step``,
DeepSpeed's recorded ``global_steps`` (a tag named by the user), the names
each library gives its folders (``checkpoint-N``, ``global_stepN``,
``iter_NNNNNNN``), never the last number of a name (a rank, a loss, a date).
A save with no step (one folder saved over in place) is ordered by time, and
``progress_mark`` gives the no-progress brake its save time.

Folders looked at: ``folder`` itself (a DCP save, which hides nothing beside
it), its children, and folders below that hold no save themselves, three
levels deep (``checkpoints/checkpoint_N``, ``checkpoints/run-<date>/
checkpoint-N``, ``lightning_logs/version_0/checkpoints``), at most
``SEARCH_FOLDERS`` of them, the newest first; the folders either bound leaves
are named in ``Scan.unscanned``. A link inside the folder leading back into
it never makes a second save (``_search_all``). A folder with
checkpoint-like files in no known layout is listed in ``Scan.unjudged`` (the
node's log says so) and never handed out; a candidate that cannot be read is
incomplete, never a traceback. Newest means the highest step; a candidate
without a step only wins when none has one, by modification time.

Never a save of another job: ``scan(folder, written_after=T)`` passes over
every candidate whose newest file is not newer than ``T``, and
``already_saved(folder)`` gives node 0 that ``T`` as a job starts: the newest
save time already in the folder, on the storage's own clock (so no clock skew
between a node and a network file system moves the line). A save this job
writes, or writes again under the same name, is newer; a previous run's, a
sweep's other point, a copied folder are not (docs/recovery.md, "Only this
job's saves").

API: ``newest_complete(folder) -> Checkpoint | None``,
``incomplete(folder) -> [(path, reason)]``, ``scan(folder) -> Scan``,
``already_saved(folder) -> Saved | None``, and
``Progress`` (``progress.py``). The rules: ``layouts.py`` (DCP, DeepSpeed,
Megatron), ``huggingface.py`` (Trainer, Accelerate), ``dcp_metadata.py``
(DCP's ``.metadata`` read without torch), ``inert_pickle.py`` (torch's
pickles read without torch), ``listing.py`` (one folder's
entries), ``whole_files.py`` (is one file whole, read from the offsets its
format records). Stdlib only; imports nothing outside this room but how deep to look (``ownfolders``, which a
node 0's claim reads too) and, to pass over a folder another job claims now, ``running.claim``.
"""

import os
import re

from ..ownfolders import SEARCH_DEPTH, SEARCH_FOLDERS  # noqa: F401  (how deep: a node 0's claim reads it too)
from . import huggingface, layouts
from .inert_pickle import PickleError, torch_save_fields
from .listing import TEMP_SUFFIXES, Listing, Unreadable, file_cut_off, first_few, named_step
from .progress import Progress  # noqa: F401  (part of this module's API)

_MEGATRON_TRACKER = "latest_checkpointed_iteration.txt"
_PLAIN_FILE = re.compile(
    r"(?i).*(?:ckpt|checkpoint|step|iter)[^0-9/]{0,3}(\d+)[^/]*\.(?:pt|pth|ckpt|bin|safetensors|tar)")
_LIGHTNING = re.compile(r"[^/]*\.ckpt")
_RANK = re.compile(r"(?i)([_.-]?rank[_-]?)(\d+)")


class Checkpoint:
    """One complete checkpoint: ``path``, ``step`` (int or None), ``layout``, ``why`` it is complete."""

    __slots__ = ("path", "step", "layout", "why")

    def __init__(self, path, step, layout, why):
        for name, value in zip(self.__slots__, (path, step, layout, why)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"Checkpoint is frozen; cannot set {name}")

    def __eq__(self, other):
        return isinstance(other, Checkpoint) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash((self.path, self.step, self.layout, self.why))

    def __repr__(self):
        return f"Checkpoint(path={self.path!r}, step={self.step!r}, layout={self.layout!r}, why={self.why!r})"

    def to_dict(self):
        return {"path": self.path, "step": self.step, "layout": self.layout, "why": self.why}


class NotASave(Exception):
    """A folder named like a save turned out to hold none (``runs/step-99/`` of logs): no candidate after all."""


class Scan:
    """What a look at a folder found: ``complete`` and ``incomplete`` [(path, reason)], newest first, ``pointers``
    [(path, why)]: pointer files naming no save there (no save themselves), and
    ``unjudged`` [(path, why)]: folders holding checkpoint-like files in a layout no rule here knows."""

    def __init__(self):
        self.complete = []
        self.incomplete = []
        self.pointers = []  # (path, why): a library's pointer file (latest, Megatron's tracker) naming no save there:
        # said as passed over, never counted as a save, cut off or not (walk12 B4)
        self.unjudged = []
        self.stepless = []  # (path, why): plain saved files whose name gives no step, never candidates
        self.candidates = []  # (path, step, layout, judge: () -> (complete, text[, step]))
        self.earlier = []  # (path, step): saves ranked before the one found, written before ``written_after``
        self.written_after = None  # saves not newer than this time (the storage's clock) are another job's
        self.inside = None  # the checkpoint folder's real path: a link leading out of it is never a candidate
        self.folders = 0
        self.unscanned = []  # (path, why): folders never looked into (the folder limit, the depth): said, not silent
        self.looked = set()  # real paths of the folders looked into: a link back into one is not walked again
        self.links_inside = False  # a link leading inside the folder was met: one save may have two names
        self.base = None  # the checkpoint folder's path as given (``inside`` is where it leads)

    def candidate(self, path, step, layout, judge):
        """``step``: a number, None, or a callable that reads it from the save (called once, to order)."""
        self.candidates.append((path, step, layout, judge))

    def verdict(self, path, step, layout, ok, text):
        """A candidate already judged (a plain file, a save past its pointer file)."""
        self.candidate(path, step, layout, lambda: (ok, text))

    def judge(self, stop_at_complete):
        """Judge the candidates newest first; with ``stop_at_complete``, only until one is complete. Judging
        every one, ``JUDGES`` threads read the saves at once (each wait for storage, a network file system's
        above all, overlaps the others'); the verdicts are taken in the same order."""
        ordered = sorted([(path, _resolve(step), layout, judge) for path, step, layout, judge in self.candidates],
                         key=_newest_first)
        # another job's saves are never judged, only named; lazily, so a stop at the first complete one looks at
        # no save past it
        ordered = (candidate for candidate in ordered if self.written_after is None or not self._earlier(candidate))
        if stop_at_complete:
            judged = ((candidate, _verdict(candidate[3])) for candidate in ordered)
        else:
            ordered = list(ordered)
            judges = [judge for _, _, _, judge in ordered]
            judged = zip(ordered, [_verdict(judge) for judge in judges] if len(ordered) < 2 * JUDGES
                         else _judged_in_threads(judges))
        for (path, step, layout, _), verdict in judged:
            if verdict is None:
                continue
            ok, text, *recorded = verdict
            if recorded and recorded[0] is not None:
                step = recorded[0]  # what the library wrote wins over the name
            if len(recorded) > 1:
                layout = recorded[1]  # the layout its files showed, not its name's (_deferred)
            if ok:
                self.complete.append(Checkpoint(path, step, layout, text))
                if stop_at_complete:
                    return self
            else:
                self.incomplete.append((path, f"{layout}: {text}"))
        return self

    def newest(self):
        return self.complete[0] if self.complete else None

    def _earlier(self, candidate):
        path, step, _, _ = candidate
        if _newest_mtime(path) > self.written_after:
            return False
        self.earlier.append((path, step))
        return True

    def earlier_line(self, folder):
        """One clause for every save passed over as another job's (never one per save: a folder of 200 of them
        is one line), or None."""
        if not self.earlier:
            return None
        names = [os.path.relpath(path, folder) for path, _ in self.earlier]
        steps = [step for _, step in self.earlier if step is not None]
        named = names[0] if len(names) == 1 else f"{names[-1]} .. {names[0]}"
        return (f"{len(names)} save(s) written before this job started ({named}"
                + (f", named up to step {max(steps)}" if steps else "")
                + "; complete or cut off alike, not judged): another run's, never handed out")


JUDGES = 8  # threads that judge saves at once when every save is judged (incomplete, scan)


def _verdict(judge):
    """(complete, text[, step]) of one candidate, or None when it turned out to be no save."""
    try:
        return judge()
    except NotASave:
        return None
    except (Unreadable, PickleError) as exc:
        return False, str(exc)


def _judged_in_threads(judges):
    """Every judge's verdict, in order, from ``JUDGES`` threads, each taking every JUDGES-th judge: one task per
    thread, not one per save (a future per save cost more than judging a small save)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(JUDGES, thread_name_prefix="nodeweave-checkpoints") as pool:
        shares = list(pool.map(lambda share: [_verdict(judge) for judge in share],
                               [judges[start::JUDGES] for start in range(JUDGES)]))
    return [shares[index % JUDGES][index // JUDGES] for index in range(len(judges))]


def _resolve(step):
    if not callable(step):
        return step
    try:
        return step()
    except (Unreadable, PickleError, OSError):
        return None


def _newest_first(candidate):
    path, step, _, _ = candidate
    if step is not None:
        return (0, -step, path)
    return (1, -_mtime(path), path)


def newest_complete(folder):
    """The newest complete checkpoint under ``folder``, or None (no folder, none complete).

    Candidates are judged newest first and the scan stops at the first
    complete one, so a folder of 1,000 saves costs a listing, not 1,000 checks.
    """
    return scan(folder, stop_at_complete=True).newest()


def incomplete(folder):
    """[(path, reason)] for every checkpoint under ``folder`` that is not complete, newest first."""
    return scan(folder).incomplete


def scan(folder, stop_at_complete=False, written_after=None):
    """Look at ``folder``: every candidate checkpoint judged (or, with ``stop_at_complete``, up to the newest).
    ``written_after``: a time (``already_saved``'s); saves not newer than it are another job's, set aside in
    ``Scan.earlier``, never judged or handed out."""
    result = Scan()
    result.written_after = written_after
    folder = os.fspath(folder)
    result.inside = _real(folder)
    if not os.path.isdir(folder):
        return result
    if result.inside is None:
        result.incomplete.append((folder, UNFOLLOWED))
        return result
    try:
        root = Listing(folder)
    except Unreadable as exc:
        result.incomplete.append((folder, str(exc)))
        return result
    _search_all(root, result)
    return result.judge(stop_at_complete)


class Saved:
    """The saves already in a checkpoint folder as a job starts: how many (``count``, complete or not), the
    newest's time (the storage's clock: its files' modification time, of any save, cut off or not), the newest
    complete save (``complete``, a :class:`Checkpoint`, or None) and its step (``step``: None when none is
    complete or it records none), and the saves newer than it that are cut off (``cut_off``: [(path, why)],
    newest first), each judged by the one judge the restart uses (:meth:`Scan.judge`; walk10 B15: a cut-off
    checkpoint-1000 was said as the highest step of the saves there)."""

    __slots__ = ("count", "newest", "step", "complete", "cut_off")

    def __init__(self, count, newest, step, complete=None, cut_off=()):
        self.count, self.newest, self.step = count, newest, step
        self.complete, self.cut_off = complete, list(cut_off)


def already_saved(folder):
    """The :class:`Saved` of every candidate save under ``folder``, or None when it holds none. Node 0 takes it
    once, as the job starts: every save found later that is not newer than ``Saved.newest`` is another job's
    (``scan(written_after=...)``). The candidates are judged newest first up to the newest complete one, as a
    restart judges them (the same listing, the same judge: no second reading of a layout), so the count says
    which of the newer ones are cut off and the step is a complete save's."""
    result = Scan()
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        return None
    # a link leading out of the folder is set aside here as the scan sets it aside: its saves are another
    # folder's, never this folder's own (walk8 B10: they were counted, and the user told to empty the folder)
    result.inside = _real(folder)
    if result.inside is None:
        return None
    try:
        _search_all(Listing(folder), result)
    except Unreadable:
        return None
    if not result.candidates:
        return None
    count = len(result.candidates)
    newest = max(_newest_mtime(path) for path, _, _, _ in result.candidates)
    result.judge(stop_at_complete=True)
    complete = result.newest()
    return Saved(count, newest, complete.step if complete is not None else None, complete, result.incomplete)


def progress_mark(checkpoint):
    """How far a save is, for the no-progress brake: its step, or, for a save with none (one folder saved over
    in place), ``{"saved": <mtime>}`` of its newest file, so a save written again counts as progress."""
    if checkpoint is None:
        return None
    if checkpoint.step is not None:
        return checkpoint.step
    return {"saved": round(_newest_mtime(checkpoint.path), 3)}


def newest_written(path):
    """When a save was last written (its newest file's mtime, the storage's clock): what --explain weighs against
    the running job's start (``faults``)."""
    return _newest_mtime(path)


def _newest_mtime(path):
    newest = _mtime(path)
    if os.path.isdir(path):
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    try:
                        newest = max(newest, entry.stat().st_mtime)
                    except OSError:
                        pass
        except OSError:
            pass
    return newest


UNSCANNED_LIMIT = (f"not looked into: the finder looks into at most {SEARCH_FOLDERS} folders (the newest first), "
                   "and saves below these are never handed out; keep other folders (runs, logs, data, sweeps) out of "
                   "checkpoint_dir, or point it at the folder this job saves into")
UNSCANNED_DEEP = (f"not looked into: {SEARCH_DEPTH + 1} or more folders below checkpoint_dir (the finder looks "
                  f"{SEARCH_DEPTH} deep), and saves there are never handed out; save nearer to checkpoint_dir, or "
                  "point it at the folder this job saves into")


def _search_all(root, result):
    """Every candidate under ``root`` (the checkpoint folder), each save once, under its own name: a link inside
    the folder to a folder or save there (``loop/up -> ..``, ``latest -> checkpoint-500``) is never a second
    save, nor the first save's name (walk13b B2: every save was counted twice and handed out as
    ``loop/up/step-100.pt``)."""
    result.base = root.path
    _search(root, result, 0)
    if result.links_inside:
        own = result.inside.rstrip(os.sep)
        base = root.path.rstrip(os.sep)

        def real(path):
            return _real(path) or path

        def named(path):  # a path through no link: its real path is its own name below the folder
            return own + path[len(base):] if path.startswith(base + os.sep) or path == base else None

        def once(entries):
            kept, first = [], {}
            for entry in entries:
                where = real(entry[0])
                own_name = named(entry[0]) == where
                if where in first:
                    index, was_own = first[where]
                    if own_name and not was_own:
                        kept[index] = entry  # the save's own name wins over a link's
                        first[where] = (index, True)
                    continue
                first[where] = (len(kept), own_name)
                kept.append(entry)
            return kept
        result.candidates = once(result.candidates)
        for notes in ("unjudged", "stepless", "pointers", "unscanned"):
            setattr(result, notes, once(getattr(result, notes)))


def _search(root, result, depth, through_link=False):
    """The candidates in one folder: the folder itself when it is a DCP save, its children named or recognised
    as saves, its files; folders that are none of these are looked into, ``SEARCH_DEPTH`` deep, the newest
    first, at most ``SEARCH_FOLDERS``; the folders left are noted in ``Scan.unscanned`` (walk13b B13: a newer
    save in an unscanned folder went unseen, unsaid). A folder reached through a link inside the checkpoint
    folder that was already looked into is not looked into again (walk13b B2: ``loop/up -> ..``)."""
    if through_link:
        real = _real(root.path)
        if real is None or real in result.looked:
            return
        result.looked.add(real)
    else:
        result.looked.add(result.inside.rstrip(os.sep) + root.path[len(result.base.rstrip(os.sep)):])
    result.folders += 1
    _drop_links_out(root, result)
    if ".metadata" in root or root.matching(layouts.DISTCP):
        result.candidate(root.path, _known_name_step(os.path.basename(root.path)), "dcp",
                         lambda: layouts.check_dcp(root))
    deepspeed_limit = _deepspeed_latest_step(root)
    megatron_limit = _megatron_tracker_step(root)
    _pointers_to_nothing(root, result, deepspeed_limit, megatron_limit)
    accelerate = []
    below = []
    for name in root.names:
        if root.is_dir(name):
            if _claimed(root.join(name), result):
                continue
            found, listing = _child_candidate(root, name, result, deepspeed_limit, megatron_limit, depth, accelerate)
            if not found and not name.startswith("."):
                if depth < SEARCH_DEPTH:
                    below.append((name, listing))
                elif listing is not None and _holds_saves(listing):  # saves or folders there, never looked at
                    result.unscanned.append((root.join(name), UNSCANNED_DEEP))
    _file_candidates(root, result)
    _accelerate_siblings(accelerate, result, depth)
    # the newest folders first: at the limit, the ones left out are the oldest, never this job's own run folder
    below.sort(key=lambda item: (-(root.mtime_ns(item[0]) or 0), item[0]))
    for index, (name, listing) in enumerate(below):
        if result.folders >= SEARCH_FOLDERS:
            result.unscanned.extend((root.join(left), UNSCANNED_LIMIT) for left, _ in below[index:])
            return
        if listing is None:
            try:
                listing = Listing(root.join(name))
            except Unreadable:
                continue
        _search(listing, result, depth + 1, through_link or root.is_link(name))


CLAIMED = ("not looked into: another job's node 0 claims this folder now ({who}): its saves are that job's, never "
           "handed out here; give each run its own folder beside the other's, never inside it")


def _claimed(path, result):
    """Whether the subfolder ``path`` is claimed by another job's live node 0 (walk17b B19): noted, not scanned."""
    from ..running.claim import live_claim

    held = live_claim(path)
    if held is None:
        return False
    result.unscanned.append((path, CLAIMED.format(who=f"job {held.get('job')!r}, node 0 on {held.get('host')} "
                                                      f"pid {held.get('pid')}")))
    return True


LINKED_OUT = ("a link leading out of the checkpoint folder (to {target}): another folder's saves, a job writing there "
              "now included, are never handed out; save into the folder itself")


UNFOLLOWED = "a link this node may not follow (permission denied, or a loop): never handed out"


def _real(path):
    """Where ``path`` leads, or None when a link along it cannot be read (``os.path.realpath`` raises there: a link
    in /proc of another user's process, a loop), so one such entry is named, not the scan ended (walk10 B5)."""
    try:
        return os.path.realpath(path)
    except (OSError, RuntimeError):
        return None


def _drop_links_out(root, result):
    """Take out of ``root``'s listing every entry that is a link leading out of the checkpoint folder, each noted
    as passed over (replay7 N3: a link inside checkpoint_dir to another job's folder handed out that job's save,
    which the saves-before line could not stop: it was being written now)."""
    inside = result.inside
    if inside is None:
        return
    for name in [n for n in root.names if root.is_link(n)]:
        target = _real(root.join(name))
        if target is None:  # walk10 B5: a link this node may not follow (/proc/1/cwd) is passed over, named
            result.stepless.append((root.join(name), UNFOLLOWED))
            root.names.remove(name)
            root.entries.pop(name, None)
        elif target != inside and not target.startswith(inside.rstrip(os.sep) + os.sep):
            result.stepless.append((root.join(name), LINKED_OUT.format(target=target)))
            root.names.remove(name)
            root.entries.pop(name, None)
        else:
            result.links_inside = True  # its saves may be met under their own name too: _search_all keeps one


def _known_name_step(name):
    """A folder's step when it is named by a layout's own key (``step-100``, ``checkpoint-4200``), else None."""
    kind = _name_kind(name)
    if kind:
        return int(re.search(r"\d+", name).group())
    return named_step(name)


def _child_candidate(root, name, result, deepspeed_limit, megatron_limit, depth, accelerate):
    """A child folder named like a checkpoint (judged later), or one whose files say which layout it is.
    (True when it is a candidate, or a layout nodeweave cannot judge, noted in ``result.unjudged``; its
    listing when one was made)."""
    path = root.join(name)
    step = _known_name_step(name)
    kind = _name_kind(name)
    if kind:
        layout, rule = _NAMED_LAYOUTS[kind]
        limit = {"deepspeed": deepspeed_limit, "megatron": megatron_limit}.get(layout)
        if limit is not None and step is not None and step > limit[0]:
            result.verdict(path, step, layout, False, f"newer than {limit[1]}: its save had not finished")
        elif layout == "accelerate":
            accelerate.append((step, path))
        else:
            result.candidate(path, step, layout, _deferred(rule, path, depth, layout))
        return True, None
    try:
        listing = Listing(path)
    except Unreadable:
        return False, None  # an unknown folder that cannot be listed is no candidate
    layout = _content_layout(listing)
    if layout is None:
        if _looks_saved(listing) and not _holds_saves(listing):
            result.unjudged.append((path, f"checkpoint-like files ({first_few(_saved_files(listing))}) in a "
                                          "layout nodeweave does not know: never handed out"))
        return False, listing
    if layout[0] == "accelerate":
        accelerate.append((step, path))
    elif layout[0] == "deepspeed" and step is None:
        result.candidate(path, lambda: _deepspeed_step(listing), "deepspeed", lambda: layout[1](listing))
    else:
        result.candidate(path, step, layout[0], lambda: layout[1](listing))
    return True, listing


def _saved_files(listing):
    return [n for n in listing.loader_files() if not n.endswith(".json")] + \
        [n for _, n in listing.matching(layouts.DISTCP)]


def _looks_saved(listing):
    """A folder holding weights, states or shards (not only logs, JSON or text)."""
    return bool(_saved_files(listing)) or ".metadata" in listing or bool(
        listing.matching(layouts.MEGATRON_RANK_DIR)) or bool(listing.matching(layouts.DS_TAG_DIR))


def _holds_saves(listing):
    """Saves further down (a run folder of checkpoint-N, a Lightning checkpoints/ of .ckpt files)."""
    return any(_name_kind(n) or _PLAIN_FILE.fullmatch(n) or _LIGHTNING.fullmatch(n) for n in listing.names) or \
        any(listing.is_dir(n) for n in listing.names)


def _deepspeed_step(listing):
    """``global_steps`` that DeepSpeed recorded in a tag's model states (a tag named by the user)."""
    return layouts.deepspeed_record(listing)[1].get("global_steps")


def _accelerate_siblings(saves, result, depth=0):
    """Accelerate saves in one folder, each judged with the registered-object count of the save before it
    (the folder records no count; ``custom_checkpoint_N.pkl`` come last)."""
    ordered = sorted(saves, key=lambda item: (item[0] is None, item[0] if item[0] is not None else 0, item[1]))
    for index, (step, path) in enumerate(ordered):
        before = ordered[index - 1][1] if index else None
        result.candidate(path, step, "accelerate", _accelerate_judge(path, before, depth))


def _accelerate_judge(path, before, depth):
    def judge():
        listing = Listing(path)
        if depth and not _looks_saved(listing):
            raise NotASave(path)
        expected = 0
        if before is not None:
            try:
                expected = huggingface.registered_objects(Listing(before))
            except Unreadable:
                expected = 0
        return _by_content(listing, "accelerate", lambda listing: huggingface.check_accelerate(listing, expected))
    return judge


def _deferred(rule, path, depth=0, layout=None):
    """Judge a folder named like a save when its turn comes; below the top, one that holds nothing saved
    (``runs/step-99/`` of logs) is no candidate. What the folder holds says its layout before its name does
    (walk12 B15: a whole DeepSpeed tag named ``step-200`` was refused as ``torchtitan: no .metadata``, a whole DCP
    save named ``checkpoint-100`` as a Trainer's without ``trainer_state.json``): ``_by_content``, for every named
    layout (Accelerate's ``checkpoint_N`` too)."""
    def judge():
        listing = Listing(path)
        if depth and not _looks_saved(listing):
            raise NotASave(path)
        return _by_content(listing, layout, rule)
    return judge


def _by_content(listing, layout, rule):
    """The verdict on a folder named like ``layout``'s saves: by ``rule``, unless its files are another layout's
    (``_content_layout``, not one ``_COVERS`` gives ``layout``'s rule), then by that layout's rule, named by it."""
    held = _content_layout(listing)
    if held is None or held[0] == layout or held[0] in _COVERS.get(layout, ()):
        return rule(listing)
    ok, text, *step = held[1](listing)
    return ok, text, step[0] if step else None, held[0]


# layouts whose rule judges another layout's files as part of its own: Megatron's torch_dist iteration is a DCP
# save with metadata.json, which the Megatron rule checks on top of DCP's
_COVERS = {"megatron": ("dcp",)}


def _name_kind(name):
    for kind, pattern in _NAME_PATTERNS:
        if pattern.fullmatch(name):
            return kind
    return None


_NAME_PATTERNS = (
    ("hf-trainer", re.compile(r"checkpoint-\d+")),
    ("dcp", re.compile(r"step-\d+")),  # TorchTitan's name for a DCP save: named by the format (walk12 B15)
    ("deepspeed", re.compile(r"global_step\d+")),
    ("megatron", re.compile(r"iter_\d{7}")),
    ("accelerate", re.compile(r"checkpoint_\d+")),
)
_NAMED_LAYOUTS = {
    "hf-trainer": ("hf-trainer", huggingface.check_hf_trainer),
    "dcp": ("dcp", layouts.check_dcp),
    "deepspeed": ("deepspeed", layouts.check_deepspeed_tag),
    "megatron": ("megatron", layouts.check_megatron_iter),
    "accelerate": ("accelerate", huggingface.check_accelerate),
}


def _content_layout(listing):
    """A folder with another name, recognised by its files (a custom ``save_state`` or tag name)."""
    if "trainer_state.json" in listing:
        return _NAMED_LAYOUTS["hf-trainer"]
    if listing.matching(huggingface.RANDOM_STATES):
        return _NAMED_LAYOUTS["accelerate"]
    if ".metadata" in listing or listing.matching(layouts.DISTCP):
        return ("dcp", layouts.check_dcp)
    if any(name.endswith("model_states.pt") for name in listing.names):
        return _NAMED_LAYOUTS["deepspeed"]
    if listing.matching(layouts.MEGATRON_RANK_DIR):
        return _NAMED_LAYOUTS["megatron"]
    return None


def _deepspeed_latest_step(root):
    """(step, text) of the ``global_stepN`` that ``latest`` names; tags past it were still being written."""
    return _pointer_step(root, "latest", lambda text: layouts.DS_TAG_DIR.fullmatch(text))


def _megatron_tracker_step(root):
    return _pointer_step(root, _MEGATRON_TRACKER, lambda text: re.fullmatch(r"(\d+)", text))


def _pointers_to_nothing(root, result, deepspeed_limit, megatron_limit):
    """A library's pointer file naming a save that is not in the folder (cleaned up, a partial copy) is passed
    over, said: the library's own resume reads the pointer (DeepSpeed's ``load_checkpoint`` with no tag, Megatron's
    ``--load``) and fails on it, while node 0 hands out the newest save that is there (walk8 B20)."""
    pointed = []
    if deepspeed_limit is not None:
        pointed.append(("latest", f"global_step{deepspeed_limit[0]}", "load it with its tag (load_checkpoint(dir, "
                        "tag=...)), or write its tag into latest"))
    if megatron_limit is not None:
        pointed.append((_MEGATRON_TRACKER, f"iter_{megatron_limit[0]:07d}", "write its iteration into the tracker"))
    # a pointer there but unreadable (empty: rank 0 killed while writing it, a folder, not a tag) fails the
    # library's resume alike: said the same way, never passed in silence (walk11b B16)
    pointers = (("latest", deepspeed_limit, "DeepSpeed's load_checkpoint(dir) reads it as the tag; load with its "
                 "tag (load_checkpoint(dir, tag=...)), or write the tag of a save that is there into latest",
                 layouts.DS_TAG_DIR.fullmatch),
                (_MEGATRON_TRACKER, megatron_limit, "Megatron's --load reads it; write the iteration of a save that "
                 "is there into the tracker", lambda text: re.fullmatch(r"(\d+)", text)))
    for name, limit, remedy, parse in pointers:
        if limit is None and name in root:
            why = _pointer_problem(root, name, parse)
            if why:
                result.pointers.append((root.join(name), f"{name} {why}: the library's own resume reads it and "
                                          f"would fail; node 0 hands out the newest save that is there: {remedy}"))
    for name, save, remedy in pointed:
        text = (deepspeed_limit if name == "latest" else megatron_limit)[1]
        if name == "latest":
            save = text[len("latest ("):-1]
        if save not in root.names:
            result.pointers.append((root.join(name), f"{text} names {save}, which is not in the folder: the "
                                      "library's own resume reads it and would fail; node 0 hands out the newest "
                                      f"save that is there: {remedy}"))


def _pointer_problem(root, name, parse):
    """Why pointer file ``name`` (there) names no save, or None when it names one."""
    try:
        text = root.read(name, 4096).decode("utf-8", "replace").strip()
    except Unreadable as err:
        return f"cannot be read ({err})"
    if not text:
        return "is empty (its writer stopped before it wrote the tag)"
    # a library's tag, or any save there by name (a script's own `latest` naming step-8 or step-3.pt, as
    # examples/resilient_train.py writes it): only a name of nothing there is no save's name
    return None if parse(text) or ("/" not in text and text in root) else f"holds {text[:40]!r}, no save's name"


def _pointer_step(root, name, parse):
    if name not in root:
        return None
    try:
        text = root.read(name, 4096).decode("utf-8", "replace").strip()
    except Unreadable:
        return None
    match = parse(text)
    return (int(match.group(1)), f"{name} ({text})") if match else None


def _file_candidates(root, result):
    """Plain files (``ckpt_N.pt``), Lightning ``.ckpt`` files, and per-rank files grouped into one save."""
    groups = {}
    for name in root.names:
        if root.is_dir(name):
            continue
        if not (_PLAIN_FILE.fullmatch(name) or _LIGHTNING.fullmatch(name)):
            if not _lone_temporary(root, name, result) and name.endswith(_SAVED_SUFFIXES) and \
                    not name.startswith("."):
                result.stepless.append((root.join(name), STEPLESS))
            continue
        if _links_to_a_sibling(root, name):
            continue  # Lightning's last.ckpt link: the save it names is judged under its own name
        rank = _RANK.search(name)
        if rank and _PLAIN_FILE.fullmatch(name):
            key = name[:rank.start()] + name[rank.end():]
            groups.setdefault(key, {})[int(rank.group(2))] = name
        elif _LIGHTNING.fullmatch(name):
            _lightning_candidate(root, name, result)
        else:
            result.candidate(root.join(name), named_step(name), "file", _file_judge(root, name))
    _rank_groups(root, groups, result)


# Files torch.save, safetensors and the pickles write; a plain one is a checkpoint only when its name gives a step.
_SAVED_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".tar")
# The names _PLAIN_FILE takes, as the hint shows them (walk10 B15: the hint showed only the underscore forms while
# docs/recovery.md's own example saves step-{step}.pt; a test holds every example to _PLAIN_FILE)
PLAIN_NAMES = ("ckpt_<N>", "ckpt-<N>", "checkpoint_<N>", "checkpoint-<N>", "step_<N>", "step-<N>", "iter_<N>",
               "iter-<N>")
STEPLESS = (f"a plain file whose name gives no step ({', '.join(PLAIN_NAMES)}: ckpt, checkpoint, step or iter, then "
            "the step) is not taken for a checkpoint (it may be pretrained weights or data), so it is never handed out: save as "
            "ckpt_<step>.pt to resume from it")


def _file_judge(root, name):
    return lambda: _judge_file(root, name)


def _links_to_a_sibling(root, name):
    path = root.join(name)
    if not root.is_link(name):
        return False
    target = _real(path)
    return target is not None and os.path.dirname(target) == _real(root.path) and os.path.isfile(target)


def _judge_file(root, name):
    """(complete, text) for one saved file: whole, not empty, no temporary of it beside it."""
    temp = [name + suffix for suffix in TEMP_SUFFIXES if name + suffix in root]
    why = file_cut_off(root, name)
    if why:
        return False, why
    if temp:
        return False, f"{temp[0]} beside it: a save of this name was in progress"
    return True, f"file of {root.size(name)} bytes, whole, no temporary beside it"


_LIGHTNING_STEP = re.compile(r"(?:^|[-_])step=(\d+)")


def _lightning_candidate(root, name, result):
    """A Lightning ``ModelCheckpoint`` file: the step from its ``step=`` key, else the ``global_step`` it holds
    (``last.ckpt``, ``{epoch}-{step}`` names without keys); never a metric's digits."""
    path = root.join(name)
    keyed = _LIGHTNING_STEP.search(name)
    step = int(keyed.group(1)) if keyed else (lambda: torch_save_fields(path, "global_step").get("global_step"))

    def judge():
        ok, text = _judge_file(root, name)
        if not ok:
            return ok, text
        fields = torch_save_fields(path, "global_step", "epoch")
        if "global_step" not in fields:
            return False, "holds no global_step: not a Lightning checkpoint it can resume from"
        return True, f"Lightning: {text}, global_step {fields['global_step']}", fields["global_step"]
    result.candidate(path, step, "lightning", judge)


def _rank_groups(root, groups, result):
    """Per-rank files of one save (``ckpt_200_rank0.pt``..): complete when ranks 0..N-1 are all there and
    whole, N being at least the rank count of the save before it (a save records no world size)."""
    ordered = sorted(groups.items(), key=lambda item: (named_step(item[0]) is None, named_step(item[0]) or 0))
    before = 0
    for key, ranks in ordered:
        result.candidate(root.join(ranks[min(ranks)]), named_step(key), "per-rank files",
                         _rank_group_judge(root, ranks, before))
        before = max(before, len(ranks))


def _rank_group_judge(root, ranks, before):
    def judge():
        missing = next((r for r in range(max(max(ranks) + 1, before)) if r not in ranks), None)
        if missing is not None:
            why = f" (the save before had {before})" if missing >= max(ranks) + 1 else ""
            return False, f"rank {missing}'s file is missing{why}"
        problems = [f"{ranks[r]}: {text}" for r in sorted(ranks) for ok, text in [_judge_file(root, ranks[r])]
                    if not ok]
        if problems:
            return False, first_few(problems)
        return True, f"{len(ranks)} per-rank files (this is rank {min(ranks)}'s), all whole"
    return judge


def _lone_temporary(root, name, result):
    """``ckpt_200.pt.tmp`` with no ``ckpt_200.pt``: a save that never reached its rename."""
    for suffix in TEMP_SUFFIXES:
        final = name[:-len(suffix)]
        if name.endswith(suffix) and _PLAIN_FILE.fullmatch(final) and final not in root:
            # the path is the file that is there (walk12 B20: `ckpt_500.pt`, not in the folder, was named as cut
            # off, and a pre-flight script acting on the path got "No such file"); the save's name is in the why
            result.verdict(root.join(name), named_step(final), "file", False,
                           f"the save {final} never reached its rename: only {name} exists")
            return True
    return False


def _mtime(path):
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
