"""The GPU proof's checks, run on CPU against captured nvidia-smi text, NCCL logs and the HGX sysroot.

``benchmarks/gpu_proof.py`` runs on GPU machines only, so what it concludes
there rests on these parsers and checks: detection against ``nvidia-smi``
(the SYNTHETIC 8x H100 HGX sysroot with nvidia-smi's text for that board,
hand-written in its tab-separated format since no HGX was lent: it checks the
parsers on a board no run had, not agreement with hardware; the real-hardware
agreement is tests/test_captures.py on a captured 2x H100 machine, and the
4x H200 VM capture below), NCCL's transport log (a real 2 nodes x 2 GPUs capture),
and the paired statistic. Each check is also shown to fail on the input it
exists to catch.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import gpu_bandwidth  # noqa: E402
import gpu_checks as checks  # noqa: E402
import gpu_proof  # noqa: E402
import gpu_stats as stats  # noqa: E402
import gpu_summary  # noqa: E402

SMI = REPO / "tests" / "fixtures" / "nvidia-smi"
HGX_ROOT = REPO / "tests" / "fixtures" / "synthetic" / "hgx-h100"
NCCL_2X2 = REPO / "tests" / "fixtures" / "nccl" / "h200x4-2x2.log"
SMI_FILES = {("--query-gpu=name,pci.bus_id,count", "--format=csv,noheader"): "query.csv",
             ("nvlink", "--status"): "nvlink-status.txt", ("topo", "-m"): "topo-m.txt"}


def replay(folder: Path, **edits):
    """nvidia-smi as captured in ``folder``; ``edits`` replace one file's text (``topo=...``)."""
    def smi(*args):
        name = SMI_FILES[args]
        return edits.get(name.split("-")[0].split(".")[0], (folder / name).read_text())
    return smi


def text(folder: Path, name: str) -> str:
    return (folder / name).read_text()


@pytest.fixture(scope="module")
def hgx_detection():
    return gpu_proof.step_detection(smi=replay(SMI / "hgx-h100"), sysroot=str(HGX_ROOT))


def test_synthetic_hgx_detection_agrees_with_its_hand_written_nvidia_smi_text(hgx_detection):
    result = hgx_detection
    assert result["agree"], result["checks"]
    assert result["interconnect"] == "nvswitch" and result["nvidia_smi_fabric"] == "switched"
    assert result["checks"]["count"] == (8, 8)
    assert result["checks"]["nvswitch"] == (True, True)
    assert result["nvidia_smi_nvlink_links_up"] == 8 * 18 and result["nvlink_links_inactive"] == {}
    assert result["topo_gpu_links"] == {f"GPU{i}": ["NV18"] for i in range(8)}
    assert result["driver"] == "550.90.07"


def test_hgx_detection_catches_a_gpu_nvidia_smi_does_not_list():
    rows = text(SMI / "hgx-h100", "query.csv").splitlines()
    seven = "\n".join(line.replace(", 8", ", 7") for line in rows[:7]) + "\n"
    result = gpu_proof.step_detection(smi=replay(SMI / "hgx-h100", query=seven), sysroot=str(HGX_ROOT))
    assert not result["agree"]
    assert result["checks"]["count"] == (8, 7)


def test_hgx_detection_catches_a_wrong_bus_id():
    query = text(SMI / "hgx-h100", "query.csv").replace("00000000:DB:00.0", "00000000:DC:00.0")
    result = gpu_proof.step_detection(smi=replay(SMI / "hgx-h100", query=query), sysroot=str(HGX_ROOT))
    assert not result["agree"]
    found, expected = result["checks"]["models_and_bus_ids"]
    assert ("NVIDIA H100 80GB HBM3", "0000:db:00.0") in found and ("NVIDIA H100 80GB HBM3", "0000:dc:00.0") in expected


def test_an_nvswitch_claim_fails_when_nvidia_smi_shows_direct_links():
    # NV2 to each of 7 peers is 14 links of 18: wired directly, so no switch sits between
    topo = text(SMI / "hgx-h100", "topo-m.txt").replace("NV18", "NV2")
    result = gpu_proof.step_detection(smi=replay(SMI / "hgx-h100", topo=topo), sysroot=str(HGX_ROOT))
    assert result["nvidia_smi_fabric"] == "direct"
    assert result["checks"]["nvswitch"] == (True, False) and not result["agree"]


