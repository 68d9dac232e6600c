"""A plan's placeholders (the run's id, a Slurm allocation's job and nodes) are words no user types.

They were the bare words ``RUN_ID``, ``JOBID`` and ``NODE0``, ... replaced wherever they stood, so a
user's ``-- train.py --tag RUN_ID`` reached the node as ``--tag 20261129-...``. Now only the plan's
own placeholders are filled, and a dry run shows them as ``<run-id>``, ``<job-id>``, ``<node0>``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

from nodeweave.cluster.execute import Execution, execute
from nodeweave.cluster.job import JobContext
from nodeweave.cluster.runplan import RunSession, run_plan
from nodeweave.plan import (JOB_ID, MARK, RUN_ID, AllocatePhase, NodeCommand, Plan, RunPhase, StopPhase,
                            node_placeholder, plan_lines, shown)
from nodeweave.steps import Step
from test_cluster_cli import nodeweave as cli
from test_cluster_cli import spec  # noqa: F401 (the CLI tests' spec fixture)
from test_cluster_runner import nodes

USER_WORDS = ["--tag", "RUN_ID", "JOBID", "NODE0", "<run-id>"]


def test_a_users_placeholder_like_words_reach_the_node_as_typed(tmp_path):
    """A real run through the run session and the runner: the node's process prints its argv; the user's words
    ``RUN_ID``, ``JOBID``, ``NODE0`` arrive unchanged, while the entrypoint got the folder's run id."""
    the_nodes = nodes(tmp_path)
    plan = run_plan("here", the_nodes, ["sh", "-c", 'echo "args: $*"', "sh", *USER_WORDS], [{}], {}, None, 3.0,
                    False, tmp_path / "runs", "job")
    context = JobContext(job="job", spec_text="name: job\n", workspace=tmp_path, target="here")
    session = RunSession(the_nodes, tmp_path / "runs", context, Console(file=io.StringIO(), width=200))
    execute(plan, Execution(tmp_path, lambda line: None, runs=session))
    (data,) = session.results
    assert data["exit_code"] == 0, data
    folder = Path(data["folder"])
    for node in ("node-0", "node-1"):
        assert (folder / f"{node}.log").read_text().splitlines()[-1] == "args: " + " ".join(USER_WORDS)
    run_id = json.loads((folder / "run.json").read_text())["run_id"]
    spawned = json.loads((folder / "run.json").read_text())["nodes"][0]["argv"]
    assert spawned[spawned.index("--run-id") + 1] == run_id and not any(MARK in word for word in spawned)


def test_an_allocations_values_fill_only_the_plans_placeholders():
    """What the allocate step makes known fills the placeholders of later phases, not the user's words."""
    phase = StopPhase("stop", steps=(Step("a step", ("srun", f"--jobid={JOB_ID}", "echo", "JOBID")),),
                      nodes=(NodeCommand(node_placeholder(0), f"srun:{JOB_ID}/{node_placeholder(0)}",
                                         ("srun", f"--nodelist={node_placeholder(0)},{node_placeholder(1)}",
                                          "--", "train.py", "NODE0", "JOBID", "NODE1")),))
    bound = phase.bound({JOB_ID: "42", node_placeholder(0): "gpu01", node_placeholder(1): "gpu02"})
    assert bound.steps[0].argv == ("srun", "--jobid=42", "echo", "JOBID")
    (node,) = bound.nodes
    assert (node.node, node.reached_as) == ("gpu01", "srun:42/gpu01")
    assert node.argv == ("srun", "--nodelist=gpu01,gpu02", "--", "train.py", "NODE0", "JOBID", "NODE1")
    run = RunPhase("one run", nodes=(NodeCommand("node-0", "ssh a", ("ssh", "a", "--run-id", RUN_ID, "RUN_ID")),))
    assert run.launches("20261129-1") == [["ssh", "a", "--run-id", "20261129-1", "RUN_ID"]]


def test_a_dry_run_shows_placeholders_readably_and_never_raw():
    phase = RunPhase("one run", folder="runs/<UTC time>-job/",
                     nodes=(NodeCommand("node-0", "ssh a", ("ssh", "a", "--run-id", RUN_ID, f"--job-name=nw-{RUN_ID}",
                                                            "--", "x y", "RUN_ID")),))
    allocate = AllocatePhase("take", steps=(Step("take an allocation", ("salloc", "-N", "2")),))
    plan = Plan("run", "here", (allocate, phase), notes=(f"on {node_placeholder(0)}",))
    lines = plan_lines(plan)
    assert "ssh a --run-id <run-id> --job-name=nw-<run-id> -- 'x y' RUN_ID" in lines
    assert "# on <node0>" in lines
    assert "# the job id and nodes it is granted replace <job-id> and <node0>, <node1>, ... below" in lines
    text = json.dumps(plan.to_dict())
    assert "<run-id>" in text and "\\u001f" not in text and not any(MARK in line for line in lines)
    assert shown(f"a/{RUN_ID}/{JOB_ID}") == "a/<run-id>/<job-id>"


def test_run_dry_run_prints_the_users_words_and_the_run_ids_placeholder(spec):
    out = cli(spec, "run", "--dry-run", "--engine", "podman", "--", "train.py", "--tag", "RUN_ID")
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("podman exec")]
    assert lines == [f"podman exec cli-{i} nodeweave-entrypoint --mode run --run-id <run-id> -- train.py --tag RUN_ID"
                     for i in (0, 1)]

