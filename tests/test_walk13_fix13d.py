"""fix13d (issue 43; walk12b row B10's remainder): nodes that run different numbers of processes, everywhere.

fix12b3 made a hostfile whose every line gives slots export their sum as WORLD_SIZE. Left: a hostfile where some
lines give slots and some do not, and every other place that multiplied nodes x this node's processes: the
``RANK``/``ROLE_*`` checks, the DeepSpeed hostfile, accelerate's total, a count set for every node, a recovery
generation whose spare has other slots. One function owns it now (``entrypoint/world.py``): a node's first
global rank is the sum of the processes of the nodes before it, the world size the sum of all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)

ALLOW = {"NODEWEAVE_EXCHANGE_ALLOW": "address"}
UNEVEN = "hosta slots=1\nhostb slots=2\nhostc slots=3\n"  # a job of 6 ranks: node 0 has 0, node 1 1..2, node 2 3..5


def _explain(entrypoint, tmp_path, text, rank, env=None, argv=()):
    (tmp_path / "hosts").write_text(text)
    env = dict(ALLOW, **(env or {}))
    if env.get("NODEWEAVE_EXCHANGE") == "off":
        del env["NODEWEAVE_EXCHANGE_ALLOW"]  # read only while it is on
    return entrypoint(["--explain", "--json", "--hostfile", "hosts", "--node-rank", str(rank), *argv, "--",
                       "train.py"], env)


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_every_node_plans_the_same_counts_and_its_ranks_start_after_the_nodes_before_it(entrypoint, tmp_path, rank):
    """The topology carries every node's processes (``node_procs``) and their sum; --explain's text says this
    node's global ranks, which start after the processes of the nodes before it."""
    code, out, err = _explain(entrypoint, tmp_path, UNEVEN, rank)
    assert code == 0, err
    topo = json.loads(out)["topology"]
    assert (topo["node_procs"], topo["world_size"], topo["nproc_per_node"]["value"]) == ([1, 2, 3], 6, rank + 1)
    export = {v["name"]: v for v in json.loads(out)["env"]}["WORLD_SIZE"]
    assert export["value"] == "6" and "1+2+3" in export["reason"], export  # not "3 nodes x 2 processes" on node 1
    code, out, err = entrypoint(["--explain", "--hostfile", "hosts", "--node-rank", str(rank), "--", "train.py"],
                                ALLOW)
    first = [0, 1, 3][rank]
    assert re.search(rf"ranks +{first}\.\.{first + rank}( |$)", out, re.M), out


@pytest.mark.parametrize("name", ["RANK", "ROLE_RANK"])
def test_a_rank_already_set_is_judged_against_this_nodes_global_ranks_not_rank_times_its_count(entrypoint, tmp_path,
                                                                                             name):
    """``RANK`` (and torchrun's ``ROLE_RANK``) set for node 2 of slots 1, 2, 3 must be one of its ranks 3..5:
    before, the range was node rank x this node's count (6..8), so 3 was refused and 7 taken."""
    for value, fits in (("3", True), ("5", True), ("6", False), ("7", False)):
        code, out, err = _explain(entrypoint, tmp_path, UNEVEN, 2, {name: value})
        if fits:
            assert code == 0, (value, err)
        else:
            assert code == 3 and "3..5" in err, (value, err)
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_torchruns_role_world_size_is_judged_against_the_sum(entrypoint, tmp_path):
    """``ROLE_WORLD_SIZE`` set on node 1 of slots 1, 2, 3: the job's 6 processes (before: 3 x 2 = 6 by chance on
    node 1; on node 0 3 x 1 = 3, so the right 6 was refused there)."""
    code, out, err = _explain(entrypoint, tmp_path, UNEVEN, 0, {"ROLE_WORLD_SIZE": "6"})
    assert code == 0, err
    code, out, err = _explain(entrypoint, tmp_path, UNEVEN, 0, {"ROLE_WORLD_SIZE": "3"})
    assert code == 3 and "accepted (processes in the job): 6" in err and "1+2+3" in err, err


@pytest.mark.parametrize("exchange", ["on", "off"])
@pytest.mark.parametrize("rank", [0, 1])
def test_a_hostfile_where_some_lines_give_slots_and_some_do_not_is_refused_naming_the_line(entrypoint, tmp_path,
                                                                                         exchange, rank):
    """`a slots=2` / `b`: node 0 exported WORLD_SIZE=4, node 1 2 (the job would have 2 + whatever b finds), and
    with the exchange off nothing caught it. DeepSpeed refuses such a line and Open MPI reads it as the host's CPU
    cores: no count follows from it, so it is refused (exit 2) on every node, naming the line and what is
    accepted."""
    env = {"NODEWEAVE_EXCHANGE": "off"} if exchange == "off" else {}
    code, out, err = _explain(entrypoint, tmp_path, "a slots=2\nb\n", rank, env)
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert "hostfile hosts line 2 (b) gives no slots while line 1 (a slots=2) does" in line, err
    assert "accepted: slots=<n> on every line ('b slots=<n>'), or on none" in line, err


