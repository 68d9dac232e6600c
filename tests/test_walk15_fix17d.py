"""Walk15b rows B1, B2, B3, B4, B9, B11, B17, B7, B12: the entrypoint's plan, fixed in fix17d.

- every variable a platform's reader reads, set but empty, is named so (a warning, and in the refusal of the value
  it would have given: exit 2, with that platform's remedy), never "unset" nor a StatefulSet's remedy (B1-B3);
- the loopback-master hint for a literal address (or ``localhost``) says to write node 0's reachable address
  there, not to map a name in /etc/hosts (B4);
- a rank past recovery's containers (nodes + spares) names what the platform started and the remedy (B9);
- recovery on one node without spares is refused whatever gave the count (B11);
- a platform's GPU count on a node that sees no GPU is refused, as a *_VISIBLE_DEVICES entry past the GPUs is (B17);
- a misspelt variable is never offered a name the entrypoint only sets for its ranks (B7);
- --explain's Faults rows under recovery promise no exit that recovery replaces (B12).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)
FIX = Path(__file__).parent / "fixtures" / "synthetic"
PLACED = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}


def _plan(entrypoint, env, *argv):
    code, out, err = entrypoint(["--explain", "--json", *argv, "--", "train.py"], env)
    return code, (json.loads(out) if out.strip() else None), err


def _platform_variables():
    """(source, variable) for every variable a platform row of the sources' table reads (VC_*_HOSTS spelt out)."""
    from nodeweave.entrypoint.planning.sources import SOURCES

    found = {(platform, name) for platform, _, name in EMPTY_MASTERS}  # the walker's, whatever the table holds
    for source in SOURCES:
        found.update((source.name, name.replace("*", "WORKER")) for _, name in getattr(source, "reads", ()))
    return sorted(found)


# what the walker met: each platform's rank and count given, its master variable set but empty
EMPTY_MASTERS = [
    ("Slurm", {"SLURM_JOB_ID": "77", "SLURM_NNODES": "2", "SLURM_NODEID": "1", "SLURM_JOB_NODELIST": ""},
     "SLURM_JOB_NODELIST"),
    ("LeaderWorkerSet", {"LWS_WORKER_INDEX": "1", "LWS_GROUP_SIZE": "2", "LWS_LEADER_ADDRESS": ""},
     "LWS_LEADER_ADDRESS"),
    ("SkyPilot", {"SKYPILOT_NODE_RANK": "1", "SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_IPS": ""}, "SKYPILOT_NODE_IPS"),
    ("dstack", {"DSTACK_NODE_RANK": "1", "DSTACK_NODES_NUM": "2", "DSTACK_MASTER_NODE_IP": ""},
     "DSTACK_MASTER_NODE_IP"),
    ("AWS Batch", {"AWS_BATCH_JOB_NODE_INDEX": "1", "AWS_BATCH_JOB_NUM_NODES": "2",
                   "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0", "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": ""},
     "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"),
    ("Volcano", {"VC_TASK_INDEX": "1", "NNODES": "2", "VC_WORKER_HOSTS": ""}, "VC_WORKER_HOSTS"),
    ("Azure ML", {"AZ_BATCHAI_TASK_INDEX": "1", "AZUREML_NODE_COUNT": "2", "AZ_BATCH_MASTER_NODE": ""},
     "AZ_BATCH_MASTER_NODE"),
    ("SageMaker", {"SM_CURRENT_HOST": "algo-2", "SM_HOSTS": ""}, "SM_HOSTS"),
]


@pytest.mark.parametrize("platform, env, variable", EMPTY_MASTERS, ids=[case[0] for case in EMPTY_MASTERS])
def test_a_platforms_variable_set_but_empty_is_named_with_its_remedy(entrypoint, platform, env, variable):
    """B1-B3: an empty SLURM_JOB_NODELIST, LWS_LEADER_ADDRESS, SKYPILOT_NODE_IPS, DSTACK_MASTER_NODE_IP was "no
    master address; ... NODEWEAVE_SERVICE in a StatefulSet" (exit 3), AWS Batch's "is unset": the variable the
    user's wrapper emptied is named set but empty, bad input (exit 2), with its platform's remedy."""
    code, plan, err = _plan(entrypoint, env)
    message = plan["errors"][0]["message"] if plan else err
    assert code == 2, (code, message)
    assert f"{variable} is set but empty: {platform} sets it" in message, message
    assert "StatefulSet" not in message and "is unset" not in message, message


