"""Real podman containers named as a spec's local nodes and carrying the mark its folder's ``up`` puts on them
(exec and the other verbs act only on those): for tests of a verb on running nodes without an ``up``."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

IMAGE = "localhost/nodeweave-base:bookworm"


def two_node_spec(job: str) -> str:
    return f"name: {job}\nimage: {{variant: cpu}}\nnodes: 2\ngpus_per_node: 1\nlauncher: {{script: train.py}}\n"


@contextmanager
def marked_nodes(folder: Path, job: str, count: int = 2):
    """``count`` containers ``<job>-<i>`` sleeping in IMAGE, with the job's mark of ``folder``; removed after."""
    from nodeweave.cluster.identity import JobMark

    names = [f"{job}-{i}" for i in range(count)]
    labels = [f"--label={key}={value}" for key, value in JobMark.of(folder, job).labels().items()]
    subprocess.run(["podman", "rm", "-f", *names], capture_output=True)
    try:
        for name in names:
            subprocess.run(["podman", "run", "-d", "--name", name, "--hostname", name, *labels, IMAGE, "sleep", "600"],
                           check=True, capture_output=True)
        yield names
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", *names], capture_output=True)
