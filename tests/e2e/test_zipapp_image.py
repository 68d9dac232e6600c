"""The zipapp in an image nodeweave did not build: a real 2-node job with no nodeweave installed.

The image stands in for an NGC or ROCm PyTorch image: the local Debian base
with torch from the wheelhouse and no nodeweave, plus the two Dockerfile lines
docs/images.md gives (checked verbatim there). Offline (``--network none``)
and fast on a rerun: the torch layer is keyed on its instruction only (the
wheelhouse is bind-mounted), so a new zipapp rebuilds just the COPY.
Node 1 starts first and waits for node 0, so its process tree can be read
while it waits: tini is PID 1 and the zipapp its child. Then both nodes run
examples/train.py under torchrun over gloo, 2 processes each, and must finish.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from e2e_harness import REPO

pytestmark = pytest.mark.engine

PREFIX = "nwzip"
IMAGE = f"localhost/{PREFIX}-byo:torch"
NETWORK = f"{PREFIX}-net"
NODES = [f"{PREFIX}-0", f"{PREFIX}-1"]
DONE = r"\[rank (\d)/4 node (\d)\] done: world_size=4 backend=gloo final_loss=[0-9.]+ ok"  # examples/train.py
TWO_LINES = (
    "COPY entrypoint/nodeweave-entrypoint.pyz /usr/local/bin/nodeweave-entrypoint\n"
    'ENTRYPOINT ["tini", "-g", "--", "nodeweave-entrypoint"]\n'
)
DOCKERFILE = """FROM {base}
# Stands in for a PyTorch image of your own: Python and torch, nothing of nodeweave.
RUN --mount=type=bind,source=wheelhouse,target=/wheelhouse \\
    python3 -m venv /opt/venv \\
 && /opt/venv/bin/pip install --no-index --find-links /wheelhouse --no-cache-dir "torch==2.13.0"
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /workspace
""" + TWO_LINES


def podman(*argv: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(["podman", *argv], capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"podman {' '.join(argv)} failed ({out.returncode}):\n"
                             f"{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out


@pytest.fixture(scope="module")
def byo_image(engine, base_image, wheelhouse, tmp_path_factory):
    if engine.kind != "podman":
        pytest.skip("this test drives podman directly")
    context = tmp_path_factory.mktemp("byo-context")
    (context / "Dockerfile").write_text(DOCKERFILE.format(base=base_image))
    (context / "entrypoint").mkdir()
    shutil.copy2(REPO / "entrypoint" / "nodeweave-entrypoint.pyz", context / "entrypoint")
    (context / "wheelhouse").mkdir()
    for wheel in wheelhouse.glob("*.whl"):
        os.link(wheel, context / "wheelhouse" / wheel.name)
    podman("build", "--network", "none", "-t", IMAGE, str(context), timeout=900)
    return IMAGE


def test_the_two_lines_are_the_ones_docs_images_md_gives():
    assert TWO_LINES in (REPO / "docs" / "images.md").read_text()


def test_the_image_has_torch_and_no_nodeweave_and_explains(byo_image, tmp_path):
    probe = podman("run", "--rm", "--entrypoint", "python3", byo_image, "-c",
                   "import importlib.util as u, torch; print(torch.__version__, u.find_spec('nodeweave'))")
    assert probe.stdout.split()[1] == "None" and probe.stdout.startswith("2.13.0"), probe.stdout
    (tmp_path / "train.py").write_text("")  # the script it explains, in its working directory (a missing one: exit 2)
    explained = podman("run", "--rm", "-v", f"{tmp_path}:/workspace:ro", byo_image, "--explain", "--nnodes", "1",
                       "--", "train.py")
    assert "plan for" in explained.stdout and "torchrun" in explained.stdout, explained.stdout


def _remove_all():
    for name in NODES:
        podman("rm", "-f", "-t", "0", name, check=False)
    podman("network", "rm", "-f", NETWORK, check=False)


def _start(image: str, name: str):
    podman("run", "-d", "--name", name, "--hostname", name, "--network", NETWORK, "--shm-size", "1g",
           "--env", "NODEWEAVE_NNODES=2", "--env", "NODEWEAVE_NPROC_PER_NODE=2", "--env", "OMP_NUM_THREADS=1",
           "--env", "NODEWEAVE_WAIT_TIMEOUT=180",
           "--volume", f"{REPO / 'examples' / 'train.py'}:/workspace/train.py:ro",
           image, "train.py", "--steps", "10", "--expect-world", "4")


def _process_tree_while_waiting(name: str, timeout: float = 60) -> str:
    """``ps`` in the node: it waits for node 0, so the tree is tini -> the zipapp until node 0 starts."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = podman("exec", name, "ps", "-o", "pid=,ppid=,args=", "-ax", check=False)
        if out.returncode == 0 and "nodeweave-entrypoint" in out.stdout:
            return out.stdout
        time.sleep(0.5)
    raise AssertionError(f"{name}: no nodeweave-entrypoint process within {timeout}s:\n{podman('logs', name).stderr}")


def test_a_two_node_job_runs_with_the_zipapp_under_tini(byo_image):
    _remove_all()
    try:
        podman("network", "create", NETWORK)
        _start(byo_image, NODES[1])
        ps = _process_tree_while_waiting(NODES[1])
        tree = {int(line.split()[0]): line.split(None, 2) for line in ps.splitlines()}
        assert tree[1][2].startswith("tini -g -- nodeweave-entrypoint train.py"), tree
        children = [args for pid, (_, ppid, args) in tree.items() if ppid == "1"]
        assert any("python3 /usr/local/bin/nodeweave-entrypoint train.py" in args for args in children), tree
        _start(byo_image, NODES[0])
        codes = {name: int(podman("wait", name, timeout=400).stdout.strip()) for name in NODES}
        logs = {name: (lambda out: out.stdout + out.stderr)(podman("logs", name)) for name in NODES}
        assert codes == {NODES[0]: 0, NODES[1]: 0}, f"exit codes {codes}\n{logs}"
        for index, name in enumerate(NODES):
            assert f"node {index} of 2" in logs[name] and "run torchrun" in logs[name], logs[name]
            assert "check-in: 2 node(s) agree (world size 4" in logs[name], logs[name]
        # ranks print concurrently, so two lines may share one: read each rank's verdict, not lines
        done = re.findall(DONE, "".join(logs.values()))
        assert sorted(done) == [("0", "0"), ("1", "0"), ("2", "1"), ("3", "1")], logs
    finally:
        _remove_all()
