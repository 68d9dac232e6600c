"""This node's GPUs as the metrics show them: utilisation, memory, power, from the vendor tool or sysfs.

``nvidia-smi`` (utilisation, memory, power draw), else ``rocm-smi`` (use, VRAM,
average socket power), else AMD's sysfs (``gpu_busy_percent``,
``mem_info_vram_*``, hwmon ``power1_average``) — as ``nodeinfo.py`` reads them
for ``nodeweave status``, plus power and, on NVIDIA nodes that may read ``/dev/kmsg``, each GPU's Xid
events since the sampler started. A :class:`Sampler` thread reads them every
:data:`EVERY_S` so a scrape never waits on a tool (nvidia-smi takes ~0.1-1 s).
"""

import glob
import json
import os
import subprocess
import threading
import time

EVERY_S = 10.0
NVIDIA = ["--query-gpu=index,utilization.gpu,memory.used,memory.total,power.draw,pci.bus_id",
          "--format=csv,noheader,nounits"]
ROCM = ["--showuse", "--showmeminfo", "vram", "--showpower", "--json"]
MIB = 2 ** 20


def _number(text):
    try:
        return float(str(text).strip())
    except ValueError:
        return None


def parse_nvidia(text):
    """[{index, util_ratio, mem_used_bytes, mem_total_bytes, power_watts, pci}] from ``nvidia-smi`` csv lines
    (``pci``, the bus id its Xid events are printed with, where the line has it)."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) not in (5, 6) or not parts[0].isdigit():
            continue
        util, used, total, power = (_number(p) for p in parts[1:5])
        reading = {"index": int(parts[0]), "util_ratio": None if util is None else util / 100,
                   "mem_used_bytes": None if used is None else used * MIB,
                   "mem_total_bytes": None if total is None else total * MIB, "power_watts": power}
        if len(parts) == 6 and parts[5] and not parts[5].startswith("["):
            reading["pci"] = parts[5]
        gpus.append(reading)
    return gpus


def parse_rocm(text):
    """The same from ``rocm-smi --showuse --showmeminfo vram --showpower --json``."""
    gpus = []
    for name, card in sorted(json.loads(text).items()):
        if not name.startswith("card") or not isinstance(card, dict):
            continue
        util = _number(card.get("GPU use (%)"))
        power = next((_number(v) for k, v in card.items() if "Power" in k and "(W)" in k), None)
        gpus.append({"index": int(name[4:]) if name[4:].isdigit() else len(gpus),
                     "util_ratio": None if util is None else util / 100,
                     "mem_used_bytes": _number(card.get("VRAM Total Used Memory (B)")),
                     "mem_total_bytes": _number(card.get("VRAM Total Memory (B)")), "power_watts": power})
    return gpus


def _read(path):
    try:
        with open(path) as f:
            return _number(f.read())
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


def _which(tool):
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", tool)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def read_gpus(timeout=8):
    """(source, [gpu readings]) from the first tool that answers, else sysfs; (None, []) without GPUs."""
    for tool, args, parse in (("nvidia-smi", NVIDIA, parse_nvidia), ("rocm-smi", ROCM, parse_rocm)):
        path = _which(tool)
        if path is None:
            continue
        try:
            out = subprocess.run([path, *args], capture_output=True, text=True, timeout=timeout)
            if out.returncode == 0:
                return tool, parse(out.stdout)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    found = read_sysfs()
    return ("sysfs", found) if found else (None, [])


def with_xids(gpus, xids):
    """NVIDIA readings with their Xid events since the sampler started (``xid_errors``, ``xid_last``), where the
    kernel log is readable; the others as they are."""
    return [dict(g, **xids.of(g.get("pci"))) for g in gpus]


class Sampler:
    """The latest readings, refreshed every :data:`EVERY_S` in a daemon thread; on an NVIDIA node each GPU's Xid
    events from the kernel log as they come (``detection.xid.XidCounter``), where the node may read it."""

    def __init__(self, read=read_gpus, every_s=EVERY_S, kmsg="/dev/kmsg"):
        self.read, self.every_s, self.kmsg = read, every_s, kmsg
        self.xids = None  # the node's XidCounter, from its first nvidia-smi reading on
        self.latest = (None, [], None)  # (source, gpus, time.time() of the reading)
        self.thread = threading.Thread(target=self._run, name="nodeweave-gpus", daemon=True)

    def start(self):
        self.thread.start()
        return self

    def sample(self):
        try:
            source, gpus = self.read()
        except Exception:  # noqa: BLE001 - a reading that fails is only missing
            source, gpus = None, []
        if source == "nvidia-smi":
            if self.xids is None:
                from ..detection.xid import XidCounter

                self.xids = XidCounter(self.kmsg)
            self.xids.update()
            gpus = with_xids(gpus, self.xids)
        self.latest = (source, gpus, time.time())
        return source

    def _run(self):
        while True:
            source = self.sample()
            if source is None:
                return  # no GPU tool and no sysfs GPUs: nothing will appear later
            time.sleep(self.every_s)


SAMPLER = None  # this process's sampler (a worker's, for its beats), started by the first beat_extra


def beat_extra():
    """A callable for ``LinkStall.beat_extra``: each new reading once, ``{}`` between them (beats stay small)."""
    global SAMPLER
    if SAMPLER is None:
        SAMPLER = Sampler().start()
    sent = [None]

    def extra():
        source, found, at = SAMPLER.latest
        if at is None or at == sent[0] or not found:
            return {}
        sent[0] = at
        return {"gpus": found, "gpu_source": source}
    return extra
