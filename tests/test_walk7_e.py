"""The seventh walk, part B, rows B35..B49 (issue 43): each row's class, one test per class, each failing on the
code before it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import in_a_folder_with_train_py, in_process as run_cli, one_line
from team_folder import make_team
from free_ports import free_port_pair

REPO = Path(__file__).resolve().parents[1]
TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}


entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- B44: what the start refuses, --explain and validate refuse: recovery needs a supervised launcher ------------

@pytest.mark.parametrize("argv", [["--explain"], ["--explain", "--json"], []])
def test_recovery_with_the_command_launcher_is_refused_by_the_plan_as_by_the_start(entrypoint, argv):
    env = dict(TWO_NODES, NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1", NODEWEAVE_LAUNCHER="command")
    code, out, err = entrypoint([*argv, "--", "python3", "train.py"], env)
    assert code == 2, (out, err)
    line = one_line(err)
    assert "NODEWEAVE_LAUNCHER" in line and "'command' with NODEWEAVE_RECOVERY=on" in line
    assert "accepted: NODEWEAVE_LAUNCHER torchrun, deepspeed or accelerate" in line
    assert "launcher.exchange on" not in line  # the old remedy: the exchange was on all along


def test_validate_refuses_recovery_with_the_command_launcher(capsys, team):
    (team / "s.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\n"
                                 "launcher: {type: command, script: train.py}\n"
                                 "recovery: {enabled: true, spares: 1, checkpoint_dir: checkpoints}\n")
    code, _, err = run_cli(capsys, "validate", "--spec", "s.yaml")
    assert code == 2
    line = one_line(err)
    assert "s.yaml:4: launcher.type: 'command' with recovery.enabled: true" in line
    assert "accepted: launcher.type torchrun, deepspeed or accelerate" in line


# -- B48: every refusal a node makes before its check-in reaches node 0 ------------------------------------------



def _two_nodes_on_loopback(tmp_path, node_1_env, node_1_script="train.py", job="live7e"):
    """Node 0 plain and node 1 with ``node_1_env``, both real entrypoints on loopback: (node 0's exit code, its
    stderr, node 1's exit code, its stderr, node 0's seconds)."""
    import os
    import subprocess
    import sys
    import time

    import cli_run
    from cli_run import ENTRYPOINT

    (tmp_path / "train.py").write_text("print('hi')\n")
    port = free_port_pair()
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO / "src"), "NODEWEAVE_NNODES": "2",
            "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_MASTER_PORT": str(port), "NODEWEAVE_METRICS": "off",
            "NODEWEAVE_JOB_ID": job, "NODEWEAVE_WAIT_TIMEOUT": "90", "NODEWEAVE_LAUNCHER": "command"}
    folders = []
    for rank in (0, 1):
        (tmp_path / f"tmp{rank}").mkdir()
        folders.append(dict(base, NODE_RANK=str(rank), TMPDIR=str(tmp_path / f"tmp{rank}")))
    began = time.monotonic()
    node_0 = cli_run.popen([*ENTRYPOINT, "--", sys.executable, "train.py"], cwd=tmp_path, env=folders[0],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        node_1 = cli_run.run([*ENTRYPOINT, "--", sys.executable, node_1_script], cwd=tmp_path,
                             env=dict(folders[1], **node_1_env), capture_output=True, text=True, timeout=120)
        _, err_0 = node_0.communicate(timeout=60)
    finally:
        node_0.kill()
    return node_0.returncode, err_0, node_1.returncode, node_1.stderr, time.monotonic() - began


@pytest.mark.parametrize("node_1_env,script,words", [
    ({"NODEWEAVE_STALL_TIMEOUT": "30"}, "train.py", "stall_warn 60 s is above stall_timeout 30 s"),  # a cross-check
    ({"NODEWEAVE_RECOVERY_MAX_RESTARTS": "3"}, "train.py", "NODEWEAVE_RECOVERY_MAX_RESTARTS"),  # a shared rule
    ({"NODEWEAVE_STALL_TIMEOUT": "soon"}, "train.py", "soon"),  # a value refused as it is read
    ({}, "missing.py", "missing.py"),  # a start step: the script checked once the node is planned
])
def test_a_node_refusing_its_own_start_tells_node_0_which_ends_at_once_naming_it(tmp_path, node_1_env, script,
                                                                                words):
    code_0, err_0, code_1, err_1, took = _two_nodes_on_loopback(tmp_path, node_1_env, script)
    assert code_1 == 2, err_1
    assert "told node 0" in err_1, err_1
    assert code_0 == 3, err_0
    assert "refused-start" in err_0 and words in err_0, err_0
    assert "did not check in before the deadline" not in err_0
    assert took < 60  # the deadline is 90 s: node 0 was told, it did not wait it out


# -- B49: the check-in compares the fault settings every node must share, as it compares the node count ----------

def _fingerprint(env, argv=("--", "train.py")):
    from nodeweave.entrypoint.checkin.fingerprint import fault_settings
    from nodeweave.entrypoint.planning.settings import parse

    return {"rank": int(env.get("NODE_RANK", 0)), "nnodes": 2, "launcher": "torchrun",
            "faults": fault_settings(parse(list(argv), dict(TWO_NODES, **env)))}


@pytest.mark.parametrize("node_0,node_1,words", [
    ({"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_STALL_TIMEOUT": "900"}, {"NODEWEAVE_STALL_TIMEOUT": "120"},
     "recovery off (node 0: on); stall_timeout 120 (node 0: 900)"),
    ({"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1"}, {"NODEWEAVE_RECOVERY": "on"}, "spares 0 (node 0: 1)"),
    ({"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_CHECKPOINT_DIR": "/data/ck"}, {"NODEWEAVE_RECOVERY": "on"},
     "checkpoint_dir - (node 0: /data/ck)"),  # an absolute folder: a relative one is compared as resolved (walk11b B11)
    ({"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_STRAGGLER_IS_FAULT": "on"}, {"NODEWEAVE_RECOVERY": "on"},
     "straggler_fault 0 (node 0: 10); straggler_is_fault off (node 0: on)"),
    ({"NODEWEAVE_STALL_WARN": "30"}, {}, "stall_warn 60 (node 0: 30)"),
])
def test_the_check_in_refuses_nodes_that_would_act_otherwise_on_a_fault(node_0, node_1, words):
    from nodeweave.entrypoint.checkin.verdict import Entry, judge

    entries = [Entry(_fingerprint(dict(node_0, NODE_RANK="0")), own=True),
               Entry(_fingerprint(dict(node_1, NODE_RANK="1")))]
    verdict = judge(entries, 2, 2, "torchrun")
    assert verdict["decision"] == "refuse"
    (problem,) = [p for p in verdict["problems"] if p["check"] == "faults"]
    assert list(problem["details"].values()) == [words]


def test_the_same_fault_settings_however_given_start():
    from nodeweave.entrypoint.checkin.verdict import Entry, judge

    same = {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_STRAGGLER_IS_FAULT": "on"}
    entries = [Entry(_fingerprint(dict(same, NODE_RANK="0")), own=True),
               Entry(_fingerprint(dict(same, NODE_RANK="1", NODEWEAVE_STRAGGLER_FAULT="10")))]
    assert [p["check"] for p in judge(entries, 2, 2, "torchrun", reachability=False)["problems"]] == []


def test_live_nodes_with_other_stall_settings_are_refused_at_check_in(tmp_path):
    code_0, err_0, code_1, err_1, took = _two_nodes_on_loopback(tmp_path, {"NODEWEAVE_STALL_TIMEOUT": "120"},
                                                                job="live7u")
    assert (code_0, code_1) == (3, 3), (err_0, err_1)
    for err in (err_0, err_1):
        assert "refuse faults: nodes would act otherwise on a fault" in err
        assert "stall_timeout 120 (node 0: 600)" in err


# -- B46: a rank's node is the identity of the node it runs on, as in the nodes table and the book ---------------

def _rank_view(rank, node):
    return {"rank": rank, "local_rank": 0, "node": node, "host": f"h{node}", "seq": 5, "state": "S",
            "inside": False, "since_s": 0.1, "inside_s": 0.0, "outside_s": 1.0}


def test_a_spares_ranks_are_shown_on_the_spare_and_its_straggler_fault_leaves_the_spare_out():
    """After a recovery the spare (identity 2) trains as the generation's node 1: its heartbeat carries views whose
    launch node rank is 1. Before, /status.json, /metrics and the stall report put its ranks on node 1, the
    left-out node, and a straggler fault it caused was read back through the book (the right node, by luck of
    a second numbering)."""
    from loopback_hub import started_watches
    from nodeweave.entrypoint.news import Cause, News
    from nodeweave.entrypoint.recovery import decide
    from nodeweave.entrypoint.recovery.book import Book
    from nodeweave.entrypoint.recovery.hub import HubSide
    import time

    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        spare = next(p for p in cluster.hub.peers if p.fp["rank"] == 2)
        left_out = next(p for p in cluster.hub.peers if p.fp["rank"] == 1)
        spare.ranks = [_rank_view(1, node=1)]  # generation 1: members (0, 2), the spare is the launch's node 1
        left_out.ranks = []
        views = hub_watch.views([_rank_view(0, node=0)])
        assert [(v["rank"], v["node"]) for v in views] == [(0, 0), (1, 2)]
        hub_watch.news = News()
        fault = {"node": views[1]["node"], "host": "h2", "ranks": [1], "gap": 0.5, "checks": 10}
        assert HubSide._take_straggler(hub_watch, fault) is True
        assert launchers[0].stopped.wait(5), logs
    finally:
        cluster.close()
    [straggler] = hub_watch.news.drain()
    assert straggler.cause is Cause.STRAGGLER and straggler.node == 2
    assert decide.judged([straggler], Book(members=(0, 2)), time.time()).node == 2


# -- B41: the script is told where node 0 looks, and the example saves there --------------------------------------

def test_the_page_and_the_example_save_where_recovery_looks():
    page = (REPO / "docs" / "recovery.md").read_text()
    seen = page.split("## What the training script sees", 1)[1].split("\n## ", 1)[0]
    assert "| `NODEWEAVE_CHECKPOINT_DIR` |" in seen and "Save there" in seen
    assert 'ckpt_dir = os.environ["NODEWEAVE_CHECKPOINT_DIR"]' in seen
    import ast

    tree = ast.parse((REPO / "examples" / "resilient_train.py").read_text())
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "add_argument" and node.args
                and getattr(node.args[0], "value", None) == "--ckpt-dir")
    default = next(k.value for k in call.keywords if k.arg == "default")
    namespace = {"os": type("os", (), {"environ": {"NODEWEAVE_CHECKPOINT_DIR": "ckpt"}})}
    assert eval(compile(ast.Expression(default), "default", "eval"), namespace) == "ckpt"
    namespace["os"].environ = {}
    assert eval(compile(ast.Expression(default), "default", "eval"), namespace) == "checkpoints"


# -- B42: the stall stop is not the script's own timeout, and the page and the plan say so -------------------------

def test_the_stall_stop_is_not_claimed_to_be_the_scripts_own_timeout(entrypoint):
    page = (REPO / "docs" / "stalls.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| `launcher.stall_timeout`"))
    assert "NCCL's own default collective timeout: the job ends no later than it would have" not in row
    assert "gloo" in row and "init_process_group" in row
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], TWO_NODES)
    assert code == 0, err
    meaning = json.loads(out)["faults"]["stall_timeout"]["meaning"]
    assert "init_process_group timeout" in meaning and "raise stall_timeout" in meaning


# -- B36: a script that is there but no file is named for what it is, not sent to be copied there -----------------

@pytest.mark.parametrize("make,kind", [(lambda p: p.mkdir(), "a folder"), (lambda p: __import__("os").mkfifo(p),
                                                                          "a named pipe")])
@pytest.mark.parametrize("argv", [["--explain"], []])
def test_a_script_that_is_a_folder_or_a_pipe_is_named_so(entrypoint, tmp_path, make, kind, argv):
    make(tmp_path / "odd.py")
    code, out, err = entrypoint([*argv, "--", "odd.py"], dict(TWO_NODES, NODEWEAVE_EXCHANGE="off"))
    assert code == 2
    text = out + err
    assert f"script 'odd.py' in the working directory {tmp_path} is {kind}, not a file" in text
    assert "accepted: a Python file" in text and "copy it there" not in text


# -- B37: two sources of the one secret, and a token file every user can read, are named -------------------------

def test_two_sources_of_the_job_secret_and_a_world_readable_token_file_are_warned(entrypoint, tmp_path):
    import os

    token = tmp_path / "tok"
    token.write_text("secret123\n")
    os.chmod(token, 0o644)
    live = dict(TWO_NODES, NODEWEAVE_JOB_TOKEN_FILE=str(token))

    def warnings(env):
        code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
        assert code == 0, err
        return " | ".join(json.loads(out)["warnings"])

    assert "are both set: the file " + f"{token} is ignored" in warnings(dict(live, NODEWEAVE_JOB_TOKEN="abc"))
    assert "is readable by every user of this machine" in warnings(live)
    os.chmod(token, 0o600)
    assert "both set" not in warnings(live) and "every user" not in warnings(live)


# -- B45: the line that ends a generation says what was decided: no "starting generation" when none starts ---------

def test_the_jobs_own_error_is_not_announced_as_a_next_generation(tmp_path):
    pytest.importorskip("torch")
    from recovery_harness import finish, start
    from nodeweave.entrypoint.errors import EXIT_JOB_ERROR

    run = ["--steps", "30", "--interval", "0.2", "--save-every", "5", "--fault", "raise", "--fault-node", "*",
           "--fault-step", "4"]
    started = start(tmp_path, run, nodes=2, spares=0)
    assert finish(started) == [EXIT_JOB_ERROR] * 2
    text = started[0].text()
    assert "recovery: generation 0 ended: the script raised " in text, text
    assert "the job's own error, the same on every node that raised one; not restarting" in text, text
    assert "starting generation" not in text, text


# -- B35: under recovery a stop ends a generation: no exit code of the no-recovery ending is announced ------------

@pytest.mark.parametrize("recovery", [True, False])
def test_a_stop_under_recovery_says_recovery_follows_not_an_exit_code(recovery):
    from loopback_hub import started_watches
    from nodeweave.entrypoint.news import News
    from nodeweave.entrypoint.recovery.hub import HubSide

    cluster, hub_watch, links, launchers, logs = started_watches(2)
    try:
        hub_watch.news, hub_watch.recovery = News(), recovery
        fault = {"node": 1, "host": "h1", "ranks": [1], "gap": 3.96, "checks": 3}
        assert HubSide._take_straggler(hub_watch, fault) is True
        assert launchers[0].stopped.wait(5), logs
    finally:
        cluster.close()
    [line] = [line for line in logs[0] if "stopping this node's launcher" in line]
    assert line.startswith("node 1 (h1) failed: rank(s) 1 named a straggler 3 checks in a row"), line
    if recovery:
        assert "for recovery (node 0 decides the next generation)" in line and "exit 5" not in line, line
    else:
        assert "(exit 5: another node failed)" in line, line


# -- B47: a glob nothing expands is refused where a name or a folder is read; an empty list's example is no '' ---

@pytest.mark.parametrize("env,words", [
    ({"NODEWEAVE_EXCLUDE_HCAS": "*"}, "'*' holds a glob"),
    ({"NODEWEAVE_INTERFACES": "eth*"}, "'eth*' holds a glob"),
    ({"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_CHECKPOINT_DIR": "checkpoints/*"}, "'checkpoints/*' holds a glob (*)"),
    ({"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_CHECKPOINT_DIR": "ck[12]"}, "'ck[12]' holds a glob ([)"),
    ({"NODEWEAVE_EXCLUDE_HCAS": ","}, "or leave the variable unset (none)"),
])
def test_a_glob_or_an_empty_list_is_refused_with_a_usable_example(entrypoint, env, words):
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(TWO_NODES, **env))
    assert code == 2
    line = one_line(err)
    assert words in line and "e.g. ''" not in line, line


def test_validate_refuses_a_glob_as_the_checkpoint_folder(capsys, team):
    (team / "s.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
                                 "recovery: {enabled: true, spares: 1, checkpoint_dir: 'checkpoints/*'}\n")
    code, _, err = run_cli(capsys, "validate", "--spec", "s.yaml")
    assert code == 2 and "recovery.checkpoint_dir: 'checkpoints/*' holds a glob (*)" in one_line(err)


# -- B39: a metrics port below 1024 is noted by validate and by the node's plan (one shared note) -----------------

def test_a_privileged_metrics_port_is_noted_by_validate_and_the_plan(capsys, team, entrypoint):
    (team / "m.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
                                 "metrics: {port: 22}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "m.yaml")
    assert code == 0 and "metrics.port: 22 is below 1024" in out + err
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(TWO_NODES, NODEWEAVE_METRICS_PORT="80"))
    assert code == 0 and "NODEWEAVE_METRICS_PORT: 80 is below 1024" in out + err
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(TWO_NODES, NODEWEAVE_METRICS_PORT="9000"))
    assert "below 1024" not in out + err


# -- B38: a checkpoint folder on a volume every node mounts read-only is refused by validate ----------------------

def _checkpoints_on_a_volume(team, tmp_path, checkpoint_dir, volume_extra=""):
    """v.yaml in ``team``: recovery with its checkpoint_dir on volume d (``tmp_path``/data mounted at /data)."""
    (tmp_path / "data").mkdir()
    (team / "v.yaml").write_text(
        "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
        f"volumes: [{{name: d, host_path: {tmp_path / 'data'}, path: /data{volume_extra}}}]\n"
        f"recovery: {{enabled: true, spares: 1, checkpoint_dir: {checkpoint_dir}}}\n")


@pytest.mark.parametrize("read_only,code", [("true", 2), ("false", 0)])
def test_a_checkpoint_folder_on_a_read_only_volume_is_refused(capsys, team, tmp_path, read_only, code):
    _checkpoints_on_a_volume(team, tmp_path, "/data/ckpt", f", read_only: {read_only}")
    got, out, err = run_cli(capsys, "validate", "--spec", "v.yaml")
    assert got == code, out + err
    if code:
        assert "recovery.checkpoint_dir: /data/ckpt is on volume d (/data), which every node mounts read-only" \
            in one_line(err)


# -- B43: a rank's process state is said in words in /status.json (what top and the dashboard draw) ---------------

def test_the_live_picture_says_a_ranks_process_state_in_words(tmp_path):
    from test_metrics_collect import Watch, live_of
    from nodeweave.entrypoint.metrics.collect import status

    watch = Watch(2, 2)
    states = ["S", "T", "D", "gone"]
    for view, state in zip(watch.stall.last_views, states):
        view["state"] = state
    picture = status(live_of(tmp_path, watch))
    assert [r["state"] for r in picture["ranks"]] == ["sleeping", "stopped", "in uninterruptible I/O", "gone"]


# -- B40: a scheduler's count without room for the spares is refused at once, as two counts that disagree are ------

SLURM = {"SLURM_JOB_ID": "99", "SLURM_NODEID": "0", "NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on",
         "NODEWEAVE_SPARES": "1"}


@pytest.mark.parametrize("allocated,code", [(2, 3), (3, 0)])
def test_an_allocation_without_room_for_the_spares_is_refused_before_any_wait(entrypoint, allocated, code):
    nodelist = f"gpu[01-0{allocated}]"
    env = dict(SLURM, SLURM_NNODES=str(allocated), SLURM_JOB_NODELIST=nodelist, SLURM_STEP_NODELIST=nodelist)
    got, out, err = entrypoint(["--explain", "--", "train.py"], env)
    assert got == code, out + err
    if code:
        assert ("node count sources disagree: SLURM_NNODES=2 but recovery's containers are 3 (NODEWEAVE_NNODES 2 "
                "training + NODEWEAVE_SPARES 1 spare(s))") in out + err


def test_the_launchers_own_restarts_under_recovery_are_said_to_be_dropped(entrypoint):
    env = dict(TWO_NODES, NODEWEAVE_RECOVERY="on", NODEWEAVE_MAX_RESTARTS="3")
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    assert code == 0, err
    plan = json.loads(out)
    assert "--max-restarts" not in plan["launch"]["argv"]
    assert any("max restarts 3 (NODEWEAVE_MAX_RESTARTS) is not passed to torchrun under recovery" in w
               for w in plan["warnings"]), plan["warnings"]


def test_a_volumes_root_as_the_checkpoint_folder_is_noted(capsys, team, tmp_path):
    _checkpoints_on_a_volume(team, tmp_path, "/data")
    code, out, err = run_cli(capsys, "validate", "--spec", "v.yaml")
    assert code == 0 and "recovery.checkpoint_dir: /data is the root of volume d" in out + err
