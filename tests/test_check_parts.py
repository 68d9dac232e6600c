"""The check's readers and its command line: nvidia-smi captures, cgroup CPU limits, the report, the argv.

The nvidia-smi text and the GPU documents are real captures (tests/fixtures/check/README.md), and so
is the H100 pair's sysfs tree (tests/fixtures/captured/); the cgroup files and the HGX trees are
synthetic, in the kernel's formats; the entrypoint that would run the worker parses the
check's flags with its own parser.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import cli_run
import pytest
from one_machine import one_machine_env

from nodeweave.check.driver import CheckOptions, CheckRequest, CheckResult, read_document
from nodeweave.check.facts import cpu_quota, planned_interface
from nodeweave.check.gpu_facts import failed_tests, parse_query, parse_remap
from nodeweave.check.report import plain_text
from nodeweave.check.verdict import findings
from nodeweave.entrypoint import Root
from nodeweave.errors import UsageError

FIXTURES = Path(__file__).parent / "fixtures" / "check"


def test_nvidia_smi_query_of_two_h100s():
    gpus = parse_query((FIXTURES / "nvidia-smi-query.csv").read_text())
    assert [(g["index"], g["name"], g["pci"]) for g in gpus] == [
        (0, "NVIDIA H100 80GB HBM3", "00000000:00:06.0"), (1, "NVIDIA H100 80GB HBM3", "00000000:00:07.0")]
    assert gpus[0]["sm_clock_mhz"] == gpus[0]["sm_clock_max_mhz"] == 1980.0 and gpus[0]["power_limit_w"] == 700.0
    assert gpus[0]["ecc_uncorrected_volatile"] == 0 and not any(gpus[0]["throttle"].values())
    remap = parse_remap((FIXTURES / "nvidia-smi-remapped-rows.csv").read_text())
    assert remap["00000000:00:07.0"] == {"remap_correctable": 0.0, "remap_uncorrectable": 0.0,
                                         "remap_pending": False, "remap_failure": False}


def test_a_throttled_gpu_in_the_same_format_is_named():
    line = (FIXTURES / "nvidia-smi-query.csv").read_text().splitlines()[1]
    cells = line.split(", ")
    cells[3], cells[11], cells[13] = "1005", "0x0000000000000040", "Active"  # HW thermal slowdown
    gpus = parse_query(", ".join(cells))
    assert gpus[0]["throttle"]["hw_thermal_slowdown"] and gpus[0]["sm_clock_mhz"] == 1005.0
    doc = json.loads((FIXTURES / "h100x2-simulated-nodes.json").read_text())
    doc["nodes"][1]["gpus"] = gpus
    found = findings(doc, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-1", "gpu_throttle")]
    assert "hw_thermal_slowdown (SM 1005.0 of 1980.0 MHz)" in found[0].text


def test_dcgm_failures_are_found_wherever_the_json_puts_them():
    document = {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}]},
        {"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [{"status": "Fail", "gpu_id": "1"}]}]}]}}
    assert failed_tests(document) == ["GPU Memory"]


@pytest.mark.parametrize("files, expected", [
    ({"sys/fs/cgroup/cpu.max": "50000 100000\n"}, 0.5),
    ({"sys/fs/cgroup/cpu.max": "max 100000\n"}, None),
    ({"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "25000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 0.25),
    ({"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
     None),
])
def test_cpu_quota_from_cgroup_v1_and_v2(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cpu_quota(Root(str(tmp_path))) == expected


def test_planned_interface_is_what_the_entrypoint_exported():
    assert planned_interface({"NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0"}, "lo") == "eth0"
    assert planned_interface({"NCCL_SOCKET_IFNAME": "^docker,lo"}, "ens5") == "ens5"


def test_the_gpu_document_reports_healthy_with_its_figures():
    doc = json.loads((FIXTURES / "h100x2-simulated-nodes.json").read_text())
    result = CheckResult(Path("runs/x"), {"exit_code": 0}, doc, findings(doc, doc["threshold"]))
    text = plain_text(result)
    assert result.exit_code == 0 and "healthy: nothing named" in text
    assert "1x NVIDIA H100 80GB HBM3 802 TF/s 3008 GB/s" in text and "from \\ to" in text
    assert "3.24GB/s" in text and "ring all-reduce of 256 MiB: busbw 2.86 GB/s, correct" in text


def test_a_gpu_shared_with_another_process_is_named_on_its_node_only():
    doc = json.loads((FIXTURES / "h100x2-busy-gpu-on-node-1.json").read_text())
    found = findings(doc, doc["threshold"])
    assert [(f.subject, f.metric) for f in found] == [
        ("node-1", "gpu_tflops"), ("node-1", "gpu_mem_gbps"), ("node-1", "gpu_tflops_datasheet"),
        ("node-1", "gpu_mem_gbps_datasheet")]
    assert found[0].text.startswith("GPU matmul (slowest GPU) 60% below its peers (median of 4 interleaved passes; "
                                    "best 335 TFLOP/s vs 803 TFLOP/s)"), found[0].text


def test_the_event_reasons_spelling_parses_the_same():
    gpus = parse_query((FIXTURES / "nvidia-smi-query-idle-event-reasons.csv").read_text())
    assert [(g["index"], g["sm_clock_mhz"], g["throttle_mask"]) for g in gpus] == [
        (0, 345.0, "0x0000000000000001"), (1, 345.0, "0x0000000000000001")]
    assert not any(any(g["throttle"].values()) for g in gpus)


def test_the_document_is_read_from_node_0s_log(tmp_path):
    doc = json.loads((FIXTURES / "h100x2-simulated-nodes.json").read_text())
    log = tmp_path / "node-0.log"
    log.write_text("nodeweave-entrypoint: node 0 of 2\ncheck: probing\nNODEWEAVE_CHECK_REPORT " + json.dumps(doc) + "\n")
    assert read_document(log) == doc
    log.write_text("torchrun failed\n")
    assert read_document(log) is None
    # srun --label cuts each task's output into 1024-byte lines: the document comes back in pieces
    line = "NODEWEAVE_CHECK_REPORT " + json.dumps(doc)
    log.write_text("check: probing\n" + "\n".join(line[i:i + 1024] for i in range(0, len(line), 1024)) + "\n")
    assert len(line) > 3 * 1024 and read_document(log) == doc
    log.write_text("NODEWEAVE_CHECK_REPORT {\"cut\": \n")
    assert read_document(log) is None


def test_options_refuse_what_cannot_work():
    with pytest.raises(UsageError, match=r"--threshold 120 is not accepted"):
        CheckOptions(threshold=1.2)
    with pytest.raises(UsageError, match="--repeats 0 is not accepted: 1 to 10"):
        CheckOptions(repeats=0)


def test_the_entrypoint_parses_the_check_run_with_its_own_parser(tmp_path):
    args = CheckRequest(run_id="r1", command=CheckOptions().worker_command()).entrypoint_args()
    argv = [a for a in args if a not in ("--run-id", "r1")]
    argv[argv.index("--mode") + 1] = "run"
    env = one_machine_env({"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "NODEWEAVE_NNODES": "4",
                           "NODEWEAVE_NODE_RANK": "2", "NODEWEAVE_MASTER_ADDR": "127.0.0.1",
                           "NODEWEAVE_LAUNCHER": "deepspeed", "NODEWEAVE_LAUNCHER_OPTIONS": "--bind_cores_to_rank",
                           "TMPDIR": str(tmp_path)})
    out = cli_run.entrypoint("--explain", "--json", *argv, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    launch = json.loads(out.stdout)["launch"]["argv"]
    assert launch[:3] == ["torchrun", "--nnodes", "4"] and "--bind_cores_to_rank" not in launch
    assert launch[launch.index("--nproc-per-node") + 1] == "1" and launch[launch.index("--node-rank") + 1] == "2"
    assert launch[-len(CheckOptions().worker_command()):] == CheckOptions().worker_command()


@pytest.mark.parametrize("pod, rank", [("rj-1", "1"), ("rj-2", "2")])
def test_the_check_runs_a_recovery_jobs_spare_as_a_node_it_checks(tmp_path, pod, rank):
    """Issue 41: under the spec's recovery the check's run was a recovery job: a spare's entrypoint planned it a
    spare, which waits, unchecked, while the others ran the worker ("check 3 node(s)" checked 2). The check
    is one generation of every node it names: recovery off, the count of its nodes."""
    args = CheckRequest(run_id="r1", command=CheckOptions().worker_command(),
                        flags=CheckOptions().entrypoint_flags(3)).entrypoint_args()
    argv = [a for a in args if a not in ("--run-id", "r1")]
    env = one_machine_env({"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "TMPDIR": str(tmp_path),
                           "POD_NAME": pod, "NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on",
                           "NODEWEAVE_SPARES": "1", "NODEWEAVE_MASTER_ADDR": "127.0.0.1"})
    out = cli_run.entrypoint("--explain", "--json", *argv, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["errors"] == [] and plan["role"]["kind"] == "training node", plan["role"]
    launch = plan["launch"]["argv"]
    assert launch[launch.index("--nnodes") + 1] == "3" and launch[launch.index("--node-rank") + 1] == rank, launch


def test_cli_dry_run_and_a_bad_threshold(tmp_path, repo_root):
    spec = tmp_path / "nodeweave.yaml"
    # a job name of its own: containers another test left named llama-pretrain-* (a plain compose of the repo's
    # spec) carry no mark of this folder, and the dry run rightly refuses to act on them
    spec.write_text((repo_root / "nodeweave.yaml").read_text().replace("name: llama-pretrain", "name: chkparts", 1))
    out = cli_run.nodeweave("check", "--spec", str(spec), "--dry-run", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "podman exec chkparts-1 env NODEWEAVE_NPROC_PER_NODE=1 NODEWEAVE_NNODES=2 nodeweave-entrypoint --mode run " \
        "--run-id <run-id> --launcher torchrun" \
        in out.stdout and "-- -m nodeweave.check.worker --threshold 0.25" in out.stdout
    bad = cli_run.nodeweave("check", "--spec", str(spec), "--threshold", "0", timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "nodeweave: error: --threshold 0 is not accepted: more than 0 and less than 100 (a percentage below the "
        "median of the peers, e.g. 25)"]


def test_a_node_keeps_only_its_own_gpus_rows():
    from nodeweave.check.gpu_facts import own_rows

    gpus = parse_query((FIXTURES / "nvidia-smi-query.csv").read_text())
    assert [g["index"] for g in own_rows(gpus, ["0000:00:07.0"])] == [1]
    assert own_rows(gpus, None) == gpus


def test_a_simulated_node_keeps_the_nvidia_smi_row_of_its_own_gpu_on_a_captured_h100_pair(repo_root):
    from nodeweave.check.facts import node_facts
    from nodeweave.check.gpu_facts import own_rows

    captured = repo_root / "tests" / "fixtures" / "captured" / "h100x2-vm"  # the device machine's tree
    facts = node_facts({"CUDA_VISIBLE_DEVICES": "1"}, "/", str(captured))
    assert facts["gpu_pci"] == ["0000:00:07.0"] and facts["gpu_count"] == 1
    rows = own_rows(parse_query((FIXTURES / "nvidia-smi-query.csv").read_text()), facts["gpu_pci"])
    assert [(g["index"], g["pci"]) for g in rows] == [(1, "00000000:00:07.0")]


def test_facts_of_synthetic_hgx_nodes_name_the_one_with_a_port_down(repo_root):
    from nodeweave.check.facts import node_facts

    trees = repo_root / "tests" / "fixtures" / "synthetic"  # hand-built in the kernel's formats
    env = {"CUDA_VISIBLE_DEVICES": "1,3"}
    good = node_facts(env, "/", str(trees / "hgx-h100"))
    bad = node_facts(env, "/", str(trees / "hgx-h100-port-down"))
    assert good["gpu_pci"] == ["0000:2a:00.0", "0000:5d:00.0"] and good["gpu_count"] == 2
    assert bad["rdma_active_ports"] < good["rdma_active_ports"]
    nodes = [{"node": i, "facts": facts, "samples": {}} for i, facts in enumerate((good, good, bad))]
    found = findings({"nodes": nodes, "links": []}, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-2", "rdma_active_ports")], found


@pytest.mark.parametrize("target, tool", [("kubernetes", "kubectl"), ("openshift", "oc")])
def test_cli_dry_run_on_kubernetes_and_openshift_execs_in_each_pod(tmp_path, repo_root, target, tool):
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text((repo_root / "nodeweave.yaml").read_text())
    out = cli_run.nodeweave("check", "--spec", str(spec), "--target", target, "--dry-run", timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if not line.startswith("#")]
    assert [line.split(" -- ")[0] for line in lines] == [
        f"{tool} exec -n ml-training -c trainer llama-pretrain-{i}" for i in range(len(lines))] and len(lines) >= 2
    assert all("nodeweave-entrypoint --mode run --run-id <run-id> --launcher torchrun --nproc-per-node 1" in line
               and line.endswith("-- -m nodeweave.check.worker --threshold 0.25 --repeats 2 --backend auto "
                                 "--seconds 0.25 --timeout 300") for line in lines), lines
