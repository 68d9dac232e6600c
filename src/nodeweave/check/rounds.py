"""Which nodes measure their link in which round: ⌈log2 N⌉ rounds of disjoint pairs.

Round r pairs node i with node i XOR 2**r (a hypercube): every round is a
set of disjoint pairs, so all of them run at once without sharing a NIC,
and every node meets ⌈log2 N⌉ partners, enough to tell a slow node (all its
links slow) from a slow link (one). Nodes left without a partner in a round
(N not a power of two) are paired among themselves on a link not yet
measured. Two nodes get two rounds of their one link: two samples.
"""

from __future__ import annotations

from typing import List, Sequence, Set, Tuple

Pair = Tuple[int, int]


def round_count(nodes: int) -> int:
    """⌈log2 N⌉ rounds, and 2 for N = 2; none for one node."""
    if nodes < 2:
        return 0
    return max(2, (nodes - 1).bit_length())


def pair_rounds(nodes: int) -> List[List[Pair]]:
    """The pairs (low, high) of every round, in order."""
    if nodes == 2:
        return [[(0, 1)], [(0, 1)]]
    rounds: List[List[Pair]] = []
    seen: Set[Pair] = set()
    for bit in range(round_count(nodes)):
        pairs = [(i, i ^ (1 << bit)) for i in range(nodes) if i < i ^ (1 << bit) < nodes]
        busy = {n for pair in pairs for n in pair}
        idle = [i for i in range(nodes) if i not in busy]
        pairs += _match(idle, seen | set(pairs))
        seen |= set(pairs)
        rounds.append(sorted(pairs))
    return rounds


def _match(idle: Sequence[int], measured: Set[Pair]) -> List[Pair]:
    """Greedy pairs among ``idle`` on links not measured yet."""
    free, pairs = list(idle), []
    while free:
        first = free.pop(0)
        for other in free:
            if (first, other) not in measured:
                pairs.append((first, other))
                free.remove(other)
                break
    return pairs


def partner(round_: Sequence[Pair], rank: int) -> "int | None":
    for low, high in round_:
        if rank == low:
            return high
        if rank == high:
            return low
    return None
