"""``run --nproc-per-node/--nodes/--launcher``: one run's shape, through the same entrypoint plan (issue 27, item 8).

The overrides reach every node as the contract's variables in front of its
entrypoint (``NODEWEAVE_NPROC_PER_NODE``, ``NODEWEAVE_LAUNCHER``), so the node
plans with them as it would with a spec that said so; ``--nodes`` runs on the
first N nodes, the count their entrypoint's ``--nnodes`` flag. What contradicts the cluster is refused here
(more nodes than it has) or by the node's own plan (more processes than its
usable GPUs: tests/test_entrypoint_topology.py).
"""

from __future__ import annotations

import shlex

import pytest

from test_cluster_cli import nodeweave, spec  # noqa: F401  (the fixture)


def _node_lines(out):
    return [shlex.split(line) for line in out.splitlines() if line and not line.startswith("#")]


def test_overrides_go_in_front_of_every_nodes_entrypoint(spec):  # noqa: F811
    out = nodeweave(spec, "run", "--nproc-per-node", "4", "--launcher", "deepspeed", "--dry-run")
    assert out.returncode == 0, out.stderr
    lines = _node_lines(out.stdout)
    assert len(lines) == 2
    for argv in lines:
        assert "NODEWEAVE_NPROC_PER_NODE=4" in argv and "NODEWEAVE_LAUNCHER=deepspeed" in argv
    one = _node_lines(nodeweave(spec, "run", "--nodes", "1", "--dry-run").stdout)
    # the count is the entrypoint's flag, not NNODES (tests/test_walk4_verbs.py runs the node's plan)
    assert len(one) == 1 and one[0][one[0].index("--nnodes") + 1] == "1" and "NNODES=1" not in one[0]


@pytest.mark.parametrize("args, message", [
    (["--nodes", "3"], "--nodes 3 is not accepted: this cluster has 2 node(s)"),
    (["--nodes", "0"], "--nodes 0 is not accepted"),
    (["--launcher", "mpirun"], "--launcher 'mpirun' is not accepted: torchrun, deepspeed, accelerate, command"),
    (["--nproc-per-node", "lots"], "--nproc-per-node 'lots' is not accepted: processes per node, a whole number from 1 to 1024"),
])
def test_overrides_that_cannot_hold_are_refused_in_one_line(spec, args, message):  # noqa: F811
    out = nodeweave(spec, "run", *args, "--dry-run")
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_an_override_launcher_is_what_the_node_plans_with(tmp_path):
    """The variables run puts in front, read by the real entrypoint."""
    from pathlib import Path

    from nodeweave.cluster.overrides import run_overrides
    from nodeweave.entrypoint import make_plan

    _, env = run_overrides([object(), object()], nproc="2", nodes=None, launcher="accelerate")
    plan = make_plan(["--no-wait", "--", "train.py"], env={**env, "NNODES": "2", "NODE_RANK": "1",
                                                           "MASTER_ADDR": "hgx-a00"},
                     sysroot=str(Path(__file__).parent / "fixtures" / "synthetic" / "hgx-h100"))
    assert plan.launch.argv[:2] == ["accelerate", "launch"] and "--num_processes" in plan.launch.argv
    assert plan.launch.argv[plan.launch.argv.index("--num_processes") + 1] == "4"


def test_profiler_options_reach_every_nodes_entrypoint(spec):  # noqa: F811
    out = nodeweave(spec, "run", "--profile", "rocprofv3", "--profile-options", "-i counters.yaml --stats",
                    "--dry-run")
    assert out.returncode == 0, out.stderr
    for argv in _node_lines(out.stdout):
        assert "NODEWEAVE_PROFILE_OPTIONS=-i counters.yaml --stats" in argv and "rocprofv3" in argv
    alone = nodeweave(spec, "run", "--profile-options", "--stats", "--dry-run")
    assert alone.returncode == 2 and "--profile-options needs --profile" in alone.stderr
