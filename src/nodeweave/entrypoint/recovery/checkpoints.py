"""The newest *complete* checkpoint in a job's checkpoint folder, found by stat and small reads.

A restart hands the ranks ``NODEWEAVE_RESUME_FROM``; handing them a
half-written save turns one failure into a restart loop (Megatron-LM#5281:
44 loops on one). So every candidate is proved complete by what its writer
writes last (``layouts.py``), and a pointer file is never trusted alone:
DeepSpeed's ``latest`` and Megatron's ``latest_checkpointed_iteration.txt``
only rule out saves *newer* than the tag they name (those were still being
written); the named save is checked like any other, and when it fails the
newest complete one before it is taken.

A plain file (``ckpt_N.pt``, ``*step*N*.pt``) is complete when it is not
empty, no ``<name>.tmp``/``.partial`` lies beside it, and, for a torch.save
zip or a safetensors file, its end is written.

Folders looked at: ``folder`` itself (a DCP folder), its children, and the
children of ``folder/checkpoints`` (Accelerate's automatic naming). Unknown
names are ignored; a candidate that cannot be read is incomplete, never a
traceback. Newest means the highest step; a candidate without a step number
only wins when none has one, by modification time.

API: ``newest_complete(folder) -> Checkpoint | None``,
``incomplete(folder) -> [(path, reason)]``, ``scan(folder) -> Scan``, and
``Progress`` (``progress.py``). The rules: ``layouts.py`` (DCP, DeepSpeed,
Megatron), ``huggingface.py`` (Trainer, Accelerate), ``dcp_metadata.py``
(DCP's ``.metadata`` read without torch), ``listing.py`` (one folder's
entries, cut-off files). Stdlib only; imports nothing outside this room.
"""

import os
import re

from . import huggingface, layouts
from .listing import TEMP_SUFFIXES, Listing, Unreadable, file_cut_off, step_in
from .progress import Progress  # noqa: F401  (part of this module's API)

_MEGATRON_TRACKER = "latest_checkpointed_iteration.txt"
_PLAIN_FILE = re.compile(
    r"(?i).*(?:ckpt|checkpoint|step|iter)[^0-9/]{0,3}(\d+)[^/]*\.(?:pt|pth|ckpt|bin|safetensors|tar)")


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


class Scan:
    """What a look at a folder found: ``complete`` and ``incomplete`` [(path, reason)], newest first."""

    def __init__(self):
        self.complete = []
        self.incomplete = []
        self.candidates = []  # (path, step, layout, judge: () -> (complete, text))

    def candidate(self, path, step, layout, judge):
        self.candidates.append((path, step, layout, judge))

    def verdict(self, path, step, layout, ok, text):
        """A candidate already judged (a plain file, a save past its pointer file)."""
        self.candidate(path, step, layout, lambda: (ok, text))

    def judge(self, stop_at_complete):
        """Judge the candidates newest first; with ``stop_at_complete``, only until one is complete."""
        for path, step, layout, judge in sorted(self.candidates, key=_newest_first):
            try:
                ok, text = judge()
            except Unreadable as exc:
                ok, text = False, str(exc)
            if ok:
                self.complete.append(Checkpoint(path, step, layout, text))
                if stop_at_complete:
                    return self
            else:
                self.incomplete.append((path, f"{layout}: {text}"))
        return self

    def newest(self):
        return self.complete[0] if self.complete else None


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


def scan(folder, stop_at_complete=False):
    """Look at ``folder``: every candidate checkpoint judged (or, with ``stop_at_complete``, up to the newest)."""
    result = Scan()
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        return result
    try:
        root = Listing(folder)
    except Unreadable as exc:
        result.incomplete.append((folder, str(exc)))
        return result
    _find_candidates(root, result)
    if root.is_dir("checkpoints"):
        try:
            _find_candidates(Listing(root.join("checkpoints")), result)
        except Unreadable as exc:
            result.incomplete.append((root.join("checkpoints"), str(exc)))
    return result.judge(stop_at_complete)


def _find_candidates(root, result):
    if ".metadata" in root or root.matching(layouts.DISTCP):
        step = step_in(os.path.basename(root.path))
        result.candidate(root.path, step, "dcp", lambda: layouts.check_dcp(root))
        return
    deepspeed_limit = _deepspeed_latest_step(root)
    megatron_limit = _megatron_tracker_step(root)
    for name in root.names:
        if root.is_dir(name):
            _child_candidate(root, name, result, deepspeed_limit, megatron_limit)
        else:
            _file_candidate(root, name, result)


def _child_candidate(root, name, result, deepspeed_limit, megatron_limit):
    """A child folder named like a checkpoint (judged later), or one whose files say which layout it is."""
    path = root.join(name)
    step = step_in(name)
    named = _NAMED_LAYOUTS.get(_name_kind(name))
    if named:
        limit = {"deepspeed": deepspeed_limit, "megatron": megatron_limit}.get(named[0])
        if limit is not None and step is not None and step > limit[0]:
            result.verdict(path, step, named[0], False, f"newer than {limit[1]}: its save had not finished")
        else:
            result.candidate(path, step, named[0], _deferred(named[1], path))
        return
    try:
        listing = Listing(path)
    except Unreadable:
        return  # an unknown folder that cannot be listed is no candidate
    layout = _content_layout(listing)
    if layout:
        result.candidate(path, step, layout[0], lambda: layout[1](listing))


def _deferred(rule, path):
    return lambda: rule(Listing(path))


def _name_kind(name):
    for kind, pattern in _NAME_PATTERNS:
        if pattern.fullmatch(name):
            return kind
    return None


_NAME_PATTERNS = (
    ("hf-trainer", re.compile(r"checkpoint-\d+")),
    ("torchtitan", re.compile(r"step-\d+")),
    ("deepspeed", re.compile(r"global_step\d+")),
    ("megatron", re.compile(r"iter_\d{7}")),
    ("accelerate", re.compile(r"checkpoint_\d+")),
)
_NAMED_LAYOUTS = {
    "hf-trainer": ("hf-trainer", huggingface.check_hf_trainer),
    "torchtitan": ("torchtitan", layouts.check_dcp),
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


def _pointer_step(root, name, parse):
    if name not in root:
        return None
    try:
        text = root.read(name, 4096).decode("utf-8", "replace").strip()
    except Unreadable:
        return None
    match = parse(text)
    return (int(match.group(1)), f"{name} ({text})") if match else None


def _file_candidate(root, name, result):
    if not _PLAIN_FILE.fullmatch(name):
        _lone_temporary(root, name, result)
        return
    path = root.join(name)
    temp = [name + suffix for suffix in TEMP_SUFFIXES if name + suffix in root]
    why = file_cut_off(root, name)
    if why:
        result.verdict(path, step_in(name), "file", False, why)
    elif temp:
        result.verdict(path, step_in(name), "file", False, f"{temp[0]} beside it: a save of this name was in progress")
    else:
        result.verdict(path, step_in(name), "file", True,
                       f"file of {root.size(name)} bytes, its end written, no temporary beside it")


def _lone_temporary(root, name, result):
    """``ckpt_200.pt.tmp`` with no ``ckpt_200.pt``: a save that never reached its rename."""
    for suffix in TEMP_SUFFIXES:
        final = name[:-len(suffix)]
        if name.endswith(suffix) and _PLAIN_FILE.fullmatch(final) and final not in root:
            result.verdict(root.join(final), step_in(final), "file", False,
                       f"only {name} exists: the save never reached its rename")
            return


def _mtime(path):
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
