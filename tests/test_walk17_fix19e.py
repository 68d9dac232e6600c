"""walk17a/walk17b rows fixed by fix19e, one test per class: what the entrypoint says about a node is the plan that
runs."""


def test_every_stop_hint_under_recovery_names_kill_int_and_what_kill_term_does():
    """walk17b B8: --node stop's refusal offered only `kill -TERM PID` (under recovery node 0's is an eviction the
    others wait out); the one signal that ends a recovery job on every node, `kill -INT PID`, was not named."""
    from nodeweave.entrypoint import nodeinfo

    refusal = nodeinfo.main_run_error([{"pid": 24278, "main": False}])
    assert "`kill -INT 24278` (as Ctrl-C: on node 0 it ends the job on every node, under recovery too)" in refusal
    assert "`kill -TERM 24278` (under recovery node 0's SIGTERM is read as an eviction" in refusal, refusal


def test_a_rank_past_the_count_under_recovery_names_the_spare_count_from_every_source(tmp_path):
    """walk17b B18: a spare started with NODEWEAVE_NODE_RANK=2 but no NODEWEAVE_SPARES was told only "ranks run
    0..1"; from variables, a hostfile and Slurm alike the refusal names the spare count as the fix."""
    from pathlib import Path

    import pytest

    from nodeweave.entrypoint import EntrypointError, make_plan

    fixture = str(Path(__file__).parent / "fixtures" / "synthetic" / "cpu-only")
    hosts = tmp_path / "hosts"
    hosts.write_text("h0\nh1\n")
    for env in ({"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "2", "NODEWEAVE_MASTER_ADDR": "m"},
                {"NODEWEAVE_HOSTFILE": str(hosts), "NODEWEAVE_NODE_RANK": "2"},
                {"SLURM_JOB_ID": "5", "SLURM_NNODES": "2", "SLURM_NODEID": "2", "SLURM_JOB_NODELIST": "h[0-1]"}):
        with pytest.raises(EntrypointError) as err:
            make_plan(["--", "train.py"], env=dict(env, NODEWEAVE_RECOVERY="on"), sysroot=fixture)
        refusal = str(err.value)
        assert "node ranks 2.. are spares" in refusal and "NODEWEAVE_SPARES=1" in refusal, (env, refusal)
        with pytest.raises(EntrypointError) as err:
            make_plan(["--", "train.py"], env=env, sysroot=fixture)
        assert "spares" not in str(err.value), err.value


def test_nodeweaves_own_run_plumbing_trips_no_flag_overrides_warning():
    """walk17a A16: `nodeweave run --node 0` passed --nnodes 1 to a node whose up-time NODEWEAVE_NNODES=2 nodeweave
    wrote, and the node warned "flag --nnodes (1) overrides NODEWEAVE_NNODES=2"; a check's --nproc-per-node 1 and
    --nnodes (spares counted) tripped the same warning. What nodeweave passes, it passes without the warning."""
    from pathlib import Path

    from nodeweave.check.driver import CheckOptions, CheckRequest
    from nodeweave.cluster.runner import RunRequest
    from nodeweave.entrypoint import make_plan

    fixture = str(Path(__file__).parent / "fixtures" / "synthetic" / "cpu-only")
    up = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_MASTER_ADDR": "127.0.0.1",
          "NODEWEAVE_NPROC_PER_NODE": "2", "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1"}
    for request in (RunRequest(run_id="r1", command=["train.py"], nnodes=1),
                    CheckRequest(run_id="r2", command=["-m", "w"], flags=CheckOptions().entrypoint_flags(3))):
        sent = getattr(request, "variables", lambda: request.env)()  # what a node gets in front of its entrypoint
        plan = make_plan(request.entrypoint_args(), env={**up, **sent}, sysroot=fixture)
        assert not [w for w in plan.warnings if w.code == "flag-overrides-source"], plan.warnings


def test_per_host_instructions_under_recovery_give_the_spares_ranks_and_the_training_count(tmp_path):
    """walk17b B3: with 1 spare the rendered compose/node.yaml and .env.example said NODE_RANK "0 on the master
    host, 1 to N-1 on the others" and NNODES "Node count": the spare host never started, or a host count of 3 made
    3 training nodes wait for a 4th. They say the spare's rank and that NNODES is the training count."""
    import yaml

    from nodeweave.spec import load_spec
    from nodeweave.targets.compose import render_files

    golden = (__import__("pathlib").Path(__file__).parent / "golden" / "compose" / "cuda" / "nodeweave.yaml")
    (tmp_path / "nodeweave.yaml").write_text(golden.read_text() + "recovery:\n  enabled: true\n  spares: 1\n")
    files = render_files(load_spec(tmp_path / "nodeweave.yaml"))
    ranks = "0 on the master host, 1 on the other training host(s), 2 on the spare host(s)"
    assert f"set NODE_RANK ({ranks})" in files["compose/node.yaml"], files["compose/node.yaml"][:600]
    env = yaml.safe_load(files["compose/node.yaml"])["services"]["node"]["environment"]
    assert ranks in env["NODE_RANK"], env["NODE_RANK"]
    example = files["compose/.env.example"]
    assert f"# {ranks[0].upper()}{ranks[1:]}.\nNODE_RANK=" in example, example
    assert "Training node count (from the spec: 2; the 1 spare host(s) not counted)" in example, example
    assert "1 to N-1" not in files["compose/node.yaml"] + example


