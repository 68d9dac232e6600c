"""What ``nodeweave logs`` makes of the nodes' lines: node and rank on each, a rank filter, repeats collapsed.

Pure: lines in, lines to print out. A line's rank is read from the prefix the launchers put on their ranks'
lines: torchrun's ``--tee`` (``[default3]:``, the local rank, or ``[rank3]:`` with
``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[rank${rank}]:'``), DeepSpeed's ``[Rank 3]`` (``log_dist``) and
PyTorch's own ``[rank3]:`` on a rank's warnings and errors, and the scripts' own ``[rank 3]`` / ``[rank 3/8 node 0]``
(nodeweave's examples/train.py). A line without one shows its node alone.

The same text from several ranks (every rank printing its loss, NCCL's banner on every GPU) collapses into
one line naming how many ranks and which; a line that no launcher marked with its rank is its node's own
(the entrypoint's lines, a one-rank node's output) and stays a ``[node-i]`` line, in order, never splitting the
copies of another text around it: the view holds each text for :data:`WINDOW` lines (or
:data:`HOLD_S` seconds when following) and a copy from a rank not yet counted joins it; a second copy from
the same rank is a new line, so nothing a rank repeats is hidden.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Tuple

PREFIXES = (
    re.compile(r"^\[rank(?P<rank>\d+)\]:\s?"),                  # PyTorch's, torchrun's template [rank${rank}]:
    re.compile(r"^\[(?P<role>[A-Za-z_]+?)(?P<local>\d+)\]:\s?"),  # torchrun --tee: [default0]: (local rank)
    re.compile(r"^(?P<head>.*?)\[Rank (?P<rank>\d+)\]\s?"),     # DeepSpeed's log_dist: [INFO] ... [Rank 0]
    # the tutorials' and nodeweave's own examples' (examples/train.py): [rank 1] and [rank 1/4 node 0], the form the
    # step reader's ``plain`` logger reads (walk11 A5: their lines were "marked with no rank" for --rank)
    re.compile(r"^\[rank (?P<rank>\d+)(?:/\d+)?(?: [^\]]*)?\]\s?"),
)
# node 0's line once it decided a next generation starts (an older nodeweave's said it on the "ended" line, walk10
# B14: a generation that never started was announced there)
# where ranks' marks come from, said where --rank finds none (walk14 A5: the docs promised --rank N while the default
# torchrun launch `init` writes marks no line)
NO_RANK_MARKS = ("nodeweave's torchrun launch marks none unless the spec's launcher.options has --tee 3 (torchrun "
                 "then marks each line [default<local rank>]:, read with the run's plans as the global rank); "
                 "DeepSpeed marks [Rank N]; a script marks its own as [rank N] or [rank N/W ...]")
NEXT_GENERATION = re.compile(r"recovery: (?:generation \d+ ended: .*; )?starting generation (\d+)")
WINDOW = 256
HOLD_S = 0.5


def split_rank(line: str) -> Tuple[Optional[str], str]:
    """(rank as shown: '3' or 'local 3', or None; the line without the launcher's prefix)."""
    for pattern in PREFIXES:
        match = pattern.match(line)
        if not match:
            continue
        groups = match.groupdict()
        if "local" in groups and groups.get("local") is not None:
            if groups["role"].lower() == "rank":
                continue
            return f"local {groups['local']}", line[match.end():]
        head = groups.get("head") or ""
        return groups["rank"], head + line[match.end():]
    return None, line


def _ranks(ranks: List[str]) -> str:
    """'0-3,7' from ['0', '1', '2', '3', '7']; local ranks and others as given."""
    numbers = sorted({int(r) for r in ranks if r.isdigit()})
    spans, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            spans.append(f"{start}" if start == n else f"{start}-{n}")
            start = None
    return ",".join(spans + sorted({r for r in ranks if not r.isdigit()}))


@dataclass
class _Held:
    text: str
    since: float
    sources: List[Tuple[str, Optional[str]]] = field(default_factory=list)  # (node, rank)


class LogView:
    """Feed (node, line) as they come; :meth:`feed` and :meth:`flush` return (node, prefix, text) to print."""

    def __init__(self, rank: Optional[int] = None, collapse: bool = True, window: int = WINDOW,
                 hold_s: Optional[float] = None, clock=time.monotonic, first_ranks: Optional[dict] = None):
        self.rank, self.collapse, self.window, self.hold_s, self.clock = rank, collapse, window, hold_s, clock
        # {node: its first global rank}, where the run's plans say it (node rank x processes per node): torchrun's
        # local rank l on that node is global rank first + l (walk6 W26: no rank could be picked from [defaultN]:)
        self.first_ranks = first_ranks or {}
        self.held: "OrderedDict[int, _Held]" = OrderedDict()
        self.by_text = {}
        self.serial = 0
        self.generation: Optional[int] = None
        self.ranks_seen: "set[str]" = set()  # every rank a line was marked with, kept or not
        self.kept = 0  # lines the rank filter let through

    def feed(self, node: str, line: str) -> List[Tuple[str, str, str]]:
        rank, text = split_rank(line)
        if rank is not None and rank.startswith("local ") and node in self.first_ranks:
            rank = str(self.first_ranks[node] + int(rank.split()[1]))
        out = self._generation_mark(text)
        if rank is not None:
            self.ranks_seen.add(rank)
        if self.rank is not None and rank != str(self.rank):
            return out
        self.kept += 1
        if not self.collapse:
            return out + self.flush() + [(node, _prefix([(node, rank)]), text)]
        if rank is None:  # its node's own line: shown alone, in its place, held in turn with the others so another
            self.serial += 1  # node's line between two ranks' copies of a text never splits them (walk9 A28)
            self.held[self.serial] = _Held(text, self.clock(), [(node, None)])
            return out + self._due()
        key = self.by_text.get(text)
        entry = self.held.get(key) if key is not None else None
        if entry is None or (node, rank) in entry.sources or rank is None and any(n == node for n, _ in
                                                                                    entry.sources):
            self.serial += 1
            entry = _Held(text, self.clock())
            self.held[self.serial] = entry
            self.by_text[text] = self.serial
        entry.sources.append((node, rank))
        return out + self._due()

    def rank_problem(self) -> Optional[str]:
        """Once every line is read: why ``--rank`` showed nothing (no line is marked with it), naming the ranks the
        lines are marked with; None when it kept a line or no rank was asked for. A rank past the job's is said,
        never an empty answer (walk5, W27)."""
        if self.rank is None or self.kept:
            return None
        if not self.ranks_seen:
            return (f"--rank {self.rank}: no line of these logs is marked with a rank (a line without one is its "
                    f"node's own): {NO_RANK_MARKS}; accepted: --node I for node I's lines, or leave --rank off")
        global_ranks = [r for r in self.ranks_seen if r.isdigit()]
        if not global_ranks:  # only torchrun's local ranks, on nodes whose first rank no plan gives
            return (f"--rank {self.rank}: these logs mark only local ranks (torchrun's [defaultN]:: "
                    f"{_ranks(sorted(self.ranks_seen))}), and no plan of this run says which global rank each is "
                    "(an elastic or recovering job's ranks are the rendezvous'); accepted: --node I for node I's "
                    "lines (each shown with its local rank), or leave --rank off")
        return (f"--rank {self.rank}: no line of these logs is marked with rank {self.rank}; accepted: a rank they "
                f"mark: {_ranks(sorted(global_ranks))}")

    def _generation_mark(self, text: str) -> List[Tuple[str, str, str]]:
        """A rule where a new generation starts (the recovery line every node prints), once per generation."""
        match = NEXT_GENERATION.search(text)
        if not match or self.generation == int(match.group(1)):
            return []
        self.generation = int(match.group(1))
        return self.flush() + [("", "", f"── generation {self.generation} ──")]

    def _due(self) -> List[Tuple[str, str, str]]:
        out = []
        now = self.clock()
        while self.held:
            key, entry = next(iter(self.held.items()))
            if len(self.held) <= self.window and (self.hold_s is None or now - entry.since < self.hold_s):
                break
            out.append(self._emit(key))
        return out

    def flush(self) -> List[Tuple[str, str, str]]:
        return [self._emit(key) for key in list(self.held)]

    def tick(self) -> List[Tuple[str, str, str]]:
        """Following: what has been held :data:`HOLD_S` or longer."""
        return self._due()

    def _emit(self, key: int) -> Tuple[str, str, str]:
        entry = self.held.pop(key)
        if self.by_text.get(entry.text) == key:
            del self.by_text[entry.text]
        return entry.sources[0][0], _prefix(entry.sources), entry.text


def _prefix(sources: List[Tuple[str, Optional[str]]]) -> str:
    """'node-1 r3', or for a collapsed line 'x8 node-0,node-1 r0-7'."""
    nodes = list(dict.fromkeys(n for n, _ in sources))
    ranks = [r for _, r in sources if r is not None]
    rank_text = f" r{_ranks(ranks)}" if ranks else ""
    if len(sources) == 1:
        return f"{nodes[0]}{rank_text}"
    return f"x{len(sources)} {','.join(nodes)}{rank_text}"


def rounds(streams: Iterable[Tuple[str, List[str]]]) -> List[Tuple[str, str]]:
    """(node, line) of every stream, line by line in turn (node-0's first, node-1's first, ...): the order that
    lets the same line from every node meet in the view."""
    streams = list(streams)
    out = []
    for index in range(max((len(lines) for _, lines in streams), default=0)):
        out += [(node, lines[index]) for node, lines in streams if index < len(lines)]
    return out
