"""left9 (issue 43): two rows the eighth walk's replay left open. Each test fails on the code before its fix.

- N3: a value with white space at an end, of any option or variable the entrypoint reads (its own tables:
  ``SETTINGS`` and ``READ_VARIABLES``), is refused in one line naming it, the value and the spelling to use, never
  trimmed by one reader and taken whole by another (``MASTER_ADDR=' 10.0.0.1'`` was taken as 10.0.0.1);
- A31: a secret given with ``-e`` (``-e NAME``, the value from this shell; ``-e SECRET=value``) is kept out of
  the printed plan, ``-o json`` and every record, and a local engine's exec gets it from its own environment.
"""

from __future__ import annotations

import json

import pytest

from nodeweave.entrypoint.planning.contract import OTHER_VARIABLES, READ_VARIABLES, SECRET_VARIABLES, SETTINGS
from tests.cli_run import entrypoint_in_process

# A value each setting would take, so only the white space around it is at fault.
TAKEN = {"nnodes": "2", "node_rank": "0", "master_addr": "10.0.0.1", "service": "train", "cluster_domain":
         "cluster.local", "launcher": "torchrun", "launcher_options": "--max-restarts=0", "setup": "true",
         "nproc_per_node": "1", "master_port": "30001", "max_restarts": "0", "wait_timeout": "5", "exchange": "on",
         "exchange_port": "30002", "exchange_allow": "nccl", "exchange_bind": "any", "interfaces": "lo",
         "exclude_hcas": "mlx5_1", "hostfile": "/etc/nodeweave/hosts", "job_id": "team", "image_ref": "a/b:1",
         "sysroot": "/", "mode": "run", "run_id": "r1", "profile": "nsys", "profile_options": "--stats=true",
         "straggler_fault": "0", "stall_warn": "60", "stall_timeout": "600", "recovery": "off", "spares": "0",
         "recovery_max_restarts": "5", "no_progress_restarts": "3", "checkpoint_dir": "ckpt",
         "straggler_is_fault": "off", "warm_start": "on", "metrics": "on", "metrics_port": "9464",
         "step_pattern": "step=(\\d+)"}
BY_VARIABLE = {row.variable: row.key for row in SETTINGS}
OTHER = {"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "30001", "WORLD_SIZE": "2",
         "RANK": "0", "PET_NODE_RANK": "0", "PET_NNODES": "2", "PET_NPROC_PER_NODE": "1",
         "PET_MASTER_ADDR": "10.0.0.1", "PET_MASTER_PORT": "30001", "NODEWEAVE_JOB_TOKEN": "s3cret-token",
         "NODEWEAVE_JOB_TOKEN_FILE": "/run/token", "NODEWEAVE_KUBE_API": "http://127.0.0.1:8001",
         "NODEWEAVE_NCCL_VERSION": "2.21.5", "NODEWEAVE_RCCL_VERSION": "2.20.5"}
SHAPES = [" {}", "{}\t", "{}\n"]


@pytest.fixture
def entrypoint(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text("print('hi')\n")
    return entrypoint_in_process(tmp_path, monkeypatch, capsys)


def refusal(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if "error" in line]
    assert code == 2 and len(lines) == 1, (code, err)
    return lines[0]


def test_every_variable_the_entrypoint_reads_is_in_the_walk():
    assert set(READ_VARIABLES) == set(BY_VARIABLE) | set(OTHER) and set(OTHER_VARIABLES) <= set(OTHER)
    assert set(TAKEN) == {row.key for row in SETTINGS}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("variable", READ_VARIABLES)
def test_a_padded_variable_is_refused_naming_it_and_the_spelling(entrypoint, variable, shape):
    value = TAKEN[BY_VARIABLE[variable]] if variable in BY_VARIABLE else OTHER[variable]
    code, _, err = entrypoint(["--explain", "--", "train.py"], {variable: shape.format(value)})
    line = refusal(code, err)
    assert variable in line and "white space at an end" in line, line
    if variable in SECRET_VARIABLES:
        assert value not in line, line  # a secret's value is never printed, padded or not
    else:
        assert repr(shape.format(value)) in line or shape.format(value) in line, line
        assert f"write {variable}='{value}'" in line, line


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("row", SETTINGS, ids=lambda row: row.flag)
def test_a_padded_option_is_refused_naming_it_and_the_spelling(entrypoint, row, shape):
    value = TAKEN[row.key]
    code, _, err = entrypoint(["--explain", row.flag, shape.format(value), "--", "train.py"])
    line = refusal(code, err)
    assert f"{row.flag} " in line and "white space at an end" in line, line
    assert f"write {row.flag} '{value}'" in line, line


def test_the_replays_master_address_is_no_longer_trimmed(entrypoint):
    for env, argv in (({"MASTER_ADDR": " 10.0.0.1", "NNODES": "2", "NODE_RANK": "0"}, []),
                      ({"NNODES": "2", "NODE_RANK": "0"}, ["--master-addr", " 10.0.0.1"])):
        code, out, err = entrypoint(["--explain", *argv, "--", "train.py"], env)
        assert code == 2 and "10.0.0.1" not in out, out + err


def test_white_space_inside_a_value_is_still_taken(entrypoint):
    code, out, err = entrypoint(["--explain", "--", "train.py"], {"NODEWEAVE_LAUNCHER_OPTIONS": "--max-restarts 0"})
    assert code == 0, err
