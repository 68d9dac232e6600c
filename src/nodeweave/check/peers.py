"""A subject against its peers: the statistics every verdict of ``nodeweave check`` shares.

A node's peers are the other nodes, a link's the other links. A figure is
the best of its samples; a subject is judged by its figure over the median
of the others' in each pass, taken over the passes (never one sample).
:mod:`verdict` (nodes, GPUs, facts) and :mod:`links` (links, and the node
behind them) both judge with these; neither imports the other's rules here.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

REPEAT_BAND = 0.15  # figures below line + this fraction of the median are measured again


@dataclass
class Finding:
    subject: str  # "node-3" or "node-1<->node-3"
    metric: str
    text: str  # one line: the figure, the reference, the likely cause
    node: Optional[int] = None
    pair: Optional[Tuple[int, int]] = None
    value: Optional[float] = None
    reference: Optional[float] = None

    def to_dict(self) -> dict:
        return asdict(self)


def best(samples: Sequence[float]) -> Optional[float]:
    """A measured figure: the best of its samples. Load elsewhere only ever slows a probe, so the best
    sample is the closest to what the node or link can do; a shaper or a CPU limit caps every sample."""
    samples = [v for v in samples if v is not None]
    return max(samples) if samples else None


def median(values: Sequence[float]) -> Optional[float]:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def below(value: float, reference: float, fraction: float) -> bool:
    """``value`` more than ``fraction`` below ``reference``."""
    return reference > 0 and value < (1.0 - fraction) * reference


def peer_reference(values: Dict[object, Optional[float]], subject) -> Optional[float]:
    """The median of every other subject's figure."""
    return median([v for k, v in values.items() if k != subject and v is not None])


def pass_ratios(series: Dict[object, Sequence[Optional[float]]]) -> Dict[object, float]:
    """Each subject's median, over passes, of its figure over the median of the others' in that pass.

    Every subject is measured once per pass and the passes are interleaved, so load that comes and goes
    elsewhere on the machine touches the subjects of a pass alike and cancels in the ratio."""
    out = {}
    for subject, values in series.items():
        ratios = []
        for index, value in enumerate(values):
            others = median([v[index] for k, v in series.items() if k != subject and len(v) > index])
            if value is not None and others:
                ratios.append(value / others)
        if ratios:
            out[subject] = median(ratios)
    return out


def confirmed(ratio: float, value: Optional[float], reference: Optional[float], threshold: float) -> bool:
    """Below the line pass by pass *and* in its best sample against the peers' best: a limit (a shaper, a
    CPU quota, a degraded GPU) caps every sample; a node that reached its peers' level in some pass was
    slowed by load that came and went, and is not named for it."""
    return ratio < 1.0 - threshold and value is not None and bool(reference) and below(value, reference, threshold)


def to_repeat(series: Dict[object, Sequence[Optional[float]]], threshold: float,
              band: float = REPEAT_BAND) -> List[object]:
    """Subjects close to or below the line: another pass before a verdict."""
    return [subject for subject, ratio in pass_ratios(series).items() if ratio < 1.0 - threshold + band]