def test_a_hostfile_without_any_slots_is_still_taken(entrypoint, tmp_path):
    """No line gives slots: every node runs its processes per node (1 on CPU), as before."""
    code, out, err = _explain(entrypoint, tmp_path, "a\nb\n", 1)
    assert code == 0, err
    assert json.loads(out)["topology"]["node_procs"] == [1, 1]


@pytest.mark.parametrize("how", [["--nproc-per-node", "1"], []])
def test_a_count_set_for_every_node_overrides_every_line_not_only_this_ones(entrypoint, tmp_path, how):
    """``--nproc-per-node 1`` beside slots 1, 2, 3 runs 1 process on every node (each node is given the flag): the
    world is 3, not this node's 1 plus the other lines' slots (node 1 said 6 before)."""
    code, out, err = _explain(entrypoint, tmp_path, UNEVEN, 1, argv=how)
    assert code == 0, err
    topo = json.loads(out)["topology"]
    assert (topo["node_procs"], topo["world_size"]) == (([1, 1, 1], 3) if how else ([1, 2, 3], 6))


def test_deepspeeds_hostfile_gives_each_line_its_own_slots_and_accelerate_is_refused(entrypoint, tmp_path):
    """Every node writes the DeepSpeed hostfile, and DeepSpeed numbers a node's ranks after the slots of the
    lines before it: each line must carry that node's count (every line carried this node's: node 1 wrote 2, 2,
    2 for a job of 1, 2, 3). accelerate runs one count on every machine (--num_processes over --num_machines):
    refused at the plan (exit 3), not at the check-in."""
    code, out, err = _explain(entrypoint, tmp_path, UNEVEN, 1, argv=["--launcher", "deepspeed"])
    assert code == 0, err
    [content] = json.loads(out)["launch"]["files"].values()
    assert content == "hosta slots=1\nhostb slots=2\nhostc slots=3\n"
    code, out, err = _explain(entrypoint, tmp_path, UNEVEN, 1, argv=["--launcher", "accelerate"])
    assert code == 3 and "launcher accelerate runs the same process count on every machine" in err, err
    code, out, err = _explain(entrypoint, tmp_path, "a slots=2\nb slots=2\n", 1, argv=["--launcher", "accelerate"])
    assert code == 0, err  # even counts: as before


def test_the_check_ins_counts_set_node_procs_and_the_deepspeed_include(tmp_path):
    """After a check-in (``apply_counts``), the members' own counts are the plan's: ``node_procs``, the world size
    and, for DeepSpeed with visible GPU ids, each line's slots and ``--include`` (which named this node's ids
    and count for every node)."""
    from nodeweave.entrypoint.model import Gpus, Launch, Node, Plan, Topology, Value
    from nodeweave.entrypoint.planning.launch import apply_counts

    topo = Topology(node_rank=Value(value=1, source="t"), nnodes=Value(value="2", source="t"), nnodes_min=2,
                    nnodes_max=2, nproc_per_node=Value(value=2, source="t"), world_size=4, node_procs=[2, 2],
                    node_names=["a", "b"])
    launch = Launch(launcher="deepspeed", argv=["deepspeed", "--include", "a:2,3@b:2,3", "train.py"],
                    files={"/h": "a slots=4\nb slots=4\n"})
    plan = Plan(node=Node(gpus=Gpus(visible=[2, 3])), topology=topo, launch=launch)
    apply_counts(plan, {"procs": [3, 2]})
    assert (topo.node_procs, topo.world_size) == ([3, 2], 5)
    assert launch.files["/h"] == "a slots=3\nb slots=4\n"
    assert launch.argv[2] == "a:0,1,2@b:2,3"


def test_nodes_of_uneven_slots_agree_on_the_plans_hash(tmp_path, monkeypatch):
    """The plan hash every node reports (``nodeweave status`` compares them across the job's nodes) covered this
    node's count, so nodes of slots 1 and 2 reported different plans: it covers every node's counts now."""
    from nodeweave.entrypoint.nodeinfo import _plan_now

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "hosts").write_text("hosta slots=1\nhostb slots=2\n")
    summaries = [_plan_now(["train.py"], dict(ALLOW, PATH=os.environ["PATH"], NODEWEAVE_HOSTFILE="hosts",
                                               NODEWEAVE_NODE_RANK=str(rank))) for rank in (0, 1)]
    assert [(s["nproc_per_node"], s["world_size"], s["errors"]) for s in summaries] == [(1, 3, []), (2, 3, [])]
    assert summaries[0]["hash"] == summaries[1]["hash"]
    (tmp_path / "hosts").write_text("hosta slots=2\nhostb slots=2\n")  # even counts: one hash, as before
    even = [_plan_now(["train.py"], dict(ALLOW, PATH=os.environ["PATH"], NODEWEAVE_HOSTFILE="hosts",
                                         NODEWEAVE_NODE_RANK=str(rank)))["hash"] for rank in (0, 1)]
    assert even[0] == even[1] != summaries[0]["hash"]


