"""``nodeweave doctor`` against the entrypoint's synthetic sysroots, with harmful environments.

Every case runs the real entrypoint detection on a fixture tree; the ones
that need a variation (no GPUDirect module, a small memlock) copy a fixture
and change the one file that matters.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

from nodeweave.doctor import diagnose
from nodeweave.doctor.findings import grade_plan_warning
from nodeweave.errors import UsageError

SYSROOTS = Path(__file__).parent / "fixtures" / "synthetic"
MULTI = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "1", "NODEWEAVE_MASTER_ADDR": "10.10.0.10"}


def codes(diagnosis, severity=None):
    return {f.code for f in diagnosis.findings if severity is None or f.severity == severity}


def sysroot(name):
    path = SYSROOTS / name
    if not path.is_dir():
        pytest.skip(f"fixture sysroot {name} is absent")
    return str(path)


def copy_fixture(tmp_path, name):
    dest = tmp_path / name
    shutil.copytree(sysroot(name), dest, symlinks=True)
    return dest


def test_clean_hgx_node_has_no_errors_or_warnings():
    d = diagnose(sysroot("hgx-h100"), dict(MULTI))
    assert d.exit_code == 0, [f.message for f in d.findings]
    assert codes(d, "error") == set() and codes(d, "warning") == set()


def test_tutorial_settings_on_an_nvswitch_node():
    env = {**MULTI, "NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_ALGO": "Ring",
           "NCCL_SOCKET_IFNAME": "lo", "NCCL_DEBUG": "INFO"}
    d = diagnose(sysroot("hgx-h100"), env)
    assert d.exit_code == 1
    assert {"p2p-disabled-on-gpu-links", "ib-disabled-with-rdma", "socket-ifname-loopback"} <= codes(d, "error")
    assert {"forced-algo", "nccl-debug-on"} <= codes(d, "warning")
    assert d.findings[0].severity == "error"  # errors come first
    p2p = next(f for f in d.findings if f.code == "p2p-disabled-on-gpu-links")
    assert p2p.source == "entrypoint" and "unset NCCL_P2P_DISABLE" in p2p.action


def test_loopback_interface_is_fine_on_a_single_node():
    d = diagnose(sysroot("hgx-h100"), {"NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1"})
    assert "socket-ifname-loopback" not in codes(d) and "ib-disabled-with-rdma" not in codes(d)
    assert d.exit_code == 0


def test_port_down_is_a_warning_with_what_to_check():
    d = diagnose(sysroot("hgx-h100-port-down"), {})
    (finding,) = [f for f in d.findings if f.code == "rdma-port-down"]
    assert finding.severity == "warning" and "mlx5_3:1" in finding.message and "ibstat" in finding.action


def test_small_shm_is_an_error_on_a_gpu_vm():
    d = diagnose(sysroot("cloud-vm"), {})
    (finding,) = [f for f in d.findings if f.code == "shm-small"]
    assert finding.severity == "error" and "64 MiB" in finding.message and "--shm-size" in finding.action
    assert d.exit_code == 1


def test_stale_gid_index_with_nccl_2_21_5_and_ambiguous_hca_prefix():
    env = {**MULTI, "NODEWEAVE_MASTER_ADDR": "10.128.2.10", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "mlx5_1"}
    d = diagnose(sysroot("sts-h100-roce"), env)
    stale = next(f for f in d.findings if f.code == "ib-gid-index-stale")
    assert stale.severity == "warning" and "2.21.5" in stale.message
    prefix = next(f for f in d.findings if f.code == "ib-hca-prefix")
    assert "mlx5_10" in prefix.message and "'='" in prefix.action


def test_forced_protocol_and_channel_experiments():
    d = diagnose(sysroot("hgx-h100"), {"NCCL_PROTO": "Simple", "NCCL_MAX_NCHANNELS": "8", "NCCL_DEBUG": "WARN"})
    assert "forced-proto" in codes(d, "warning")
    (note,) = [f for f in d.findings if f.code == "tuning-variable"]
    assert note.severity == "info" and note.message.startswith("NCCL_MAX_NCHANNELS=8")
    assert "nccl-debug-on" not in codes(d)  # WARN is NCCL's quiet level


def test_amd_gpus_hidden_by_rocr_visible_devices():
    d = diagnose(sysroot("mi300x"), {"ROCR_VISIBLE_DEVICES": "0,1,2,3", "NODEWEAVE_NNODES": "16"})
    (hidden,) = [f for f in d.findings if f.code == "gpus-hidden"]
    assert "ROCR_VISIBLE_DEVICES hides 4 of this node's 8 GPUs" in hidden.message


def test_gpus_hidden_and_all_hidden():
    some = diagnose(sysroot("hgx-h100"), {"CUDA_VISIBLE_DEVICES": "0,1"})
    assert "gpus-hidden" in codes(some, "warning")
    none = diagnose(sysroot("hgx-h100"), {"CUDA_VISIBLE_DEVICES": ""})
    assert "gpus-all-hidden" in codes(none, "error") and none.exit_code == 1


def test_missing_gpudirect_module_with_active_rdma(tmp_path):
    root = copy_fixture(tmp_path, "hgx-h100")
    (root / "sys/module/nvidia_peermem/version").unlink()
    d = diagnose(str(root), dict(MULTI))
    assert "gpudirect-rdma-unavailable" in codes(d, "warning")
    assert "gpudirect-rdma-unavailable" not in codes(diagnose(sysroot("hgx-h100"), dict(MULTI)))


def test_limited_memlock_with_rdma_is_an_error_across_nodes(tmp_path):
    root = copy_fixture(tmp_path, "hgx-h100")
    limits = root / "proc/self/limits"
    limits.write_text(limits.read_text().replace("Max locked memory         unlimited            unlimited",
                                                 "Max locked memory         65536                65536    "))
    multi = diagnose(str(root), dict(MULTI))
    assert "memlock-limited" in codes(multi, "error")
    single = diagnose(str(root), {})
    assert "memlock-limited" in codes(single, "warning")


def test_msccl_switch_is_only_noted_before_rocm_7():
    d = diagnose(sysroot("mi300x"), {"NODEWEAVE_NNODES": "16", "RCCL_MSCCL_ENABLE": "1"})
    assert "msccl-switch" in codes(d, "info") and "msccl-switch-stale" not in codes(d)


def test_msccl_switch_is_stale_on_rocm_7(tmp_path):
    root = copy_fixture(tmp_path, "mi300x")
    (root / "opt/rocm/.info/version").write_text("7.1.0-38\n")
    d = diagnose(str(root), {"NODEWEAVE_NNODES": "16", "RCCL_MSCCLPP_ENABLE": "1"})
    assert "msccl-switch-stale" in codes(d, "warning")


def test_topology_error_still_checks_the_node():
    d = diagnose(sysroot("mi300x"), {"NCCL_P2P_DISABLE": "1", "NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "5"})
    assert {"plan-error", "p2p-disabled-on-gpu-links"} <= codes(d, "error")
    (plan_error,) = [f for f in d.findings if f.code == "plan-error"]
    assert "NODEWEAVE_NODE_RANK=5" in plan_error.message
    assert codes(d, "warning") == set()  # nothing about the stand-in single-node topology


def test_bad_entrypoint_variable_is_an_error_finding():
    d = diagnose(sysroot("cpu-only"), {"NODEWEAVE_LAUNCHER": "slurm"})
    (finding,) = [f for f in d.findings if f.code == "entrypoint-settings"]
    assert finding.severity == "error" and "NODEWEAVE_LAUNCHER" in finding.message and d.plan is None


def test_dynamic_severity_travels_with_the_warning():
    from nodeweave.entrypoint.model import PlanWarning

    finding = grade_plan_warning(PlanWarning("shm-small", "/dev/shm is 64 MiB", "error"))
    assert finding.severity == "error" and "--shm-size" in finding.action


def test_unknown_plan_warnings_stay_warnings():
    finding = grade_plan_warning("something new the entrypoint says")
    assert (finding.severity, finding.code, finding.source) == ("warning", "entrypoint-warning", "entrypoint")


def test_grading_follows_the_code_not_the_wording():
    from nodeweave.entrypoint.model import PlanWarning

    finding = grade_plan_warning(PlanWarning("p2p-disabled-on-gpu-links", "reworded entirely"))
    assert (finding.severity, finding.code, finding.message) == ("error", "p2p-disabled-on-gpu-links", "reworded entirely")


def test_every_warning_code_the_entrypoint_emits_is_a_row_with_severity_and_remedy():
    """Severities and remedies live in the rule rows; doctor keeps no table of grades of its own."""
    import re

    from nodeweave.doctor import findings
    from nodeweave.doctor.rules import RULES as DOCTOR_RULES
    from nodeweave.entrypoint.planning.rules import BY_CODE, NOTICES, RULES

    source = Path(__file__).resolve().parents[1] / "src/nodeweave/entrypoint"
    emitted = set()
    for path in source.rglob("*.py"):
        emitted |= set(re.findall(r'emit\(\s*warnings,\s*"([a-z0-9-]+)"', path.read_text()))
    assert emitted and emitted <= {rule.code for rule in NOTICES}, emitted - set(BY_CODE)
    codes = [rule.code for rule in RULES + NOTICES + DOCTOR_RULES]
    assert len(codes) == len(set(codes)), "a code names one rule"
    for rule in RULES + NOTICES + DOCTOR_RULES:
        assert rule.level(None) in ("error", "warning", "info") and len(rule.remedy) > 20, rule.code
    assert not hasattr(findings, "_GRADES")


def test_the_gid_version_rule_lives_once():
    """Doctor asks the entrypoint's policy whether the library finds the GID itself; it keeps no version of its own."""
    doctor = (Path(__file__).resolve().parents[1] / "src/nodeweave/doctor").glob("*.py")
    for path in doctor:
        text = path.read_text()
        assert "GID_AUTO" not in text and "2, 21, 5" not in text, path


