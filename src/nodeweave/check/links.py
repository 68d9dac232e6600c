"""Slow links, and the node behind them when every one of its links is slow.

Every link is measured once per pass; a link's figure in a pass is its
slower direction, and it is judged by its figure over the median of the
other links' in the same pass, over the passes. When every link of a node with
two or more links is slow, and each partner has a normal link elsewhere,
the node is named (its NIC, port or cable) instead of each link; which
direction is slow says whether traffic into or out of it suffers.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from nodeweave.check.metrics import LINK_CAUSE, fmt_rate
from nodeweave.check.verdict import Finding, best, confirmed, median, pass_ratios, peer_reference

Pair = Tuple[int, int]


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


def link_findings(links: List[dict], threshold: float) -> List[Finding]:
    """Slow links (pass by pass against the other links), grouped under their node where it is the cause."""
    values = link_values(links)
    ratios = pass_ratios({pair: v["passes"] for pair, v in values.items()}) if len(values) > 1 else {}
    figures = {pair: v["value"] for pair, v in values.items()}
    slow = {pair for pair, ratio in ratios.items()
            if confirmed(ratio, figures[pair], peer_reference(figures, pair), threshold)}
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
        out.append(Finding(f"node-{node}", "link_gbps",
                           f"every link of node-{node} is slow, {where}: {fmt_rate(mine_value)} vs "
                           f"{fmt_rate(others)} on the other links ({100 * (1 - ratio):.0f}% below them, pass by "
                           f"pass): its NIC, port or cable, or {LINK_CAUSE}", node=node, value=mine_value,
                           reference=others))
        explained |= set(mine)
    for pair in sorted(slow - explained):
        ref = peer_reference(figures, pair)
        out.append(Finding(f"node-{pair[0]}<->node-{pair[1]}", "link_gbps",
                           f"link node-{pair[0]}<->node-{pair[1]} {fmt_rate(figures[pair])} vs {fmt_rate(ref)} on "
                           f"the other links ({100 * (1 - ratios[pair]):.0f}% below them, pass by pass): "
                           f"{LINK_CAUSE}", pair=pair, value=figures[pair], reference=ref))
    return out