# ---- real entrypoints on loopback, torchrun with gloo ----

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path, rank, **extra):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from one_machine import one_machine_env

    env = one_machine_env({
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT / "src"),
        "HOME": str(tmp_path), "TMPDIR": str(tmp_path / f"n{rank}"), "OMP_NUM_THREADS": "1",
        "NODEWEAVE_WAIT_TIMEOUT": "90", "NODEWEAVE_STALL_WARN": "0", **extra})
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return env


def _nodes(tmp_path, hosts, count, script, extra=None, argv=()):
    from recovery_harness import _spawn
    from stall_nodes import ENTRY, free_port_pair

    (tmp_path / "hosts").write_text(hosts)
    port = free_port_pair()
    return [_spawn([*ENTRY, "--hostfile", "hosts", "--node-rank", str(rank), "--master-addr", "127.0.0.1",
                    "--master-port", str(port), "--", *script, *argv],
                   _env(tmp_path, rank, NODEWEAVE_TEST_NODE=str(rank), **(extra or {})),
                   tmp_path) for rank in range(count)]


RANKS = """import os, torch.distributed as dist
dist.init_process_group("gloo")
# one write(2) per line: print's pieces of two ranks sharing node 1's stdout interleaved on a loaded machine
os.write(1, "RANKLINE {} {} {}\\n".format(dist.get_rank(), dist.get_world_size(), os.environ["WORLD_SIZE"]).encode())
dist.barrier()
dist.destroy_process_group()
"""


def test_two_real_nodes_of_one_and_two_processes_number_their_ranks_after_each_other(tmp_path):
    """slots 1 and 2: ranks 0 on node 0, 1 and 2 on node 1, a world of 3 seen by every process and exported."""
    pytest.importorskip("torch")
    from recovery_harness import finish

    (tmp_path / "ranks.py").write_text(RANKS)
    nodes = _nodes(tmp_path, "nodea slots=1\nnodeb slots=2\n", 2, ["ranks.py"])
    codes = finish(nodes, 180)
    texts = [node.text() + node.text("out") for node in nodes]
    assert codes == [0, 0], texts
    seen = [sorted(re.findall(r"RANKLINE (\d+) (\d+) (\d+)", text)) for text in texts]
    assert seen == [[("0", "3", "3")], [("1", "3", "3"), ("2", "3", "3")]], texts


def test_two_real_nodes_of_a_hostfile_with_a_line_without_slots_both_stop_before_any_launch(tmp_path):
    """`nodea slots=2` / `nodeb`: refused on each node (exit 2) before the check-in; it ran before, node 0
    planning a world of 4 and node 1 of 2."""
    (tmp_path / "ranks.py").write_text(RANKS)
    from recovery_harness import finish

    nodes = _nodes(tmp_path, "nodea slots=2\nnodeb\n", 2, ["ranks.py"])
    codes = finish(nodes, 120)
    texts = [node.text() for node in nodes]
    assert codes == [2, 2], texts
    assert all("line 2 (nodeb) gives no slots" in text and "RANKLINE" not in text for text in texts), texts


def test_a_spare_with_more_slots_runs_its_own_count_when_it_takes_a_left_out_nodes_place(tmp_path):
    """Recovery, 2 training nodes of 1 slot and a spare of 2 (ranks given, the one machine's way): node 1's rank is
    killed, the spare takes its place. It ran the slots of the line of the rank it took (1), so generation 1's
    world was 2 although the check-in counted 3; it runs its own 2 now: the world is 1 + 2."""
    pytest.importorskip("torch")
    from recovery_harness import WORKLOAD, finish, steps

    shutil.copy(WORKLOAD, tmp_path / "resumable.py")
    ck = str(tmp_path / "checkpoints")
    nodes = _nodes(tmp_path, "n0 slots=1\nn1 slots=1\nn2 slots=2\n", 3, ["resumable.py"],
                   {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_CHECKPOINT_DIR": ck,
                    "NODEWEAVE_NNODES": "2"},
                   ["--ckpt", ck, "--steps", "20", "--interval", "0.2", "--save-every", "5", "--fault", "kill",
                    "--fault-node", "1", "--fault-step", "8"])
    codes = finish(nodes, 240)
    texts = [node.text() for node in nodes]
    assert codes == [0, 0, 0], texts
    worlds = sorted({(gen, world) for gen, _, world in steps(nodes[0])})
    assert worlds == [(0, 2), (1, 3)], (worlds, texts[0])
