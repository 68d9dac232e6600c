"""Walk 11, part B, rows of walk11b-report.md (issue 43), each fixed as a class:

- a second start of a live run's id (a retried exec, another node of the run sharing the $TMPDIR) never rewrites
  the live run's record; `--node stop` ends both entrypoints of the id (B6);
- every non-master elastic node is told is_host=false (B13);
- every spelling of the launcher's restart count is dropped under recovery and said, the Faults row too (B1);
- a master with a scheme or a port is told the host and the port each where it goes (B10);
- a count read as every container under spares: its example is the containers less the spares; a big
  allocation's training count may go to it less the spares (B5, B9);
- a variable named after a spec field names the variable that sets it (B8);
- under recovery a duplicate of a live node is turned away, the live node keeps its place (B23);
- `--node status` without a command asks no plan (B22); recovery without a checkpoint folder warns of the
  brake (B20); a command job's late node is told the exchange closed (B2); the script word's own slip (B17);
- a node's run record given to `nodeweave runs` is named as such (B7); doctor --cluster reads the node variables
  (B19); a library pointer naming no save is said (B16); the saves passed over are logged (B14);
- a hostfile without this host takes the rank given (B18); ranks still arriving at an early refusal are not
  missing (B4); `--status` says gathering, waiting roles and the generation (B3, B21); a waiting node stopped
  by a signal tells node 0 (B15); the checkpoint folder is compared as resolved (B11).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import cli_run
import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)


def _environment(tmp_path):
    return {"PATH": os.environ["PATH"], "PYTHONPATH": str(cli_run.SRC), "TMPDIR": str(tmp_path)}


def _sleeper(tmp_path, run_id):
    """A stand-in entrypoint of ``run_id``: found by its command line (its program's name and --run-id), as a real
    one is."""
    sleeper = tmp_path / "nodeweave-entrypoint"
    sleeper.write_text("import time; time.sleep(60)\n")
    return cli_run.popen([sys.executable, str(sleeper), "--run-id", run_id], env=_environment(tmp_path))


def _record(tmp_path, run_id, proc):
    from nodeweave.entrypoint.running.runstate import proc_stat, write_json

    for _ in range(200):
        if proc_stat(proc.pid):
            break
        time.sleep(0.01)
    record = {"schema": "nodeweave.run/1", "run_id": run_id, "pid": proc.pid, "starttime": proc_stat(proc.pid)[3],
              "started": 1.0, "state": "launched", "command": ["train.py"]}
    path = tmp_path / "nodeweave" / "runs" / run_id / "run.json"
    write_json(str(path), record)
    return path, record


BEGIN = """
import sys
from nodeweave.entrypoint.running.runstate import begin_run
class S:
    env = {'TMPDIR': sys.argv[1]}
    command = ['train.py']
    def get(self, key):
        return sys.argv[2] if key == 'run_id' else None
from nodeweave.entrypoint.errors import EntrypointError
try:
    begin_run(S())
except EntrypointError as err:
    sys.exit(f"{err} [{err.exit_code}]")
"""


@pytest.mark.parametrize("same_id", [True, False], ids=["same-id", "other-id"])
def test_a_second_start_never_rewrites_a_live_runs_record(tmp_path, same_id):
    """B6: a repeat of a live run's id rewrote its run.json with the repeat's pid (`state: starting`); once the
    repeat was refused, `--node status` listed no run and a third run of another id started beside the first."""
    live = _sleeper(tmp_path, "r5")
    try:
        path, record = _record(tmp_path, "r5", live)
        out = cli_run.run([sys.executable, "-c", BEGIN, str(tmp_path), "r5" if same_id else "r6"],
                          env=_environment(tmp_path))
        assert out.returncode == 0 if same_id else out.stderr.endswith(" [6]\n"), out.stderr
        assert json.loads(path.read_text()) == record  # untouched, whatever the second start did
        if not same_id:
            assert "run r5 is still in progress on this node" in out.stderr  # refused, as before
        status = cli_run.run([*cli_run.ENTRYPOINT, "--node", "status"], env=_environment(tmp_path))
        assert [r["pid"] for r in json.loads(status.stdout)["runs"]] == [live.pid]
    finally:
        live.kill()
        live.wait()


def test_stop_ends_every_entrypoint_of_a_live_runs_id(tmp_path):
    """B6: the second entrypoint of a live id keeps no record; `--node stop` (every run) and `--node stop --run ID`
    end it with the recorded one, each reported on its own (two entries of one id were one before)."""
    for argv in (["stop", "--grace", "2"], ["stop", "--run", "r5", "--grace", "2"]):
        live, second = _sleeper(tmp_path, "r5"), _sleeper(tmp_path, "r5")
        try:
            _record(tmp_path, "r5", live)
            time.sleep(0.3)  # the second's command line is set just after its exec
            out = cli_run.run([*cli_run.ENTRYPOINT, "--node", *argv], env=_environment(tmp_path), timeout=60)
            stopped = json.loads(out.stdout)["stopped"]
            assert out.returncode == 0 and [s["processes"] for s in stopped] == [1, 1], out.stdout
            assert live.wait(timeout=60) and second.wait(timeout=60)
        finally:
            for proc in (live, second):
                proc.kill()
                proc.wait()


FIX = cli_run.REPO / "tests" / "fixtures" / "synthetic"


@pytest.mark.parametrize("master", ["127.0.0.1", "localhost", "192.168.1.40"])
@pytest.mark.parametrize("rank", [0, 1, 2])
def test_every_elastic_node_is_told_whether_it_hosts_the_store(master, rank):
    """B13: a non-master node's elastic line had no is_host, so torch guessed it from the endpoint: on loopback
    (or host networking) node 1 also bound the c10d store and the second to bind died in torch's traceback. What
    torch's rendezvous reads from the line is now true on node 0 and false on every other node."""
    torchrun = pytest.importorskip("torch.distributed.run")
    from torch.distributed.elastic.rendezvous import RendezvousParameters

    from nodeweave.entrypoint import make_plan

    plan = make_plan(["--", "train.py"], sysroot=str(FIX / "cpu-only"),
                     env={"NODEWEAVE_NNODES": "2:3", "NODE_RANK": str(rank), "MASTER_ADDR": master})
    config, _, _ = torchrun.config_from_args(torchrun.get_args_parser().parse_args(plan.launch.argv[1:]))
    params = RendezvousParameters(backend="c10d", endpoint=config.rdzv_endpoint, run_id=config.run_id,
                                  min_nodes=config.min_nodes, max_nodes=config.max_nodes, **config.rdzv_configs)
    assert params.get_as_bool("is_host") is (rank == 0)


RECOVERY = {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_NNODES": "2", "NODE_RANK": "0",
            "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_EXCHANGE_ALLOW": "address"}


@pytest.mark.parametrize("argv, env, said", [
    (["--max-restarts", "3"], {}, "max restarts 3 (flag --max-restarts)"),
    ([], {"NODEWEAVE_MAX_RESTARTS": "3"}, "max restarts 3 (NODEWEAVE_MAX_RESTARTS)"),
    (["--launcher-options", "--max-restarts 3"], {}, "launcher option '--max-restarts 3' (from flag --launcher-options)"),
    ([], {"NODEWEAVE_LAUNCHER_OPTIONS": "--max_restarts=3"},
     "launcher option '--max_restarts=3' (from NODEWEAVE_LAUNCHER_OPTIONS)"),
], ids=["flag", "variable", "option-flag", "option-variable"])
def test_every_spelling_of_the_launchers_restarts_is_dropped_under_recovery_and_said(entrypoint, argv, env, said):
    """B1: the launcher options' restart count was refused under recovery (exit 2) while --max-restarts and
    NODEWEAVE_MAX_RESTARTS were dropped with a warning, and the Faults row still said the launcher restarts the
    workers 3 times. One rule: every spelling is left out of the launch line and said; the row says the same."""
    code, out, err = entrypoint(["--explain", "--json", *argv, "--", "train.py"], dict(RECOVERY, **env))
    assert code == 0, err
    plan = json.loads(out)
    assert not any("restarts" in word for word in plan["launch"]["argv"]), plan["launch"]["argv"]
    assert any(w.startswith(f"{said} is not passed to torchrun under recovery") for w in plan["warnings"]), \
        plan["warnings"]
    code, out, err = entrypoint(["--explain", *argv, "--", "train.py"], dict(RECOVERY, **env))
    assert "the launcher restarts this node's workers" not in out


@pytest.mark.parametrize("master, host, port", [
    ("tcp://10.0.0.1:29500", "10.0.0.1", 29500), ("http://[fd00::1]:29500", "fd00::1", 29500),
    ("http://node0:29500/", "node0", 29500), ("10.0.0.1:29500", "10.0.0.1", 29500),
    ("[fd00::1]:29500", "fd00::1", 29500), ("http://node0", "node0", None)])
def test_a_master_with_a_scheme_or_a_port_is_told_where_each_part_goes(entrypoint, master, host, port):
    """B10: `tcp://10.0.0.1:29500` was told to give `10.0.0.1:29500`, which was refused next for its port. The
    advice strips scheme and port alike, and following it is taken."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], {"MASTER_ADDR": master, "NNODES": "2",
                                                                  "NODE_RANK": "1"})
    assert code == 2
    advice = f"give the host alone ({host})" + (f" and the port as MASTER_PORT={port} (--master-port {port})"
                                                if port else ";")
    assert advice in err, err
    followed = {"MASTER_ADDR": host, "NNODES": "2", "NODE_RANK": "1", **({"MASTER_PORT": str(port)} if port else {})}
    code, out, err = entrypoint(["--explain", "--", "train.py"], followed)
    assert code == 0, err


@pytest.mark.parametrize("name, value, rank, example", [
    ("NNODES", "2", "1", "e.g. NODEWEAVE_NNODES=1 if NNODES=2 counts every container"),
    ("PET_NNODES", "3", "0", "e.g. NODEWEAVE_NNODES=2 if PET_NNODES=3 counts every container"),
    ("NNODES", "2:4", "1", "with the 1 spare(s) as containers besides"),
    ("SLURM_NNODES", "4097", "0", "e.g. NODEWEAVE_NNODES=4096 if SLURM_NNODES=4097 counts every container"),
])
def test_a_count_read_as_every_container_gives_an_example_of_containers_less_spares(entrypoint, name, value, rank,
                                                                                     example):
    """B5, B9: the example took every container as training nodes (`NODEWEAVE_NNODES=4097 if 4097 node(s) train`,
    no container left for the spare; `2:4 node(s) train` for a range), and a typed NNODES was called the
    platform's count. The example is the containers less the spares, and the line says only NODEWEAVE_NNODES or
    --nnodes give the training count."""
    env = {name: value, "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "MASTER_ADDR": "127.0.0.1",
           "NODEWEAVE_EXCHANGE_ALLOW": "address"}
    env.update({"SLURM_NODEID": rank, "SLURM_JOB_NODELIST": "n[0001-4097]"} if name.startswith("SLURM") else
               {"NODE_RANK": rank})
    code, out, err = entrypoint(["--explain", "--", "train.py"], env)
    assert code == 3, err
    assert "is read under recovery as every container" in err and example in err, err
    assert "only NODEWEAVE_NNODES or --nnodes give the training count" in err


def test_recovery_on_a_big_allocation_takes_the_training_count_the_hint_gives(entrypoint):
    """B9: following the hint on a 4097-node allocation (NODEWEAVE_NNODES=4096) was refused as more than the
    spec's 2,048 typed nodes: the typed training count may go up to the allocation less the spares, not past it."""
    env = {"SLURM_NNODES": "4097", "SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "n[0001-4097]",
           "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1", "NODEWEAVE_EXCHANGE_ALLOW": "address"}
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(env, NODEWEAVE_NNODES="4096"))
    assert code == 0, err
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(env, NODEWEAVE_NNODES="4097"))
    assert code == 2 and "node count must be at most 4096" in err, err