def test_kubeflow_pod_names_agree_with_a_rank_only_by_kubeflows_rule(tmp_path):
    """walk17b B2: PyTorchJob pod pj-worker-0 with PET_NODE_RANK=0 was told its ordinal "agrees" (worker 0 is
    node rank 1 beside pj-master-0, which holds 0), and pj-worker-1 with the right 2 "is no rank". The check
    follows Kubeflow's naming: worker N is N+1 beside a master pod, and a rank against it is refused."""
    import shutil
    from pathlib import Path

    import pytest

    from nodeweave.entrypoint import EntrypointError, make_plan

    def plan(host, rank):
        root = tmp_path / host
        if not root.exists():
            shutil.copytree(Path(__file__).parent / "fixtures" / "synthetic" / "sts-h100-roce", root, symlinks=True)
            (root / "etc" / "hostname").write_text(host + "\n")
        return make_plan(["--", "train.py"], sysroot=str(root), env={
            "PET_NNODES": "3", "PET_MASTER_ADDR": "pj-master-0", "PET_NODE_RANK": rank, "RANK": rank})

    with pytest.raises(EntrypointError) as err:
        plan("pj-worker-0", "0")
    assert err.value.exit_code == 3 and "'pj-worker-0' is node rank 1 under torchrun PET_* (Kubeflow)" in str(
        err.value), err.value
    for host, rank in (("pj-worker-0", "1"), ("pj-worker-1", "2"), ("pj-master-0", "0")):
        notes = [n for n in plan(host, rank).topology.notes if n.startswith("node rank:")]
        assert notes and f"ordinal of hostname '{host}' agrees with PET_NODE_RANK={rank} (under torchrun PET_* " \
            "(Kubeflow)," in notes[0], notes


def test_explain_on_a_running_jobs_node_plans_its_generations_membership(tmp_path):
    """walk17b B6: in generation 1 (node 1 left out, spare node 2 training as rank 1) --explain planned every
    container on every node (`--nnodes 3`, node 2 `--node-rank 2`, node 1 a launch); it plans what runs: node 2
    `--nnodes 2 --node-rank 1`, node 1 nothing now."""
    import json
    import os
    import cli_run
    import sys

    from nodeweave.entrypoint.running.runstate import job_dir

    (tmp_path / "train.py").write_text("print(1)\n")
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

    def explain(node, *flags):
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": src, "HOME": str(tmp_path),
               "TMPDIR": str(tmp_path / f"t{node}"), "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_NNODES": "2",
               "NODEWEAVE_NODE_RANK": str(node), "NODEWEAVE_MASTER_ADDR": "127.0.0.1"}
        out = cli_run.entrypoint("--explain", *flags, "--", "train.py", env=env, cwd=tmp_path, timeout=60)
        return env, out

    shown = {}
    for node, role in ((0, "member"), (1, "left out"), (2, "member")):
        env, out = explain(node, "--json")
        topology = json.loads(out.stdout)["topology"]
        folder = job_dir(env, topology["job_id"], topology["master_port"]["value"])
        os.makedirs(folder)
        with open(os.path.join(folder, "recovery.json"), "w") as f:
            json.dump({"generation": 1, "decision": "start", "restarts": 1, "members": [0, 2], "spares": [],
                       "left_out": {"1": 1}, "why": {"1": "its rank was killed"}, "role": role}, f)
        _, out = explain(node)
        shown[node] = out.stdout
    for node, rank in ((0, 0), (2, 1)):
        assert f"run    torchrun --nnodes 2 --nproc-per-node 1 --node-rank {rank} " in shown[node], shown[node]
        assert "export WORLD_SIZE=2 " in shown[node] and "overrides" not in shown[node], shown[node]
    assert "left out in generation 1" in shown[1] and "now    nothing: this node is left out" in shown[1], shown[1]
    assert "--nnodes 3" not in "".join(shown.values())
