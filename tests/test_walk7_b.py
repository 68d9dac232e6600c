"""Walk 7, part B (issue 43): the entrypoint, recovery, stall, checkpoint and metrics side as a new user met it.
Each test names its row of /work/wt/walk7b-report.md and fails on the code before its fix."""

from __future__ import annotations

import json

import cli_run
import live_status
import pytest
from free_ports import free_port

from nodeweave.entrypoint.metrics.server import serve
from nodeweave.entrypoint.metrics.shape import live_problem


# -- B14: node 0's own picture of a job whose step lines are read is drawn by every reader -------------------------

@pytest.fixture
def node0_serving():
    """Node 0's real metrics server over its real Live that has read a TorchTitan step line."""
    port = free_port()
    server = serve(port, live_status.live(), bind="127.0.0.1")
    yield port
    server.shutdown()


def test_b14_the_picture_of_a_job_with_steps_passes_the_readers_check():
    document = live_status.document()
    assert document["step"][:2] == ["torchtitan", 21]
    assert live_problem(document) is None


def test_b14_top_and_node_live_draw_node_zeros_own_answer(node0_serving):
    top = cli_run.nodeweave("top", "--url", f"http://127.0.0.1:{node0_serving}", "--once",
                            env=dict(cli_run.CLEAN))
    assert top.returncode == 0, top.stderr
    assert "step 21 (torchtitan)" in top.stdout
    inside = cli_run.entrypoint("--node", "live", "--port", str(node0_serving), env=dict(cli_run.CLEAN))
    assert inside.returncode == 0, inside.stdout + inside.stderr
    answer = json.loads(inside.stdout.strip().splitlines()[-1])
    assert answer["live"]["step"][:2] == ["torchtitan", 21]


@pytest.mark.parametrize("step, phrase", [
    (["torchtitan", 21], "step holds 2 value(s), not 3 (its logger, number and time)"),
    ([1.5, 21, 3.0], "step.logger is a number, not a string"),
    (["torchtitan", "21", 3.0], "step.number is a string, not a whole number"),
])
def test_b14_a_step_of_another_shape_is_still_named(step, phrase):
    document = dict(live_status.document(), step=step)
    assert phrase in live_problem(document)


# -- B1: every row of the plan shows the value it uses, credited only to the variable that gave it -----------------

RECOVERY = {"NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1", "NODEWEAVE_RECOVERY": "on"}


def _with_launchers():
    """A clean PATH that holds this Python's folder, torchrun beside it (a node whose image has the launchers)."""
    import os
    import sys

    return f"{os.path.dirname(sys.executable)}:{cli_run.CLEAN['PATH']}"


def _explain(folder, env, *args):
    """``--explain --json`` of a node in ``folder`` whose PATH holds the launchers."""
    (folder / "train.py").write_text("print('step: 1  loss: 1.0')\n")
    return cli_run.entrypoint("--explain", "--json", *args, "--", "train.py", cwd=str(folder),
                              env={**cli_run.CLEAN, "PATH": _with_launchers(), **env})


# each variable of the Faults section at its edge values (0, the smallest, a switch against its default)
EDGES = [("NODEWEAVE_STRAGGLER_FAULT", "0", {"NODEWEAVE_STRAGGLER_IS_FAULT": "on"}),
         ("NODEWEAVE_STRAGGLER_FAULT", "0", {}), ("NODEWEAVE_STRAGGLER_FAULT", "1", {"NODEWEAVE_STRAGGLER_IS_FAULT": "on"}),
         ("NODEWEAVE_STALL_WARN", "0", {}), ("NODEWEAVE_STALL_TIMEOUT", "0", {}),
         ("NODEWEAVE_NO_PROGRESS_RESTARTS", "0", {}), ("NODEWEAVE_RECOVERY_MAX_RESTARTS", "1", {}),
         ("NODEWEAVE_SPARES", "0", {}), ("NODEWEAVE_WARM_START", "off", {}), ("NODEWEAVE_METRICS", "off", {}),
         ("NODEWEAVE_METRICS_PORT", "1", {})]


