"""The node's one GPU reader (``entrypoint/detection/gpu_use.py``), behind ``nodeweave status`` and the metrics:
each vendor tool's answer in base units, and which tool answers when several are installed or one is broken
(stand-in tools on PATH; this machine has no GPU)."""

from pathlib import Path

from nodeweave.entrypoint.detection.gpu_use import parse_amd_smi, parse_nvidia, parse_rocm, read_gpu_use
from nodeweave.entrypoint.nodeinfo import gpu_usage

FIX = Path(__file__).parent / "fixtures" / "smi"
MIB = 2 ** 20


def test_nvidia_smi_csv():
    gpus = parse_nvidia((FIX / "nvidia-smi.csv").read_text())
    assert len(gpus) == 4 and gpus[1] == {"index": 1, "util_ratio": 1.0, "mem_used_bytes": 1397 * MIB,
                                          "mem_total_bytes": 81559 * MIB, "power_watts": 71.5,
                                          "pci": "00000000:28:00.0"}
    assert parse_nvidia("0, [N/A], 1, 2, [N/A], [N/A]\n") == [
        {"index": 0, "util_ratio": None, "mem_used_bytes": MIB, "mem_total_bytes": 2 * MIB, "power_watts": None}]


def test_rocm_smi_json():
    (gpu,) = parse_rocm((FIX / "rocm-smi.json").read_text())
    assert gpu["index"] == 0 and gpu["util_ratio"] == 0.0 and round(gpu["mem_total_bytes"] / MIB) == 20464


def test_amd_smi_json_plain_and_wrapped():
    text = (FIX / "amd-smi.json").read_text()
    (gpu,) = parse_amd_smi(text)
    assert gpu == {"index": 0, "util_ratio": 0.42, "mem_used_bytes": 3000 * MIB, "mem_total_bytes": 8000 * MIB,
                   "power_watts": None}
    assert parse_amd_smi('{"gpu_data": ' + text + "}") == [gpu]


def tool(folder, name, script):
    path = folder / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_a_broken_tool_is_passed_over_for_the_next_and_status_keeps_its_units(tmp_path, monkeypatch):
    tool(tmp_path, "nvidia-smi", 'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the driver" >&2; exit 9\n')
    tool(tmp_path, "rocm-smi", f"/bin/cat {FIX / 'rocm-smi.json'}\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    found = read_gpu_use()
    assert found["tool"] == "rocm-smi" and len(found["gpus"]) == 1 and "error" not in found
    assert gpu_usage() == {"tool": "rocm-smi", "gpus": [{"index": 0, "util_pct": 0.0, "mem_used_mib": 27,
                                                         "mem_total_mib": 20464}]}
    (tmp_path / "rocm-smi").unlink()
    alone = read_gpu_use()
    assert alone["tool"] == "nvidia-smi" and alone["gpus"] == [] and "couldn't communicate" in alone["error"]
