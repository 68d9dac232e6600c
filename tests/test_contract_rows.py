"""Every row of the renderer -> entrypoint contract round-trips: spec value -> rendered variable -> plan.

``nodeweave.entrypoint.planning.contract.SETTINGS`` is the only place the variables
are declared; this test renders compose files and manifests for a spec whose
every contract field has a non-default value, reads the variables each file
gives its container, and checks that the entrypoint reads back the spec's
value. It also proves no renderer writes a NODEWEAVE_* variable the contract
does not declare.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml

from nodeweave.targets.compose import render_files as render_compose
from nodeweave.entrypoint import make_plan, parse
from nodeweave.entrypoint.planning.contract import HOSTFILE_PATH, SETTINGS
from nodeweave.targets.kubernetes import render_files as render_manifests
from nodeweave.resolve import spec_value
from nodeweave.targets.slurm import render_files as render_slurm
from nodeweave.spec import parse_spec
from test_entrypoint_contract import FIX, compose_env, pod_env

SPEC = """name: rt
image: {variant: cuda12}
nodes: 3
gpus_per_node: 4
launcher: {type: deepspeed, script: t.py, master_port: 29555, max_restarts: 3, wait_timeout: 77,
           options: [--bind_cores_to_rank, --enable_each_rank_log, "/logs/a b's"],
           exchange: true, exchange_port: 31000, exchange_allow: [nccl, workspace], mode: hold,
           setup: ["source /opt/conda/etc/profile.d/conda.sh", "conda activate 'train env'"],
           stall_warn: 45, stall_timeout: 0}
network: {interfaces: [eno1, ibp25s0], exclude_hcas: ["mlx5_4", "mlx5_5:1"]}
kubernetes: {service: rdzv, cluster_domain: corp.example}
hosts: [gpu-a, gpu-b, gpu-c, gpu-d, gpu-e]  # the 3 nodes, then recovery's 2 spares
recovery: {enabled: true, spares: 2, max_restarts: 7, no_progress_restarts: 0, checkpoint_dir: ckpts,
           straggler_is_fault: true, warm_start: false}
