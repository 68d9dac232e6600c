"""A rank's faulthandler dump → its main thread's frames and a one-line class; ranks grouped by class.

The class names what the rank is doing in the user's terms: ``in all_reduce
(train.py:88)`` for a rank inside a collective (the probe says which), else
the call on the innermost line of the user's own code (``time.sleep
(loader.py:41)``, ``torch.save (train.py:120)``), read from the source file on
this node. Library frames (anything under ``lib/python3.N/``: the standard
library, site-packages) are shown but never chosen as the place.
"""

import linecache
import re

FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+) in (?P<func>.*)$')
THREAD = re.compile(r"^(Current thread|Thread) (?P<ident>0x[0-9a-f]+)")
LIBRARY = re.compile(r"/lib/python3\.\d+/|^<")
PROBE = "nodeweave_rankprobe.py"  # the probe's own wrapper frame: never shown
CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
NOT_CALLS = {"if", "elif", "while", "for", "return", "yield", "with", "assert", "not", "and", "or", "in", "print"}
MAX_FRAMES = 12


def threads(text):
    """{ident: [(file, line, func), ...] innermost first} of one dump."""
    found, current = {}, None
    for line in text.splitlines():
        head = THREAD.match(line)
        if head:
            current = int(head.group("ident"), 16)
            found[current] = []
            continue
        frame = FRAME.match(line)
        if frame and current is not None:
            found[current].append((frame.group("file"), int(frame.group("line")), frame.group("func")))
    return found


def main_frames(text, ident):
    """The main thread's frames (by the ident the probe recorded), else the first thread's."""
    found = threads(text)
    if ident in found:
        return found[ident]
    return next(iter(found.values()), [])


def _short(path):
    return path.rsplit("/", 1)[-1]


def _callee(path, line):
    """'time.sleep' for a source line ``time.sleep(600)``; None when the line holds no call."""
    source = linecache.getline(path, line).strip()
    for match in CALL.finditer(source):
        if match.group(1) not in NOT_CALLS:
            return match.group(1)
    return None


def classify(frames, collective=None):
    """The class line of a rank whose main thread has ``frames`` (innermost first)."""
    if not frames:
        return "no Python frame"
    user = next((f for f in frames if not LIBRARY.search(f[0])), None)
    where = user or frames[0]
    place = f"{_short(where[0])}:{where[1]}"
    if collective:
        return f"in {collective} ({place})"
    callee = _callee(where[0], where[1]) if user else None
    if user is None:
        return f"{where[2]} ({place})"
    return f"{callee or where[2]} ({place})"


def describe_rank(rank, text):
    """What a node sends node 0 for one rank: {rank, label, frames} (frames empty when there was no dump)."""
    if not text or "File " not in text:
        return {"rank": rank["rank"], "label": text or "no stack", "frames": []}
    frames = [f for f in main_frames(text, rank.get("thread")) if not f[0].endswith(PROBE)]
    collective = rank["name"] if rank.get("inside") else None
    return {"rank": rank["rank"], "label": classify(frames, collective),
            "frames": [[f, n, fn] for f, n, fn in frames[:MAX_FRAMES]]}


def group(described):
    """[{label, ranks, frames}] of identical (label, frames) classes, the largest first."""
    classes = {}
    for item in described:
        key = (item["label"], tuple(tuple(f) for f in item["frames"]))
        classes.setdefault(key, []).append(item["rank"])
    out = [{"label": label, "ranks": sorted(ranks), "frames": [list(f) for f in frames]}
           for (label, frames), ranks in classes.items()]
    return sorted(out, key=lambda c: (-len(c["ranks"]), c["ranks"][0]))


def render(classes, indent="  "):
    """'3 ranks (0, 2, 3): in all_reduce (train.py:88)' and each class's frames under it."""
    lines = []
    for c in classes:
        n = len(c["ranks"])
        lines.append(f"{indent}{n} rank{'s' if n != 1 else ''} ({_ranks(c['ranks'])}): {c['label']}")
        for path, line, func in c["frames"]:
            lines.append(f"{indent}    {path}:{line} in {func}")
    return lines


def _ranks(ranks):
    if len(ranks) <= 8:
        return ", ".join(str(r) for r in ranks)
    return ", ".join(str(r) for r in ranks[:6]) + f", ... {ranks[-1]}"
