"""Compose renderer: golden files for CUDA, ROCm and CPU specs, the Compose Specification's
JSON schema, and podman-compose 1.6's own interpolation and dry run on the rendered files.

Regenerate the goldens after an intended change with
``NODEWEAVE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_compose.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from nodeweave.targets.compose import render_files
from nodeweave.spec import load_spec
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "compose"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "nodeweave.yaml").is_file())
SCHEMA = Path(os.environ.get("NODEWEAVE_SHARED_DIR") or REPO.parent / "shared") / "schemas" / "compose-spec.json"
COMPOSE_FILES = ("compose/node.yaml", "compose/local.yaml")


def spec_of(case: str):
    return load_spec(GOLDEN / case / "nodeweave.yaml")


@pytest.fixture(scope="module")
def compose_validator():
    if not SCHEMA.is_file():
        pytest.skip(f"Compose Specification schema {SCHEMA} is absent (it sits in ../shared beside the checkout)")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_there_are_cuda_rocm_and_cpu_cases():
    assert {"cuda", "rocm", "cpu"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_rendered_files_match_the_goldens(case):
    spec = spec_of(case)
    rendered = render_files(spec)
    hosts = {"compose/hosts"} if spec.hosts else set()
    assert set(rendered) == {"compose/.env.example", "compose/local.yaml", "compose/node.yaml"} | hosts
    for rel, text in rendered.items():
        golden = GOLDEN / case / rel
        if os.environ.get("NODEWEAVE_UPDATE_GOLDEN") == "1":
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        assert golden.is_file(), f"missing golden {golden}; run with NODEWEAVE_UPDATE_GOLDEN=1"
        assert text == golden.read_text(encoding="utf-8"), f"{rel} for {case} differs from {golden}"


@pytest.mark.parametrize("case", CASES)
def test_rendering_is_byte_stable(case):
    assert render_files(spec_of(case)) == render_files(spec_of(case))


def test_rendering_does_not_depend_on_the_hash_seed():
    """Every golden case rendered in three interpreters with different PYTHONHASHSEED: the same bytes."""
    from hashseed import assert_same_under_every_seed

    assert_same_under_every_seed([{"name": case, "path": str(GOLDEN / case / "nodeweave.yaml")} for case in CASES],
                                 ["nodeweave.targets.compose"])


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("rel", COMPOSE_FILES)
def test_every_compose_file_validates_against_the_compose_spec(case, rel, compose_validator):
    document = yaml.safe_load(render_files(spec_of(case))[rel])
    errors = sorted(compose_validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("rel", COMPOSE_FILES)
def test_a_yaml_1_2_reader_reads_the_same_values(case, rel):
    """docker compose reads with a YAML 1.2 parser: `3e-4`, `0o17`, NEL/LS/PS must still read as written."""
    ruamel = pytest.importorskip("ruamel.yaml")
    text = render_files(spec_of(case))[rel]
    assert ruamel.YAML(typ="safe", pure=True).load(text) == yaml.safe_load(text)


@pytest.mark.parametrize("rel", COMPOSE_FILES)
def test_committed_compose_files_validate(rel, compose_validator):
    assert not list(compose_validator.iter_errors(yaml.safe_load((REPO / rel).read_text())))


def test_schema_validation_catches_a_broken_file(compose_validator):
    """The validator is live: a wrong type in a rendered file is reported."""
    document = yaml.safe_load(render_files(spec_of("cuda"))["compose/node.yaml"])
    document["services"]["node"]["network_mode"] = ["host"]
    document["services"]["node"]["cap_add"] = "IPC_LOCK"
    assert len(list(compose_validator.iter_errors(document))) >= 2


# -- what the per-node file must carry -------------------------------------------------


def node_service(case):
    return yaml.safe_load(render_files(spec_of(case))["compose/node.yaml"])["services"]["node"]


def test_cuda_node_has_host_network_rdma_and_device_reservations():
    service = node_service("cuda")
    assert service["network_mode"] == "host" and service["ipc"] == "host"
    assert service["ulimits"]["memlock"] == -1 and service["cap_add"] == ["IPC_LOCK"]
    assert service["devices"] == ["/dev/infiniband"]
    assert service["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "count": 8, "capabilities": ["gpu"]}
    ]
    assert service["image"] == "${NODEWEAVE_IMAGE:-registry.local:5000/ml/llama-pretrain:2026.11}"
    assert service["stop_grace_period"] == "300s"
    env = service["environment"]
    assert env["NODEWEAVE_INTERFACES"] == "ib0"
    assert env["NODEWEAVE_EXCLUDE_HCAS"] == "mlx5_4,mlx5_5:1"
    assert env["NODE_RANK"].startswith("${NODE_RANK:?")
    assert env["MASTER_ADDR"].startswith("${MASTER_ADDR:?")
    assert env["NODEWEAVE_MASTER_PORT"] == env["MASTER_PORT"] == "${MASTER_PORT:-29400}"
    assert env["NODEWEAVE_NNODES"] == env["NNODES"] == "${NNODES:-2}"


def test_rocm_node_uses_kfd_dri_and_device_groups():
    service = node_service("rocm")
    assert "deploy" not in service
    assert service["devices"] == ["/dev/kfd", "/dev/dri"], "no network.rdma in this spec: no /dev/infiniband"
    assert service["group_add"] == ["${VIDEO_GID:-44}", "${RENDER_GID:-109}"]
    assert service["volumes"] == ["/mnt/shared/sft:/workspace", "/mnt/nvme/cache:/cache",
                                  "${NODEWEAVE_JOB_TOKEN_HOST:-/dev/null}:/run/nodeweave/job-token:ro"]
    assert service["environment"]["NODEWEAVE_NPROC_PER_NODE"] == "auto"
    assert "RENDER_GID=" in render_files(spec_of("rocm"))["compose/.env.example"]


def test_cpu_node_has_no_gpu_or_rdma_settings():
    service = node_service("cpu")
    for key in ("deploy", "devices", "group_add", "cap_add", "ulimits"):
        assert key not in service
    assert service["volumes"][0] == "../../project:/workspace"


def test_elastic_node_file_leaves_ranks_to_the_rendezvous():
    files = render_files(spec_of("cpu"))  # nodes "2:3"
    env = yaml.safe_load(files["compose/node.yaml"])["services"]["node"]["environment"]
    assert "NODE_RANK" not in env and env["NNODES"] == "${NNODES:-2:3}"
    assert "NODE_RANK=" not in files["compose/.env.example"]


def test_local_simulation_has_one_service_per_minimum_node_on_one_bridge():
    local = yaml.safe_load(render_files(spec_of("cpu"))["compose/local.yaml"])
    assert list(local["services"]) == ["gloo-smoke-0", "gloo-smoke-1"]  # nodes "2:3" starts with 2
    assert local["networks"] == {"nodeweave": {"driver": "bridge"}}
    for index, (name, service) in enumerate(local["services"].items()):
        assert service["hostname"] == service["container_name"] == f"gloo-smoke-{index}"
        assert service["networks"] == ["nodeweave"]
        assert service["image"] == "${NODEWEAVE_IMAGE:-localhost/nodeweave/gloo-smoke:cpu}"
        assert service["environment"]["NODEWEAVE_NNODES"] == "2:3"
        assert "NODE_RANK" not in service["environment"]  # the entrypoint reads the hostname ordinal
        assert "network_mode" not in service and "devices" not in service


def test_local_simulation_uses_the_cpu_image_even_for_gpu_specs():
    local = yaml.safe_load(render_files(spec_of("cuda"))["compose/local.yaml"])
    service = local["services"]["llama-pretrain-0"]
    assert service["image"] == "${NODEWEAVE_IMAGE:-registry.local:5000/ml/llama-pretrain:cpu}"
    assert "NODEWEAVE_INTERFACES" not in service["environment"]  # host NIC names mean nothing here


# -- values survive compose's interpolation exactly (podman-compose's own code) ---------------------


def _interpolate(document, env):
    podman_compose = pytest.importorskip("podman_compose")
    return podman_compose.rec_subs(document, env)


@pytest.mark.parametrize("case", CASES)
def test_spec_values_reach_the_container_unchanged(case):
    spec = spec_of(case)
    document = yaml.safe_load(render_files(spec)["compose/node.yaml"])
    resolved = _interpolate(document, {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1"})["services"]["node"]
    for key, value in spec.env.items():
        assert resolved["environment"][key] == value
    assert resolved["command"] == [spec.launcher.script, *spec.launcher.args]
    assert resolved["environment"].get("NODE_RANK") == (None if spec.nodes.elastic or spec.hosts else "1")
    assert resolved["environment"]["MASTER_PORT"] == str(spec.launcher.master_port)


def test_dollar_signs_in_values_are_escaped_for_compose():
    text = render_files(spec_of("cuda"))["compose/node.yaml"]
    assert "$${USER}" in text and "$$5 per hour" in text


@pytest.mark.parametrize("missing", ["NODE_RANK", "MASTER_ADDR"])
def test_node_file_refuses_to_start_without_rank_or_master(missing):
    document = yaml.safe_load(render_files(spec_of("cuda"))["compose/node.yaml"])
    env = {"NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}
    del env[missing]
    with pytest.raises(ValueError, match=f"required variable {missing} is missing a value: {missing} must be set"):
        _interpolate(document, env)


# -- podman-compose 1.6 itself: the commands it would run ------------------------------------------


RECOVERY_SPEC = """name: rj
image: {variant: cpu}
nodes: 3
launcher: {script: t.py}
recovery: {enabled: true, spares: 1, min_nodes: 2}
"""


def test_with_recovery_a_node_container_that_dies_comes_back_and_every_slot_starts():
    """docs/recovery.md: node 0 lost comes back through its restart policy; a job under recovery starts every
    training node and the spares (node 0 decides each generation's members, so it can shrink to min_nodes)."""
    from nodeweave.spec import parse_spec

    files = render_files(parse_spec(RECOVERY_SPEC))
    local = yaml.safe_load(files["compose/local.yaml"])["services"]
    assert list(local) == ["rj-0", "rj-1", "rj-2", "rj-3"]
    assert {service["restart"] for service in local.values()} == {"on-failure:5"}  # recovery.max_restarts
    assert yaml.safe_load(files["compose/node.yaml"])["services"]["node"]["restart"] == "on-failure:5"
    fewer = render_files(parse_spec(RECOVERY_SPEC.replace("spares: 1", "spares: 1, max_restarts: 2")))
    assert yaml.safe_load(fewer["compose/node.yaml"])["services"]["node"]["restart"] == "on-failure:2"
    off = render_files(parse_spec(RECOVERY_SPEC.replace("recovery: {enabled: true, spares: 1, min_nodes: 2}\n", "")))
    local_off = yaml.safe_load(off["compose/local.yaml"])["services"]
    assert list(local_off) == ["rj-0", "rj-1", "rj-2"] and not any("restart" in s for s in local_off.values())
    assert "restart" not in yaml.safe_load(off["compose/node.yaml"])["services"]["node"]


def test_podman_compose_hands_the_restart_policy_to_podman(tmp_path):
    from nodeweave.spec import parse_spec

    creates = podman_compose_dry_run(tmp_path, "", "compose/local.yaml", {}, spec=parse_spec(RECOVERY_SPEC))
    assert len(creates) == 4 and all(" --restart on-failure:5 " in line for line in creates), creates


def podman_compose_dry_run(tmp_path, case, rel, env, spec=None):
    """The `podman create` lines podman-compose would run (it logs them space-joined, unquoted)."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (bash .ci/setup-engine.sh installs it); podman-compose asks it about networks")
    for name, text in render_files(spec or spec_of(case)).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "podman_compose", "--verbose", "--dry-run", "-f", rel, "up", "-d"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, **env, "HOME": home_beside(tmp_path)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return [m.group(1) for m in re.finditer(r"^INFO:[\w.]+:podman create (.*)$", out.stderr, re.MULTILINE)]


def test_podman_compose_runs_the_local_simulation_as_named_hosts(tmp_path):
    creates = podman_compose_dry_run(tmp_path, "cpu", "compose/local.yaml", {})
    assert len(creates) == 2
    for index, line in enumerate(creates):
        host = f"gloo-smoke-{index}"
        assert line.startswith(f"--name={host} ")
        assert f" --hostname {host} " in line
        assert f" --network=gloo-smoke-local_nodeweave:alias={host} " in line
        assert " --shm-size 1gb " in line
        assert " -e NODEWEAVE_NNODES=2:3 " in line
        assert f" -v {tmp_path.parent / 'project'}:/workspace " in line  # ../project, relative to the spec
        assert line.endswith(" localhost/nodeweave/gloo-smoke:cpu allreduce.py --size 1024 --label naïve ünïcode ✓")


def test_podman_compose_gives_the_node_rdma_and_gpus(tmp_path):
    creates = podman_compose_dry_run(tmp_path, "cuda", "compose/node.yaml", {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1"})
    (line,) = creates
    for part in (" --network=host ", " --cap-add IPC_LOCK ", " --ulimit memlock=-1 ", " --device /dev/infiniband ",
                 " --shm-size 64gb ", " -e NODE_RANK=1 ", " -e MASTER_ADDR=10.0.0.1 ", " -e PRICE=$5 per hour ",
                 " --run-name it's a \"test\": ${USER} "):
        assert part in line, part
    assert " ".join(f"--device nvidia.com/gpu={i}" for i in range(8)) in line


ETHERNET_ONLY = """name: lan
image: {variant: cuda12}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""


@pytest.mark.parametrize("variant", ["cuda12", "rocm70"])
def test_an_ethernet_only_spec_asks_for_no_rdma_device(variant, tmp_path):
    """docker and podman refuse a --device path the host lacks: without network.rdma, no /dev/infiniband."""
    from nodeweave.spec import parse_spec

    spec = parse_spec(ETHERNET_ONLY.replace("cuda12", variant))
    assert not spec.network.rdma
    service = yaml.safe_load(render_files(spec)["compose/node.yaml"])["services"]["node"]
    assert "/dev/infiniband" not in service.get("devices", [])
    with_rdma = parse_spec(ETHERNET_ONLY.replace("cuda12", variant) + "network: {rdma: true}\n")
    assert "/dev/infiniband" in yaml.safe_load(render_files(with_rdma)["compose/node.yaml"])["services"]["node"]["devices"]


# -- a hosts list instead of a hand-written NODE_RANK per host ---------------------------------------

FIX = REPO / "tests" / "fixtures" / "synthetic"


def test_hosts_list_gives_every_host_its_rank_from_one_file(tmp_path):
    """The same node.yaml on each host; the entrypoint finds itself in the mounted compose/hosts."""
    from nodeweave.entrypoint import make_plan
    from test_entrypoint_contract import compose_env

    files = render_files(spec_of("hosts"))
    service = yaml.safe_load(files["compose/node.yaml"])["services"]["node"]
    assert "NODE_RANK" not in service["environment"] and "MASTER_ADDR" not in service["environment"]
    assert "./hosts:/etc/nodeweave/hosts:ro" in service["volumes"]
    hostfile = tmp_path / "hosts"
    hostfile.write_text(files["compose/hosts"])
    env = {**compose_env(service, {}), "NODEWEAVE_HOSTFILE": str(hostfile)}
    plan = make_plan(["--no-wait", "--", *service["command"]], env=env, sysroot=str(FIX / "mi300x"))  # mi300-07
    t = plan.topology
    assert (t.node_rank.value, t.nnodes.value, t.master_addr.value) == (1, "3", "mi300-00")
    assert "hostfile" in t.node_rank.source


def test_hosts_file_names_each_host_once_node_zero_first():
    text = render_files(spec_of("hosts"))["compose/hosts"]
    assert [line for line in text.splitlines() if not line.startswith("#")] == list(spec_of("hosts").hosts)
    assert "NODE_RANK=" not in render_files(spec_of("hosts"))["compose/.env.example"]


def test_security_limits_and_volumes_reach_the_node_service():
    service = node_service("hosts")
    assert service["cap_add"] == ["IPC_LOCK", "SYS_PTRACE"]
    assert service["security_opt"] == ["seccomp=unconfined"]
    assert (service["cpus"], service["mem_limit"], service["mem_reservation"]) == ("180", "1800g", "1500g")
    assert "/mnt/nfs/datasets:/datasets:ro" in service["volumes"] and "scratch:/scratch" in service["volumes"]
    assert not any("/run/secrets/hf" in v for v in service["volumes"]), "a Secret without host_path is Kubernetes-only"
    assert "/dev/hugepages:/dev/hugepages" in service["volumes"]
    assert yaml.safe_load(render_files(spec_of("hosts"))["compose/node.yaml"])["volumes"] == {"scratch": {}}


def test_podman_compose_passes_security_limits_and_the_hosts_file(tmp_path):
    (line,) = podman_compose_dry_run(tmp_path, "hosts", "compose/node.yaml", {})
    for part in (" --cap-add IPC_LOCK ", " --cap-add SYS_PTRACE ", " --security-opt seccomp=unconfined ",
                 " --cpus 180.0 ", " -m 1800g ", " --memory-reservation 1500g ",
                 f" -v {tmp_path / 'compose' / 'hosts'}:/etc/nodeweave/hosts:ro ",
                 " -e NODEWEAVE_HOSTFILE=/etc/nodeweave/hosts "):
        assert part in line, (part, line)


def test_ipc_lock_false_leaves_the_unlimited_memlock_and_adds_no_capability():
    from dataclasses import replace

    spec = spec_of("cuda")
    spec = replace(spec, security=replace(spec.security, ipc_lock=False))
    service = yaml.safe_load(render_files(spec)["compose/node.yaml"])["services"]["node"]
    assert service["ulimits"]["memlock"] == -1 and "cap_add" not in service
    assert service["devices"] == ["/dev/infiniband"]
