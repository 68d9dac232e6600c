"""Which nodes measure their link in which round: ⌈log2 N⌉ rounds of disjoint pairs.

Round r pairs node i with node i XOR 2**r (a hypercube): every round is a
set of disjoint pairs, so all of them run at once without sharing a NIC,
and every node meets ⌈log2 N⌉ partners, enough to tell a slow node (all its
links slow) from a slow link (one). Nodes left without a partner in a round
(N not a power of two) are paired among themselves on a link not yet
measured. Two nodes get two rounds of their one link: two samples.

Disjoint pairs are not always independent: nodes that share a machine (one
kernel boot id, or one ``NCCL_HOSTID``) share its NIC, its bridge and its
CPUs, so two pairs touching one machine at once would each see half of a
shared link while pairs elsewhere see all of theirs, and be called slow.
:func:`turns` splits a round into turns whose pairs touch disjoint
machines; the turns run one after the other. When every node stands on one
machine (a single-host test cluster), every pair of a round shares it alike,
which the pass-by-pass ratio cancels, and the round stays whole: measured
one pair at a time, 8 such nodes took 4x the steps and the load that came
and went between turns named healthy links (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import FrozenSet, List, Sequence, Set, Tuple

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


def machines(boot_ids: Sequence[str], host_ids: Sequence[str]) -> List[FrozenSet[str]]:
    """Per rank, the machines it stands on: its kernel's boot id and, when set, its ``NCCL_HOSTID``.

    Containers and pods on one machine share the boot id; nodes simulated on one machine with their
    own ``NCCL_HOSTID`` share the boot id too, and nodes that claim one host id are one host to NCCL."""
    out = []
    for rank, boot in enumerate(boot_ids):
        keys = {f"boot:{boot}" if boot else f"rank:{rank}"}
        if rank < len(host_ids) and host_ids[rank]:
            keys.add(f"hostid:{host_ids[rank]}")
        out.append(frozenset(keys))
    return out


def turns(round_: Sequence[Pair], where: Sequence[FrozenSet[str]]) -> List[List[Pair]]:
    """The pairs of one round in turns: no two pairs of a turn touch one machine (a shared NIC or bridge).

    Greedy, in the round's order: each pair goes into the first turn none of whose machines it touches.
    Nodes on separate machines keep the whole round in one turn; N nodes on one machine get one pair
    per turn."""
    out: List[List[Pair]] = []
    used: List[Set[str]] = []
    for pair in round_:
        touched = set(where[pair[0]]) | set(where[pair[1]])
        for index, taken in enumerate(used):
            if not taken & touched:
                out[index].append(pair)
                taken |= touched
                break
        else:
            out.append([pair])
            used.append(set(touched))
    return out


def one_machine(where: Sequence[FrozenSet[str]]) -> bool:
    """Every node stands on one machine (a key all of them share)."""
    return bool(where) and bool(frozenset.intersection(*map(frozenset, where)))


def schedule(nodes: int, where: Sequence[FrozenSet[str]]) -> List[List[List[Pair]]]:
    """Every round of :func:`pair_rounds`, each split into :func:`turns`; whole rounds when every node is
    on one machine (every pair shares it alike)."""
    if one_machine(where[:nodes]):
        return [[round_] for round_ in pair_rounds(nodes)]
    return [turns(round_, where) for round_ in pair_rounds(nodes)]