metrics: {port: 9100, step_pattern: 'global_step=(\\d+)'}
"""
# launcher.exchange: false cannot go with recovery (refused at validate: recovery runs on the exchange), and a
# switch's own settings are refused while it is off (shared_rules.SWITCHED), so the switched-off rows are read
# from the same spec without recovery (its hosts then all training nodes), the exchange's and the metrics' own
# settings left out.
EXCHANGE_OFF = (SPEC.replace("exchange: true", "exchange: false").replace(", gpu-d, gpu-e]", "]")
                .replace("exchange_port: 31000, exchange_allow: [nccl, workspace], ", "")
                .split("recovery:")[0]) + "metrics: {enabled: false}\n"
# What the entrypoint makes of each spec field's value (its own typed form).
EXPECTED = {
    "name": "rt",  # the job id the compose files carry (walk6 W8)
    "nodes": "3",
    "kubernetes.service": "rdzv",
    "kubernetes.cluster_domain": "corp.example",
    "launcher.type": "deepspeed",
    "launcher.options": ["--bind_cores_to_rank", "--enable_each_rank_log", "/logs/a b's"],
    "gpus_per_node": 4,
    "launcher.master_port": 29555,
    "launcher.max_restarts": 3,
    "launcher.wait_timeout": 77,
    "launcher.exchange": False,
    "launcher.exchange_port": 31000,
    "launcher.exchange_allow": ["nccl", "workspace"],
    "launcher.mode": "hold",
    "launcher.setup": ["source /opt/conda/etc/profile.d/conda.sh", "conda activate 'train env'"],
    "launcher.stall_warn": 45,
    "launcher.stall_timeout": 0,
    "network.interfaces": ["eno1", "ibp25s0"],
    "network.exclude_hcas": ["mlx5_4", "mlx5_5:1"],
    "recovery.enabled": True,
    "recovery.spares": 2,
    "recovery.max_restarts": 7,
    "recovery.no_progress_restarts": 0,
    "recovery.checkpoint_dir": "ckpts",
    "recovery.straggler_is_fault": True,
    "recovery.warm_start": False,
    "metrics.enabled": False,
    "metrics.port": 9100,
    "metrics.step_pattern": "global_step=(\\d+)",
    "hosts": HOSTFILE_PATH,  # where compose mounts compose/hosts; test_compose reads the ranks from it
}
ROWS = [row for row in SETTINGS if row.spec]
# Deliberate overrides: the local simulation of a GPU spec runs `auto` (1 process per CPU node).
OVERRIDDEN = {("compose/local.yaml", "nproc_per_node")}
DOWNWARD = {"metadata.name": "rt-0", "metadata.namespace": "ns", "status.podIP": "10.0.0.5",
            "metadata.labels['apps.kubernetes.io/pod-index']": "0",
            "metadata.annotations['batch.kubernetes.io/job-completion-index']": "0"}


def sbatch_env(script: str) -> dict:
    """The variables the sbatch script exports, as bash itself reads them (run with an empty environment)."""
    exports = "\n".join(line for line in script.splitlines() if line.startswith("export "))
    out = subprocess.run(["bash", "-c", exports + "\nenv -0"], env={}, capture_output=True, timeout=30, check=True)
    pairs = (item.split("=", 1) for item in out.stdout.decode().split("\0") if "=" in item)
    return {k: v for k, v in pairs if k not in ("PWD", "SHLVL", "_")}


def _container_envs():
    """(where, file, env) for every container the renderers write, of SPEC and of EXCHANGE_OFF."""
    spec = parse_spec(SPEC)
    return spec, _envs(spec) + _envs(parse_spec(EXCHANGE_OFF))


def _envs(spec):
    out = []
    for path, text in render_slurm(spec).items():
        out.append(("slurm", path, sbatch_env(text)))
    for path, text in render_compose(spec).items():
        if path.endswith(".yaml"):
            for service in yaml.safe_load(text)["services"].values():
                out.append(("compose", path, compose_env(service, {"NODE_RANK": "0", "MASTER_ADDR": "rt-0"})))
    for path, text in render_manifests(spec).items():
        for doc in yaml.safe_load_all(text):
            template = ((doc or {}).get("spec") or {}).get("template") or {}
            for container in (template.get("spec") or {}).get("containers", []):
                if "env" in container:
                    out.append(("kubernetes", path, pod_env(container, DOWNWARD)))
    return out


def test_every_spec_field_of_the_contract_has_an_expected_value_here():
    assert {row.spec for row in ROWS} == set(EXPECTED)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.key)
def test_a_row_round_trips_through_every_renderer_that_sets_it(row):
    spec, containers = _container_envs()
    assert spec_value(spec, row.spec) is not None
    seen = [(where, path) for where, path, env in containers if row.variable in env]
    for where in row.where:
        assert any(w == where for w, _ in seen), f"{row.variable} is set by no {where} file"
    for where, path, env in containers:
        if row.variable not in env or (path, row.key) in OVERRIDDEN:
            continue
        if row.topology:
            # The local simulation runs the cpu image on CPU nodes; every other file a GPU node.
            node = "cpu-only" if path == "compose/local.yaml" else "hgx-h100"
            # The hosts list is a rank source of its own (checked in test_compose); here NODE_RANK is.
            topology_env = {k: v for k, v in env.items() if k != "NODEWEAVE_HOSTFILE"}
            plan = make_plan(["--no-wait", "--", "t.py"], {**topology_env, "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                                                           "NNODES": env.get("NODEWEAVE_NNODES", "3")},
                             sysroot=str(FIX / node))
            got = getattr(plan.topology, row.key).value
        else:
            got = parse(["--", "t.py"], env).get(row.key)
        expected = EXPECTED[row.spec]
        if row.key == "mode" and path.startswith("manifests/job/"):
            expected = "run"  # a batch workload runs whatever launcher.mode holds (docs/spec.md)
        assert got == expected, f"{path}: {row.variable}={env[row.variable]!r} read back as {got!r}"


def test_renderers_write_no_nodeweave_variable_outside_the_contract():
    declared = {row.variable for row in SETTINGS}
    _, containers = _container_envs()
    for _, path, env in containers:
        # NODEWEAVE_JOB_TOKEN_FILE: `nodeweave up` fills it in (an empty default otherwise), no spec field sets it
        stray = ({name for name in env if name.startswith("NODEWEAVE_")} - declared
                 - {"NODEWEAVE_POD_INDEX", "NODEWEAVE_JOB_TOKEN_FILE"})
        assert not stray, f"{path} sets {stray}, which nodeweave.entrypoint.planning.contract does not declare"


def test_an_overridable_row_is_an_interpolation_in_compose_with_the_spec_value_as_default():
    spec, _ = _container_envs()
    for path, text in render_compose(spec).items():
        if path.endswith(".yaml"):
            for service in yaml.safe_load(text)["services"].values():
                assert service["environment"]["NODEWEAVE_MODE"] == "${NODEWEAVE_MODE:-hold}", path
                assert compose_env(service, {"NODEWEAVE_MODE": "run"})["NODEWEAVE_MODE"] == "run"


def test_flags_and_variables_are_unique():
    flags = [flag for row in SETTINGS for flag in (row.flag, *row.aliases)]
    assert len(flags) == len(set(flags))
    assert len({row.variable for row in SETTINGS}) == len(SETTINGS)


def test_old_flag_spellings_still_parse():
    settings = parse(["--ifname", "eth9", "--exclude-hca", "mlx5_1", "--", "t.py"], {})
    assert settings.get("interfaces") == ["eth9"] and settings.get("exclude_hcas") == ["mlx5_1"]


def test_the_design_document_names_every_variable_of_the_contract():
    from pathlib import Path

    design = (Path(__file__).resolve().parents[1] / "docs" / "design.md").read_text(encoding="utf-8")
    missing = [row.variable for row in SETTINGS if f"`{row.variable}`" not in design]
    assert not missing, f"docs/design.md's contract table lacks {missing}"