def test_nvlink_claim_fails_when_nvidia_smi_shows_pcie_only():
    topo = text(SMI / "hgx-h100", "topo-m.txt").replace("NV18", "SYS")
    status = "".join(line + "\n" for line in text(SMI / "hgx-h100", "nvlink-status.txt").splitlines()
                     if line.startswith("GPU "))
    result = gpu_proof.step_detection(smi=replay(SMI / "hgx-h100", topo=topo, nvlink=status), sysroot=str(HGX_ROOT))
    assert result["checks"]["nvlink"] == (True, False) and not result["agree"]


def test_inactive_links_are_counted_per_gpu():
    status = text(SMI / "hgx-h100", "nvlink-status.txt").splitlines()
    at = status.index("GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-6f0c0003-5b5e-4b1f-9c1e-0a1b2c3d4e03)")
    status[at + 1] = "\t Link 0: <inactive>"
    status[at + 2] = "\t Link 1: <inactive>"
    links = checks.parse_nvlink_status("\n".join(status))
    assert links[3]["up"] == 16 and links[3]["inactive"] == 2 and links[0]["up"] == 18
    assert links[3]["uuid"] == "GPU-6f0c0003-5b5e-4b1f-9c1e-0a1b2c3d4e03"
    down = checks.parse_nvlink_status("GPU 0: NVIDIA RTX A6000 (UUID: GPU-x)\n"
                                      "NVML: Unable to retrieve NVLink information as all links are inActive\n")
    assert down[0]["up"] == 0


def test_topology_parser_reads_piped_underlined_and_space_copied_matrices():
    piped = text(SMI / "hgx-h100", "topo-m.txt")
    header, rest = piped.split("\n", 1)
    underlined = "\t\x1b[4m" + header.lstrip("\t") + "\x1b[0m\n" + rest
    spaced = piped.expandtabs(8)
    for variant in (piped, underlined, spaced):
        matrix = checks.parse_topo_matrix(variant)
        assert matrix["gpus"] == [f"GPU{i}" for i in range(8)]
        assert matrix["links"]["GPU0"]["GPU7"] == "NV18" and matrix["links"]["GPU3"]["GPU3"] == "X"
        assert matrix["nics"] == {f"NIC{i}": f"mlx5_{i}" for i in range(10)}
    assert checks.parse_topo_matrix("nvidia-smi failed: no such file") == {"gpus": [], "links": {}, "nics": {}}


def test_a_vm_slice_of_an_hgx_agrees_though_its_switches_are_hidden():
    """Captured on the 4x H200 VM: nvidia-smi sees NV18 to 3 peers on 18 links, the guest sees no switch."""
    folder = SMI / "h200x4-vm"
    gpus = json.loads(text(folder, "entrypoint-gpus.json"))
    result = checks.compare_detection(gpus, text(folder, "query.csv"), text(folder, "nvlink-status.txt"),
                                      text(folder, "topo-m.txt"))
    assert result["agree"], result["checks"]
    assert result["nvidia_smi_fabric"] == "switched" and result["nvswitch_hidden_from_os"]
    assert result["checks"]["count"] == (4, 4) and result["nvidia_smi_nvlink_links_up"] == 72


def node_logs(path: Path = NCCL_2X2) -> "dict[str, str]":
    """The proof's NCCL log file, split back into its ``##### nodeN`` sections."""
    logs, current = {}, None
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith("##### "):
            current = line.split()[1]
            logs[current] = ""
        elif current:
            logs[current] += line
    return logs


def test_nccl_log_of_two_nodes_of_two_gpus():
    summary = checks.nccl_transports(node_logs())
    assert summary["ranks_by_node"] == {"node0": [0, 1], "node1": [2, 3]}
    assert summary["hostnames_by_node"] == {"node0": ["nodeweave-0"], "node1": ["nodeweave-1"]}
    assert summary["intra_node"] == {"P2P/CUMEM": 8} and summary["inter_node"] == {"NET/Socket": 16}
    assert summary["nvlink_inside_each_node"] and checks.transports_ok(summary)