def _field_variables():
    """(NODEWEAVE_<spec field path>, the variable meant) for every spec field of the contract's rows whose own
    variable is named otherwise."""
    from nodeweave.entrypoint.planning.contract import SETTINGS
    from nodeweave.entrypoint.planning.variables import KNOWN

    found = []
    for row in SETTINGS:
        if row.spec and row.variable:
            name = "NODEWEAVE_" + row.spec.replace(".", "_").upper()
            if name not in KNOWN:
                found.append((name, row.variable))
    return found


@pytest.mark.parametrize("name, meant", _field_variables() + [("NODEWEAVE_RECOVERY_MIN_NODES", "NODEWEAVE_NNODES"),
                                                             ("NODEWEAVE_MIN_NODES", "NODEWEAVE_NNODES")])
def test_a_variable_named_after_a_spec_field_names_the_variable_that_sets_it(name, meant):
    """B8: NODEWEAVE_MIN_NODES (recovery.min_nodes typed as recovery.spares is NODEWEAVE_SPARES) was told "did you
    mean NODEWEAVE_NNODES?" without how a minimum is written there. Every spec field's path as a variable names
    the variable that sets it, and recovery.min_nodes says MIN:MAX."""
    from nodeweave.entrypoint.planning.variables import unknown_lines

    line, = unknown_lines({name: "1"})
    assert f"(did you mean {meant} " in line, line
    if "MIN_NODES" in name:
        assert "NODEWEAVE_NNODES=1:2 (or --nnodes 1:2)" in line, line


