"""Issue 41: `nodeweave doctor` plans a node the one way every entrypoint path does (``recovery/roles.plan_node``).

Doctor called ``build_plan`` itself, the plan before spares: in a spare's container (recovery on, two
training nodes and one spare) every diagnosis carried the error "node rank 2 ... is not below the node
count 2", ``doctor --cluster`` from there gave up on "this machine's settings" without asking node 0, and
``doctor --spec --node 2`` refused the spare's index as no node of the job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from free_ports import free_port
from one_machine import one_machine_env
from nodeweave.doctor import diagnose
from nodeweave.doctor.cluster import survey_here
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SYSROOT = Path(__file__).parent / "fixtures" / "synthetic" / "cpu-only"
SRC = Path(__file__).resolve().parents[1] / "src"


def spare(tmp_path, **extra):
    """The variables of container 2 of a job with recovery on, nodes: 2 and recovery.spares: 1."""
    return {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path), "POD_NAME": "rj-2", "NODEWEAVE_NNODES": "2",
            "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", **extra}


def test_doctor_in_a_spares_container_judges_it_as_a_spare(tmp_path):
    diagnosis = diagnose(str(SYSROOT), spare(tmp_path))
    assert "plan-error" not in {f.code for f in diagnosis.findings}, [f.message for f in diagnosis.findings]
    assert diagnosis.plan.errors == []
    role = diagnosis.to_dict()["plan"]["role"]
    assert (role["kind"], role["identity"], role["rank"]) == ("spare", 2, None), role
    assert diagnosis.plan.topology.nnodes.value == "3"  # the job's containers: its nodes and its spare


def test_doctor_on_a_training_node_of_a_job_with_a_spare_names_its_rank(tmp_path):
    diagnosis = diagnose(str(SYSROOT), spare(tmp_path, POD_NAME="rj-1"))
    role = diagnosis.to_dict()["plan"]["role"]
    assert diagnosis.plan.errors == [] and (role["kind"], role["rank"]) == ("training node", 1), role


def test_doctor_cluster_from_a_spare_asks_node_0(tmp_path):
    """Here nobody answers on node 0's port: the finding names node 0's exchange, not this node's plan."""
    port = free_port()
    view = survey_here(one_machine_env(spare(tmp_path, NODEWEAVE_MASTER_ADDR="127.0.0.1",
                                             NODEWEAVE_MASTER_PORT=str(port))))
    assert view.source != "this machine's settings", [f.message for f in view.findings]
    assert "not below the node count" not in " ".join(f.message for f in view.findings)
    assert view.source.startswith("127.0.0.1:"), view.source


def test_doctor_spec_judges_the_spares_index_as_the_spare(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(
        "name: rj\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
        "recovery: {enabled: true, spares: 1, checkpoint_dir: /workspace/ckpt}\n")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "TMPDIR": str(tmp_path), "HOME": home_beside(tmp_path)}
    doctor = [sys.executable, "-m", "nodeweave.cli", "doctor", "--spec", "nodeweave.yaml", "--sysroot", str(SYSROOT)]
    out = subprocess.run([*doctor, "--node", "2", "--json"], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=120)
    found = json.loads(out.stdout)
    assert found["plan"]["errors"] == [] and found["plan"]["role"]["kind"] == "spare", out.stdout + out.stderr
    beyond = subprocess.run([*doctor, "--node", "3"], capture_output=True, text=True, cwd=tmp_path, env=env,
                            timeout=120)
    assert beyond.returncode == 2 and "(0-2)" in beyond.stderr, beyond.stderr
