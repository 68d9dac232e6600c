"""The vendors' records: Xid events in the kernel log, amd-smi's JSON, dcgmi's JSON.

Fixtures: a real /dev/kmsg capture of the H100 machine plus Xid records in the driver's own format
(tests/fixtures/check/kmsg/README.md); AMD's published amd-smi samples (amd-smi/README.md); DCGM's
"real output" sample (README.md). The live /dev/kmsg of this machine is read where it may be.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from nodeweave.check.gpu_facts import failed_tests, parse_diag
from nodeweave.check.report import vendor_lines
from nodeweave.check.vendor import amd_smi
from nodeweave.entrypoint.detection.kernel_log import kmsg_record, read_kmsg, text_lines
from nodeweave.entrypoint.detection.xid import kernel_address, node_xids, parse_xid, xid_events
from nodeweave.check.verdict import findings

FIXTURES = Path(__file__).parent / "fixtures" / "check"
KMSG = FIXTURES / "kmsg"
AMD = FIXTURES / "amd-smi"


def test_a_kmsg_record_is_its_time_and_message_and_continuations_are_not_records():
    # the dev-kmsg ABI document's own example
    assert kmsg_record("7,160,424069,-;pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)\n"
                       " SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n") == (
        0.424069, "pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)")
    assert kmsg_record(" SUBSYSTEM=acpi") is None
    lines = read_kmsg(str(KMSG / "h100-vm-xid.kmsg"))
    assert len(lines) == 12 and lines[0] == (0.509922, "nvidia: loading out-of-tree module taints kernel.")


def test_the_driver_formats_parse_old_and_new():
    assert parse_xid("NVRM: Xid (PCI:0000:2b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.") \
        == {"pci": "0000:2b:00", "code": 79, "message": "GPU has fallen off the bus.", "pid": "<unknown>"}
    assert parse_xid("NVRM: Xid (PCI:0000:37:00): 95, pid=5171, Uncontained: FBHUB. RST: Yes, D-RST: No")["message"] \
        == "Uncontained: FBHUB. RST: Yes, D-RST: No"
    mig = parse_xid("NVRM: Xid (PCI:0000:10:00 GPU-I:02 GPU-CI:01): 31, pid=77, name=python, MMU Fault")
    assert (mig["gpu_instance"], mig["compute_instance"], mig["code"]) == (2, 1, 31)
    assert parse_xid("NVRM: GPU at PCI:0000:00:07: GPU-5e1b7f51") is None
    assert kernel_address("00000000:3B:00.0") == kernel_address("0000:3b:00.0") == "0000:3b:00"


def test_each_node_keeps_the_xids_of_its_own_gpus():
    lines = read_kmsg(str(KMSG / "h100-vm-xid.kmsg"))
    second = xid_events(lines, ["0000:00:07.0"])
    assert [(e["code"], e["hardware"], e["gpu_pci"]) for e in second["events"]] == [(79, True, "0000:00:07.0")]
    assert second["other_gpus_events"] == 2 and second["events"][0]["seconds"] == pytest.approx(6120.400118)
    first = xid_events(lines, ["0000:00:06.0"])
    assert [(e["code"], e["hardware"]) for e in first["events"]] == [(13, False), (43, False)]


def test_dmesg_text_of_three_driver_generations():
    events = xid_events(text_lines((KMSG / "h100-vm-xid.dmesg").read_text()), None)["events"]
    assert [(e["code"], e["pci"], e["seconds"]) for e in events] == [
        (94, "0000:00:06", 5841.00224), (95, "0000:00:06", 5902.110031), (79, "0000:00:07", 6120.400118)]


def test_xid_79_names_the_node_and_its_gpu_on_the_captured_h100_pair(repo_root):
    from nodeweave.check.facts import node_facts

    facts = node_facts({"CUDA_VISIBLE_DEVICES": "1"}, "/", str(repo_root / "tests/fixtures/captured/h100x2-vm"))
    xid = node_xids(facts["gpu_pci"], kmsg=str(KMSG / "h100-vm-xid.kmsg"))
    assert xid["readable"] and xid["source"].endswith("h100-vm-xid.kmsg")
    doc = json.loads((FIXTURES / "h100x2-simulated-nodes.json").read_text())
    doc["nodes"][1]["xid"] = xid
    doc["nodes"][0]["xid"] = node_xids(["0000:00:06.0"], kmsg=str(KMSG / "h100-vm-xid.kmsg"))
    found = findings(doc, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-1", "gpu_xid")]
    assert found[0].text.startswith("GPU 1 (0000:00:07.0): Xid 79 (GPU has fallen off the bus) 1x in the kernel log "
                                    "since boot, last at 6120 s after boot"), found[0].text
    assert "Xid on node-0, not named (usually the application's fault): 13 x1, 43 x1" in vendor_lines(doc)


def test_a_node_that_cannot_read_the_kernel_log_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # neither dmesg nor journalctl
    xid = node_xids(None, kmsg=str(tmp_path / "kmsg"))
    assert not xid["readable"] and xid["errors"] == [f"{tmp_path / 'kmsg'}: No such file or directory",
                                                     "dmesg: not installed", "journalctl: not installed"]
    doc = {"nodes": [{"node": 0, "facts": {}, "xid": xid}]}
    assert vendor_lines(doc)[0].startswith("Xid: node-0 cannot read the kernel log (") and findings(doc, 0.25) == []


def test_the_healthy_capture_has_no_event(tmp_path):
    assert node_xids(["0000:00:06.0"], kmsg=str(KMSG / "h100-vm-healthy.kmsg"))["events"] == []


def test_this_machines_own_kernel_log_is_read_live_where_permitted():
    try:
        lines = read_kmsg("/dev/kmsg")
    except OSError as err:
        pytest.skip(f"/dev/kmsg is not readable here: {os.strerror(err.errno)}")
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    stamps = [t for t, _ in lines]  # the ring buffer's oldest record first (it may have rotated past boot)
    assert lines and stamps == sorted(stamps) and 0 <= stamps[-1] <= uptime + 1, (lines[:2], lines[-2:], uptime)


def _amd_metric() -> list:
    """One ``amd-smi metric --json``: the published sections of each GPU joined, as the CLI prints them."""
    gpus = {}
    for name in ("metric-throttle-mi300-rocm6.3.json", "metric-ecc-rocm6.1.1.json", "metric-power-rocm6.1.json"):
        for item in json.loads((AMD / name).read_text()):
            gpus.setdefault(item["gpu"], {}).update(item)
    return [gpus[i] for i in sorted(gpus)]


def test_amd_smi_rows_of_both_shapes_keep_the_nodes_own_gpu():
    static = json.loads((AMD / "static-mi308x-rocm6.3.json").read_text())
    for metric in (_amd_metric(), {"gpu_data": _amd_metric()}):
        rows = amd_smi.rows(static, metric, ["0000:23:00.0"])
        assert [(r["index"], r["name"], r["pci"]) for r in rows] == [(0, "MI308X", "0000:23:00.0")]
        row = rows[0]
        assert (row["ecc_uncorrected_volatile"], row["ecc_deferred"], row["power_w"]) == (0, 0, 10.0)
        assert row["throttle_status"] == "UNTHROTTLED" and not any(row["throttle"].values())
        assert row["violation_activity_pct"]["ppt"] == 0.0
    assert [r["index"] for r in amd_smi.rows(static, _amd_metric(), None)] == [0, 1]


def test_amd_faults_in_the_same_format_are_named_and_ppt_is_not():
    static = json.loads((AMD / "static-mi308x-rocm6.3.json").read_text())
    metric = copy.deepcopy(_amd_metric())
    metric[1]["ecc"] = {"total_correctable_count": 0, "total_uncorrectable_count": 3, "total_deferred_count": 1}
    metric[1]["throttle"]["hbm_thermal_violation_status"] = "ACTIVE"
    metric[0]["throttle"]["ppt_violation_status"] = "ACTIVE"  # the power limit under load: not a fault
    nodes = [{"node": i, "facts": {}, "gpus": amd_smi.rows(static, metric, [pci])}
             for i, pci in enumerate(("0000:23:00.0", "0000:26:00.0"))]
    found = findings({"nodes": nodes, "links": []}, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-1", "gpu_ecc"), ("node-1", "gpu_ecc"),
                                                     ("node-1", "gpu_throttle")]
    assert "GPU 1 (AMD GPU): 3 uncorrected ECC" in found[0].text and "hbm_thermal_violation" in found[2].text


def test_amd_smi_absent_is_said(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert amd_smi.amd_smi(["0000:23:00.0"]) == {"tool": None, "gpus": []}


def test_dcgm_real_output_passes_and_a_fail_in_it_is_found():
    text = (FIXTURES / "dcgmi-diag-dcgm3.1.txt").read_text()
    document = parse_diag(text)
    assert document["DCGM GPU Diagnostic"]["version"] == "3.1.0" and failed_tests(document) == []
    tests = document["DCGM GPU Diagnostic"]["test_categories"][0]["tests"]
    tests[-1]["results"][0]["status"] = "FAIL"
    assert failed_tests(document) == ["Inforom"]
    assert parse_diag("Error: unable to connect to host engine\n") is None


def test_dcgm_absent_is_said_in_the_report(monkeypatch, tmp_path):
    from nodeweave.check.gpu_facts import dcgm_diag

    monkeypatch.setenv("PATH", str(tmp_path))
    dcgm = dcgm_diag()
    assert dcgm == {"ran": False, "installed": False, "error": "dcgmi not installed", "failed": []}
    lines = vendor_lines({"nodes": [{"node": 0, "facts": {}, "dcgm": dcgm}, {"node": 1, "facts": {}, "dcgm": dcgm}]})
    assert lines == ["DCGM: dcgmi is not installed on node-0, node-1: no dcgmi diag -r 1 there"]