@pytest.mark.parametrize("variable, value, beside", EDGES)
def test_b1_a_row_credited_to_a_variable_shows_its_value_or_the_pair_is_refused(tmp_path, variable, value, beside):
    run = _explain(tmp_path, dict(RECOVERY, **beside, **{variable: value}))
    if run.returncode == 2:  # refused: one line naming the variable
        assert variable in cli_run.one_line(run.stderr)
        return
    assert run.returncode == 0, run.stderr
    for key, row in json.loads(run.stdout)["faults"].items():
        if row["source"] == variable:
            assert str(row["value"]) == value, (key, row)


def test_b1_straggler_fault_0_beside_the_switch_is_refused_naming_both(tmp_path):
    run = _explain(tmp_path, dict(RECOVERY, NODEWEAVE_STRAGGLER_IS_FAULT="on", NODEWEAVE_STRAGGLER_FAULT="0"))
    assert run.returncode == 2
    line = cli_run.one_line(run.stderr)
    assert "NODEWEAVE_STRAGGLER_FAULT 0" in line and "contradicts NODEWEAVE_STRAGGLER_IS_FAULT on" in line
    assert "accepted:" in line


def test_b1_a_row_whose_value_was_not_given_says_so():
    """The guard itself: a row shown with another value than its variable gave names the given one as unused."""
    from nodeweave.entrypoint.faults import _row
    from nodeweave.entrypoint.model import Value

    class Settings:
        options = {"straggler_fault": Value(value=0, source="NODEWEAVE_STRAGGLER_FAULT")}

        def source(self, key):
            return self.options[key].source

    _, row = _row(Settings(), "straggler_fault", 10, "")
    assert row["source"] == "default (NODEWEAVE_STRAGGLER_FAULT 0 not used)"
    _, row = _row(Settings(), "straggler_fault", 0, "")
    assert row["source"] == "NODEWEAVE_STRAGGLER_FAULT"


# -- B11/B12: a launcher exec would not find is refused before any wait, and a start failing alike everywhere -------
# -- is the job's own ---------------------------------------------------------------------------------------------

def _beside_python(program):
    import os
    import sys

    path = os.path.join(os.path.dirname(sys.executable), program)
    return path if os.access(path, os.X_OK) else None


