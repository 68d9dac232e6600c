"""Slow links, and the node behind them when every one of its links is slow.

Every link is measured once per pass; a link's figure in a pass is its
slower direction, and it is judged by its figure over the median of the
other links' in the same pass, over the passes. When every link of a node with
two or more links is slow, and each partner has a normal link elsewhere,
the node is named (its NIC, port or cable) instead of each link; which
direction is slow says whether traffic into or out of it suffers.

A link slow pass by pass is only a suspect: on a loaded machine a healthy
link can come out slow in each of its 2-3 passes (docs/benchmarks.md). The
worker measures each suspect again *alone*, right beside one reference link
also alone (:func:`references`), :data:`CONFIRM_STEPS` times in alternating
order; the suspect is named only if it stays below the line against its
reference in every one of those steps (:func:`cleared`). A shaper or a bad
NIC caps every step; load that comes and goes does not.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from nodeweave.check.metrics import LINK_CAUSE, fmt_rate
from nodeweave.check.peers import Finding, best, confirmed, median, pass_ratios, peer_reference

Pair = Tuple[int, int]
CONFIRM_STEPS = 3  # suspect and reference, each alone, this many times (order alternating)


def link_values(links: List[dict]) -> Dict[Pair, dict]:
    """Per pair: the best of each direction (GB/s), the lowest latency (us), and the figure of every
    pass (its slower direction)."""
    out = {}
    for link in links:
        a, b = link["pair"]
        forward, back = link.get("forward_gbps", []), link.get("back_gbps", [])
        both = [v for v in (best(forward), best(back)) if v is not None]
        latencies = [v for v in link.get("latency_us", []) if v is not None]
        out[(a, b)] = {"forward": best(forward), "back": best(back), "value": min(both) if both else None,
                       "latency_us": min(latencies) if latencies else None,
                       "passes": [min(f, r) for f, r in zip(forward, back) if f is not None and r is not None]}
    return out


def _slow_direction(values: dict, pair: Pair, node: int) -> str:
    """``into``/``out of`` ``node`` when one direction alone is slow, else ``both ways``."""
    a, b = pair
    into = values["forward"] if node == b else values["back"]
    out_of = values["back"] if node == b else values["forward"]
    if into is not None and out_of is not None:
        if into < 0.5 * out_of:
            return "into"
        if out_of < 0.5 * into:
            return "out of"
    return "both ways"


def _has_normal_link(partner: int, node: int, values: Dict[Pair, dict], slow: set) -> bool:
    """The partner has a link away from ``node`` that is not slow (or no other link to judge by)."""
    elsewhere = [pair for pair in values if partner in pair and node not in pair]
    return not elsewhere or any(pair not in slow for pair in elsewhere)


def suspects(values: Dict[Pair, dict], threshold: float) -> Dict[Pair, float]:
    """Links below the line pass by pass and in their best sample against the other links': their ratio."""
    ratios = pass_ratios({pair: v["passes"] for pair, v in values.items()}) if len(values) > 1 else {}
    figures = {pair: v["value"] for pair, v in values.items()}
    return {pair: ratio for pair, ratio in ratios.items()
            if confirmed(ratio, figures[pair], peer_reference(figures, pair), threshold)}


def references(suspect: Sequence[Pair], measured: Sequence[Pair]) -> Dict[Pair, Optional[Pair]]:
    """Per suspect, a link to measure beside it: not a suspect, sharing no node with it when one exists
    (the first in order); None when every link is a suspect (nothing to compare with)."""
    normal = sorted(pair for pair in measured if pair not in suspect)
    out = {}
    for pair in sorted(suspect):
        apart = [other for other in normal if not set(other) & set(pair)]
        out[pair] = (apart or normal or [None])[0]
    return out


def step_ratios(check: dict) -> List[float]:
    """A confirmation's ratios, step by step: the suspect's figure over its reference's (each the slower
    direction of one alone measurement)."""
    return [s / r for s, r in zip(check.get("pair_gbps", []), check.get("reference_gbps", []))
            if s is not None and r]


def cleared(check: dict, threshold: float) -> bool:
    """Measured alone beside its reference, the suspect reached the line in some step: load, not a limit."""
    return any(ratio >= 1.0 - threshold for ratio in step_ratios(check))


def _alone(rechecked: Dict[Pair, dict], pairs: Sequence[Pair]) -> str:
    """What the confirmation measured, for a finding's text (empty where none ran)."""
    ratios = [r for pair in pairs if pair in rechecked for r in step_ratios(rechecked[pair])]
    if not ratios:
        return ""
    return (f"; measured alone beside a normal link, {100 * (1 - max(ratios)):.0f}% below it or more in "
            f"{len(ratios)} of {len(ratios)} steps")


def link_findings(links: List[dict], threshold: float, confirmations: Optional[List[dict]] = None) -> List[Finding]:
    """Slow links (pass by pass against the other links, then alone beside a reference where the worker
    measured that), grouped under their node where it is the cause."""
    values = link_values(links)
    ratios = suspects(values, threshold)
    figures = {pair: v["value"] for pair, v in values.items()}
    rechecked = {tuple(c["pair"]): c for c in confirmations or []}
    slow = {pair for pair in ratios if not (pair in rechecked and cleared(rechecked[pair], threshold))}
    out, explained = [], set()
    for node in sorted({n for pair in values for n in pair}):
        mine = [pair for pair in values if node in pair]
        if len(mine) < 2 or not all(pair in slow for pair in mine):
            continue
        partners = [a if b == node else b for a, b in mine]
        if not all(_has_normal_link(partner, node, values, slow) for partner in partners):
            continue
        others = median([v for pair, v in figures.items() if node not in pair])
        mine_value = median([figures[pair] for pair in mine])
        ratio = median([ratios[pair] for pair in mine])
        ways = {_slow_direction(values[pair], pair, node) for pair in mine}
        way = ways.pop() if len(ways) == 1 else "both ways"
        where = f"traffic {way} it" if way != "both ways" else "both directions"
        text = (f"every link of node-{node} is slow, {where}: {fmt_rate(mine_value)} vs {fmt_rate(others)} "
                f"on the other links ({100 * (1 - ratio):.0f}% below them, pass by pass{_alone(rechecked, mine)}): "
                f"its NIC, port or cable, or {LINK_CAUSE}")
        out.append(Finding(f"node-{node}", "link_gbps", text, node=node, value=mine_value, reference=others))
        explained |= set(mine)
    for pair in sorted(slow - explained):
        ref = peer_reference(figures, pair)
        name = f"node-{pair[0]}<->node-{pair[1]}"
        text = (f"link {name} {fmt_rate(figures[pair])} vs {fmt_rate(ref)} on the other links "
                f"({100 * (1 - ratios[pair]):.0f}% below them, pass by pass{_alone(rechecked, [pair])}): {LINK_CAUSE}")
        out.append(Finding(name, "link_gbps", text, pair=pair, value=figures[pair], reference=ref))
    return out
