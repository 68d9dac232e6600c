"""The five example specs (examples/*.yaml), one per real setup nodeweave replaces.

Each renders every target it asks for, each rendered file passes the real
consumer's check (the Compose schema, kubernetes-validate strict for 1.29-1.33
and kubectl kustomize, hadolint, bash and shellcheck, OpenShift's published
schema), and the entrypoint's plan for it is checked on a captured node that
matches the setup: the SR-IOV RoCE pod (sts-h100-roce), an MI300X host
(mi300x), an HGX H100 host in a Slurm allocation (hgx-h100), and two LAN
desktops with different single GPUs (desktop-rtx4090, desktop-rtx3090).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import threading
from http.server import HTTPServer
from pathlib import Path

import jsonschema
import pytest
import yaml

import schemas
from nodeweave.entrypoint import make_plan
from nodeweave.rendering import render_targets, wanted_targets
from nodeweave.spec import load_spec
from test_contract_rows import sbatch_env
from test_entrypoint_contract import FIX, Api, compose_env, pod_env, with_hostname
from test_images import hadolint
from test_manifests import kubectl_problem, validate_strict, write_tree

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
NAMES = ("openshift-deepspeed-roce", "rocm-bare-hosts", "openshift-elastic", "slurm-accelerate", "lan-desktops")
COMPOSE_SCHEMA = Path(os.environ.get("NODEWEAVE_SHARED_DIR") or REPO.parent / "shared") / "schemas" / "compose-spec.json"


@functools.lru_cache(maxsize=None)
def spec_of(name: str):
    return load_spec(EXAMPLES / f"{name}.yaml")


@functools.lru_cache(maxsize=None)
def files_of(name: str):
    return render_targets(spec_of(name), wanted_targets(spec_of(name)))


def test_the_five_shapes_are_there():
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(NAMES)
    assert {"slurm", "openshift-build"} <= {t for n in NAMES for t in wanted_targets(spec_of(n))}


@pytest.mark.parametrize("name", NAMES)
def test_compose_files_pass_the_compose_schema(name):
    if not COMPOSE_SCHEMA.is_file():
        pytest.skip(f"{COMPOSE_SCHEMA} is absent (it sits in ../shared beside the checkout)")
    validator = jsonschema.Draft7Validator(json.loads(COMPOSE_SCHEMA.read_text()))
    for rel in ("compose/node.yaml", "compose/local.yaml"):
        problems = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(files_of(name)[rel]))]
        assert not problems, (rel, problems)


@pytest.mark.parametrize("name", NAMES)
def test_kubernetes_objects_validate_and_every_folder_builds(name, tmp_path):
    files = files_of(name)
    for rel, text in files.items():
        if rel.endswith(".yaml") and rel.startswith(("manifests/base/", "manifests/job/", "openshift/build/")) \
                and not rel.endswith("kustomization.yaml"):
            obj = yaml.safe_load(text)
            if schemas.has_schema(obj):
                assert schemas.errors(obj) == [], rel
            elif obj["kind"] != "PodMonitor":  # the Operator's CRD: test_manifests.py checks it field by field
                validate_strict(obj, f"{name}: {rel}")
    if kubectl_problem():
        pytest.skip(kubectl_problem())
    root = write_tree(files, tmp_path)
    folders = sorted({str(Path(rel).parent) for rel in files if rel.endswith("kustomization.yaml")})
    for folder in folders:
        run = subprocess.run(["kubectl", "kustomize", str(root / folder)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"{folder}: {run.stderr}"
        for obj in (d for d in yaml.safe_load_all(run.stdout) if d):
            if schemas.has_schema(obj):
                assert schemas.errors(obj) == [], folder
            else:
                validate_strict(obj, f"{name}: kustomize build {folder}")


@pytest.mark.parametrize("name", NAMES)
def test_the_specs_dockerfile_passes_hadolint(name, tmp_path):
    text = files_of(name)[f"images/{spec_of(name).image.variant}/Dockerfile"]
    result = hadolint(text, tmp_path)
    assert result.returncode == 0 and result.stdout == "", result.stdout


def test_the_slurm_script_parses_and_passes_shellcheck(tmp_path):
    path = tmp_path / "job.sbatch"
    path.write_text(files_of("slurm-accelerate")["slurm/job.sbatch"])
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    checked = subprocess.run(["shellcheck", "--severity=info", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


# -- the entrypoint's plan on a matching captured node ---------------------------------------------------


def _statefulset_plan(name: str, tmp_path: Path, index: int, replicas: int):
    sts = yaml.safe_load(files_of(name)["manifests/base/statefulset.yaml"])
    container = sts["spec"]["template"]["spec"]["containers"][0]
    env = pod_env(container, {"metadata.name": f"{sts['metadata']['name']}-{index}", "metadata.namespace": "training",
                              "status.podIP": "10.128.2.15",
                              "metadata.labels['apps.kubernetes.io/pod-index']": str(index)})
    Api.replicas = replicas
    server = HTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env["NODEWEAVE_KUBE_API"] = f"http://127.0.0.1:{server.server_address[1]}"
        root = with_hostname(tmp_path, "sts-h100-roce", f"{sts['metadata']['name']}-{index}")
        return make_plan(["--no-wait", "--", *container["args"]], env=env, sysroot=root)
    finally:
        server.shutdown()


def _env(plan):
    return {v.name: v.value for v in plan.env if v.action in ("set", "export")}


def test_openshift_roce_pod_plans_deepspeed_on_its_own_four_vfs(tmp_path):
    plan = _statefulset_plan("openshift-deepspeed-roce", tmp_path, index=2, replicas=4)
    t = plan.topology
    assert (t.node_rank.value, t.nnodes.value, t.nproc_per_node.value) == (2, "4", 4)
    assert t.master_addr.value == "ml-dev-env-0.ml-dev-env.training.svc.cluster.local"
    assert plan.launch.argv[0] == "deepspeed" and "--no_ssh" in plan.launch.argv
    hca = _env(plan).get("NCCL_IB_HCA", "")
    assert hca.startswith("=") and sorted(hca[1:].split(",")) == ["mlx5_10", "mlx5_11", "mlx5_6", "mlx5_7"], (
        "NCCL stays on this pod's four VFs, not the other pods' shared devices")


def test_openshift_elastic_pod_joins_a_c10d_rendezvous(tmp_path):
    plan = _statefulset_plan("openshift-elastic", tmp_path, index=1, replicas=2)
    t = plan.topology
    assert t.elastic and (t.nnodes_min, t.nnodes_max) == (2, 6)
    argv = plan.launch.argv
    assert argv[0] == "torchrun" and argv[argv.index("--rdzv-backend") + 1] == "c10d"
    assert argv[argv.index("--nnodes") + 1] == "2:6" and "--max-restarts" in argv


def _compose_plan(name: str, fixture: str, tmp_path: Path):
    files = files_of(name)
    service = yaml.safe_load(files["compose/node.yaml"])["services"]["node"]
    hostfile = tmp_path / "hosts"
    hostfile.write_text(files["compose/hosts"])
    env = {**compose_env(service, {}), "NODEWEAVE_HOSTFILE": str(hostfile)}
    return make_plan(["--no-wait", "--", *service["command"]], env=env, sysroot=str(FIX / fixture))


def test_bare_rocm_host_finds_its_rank_in_the_hosts_list():
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        plan = _compose_plan("rocm-bare-hosts", "mi300x", Path(tmp))
    t = plan.topology
    assert (t.node_rank.value, t.nnodes.value, t.master_addr.value, t.nproc_per_node.value) == (1, "2", "mi300-00", 8)
    argv = plan.launch.argv
    assert argv[0] == "torchrun" and argv[argv.index("--log-dir") + 1] == "/experiments/logs"
    assert _env(plan).get("NCCL_SOCKET_IFNAME") == "=eno8303", "the interface that routes to mi300-00"


@pytest.mark.parametrize("fixture, rank", [("desktop-rtx4090", 1), ("desktop-rtx3090", 2)])
def test_lan_desktops_each_find_their_rank_and_run_deepspeed_without_ssh(fixture, rank, tmp_path):
    plan = _compose_plan("lan-desktops", fixture, tmp_path)
    t = plan.topology
    assert (t.node_rank.value, t.nnodes.value, t.master_addr.value, t.nproc_per_node.value) == (rank, "3", "ws-01", 1)
    argv = plan.launch.argv
    assert argv[0] == "deepspeed" and "--no_ssh" in argv and argv[argv.index("--node_rank") + 1] == str(rank)
    assert _env(plan)["NCCL_SOCKET_IFNAME"] == "=enp5s0"
    assert "NCCL_IB_HCA" not in _env(plan), "no RDMA on a LAN desktop: nothing to restrict"


def test_slurm_node_runs_accelerate_with_the_allocations_rank(tmp_path):
    env = sbatch_env(files_of("slurm-accelerate")["slurm/job.sbatch"])
    # What srun gives the task on the second node of a 2-node allocation.
    env.update({"SLURM_JOB_ID": "4242", "SLURM_NODEID": "1", "SLURM_PROCID": "1", "SLURM_NNODES": "2",
                "SLURM_JOB_NODELIST": "hgx-a[00-01]", "SLURM_STEP_NODELIST": "hgx-a[00-01]", "SLURM_NTASKS_PER_NODE": "1"})
    spec = spec_of("slurm-accelerate")
    plan = make_plan(["--no-wait", "--", spec.launcher.script, *spec.launcher.args], env=env,
                     sysroot=str(FIX / "hgx-h100"))
    t = plan.topology
    assert (t.node_rank.value, t.nnodes.value, t.master_addr.value, t.nproc_per_node.value) == (1, "2", "hgx-a00", 4)
    argv = plan.launch.argv
    assert argv[:2] == ["accelerate", "launch"]
    assert argv[argv.index("--machine_rank") + 1] == "1" and argv[argv.index("--num_processes") + 1] == "8"
    assert argv[argv.index("--main_process_ip") + 1] == "hgx-a00"
    assert argv[argv.index("--mixed_precision") + 1] == "bf16" and argv.index("--mixed_precision") < argv.index("train.py")