@pytest.mark.parametrize("launcher", ["torchrun", "deepspeed", "accelerate"])
def test_b11_explain_says_a_launcher_not_on_path_stops_the_start(tmp_path, launcher):
    env = {"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1",
           "NODEWEAVE_LAUNCHER": launcher}
    run = _explain(tmp_path, env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr  # the plan is read off the node too
    said = [w for w in json.loads(run.stdout)["warnings"] if w.startswith(f"launcher {launcher!r} not found on PATH")]
    assert len(said) == 1 and said[0].endswith("a start here stops with exit 127 before any check-in"), said
    beside = _beside_python(launcher)
    assert (f"found {beside} beside this entrypoint's Python" if beside else "install it in the image") in said[0]


def test_b11_the_start_stops_before_any_wait_with_the_plans_words(tmp_path):
    (tmp_path / "train.py").write_text("print('step: 1  loss: 1.0')\n")
    env = dict(cli_run.CLEAN, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="127.0.0.1",
               NODEWEAVE_MASTER_PORT=str(free_port()), TMPDIR=str(tmp_path), NODEWEAVE_WAIT_TIMEOUT="60")
    run = cli_run.entrypoint("--", "train.py", cwd=str(tmp_path), env=env, timeout=30)
    assert run.returncode == 127, run.stderr
    assert "launcher 'torchrun' not found on PATH" in run.stderr.strip().splitlines()[-1]
    assert "check-in" not in run.stderr  # refused before node 0 listened for anyone


def test_b11_a_command_path_that_is_not_there_is_said_and_refused_at_start(tmp_path):
    env = dict(cli_run.CLEAN, NODE_RANK="0", NODEWEAVE_NNODES="2", MASTER_ADDR="127.0.0.1",
               NODEWEAVE_MASTER_PORT=str(free_port()), TMPDIR=str(tmp_path), NODEWEAVE_WAIT_TIMEOUT="60")
    program = str(tmp_path / "nowhere" / "run.sh")
    plan = cli_run.entrypoint("--explain", "--launcher", "command", "--", program, cwd=str(tmp_path), env=env)
    assert plan.returncode == 0 and "run.sh does not exist" in plan.stdout, plan.stdout[-1500:]
    start = cli_run.entrypoint("--launcher", "command", "--", program, cwd=str(tmp_path), env=env, timeout=30)
    assert start.returncode == 127 and "run.sh does not exist" in start.stderr.strip().splitlines()[-1]


def test_b12_the_same_start_failure_on_every_member_is_the_jobs_own():
    from nodeweave.entrypoint.errors import EntrypointError
    from nodeweave.entrypoint.news import Cause, Evidence, NodeId
    from nodeweave.entrypoint.recovery import decide
    from nodeweave.entrypoint.recovery.book import Book
    from nodeweave.entrypoint.running.symptoms import start_failure

    error = start_failure(EntrypointError("launcher torchrun is not on PATH (/usr/bin:/bin)", 127))
    heard = [Evidence(cause=Cause.CRASH, label=f"node {n}", at=1.0 + n, node=NodeId(n), own=True, error=error,
                      how="its start failed") for n in (1, 0)]
    fault = decide.judged(heard, Book(members=(NodeId(0), NodeId(1))), 9.0)
    assert (fault.node, fault.cause, fault.error["nodes"]) == (None, Cause.SCRIPT, [0, 1]), fault
    assert fault.why.startswith("the start failed with launcher torchrun is not on PATH")
    stopped = decide.job_error(Book(members=(NodeId(0), NodeId(1))), fault.error["nodes"], fault.error)
    assert stopped.code == 10 and "no node was left out" in stopped.ended


def test_b12_a_generations_failed_start_reports_its_error_to_node_0():
    """The seam: recovery's launch hands its watch the failure as an error, which node 0 compares across nodes."""
    from nodeweave.entrypoint.errors import EntrypointError
    from nodeweave.entrypoint.recovery.generations import Generations

    class Watch:
        def silent_since_verdict(self):  # asked before a launch (walk15b B13)
            return None

        def start(self):
            pass

        def finish(self, code, how, tail, peer_gone=None, error=None):
            self.said = (code, error)
            return None

    generations = Generations(settings=None, log=lambda line: None)

    def refuse(book, verdict):
        raise EntrypointError("launcher torchrun is not on PATH", 127)

    generations._generation_plan = refuse
    watch = Watch()
    assert generations.launch(None, None, watch) == 127
    assert watch.said == (127, {"line": "launcher torchrun is not on PATH",
                                "lines": ["launcher torchrun is not on PATH"], "start": True, "code": 127})


# -- B2: a per-file note of the checkpoint finder names a few files per reason, then the count of the rest -----------

def test_b2_two_hundred_stepless_saves_are_one_short_phrase(tmp_path):
    folder = tmp_path / "e6"
    folder.mkdir()
    for epoch in range(1, 201):
        (folder / f"epoch_{epoch}.pt").write_bytes(b"x" * 16)
    run = _explain(tmp_path, dict(RECOVERY, NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR="e6"))
    assert run.returncode == 0, run.stderr
    meaning = json.loads(run.stdout)["faults"]["checkpoint_dir"]["meaning"]
    assert len(meaning) < 1000, len(meaning)
    assert "epoch_1.pt, epoch_2.pt, epoch_3.pt, epoch_4.pt, epoch_5.pt and 195 more: a plain file whose name" in meaning
    assert meaning.count("a plain file whose name gives no step") == 1


def test_b2_the_finders_log_says_each_reason_once(tmp_path):
    """The sibling: node 0's log line per folder it cannot judge, said at every generation."""
    from nodeweave.entrypoint.recovery.setup import grouped

    notes = [(f"/c/run{i}", "no file of a known layout") for i in range(12)] + [("/c/odd", "a cut file")]
    assert grouped(notes) == ["/c/run0, /c/run1, /c/run2, /c/run3, /c/run4 and 7 more: no file of a known layout",
                              "/c/odd: a cut file"]


# -- B3/B10: a number with a unit says the unit; a malformed number is named as malformed before any rule reads it --

BASE = {"NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1"}


@pytest.mark.parametrize("variable", ["NODEWEAVE_STALL_TIMEOUT", "NODEWEAVE_STALL_WARN", "NODEWEAVE_WAIT_TIMEOUT"])
@pytest.mark.parametrize("value, example", [("5x", "300 or 5m"), ("1.5s", "300 or 5m"), ("5 m", "300 or 5m")])
def test_b3_a_duration_with_a_unit_is_answered_in_seconds(tmp_path, variable, value, example):
    """Since fix20b a duration with a unit (5m, 1h30m) is taken, as the spec's field takes it; what is neither is
    refused saying the unit and both spellings."""
    run = _explain(tmp_path, dict(BASE, **{variable: value}))
    assert run.returncode == 2
    line = cli_run.one_line(run.stderr)
    assert "must be a whole number of seconds" in line and f"(e.g. {example};" in line, line


@pytest.mark.parametrize("field", ["stall_timeout", "stall_warn", "wait_timeout"])
def test_b3_the_spec_says_the_unit_too(tmp_path, monkeypatch, capsys, field):
    from team_folder import SPEC, make_team

    make_team(tmp_path, monkeypatch)
    (tmp_path / "nodeweave.yaml").write_text(SPEC + f"  {field}: 5m\n")
    code, out, err = cli_run.in_process(capsys, "validate")
    assert code == 0, out + err  # taken as 300 seconds since walk17a A26, as the command line's seconds
    (tmp_path / "nodeweave.yaml").write_text(SPEC + f"  {field}: 5x\n")
    code, out, err = cli_run.in_process(capsys, "validate")
    assert code == 2 and f"launcher.{field}: got '5x'; accepted: an integer from 0 to" in err, out + err
    assert "in seconds, or a duration with a unit, s, m or h (30s, 10m, 1h30m)" in err


@pytest.mark.parametrize("value", ["01", "\uff11", "2-4", "+2", "1_0"])
def test_b10_a_malformed_node_count_is_named_before_the_recovery_rule(tmp_path, value):
    run = _explain(tmp_path, dict(BASE, NODEWEAVE_RECOVERY="on", NODEWEAVE_NNODES=value))
    assert run.returncode == 2
    line = cli_run.one_line(run.stderr)
    assert f"node count must be N or MIN:MAX in plain decimal digits, got {value!r} (from NODEWEAVE_NNODES)" in line
    assert "spares" not in line, line  # not the recovery rule reading it loosely as 1
    assert "MIN:MAX with MIN <= MAX (e.g. 2:4)" in line


def test_b10_the_same_count_with_spares_gives_the_same_refusal(tmp_path):
    """Before: with NODEWEAVE_SPARES added (what the first refusal asked) the next run gave the other error."""
    with_spares = _explain(tmp_path, dict(BASE, NODEWEAVE_RECOVERY="on", NODEWEAVE_NNODES="01", NODEWEAVE_SPARES="1"))
    without = _explain(tmp_path, dict(BASE, NODEWEAVE_NNODES="01"))
    assert cli_run.one_line(with_spares.stderr) == cli_run.one_line(without.stderr)


# -- B4: the plan's line on how a job under recovery can end names every one of recovery's final exits --------------

def test_b4_the_heartbeat_line_lists_every_final_exit(tmp_path):
    from nodeweave.entrypoint.errors import RECOVERY_FINAL

    (tmp_path / "train.py").write_text("print(1)\n")
    run = cli_run.entrypoint("--explain", "--", "train.py", cwd=str(tmp_path),
                             env={**cli_run.CLEAN, "PATH": _with_launchers(), **RECOVERY, "NODEWEAVE_SPARES": "1"})
    assert run.returncode == 0, run.stdout[-1500:] + run.stderr
    line = next(line for line in run.stdout.splitlines() if line.strip().startswith("heartbeat"))
    for code in RECOVERY_FINAL:
        assert f"exit {code} " in line, (code, line)
    assert "exit 10 at once when the script raises the same error or exits with the same error line on every node" in line


# -- B13: one count of a rank's collectives: top, /status.json, Prometheus and the rate agree -----------------------

def test_b13_python_collectives_the_flight_recorder_also_counts_are_counted_once(tmp_path):
    import time

    from test_metrics_collect import Watch, live_of

    from nodeweave.entrypoint.metrics import collect, exposition

    watch = Watch(2, 1)
    views = watch.stall.last_views
    for view in views:  # every rank's recorder read: it counts the same all_reduces the Python hook counted
        view.update(seq=90, fr_enqueued=90)
    live = live_of(tmp_path, watch)
    before_first = time.monotonic()
    live.tick()
    after_first = time.monotonic()
    time.sleep(4.2)  # a rate is shown once its one window for every rank spans 4 s (walk18b B3)
    for view in views:
        view.update(seq=91, fr_enqueued=91)  # one more all_reduce each
    before_second = time.monotonic()
    live.tick()
    after_second = time.monotonic()
    picture = collect.status(live)
    assert [r["collectives"] for r in picture["ranks"]] == [91, 91]
    # the ticks' own readings lie within these bounds however long each tick took on a loaded machine
    longest, shortest = after_second - before_first, before_second - after_first
    for rank in picture["ranks"]:
        assert 0.99 / longest <= rank["collectives_per_s"] <= 1.01 / shortest, (rank, longest, shortest)
    text = exposition.render(collect.families(live))
    totals = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith("nodeweave_rank_collectives_total{")]
    assert totals == [91, 91]


