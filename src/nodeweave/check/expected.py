"""Datasheet figures per GPU model: dense BF16 matmul TFLOP/s and memory bandwidth GB/s.

The probe's figures are compared with these (a GPU far below its own
datasheet is degraded even when every node has the same one); peers are
compared with each other in any case. Matched on a substring of the name
``nvidia-smi``/torch report; the first match wins, so the more specific
names come first. Figures from the vendors' datasheets (dense, no sparsity).
"""

from __future__ import annotations

from typing import Optional, Tuple

# (substring of the device name, BF16 dense TFLOP/s, memory GB/s)
MODELS: Tuple[Tuple[str, float, float], ...] = (
    ("GH200", 989.0, 4000.0),
    ("H200", 989.0, 4800.0),
    ("H100 NVL", 835.0, 3900.0),
    ("H100 PCIe", 756.0, 2000.0),
    ("H100", 989.0, 3350.0),  # SXM5 80GB HBM3
    ("H800", 989.0, 3350.0),
    ("B200", 2250.0, 8000.0),
    ("A100-SXM4-80GB", 312.0, 2039.0),
    ("A100 80GB PCIe", 312.0, 1935.0),
    ("A100", 312.0, 1555.0),
    ("L40S", 362.0, 864.0),
    ("L4", 121.0, 300.0),
    ("MI300X", 1307.0, 5300.0),
    ("MI325X", 1307.0, 6000.0),
    ("MI250X", 383.0, 3277.0),
)


def expected_for(model: Optional[str]) -> Optional[Tuple[float, float]]:
    """(TFLOP/s, GB/s) of the datasheet, or None for a model not in the table."""
    if not model:
        return None
    for needle, tflops, gbps in MODELS:
        if needle.lower() in model.lower():
            return tflops, gbps
    return None
