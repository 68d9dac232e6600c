"""The hosts path's docker stand-in runs the compose file it is sent, through Docker Compose v2's own reader.

No engine: the stand-in runs here with its state in a temporary folder and
an "image entrypoint" that records what it was started with. The compose
file is the one nodeweave renders for the hosts target (compose/node.yaml).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docker_harness import _compose_binary
from nodeweave.targets.compose import render_files
from nodeweave.spec import parse_spec

STANDIN = Path(__file__).parent / "docker_standin.py"
SPEC = """name: nwd
image: {variant: cpu, registry: localhost/nodeweave-e2e}
nodes: 2
launcher: {script: train.py, args: ["--steps", "3"]}
env: {OMP_NUM_THREADS: "1"}
"""
# The "image's entrypoint": writes its arguments, folder and environment, then waits to be stopped.
RECORDER = ["python3", "-c", "import json, os, sys, time; json.dump({'argv': sys.argv[1:], 'cwd': os.getcwd(), "
            "'env': dict(os.environ)}, open('seen.json', 'w')); time.sleep(600)"]


@pytest.fixture
def standin(tmp_path):
    compose, problem = _compose_binary()
    if compose is None:
        pytest.skip(problem)
    workspace = tmp_path / "ws"
    (workspace / "compose").mkdir(parents=True)
    node = workspace / "compose" / "node.yaml"
    node.write_text(render_files(parse_spec(SPEC, "nwd.yaml"))["compose/node.yaml"])
    env = {**os.environ, "DOCKER_STANDIN_STATE": str(tmp_path / "state"), "DOCKER_STANDIN_COMPOSE": str(compose),
           "DOCKER_STANDIN_ENTRYPOINT": json.dumps(RECORDER)}

    def call(*argv, **variables):
        return subprocess.run([sys.executable, str(STANDIN), *argv], capture_output=True, text=True,
                              env={**env, **variables}, timeout=60)

    call.node, call.workspace = str(node), workspace
    yield call
    call("compose", "-p", "nwd", "-f", call.node, "down", "-t", "0", NODE_RANK="0", MASTER_ADDR="x")


def _wait_for(path: Path) -> dict:
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.2)
    return json.loads(path.read_text())


def test_up_runs_the_files_command_with_the_environment_compose_resolved(standin):
    out = standin("compose", "-p", "nwd", "-f", standin.node, "up", "-d", NODE_RANK="1", MASTER_ADDR="10.0.0.7",
                  NNODES="2", NODEWEAVE_MODE="hold")
    assert out.returncode == 0 and "Container nwd-node  Started" in out.stdout, out.stderr
    seen = _wait_for(standin.workspace / "seen.json")
    assert seen["argv"] == ["train.py", "--steps", "3"]  # the file's command, after the image's entrypoint
    assert Path(seen["cwd"]) == standin.workspace  # `..:/workspace` with working_dir /workspace
    env = seen["env"]
    assert (env["NODE_RANK"], env["MASTER_ADDR"], env["NODEWEAVE_NNODES"], env["NODEWEAVE_MODE"]) == (
        "1", "10.0.0.7", "2", "hold")
    assert env["OMP_NUM_THREADS"] == "1" and env["NODEWEAVE_MASTER_PORT"] == "29500"
    shown = standin("exec", "-i", "nwd-node", "sh", "-c", 'echo "$NODE_RANK $PWD"')
    assert shown.stdout.split() == ["1", str(standin.workspace)]
    down = standin("compose", "-p", "nwd", "-f", standin.node, "down", "-t", "5", NODE_RANK="1", MASTER_ADDR="x")
    assert down.returncode == 0 and "Removed" in down.stdout
    assert standin("exec", "nwd-node", "true").returncode == 125


def test_a_missing_rank_fails_with_composes_own_message(standin):
    out = standin("compose", "-p", "nwd", "-f", standin.node, "up", "-d", MASTER_ADDR="10.0.0.7")
    assert out.returncode != 0 and "NODE_RANK must be set" in out.stderr, out.stderr
    assert not (standin.workspace / "seen.json").exists()


def test_a_file_compose_cannot_read_fails(standin):
    Path(standin.node).write_text(Path(standin.node).read_text().replace("services:", "servicez:"))
    out = standin("compose", "-p", "nwd", "-f", standin.node, "up", "-d", NODE_RANK="0", MASTER_ADDR="x")
    assert out.returncode != 0 and "servicez" in out.stderr, out.stderr


@pytest.mark.parametrize("argv", [["compose", "-p", "nwd", "-f", "x.yaml", "up"], ["compose", "up", "-d"],
                                  ["compose", "-p", "nwd", "-f", "x.yaml", "down", "--volumes"],
                                  ["run", "--rm", "img"], ["logs", "--tail", "5", "nwd-node"]])
def test_what_it_does_not_understand_is_refused(standin, argv):
    out = standin(*argv)
    assert out.returncode == 99 and "stand-in" in out.stderr, out.stderr