def test_b13_collectives_cpp_issued_beyond_the_python_calls_are_counted():
    from nodeweave.entrypoint.metrics.live import collectives

    assert collectives({"seq": 10, "fr_enqueued": 250}, True) == 250  # DDP's reducer issued them from C++
    assert collectives({"seq": 10, "fr_enqueued": 250}, False) == 10  # not every rank's recorder read


# -- B15: the shipped examples' step lines are read; a run whose step lines are not read says so, with a pattern -----

@pytest.mark.parametrize("line, step", [
    ("[rank 0/4 gen 1] step 812 loss 0.0713", 812),  # examples/resilient_train.py
    ("[rank 0/2] step 3/100 loss 1.2345 samples/s 12.0", 3),  # examples/train.py
    ("step 0 loss 1.000", 0),  # the tutorials'
])
def test_b15_the_examples_step_lines_are_read(line, step):
    from nodeweave.entrypoint.metrics.steps import find_step

    assert find_step(line) == ("plain", step)


def test_b15_the_examples_print_what_is_read():
    """The examples' own print statements, in the format the table reads."""
    import re
    from pathlib import Path

    from nodeweave.entrypoint.metrics.steps import PLAIN

    root = Path(cli_run.REPO) / "examples"
    assert re.search(r'step \{step\}/\{args\.steps\} loss', (root / "train.py").read_text())
    assert PLAIN.search("step 5/10 loss 0.1") and PLAIN.search("step 812 loss 0.0713")


