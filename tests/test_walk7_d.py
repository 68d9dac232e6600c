"""The seventh walk, part B, rows B16..B34 (walk7b-report.md): one test per class of failure, each failing on the
code before its fix."""

import json
import os
import time

import pytest

import cli_run

from recovery_harness import finish, resumed, start

torch = pytest.importorskip("torch")


# --- B30: a checkpoint folder already holding another job's saves ---------------------------------------------------

def _old_save(folder, step, age_s=600):
    """A complete save of an earlier run, written ``age_s`` ago."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"step-{step}.pt"
    torch.save({"step": step, "state": torch.full((4,), 99.0)}, path)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_the_finder_hands_out_only_saves_written_since_the_job_started(tmp_path):
    """A save not newer than the job's start line is passed over in one clause; one written since (or a name
    written again) is handed out."""
    from nodeweave.entrypoint.recovery.checkpoints import already_saved
    from nodeweave.entrypoint.recovery.setup import newest_checkpoint

    folder = tmp_path / "checkpoints"
    for step in (10, 20, 30, 70):
        _old_save(folder, step)
    saved = already_saved(folder)
    assert (saved.count, saved.step) == (4, 70)
    lines = []
    assert newest_checkpoint(str(folder), lines.append, written_after=saved.newest) == (None, None, None)
    torch.save({"step": 20}, folder / "step-20.pt")  # this job saves step 20 again, over the old one
    path, step, _ = newest_checkpoint(str(folder), lines.append, written_after=saved.newest)
    assert (path, step) == (str(folder / "step-20.pt"), 20)
    assert lines[-1] == ("recovery: passed over 2 save(s) written before this job started (step-30.pt .. "
                         "step-70.pt, named up to step 70; complete or cut off alike, not judged): another run's, "
                         "never handed out"), lines  # left11a B15
    assert newest_checkpoint(str(folder), lines.append)[1] == 70  # no line given (an older book): as before


def test_the_job_start_line_travels_in_the_book_and_the_hello(tmp_path):
    """Node 0 come back to a running job learns the line from the book the others carry."""
    from nodeweave.entrypoint.recovery.book import Book
    from nodeweave.entrypoint.recovery.carried import carried, kept
    from nodeweave.entrypoint.recovery.decide import Limits, first

    book = first({0, 1, 2}, Limits(2, 2, 5, 3), None, saves_before=1234.5)
    assert Book.from_json(json.loads(json.dumps(book.to_json()))).saves_before == 1234.5
    assert Book.from_json(kept(carried(book.to_json(public=True)))).saves_before == 1234.5


def test_explain_says_the_saves_already_there_are_never_handed_out(tmp_path):
    import subprocess
    import sys

    _old_save(tmp_path / "checkpoints", 70)
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", NODEWEAVE_RECOVERY="on",
               NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR="checkpoints")
    out = cli_run.entrypoint("--explain", "--json", "--", "t.py",
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    line = json.loads(out.stdout)["faults"]["checkpoint_dir"]["meaning"]
    assert "already holds 1 save(s) from before this job; the newest complete at step 70 (step-70.pt) (the newest " \
           "written 10 min ago): node 0 never hands them out" in line, line  # walk10 B15, left11a B15


def test_a_job_over_another_jobs_saves_resumes_from_its_own(tmp_path):
    """Walk7 B30, live: the folder holds an earlier run's step-100.pt; this job crashes at step 12 after saving
    step-5 and step-10: generation 1 resumes from this job's step-10, never the earlier run's step 100."""
    _old_save(tmp_path / "checkpoints", 100)
    nodes = start(tmp_path, ["--steps", "20", "--interval", "0.2", "--save-every", "5", "--fault", "exit",
                             "--fault-node", "1", "--fault-step", "12"], spares=1)
    codes = finish(nodes)
    assert codes == [0, 0, 0], [node.text() for node in nodes]
    assert resumed(nodes) == [(1, str(tmp_path / "checkpoints" / "step-10.pt"), 10)]
    log = nodes[0].text()
    assert "already holds 1 save(s) from before this job; the newest complete at step 100" in log, log
    assert "passed over 1 save(s) written before this job started (step-100.pt, named up to step 100;" in log, log


# --- B18: what the entrypoint sets for its ranks, already in its own environment ------------------------------------

@pytest.mark.parametrize("recovery", ["on", "off"])
def test_a_resume_path_left_in_the_environment_never_reaches_the_ranks(tmp_path, recovery):
    """Walk7 B18: NODEWEAVE_RESUME_FROM (and the other variables the entrypoint sets for its ranks) inherited from
    the shell is dropped from the launch, with one warning each; generation 0 resumes from nothing node 0 did not
    hand out."""
    import subprocess
    import sys

    script = tmp_path / "envp.py"
    script.write_text("import os\nprint('SEEN', os.environ.get('NODEWEAVE_RESUME_FROM'), "
                      "os.environ.get('NODEWEAVE_RESTART_COUNT'), os.environ.get('NODEWEAVE_RANKWATCH_PID'))\n")
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="1", NODEWEAVE_RECOVERY=recovery,
               NODEWEAVE_LAUNCHER="command", NODEWEAVE_RESUME_FROM="/old/job/ckpt_9.pt",
               NODEWEAVE_RESTART_COUNT="3", NODEWEAVE_RANKWATCH_PID="1", NODEWEAVE_STALL_WARN="0")
    command = [sys.executable, str(script)]
    if recovery == "on":  # recovery needs a supervised launcher (walk7 B44: a plain command is refused with it)
        env["NODEWEAVE_SPARES"] = "0"
        env["NODEWEAVE_NNODES"] = "2"
        env["NODEWEAVE_LAUNCHER"] = "torchrun"
        command = [script.name]
    explain = cli_run.entrypoint("--explain", "--json", "--", *command,
                             cwd=tmp_path, env=dict(env, MASTER_ADDR="10.0.0.1"), capture_output=True, text=True)
    warnings = [w["message"] if isinstance(w, dict) else w for w in json.loads(explain.stdout)["warnings"]]
    assert any(w.startswith("NODEWEAVE_RESUME_FROM=/old/job/ckpt_9.pt in this node's environment is nodeweave's "
                            "to set for the ranks") and "not passed to them" in w for w in warnings), warnings
    if recovery == "off":  # a single node runs the command: what it sees is what any rank would
        run = cli_run.entrypoint("--", sys.executable, str(script),
                             cwd=tmp_path, env=dict(env, NODEWEAVE_NNODES="1"), capture_output=True, text=True,
                             timeout=120)
        assert "SEEN None None None" in run.stdout, run.stdout + run.stderr


# --- B17: the spec's largest recovery job, as every node reads it ---------------------------------------------------

@pytest.mark.parametrize("rank,kind", [(0, "training node"), (2047, "training node"), (2048, "spare"), (2111, "spare")])
def test_every_node_of_the_specs_largest_recovery_job_plans_its_role(tmp_path, rank, kind):
    """Walk7 B17: nodes: 2048 (the spec's most) with recovery.spares: 64 (within its range) is 2112 containers;
    every node refused 'node count must be at most 2048, got 2112' before. A training count past 2048 is still
    refused, naming what is accepted."""
    import subprocess
    import sys

    env = dict(os.environ, NODE_RANK=str(rank), NODEWEAVE_NNODES="2048", MASTER_ADDR="10.0.0.1",
               NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="64")
    (tmp_path / "t.py").write_text("")
    argv = [*cli_run.ENTRYPOINT, "--explain", "--json", "--", "t.py"]
    out = cli_run.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    plan = json.loads(out.stdout)
    assert out.returncode == 0 and not plan["errors"], plan["errors"]
    assert plan["role"]["kind"] == kind, plan["role"]
    out = cli_run.run(argv, cwd=tmp_path, env=dict(env, NODEWEAVE_NNODES="2049"), capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert ("node count must be at most 2048, got '2049' (from NODEWEAVE_NNODES); accepted: N (e.g. 2) or MIN:MAX "
            "with MIN <= MAX (e.g. 2:4), whole numbers from 1 to 2048") in out.stdout + out.stderr


# --- B16: top of a large job ------------------------------------------------------------------------------------------

def _big_live(nodes, per_node):
    live = {"schema": "nodeweave.live/1", "job": "big", "book": {}, "verdicts": {},
            "nodes": [{"node": n, "host": f"gpu{n:05d}", "state": "running", "role": "member",
                       "heartbeat_age_s": 0.5} for n in range(nodes)],
            "ranks": [{"node": n, "rank": n * per_node + i, "seq": 1000, "state": "S", "collectives_per_s": 3.0,
                       "inside_s": 1.0, "outside_s": 10.0, "straggler_ratio": None}
                      for n in range(nodes) for i in range(per_node)]}
    live["nodes"][4321]["heartbeat_age_s"] = 30.0  # the node worth a look
    live["ranks"][777]["straggler_ratio"] = 1.8    # and the rank
    return live


def test_top_draws_a_large_job_as_a_summary_within_its_interval():
    """Walk7 B16: 8,192 nodes x 8 ranks drew 73,740 lines in 111 s (the redraw is every 2 s); now the counts by
    state and the 16 rows most worth a look, the late node and the straggler among them; --all draws every row."""
    import io

    from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

    from nodeweave.cluster.top import picture

    live = _big_live(8192, 8)
    out = io.StringIO()
    started = time.monotonic()
    Console(file=out, width=160).print(picture(live))
    took = time.monotonic() - started
    text = out.getvalue()
    assert len(text.splitlines()) < 60 and took < 5, (len(text.splitlines()), took)
    assert "nodes: 8192 (running 8192); the 16 most worth a look of 8192, --all for every row" in text, text
    assert "gpu04321" in text and "1.80x" in text, text
    small = _big_live(4400, 1)
    out = io.StringIO()
    Console(file=out, width=160).print(picture({**small, "nodes": small["nodes"][:40], "ranks": small["ranks"][:40]},
                                               everything=False))
    assert "most worth a look" not in out.getvalue() and out.getvalue().count("│ running") == 40
    out = io.StringIO()
    Console(file=out, width=160).print(picture(_big_live(4400, 1), everything=True))
    assert out.getvalue().count("gpu0") >= 4400


# --- B20: settings that do nothing together: the no-progress brake above the restart budget --------------------------

def test_a_brake_above_the_restart_budget_is_refused_by_the_spec_and_the_node(tmp_path):
    """Walk7 B20: max_restarts 2 with no_progress_restarts 9 passed both; the budget (exit 8) always ends the job
    before the brake (exit 9) could act. A brake within the budget, 0, or the default brake stay accepted (the
    default's row says it never acts)."""
    import subprocess
    import sys

    (tmp_path / "t.py").write_text("")
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", NODEWEAVE_RECOVERY="on",
               NODEWEAVE_RECOVERY_MAX_RESTARTS="2")
    argv = [*cli_run.ENTRYPOINT, "--explain", "--json", "--", "t.py"]

    def explain(**more):
        return cli_run.run(argv, cwd=tmp_path, env=dict(env, **more), capture_output=True, text=True)

    out = explain(NODEWEAVE_NO_PROGRESS_RESTARTS="9")
    assert out.returncode == 2 and "NODEWEAVE_NO_PROGRESS_RESTARTS: 9 is above NODEWEAVE_RECOVERY_MAX_RESTARTS 2: " \
        "the restart budget ends the job (exit 8) at restart 3" in out.stdout + out.stderr, out.stdout + out.stderr
    for fine in ("2", "0"):
        assert explain(NODEWEAVE_NO_PROGRESS_RESTARTS=fine).returncode == 0
    default = json.loads(explain().stdout)["faults"]["no_progress_restarts"]
    assert default["value"] == 3 and default["meaning"].startswith("never acts: the restart budget of 2"), default
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text("name: team\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {type: torchrun, "
                    "script: t.py}\nrecovery: {enabled: true, max_restarts: 2, no_progress_restarts: 9}\n")
    out = cli_run.nodeweave("validate", "--spec", str(spec), cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "recovery.no_progress_restarts: 9 is above recovery.max_restarts 2" in out.stderr, \
        out.stderr


# --- B19 (judged: already right here): the misspellings that lose a spare or every resume are named ---------------

@pytest.mark.parametrize("name,meant", [("NODEWEAVE_SPARE", "NODEWEAVE_SPARES"),
                                        ("NODEWEAVE_CHECKPOINTS_DIR", "NODEWEAVE_CHECKPOINT_DIR"),
                                        ("NODEWEAVE_CHECKPOINT", "NODEWEAVE_CHECKPOINT_DIR")])
def test_a_misspelt_recovery_variable_gets_did_you_mean(name, meant):
    """Walk7 B19 replayed: each is warned in --explain's Warnings section (after Faults); kept as a pin."""
    from nodeweave.entrypoint.planning.variables import unknown_lines

    assert unknown_lines({name: "1"}) == [f"{name} is not a variable nodeweave reads, so it is ignored (did you mean "
                                          f"{meant}?)"]


# --- B21: a whole-number NCCL variable NCCL cannot read a number from -------------------------------------------------

def _policy_plan(fixture, **env):
    from pathlib import Path

    from nodeweave.entrypoint import make_plan

    root = Path(__file__).parent / "fixtures" / "synthetic" / fixture
    return make_plan(["--", "train.py"], env=dict(env, NODEWEAVE_NNODES="4", NODEWEAVE_SERVICE="llama"),
                     sysroot=str(root))


def _said(plan):
    return [str(getattr(w, "message", w)) for w in plan.warnings]


def test_a_numeric_nccl_variable_is_read_as_nccl_reads_it():
    """Walk7 B21: NCCL_IB_GID_INDEX=abc (or empty) was kept without a word, NCCL then using its default GID;
    NCCL_IB_DISABLE=yes was warned as 'falls back to TCP sockets', though NCCL ignores 'yes' and keeps IB on.
    Values are read as NCCL's strtoll reads them: ' 3' and '0x3' are 3."""
    from nodeweave.entrypoint.planning.rules import nccl_number

    assert [nccl_number(v) for v in ("3", " 3", "0x3", "010", "3abc", "-1", "abc", "yes", "", " ")] == \
        [3, 3, 3, 8, 3, -1, None, None, None, None]
    said = _said(_policy_plan("sts-h100-roce", NCCL_IB_GID_INDEX="abc"))
    assert any(w.startswith("NCCL_IB_GID_INDEX='abc' is not a number: NCCL ignores it") and "at 3)" in w
               for w in said), said
    said = _said(_policy_plan("sts-h100-roce", NCCL_IB_GID_INDEX=""))
    assert any(w.startswith("NCCL_IB_GID_INDEX is set but empty: NCCL reads it as unset") for w in said), said
    assert not any("NCCL_IB_GID_INDEX" in w for w in _said(_policy_plan("sts-h100-roce", NCCL_IB_GID_INDEX=" 3")))
    said = _said(_policy_plan("sts-h100-roce", NCCL_IB_DISABLE="yes"))
    assert not any("falls back to TCP" in w for w in said), said
    assert any(w.startswith("NCCL_IB_DISABLE='yes' is not a number") and "InfiniBand/RoCE on" in w for w in said)
    assert any("NCCL_IB_DISABLE=1 with ACTIVE RDMA ports" in w
               for w in _said(_policy_plan("sts-h100-roce", NCCL_IB_DISABLE="1")))


# --- B22: an HCA exclusion that excludes nothing ----------------------------------------------------------------------

def test_an_hca_exclusion_that_excludes_nothing_is_said():
    """Walk7 B22: NODEWEAVE_EXCLUDE_HCAS naming a device or port this node lacks, or contradicted by the user's
    own NCCL_IB_HCA, passed without a word while NCCL used the port meant to be excluded."""
    def said(**env):
        from nodeweave.entrypoint import make_plan
        from pathlib import Path

        root = Path(__file__).parent / "fixtures" / "synthetic" / "hgx-h100"
        plan = make_plan(["--", "train.py"], env=dict(env, NNODES="2", NODE_RANK="1", MASTER_ADDR="hgx-a00"),
                         sysroot=str(root))
        return [str(getattr(w, "message", w)) for w in plan.warnings if "exclu" in str(getattr(w, "message", w))]

    assert said(NODEWEAVE_EXCLUDE_HCAS="mlx5_8") == []  # the storage port: excluded, nothing to say
    [line] = said(NODEWEAVE_EXCLUDE_HCAS="mlx5_12")
    assert line.startswith("NODEWEAVE_EXCLUDE_HCAS: mlx5_12 is not an RDMA device here (mlx5_0, mlx5_1, ") and \
        line.endswith("): it excludes nothing"), line
    assert said(NODEWEAVE_EXCLUDE_HCAS="mlx5_8:2")[0].startswith(
        "NODEWEAVE_EXCLUDE_HCAS: mlx5_8:2 is not an RDMA port here (mlx5_0:1, ")
    [line] = said(NODEWEAVE_EXCLUDE_HCAS="mlx5_8", NCCL_IB_HCA="mlx5")
    assert line.startswith("NCCL_IB_HCA=mlx5 includes mlx5_8:1, which NODEWEAVE_EXCLUDE_HCAS excludes: NCCL reads "
                           "only NCCL_IB_HCA"), line
    assert said(NODEWEAVE_EXCLUDE_HCAS="mlx5_8", NCCL_IB_HCA="^=mlx5_8") == []
    assert said(NODEWEAVE_EXCLUDE_HCAS="mlx5_8", NCCL_IB_HCA="=mlx5_0,mlx5_1") == []


# --- B23, B24: *_VISIBLE_DEVICES read as the runtimes read them -------------------------------------------------------

def _gpu_plan(fixture, **env):
    from pathlib import Path

    from nodeweave.entrypoint import make_plan

    root = Path(__file__).parent / "fixtures" / "synthetic" / fixture
    return make_plan(["--", "train.py"], env=dict(env, NNODES="2", NODE_RANK="1", MASTER_ADDR="10.0.0.1"),
                     sysroot=str(root))


@pytest.mark.parametrize("fixture,name,model", [("mi300x", "HIP_VISIBLE_DEVICES", "MI300X"),
                                                ("hgx-h100", "CUDA_VISIBLE_DEVICES", "H100")])
def test_a_visible_devices_variable_set_but_empty_is_said(fixture, name, model):
    """Walk7 B23: `-e HIP_VISIBLE_DEVICES=$DEVS` with DEVS unset: the runtime sees no GPU and the node trains on
    its CPU; the plan said nothing."""
    plan = _gpu_plan(fixture, **{name: ""})
    said = [str(getattr(w, "message", w)) for w in plan.warnings]
    assert any(w.startswith(f"{name} is set but empty: the runtime then sees no GPU, so this node's ") and model in w
               and "would train on its CPU with gloo" in w for w in said), said


def test_hip_visible_devices_indexes_what_rocr_visible_devices_leaves():
    """Walk7 B24: ROCm applies ROCR_VISIBLE_DEVICES first and HIP_VISIBLE_DEVICES over what it left: HIP 1 under
    ROCR 1 names no GPU (refused, as HIP 9 alone is); HIP 0 under ROCR 2 is the node's GPU 2."""
    from nodeweave.entrypoint.errors import EntrypointError

    gpus = _gpu_plan("mi300x", ROCR_VISIBLE_DEVICES="2", HIP_VISIBLE_DEVICES="0").node.gpus
    assert (gpus.count, gpus.visible) == (1, [2])
    gpus = _gpu_plan("mi300x", ROCR_VISIBLE_DEVICES="1,3", CUDA_VISIBLE_DEVICES="1").node.gpus
    assert (gpus.count, gpus.visible) == (1, [3])  # CUDA_VISIBLE_DEVICES stands for HIP's when that is unset
    with pytest.raises(EntrypointError) as refused:
        _gpu_plan("mi300x", ROCR_VISIBLE_DEVICES="1", HIP_VISIBLE_DEVICES="1")
    assert str(refused.value).startswith("HIP_VISIBLE_DEVICES=1: 1 indexes past the 1 GPU(s) ROCR_VISIBLE_DEVICES=1 "
                                         "leaves (ROCm applies ROCR_VISIBLE_DEVICES first"), str(refused.value)
    assert "accepted: indices 0..0" in str(refused.value)


# --- B25: an interface chosen by hand that would not carry the job ----------------------------------------------------

def test_a_chosen_interface_that_is_down_or_off_the_route_is_said_and_a_repeat_refused(tmp_path):
    """Walk7 B25: NODEWEAVE_INTERFACES=docker0 (down, Docker's default bridge address, not the route to the master)
    passed without a word; eth0,eth0 became NCCL_SOCKET_IFNAME==eth0,=eth0. Read on the captured H100 VM."""
    from pathlib import Path

    from nodeweave.entrypoint import make_plan
    from nodeweave.entrypoint.errors import EntrypointError
    from nodeweave.entrypoint.planning.policy import chosen_interface_problems
    from nodeweave.entrypoint.model import Interface, Node

    node = Node(interfaces=[Interface(name="docker0", operstate="down", ipv4=["172.17.0.1"], virtual=True),
                            Interface(name="eth0", operstate="up", ipv4=["192.0.2.2"])], interface="eth0")
    assert chosen_interface_problems(node, ["docker0"], "NODEWEAVE_INTERFACES") == [
        "NODEWEAVE_INTERFACES=docker0: docker0 is down: no traffic passes it",
        "NODEWEAVE_INTERFACES=docker0: docker0's address 172.17.0.1 is Docker's default bridge address, the same on "
        "every host: every node would advertise it",
        "NODEWEAVE_INTERFACES=docker0 leaves out eth0, the interface the kernel routes to the master by"]
    assert chosen_interface_problems(node, ["eth0"], "NODEWEAVE_INTERFACES") == []
    root = Path(__file__).parent / "fixtures" / "synthetic" / "hgx-h100"
    with pytest.raises(EntrypointError) as refused:
        make_plan(["--", "train.py"], env={"NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "hgx-a00",
                                           "NODEWEAVE_INTERFACES": "eno1,eno1"}, sysroot=str(root))
    assert "names eno1 twice; accepted: a comma list naming each once, e.g. 'eno1'" in str(refused.value)
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text("name: team\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {type: torchrun, "
                    "script: t.py}\nnetwork: {interfaces: [eth0, eth0]}\n")
    (tmp_path / "t.py").write_text("")
    import subprocess
    import sys

    out = cli_run.nodeweave("validate", "--spec", str(spec), cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "'eth0' is listed twice" in out.stderr, out.stderr


# --- B26: --status of a stalled job -----------------------------------------------------------------------------------

def test_the_status_summary_leads_with_the_stall_and_flags_its_culprit():
    """Walk7 B26: 20 s into a stall, --status' summary read flagged 0, the culprit 'running', and counted node 0
    under a state named 'node 0'; the stall was only deep in ranks.stall."""
    from nodeweave.entrypoint.checkin.verdict import digest
    from test_exchange_linear import hub_with

    hub = hub_with(2)
    try:
        verdict = hub.decide(2, 2, "torchrun", ())
        hub.verdict = dict(verdict, digest=digest(verdict))
        stall = {"collective": "all_reduce", "seq": 11, "where": "all_reduce #11", "for_s": 19.32,
                 "culprits": [{"rank": 1, "node": 1, "host": "vm"}]}
        hub.show_ranks(lambda stacks=False: {"ranks": [], "stall": stall, "stragglers": []})
        summary = hub.status()["summary"]
        assert list(summary)[0] == "stall" and summary["stall"] == \
            "stalled 19 s in all_reduce #11, culprit rank 1 (node 1, vm)", summary
        assert summary["states"] == {"running": 2} and summary["flagged"] == 1, summary
        assert summary["worst"][0]["node"] == 1 and summary["worst"][0]["flagged"] is True, summary
        hub.show_ranks(lambda stacks=False: {"ranks": [], "stall": None, "stragglers": []})
        assert "stall" not in hub.status()["summary"]
    finally:
        hub.sock.close()


# --- B27: a path with white space at its ends -------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["checkpoints ", " checkpoints", " "])
def test_a_checkpoint_dir_with_white_space_at_an_end_is_refused_by_the_spec_and_the_node(tmp_path, value):
    """Walk7 B27: 'checkpoints ' was valid, rendered as is and saved into by the script, while node 0 stripped it
    and scanned checkpoints/; ' ' was valid to validate, a folder ' ' to up and unset to the entrypoint."""
    import subprocess
    import sys

    (tmp_path / "t.py").write_text("")
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", NODEWEAVE_RECOVERY="on",
               NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR=value)
    out = cli_run.entrypoint("--explain", "--", "t.py", cwd=tmp_path,
                         env=env, capture_output=True, text=True)
    said = "white space" if value.strip() else "set but empty (' ')"  # only white space: the empty-variable rule
    assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr, out.stderr
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text("name: team\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {type: torchrun, "
                    f"script: t.py}}\nrecovery: {{enabled: true, spares: 1, checkpoint_dir: {value!r}}}\n".replace(
                        "'", '"'))
    out = cli_run.nodeweave("validate", "--spec", str(spec), cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "recovery.checkpoint_dir: " in out.stderr and "white space" in out.stderr, \
        out.stderr


# --- B28: the checkpoint scan as data in --explain --json -------------------------------------------------------------

def test_explain_json_carries_the_checkpoint_scan_as_data(tmp_path):
    """Walk7 B28: which save node 0 would take and what it passed over were only inside the prose."""
    import subprocess
    import sys

    folder = tmp_path / "c1"
    for step in (100, 200, 300):
        _old_save(folder, step)
    path = folder / "step-300.pt"
    path.write_bytes(path.read_bytes()[:300])  # cut off mid-write
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", NODEWEAVE_RECOVERY="on",
               NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR="c1")
    out = cli_run.entrypoint("--explain", "--json", "--", "t.py",
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    scan = json.loads(out.stdout)["faults"]["checkpoint_dir"]["scan"]
    assert (scan["folder"], scan["newest_complete"], scan["step"], scan["layout"]) == \
        (str(folder), str(folder / "step-200.pt"), 200, "file"), scan
    assert [p["path"] for p in scan["passed_over"]] == ["step-300.pt"] and "cut off" in scan["passed_over"][0]["why"]
    assert scan["before_job"]["saves"] == 3 and scan["before_job"]["up_to_step"] == 200, scan  # left11a B15:
    assert scan["before_job"]["cut_off"] == ["step-300.pt"], scan  # the newest complete step, the cut-off named


# --- B29: the local target past what one machine holds ----------------------------------------------------------------

def test_the_local_plan_says_when_the_nodes_do_not_fit_this_machine():
    """Walk7 B29: 2,048 node containers planned on a 2-CPU VM with no word; a few nodes stay quiet."""
    from nodeweave.cluster.backends.local import machine_too_small

    [line] = machine_too_small(2048, cpus=2, memory=24 << 30)
    assert line.startswith("2048 node containers on this machine (2 CPU(s), 24 GiB): each imports torch (~0.5 GiB), "
                           "so about 8 fit here") and "did you mean -t kubernetes, -t slurm or -t hosts?" in line
    assert machine_too_small(3, cpus=2, memory=24 << 30) == []
    assert machine_too_small(40, cpus=64, memory=16 << 30) and not machine_too_small(32, cpus=64, memory=16 << 30)


# --- B31: the Faults lines follow the launch --------------------------------------------------------------------------

@pytest.mark.parametrize("command,verb,watched", [(["./train.py"], "exec", False),
                                                  (["python3", "train.py"], "exec", False),
                                                  (["torchrun", "--nproc-per-node", "1", "train.py"], "run", True)])
def test_the_stall_rows_of_a_command_launch_follow_what_the_start_does(tmp_path, command, verb, watched):
    """Walk7 B31: with the command launcher, ./train.py and python3 train.py are exec'd unwatched, yet the plan
    promised a stall report and a stop; a command that starts ranks runs as a watched child, yet the plan said
    exec."""
    import subprocess
    import sys

    (tmp_path / "train.py").write_text("")
    (tmp_path / "train.py").chmod(0o755)
    env = dict(os.environ, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", NODEWEAVE_LAUNCHER="command")
    out = cli_run.entrypoint("--explain", "--", *command, cwd=tmp_path,
                         env=env, capture_output=True, text=True)
    launch = out.stdout.split("\nLaunch\n")[1]
    assert launch.lstrip().startswith(f"{verb} "), launch
    faults = out.stdout.split("\nFaults\n")[1]
    stall = next(line for line in faults.splitlines() if line.strip().startswith("stall_warn"))
    assert ("not watched: the command is exec'd" in stall) is not watched, stall
    assert ("a stall is reported after 60 s" in stall) is watched, stall


# --- B32: another program on node 0's exchange port -------------------------------------------------------------------

def _squatter(speaks):
    """A program on a port that accepts connections: silent (waits for its client, as an HTTP server does) or
    speaking first (an SSH banner). (port, stop)."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            if speaks:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    threading.Thread(target=serve, daemon=True).start()

    def close():
        stop.set()
        for conn in held:
            conn.close()
        server.close()
    return server.getsockname()[1], close


@pytest.mark.parametrize("speaks", [False, True])
def test_another_program_on_the_exchange_port_is_named_within_the_deadline_with_recovery_on(tmp_path, speaks):
    """Walk7 B32: with recovery on, a node retried for the deadline and its grace (50 s for a 20 s
    NODEWEAVE_WAIT_TIMEOUT) and then said 'node 0 is gone', though something accepted every time."""
    import subprocess
    import sys

    port, close = _squatter(speaks)
    try:
        (tmp_path / "t.py").write_text("")
        env = dict(os.environ, NODE_RANK="1", NODEWEAVE_NNODES="2", MASTER_ADDR="127.0.0.1",
                   NODEWEAVE_MASTER_PORT=str(port - 1), NODEWEAVE_METRICS="off", NODEWEAVE_JOB_ID="b32",
                   NODEWEAVE_WAIT_TIMEOUT="12", NODEWEAVE_RECOVERY="on", TMPDIR=str(tmp_path),
                   PATH=f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}")  # torchrun, as in a node
        started = time.monotonic()
        out = cli_run.entrypoint("--", "t.py",
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        took = time.monotonic() - started
    finally:
        close()
    assert out.returncode == 4, out.stderr
    said = ("does not answer as a nodeweave exchange (another program on the port?" if speaks else
            "accepts connections but sent no nodeweave challenge within 10s: another program on the port")
    assert said in out.stderr and "node 0 is gone" not in out.stderr, out.stderr
    assert took < (8 if speaks else 30), took


# --- B33: --no-wait, the third way to the exchange off, with recovery on ----------------------------------------------

def test_no_wait_with_recovery_is_refused_like_its_two_siblings(tmp_path):
    """Walk7 B33: NODEWEAVE_EXCHANGE=off and NODEWEAVE_WAIT_TIMEOUT=0 were refused with recovery on, --no-wait
    passed (the plan said both 'exchange off' and 'recovery on'). nodeweave doctor, which parses a recovery
    node's environment with a --no-wait of its own, still examines the node."""
    import subprocess
    import sys

    (tmp_path / "t.py").write_text("")
    env = dict(os.environ, NODE_RANK="1", NODEWEAVE_NNODES="2", MASTER_ADDR="10.0.0.1", NODEWEAVE_RECOVERY="on",
               NODEWEAVE_SPARES="1")
    for more in ([], ["--explain"]):
        out = cli_run.entrypoint("--no-wait", *more, "--", "t.py",
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stderr.strip().endswith(
            "--no-wait with NODEWEAVE_RECOVERY on: --no-wait switches the check-in exchange off too (nothing waits "
            "for node 0, nothing checks in), and recovery runs on it; accepted: leave --no-wait out, or turn "
            "NODEWEAVE_RECOVERY off"), out.stderr
    from nodeweave.doctor import diagnose

    found = diagnose(env=env)
    assert not [f for f in found.findings if "no-wait" in f.message], found.findings


# --- B34: a platform's node count with spares -------------------------------------------------------------------------

def test_a_platform_count_under_spares_is_named_with_the_variable_wanted(tmp_path):
    """Walk7 B34: with torchrun's NNODES=2 and a spare, the line said the node count was missing, though NNODES=2
    was right there, and not why it does not count."""
    import subprocess
    import sys

    (tmp_path / "t.py").write_text("")
    env = dict(os.environ, MASTER_ADDR="10.0.0.1", NODE_RANK="2", NNODES="2", NODEWEAVE_RECOVERY="on",
               NODEWEAVE_SPARES="1")
    env.pop("NODEWEAVE_NNODES", None)
    out = cli_run.entrypoint("--explain", "--", "t.py", cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 3, out.stdout + out.stderr
    assert ("NNODES=2 (torchrun's count) is read under recovery as every container, training nodes and spares "
            "alike, so it cannot say which 1 are spares (only NODEWEAVE_NNODES or --nnodes give the training count); "
            "accepted: NODEWEAVE_NNODES=<training nodes>, e.g. NODEWEAVE_NNODES=2 if "
            "2 node(s) train and the 1 spare(s) come besides (this node, rank 2, is then a spare)") in out.stdout, \
        out.stdout
