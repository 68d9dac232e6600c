"""Walk 10, part B, rows B10..B23 but B18 (issue 43), each fixed as a class:

- a checkpoint folder inside one of the system's trees (/etc/ssh, /usr/lib/x) is refused by the one table the CLI's
  own folders are judged by (``systemfolders.SYSTEM_TREES``), on the spec's side and the entrypoint's (B21, B22).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import pytest

from cli_run import in_a_folder_with_train_py
from nodeweave.entrypoint import systemfolders
from nodeweave.errors import UsageError
from nodeweave.spec import parse_spec

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)
TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
RECOVERY = dict(TWO_NODES, NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1")
BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"

# a folder inside each of the system's trees, but the kernel's and nodeweave's (refused before, as FILLED)
INSIDE_TREES = [tree + "/ck" for tree in sorted(systemfolders.SYSTEM_TREES)]


@pytest.mark.parametrize("folder", INSIDE_TREES)
def test_a_folder_inside_a_system_tree_is_no_checkpoint_folder(folder):
    """B21, B22: `/etc/ssh`, `/usr/lib/x`, `/boot/ck` were taken as checkpoint folders while `--runs-dir` refused
    them; the plain value's rule (spec and entrypoint alike) refuses them by the same table."""
    problem = systemfolders.path_problem(folder)
    assert problem is not None and "inside" in problem
    assert systemfolders.path_problem("/" + folder.replace("/", "/./", 1)) == problem  # spelled //x/./y too


def test_the_cli_and_the_checkpoint_folder_share_one_table_of_system_trees():
    """B21: one rule, one table: the CLI's own folders (failures.own_folder_problem) read the entrypoint's."""
    from nodeweave import systemdirs

    assert systemdirs.SYSTEM_TREES is systemfolders.SYSTEM_TREES


@pytest.mark.parametrize("folder, said", [("/etc/ssh", "/etc/ssh is inside /etc"),
                                          ("/usr/./lib/x", "/usr/lib/x is inside /usr/lib"),
                                          ("/boot/ck", "/boot/ck is inside /boot")])