def test_b15_a_run_whose_steps_are_not_read_says_so_with_a_pattern_that_reads_them(tmp_path):
    import re

    said = []
    state = live_status.live(str(tmp_path), lines=())
    state.log = said.append
    state.output(1, b"epoch 1 global_step=17 lr=3e-4\n")
    from nodeweave.entrypoint.metrics import collect

    # one line naming a step is no evidence yet (walk9 B7: a resume line before the step lines): the second is
    assert collect.status(state)["step_note"] is None and said == []
    state.output(1, b"epoch 1 global_step=18 lr=3e-4\n")
    document = json.loads(json.dumps(collect.status(state)))
    assert document["step"] is None and live_problem(document) is None
    note = document["step_note"]
    assert "global_step=18" in note and "metrics.step_pattern" in note
    pattern = note.rsplit("e.g. ", 1)[1].strip("'")
    assert re.search(pattern, "epoch 1 global_step=17 lr=3e-4").group("step") == "17"
    # said once, when the line came (never at exit, where it would follow a stall's report)
    assert [line for line in said if line.startswith("metrics: no step line was read")] == [f"metrics: {note}"], said
    state.output(1, b"epoch 2 global_step=19 lr=3e-4\n")
    state.close()
    assert len([line for line in said if line.startswith("metrics: no step line")]) == 1, said