@pytest.mark.parametrize("recovery", ["off", "on"])
def test_a_node_started_twice_is_turned_away_and_the_live_node_trains_on(tmp_path, recovery):
    """B23: under recovery a second start of node 1 (a mistaken repeat while the job trains) was sent off to try
    again, and the live, beating node 1 was thrown out as lost (a generation and a restart spent, and the next
    check-in refused the job for two node 1s). Under recovery too the newcomer is the duplicate, turned away
    (exit 3) naming the live node, and the job goes on with the first, as without recovery."""
    from recovery_harness import start_twice

    env = {"NODEWEAVE_EXCHANGE_ALLOW": "address", "NODEWEAVE_RECOVERY": recovery}
    if recovery == "on":
        env["NODEWEAVE_SPARES"] = "1"
    again, out, first, outs = start_twice(tmp_path, "b23", nodes=3 if recovery == "on" else 2, env=env)
    assert again.returncode == 3 and "node rank 1 claimed twice" in out, out
    assert [proc.returncode for proc in first] == [0] * len(first), outs
    assert "turned away: node rank 1 claimed twice" in outs[0], outs[0]
    assert "was lost" not in outs[0] and "LEFT OUT" not in outs[1], outs


def test_node_status_without_a_command_judges_no_plan(tmp_path):
    """B22: `--node status` (its command left out, as documented) answered a plan error, exit code 2 ("no
    training command"), beside a run that trained fine. Not asked for, the plan says so, with no error."""
    out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "status"], env=_environment(tmp_path), cwd=tmp_path)
    plan = json.loads(out.stdout)["plan"]
    assert out.returncode == 0 and plan["errors"] == [] and plan["hash"] is None, plan
    assert plan["not_judged"].startswith("no command given"), plan


