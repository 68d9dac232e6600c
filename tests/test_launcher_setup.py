"""``launcher.setup``: commands run before the launcher on every node, in the shell that then starts it.

A team's environment step (``source conda.sh; conda activate env``, ``module
load rocm``, a site script) is not a variable, so it cannot go in ``env``: the
entrypoint runs the lines in ``bash`` and that shell ``exec``s the launcher,
so what the lines export or activate is the launcher's environment. The
spec's list travels as ``NODEWEAVE_SETUP`` on every target (compose, bare
hosts, Kubernetes, the sbatch script and the Slurm step).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest
import yaml

from nodeweave.errors import UsageError
from nodeweave.rendering import render_targets
from nodeweave.spec import parse_spec

SRC = Path(__file__).resolve().parents[1] / "src"
FIX = Path(__file__).parent / "fixtures" / "synthetic"
SPEC = """name: setup
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher:
  script: train.py
  setup: ["source /opt/site/env.sh", "module load rocm/6.3 && export ROCM_SEEN=yes"]
"""
TEXT = "'source /opt/site/env.sh' 'module load rocm/6.3 && export ROCM_SEEN=yes'"


def test_every_target_carries_the_setup_lines():
    spec = parse_spec(SPEC, "s")
    assert spec.launcher.setup == ("source /opt/site/env.sh", "module load rocm/6.3 && export ROCM_SEEN=yes")
    files = render_targets(spec, ("compose", "manifests", "slurm"))
    node = yaml.safe_load(files["compose/node.yaml"])
    assert node["services"]["node"]["environment"]["NODEWEAVE_SETUP"] == TEXT
    sts = yaml.safe_load(files["manifests/base/statefulset.yaml"])
    env = {e["name"]: e.get("value") for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["NODEWEAVE_SETUP"] == TEXT
    assert "export NODEWEAVE_SETUP=" in files["slurm/job.sbatch"]


def test_a_setup_line_must_be_one_line():
    with pytest.raises(UsageError, match=r"launcher.setup\[0\]"):
        parse_spec(SPEC.replace('"source /opt/site/env.sh"', '"a\\nb"'), "s")


def test_the_lines_run_in_the_shell_that_starts_the_launcher(tmp_path):
    """The real entrypoint: the setup's export reaches the command, which is the same process as the shell."""
    (tmp_path / "env.sh").write_text("export SITE_READY=from-site-script\n")
    setup = f"'source {tmp_path}/env.sh' 'export SECOND=$SITE_READY-2'"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NODEWEAVE_SETUP": setup}
    argv = [*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "cpu-only"), "--launcher", "command",
            "--nnodes", "1", "--", "sh", "-c", 'echo "$$ $SITE_READY $SECOND"']
    proc = cli_run.popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    pid, ready, second = out.split()
    assert (ready, second) == ("from-site-script", "from-site-script-2") and int(pid) == proc.pid
    assert "exec bash" in err


def test_a_failing_setup_line_stops_the_node_before_the_launcher(tmp_path):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NODEWEAVE_SETUP": "'module load nothing-here'"}
    argv = [*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "cpu-only"), "--launcher", "command",
            "--nnodes", "1", "--", "sh", "-c", "echo launched"]
    out = cli_run.run(argv, env=env, timeout=60)
    assert out.returncode != 0 and "launched" not in out.stdout
