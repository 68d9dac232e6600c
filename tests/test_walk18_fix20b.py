"""fix20b: the rows note18 left for the entrypoint and recovery, each as its class."""

import json

import cli_run


def _explain(folder, env, *args):
    """``--explain --json`` of a two-node job's node 0 in ``folder``."""
    (folder / "train.py").write_text("print('step: 1  loss: 1.0')\n")
    base = {"NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1"}
    return cli_run.entrypoint("--explain", "--json", *args, "--", "train.py", cwd=str(folder),
                              env={**cli_run.CLEAN, **base, **env})


def _setting(explained, key):
    """``key``'s value in ``--explain --json`` (faults; the wait is the exchange's deadline)."""
    if key == "wait_timeout":
        return explained["exchange"]["deadline_s"]
    for section in explained.values():
        if isinstance(section, dict) and isinstance(section.get(key), dict) and "value" in section[key]:
            return section[key]["value"]
    raise AssertionError(f"{key} not in {sorted(explained)}")


# -- 1: one rule for seconds: the spec's fields, the entrypoint's variables and flags, the CLI's options --

SECONDS = (("wait_timeout", "NODEWEAVE_WAIT_TIMEOUT", "--wait-timeout"),
           ("stall_warn", "NODEWEAVE_STALL_WARN", "--stall-warn"),
           ("stall_timeout", "NODEWEAVE_STALL_TIMEOUT", "--stall-timeout"))


def test_every_seconds_setting_reads_durations_through_one_reader(tmp_path):
    """note18 (fix19h left): ``launcher.stall_warn: 10m`` was taken while ``NODEWEAVE_STALL_WARN=10m`` (and
    ``--stall-warn 10m``) was refused as no whole number: each seconds variable and flag takes what the spec takes,
    and refuses the rest naming itself, the value and both spellings."""
    from nodeweave import quantities
    from nodeweave.entrypoint import durations
    from nodeweave.spec.nodes import Reader

    assert quantities.seconds is durations.seconds  # the CLI's options: the same reader
    assert "durations" in Reader.duration.__code__.co_names or "whole_seconds" in Reader.duration.__code__.co_names
    for key, variable, flag in SECONDS:
        extra = {"NODEWEAVE_STALL_TIMEOUT": "2h"} if key == "stall_warn" else {}
        for given, args in (({variable: "1h30m" if key != "stall_warn" else "10m"}, ()),
                            ({}, (flag, "1h30m" if key != "stall_warn" else "10m"))):
            done = _explain(tmp_path, {**extra, **given}, *args)
            assert done.returncode == 0, (key, done.stderr)
            said = _setting(json.loads(done.stdout), key)
            assert said == (600 if key == "stall_warn" else 5400), (key, done.stdout)
        refused = _explain(tmp_path, {**extra, variable: "1.5s"})
        line = cli_run.one_line(refused.stderr)
        assert refused.returncode == 2 and "got '1.5s' (from " + variable + ")" in line and \
            "a duration with a unit, s, m or h (30s, 10m, 1h30m)" in line, line
        beyond = _explain(tmp_path, {**({"NODEWEAVE_STALL_TIMEOUT": "0"} if extra else {}), variable: "200h"})
        line = cli_run.one_line(beyond.stderr)
        assert beyond.returncode == 2 and f"{variable}: 720000 seconds is out of range" in line, line


# -- 2: the spares every view lists are the roster's: a spare gone is its own row, lost, and no spare --