@pytest.mark.parametrize("old, new, broken", [
    ("via P2P/CUMEM", "via SHM/direct/direct", "intra_node_p2p_only"),  # no NVLink/P2P inside a node
    ("[receive] via NET/Socket/0", "via P2P/CUMEM", "inter_node_net_only"),  # one "host" (NCCL_HOSTID unset)
    ("type NVL/PHB", "type PIX/PHB", "nvlink_inside_each_node"),  # P2P over PCIe, not NVLink
])
def test_nccl_log_check_fails_on_the_wrong_transport(old, new, broken):
    logs = node_logs()
    logs["node1"] = logs["node1"].replace(old, new).replace("+ NVL[", "+ PCI[") if broken.startswith("nvlink") \
        else logs["node1"].replace(old, new)
    summary = checks.nccl_transports(logs)
    assert summary[broken] is False and not checks.transports_ok(summary)


def test_nccl_log_check_fails_without_any_log():
    summary = checks.nccl_transports({"node0": "", "node1": ""})
    assert not checks.transports_ok(summary)


def test_torchrun_forcing_one_omp_thread_is_seen_in_its_log():
    forced = ("W1126 07:46:01.123000 1200 torch/distributed/run.py:852] \n*****************************************\n"
              "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
              "system being overloaded, please further tune the variable for optimal performance in your "
              "application as needed. \n*****************************************")
    assert checks.torchrun_forced_one_omp_thread(forced)
    assert not checks.torchrun_forced_one_omp_thread("nodeweave-entrypoint: sets OMP_NUM_THREADS=16; run torchrun")


@pytest.mark.parametrize("n, order, coverage", [(6, (1, 6), 0.9688), (10, (2, 9), 0.9785), (17, (5, 13), 0.951),
                                                 (20, (6, 15), 0.9586)])
def test_sign_test_interval_uses_the_binomial_order_statistics(n, order, coverage):
    interval = stats.sign_test_interval([float(i) for i in range(n)])
    assert interval["order_statistics"] == list(order) and interval["coverage"] == coverage
    assert (interval["low"], interval["high"]) == (order[0] - 1, order[1] - 1)
    assert stats.sign_test_interval([1.0] * 5) is None


def test_paired_summary_says_what_it_resolves():
    steady = stats.paired_summary([100 + d for d in (0, 1, -1, 0.5, 0, -0.5, 1, 0, 0.2, -0.2)], [100] * 10)
    assert steady["no_cost_resolved"] and steady["verdict"].startswith("no cost of 3% or more")
    noisy = stats.paired_summary([100 * r for r in (0.8, 1.2, 0.9, 1.1, 0.85, 1.15, 0.95, 1.05, 1.0, 0.92)], [100] * 10)
    assert not noisy["no_cost_resolved"] and noisy["verdict"].startswith("unresolved at 3%")
    assert noisy["rounds_for_3pct"] > 10
    slow = stats.paired_summary([90 + d for d in (0, 1, -1, 0.5, 0, -0.5, 1, 0, 0.2, -0.2)], [100] * 10)
    assert slow["verdict"].startswith("costs more than 3%")
    assert stats.paired_summary([100, None, 100], [100, 100, None])["rounds"] == 1


@pytest.mark.parametrize("gpus, skipped", [(0, {1, 2, 3, 4, 6, 7}), (1, {3, 7}), (2, {7}), (4, set()), (8, set())])
def test_steps_a_host_cannot_run_are_skipped_with_a_reason(gpus, skipped):
    reasons = gpu_proof.skip_reasons({1, 2, 3, 4, 5, 6, 7}, gpus, torch_found=True)
    assert set(reasons) == skipped and all("GPU" in reason for reason in reasons.values())
    parts = gpu_bandwidth.skipped_parts(gpus, gpu_bandwidth.PARTS)
    assert ("split" in parts) == (gpus < 4) and ("two" in parts) == (gpus < 2)
    assert set(gpu_proof.skip_reasons({2}, 4, torch_found=False)) == {2}


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this host has nvidia-smi: the GPU steps would run")
def test_the_proof_starts_and_skips_every_gpu_step_on_a_cpu_host(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_proof.py"), "--out", str(tmp_path),
                          "--steps", "1,2,3,4,6,7"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    proof = json.loads((tmp_path / "proof.json").read_text())
    assert set(proof["skipped"]) == {"1", "2", "3", "4", "6", "7"}
    assert "== step 7 skipped: needs an NVIDIA GPU" in out.stdout and "failed steps: none" in out.stdout


def test_summary_lists_a_step_with_the_wrong_transports_as_failed():
    proof = {"gpus": 4, "7_split_nodes": {"correct": True, "transports_ok": False},
             "2_single_node": {"correct": True}, "1_detection": {"agree": True}}
    assert gpu_summary.failed_steps(proof) == ["7_split_nodes"]