def test_missing_sysroot_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="--sysroot"):
        diagnose(str(tmp_path / "nope"), {})


def _doctor(*args, env=None):
    return cli_run.run([*cli_run.NODEWEAVE, "doctor", *args], timeout=120,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def test_cli_json_and_exit_codes():
    bad = _doctor("--json", "--sysroot", sysroot("hgx-h100"), env={"NCCL_P2P_DISABLE": "1"})
    assert bad.returncode == 1, bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["schema"] == "nodeweave.doctor/1" and doc["ok"] is False
    assert doc["node"]["gpus"]["interconnect"] == "nvswitch" and doc["counts"]["error"] >= 1
    assert any(v["name"] == "NCCL_P2P_DISABLE" and v["action"] == "kept" for v in doc["plan"]["env"])
    good = _doctor("--sysroot", sysroot("hgx-h100"), env={"NCCL_P2P_DISABLE": ""})
    assert good.returncode == 0, good.stdout + good.stderr
    assert "8x NVIDIA H100 80GB HBM3 (nvswitch)" in good.stdout and "no errors" in good.stdout
    missing = _doctor("--sysroot", "/nonexistent/sysroot")
    assert missing.returncode == 2 and "--sysroot" in missing.stderr and "Traceback" not in missing.stderr


def test_doctor_does_not_import_torch():
    code = ("import sys; from nodeweave.cli import main; rc = main(['doctor', '--json', '--sysroot', %r]); "
            "assert 'torch' not in sys.modules, 'torch imported'; print('clean')" % sysroot("cpu-only"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "clean" in out.stdout, out.stderr


def _run_result(busbw, wrong=0, world=8):
    from nodeweave.bench.runner import RunResult

    report = {"backend": "nccl", "nccl": "2.28.9", "world_size": world, "device": "NVIDIA H100 80GB HBM3",
              "correct": wrong == 0, "results": [
                  {"op": "all_reduce", "bytes": 16 << 20, "busbw_gbps": busbw / 2, "wrong": 0},
                  {"op": "all_reduce", "bytes": 256 << 20, "busbw_gbps": busbw, "wrong": wrong}]}
    return RunResult("doctor", {}, 0 if wrong == 0 else 1, report)


def test_bench_judgement_on_an_nvswitch_node():
    from nodeweave.doctor.bench_check import judge

    node = diagnose(sysroot("hgx-h100"), {}).node
    (fast,) = judge(_run_result(300.0), node)
    assert fast.severity == "info" and "300.0 GB/s at 256 MiB" in fast.message
    (slow,) = judge(_run_result(27.5), node)
    assert slow.severity == "warning" and slow.code == "bench-low-busbw"
    (wrong,) = judge(_run_result(300.0, wrong=12), node)
    assert wrong.severity == "error" and "12 wrong element(s)" in wrong.message


@pytest.mark.slow
def test_doctor_bench_runs_a_real_gloo_all_reduce():
    out = _doctor("--bench", "--json", "--sysroot", sysroot("cpu-only"))
    doc = json.loads(out.stdout)
    assert doc["bench"]["correct"] and doc["bench"]["report"]["world_size"] == 2, out.stderr
    assert any(f["code"] == "bench" and f["source"] == "bench" for f in doc["findings"])
