"""Node lists as people read them: ``node-0 .. node-2111``, not 2112 names in one 30 KB line.

Why one helper for every list of nodes a line prints (a wait, a refusal, a failure, a plan's "every node
at once"): at thousands of nodes a list written name by name buries the line's verdict, and each place
that shortened its own list would shorten it its own way. Items are kept in the order given; each run of
three or more that differ only in numbers each counting up by one (``podman:team-7``, ``team-8``, ...;
``pod:default/team-0[trainer]``; ``node-3 (podman:team-3): no answer``) is written ``first .. last``.
Stdlib only: the entrypoint and the CLI both use it.
"""

import re
from typing import Iterable, List, Optional, Sequence

SHORTEST_RUN = 3  # two names read as well as "a .. b"
_NUMBER = re.compile(r"(\d+)")


def _parts(text: str) -> List[str]:
    return _NUMBER.split(text)  # numbers at the odd places


def _next_at(a: Sequence[str], b: Sequence[str]) -> Optional[tuple]:
    """The places where each of ``b``'s numbers is ``a``'s plus one, all else equal (None: not the next one).

    Several numbers may move together (``node-3 (podman:team-3)``: a node's index and its container's)."""
    if len(a) != len(b):
        return None
    places = tuple(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    if not places:
        return None
    for place in places:
        if place % 2 == 0:
            return None
        x, y = a[place], b[place]
        same_width = len(x) == len(y) or not (x.startswith("0") or y.startswith("0"))  # gpu09, gpu10; not 009, 10
        if int(y) != int(x) + 1 or not same_width:
            return None
    return places


def ranges(items: Iterable[str], sep: str = ", ") -> str:
    """``items`` joined by ``sep``, each run of three or more counting up by one written ``first .. last``."""
    texts = list(items)
    parts = [_parts(t) for t in texts]
    out, i = [], 0
    while i < len(texts):
        end, place = i, None
        while end + 1 < len(texts):
            at = _next_at(parts[end], parts[end + 1])
            if at is None or (place is not None and at != place):
                break
            place, end = at, end + 1
        if end - i + 1 >= SHORTEST_RUN:
            out.append(f"{texts[i]} .. {texts[end]}")
            i = end + 1
        else:
            out.append(texts[i])
            i += 1
    return sep.join(out)


def noted_ranges(pairs: Iterable[Sequence[str]], sep: str = ", ", form: str = "{name} ({note})") -> str:
    """``(name, note)`` pairs as ``form`` (``name (note)``); a run of names sharing a note as
    ``first .. last (note)``."""
    groups: List[List[Sequence[str]]] = []
    for pair in pairs:
        if groups and groups[-1][-1][1] == pair[1]:
            groups[-1].append(pair)
        else:
            groups.append([pair])
    out = []
    for group in groups:
        names = ranges([name for name, _ in group], sep="\0").split("\0")
        out += [form.format(name=name, note=group[0][1]) if group[0][1] else name for name in names]
    return sep.join(out)
