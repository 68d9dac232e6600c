"""Each platform's documented environment, through the real `nodeweave-entrypoint --explain --json`.

The variables are the ones each platform's documentation lists and shows in
its examples (docs/entrypoint.md quotes them): node 1 of 2 unless a case says
otherwise. The plan must give the right rank, node count and master, the
launcher's own parser must read the same from the argv, and `nodeweave doctor`
must name the platform it recognised.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

FIX = Path(__file__).parent / "fixtures" / "synthetic"
SRC = Path(__file__).resolve().parents[1] / "src"
SCRIPT = ["train.py", "--lr", "3e-4"]
HGX_SELF = "10.10.0.11"  # the hgx-h100 tree's own address (its --local-addr)

# dstack: docs/concepts/tasks.md "Distributed tasks" (nodes: 2) and reference/environment-variables.
DSTACK = {"DSTACK_RUN_NAME": "train-distrib", "DSTACK_NODE_RANK": "1", "DSTACK_NODES_NUM": "2",
          "DSTACK_GPUS_PER_NODE": "8", "DSTACK_GPUS_NUM": "16", "DSTACK_MASTER_NODE_IP": "10.128.0.47",
          "DSTACK_NODES_IPS": "10.128.0.47\n10.128.0.48"}
# AWS Batch mnp-env-vars: a child node; the main node's address is set only on children.
AWS = {"AWS_BATCH_JOB_ID": "7a3e1c2b-5c1d-4a2e-9f0e-1b2c3d4e5f60#1", "AWS_BATCH_JQ_NAME": "gpu-queue",
       "AWS_BATCH_CE_NAME": "p5-ce", "AWS_BATCH_JOB_ATTEMPT": "1", "AWS_BATCH_JOB_NODE_INDEX": "1",
       "AWS_BATCH_JOB_NUM_NODES": "2", "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
       "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.1.12"}
# SageMaker training toolkit ENVIRONMENT_VARIABLES.md (SM_HOSTS example, two GPUs' worth of hosts).
SAGEMAKER = {"SM_CURRENT_HOST": "algo-2", "SM_HOSTS": '["algo-1","algo-2"]', "SM_NUM_GPUS": "8",
             "SM_NETWORK_INTERFACE_NAME": "ethwe", "SM_INPUT_CONFIG_DIR": "/opt/ml/input/config",
             "SM_RESOURCE_CONFIG": '{"current_host":"algo-2","hosts":["algo-1","algo-2"]}'}
# Azure ML per-node launch (process_count_per_node 1): its PyTorch variables and the node's task index.
AZURE = {"AZ_BATCHAI_TASK_INDEX": "1", "AZUREML_NODE_COUNT": "2", "AZ_BATCH_MASTER_NODE": "10.0.0.4:6105",
         "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105", "NODE_RANK": "1", "WORLD_SIZE": "2", "RANK": "1",
         "LOCAL_RANK": "0"}
# Open MPI's variables for `mpirun -N 1 -x MASTER_ADDR=10.0.0.1` (docs.open-mpi.org, environment-var).
MPI = {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "1",
       "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_UNIVERSE_SIZE": "2", "OMPI_COMM_WORLD_NODE_RANK": "0",
       "PMIX_RANK": "1", "MASTER_ADDR": "10.0.0.1"}


def explain(root, env, cwd, launcher="torchrun"):
    """The real command's --explain --json for a node under ``root`` with ``env``."""
    (Path(cwd) / "train.py").write_text("")
    full = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NODEWEAVE_LAUNCHER": launcher, **env}
    out = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(root), "--explain", "--json",
                          "--no-wait", "--", *SCRIPT], env=full, cwd=cwd, timeout=60)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    return json.loads(out.stdout)


