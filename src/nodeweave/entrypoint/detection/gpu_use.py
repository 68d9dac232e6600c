"""How busy this node's GPUs are now: utilisation, memory, power, from the vendor's tool or AMD's sysfs.

The one reader behind ``nodeweave status`` (``nodeinfo.gpu_usage``) and the metrics' sampler
(``metrics.gpus``): ``nvidia-smi`` (also the PCI bus id its Xid events are printed with), else
``amd-smi``, else ``rocm-smi``, else the amdgpu driver's sysfs files. Every reading is in base units:
``{index, util_ratio, mem_used_bytes, mem_total_bytes, power_watts}`` (None where the tool has no figure),
plus ``pci`` on NVIDIA. A tool that is installed but fails is passed over for the next one, and its
error kept: a node with a broken ``nvidia-smi`` says so instead of showing no GPUs.
"""

import glob
import json
import os
import subprocess

MIB = 2 ** 20
NVIDIA = ["--query-gpu=index,utilization.gpu,memory.used,memory.total,power.draw,pci.bus_id",
          "--format=csv,noheader,nounits"]
AMD_SMI = ["metric", "--usage", "--mem-usage", "--json"]
ROCM = ["--showuse", "--showmeminfo", "vram", "--showpower", "--json"]


def _number(text):
    try:
        return float(str(text).strip())
    except ValueError:
        return None


def _ratio(percent):
    return None if percent is None else percent / 100


def _bytes(mib):
    return None if mib is None else mib * MIB


def parse_nvidia(text):
    """``nvidia-smi`` csv lines (noheader, nounits: %, MiB, W), with or without the trailing bus id."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) not in (5, 6) or not parts[0].isdigit():
            continue
        util, used, total, power = (_number(p) for p in parts[1:5])
        reading = {"index": int(parts[0]), "util_ratio": _ratio(util), "mem_used_bytes": _bytes(used),
                   "mem_total_bytes": _bytes(total), "power_watts": power}
        if len(parts) == 6 and parts[5] and not parts[5].startswith("["):
            reading["pci"] = parts[5]
        gpus.append(reading)
    return gpus


def _value(entry, *keys):
    for key in keys:
        entry = entry.get(key) if isinstance(entry, dict) else None
    return _number(entry.get("value")) if isinstance(entry, dict) else _number(entry) if entry is not None else None


def parse_amd_smi(text):
    """``amd-smi metric --usage --mem-usage --json``: a list of {gpu, usage, mem_usage} (MB values; no power
    asked: ``--power``'s fields differ between amd-smi versions)."""
    data = json.loads(text)
    if isinstance(data, dict):  # some versions wrap the list
        data = data.get("gpu_data", [data])
    return [{"index": int(entry.get("gpu", i)), "util_ratio": _ratio(_value(entry, "usage", "gfx_activity")),
             "mem_used_bytes": _bytes(_value(entry, "mem_usage", "used_vram")),
             "mem_total_bytes": _bytes(_value(entry, "mem_usage", "total_vram")), "power_watts": None}
            for i, entry in enumerate(data) if isinstance(entry, dict)]


def parse_rocm(text):
    """``rocm-smi --showuse --showmeminfo vram --showpower --json``: {"card0": {"GPU use (%)": ..., ...}}."""
    gpus = []
    for name, card in sorted(json.loads(text).items()):
        if not name.startswith("card") or not isinstance(card, dict):
            continue
        power = next((_number(v) for k, v in card.items() if "Power" in k and "(W)" in k), None)
        gpus.append({"index": int(name[4:]) if name[4:].isdigit() else len(gpus),
                     "util_ratio": _ratio(_number(card.get("GPU use (%)"))),
                     "mem_used_bytes": _number(card.get("VRAM Total Used Memory (B)")),
                     "mem_total_bytes": _number(card.get("VRAM Total Memory (B)")), "power_watts": power})
    return gpus


def _read(path):
    try:
        with open(path) as f:
            return _number(f.read(64))
    except OSError:
        return None


def read_sysfs(root="/"):
    """AMD GPUs from ``/sys/class/drm/card*/device`` (the amdgpu driver's files), or []."""
    gpus = []
    for index, device in enumerate(sorted(glob.glob(os.path.join(root, "sys/class/drm/card[0-9]*/device")))):
        busy = _read(os.path.join(device, "gpu_busy_percent"))
        if busy is None:
            continue
        power = next((_read(p) for p in glob.glob(os.path.join(device, "hwmon/hwmon*/power1_average"))), None)
        gpus.append({"index": index, "util_ratio": busy / 100,
                     "mem_used_bytes": _read(os.path.join(device, "mem_info_vram_used")),
                     "mem_total_bytes": _read(os.path.join(device, "mem_info_vram_total")),
                     "power_watts": None if power is None else power / 1e6})
    return gpus


TOOLS = (("nvidia-smi", NVIDIA, parse_nvidia), ("amd-smi", AMD_SMI, parse_amd_smi), ("rocm-smi", ROCM, parse_rocm))


def _which(tool):
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", tool)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def read_gpu_use(timeout=8):
    """``{"tool", "gpus", "error"?}``: the first tool that answers (``sysfs`` for the driver's files); ``tool``
    None and no GPUs when there is none; a tool that failed, with its ``error``, when none answered."""
    failed = None
    for tool, args, parse in TOOLS:
        path = _which(tool)
        if path is None:
            continue
        try:
            out = subprocess.run([path, *args], capture_output=True, text=True, timeout=timeout,
                                 stdin=subprocess.DEVNULL)
            if out.returncode == 0:
                return {"tool": tool, "gpus": parse(out.stdout)}
            problem = (out.stderr or out.stdout).strip().splitlines()[-1:] or [f"exit {out.returncode}"]
        except (OSError, ValueError, subprocess.TimeoutExpired) as err:
            problem = [str(err)]
        failed = failed or {"tool": tool, "gpus": [], "error": problem[0][:300]}
    found = read_sysfs()
    if found:
        return {"tool": "sysfs", "gpus": found}
    return failed or {"tool": None, "gpus": []}