@pytest.mark.parametrize("env, warned", [
    ({}, True), ({"NODEWEAVE_NO_PROGRESS_RESTARTS": "2"}, True), ({"NODEWEAVE_CHECKPOINT_DIR": "ck"}, False),
    ({"NODEWEAVE_NO_PROGRESS_RESTARTS": "0"}, False)])
def test_recovery_without_a_checkpoint_folder_says_the_brake_ends_it(entrypoint, env, warned):
    """B20: with no checkpoint folder and the no-progress brake on (its default), the job ended at the 3rd fault
    (exit 9) with spares still waiting, and --explain showed the two settings on separate rows, never together."""
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"],
                                dict(RECOVERY, NODEWEAVE_SPARES="2", **env))
    assert code == 0, err
    said = [w for w in json.loads(out)["warnings"] if "no checkpoint can count as progress" in w]
    assert bool(said) is warned, said


@pytest.mark.parametrize("launcher, told", [("command", True), ("torchrun", False)])
def test_a_late_node_of_a_command_job_is_told_the_exchange_closes_once_it_started(tmp_path, launcher, told):
    """B2: a node of a `command` job started again while the job ran waited out its whole deadline on "Connection
    refused" and was pointed at MASTER_ADDR and the Service; node 0 was running, but with launcher command it had
    exec'd the command and its exchange was gone. The line says so for a command job (a torchrun job's node 0
    keeps its exchange open and turns such a node away at once)."""
    from free_ports import free_port_pair

    (tmp_path / "train.py").write_text("")
    port = free_port_pair()
    command = ["sleep", "1"] if launcher == "command" else ["train.py"]
    out = cli_run.run([*cli_run.ENTRYPOINT, "--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1",
                       "--master-port", str(port), "--exchange-allow", "address", "--metrics", "off", "--launcher",
                       launcher, "--wait-timeout", "1", "--", *command], cwd=tmp_path,
                      env=dict(_environment(tmp_path), PATH=f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"))
    assert out.returncode == 4, out.stderr
    assert ("with launcher command node 0 execs the command and its exchange closes" in out.stderr) is told, \
        out.stderr


@pytest.mark.parametrize("word, says", [("$SCRIPT", "script '$SCRIPT' holds $, which nothing expands here"),
                                        ("~/train.py", "script '~/train.py' holds ~, which nothing expands here"),
                                        ("train.py ", "script 'train.py ' ends in white space, which names another "
                                                      "file: write it as 'train.py'")])
def test_the_script_word_is_told_its_own_slip(entrypoint, word, says):
    """B17: a script word holding $SCRIPT, ~ or a trailing blank was called "a program, not a Python script" or
    "not in the working directory"; the same entrypoint names these slips for paths and values. The script word
    follows the same rules."""
    code, out, err = entrypoint(["--explain", "--", word], {})
    assert code == 2 and says in err, err


def test_a_nodes_own_run_record_is_named_as_such_not_as_damage(tmp_path):
    """B7: `nodeweave runs show --runs-dir $TMPDIR/nodeweave/runs r3` called the node's own, untouched record
    "not what `nodeweave run` writes" and told the user to restore or move nodeweave's own file; `runs ls` said the
    same on every row. Both name it as a node's record and what reads it, and advise no move."""
    from nodeweave.entrypoint.running.runstate import RUN_SCHEMA, write_json
    from nodeweave.errors import UsageError
    from nodeweave.runs.history import find_run

    write_json(str(tmp_path / "runs" / "r3" / "run.json"),
               {"schema": RUN_SCHEMA, "run_id": "r3", "pid": 1, "starttime": 1, "started": 1796060698.28736,
                "state": "launched", "command": ["sl.py"]})
    with pytest.raises(UsageError) as refused:
        find_run(tmp_path / "runs", "r3")
    said = str(refused.value)
    assert "a node's own record of a run" in said and "--node report r3" in said, said
    assert "restore" not in said and "move" not in said, said
    listed = cli_run.run([*cli_run.NODEWEAVE, "runs", "ls", "--runs-dir", str(tmp_path / "runs")],
                         env=dict(_environment(tmp_path), HOME=cli_run.home_beside(tmp_path), COLUMNS="400"),
                         cwd=tmp_path)
    assert "a node's own record of a run" in listed.stdout and "restore" not in listed.stdout, listed.stdout


@pytest.mark.parametrize("name", ["NODEWEAVE_JOB_ID", "NODEWEAVE_EXCHANGE_PORT", "NODEWEAVE_NNODES"])
def test_doctor_cluster_never_calls_the_variables_it_asks_with_unread(tmp_path, name):
    """B19: `nodeweave doctor --cluster` from a node's shell warned that NODEWEAVE_JOB_ID "is read by
    nodeweave-entrypoint in the nodes, not by this command", and then asked node 0 with it; dropping it, as the
    warning implied, made the job unreachable. A verb that plans as this node reads every node variable; another
    verb still says it ignores one."""
    from free_ports import free_port_pair

    port = free_port_pair()
    env = dict(_environment(tmp_path), HOME=cli_run.home_beside(tmp_path), NNODES="2", NODE_RANK="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **{name: "30001" if "PORT" in name else "dcjob"})
    doctor = cli_run.run([*cli_run.NODEWEAVE, "doctor", "--cluster"], env=env, cwd=tmp_path, timeout=120)
    assert f"{name}=" not in doctor.stderr or "not by this command" not in doctor.stderr, doctor.stderr
    other = cli_run.run([*cli_run.NODEWEAVE, "runs", "ls"], env=env, cwd=tmp_path)
    assert f"{name}=" in other.stderr and "not by this command" in other.stderr, other.stderr


@pytest.mark.parametrize("pointer", ["latest", "latest_checkpointed_iteration.txt"])
@pytest.mark.parametrize("content, says", [("", "is empty"), ("garbage\n", "holds 'garbage', no save's name"),
                                           (None, "cannot be read")], ids=["empty", "no-name", "folder"])
def test_a_library_pointer_that_names_no_save_is_said(tmp_path, pointer, content, says):
    """B16: an empty `latest` (rank 0 killed while DeepSpeed wrote it) failed load_checkpoint(dir) as one naming a
    missing tag does, yet was passed in silence (`passed_over: []`). Every pointer file (DeepSpeed's latest,
    Megatron's tracker) that names no save is said the same way."""
    from nodeweave.entrypoint.recovery.checkpoints import scan

    if content is None:
        (tmp_path / pointer).mkdir()
    else:
        (tmp_path / pointer).write_text(content)
    said = [why for path, why in scan(str(tmp_path)).pointers if path.endswith(pointer)]
    assert said and says in said[0] and "the library's own resume reads it and would fail" in said[0], said


def test_the_resume_line_names_the_newer_saves_passed_over(tmp_path):
    """B14: node 0 resumed from an older save while newer, cut-off saves lay in the folder, and no log line said
    so (only --explain by hand did). The saves set aside are named in node 0's log, grouped by why."""
    torch = pytest.importorskip("torch")
    from nodeweave.entrypoint.recovery.setup import newest_checkpoint

    for step in (10, 20, 30):
        (tmp_path / f"global_step{step}").mkdir()
        torch.save({"dp_world_size": 1, "mp_world_size": 1, "global_steps": step, "module": {}},
                   str(tmp_path / f"global_step{step}" / "mp_rank_00_model_states.pt"))
    (tmp_path / "latest").write_text("global_step10")
    said = []
    path, step, _ = newest_checkpoint(str(tmp_path), said.append)
    assert path.endswith("global_step10"), (path, said)
    assert any(line.startswith("recovery: passed over global_step20, global_step30") for line in said), said


@pytest.mark.parametrize("argv, env", [([], {"NODE_RANK": "5"}), (["--node-rank", "5"], {}),
                                       ([], {"NODEWEAVE_NODE_RANK": "5"})], ids=["NODE_RANK", "flag", "NODEWEAVE"])
def test_a_hostfile_without_this_host_takes_the_rank_given(entrypoint, argv, env):
    """B18: a hostfile of names that are not this machine's was refused with "list it by name or address, or set
    NODE_RANK", and refused the same with NODE_RANK (or --node-rank) set. A rank given by hand is taken; the
    hostfile gives the count and the master."""
    with open("hf", "w") as handle:
        handle.write("".join(f"n{i} slots=1\n" for i in range(16)))
    code, out, err = entrypoint(["--explain", "--json", "--hostfile", "hf", *argv, "--", "train.py"], env)
    assert code == 0, err
    topology = json.loads(out)["topology"]
    assert (topology["node_rank"]["value"], topology["nnodes"]["value"]) == (5, "16"), topology


@pytest.mark.parametrize("early", [True, False], ids=["refusal-ended-it", "deadline"])
def test_nodes_still_arriving_when_a_refusal_ends_the_check_in_are_not_missing(early):
    """B4: node 5's typo'd count ended the check-in within a second, and every node read that nodes 2, 3, 4 and 6
    "did not check in before the deadline" (no deadline had passed; node 3 was itself connected). Nodes still on
    their way when a refusal ends the gathering are named as such and are not a problem; the one real cause stands
    alone. At the deadline they are missing, as before."""
    from nodeweave.entrypoint.checkin.verdict import Entry, judge

    own = Entry({"rank": 0, "hostname": "a", "nnodes": "8"}, seen="10.0.0.1", own=True)
    verdict = judge([own], 4, 4, "command", missing={}, reachability=False, early=early)
    refusing = [p["check"] for p in verdict["problems"] if p["severity"] == "refuse"]
    assert refusing == ([] if early else ["missing"]), verdict["problems"]
    if early:
        note, = [p for p in verdict["problems"] if p["check"] == "not in yet"]
        assert note["nodes"] == ["node 1", "node 2", "node 3"] and "no deadline passed" in note["says"], note


def test_status_says_who_trains_who_waits_and_who_is_not_in_yet():
    """B3, B21: `--status` called a waiting spare and a node left out `running` like the training nodes, with no
    generation, and node 0 gathering was `running` too, with no word of the nodes not in yet. Each waiting node
    says its role, the recovery book's generation and roles come along, and a gathering node 0 names the ranks it
    waits for and its deadline."""
    from nodeweave.entrypoint.checkin.exchange import Hub, Peer

    hub = Hub.__new__(Hub)
    hub.own_fp, hub.verdict, hub.live_status, hub.clock = {"rank": 0}, None, None, lambda: 100.0
    hub.peers = []
    for rank, role in ((1, "member"), (2, "spare")):
        peer = Peer(None, b"", 0.0)
        peer.fp, peer.seen, peer.role = {"rank": rank}, "", role
        hub.peers.append(peer)
    hub.gathering = (4, 160.0, None)
    answer = hub.status(whole=True)
    # a node in while node 0 gathers is "checked in" (its launcher waits for the verdict), and `waiting` counts the
    # nodes in and says whether it is a regather: the object node 0's /status.json carries too (walk12b B13, fix13a)
    assert [n["state"] for n in answer["nodes"]] == ["gathering", "checked in", "spare (waiting)"], answer["nodes"]
    assert answer["waiting"] == {"expected": 4, "checked_in": 3, "not_in": [3], "deadline_in_s": 60.0,
                                 "regather": False}, answer
    hub.verdict = {"rows": [], "recovery": {"generation": 3, "members": [0, 2], "spares": [], "left_out": {"1": 1}}}
    answer = hub.status(whole=True)
    assert answer["recovery"]["generation"] == 3 and "waiting" not in answer, answer
    assert answer["summary"]["states"] == {"running": 2, "spare (waiting)": 1}, answer["summary"]


def test_a_waiting_node_stopped_by_a_signal_tells_node_0(tmp_path):
    """B15: a spare (or a left-out node) stopped by SIGTERM (a `docker stop`) closed its link without a word, and
    node 0 said it "is gone: its connection closed without a report: its entrypoint was killed, or its node or
    network went away". It tells node 0 it was stopped, as a training node does; the job goes on."""
    import signal

    from recovery_harness import LocalJob

    job = LocalJob(tmp_path, "b15", env={"NODEWEAVE_EXCHANGE_ALLOW": "address", "NODEWEAVE_RECOVERY": "on",
                                         "NODEWEAVE_SPARES": "1"})
    procs = [job.node(rank, f"t{rank}") for rank in range(3)]
    try:
        job.wait_training(procs)  # both ranks train: the spare waits
        procs[2].send_signal(signal.SIGTERM)
        procs[2].wait(timeout=60)
    finally:
        job.release()
    outs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert procs[2].returncode == 143, outs[2]
    assert "node 2 (vm) (spare) was stopped: stopped by SIGTERM while it waited" in outs[0].replace(
        f"({os.uname().nodename})", "(vm)"), outs[0]
    assert "is gone" not in outs[0] and procs[0].returncode == 0 and procs[1].returncode == 0, outs


def test_the_checkpoint_folder_is_compared_as_the_ranks_save_into_it(tmp_path, monkeypatch):
    """B11: under recovery, node 1 started from a subfolder with `--checkpoint-dir ck` saved into <sub>/ck while
    node 0 scanned <w>/ck, and the check-in compared the folder as typed (`ck` = `ck`): no save was ever complete.
    The fault settings node 0 compares hold the folder as this node resolves it, so the check-in's own `faults`
    rule names the node whose folder differs."""
    from nodeweave.entrypoint.checkin.fingerprint import fault_settings
    from nodeweave.entrypoint.planning.settings import parse

    seen = []
    for folder in (tmp_path, tmp_path / "sub"):
        folder.mkdir(exist_ok=True)
        monkeypatch.chdir(folder)
        settings = parse(["--recovery", "on", "--spares", "1", "--checkpoint-dir", "ck", "--", "train.py"],
                         {"NODEWEAVE_NNODES": "2"})
        seen.append(fault_settings(settings)["checkpoint_dir"])
    assert seen == [str(tmp_path / "ck"), str(tmp_path / "sub" / "ck")], seen


@pytest.mark.parametrize("word, says", [("$SCRIPT", "holds $, which nothing expands here"),
                                        ("~/train.py", "holds ~, which nothing expands here"),
                                        ("train.py ", "ends in white space, which names another file")])
def test_nodeweave_run_tells_the_script_word_its_own_slip(tmp_path, word, says):
    """B17, the CLI's member: `nodeweave run -- "$SCRIPT"` reads the script word by the entrypoint's one rule."""
    from nodeweave.cli.habits.dashes import launcher_command
    from nodeweave.errors import UsageError

    with pytest.raises(UsageError) as refused:
        launcher_command([word], "torchrun", workspace=tmp_path)
    assert says in str(refused.value), str(refused.value)


@pytest.mark.parametrize("save", ["step-8", "step-3.pt"])
def test_a_scripts_own_pointer_naming_a_save_there_is_not_said(tmp_path, save):
    """B16's members that are fine: a script's own `latest` naming one of its saves there (examples/resilient_train.py
    writes `latest` = step-8 beside DCP folders, or step-3.pt beside torch.save files) names a save; only a pointer
    naming nothing there is said (the DCP resume test met `latest` said as "no save's name")."""
    from nodeweave.entrypoint.recovery.checkpoints import scan

    (tmp_path / save).mkdir() if not save.endswith(".pt") else (tmp_path / save).write_bytes(b"x")
    (tmp_path / "latest").write_text(save)
    assert [why for path, why in scan(str(tmp_path)).incomplete if path.endswith("latest")] == []