def test_the_entrypoint_refuses_a_checkpoint_dir_inside_a_system_tree(entrypoint, folder, said):
    """B21: NODEWEAVE_CHECKPOINT_DIR=/etc/ssh was taken (exit 0): the script would save into /etc/ssh."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(RECOVERY, NODEWEAVE_CHECKPOINT_DIR=folder))
    assert code == 2, err
    assert f"NODEWEAVE_CHECKPOINT_DIR: {said}" in err and "Traceback" not in err


@pytest.mark.parametrize("folder, said", [("/etc/ssh", "/etc/ssh is inside /etc"),
                                          ("/usr/lib/x", "/usr/lib/x is inside /usr/lib")])
def test_the_spec_refuses_a_checkpoint_dir_inside_a_system_tree(folder, said):
    """B22: `checkpoint_dir: /etc/ssh` was valid without even a note."""
    with pytest.raises(UsageError) as caught:
        parse_spec(BASE + f'recovery: {{enabled: true, spares: 1, checkpoint_dir: "{folder}"}}\n', "s.yaml")
    assert f"recovery.checkpoint_dir: {said}" in str(caught.value)


ELASTIC = {"NODEWEAVE_NNODES": "1:2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}


@pytest.mark.parametrize("extra, warned", [({}, True), ({"NODEWEAVE_MAX_RESTARTS": "3"}, False),
                                           ({"NODEWEAVE_LAUNCHER_OPTIONS": "--max-restarts 2"}, False)],
                         ids=["no-restarts", "max-restarts", "launcher-option"])
def test_an_elastic_plan_without_restarts_says_a_lost_node_ends_it(tmp_path, monkeypatch, extra, warned):
    """B20: NODEWEAVE_NNODES 1:2 without a restart count was explained as `the heartbeat stops every node (exit 5)`
    with no warning, while torchrun ended the job (exit 1) at the first lost node: the Faults row and a warning
    (`elastic-no-restarts`) say what happens, and what lets it go on with fewer nodes."""
    from nodeweave.entrypoint import make_plan
    from nodeweave.entrypoint.faults import fault_rows

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    plan = make_plan(["--", "train.py"], dict(ELASTIC, **extra))
    codes = [warning.code for warning in plan.warnings]
    assert ("elastic-no-restarts" in codes) is warned
    row = plan.faults["recovery"]["meaning"] if getattr(plan, "faults", None) else None
    meaning = row or fault_rows(_settings(dict(ELASTIC, **extra)), plan)["recovery"]["meaning"]
    assert "exit 5" not in meaning and "rendezvous" in meaning
    assert ("a lost node ends the job" in meaning) is warned


def _settings(env):
    from nodeweave.entrypoint import parse

    return parse(["--", "train.py"], env)


def test_the_no_progress_verdict_names_the_checkpoint_folder(tmp_path, monkeypatch):
    """B17: `1 restart since the job started, no checkpoint yet` never named the folder node 0 looked in (`ck`,
    which did not exist) while the script saved elsewhere; every form of the verdict names it."""
    from nodeweave.entrypoint.recovery.decide import Limits
    from nodeweave.entrypoint.recovery.progress import Progress

    monkeypatch.chdir(tmp_path)
    none = Progress(1).record(None).record(None)
    said = none.verdict("ck")
    assert "no checkpoint yet in the checkpoint folder ck (which does not exist" in said
    assert "NODEWEAVE_CHECKPOINT_DIR" in said
    (tmp_path / "ck").mkdir()
    assert "(which holds no complete save" in none.verdict("ck")
    assert Progress(1).record(500).record(500).verdict("ck").endswith("no newer checkpoint in the checkpoint folder ck")
    assert Limits(2, 2, 3, 1, "ck").folder == "ck"


def test_the_setup_hands_the_checkpoint_folder_to_the_verdict():
    """B17: the folder reaches the decision that writes the verdict (recovery.setup.Config -> decide.Limits)."""
    from nodeweave.entrypoint.recovery import decide
    from nodeweave.entrypoint.recovery.book import Book

    limits = decide.Limits(2, 2, 100, 1, "ck")
    book = decide.first({0, 1, 2}, limits)
    book = decide.after_fault(book, 1, "node 1: its launcher failed", {0, 1, 2}, None, limits)
    assert book.decision is decide.Decision.STOP and "in the checkpoint folder ck" in book.ended, book.ended
    assert Book  # the book type the decision returns


@pytest.mark.parametrize("lines, marked", [
    (["recovery: generation 0 ended: node 1: its launcher failed", "recovery: starting generation 1"], True),
    (["recovery: generation 0 ended: node 1: its launcher failed; starting generation 1"], True),  # older nodes
    (["recovery: generation 4 ended: node 2: its launcher failed",
      "recovery: the job ends: node 2: ...; no spare takes its place (every node exits 8)"], False)])
def test_nodeweave_logs_marks_a_generation_only_where_one_starts(tmp_path, lines, marked):
    """B14: node 0 said `generation 4 ended: ...; starting generation 5` then `the job ends`: a generation that never
    started was announced. The next one is said once decided, and `nodeweave logs` marks it from that line."""
    import json

    from test_cluster_logs import _console
    from nodeweave.cluster.logs import run_logs

    text = "".join(f"nodeweave-entrypoint: {line}\n" for line in lines)
    (tmp_path / "node-0.log").write_text(f"[rank0]:step 9\n{text}[rank0]:step 6\n")
    (tmp_path / "run.json").write_text(json.dumps({"ended": "2026-01-01T00:00:00Z"}))
    console = _console()
    run_logs(tmp_path, [], follow=False, console=console)
    assert ("── generation" in console.file.getvalue()) is marked


def test_a_node_that_was_itself_stopped_does_not_open_by_calling_node_0_failed():
    """B10: a node woken from SIGSTOP said `node 0 (...) failed: this node itself was silent ...; node 0 itself may be
    fine`: the line names this node as the one declared lost."""
    import time

    from loopback_hub import Cluster, Launcher
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    log, launcher, jump = [], Launcher(), [0.0]
    link = LinkWatch(cluster.channels[1], log.append, clock=lambda: time.monotonic() + jump[0])
    link.start(launcher.stop)
    try:
        time.sleep(1.0)
        jump[0] = 20.0
        cluster.hub.close()
        assert launcher.stopped.wait(20), log
        time.sleep(0.2)
    finally:
        link.close()
        cluster.close()
    assert not any(line.startswith("node 0 (") and " failed: " in line for line in log), log
    assert any(line.startswith("this node was declared lost by node 0 (") for line in log), log


def test_node_0_says_what_a_late_node_is_by_its_role_in_the_book():
    """B10: a left-out node that came back was logged by node 0 as `node 1 (vm) joined the job`, while it was left
    out of the generation; each role of the book (recovery.book.Role) has its own words."""
    from nodeweave.entrypoint.checkin.heartbeat import JOINED
    from nodeweave.entrypoint.recovery.book import Role

    assert set(JOINED) == {role.value for role in Role}
    assert JOINED[Role.TRAINING.value] == "joined the job"
    assert all("joined the job" not in JOINED[role.value] for role in (Role.LEFT_OUT, Role.OUT_FOR_GOOD))


def _metrics_server():
    import live_status
    from nodeweave.entrypoint.metrics.server import serve
    from free_ports import free_port

    return serve(free_port(), live_status.live(), bind="127.0.0.1"), ("/metrics", "/status.json")


def _dashboard_server():
    from nodeweave.cluster.dashboard import serve

    return serve(lambda: {}, "127.0.0.1", 0), ("/", "/state.json")


def _ask(server, method, path):
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        connection.request(method, path)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


@pytest.mark.parametrize("make", [_metrics_server, _dashboard_server], ids=["metrics", "dashboard"])
def test_every_server_answers_head_and_says_its_errors_in_plain_text(make):
    """B11: `curl -I http://node0:METRICS/metrics` got `501 Unsupported method ('HEAD')` and an HTML page, and
    `/metrics/` a 404 HTML page: every server of nodeweave's (node 0's metrics, the dashboard) answers HEAD as its
    GET without a body, a trailing slash as without, and each error as one plain-text line naming what it serves."""
    server, paths = make()
    try:
        code, headers, body = _ask(server, "GET", "/")
        assert code == 200 and body
        code, headers, head_body = _ask(server, "HEAD", "/")
        assert code == 200 and head_body == b"" and int(headers["Content-Length"]) == len(body)
        code, _, body = _ask(server, "GET", paths[1] + "/")
        assert code == 200, body
        for method, path, expected in (("GET", "/nothing", 404), ("POST", paths[1], 405)):
            code, headers, body = _ask(server, method, path)
            assert code == expected and headers["Content-Type"].startswith("text/plain"), (code, headers)
            text = body.decode()
            assert "<html" not in text.lower() and all(p in text for p in paths), text
        assert _ask(server, "POST", paths[1])[1]["Allow"] == "GET, HEAD"
    finally:
        server.shutdown()
        server.server_close()


def _top_once_forms():
    from nodeweave.cli.habits.conflicts import IDLE_WITH_VALUE_ON

    values = IDLE_WITH_VALUE_ON["top"][("--interval", "--output")]
    return [form for value in sorted(values) for form in (["-o", value], [f"--output={value}"])] + [["--json"]]


@pytest.mark.parametrize("form", _top_once_forms(), ids=" ".join)
def test_top_refuses_an_interval_where_it_reads_node_0_once(capsys, form):
    """B12: `top -o json --interval 5` printed /status.json once and exited 0, --interval silently idle, while
    `top --once --interval 1` was refused: every form that reads node 0 once refuses --interval alike."""
    from cli_run import in_process

    code, out, err = in_process(capsys, "top", "--url", "http://127.0.0.1:1", *form, "--interval", "5")
    assert code == 2, (out, err)
    assert "--interval does nothing with" in err and "Traceback" not in err


@pytest.mark.parametrize("book, role", [(None, "hub"), ({"members": [0, 1]}, "hub"),
                                        ({"members": [2, 1], "spares": []}, "hub, left out"),
                                        ({"members": [2, 1], "spares": [0]}, "hub, spare")])
def test_node_0s_role_says_it_is_out_of_training(book, role):
    """B13: node 0, whose own rank was left out of generation 3, showed `running  hub` beside its members in `top`:
    /status.json and /metrics (both through collect.hub_role) say `hub, left out` (or `hub, spare`)."""
    from nodeweave.entrypoint.metrics import collect

    live = type("Live", (), {"book": lambda self: book})()
    assert collect.hub_role(live, 0) == role


def _not_alone():
    from nodeweave.entrypoint.planning.contract import _NOT_ALONE

    return sorted(_NOT_ALONE)


@pytest.mark.parametrize("word", _not_alone())
def test_the_setup_example_is_never_the_word_refused(word):
    """B16: `--setup source` was refused with `accepted: ... e.g. source or ...`: the example, built from the user's
    words, was the very value refused. Each word that does nothing alone (contract._NOT_ALONE) gets a line that
    works as its example."""
    import shlex

    from nodeweave.entrypoint.errors import UsageError as EntrypointUsage
    from nodeweave.entrypoint.planning.contract import read_setup_lines

    with pytest.raises(EntrypointUsage) as caught:
        read_setup_lines(word, "setup", "flag --setup")
    accepted = str(caught.value).split("accepted:", 1)[1]
    examples = accepted.split("e.g. ", 1)[1]
    assert not examples.startswith(f"{shlex.quote(word)} or"), accepted
    assert examples.startswith("'source /opt/venv/bin/activate'"), accepted


def _good_picture():
    return {"schema": "nodeweave.live/1", "now": 10.0, "job": "team", "nodes": [], "ranks": []}


def _required():
    from nodeweave.entrypoint.metrics.shape import REQUIRED

    return sorted(REQUIRED)


@pytest.mark.parametrize("name", _required())
def test_a_picture_lacking_what_node_0_always_writes_is_refused(name):
    """B19: `{"schema": "nodeweave.live/1"}` was drawn as a healthy, moving job (`job ?  generation 0 ... moving`):
    an answer without now, job, nodes or ranks (shape.REQUIRED, what collect.status always writes) is named."""
    from nodeweave.entrypoint.metrics.shape import live_problem

    assert live_problem(_good_picture()) is None
    picture = _good_picture()
    del picture[name]
    assert name in (live_problem(picture) or ""), live_problem(picture)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("where", ["now", "nodes"])
def test_a_picture_with_a_non_finite_number_is_refused(text, where):
    """B19: `"now": NaN` was drawn, and `-o json` printed NaN back (no JSON; `jq` refuses it): a number that is
    not finite anywhere in the picture is named, so no reader draws or prints it."""
    import json

    from nodeweave.entrypoint.metrics.shape import live_problem

    body = json.dumps(_good_picture())
    if where == "now":
        body = body.replace('"now": 10.0', f'"now": {text}')
    else:
        body = body.replace('"nodes": []', f'"nodes": [{{"node": 0, "heartbeat_age_s": {text}}}]')
    problem = live_problem(json.loads(body))
    assert problem is not None and "not a finite number" in problem, problem


def _plain_names():
    from nodeweave.entrypoint.recovery.checkpoints import PLAIN_NAMES

    return PLAIN_NAMES


@pytest.mark.parametrize("name", _plain_names())
def test_every_name_the_stepless_hint_shows_is_taken(name):
    """B15: the hint for a stepless model.pt listed only ckpt_<N>, checkpoint_<N>, step_<N>, iter_<N>, while node 0
    takes the hyphen forms too (docs/recovery.md's own example saves step-{step}.pt): the hint shows both, and each
    name it shows is one node 0 takes."""
    from nodeweave.entrypoint.recovery.checkpoints import _PLAIN_FILE, STEPLESS

    assert name in STEPLESS
    match = _PLAIN_FILE.fullmatch(name.replace("<N>", "400") + ".pt")
    assert match is not None and match.group(1) == "400"
    assert any("-" in shown for shown in _plain_names())


def test_the_saves_before_the_job_are_said_counted_not_judged():
    """B15: `already holds 4 save(s) up to step 1000` counted a save that was cut off (the row named it unfinished
    a line before): the sentence says the count is of saves found, complete or not. (Since left11a B15 the judge's
    verdicts are said: tests/test_left11a.py.)"""
    from nodeweave.entrypoint.recovery.checkpoints import Checkpoint, Saved
    from nodeweave.entrypoint.recovery.setup import earlier_saves

    line = earlier_saves("ck", Saved(4, 1000.0, 500, Checkpoint("ck/checkpoint-500", 500, "hf-trainer", "ok"),
                                     [("ck/checkpoint-1000", "hf-trainer: cut off")]), now=5000.0)
    assert "4 save(s) from before this job, 1 cut off (checkpoint-1000); the newest complete at step 500" in line


def test_top_wide_draws_more_than_the_table():
    """B23: `top -o wide` drew exactly the `table` picture: wide adds each rank's host, flight-recorder seq and
    seconds inside/outside collectives (top.WIDE_RANK_COLUMNS), every column the table leaves out of the rank rows."""
    import io

    from rich.console import Console

    from nodeweave.cluster.top import WIDE_RANK_COLUMNS, picture

    live = {"schema": "nodeweave.live/1", "now": 10.0, "job": "team", "book": {"generation": 0, "restarts": 0},
            "nodes": [{"node": 0, "host": "alpha", "state": "running", "role": "hub", "heartbeat_age_s": 0.0}],
            "ranks": [{"node": 0, "rank": 0, "host": "alpha", "seq": 4242, "collectives": 7, "state": "in",
                       "collectives_per_s": 2.0, "inside_s": 1.5, "outside_s": 2.5, "straggler_ratio": None}]}

    def drawn(wide):
        out = io.StringIO()
        Console(file=out, width=300).print(picture(live, wide=wide))
        return out.getvalue().split("ranks", 1)[1]  # the ranks table

    narrow, wide = drawn(False), drawn(True)
    for column, _ in WIDE_RANK_COLUMNS.values():
        assert column in wide and column not in narrow, column
    assert "4242" in wide and "4242" not in narrow and narrow != wide
