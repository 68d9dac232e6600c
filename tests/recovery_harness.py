"""Recovery's simulated nodes: real ``nodeweave-entrypoint`` processes on loopback (benchmarks/stall_nodes.py's),
``nodes`` training plus ``spares``, all on this one machine (``one_machine_env``), each with its own TMPDIR and
``NODEWEAVE_TEST_NODE`` (the node the workload's faults aim at), running tests/e2e/workspace/resumable.py with
checkpoints in a shared folder."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from one_machine import one_machine_env  # noqa: E402
from stall_nodes import ENTRY, ROOT, Node, free_port_pair, stop  # noqa: E402,F401

WORKLOAD = Path(__file__).resolve().parent / "e2e" / "workspace" / "resumable.py"


def start(tmp_path, args, nodes=2, spares=0, env=None, launcher="torchrun", per_node=None, entry=ENTRY):
    """``nodes`` + ``spares`` entrypoints (``entry``: the argv that starts one) with recovery on; node i has
    TMPDIR tmp_path/n<i>."""
    shutil.copy(WORKLOAD, tmp_path / "resumable.py")
    port = free_port_pair()
    started = []
    for rank in range(nodes + spares):
        node_env = one_machine_env({
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p),
            "HOME": str(tmp_path), "TMPDIR": str(tmp_path / f"n{rank}"), "OMP_NUM_THREADS": "1",
            "NODEWEAVE_WAIT_TIMEOUT": "90", "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": str(spares),
            "NODEWEAVE_CHECKPOINT_DIR": str(tmp_path / "checkpoints"), "NODEWEAVE_TEST_NODE": str(rank),
            "NODEWEAVE_NNODES": str(nodes), "NODEWEAVE_STALL_WARN": "0",
            **(env or {}), **((per_node or {}).get(rank, {}))})
        os.makedirs(node_env["TMPDIR"], exist_ok=True)
        argv = [*entry, "--launcher", launcher, "--node-rank", str(rank), "--nproc-per-node", "1",
                "--master-addr", "127.0.0.1", "--master-port", str(port), "--",
                "resumable.py", "--ckpt", str(tmp_path / "checkpoints"), *args]
        started.append(_spawn(argv, node_env, tmp_path))
    return started


def _spawn(argv, env, cwd):
    node = Node(subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    node.how = (argv, env, cwd)
    return node


def again(node):
    """The same node started again (its container restarted): a new process with the same command and variables."""
    return _spawn(*node.how)


def finish(nodes, limit=240):
    """Every node's exit code (killing what is left after ``limit`` seconds)."""
    try:
        return [node.wait(limit) for node in nodes]
    finally:
        stop(nodes)


def steps(node):
    """[(generation, step, world)] of the RECOVERY-STEP lines rank 0 printed on ``node``."""
    found = re.finditer(r"RECOVERY-STEP gen=(\d+) step=(\d+) world=(\d+)", node.text("out"))
    return [tuple(int(x) for x in m.groups()) for m in found]


def wait_for_step(node, step, limit=120):
    """Until rank 0 on ``node`` printed step ``step`` or later; fails naming the node's output after ``limit`` s."""
    import time

    until = time.monotonic() + limit
    while time.monotonic() < until:
        if any(s[1] >= step for s in steps(node)):
            return
        time.sleep(0.2)
    raise AssertionError(f"no step {step} within {limit}s:\n{node.text()}")


def resumed(nodes):
    """[(generation, path, step)] of every RECOVERY-RESUME line, on whichever node printed it."""
    found = []
    for node in nodes:
        for m in re.finditer(r"RECOVERY-RESUME gen=(\d+) from=(\S+) step=(\d+)", node.text("out")):
            found.append((int(m.group(1)), m.group(2), int(m.group(3))))
    return sorted(found)


def done(nodes):
    return [m.group(0) for node in nodes for m in re.finditer(r"RECOVERY-DONE gen=\d+ step=\d+ state=\S+",
                                                                 node.text("out"))]
