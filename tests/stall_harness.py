"""The stall watch's simulated nodes (benchmarks/stall_nodes.py) running the e2e workload
(tests/e2e/workspace/allreduce.py) under a real launcher: what its process-level tests read."""

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import stall_nodes  # noqa: E402
from stall_nodes import stop  # noqa: E402,F401 - the tests import it from here

WORKLOAD = Path(__file__).resolve().parent / "e2e" / "workspace" / "allreduce.py"


def start(tmp_path, launcher, args, nodes=2, nproc=1, env=None, per_node=None):
    shutil.copy(WORKLOAD, tmp_path / "allreduce.py")
    return stall_nodes.start(tmp_path, launcher, ["allreduce.py", *args], nodes, nproc, env, per_node)