def test_b15_top_says_it_in_its_header(tmp_path):
    from nodeweave.cluster.top import picture
    from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

    document = live_status.document(lines=(b"iteration: 5, loss=2\n", b"iteration: 6, loss=2\n"))  # steps go by
    console = Console(width=300, record=True)
    console.print(picture(document))
    assert "no step line was read" in console.export_text()


# -- B8/B9: a checkpoint folder this process cannot list, or cannot write, is a warning of its own -----------------

@pytest.fixture
def as_another_user():
    """(folder, argv prefix): a folder other users may enter, and how to run a command as a user who owns
    nothing in it (setpriv to uid 65534 as root; as yourself otherwise, against folders made unreadable)."""
    import os
    import shutil
    import tempfile

    if os.getuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("root without setpriv: no other user to run the node as")
    folder = tempfile.mkdtemp(prefix="nodeweave-b8-")
    os.chmod(folder, 0o755)
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.getuid() == 0 else []
    yield folder, prefix
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("mode, said", [
    (0o000, "cannot list {path} (owner uid {uid}, mode 0000): node 0 would find no checkpoint in it"),
    (0o555, "{path} is not writable by this process"),
])
def test_b8_b9_a_checkpoint_folder_this_user_cannot_use_is_a_warning(as_another_user, mode, said):
    import os
    from pathlib import Path

    folder, prefix = as_another_user
    (Path(folder) / "train.py").write_text("print(1)\n")
    saves = Path(folder) / "checkpoints"
    saves.mkdir()
    (saves / "ckpt_100.pt").write_bytes(b"PK" + b"x" * 64)
    os.chmod(saves, mode)
    own = Path(folder) / "node-tmp"  # the node's TMPDIR is a folder it may write (walk14b B15: /tmp/nodeweave of
    own.mkdir()                      # another user's is refused at start and by --explain)
    os.chmod(own, 0o777)
    env = {**cli_run.CLEAN, "PATH": _with_launchers(), **RECOVERY, "NODEWEAVE_SPARES": "1",
           "NODEWEAVE_CHECKPOINT_DIR": "checkpoints", "TMPDIR": str(own)}
    run = cli_run.run([*prefix, *cli_run.ENTRYPOINT, "--explain", "--json", "--", "train.py"], cwd=folder, env=env)
    assert run.returncode == 0, run.stderr
    warnings = [w for w in json.loads(run.stdout)["warnings"] if w.startswith("NODEWEAVE_CHECKPOINT_DIR: ")]
    expected = said.format(path=str(saves), uid=os.stat(saves).st_uid)
    assert len(warnings) == 1 and expected in warnings[0], warnings
