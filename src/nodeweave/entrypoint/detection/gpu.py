"""GPUs: NVIDIA from the driver's procfs (PCI as fallback), AMD from KFD topology.

No library is loaded and no tool is run (``nvidia-smi -L`` costs ~35 ms,
``import torch`` seconds). The visible-devices variables are honoured the way
the runtimes honour them, so ``count`` is what the launcher can use.
"""

from ..model import Gpu, Gpus

NVIDIA_VENDOR = "0x10de"
AMD_VENDOR = "0x1002"
NVIDIA_MODELS = {  # PCI device id → name, for nodes without /proc/driver/nvidia
    "0x2330": "NVIDIA H100 80GB HBM3", "0x2331": "NVIDIA H100 PCIe", "0x2335": "NVIDIA H200",
    "0x2324": "NVIDIA H800", "0x20b0": "NVIDIA A100-SXM4-40GB", "0x20b2": "NVIDIA A100-SXM4-80GB",
    "0x20b5": "NVIDIA A100 80GB PCIe", "0x2901": "NVIDIA B200", "0x27b8": "NVIDIA L4",
    "0x26b9": "NVIDIA L40S",
}
AMD_MODELS = {  # KFD device_id → name
    0x74A1: "AMD Instinct MI300X", 0x74A5: "AMD Instinct MI325X", 0x74B5: "AMD Instinct MI300X VF",
    0x74A0: "AMD Instinct MI300A", 0x740F: "AMD Instinct MI210", 0x740C: "AMD Instinct MI250X/MI250",
    0x738C: "AMD Instinct MI100", 0x75A0: "AMD Instinct MI350X", 0x75A3: "AMD Instinct MI355X",
}
XGMI_LINK_TYPE = 11


def detect_gpus(root, env):
    gpus = _nvidia(root) or _amd(root) or Gpus(vendor="none", source="no NVIDIA or AMD GPU found")
    _apply_visible(gpus, env)
    return gpus


def _numa(root, bdf):
    value = root.read_int(f"/sys/bus/pci/devices/{bdf}/numa_node")
    return value if value is not None and value >= 0 else None


def _info_fields(text):
    fields = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _nvidia(root):
    devices = []
    source = "/proc/driver/nvidia/gpus"
    for bdf in root.listdir("/proc/driver/nvidia/gpus"):
        info = _info_fields(root.read(f"/proc/driver/nvidia/gpus/{bdf}/information"))
        pci = (info.get("Bus Location") or bdf).lower()
        devices.append(Gpu(vendor="nvidia", model=info.get("Model", "NVIDIA GPU"), pci=pci,
                           numa_node=_numa(root, pci), uuid=info.get("GPU UUID")))
    switches = 0
    if not devices:
        source = "PCI (vendor 0x10de)"
    for bdf in root.listdir("/sys/bus/pci/devices"):
        base = f"/sys/bus/pci/devices/{bdf}"
        if root.read(f"{base}/vendor") != NVIDIA_VENDOR:
            continue
        cls = root.read(f"{base}/class") or ""
        if cls.startswith("0x0680"):
            switches += 1
        elif not devices or source.startswith("PCI"):
            if cls.startswith("0x0302") or cls.startswith("0x0300"):
                dev = root.read(f"{base}/device") or ""
                devices.append(Gpu(vendor="nvidia", model=NVIDIA_MODELS.get(dev, f"NVIDIA GPU {dev}"),
                                   pci=bdf, numa_node=_numa(root, bdf)))
    if not devices:
        return None
    devices.sort(key=lambda g: g.pci or "")
    for i, gpu in enumerate(devices):
        gpu.index = i
    if switches or root.listdir("/proc/driver/nvidia-nvswitch/devices"):
        interconnect = "nvswitch"
    elif any(_sxm(g.model) for g in devices) and len(devices) > 1:
        interconnect = "nvlink"
    else:
        interconnect = "pcie"
    gdr = None
    if root.exists("/sys/module/nvidia_peermem/version"):
        gdr = "nvidia_peermem"
    elif root.exists("/sys/kernel/mm/memory_peers/nv_mem/version"):
        gdr = "nv_mem"
    return Gpus(vendor="nvidia", devices=devices, driver=root.read("/sys/module/nvidia/version"),
                interconnect=interconnect, gpudirect_rdma=gdr, source=source)


def _sxm(model):
    """SXM boards (NVLink) by model name: HBM3/HBM3e parts, H200, B200, 'SXM'."""
    model = model or ""
    return "SXM" in model or "HBM3" in model or "H200" in model or "B200" in model


def gfx_target(version):
    """KFD gfx_target_version (decimal) → gfx name: 90402 → gfx942, 90010 → gfx90a."""
    major, minor, step = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor:x}{step:x}"