@pytest.mark.parametrize("platform, variable", _platform_variables())
def test_every_platform_variable_set_but_empty_is_warned(entrypoint, platform, variable):
    """The same class, every variable a platform's reader reads: one set but empty is said, whichever field."""
    code, plan, err = _plan(entrypoint, dict(PLACED, **{variable: ""}))
    said = [w if isinstance(w, str) else w.get("message", "") for w in plan["warnings"]] if plan else [err]
    assert any(f"{variable} is set but empty" in line for line in said), (code, said)


@pytest.mark.parametrize("master", ["127.0.0.1", "localhost"])
def test_the_loopback_master_hint_for_an_address_says_to_write_node_0s_address(entrypoint, tmp_path, master):
    """B4: a hostfile whose first line is 127.0.0.1 beside another machine was told to map "the name" in
    /etc/hosts or set NODEWEAVE_INTERFACES: neither changes what node 1 dials."""
    (tmp_path / "hosts7").write_text(f"{master}\n10.9.9.9\n")
    code, plan, err = _plan(entrypoint, {"NODEWEAVE_HOSTFILE": str(tmp_path / "hosts7")}, "--node-rank", "0")
    said = [w["message"] if isinstance(w, dict) else str(w) for w in plan["warnings"]]
    looped = [line for line in said if "loopback" in line and master in line and "10.9.9.9" in line]
    assert looped, said
    assert all("write node 0's reachable address" in line and "/etc/hosts" not in line for line in looped), looped


def test_a_rank_past_recoverys_containers_names_what_the_platform_started(entrypoint):
    """B9: `oc scale --replicas=4` of a 2 + 1 spare recovery StatefulSet: pod 3 crash-looped on a bare "not below
    the node count 3"."""
    env = {"POD_NAME": "rjob-3", "NODEWEAVE_SERVICE": "rjob", "POD_NAMESPACE": "ml", "NODEWEAVE_NNODES": "2",
           "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_CHECKPOINT_DIR": "checkpoints",
           "NODEWEAVE_JOB_ID": "rjob"}
    code, plan, err = _plan(entrypoint, env)
    message = plan["errors"][0]["message"] if plan else err
    assert code == 2 and "at least 4 nodes" in message and "recovery.spares" in message, message
    assert "3 replicas" in message, message


@pytest.mark.parametrize("count", [{"NNODES": "1"}, {"PET_NNODES": "1"}, {},
                                   {"SLURM_JOB_ID": "7", "SLURM_NNODES": "1", "SLURM_NODEID": "0",
                                    "SLURM_JOB_NODELIST": "gpu01"}],
                         ids=["NNODES", "PET_NNODES", "default", "Slurm"])
def test_recovery_on_one_node_is_refused_whatever_gave_the_count(entrypoint, count):
    """B11: only NODEWEAVE_NNODES=1 was refused; NNODES=1, PET_NNODES=1, a scheduler's 1 and the single-node
    default planned recovery with nobody to watch the node."""
    env = dict(count, NODEWEAVE_JOB_ID="x", NODEWEAVE_RECOVERY="on", NODEWEAVE_CHECKPOINT_DIR="ck")
    code, plan, err = _plan(entrypoint, env)
    message = plan["errors"][0]["message"] if plan and plan["errors"] else err
    assert code == 2 and "on with one node" in message and "no spares" in message, (code, message)