def test_a_gone_spare_is_listed_by_no_view_as_a_spare(tmp_path):
    """note18 (fix19a left): the spare's entrypoint frozen past the heartbeat: its row said ``lost`` and the spares
    gauge dropped, while --status's ``recovery.spares`` and /status.json's book still listed it. Every view now
    reads the roster's waiting spares; back, it is listed again."""
    import os
    import signal
    import time

    import pytest
    from free_ports import free_port
    from recovery_harness import finish, start, wait_for_step
    from test_walk13_fix13a import _get
    from test_walk17_fix19a import _status

    pytest.importorskip("torch")
    metrics = free_port()
    nodes = start(tmp_path, ["--steps", "110", "--interval", "0.2", "--save-every", "5"], spares=1,
                  per_node={0: {"NODEWEAVE_METRICS": "on", "NODEWEAVE_METRICS_PORT": str(metrics)}})
    try:
        wait_for_step(nodes[0], 3)
        before = _status(nodes[0], tmp_path)
        os.kill(nodes[2].proc.pid, signal.SIGSTOP)
        time.sleep(13)
        gone = _status(nodes[0], tmp_path)
        live = json.loads(_get(metrics, "/status.json"))
        os.kill(nodes[2].proc.pid, signal.SIGCONT)
        until = time.monotonic() + 30
        while "joined the job as a spare" not in nodes[0].text() and time.monotonic() < until:
            time.sleep(0.2)
        back = _status(nodes[0], tmp_path)
    finally:
        codes = finish(nodes)
    assert before["recovery"]["spares"] == [2], before["recovery"]
    assert [n["state"].split(":")[0] for n in gone["nodes"]][2] == "lost", gone["nodes"]
    assert gone["recovery"]["spares"] == [] and live["book"]["spares"] == [], (gone["recovery"], live["book"])
    assert [n["state"] for n in live["nodes"]][2] == "lost", live["nodes"]
    assert back["recovery"]["spares"] == [2], back["recovery"]
    assert codes == [0, 0, 0], [node.text() for node in nodes]


# -- 3: a scheduler's count past the training count under recovery, no spares set: the spares forgotten --

