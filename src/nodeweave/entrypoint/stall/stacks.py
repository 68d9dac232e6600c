"""A rank's faulthandler dump → its main thread's frames and a one-line class; ranks grouped by class.

The class names what the rank is doing in the user's terms: ``in all_reduce
(train.py:88)`` for a rank inside a collective (the probe says which), else
the call running on the innermost line of the user's own code (``time.sleep
(loader.py:41)``, ``torch.save (train.py:120)``). Which call runs comes from
the rank itself (its answer thread reads the frame's instruction and its
column range, Python 3.11+); the text of that range is read from the source
file on this node. Where the rank could not say (Python before 3.11, a main
thread that held the GIL, a frame that moved between the two looks) and the
line holds a call, the class says ``line 41 (call not resolved)`` rather than
guess the first call on the line. Library frames (anything under
``lib/python3.N/``: the standard library, site-packages) are shown but never
chosen as the place.
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


def _has_call(path, line):
    """Whether the source line holds anything that looks like a call."""
    source = linecache.getline(path, line).strip()
    return any(m.group(1) not in NOT_CALLS for m in CALL.finditer(source))


def _segment(path, pos):
    """The source text of the column range ``pos`` = [line, end line, column, end column] (columns in UTF-8
    bytes, as ``co_positions`` gives them)."""
    line, end_line, col, end_col = pos[:4]
    rows = [linecache.getline(path, n).encode() for n in range(line, end_line + 1)]
    if not rows or not rows[0]:
        return ""
    if len(rows) == 1:
        return rows[0][col:end_col].decode(errors="replace")
    return b"".join([rows[0][col:]] + rows[1:-1] + [rows[-1][:end_col]]).decode(errors="replace")


def callee(segment):
    """'time.sleep' for the call expression ``time.sleep(600)``, 'item' for ``t[0].item()``; None when the
    text is no call."""
    text = segment.strip()
    if not text.endswith(")"):
        return None
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            name = CALLEE.search(text[:i])
            return name.group(1) if name else None
    return None


CALLEE = re.compile(r"([A-Za-z_][\w.]*)\s*$")


def _located(frame, where):
    """The rank's own record of ``frame`` (same file, line and function) with its position, a call first, from
    any of its snapshots (``where``: lists of frames); None when no snapshot saw the frame on that line."""
    found = [entry for snapshot in where or [] for entry in snapshot
             if len(entry) >= 8 and entry[0] == frame[0] and entry[1] == frame[1] and entry[2] == frame[2]]
    return next((e for e in found if e[7]), found[0] if found else None)


def _by_callee(path, line, callee_frame):
    """The one call on the line whose name ends in the function the stack shows it in ('torch.save' for a
    frame of ``save`` under ``torch.save(torch.zeros(9), io.BytesIO())``), else None."""
    if callee_frame is None:
        return None
    source = linecache.getline(path, line)
    hits = {m.group(1) for m in CALL.finditer(source)
            if m.group(1) not in NOT_CALLS and m.group(1).rsplit(".", 1)[-1] == callee_frame[2]}
    return hits.pop() if len(hits) == 1 else None


def classify(frames, collective=None, where=None):
    """The class line of a rank whose main thread has ``frames`` (innermost first); ``where``: the rank's own
    snapshots of its frames with the running instruction's position (``nodeweave_flight.main_thread_frames``).

    The call is named from the stack itself when the line's frame is inside a Python function only one call
    on the line can have reached (same instant as the stack), else from the rank's snapshot of that line."""
    if not frames:
        return "no Python frame"
    index = next((i for i, f in enumerate(frames) if not LIBRARY.search(f[0])), None)
    user = frames[index] if index is not None else None
    where_frame = user or frames[0]
    place = f"{_short(where_frame[0])}:{where_frame[1]}"
    if collective:
        return f"in {collective} ({place})"
    if user is None:
        return f"{where_frame[2]} ({place})"
    name = _by_callee(user[0], user[1], frames[index - 1] if index else None)
    if name:
        return f"{name} ({place})"
    entry = _located(user, where)
    if entry is not None:
        name = callee(_segment(user[0], entry[3:7])) if entry[7] else None
        return f"{name or user[2]} ({place})"
    if _has_call(user[0], user[1]):
        return f"line {user[1]} (call not resolved) ({place})"
    return f"{user[2]} ({place})"


def _user_place(frames):
    """(file, line, function) of the innermost frame of the user's own code, or None."""
    return next((tuple(f[:3]) for f in frames if not LIBRARY.search(f[0])), None)


def typical(frames, where):
    """The frames that show where a busy rank spends its time: the dump is one instant, and a rank looping
    around a long call (``while ...: torch.save(...)``) is now and then caught on the loop's own line, or on
    the call's line between two calls. Each of the rank's snapshots and the dump vote with their innermost
    line of user code; a line that more looks saw than the dump's wins. Of the stacks on the winning line,
    the one deepest inside the call it makes there gives the frames (the dump first, then the newest)."""
    looks = [[f for f in snapshot if len(f) >= 3 and not f[0].endswith(PROBE)] for snapshot in where or []]
    looks = [look for look in looks if look]
    votes = {}
    for place in [_user_place(frames)] + [_user_place(look) for look in looks]:
        if place is not None:
            votes[place] = votes.get(place, 0) + 1
    if not votes:
        return frames
    best = max(votes, key=votes.get)
    if votes[best] <= votes.get(_user_place(frames), 0):
        best = _user_place(frames)
    on_best = [stack for stack in [frames] + looks[::-1] if _user_place(stack) == best]
    return max(on_best, key=_depth_below_user_code)


def _depth_below_user_code(frames):
    """How many library frames lie inside the innermost line of the user's code (0: caught on the line)."""
    return next((i for i, f in enumerate(frames) if not LIBRARY.search(f[0])), 0)


def describe_rank(rank, text, where=None):
    """What a node sends node 0 for one rank: {rank, label, frames} (frames empty when there was no dump)."""
    if not text or "File " not in text:
        return {"rank": rank["rank"], "label": text or "no stack", "frames": []}
    frames = [f for f in main_frames(text, rank.get("thread")) if not f[0].endswith(PROBE)]
    collective = rank["name"] if rank.get("inside") else None
    if collective is None:
        frames = typical(frames, where)
    return {"rank": rank["rank"], "label": classify(frames, collective, where),
            "frames": [list(f[:3]) for f in frames[:MAX_FRAMES]]}


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