GPU_COUNTS = [{"DSTACK_NODE_RANK": "1", "DSTACK_NODES_NUM": "2", "DSTACK_MASTER_NODE_IP": "10.0.0.1",
               "DSTACK_GPUS_PER_NODE": "8"},
              {"SM_CURRENT_HOST": "algo-2", "SM_HOSTS": '["algo-1","algo-2"]', "SM_NUM_GPUS": "8"},
              {"SKYPILOT_NODE_RANK": "1", "SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2",
               "SKYPILOT_NUM_GPUS_PER_NODE": "8"}]


@pytest.mark.parametrize("env", GPU_COUNTS, ids=["dstack", "SageMaker", "SkyPilot"])
def test_a_platforms_gpu_count_on_a_node_without_gpus_is_refused(env):
    """B17: DSTACK_GPUS_PER_NODE=8 on a node whose GPUs did not reach the container planned 8 CPU ranks on gloo
    without a word; a GPU fixture with the GPUs still plans, and a count of 0 (a CPU task) is no count."""
    from nodeweave.entrypoint.core import make_plan
    from nodeweave.entrypoint.errors import EntrypointError

    with pytest.raises(EntrypointError) as caught:
        make_plan(["--", "train.py"], env=env, sysroot=str(FIX / "cpu-only"))
    gpus = next(name for name in env if "GPU" in name)
    assert caught.value.exit_code == 3 and f"{gpus}=8 says this node has 8 GPU(s) but it sees none" in \
        str(caught.value), str(caught.value)
    assert make_plan(["--", "train.py"], env=env, sysroot=str(FIX / "hgx-h100")).topology.nproc_per_node.value \
        in (8, "8")
    cpu = make_plan(["--", "train.py"], env=dict(env, **{gpus: "0"}), sysroot=str(FIX / "cpu-only"))
    assert cpu.topology.nproc_per_node.value == 1


@pytest.mark.parametrize("typo, output", [("NODEWEAVE_RESUME_FORM", "NODEWEAVE_RESUME_FROM"),
                                          ("NODEWEAVE_RESTART_COUNTS", "NODEWEAVE_RESTART_COUNT"),
                                          ("NODEWEAVE_RANKWATCH_DIRS", "NODEWEAVE_RANKWATCH_DIR"),
                                          ("NODEWEAVE_RANKWATCH_PIDS", "NODEWEAVE_RANKWATCH_PID")])
def test_a_misspelt_variable_is_never_offered_one_nodeweave_only_sets(typo, output):
    """B7: NODEWEAVE_RESUME_FORM got "did you mean NODEWEAVE_RESUME_FROM?", which the plan then dropped as
    nodeweave's own: a name set for the ranks is said to be that, with what to do instead."""
    from nodeweave.entrypoint.model import SET_FOR_RANKS
    from nodeweave.entrypoint.planning.reserved import instead
    from nodeweave.entrypoint.planning.variables import unknown_lines

    assert output in SET_FOR_RANKS
    for line in unknown_lines({typo: "1"}) + [instead(typo)]:
        assert f"did you mean {output}" not in line and f"{output} is nodeweave's to set for the ranks" in line, line


def test_explains_faults_rows_under_recovery_promise_no_exit_recovery_replaces(entrypoint):
    """B12: the stall_timeout row read "every node stops with exit 7 ..., a fault: recovery starts a new
    generation": under recovery only recovery's own ends (8, 9, 10) are exits; another is named only as "not"."""
    from nodeweave.entrypoint.errors import RECOVERY_FINAL

    env = dict(PLACED, NODEWEAVE_JOB_ID="x", NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1",
               NODEWEAVE_CHECKPOINT_DIR="ck", NODEWEAVE_STALL_WARN="10", NODEWEAVE_STALL_TIMEOUT="20",
               NODEWEAVE_STRAGGLER_FAULT="3", NODEWEAVE_STRAGGLER_IS_FAULT="on")
    code, plan, err = _plan(entrypoint, env)
    assert code == 0, err
    for key, row in plan["faults"].items():
        promised = {int(n) for n in re.findall(r"(?<!not )exit (\d+)", row["meaning"])}
        assert promised <= set(RECOVERY_FINAL), (key, row["meaning"])
    assert "not exit 7" in plan["faults"]["stall_timeout"]["meaning"]
