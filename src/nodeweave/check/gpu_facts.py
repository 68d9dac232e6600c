"""GPU health as the vendor's tools report it: ``nvidia-smi`` queries and ``dcgmi diag -r 1``.

``nvidia-smi --query-gpu ... --format=csv,noheader,nounits`` rather than
the text of ``-q``: the machine-readable form of the same counters. Drivers
from R535 call the throttle reasons ``clocks_event_reasons``; the older name
is tried first and the newer one when the driver refuses it. Row remapping
(A100 and later) has its own query. ``dcgmi diag -r 1`` (seconds) runs only
where DCGM is installed, its JSON walked for failed tests. XID events and
amd-smi are read by ``check.vendor``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import List, Optional

REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "sw_power_cap")
BASE_FIELDS = ("index", "name", "pci.bus_id", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem",
               "temperature.gpu", "power.draw", "power.limit", "ecc.errors.uncorrected.volatile.total")
REMAP_FIELDS = ("gpu_bus_id", "remapped_rows.correctable", "remapped_rows.uncorrectable", "remapped_rows.pending",
                "remapped_rows.failure")


def query_fields(prefix: str) -> List[str]:
    return [*BASE_FIELDS, f"{prefix}.active", *(f"{prefix}.{r}" for r in REASONS)]


def _number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def _yes(text: str) -> bool:
    return text.strip().lower() in ("1", "yes", "true", "active")


def parse_query(text: str) -> List[dict]:
    """Rows of ``--query-gpu=query_fields(...) --format=csv,noheader,nounits``."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(BASE_FIELDS) + 1 + len(REASONS):
            continue
        ecc = _number(cells[10])
        rows.append({
            "index": int(cells[0]) if cells[0].isdigit() else cells[0], "name": cells[1], "pci": cells[2],
            "sm_clock_mhz": _number(cells[3]), "sm_clock_max_mhz": _number(cells[4]),
            "mem_clock_mhz": _number(cells[5]), "mem_clock_max_mhz": _number(cells[6]),
            "temperature_c": _number(cells[7]), "power_w": _number(cells[8]), "power_limit_w": _number(cells[9]),
            "ecc_uncorrected_volatile": int(ecc) if ecc is not None else None,
            "throttle_mask": cells[11],
            "throttle": {reason: _yes(cell) for reason, cell in zip(REASONS, cells[12:])},
        })
    return rows


def parse_remap(text: str) -> dict:
    """Rows of ``--query-remapped-rows=REMAP_FIELDS --format=csv,noheader,nounits``, by PCI bus id."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(REMAP_FIELDS):
            out[cells[0]] = {"remap_correctable": _number(cells[1]), "remap_uncorrectable": _number(cells[2]),
                             "remap_pending": _yes(cells[3]), "remap_failure": _yes(cells[4])}
    return out


def _run(argv: List[str], timeout: float = 60) -> "subprocess.CompletedProcess[str] | None":
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None


def same_device(bus_id: str, pci: str) -> bool:
    """nvidia-smi's ``00000000:18:00.0`` against sysfs's ``0000:18:00.0`` (domain widths differ)."""
    return bus_id.lower().split(":", 1)[-1] == pci.lower().split(":", 1)[-1]


def own_rows(gpus: List[dict], addresses: Optional[List[str]]) -> List[dict]:
    """The rows of this node's GPUs; every row when the node's addresses are unknown."""
    if not addresses:
        return gpus
    return [g for g in gpus if any(same_device(g["pci"], a) for a in addresses)]


def nvidia_smi(addresses: Optional[List[str]] = None) -> dict:
    """This node's GPUs' clocks, temperature, power, ECC, throttle reasons and row remapping; raw text kept."""
    if not shutil.which("nvidia-smi"):
        return {"tool": None, "gpus": []}
    for prefix in ("clocks_throttle_reasons", "clocks_event_reasons"):
        done = _run(["nvidia-smi", f"--query-gpu={','.join(query_fields(prefix))}", "--format=csv,noheader,nounits"])
        if done is not None and done.returncode == 0:
            break
    else:
        return {"tool": "nvidia-smi", "gpus": [], "error": (done.stderr or done.stdout).strip()[:300] if done else "no answer"}
    gpus = own_rows(parse_query(done.stdout), addresses)
    remap = _run(["nvidia-smi", f"--query-remapped-rows={','.join(REMAP_FIELDS)}", "--format=csv,noheader,nounits"])
    by_bus = parse_remap(remap.stdout) if remap is not None and remap.returncode == 0 else {}
    for gpu in gpus:
        gpu.update(by_bus.get(gpu["pci"], {}))
    return {"tool": "nvidia-smi", "fields": prefix, "gpus": gpus, "raw": done.stdout,
            "raw_remap": remap.stdout if remap is not None else None}


def failed_tests(document) -> List[str]:
    """Names of the tests whose result says Fail, anywhere in ``dcgmi diag -j``'s JSON."""
    failed: List[str] = []

    def walk(item, name=None):
        if isinstance(item, dict):
            name = item.get("name") or item.get("test_name") or name
            status = str(item.get("status") or item.get("result") or "")
            if status.lower() == "fail" and name and name not in failed:
                failed.append(str(name))
            for value in item.values():
                walk(value, name)
        elif isinstance(item, list):
            for value in item:
                walk(value, name)

    walk(document)
    return failed


def dcgm_diag() -> Optional[dict]:
    """``dcgmi diag -r 1 -j`` where DCGM is installed (and its host engine answers); where it is not, a record
    that says so (the report names the nodes that ran no DCGM diagnostic)."""
    if not shutil.which("dcgmi"):
        return {"ran": False, "installed": False, "error": "dcgmi not installed", "failed": []}
    done = _run(["dcgmi", "diag", "-r", "1", "-j"], timeout=120)
    if done is None:
        return {"ran": False, "error": "dcgmi diag did not answer in 120 s", "failed": []}
    document = parse_diag(done.stdout)
    if document is None:
        return {"ran": False, "error": (done.stderr or done.stdout).strip()[:300], "failed": []}
    return {"ran": True, "failed": failed_tests(document), "exit_code": done.returncode}


def parse_diag(text: str):
    """``dcgmi diag -j``'s document; dcgmi may print a warning line before it (DCGM's own tests read its
    "real output" from the first ``{``). None when there is no JSON."""
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None