def _props(text):
    props = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                props[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return props


def _amd(root):
    base = "/sys/class/kfd/kfd/topology/nodes"
    devices, xgmi = [], False
    render_dir = root.isdir("/dev/dri")
    for node in root.listdir(base):
        props = _props(root.read(f"{base}/{node}/properties"))
        target = props.get("gfx_target_version", 0)
        if not target or props.get("vendor_id") not in (4098, None):
            continue
        minor = props.get("drm_render_minor")
        if render_dir and minor is not None and not root.exists(f"/dev/dri/renderD{minor}"):
            continue  # GPU of the host not passed to this container
        loc = props.get("location_id", 0)
        pci = f"{props.get('domain', 0):04x}:{loc >> 8:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 7}"
        device_id = props.get("device_id")
        model = AMD_MODELS.get(device_id, f"AMD GPU 0x{device_id or 0:04x}")
        devices.append(Gpu(vendor="amd", model=model, pci=pci, numa_node=_numa(root, pci), arch=gfx_target(target)))
        if not xgmi:
            for link in root.listdir(f"{base}/{node}/io_links"):
                if _props(root.read(f"{base}/{node}/io_links/{link}/properties")).get("type") == XGMI_LINK_TYPE:
                    xgmi = True
                    break
    if not devices:
        return None
    for i, gpu in enumerate(devices):
        gpu.index = i
    source = "/sys/class/kfd topology"
    if not root.exists("/dev/kfd"):
        source += " (/dev/kfd missing: not usable in this container)"
    return Gpus(vendor="amd", devices=devices, driver=root.read("/sys/module/amdgpu/version"),
                interconnect="xgmi" if xgmi else ("pcie" if len(devices) > 1 else "none"),
                gpudirect_rdma="amdkfd" if root.exists("/sys/kernel/mm/memory_peers/amdkfd/version") else None,
                source=source)


def visible_layers(gpus, env):
    """The ``*_VISIBLE_DEVICES`` variables the runtime applies, in its order, as (name, value). NVIDIA: CUDA's.
    AMD: ROCm applies ``ROCR_VISIBLE_DEVICES`` first, then ``HIP_VISIBLE_DEVICES`` (``CUDA_VISIBLE_DEVICES``
    when HIP's is unset) indexes the GPUs ROCR left (walk7 B24: HIP index 1 under ROCR=1 names no GPU)."""
    if gpus.vendor == "nvidia":
        names = ("CUDA_VISIBLE_DEVICES",)
    elif gpus.vendor == "amd":
        hip = "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in env else "CUDA_VISIBLE_DEVICES"
        names = ("ROCR_VISIBLE_DEVICES", hip)
    else:
        names = ()
    return [(name, env[name]) for name in names if name in env]


def _apply_visible(gpus, env):
    """Count what the runtime will let the launcher use; keep the entries that name no GPU here.

    The runtimes stop at the first entry they cannot use, so ``visible`` ends
    there; ``visible_invalid`` lists every entry beyond the GPUs present (an
    index too high, an unknown UUID), which the plan refuses instead of
    silently shrinking the job. A negative index is CUDA's own way to hide
    the rest (``-1`` hides every GPU), and so is a word that names no GPU at
    all (Slurm's ``NoDevFiles``): both are kept as that. Layers compose
    (``visible_layers``): each indexes what the one before it left, and
    ``visible_env`` names the last.
    """
    count = len(gpus.devices)
    if gpus.vendor == "amd" and gpus.source and "missing" in gpus.source:
        count = 0
    left = list(range(len(gpus.devices)))  # what the layers so far leave, as indices of the node's GPUs
    for name, value in visible_layers(gpus, env):
        entries, invalid = visible_entries(gpus, value, len(left))
        gpus.visible = [left[e] if isinstance(e, int) else e for e in entries]
        gpus.visible_invalid, gpus.visible_env = invalid, name
        left = [e for e in gpus.visible if isinstance(e, int)] if all(isinstance(e, int) for e in gpus.visible) \
            else left[:len(gpus.visible)]
        count = min(count, len(gpus.visible))
        if invalid:
            break  # the plan refuses this layer: the next has nothing sure to index
    gpus.count = count
    first = gpus.devices[gpus.visible[0]] if gpus.visible and isinstance(gpus.visible[0], int) else (
        gpus.devices[0] if gpus.devices and count else None)
    if first is not None:
        gpus.model, gpus.arch = first.model, first.arch


def visible_entries(gpus, value, total=None):
    """(usable entries up to the first unusable one, entries that name no GPU here); ``total``: how many GPUs
    the indices count over (what an earlier layer left; default all of the node's)."""
    total = len(gpus.devices) if total is None else total
    uuids = {g.uuid for g in gpus.devices if g.uuid}
    visible, invalid, stopped = [], [], False
    for item in (v.strip() for v in value.split(",") if v.strip()):
        if item.lstrip("-").isdigit():
            index = int(item)
            if index < 0:
                stopped = True  # hides the rest, deliberately
            elif index >= total:
                invalid.append(item)
                stopped = True
            elif not stopped:
                visible.append(index)
        elif item.startswith("GPU-") and uuids and item not in uuids:
            invalid.append(item)
            stopped = True
        elif item.startswith(("GPU-", "MIG-")) or gpus.vendor == "amd":
            if not stopped:
                visible.append(item)
        else:
            stopped = True  # not a GPU reference at all (Slurm's NoDevFiles): the runtime sees none from here
    return visible, invalid