def test_an_allocation_past_the_training_count_under_recovery_names_the_spares(tmp_path):
    """note18 (fix19e left): under Slurm, an sbatch with NODEWEAVE_NNODES=2 and an allocation of 3 but no
    NODEWEAVE_SPARES (forgotten, or not passed to the steps) was told "remove one, or pass --nnodes": removing
    NODEWEAVE_NNODES made every node train. Every platform's count of every container (an allocation, a hosts
    file, PET_NNODES, NNODES) is weighed as with spares set: one refusal on every node, exit 3, naming
    NODEWEAVE_SPARES and the count."""
    hosts = tmp_path / "hosts"
    hosts.write_text("h0\nh1\nh2\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    base = {**cli_run.CLEAN, "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_NNODES": "2", "NODEWEAVE_CHECKPOINT_DIR": "ck"}
    for env, said in (({"SLURM_JOB_ID": "5", "SLURM_NNODES": "3", "SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "h[0-2]",
                        "NODEWEAVE_HOSTNAME": "h0"}, "SLURM_NNODES=3"),
                      ({"NODEWEAVE_HOSTFILE": str(hosts), "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_HOSTNAME": "h0"},
                       "(3)"),
                      ({"PET_NNODES": "3", "NODE_RANK": "0", "MASTER_ADDR": "m"}, "PET_NNODES=3")):
        for rank in ("0", "2"):
            mine = {key: rank if key in ("SLURM_NODEID", "NODEWEAVE_NODE_RANK", "NODE_RANK") else value
                    for key, value in env.items()}
            if rank == "2" and "NODEWEAVE_HOSTNAME" in mine:
                mine["NODEWEAVE_HOSTNAME"] = "h2"
            done = cli_run.entrypoint("--explain", "--", "train.py", cwd=str(tmp_path), env=dict(base, **mine))
            refusal = cli_run.one_line(done.stderr)
            assert done.returncode == 3 and said in refusal and "NODEWEAVE_SPARES=1 on every node" in refusal \
                and "remove one" not in refusal, (env, refusal)
        done = cli_run.entrypoint("--explain", "--", "train.py", cwd=str(tmp_path),
                                  env=dict(base, NODEWEAVE_SPARES="1", **env))
        assert done.returncode == 0, (env, done.stderr)


# -- 4: --explain --run-id X plans run X's generation from that run's kept book --

def test_explain_with_a_run_id_plans_that_runs_generation_from_its_book(tmp_path):
    """note18 (fix19e left): ``--explain --run-id X`` planned the job's first layout (node 2 a spare, node 1
    training) while run X, in generation 1, trained nodes 0 and 2 (node 1 left out): the book of the run is read
    (``$TMPDIR/nodeweave/runs/X/recovery.json``, which the run keeps), as the job folder's is without a run id;
    another run's book in the job folder is not that run's."""
    import os

    from nodeweave.entrypoint.running.runstate import job_dir, run_dir

    (tmp_path / "train.py").write_text("print(1)\n")

    def explain(node, *flags):
        env = {**cli_run.CLEAN, "HOME": str(tmp_path), "TMPDIR": str(tmp_path / f"t{node}"),
               "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_NNODES": "2",
               "NODEWEAVE_NODE_RANK": str(node), "NODEWEAVE_MASTER_ADDR": "127.0.0.1"}
        out = cli_run.entrypoint("--explain", "--run-id", "20261201-r1", *flags, "--", "train.py", env=env,
                                 cwd=str(tmp_path), timeout=60)
        return env, out

    shown = {}
    for node, role in ((0, "member"), (1, "left out"), (2, "member")):
        env, out = explain(node, "--json")
        topology = json.loads(out.stdout)["topology"]
        book = {"generation": 1, "decision": "start", "restarts": 1, "members": [0, 2], "spares": [],
                "left_out": {"1": 1}, "why": {"1": "its rank was killed"}, "role": role}
        other = dict(book, generation=4, members=[0, 1], left_out={"2": 1}, why={"2": "lost"},
                     role="left out" if node == 2 else "member")
        for folder, kept in ((run_dir(env, "20261201-r1"), book),
                             (job_dir(env, topology["job_id"], topology["master_port"]["value"]), other)):
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "recovery.json"), "w") as f:
                json.dump(kept, f)
        _, out = explain(node)
        shown[node] = out.stdout
    for node, rank in ((0, 0), (2, 1)):
        assert f"run    torchrun --nnodes 2 --nproc-per-node 1 --node-rank {rank} " in shown[node], shown[node]
    assert "left out in generation 1" in shown[1] and "now    nothing: this node is left out" in shown[1], shown[1]
    assert "generation 4" not in "".join(shown.values())


# -- 5: doctor --cluster advises a node that never checked in by its role --

def test_doctor_advises_a_node_that_never_checked_in_by_its_role():
    """note18 (fix19b left): a spare node 0 lists ``missing`` (the job started without it, as recovery does) was
    an error with the check-in refusal's advice ("make the nodes agree ...; the check-in refuses this on every
    start"); a spare is a warning that the job trains with one spare fewer, a training node the check-in's own."""
    from nodeweave.doctor.cluster import from_status

    def fp(rank):
        return {"rank": rank, "hostname": f"h{rank}", "nnodes": "3", "launcher": "torchrun"}

    def status(role):
        return {"phase": "running", "nodes": [{"fp": fp(0), "own": True, "state": "running"},
                                              {"fp": fp(1), "state": "running"},
                                              {"fp": {"rank": 2}, "state": "missing: not checked in", "role": role}]}

    [spare] = [f for f in from_status(status("spare"), "node 0").findings if f.code == "cluster-missing"]
    assert spare.severity == "warning" and spare.message.startswith("spare node 2 never checked in: the job trains "
                                                                    "without it"), spare.to_dict()
    assert "make the nodes agree" not in spare.action and "NODEWEAVE_SPARES" in spare.action, spare.to_dict()
    [member] = [f for f in from_status(status("member"), "node 0").findings if f.code == "cluster-missing"]
    assert member.severity == "error" and "make the nodes agree" not in member.action and \
        "start it" in member.action, member.to_dict()
