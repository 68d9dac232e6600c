"""A StatefulSet scaled to zero (the dormant state a team uses every night): every verb says so in one line.

The kubectl stand-in of the e2e tests (tests/e2e/kubectl_standin.py) holds the StatefulSet as
``apply`` would have recorded it; ``kubectl scale statefulset/seed --replicas 0`` through the same
stand-in makes it dormant (no pod is left, so no engine is needed). Each verb that acts on the
pods then exits 3 ("the cluster is not up", README's exit-code table) with one line naming the
StatefulSet and the scale command that wakes it, never a traceback; plain ``status`` still reports
the dormant state (exit 0, no rows).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

STANDIN = Path(__file__).parent / "e2e" / "kubectl_standin.py"
SPEC = """name: seed
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
kubernetes: {namespace: ml}
"""
WAKE = "`kubectl scale statefulset/seed -n ml --replicas 2` brings them back"


@pytest.fixture
def dormant(tmp_path):
    """A spec folder and PATH whose kubectl is the stand-in, holding StatefulSet seed scaled 2 -> 0."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('train')\n")
    state = tmp_path / "standin"
    state.mkdir()
    (state / "state.json").write_text(json.dumps({"standin/ml": {"statefulsets": {"seed": {"replicas": 2, "pods": {}}}}}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    (bin_dir / "kubectl").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STANDIN_STATE": str(state), "COLUMNS": "200", "HOME": home_beside(tmp_path),
           **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    scaled = subprocess.run(["kubectl", "scale", "-n", "ml", "statefulset/seed", "--replicas", "0"],
                            capture_output=True, text=True, env=env)
    assert scaled.returncode == 0 and "scaled" in scaled.stdout, scaled.stderr
    return tmp_path, env


def nodeweave(folder: Path, env: dict, *args: str) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, args[0], "--target", "kubernetes", *args[1:]], cwd=folder,
                          env=env, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("verb", [
    ("logs",), ("logs", "-f"), ("logs", "--container"), ("exec", "--", "true"), ("check",), ("stop",),
    ("sync",), ("status", "--fingerprints"), ("run",), ("shell",), ("run", "--dry-run"), ("exec", "--dry-run", "--", "x"),
], ids=" ".join)
def test_every_verb_on_a_dormant_statefulset_is_one_line_exit_3(dormant, verb):
    folder, env = dormant
    out = nodeweave(folder, env, *verb)
    assert out.returncode == 3, f"{verb}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    assert "Traceback" not in out.stderr and "Error" not in out.stderr.split(":", 1)[0]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "seed is scaled to zero: StatefulSet/seed in kubectl namespace ml has 0 replicas" in lines[0]
    assert WAKE in lines[0], lines[0]


def test_plain_status_reports_the_dormant_statefulset(dormant):
    folder, env = dormant
    out = nodeweave(folder, env, "status", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["nodes"] == [] and "scaled down (0 replicas)" in data["where"]