def tree(tmp_path, fixture, hostname=None, files=None):
    """A copy of a captured tree with its hostname and some files replaced."""
    root = tmp_path / "root"
    shutil.copytree(FIX / fixture, root, symlinks=True)
    if hostname:
        (root / "etc/hostname").write_text(hostname + "\n")
    for path, text in (files or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.fixture(scope="module")
def torchrun():
    return pytest.importorskip("torch.distributed.run")


def torchrun_sees(torchrun, plan):
    """(nnodes, node_rank, master_addr, master_port, nproc_per_node) as torchrun's own parser reads the argv."""
    argv = plan["launch"]["argv"]
    assert argv[0] == "torchrun"
    args = torchrun.get_args_parser().parse_args(argv[1:])
    assert (args.training_script, args.training_script_args) == (SCRIPT[0], SCRIPT[1:])
    config, _, _ = torchrun.config_from_args(args)
    assert config.max_nodes == int(args.nnodes)
    return args.nnodes, args.node_rank, args.master_addr, args.master_port, args.nproc_per_node


def where(plan):
    t = plan["topology"]
    return t["platform"], t["node_rank"]["value"], t["nnodes"]["value"], t["master_addr"]["value"]


def test_dstack_task(tmp_path, torchrun):
    plan = explain(FIX / "hgx-h100", DSTACK, tmp_path)
    assert where(plan) == ("dstack", 1, "2", "10.128.0.47")
    assert plan["topology"]["nproc_per_node"]["source"] == "DSTACK_GPUS_PER_NODE=8"
    assert torchrun_sees(torchrun, plan) == ("2", 1, "10.128.0.47", 29500, "8")


def test_dstack_with_deepspeed(tmp_path):
    runner = pytest.importorskip("deepspeed.launcher.runner")
    plan = explain(FIX / "hgx-h100", DSTACK, tmp_path, launcher="deepspeed")
    (path, content), = plan["launch"]["files"].items()
    assert content == "10.128.0.47 slots=8\n10.128.0.48 slots=8\n"  # DSTACK_NODES_IPS, node 0 first
    (tmp_path / "hostfile").write_text(content)
    argv = [str(tmp_path / "hostfile") if a == path else a for a in plan["launch"]["argv"]]
    args = runner.parse_args(argv[1:])
    assert (args.no_ssh, args.node_rank, args.master_addr) == (True, 1, "10.128.0.47")
    assert list(runner.fetch_hostfile(args.hostfile))[args.node_rank] == "10.128.0.48"


def test_aws_batch_child_node(tmp_path, torchrun):
    plan = explain(FIX / "hgx-h100", AWS, tmp_path)
    assert where(plan) == ("AWS Batch", 1, "2", "10.0.1.12")
    assert torchrun_sees(torchrun, plan) == ("2", 1, "10.0.1.12", 29500, "8")


def test_aws_batch_main_node_uses_its_own_address(tmp_path, torchrun):
    main = {k: v for k, v in AWS.items() if k != "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"}
    plan = explain(FIX / "hgx-h100", {**main, "AWS_BATCH_JOB_NODE_INDEX": "0"}, tmp_path)
    assert where(plan) == ("AWS Batch", 0, "2", HGX_SELF)
    assert "AWS Batch main node" in plan["topology"]["master_addr"]["source"]
    assert torchrun_sees(torchrun, plan)[:3] == ("2", 0, HGX_SELF)


def test_aws_batch_main_node_other_than_index_0_is_node_0(tmp_path, torchrun):
    """The main node is the master, whatever its index: node i counts on from it."""
    env = {**AWS, "AWS_BATCH_JOB_NUM_NODES": "3", "AWS_BATCH_JOB_MAIN_NODE_INDEX": "2", "AWS_BATCH_JOB_NODE_INDEX": "0"}
    plan = explain(FIX / "hgx-h100", env, tmp_path)
    assert where(plan)[1:] == (1, "3", "10.0.1.12")
    assert plan["topology"]["node_rank"]["source"] == \
        "AWS_BATCH_JOB_NODE_INDEX=0 counted from the main node AWS_BATCH_JOB_MAIN_NODE_INDEX=2"


@pytest.mark.parametrize("lines", ["job-7f3a-group0-0\njob-7f3a-group0-1\n",
                                   "job-7f3a-group0-0 slots=1\n\njob-7f3a-group0-1 slots=1\n"])
def test_google_cloud_batch_with_its_hosts_file(lines, tmp_path, torchrun):
    """The MPI example's job: taskCount 2, taskCountPerNode 1, requireHostsFile: the VMs, one a line."""
    hosts = tmp_path / "batch_hosts"
    hosts.write_text(lines)
    root = tree(tmp_path, "compose-sim", hostname="job-7f3a-group0-1")
    env = {"BATCH_TASK_INDEX": "1", "BATCH_TASK_COUNT": "2", "BATCH_HOSTS_FILE": str(hosts),
           "BATCH_JOB_ID": "job-7f3a", "BATCH_TASK_RETRY_ATTEMPT": "0"}
    plan = explain(root, env, tmp_path)
    assert where(plan) == ("Google Cloud Batch", 1, "2", "job-7f3a-group0-0")
    assert any("agrees with BATCH_TASK_INDEX=1" in n for n in plan["topology"]["notes"])
    assert torchrun_sees(torchrun, plan)[:3] == ("2", 1, "job-7f3a-group0-0")


def test_google_cloud_batch_tasks_without_a_hosts_file_are_independent(tmp_path):
    plan = explain(FIX / "cpu-only", {"BATCH_TASK_INDEX": "3", "BATCH_TASK_COUNT": "10"}, tmp_path)
    assert where(plan) == (None, 0, "1", "127.0.0.1")
    assert any("independent Google Cloud Batch tasks" in n for n in plan["topology"]["notes"])


def test_sagemaker_variables(tmp_path):
    accelerate = pytest.importorskip("accelerate.commands.launch")
    plan = explain(FIX / "hgx-h100", SAGEMAKER, tmp_path, launcher="accelerate")
    assert where(plan) == ("SageMaker", 1, "2", "algo-1")
    args = accelerate.launch_command_parser().parse_args(plan["launch"]["argv"][2:])
    assert (args.num_machines, args.machine_rank, args.num_processes) == (2, 1, 16)
    assert (args.main_process_ip, args.training_script) == ("algo-1", "train.py")


def test_sagemaker_resourceconfig_json_and_its_one_based_host_names(tmp_path, torchrun):
    """Without the toolkit's variables, the file; the container's algo-2 name (ordinal 2) is no rank."""
    config = '{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"], "network_interface_name": "eth0"}'
    root = tree(tmp_path, "compose-sim", hostname="algo-2",
                files={"opt/ml/input/config/resourceconfig.json": config})
    plan = explain(root, {}, tmp_path)
    assert where(plan) == ("SageMaker", 1, "2", "algo-1")
    assert plan["topology"]["node_rank"]["source"] == "position of algo-2 in /opt/ml/input/config/resourceconfig.json"
    assert any("no rank under SageMaker" in n for n in plan["topology"]["notes"])
    assert torchrun_sees(torchrun, plan)[:3] == ("2", 1, "algo-1")


def test_azure_ml_per_node_launch(tmp_path, torchrun):
    plan = explain(FIX / "hgx-h100", AZURE, tmp_path)
    assert where(plan) == ("plain variables", 1, "2", "10.0.0.4")  # NODE_RANK is stronger; AZ_* agree
    notes = plan["topology"]["notes"]
    assert any("AZ_BATCHAI_TASK_INDEX=1 agrees with NODE_RANK=1" in n for n in notes)
    assert plan["topology"]["nnodes"]["source"] == "AZUREML_NODE_COUNT=2"
    assert torchrun_sees(torchrun, plan) == ("2", 1, "10.0.0.4", 6105, "8")


def test_azure_ml_task_index_alone(tmp_path, torchrun):
    env = {k: AZURE[k] for k in ("AZ_BATCHAI_TASK_INDEX", "AZUREML_NODE_COUNT", "AZ_BATCH_MASTER_NODE")}
    plan = explain(FIX / "hgx-h100", env, tmp_path)
    assert where(plan) == ("Azure ML", 1, "2", "10.0.0.4")
    assert torchrun_sees(torchrun, plan)[:3] == ("2", 1, "10.0.0.4")


def test_open_mpi_one_task_per_node(tmp_path, torchrun):
    plan = explain(FIX / "hgx-h100", MPI, tmp_path)
    assert where(plan) == ("MPI (Open MPI, PMIx)", 1, "2", "10.0.0.1")
    assert any("PMIX_RANK=1 agrees with OMPI_COMM_WORLD_RANK=1" in n for n in plan["topology"]["notes"])
    assert torchrun_sees(torchrun, plan) == ("2", 1, "10.0.0.1", 29500, "8")


def test_kubeflow_mpijob_worker_pod(tmp_path, torchrun):
    """MPIJob workers are <job>-worker-N; with the launcher as a worker, worker-1 is MPI rank 2: no contradiction."""
    root = tree(tmp_path, "compose-sim", hostname="pi-worker-1")
    env = {**MPI, "OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_RANK": "2", "PMIX_RANK": "2",
           "OMPI_UNIVERSE_SIZE": "3", "MASTER_ADDR": "pi-launcher.pi.default.svc"}
    plan = explain(root, env, tmp_path)
    assert where(plan) == ("MPI (Open MPI, PMIx)", 2, "3", "pi-launcher.pi.default.svc")
    assert any("no rank under MPI" in n for n in plan["topology"]["notes"])
    assert torchrun_sees(torchrun, plan)[:3] == ("3", 2, "pi-launcher.pi.default.svc")


@pytest.mark.parametrize("name,env", [("dstack", DSTACK), ("AWS Batch", AWS), ("SageMaker", SAGEMAKER),
                                      ("Azure ML", {k: AZURE[k] for k in ("AZ_BATCHAI_TASK_INDEX",
                                                                         "AZUREML_NODE_COUNT",
                                                                         "AZ_BATCH_MASTER_NODE")}),
                                      ("MPI (Open MPI, PMIx)", MPI)])
def test_doctor_names_the_platform(name, env):
    from nodeweave.doctor import diagnose

    assert diagnose(str(FIX / "hgx-h100"), env).plan.topology.platform == name


def test_explain_text_names_the_platform(tmp_path):
    (tmp_path / "train.py").write_text("")
    out = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "hgx-h100"), "--explain",
                          "--no-wait", "--", *SCRIPT], env={"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), **AWS},
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "rank from" in line)
    assert row.split("rank from", 1)[1].strip() == "AWS Batch"


def test_doctor_prints_the_platform_it_recognised():
    out = cli_run.run([*cli_run.NODEWEAVE, "doctor", "--sysroot", str(FIX / "hgx-h100")], timeout=120,
                         env={**os.environ, "COLUMNS": "200", **DSTACK})
    row = next(line for line in out.stdout.splitlines() if "rank from" in line)
    assert "dstack" in row, out.stdout
    assert "DSTACK_NODE_RANK=1" in out.stdout
