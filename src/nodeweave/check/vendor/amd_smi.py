"""ROCm nodes' GPU health from ``amd-smi``: the same rows ``check.gpu_facts`` makes of nvidia-smi's.

``amd-smi static --json`` gives each GPU's index, PCI address (``bus.bdf``) and name
(``asic.market_name``); ``amd-smi metric --json`` its ECC counts (``ecc``: uncorrectable and
deferred, the RAS totals), violation status (``throttle``: MI300 and later, ROCm 6.3+), the older
``power.throttle_status`` and the GFX clock (``clock.gfx_0``). Two shapes are read: a list of one
object per GPU (ROCm 6) and ``{"gpu_data": [...]}`` (ROCm 7). Values the GPU does not report are
``"N/A"``; figures are ``{"value": V, "unit": U}`` or plain numbers, and both are read. Which of
the violations name a node: thermal and PROCHOT ones (cooling, power delivery) do, like
nvidia-smi's ``hw_*``/``sw_thermal`` reasons; PPT (the package power limit) is the ordinary limit
under load, like ``sw_power_cap``, and does not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Dict, List, Optional

from nodeweave.check.gpu_facts import same_device

VIOLATIONS = ("prochot", "ppt", "socket_thermal", "vr_thermal", "hbm_thermal")
BAD_VIOLATIONS = ("prochot_violation", "socket_thermal_violation", "vr_thermal_violation", "hbm_thermal_violation")


def gpu_list(document) -> List[dict]:
    """The per-GPU objects of either shape."""
    if isinstance(document, dict):
        document = document.get("gpu_data", [])
    return [item for item in document if isinstance(item, dict) and "gpu" in item] if isinstance(document, list) else []


def number(value) -> Optional[float]:
    """``{"value": 5, "unit": "W"}``, ``5``, ``"5"``; None for ``"N/A"`` and the like."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _count(value) -> Optional[int]:
    figure = number(value)
    return int(figure) if figure is not None else None


def static_rows(document) -> Dict[int, dict]:
    """Per GPU index: its PCI address and name."""
    out = {}
    for item in gpu_list(document):
        bus, asic = item.get("bus") or {}, item.get("asic") or {}
        out[int(item["gpu"])] = {"pci": bus.get("bdf") if isinstance(bus, dict) else None,
                                 "name": asic.get("market_name") if isinstance(asic, dict) else None}
    return out


def metric_row(item: dict) -> dict:
    """One GPU of ``amd-smi metric --json`` in check's row shape."""
    ecc, throttle = item.get("ecc") or {}, item.get("throttle") or {}
    power, gfx = item.get("power") or {}, ((item.get("clock") or {}).get("gfx_0") or {})
    active = {f"{kind}_violation": str(throttle.get(f"{kind}_violation_status", "")).upper() == "ACTIVE"
              for kind in VIOLATIONS} if isinstance(throttle, dict) else {}
    return {
        "index": int(item["gpu"]),
        "ecc_uncorrected_volatile": _count(ecc.get("total_uncorrectable_count")) if isinstance(ecc, dict) else None,
        "ecc_deferred": _count(ecc.get("total_deferred_count")) if isinstance(ecc, dict) else None,
        "ecc_corrected": _count(ecc.get("total_correctable_count")) if isinstance(ecc, dict) else None,
        "sm_clock_mhz": number(gfx.get("clk")) if isinstance(gfx, dict) else None,
        "sm_clock_max_mhz": number(gfx.get("max_clk")) if isinstance(gfx, dict) else None,
        "power_w": number(power.get("socket_power")) if isinstance(power, dict) else None,
        "throttle_status": power.get("throttle_status") if isinstance(power, dict) else None,
        "throttle": active,
        "violation_activity_pct": {kind: number(throttle.get(f"{kind}_violation_activity"))
                                   for kind in VIOLATIONS} if isinstance(throttle, dict) else {},
    }


def rows(static_document, metric_document, addresses: Optional[List[str]]) -> List[dict]:
    """The node's own GPUs (by PCI address; every GPU when the addresses are unknown), joined by index."""
    names = static_rows(static_document)
    out = []
    for item in gpu_list(metric_document):
        row = metric_row(item)
        row.update({k: v for k, v in names.get(row["index"], {}).items() if v})
        row.setdefault("name", "AMD GPU")
        row.setdefault("pci", None)
        if addresses and not (row["pci"] and any(same_device(row["pci"], a) for a in addresses)):
            continue
        out.append(row)
    return out


def _json_of(argv: List[str]):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{' '.join(argv)}: {err}"
    try:
        return json.loads(done.stdout), None
    except ValueError:
        said = (done.stderr or done.stdout).strip()[:300]
        return None, f"{' '.join(argv)}: exit {done.returncode}, no JSON ({said or 'no output'})"


def amd_smi(addresses: Optional[List[str]] = None) -> dict:
    """This node's AMD GPUs as check rows, the raw documents kept; ``tool`` None where amd-smi is absent."""
    if not shutil.which("amd-smi"):
        return {"tool": None, "gpus": []}
    static, error = _json_of(["amd-smi", "static", "--json"])
    metric, metric_error = _json_of(["amd-smi", "metric", "--json"])
    if metric is None:
        return {"tool": "amd-smi", "gpus": [], "error": metric_error}
    return {"tool": "amd-smi", "gpus": rows(static or [], metric, addresses), "raw_static": static,
            "raw_metric": metric, **({"error": error} if error else {})}
