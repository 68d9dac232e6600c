"""Paired statistics for "the entrypoint's environment costs no bandwidth" (stdlib only).

Each round launches both sides back to back (the order alternates), so the
ratio within a round cancels slow drift of the machine; what is left is the
launch-to-launch spread. The median of the per-round ratios gets an exact
distribution-free 95% interval from the sign test (order statistics of the
ratios; no normality assumed). The interval says what the run can resolve:
a lower bound of 0.97 or more rules out a 3% cost; an interval that spans
0.97 and 1 resolves neither, and ``rounds_for_3pct`` estimates from the
observed spread how many rounds would.
"""

from __future__ import annotations

import math
import statistics

TARGET = 0.97
CONFIDENCE = 0.95


def _binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


def sign_test_interval(values: "list[float]", confidence: float = CONFIDENCE) -> "dict | None":
    """Exact interval for the median, ``(x_(k), x_(n-k+1))`` covering >= ``confidence``; None if n is too small."""
    data = sorted(values)
    n = len(data)
    best = None
    for k in range(1, n // 2 + 1):
        coverage = 1 - 2 * _binomial_cdf(k - 1, n)
        if coverage + 1e-12 >= confidence:
            best = (k, coverage)
        else:
            break
    if best is None:
        return None
    k, coverage = best
    return {"low": data[k - 1], "high": data[n - k], "coverage": round(coverage, 4), "order_statistics": [k, n - k + 1]}


def rounds_for(resolution: float, spread: float, confidence: float = CONFIDENCE) -> "int | None":
    """Rounds whose median interval would be about ±``resolution`` wide, for per-round log-ratio spread ``spread``.

    Normal approximation: the sample median's standard error is sqrt(pi/2)·sigma/sqrt(n).
    """
    if spread <= 0:
        return None
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    return math.ceil((z * math.sqrt(math.pi / 2) * spread / math.log(1 / (1 - resolution))) ** 2)


def robust_spread(ratios: "list[float]") -> "float | None":
    """Sigma of the log ratios from their median absolute deviation (1.4826 x MAD), robust to one odd launch."""
    if len(ratios) < 6:  # fewer and the MAD is one or two of the values themselves
        return None
    logs = [math.log(r) for r in ratios]
    center = statistics.median(logs)
    return 1.4826 * statistics.median(abs(x - center) for x in logs)


def verdict(interval: "dict | None", target: float = TARGET) -> str:
    """What the interval allows one to say about a cost of ``1 - target`` or more."""
    if interval is None:
        return "too few rounds for a 95% interval (need 6)"
    low, high = interval["low"], interval["high"]
    cost = round((1 - target) * 100)
    if low >= target:
        return f"no cost of {cost}% or more: the 95% interval of the paired ratio is [{low:.3f}, {high:.3f}]"
    if high < target:
        return f"costs more than {cost}%: the 95% interval of the paired ratio is [{low:.3f}, {high:.3f}]"
    return (f"unresolved at {cost}%: the 95% interval [{low:.3f}, {high:.3f}] only rules out a cost over "
            f"{(1 - low) * 100:.1f}% (and a gain over {(high - 1) * 100:.1f}%)")


def paired_summary(ours: "list[float | None]", base: "list[float | None]", target: float = TARGET) -> dict:
    """Per-round ratios ``ours[i] / base[i]`` and what they resolve; rounds with a missing side are dropped."""
    ratios = [o / b for o, b in zip(ours, base) if o and b]
    interval = sign_test_interval(ratios)
    spread = robust_spread(ratios)
    return {
        "rounds": len(ratios), "ratios": [round(r, 4) for r in ratios],
        "median_ratio": statistics.median(ratios) if ratios else None,
        "interval_95": interval, "verdict": verdict(interval, target),
        "no_cost_resolved": bool(interval and interval["low"] >= target),
        "log_ratio_spread": spread,
        "rounds_for_3pct": rounds_for(1 - target, spread) if spread else None,
        "wins": sum(1 for r in ratios if r > 1), "losses": sum(1 for r in ratios if r < 1),
    }
