"""`--explain` under recovery shows what runs: a training node's launch as the job's first generation starts it
(its rank among the training nodes, their count), not the identity plan it checks in with (nodes + spares). The
fresh walk: with 2 nodes and a spare, node 0's plan said `torchrun --nnodes 3` and WORLD_SIZE=3, while
docs/recovery.md (and the generation loop) launch with the 2 training nodes. A spare says it launches nothing
until it takes a place."""

import json
import os
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest
from one_machine import one_machine_env

SRC = Path(__file__).resolve().parents[1] / "src"


def _explain(tmp_path, rank, *extra):
    (tmp_path / "train.py").write_text("")
    out = cli_run.run([*cli_run.ENTRYPOINT, "--explain", "--json", "--nnodes", "2",
                          "--spares", "1", "--recovery", "on", "--node-rank", str(rank), "--master-addr", "127.0.0.1",
                          *extra, "--", "train.py"], cwd=tmp_path, timeout=60,
                         env=one_machine_env({**os.environ, "PYTHONPATH": str(SRC)}))
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("rank", [0, 1])
def test_a_training_nodes_plan_launches_with_the_training_nodes_count(tmp_path, rank):
    plan = _explain(tmp_path, rank)
    argv = plan["launch"]["argv"]
    assert argv[argv.index("--nnodes") + 1] == "2" and argv[argv.index("--node-rank") + 1] == str(rank), argv
    assert plan["role"]["kind"] == "training node" and plan["role"]["rank"] == rank


def test_a_spare_says_it_launches_nothing_until_it_takes_a_place(tmp_path):
    plan = _explain(tmp_path, 2)
    assert plan["role"]["kind"] == "spare"
    assert any("a spare launches nothing until node 0 gives it a left-out node's place" in note
               for note in plan["launch"]["notes"]), plan["launch"]["notes"]
