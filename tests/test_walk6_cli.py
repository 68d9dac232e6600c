"""walk6's findings on the CLI's verbs and habits (issue 43, /work/wt/walk6-report.md rows W1, W11, W13/W42, W14,
W15, W22, W26, W29, W30, W32, W38), each fixed as a class and walked here over the registry the rule lives in, so a
new row of it is covered too. Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import pytest

import live_status
from cli_run import in_process as run_cli
from team_folder import make_job_folder
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- W13, W42: a NODEWEAVE_* variable only the nodes read, left in the shell, is named once, as a typo is -----------

def node_variable_rows():
    from nodeweave.cli.habits.variables import node_variables

    return sorted(node_variables())


def test_the_table_holds_every_variable_the_walk_left_in_the_shell():
    assert {"NODEWEAVE_NNODES", "NODEWEAVE_RECOVERY", "NODEWEAVE_STALL_TIMEOUT", "NODEWEAVE_MODE",
            "NODEWEAVE_RUNTIME"} <= set(node_variable_rows())


@pytest.mark.parametrize("argv", [("validate",), ("up", "--dry-run"), ("run", "--dry-run"),
                                  ("exec", "--dry-run", "--", "true"), ("check", "--dry-run")])
def test_every_variable_only_the_nodes_read_is_named_once_on_every_verb(capsys, job_folder, monkeypatch, argv):
    from nodeweave.cli.habits.variables import node_variables

    table = node_variables()
    for name in table:
        monkeypatch.setenv(name, "4")
    code, out, err = run_cli(capsys, *argv)
    for name, instead in table.items():
        named = [line for line in err.splitlines()  # one line names them all (walk16b B1)
                 if line.startswith("nodeweave: warning: ") and f"{name}=4 " in line]
        assert len(named) == 1 and "not by this command" in named[0] and instead in named[0], (name, err)
        assert f"{name}=4 from this environment" not in out  # said once: not again in the plan


def test_slurm_runtime_is_named_with_the_spec_field_that_sets_it(capsys, job_folder, monkeypatch):
    monkeypatch.setenv("NODEWEAVE_RUNTIME", "apptainer")
    code, out, err = run_cli(capsys, "run", "-t", "slurm", "--dry-run")
    assert "NODEWEAVE_RUNTIME=apptainer in this environment is read by the rendered slurm/job.sbatch" in err
    assert "slurm.runtime" in err
    assert "NODEWEAVE_MODE" not in err  # only what is set is named


def test_a_variable_the_cli_reads_itself_is_not_in_the_table():
    from nodeweave.cli.habits.variables import CLI_VARIABLES

    assert not set(CLI_VARIABLES) & set(node_variable_rows())


# -- W30: -o/--json/--spec between a group and its sub-verb (`runs -o json ls`) are the sub-verb's -----------------

def group_sub_verbs():
    from nodeweave.cli import GROUPS

    return [(group, sub) for group, subs in GROUPS.items() for sub in subs]


@pytest.mark.parametrize("group, sub", group_sub_verbs())
@pytest.mark.parametrize("options", [["-o", "json"], ["--json"], ["--output=yaml"], ["--spec", "s.yaml"]])
def test_options_between_a_group_and_its_sub_verb_go_after_the_sub_verb(group, sub, options):
    from nodeweave.cli import verb_options_first

    assert verb_options_first([group, *options, sub, "x"]) == [group, sub, *options, "x"]
    assert verb_options_first([*options, group, sub]) == [group, sub, *options]  # before the group, as before


@pytest.mark.parametrize("argv", [("runs", "-o", "json", "ls"), ("runs", "--json", "ls"),
                                  ("image", "-o", "json", "variants")])
def test_a_group_takes_the_format_before_its_sub_verb(capsys, job_folder, argv):
    import json

    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    json.loads(out)


def test_a_group_with_options_and_no_sub_verb_names_where_they_go(capsys, job_folder):
    from nodeweave.errors import EXIT_USAGE

    code, out, err = run_cli(capsys, "runs", "-o", "json")
    assert code == EXIT_USAGE and "`nodeweave runs ls -o json`" in err and "status" not in err, err


# -- W1: a verb that refuses -o names a command that really prints its data; top prints node 0's /status.json ------

LIVE = live_status.document()  # what node 0 really serves: top checks the shape it reads


@pytest.fixture
def status_url():
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Node0(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(LIVE).encode()
            self.send_response(200 if self.path == "/status.json" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Node0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("fmt", [("-o", "json"), ("--json",)])
def test_top_prints_the_status_its_picture_is_drawn_from(capsys, job_folder, status_url, fmt):
    import json

    code, out, err = run_cli(capsys, "top", "--url", status_url, *fmt)
    assert code == 0, err
    assert json.loads(out) == LIVE


def test_every_refusal_of_o_names_commands_that_take_o():
    """Each verb NO_FORMAT lists points at commands whose verb takes -o and prints that data."""
    import re

    import typer.main

    from nodeweave.cli import NO_FORMAT, app

    root = typer.main.get_command(app)
    assert "top" not in NO_FORMAT
    for verb, hint in NO_FORMAT.items():
        for named in re.findall(r"`nodeweave ([a-z]+(?: [a-z]+)?)[^`]*-o json`", hint):
            words = named.split()
            command = root.get_command(None, words[0])
            if len(words) > 1 and hasattr(command, "get_command"):
                command = command.get_command(None, words[1])
            opts = {o for p in command.params for o in getattr(p, "opts", ())}
            assert "-o" in opts, (verb, named)
        assert "-o json`" in hint, hint


# -- W11: a sweep's (or -e's) variable in the command in any common reference spelling gets the note ------------

@pytest.mark.parametrize("typed", ["$LR", "${LR}", "$(LR)", "{LR}", "{{LR}}", "{{ LR }}", "%LR%", "lr={LR}"])
@pytest.mark.parametrize("given", [("--sweep", "LR=1e-3,3e-4"), ("-e", "LR=1e-3")])
def test_a_variable_referenced_in_the_command_in_any_spelling_is_noted(capsys, job_folder, typed, given):
    code, out, err = run_cli(capsys, "run", "--dry-run", *given, "--", "train.py", "--lr", typed)
    assert code == 0, err
    reference = typed.removeprefix("lr=")
    assert f"note: {reference} in the command reaches the script as typed" in out + err, out + err


@pytest.mark.parametrize("typed", ["{X}", "%X%", "{{X}}", "{}"])
def test_a_brace_that_names_no_variable_of_the_run_gets_no_note(capsys, job_folder, typed):
    code, out, err = run_cli(capsys, "run", "--dry-run", "--sweep", "LR=1,2", "--", "train.py", "--x", typed)
    assert code == 0 and "reaches the script as typed" not in out + err, out + err


# -- W29: run --nodes/--node naming the whole job under recovery is the whole job (a note), not refused ------------

RECOVERY = "recovery: {enabled: true, spares: 1, checkpoint_dir: checkpoints}\n"


@pytest.fixture
def recovery_folder(job_folder):
    (job_folder / "nodeweave.yaml").write_text((job_folder / "nodeweave.yaml").read_text() + RECOVERY)
    return job_folder


@pytest.mark.parametrize("args", [["--nodes", "3"], ["--nodes", "2"], ["--node", "0-2"],
                                  ["--node", "node-0,node-1,node-2"]])
def test_naming_the_whole_job_under_recovery_is_a_note(capsys, recovery_folder, args):
    code, out, err = run_cli(capsys, "run", "--dry-run", *args)
    assert code == 0, err
    assert "names the whole job (2 training node(s) and 1 spare(s))" in out + err and "leave it out" in out + err
    plain = run_cli(capsys, "run", "--dry-run")[1]
    assert [line for line in out.splitlines() if "note:" not in line] == plain.splitlines()  # the same plan


@pytest.mark.parametrize("args", [["--nodes", "1"], ["--node", "0,1"], ["--node", "2"]])
def test_picking_some_nodes_under_recovery_is_refused_saying_leave_it_out(capsys, recovery_folder, args):
    from nodeweave.errors import EXIT_USAGE

    code, out, err = run_cli(capsys, "run", "--dry-run", *args)
    assert code == EXIT_USAGE and "leave it out (the run uses every node)" in err, err
    assert "run on all of them" not in err


# -- W15: a pattern (any value with a backslash) is quoted as typed, not with repr's doubled backslashes ----------

@pytest.mark.parametrize("text, quoted", [("global_step=\\d+", "'global_step=\\d+'"), ("it's \\d", "\"it's \\d\""),
                                          ("plain", "'plain'"), ("a\nb\\", repr("a\nb\\"))])
def test_as_typed_reads_back_as_the_value(text, quoted):
    from nodeweave.entrypoint.quoting import as_typed

    assert as_typed(text) == quoted


def test_every_pattern_message_quotes_the_pattern_as_typed(capsys, job_folder, monkeypatch):
    import cli_run

    typed = "global_step=\\d+"
    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text() + "metrics: {step_pattern: 'global_step=\\d+'}\n")
    code, out, err = run_cli(capsys, "validate")
    assert code == 2 and f"metrics.step_pattern: '{typed}' has no group" in err and "\\\\" not in err, err
    spec.write_text(spec.read_text().replace("metrics: {step_pattern: 'global_step=\\d+'}\n", ""))
    for argv in (("run", "--dry-run", "--sweep", "A=1,2", "--metric", "loss \\d+("),
                 ("run", "--dry-run", "--sweep", "A=1,2", "--metric", "loss \\d+ words"),
                 ("runs", "compare", "a", "b", "--metric", "x\\d(")):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and f"--metric '{argv[-1]}'" in err and "\\\\" not in err, err
    env = {"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1",
           "NODEWEAVE_STEP_PATTERN": typed}
    out = cli_run.entrypoint("--explain", "--", "train.py", env=env, cwd=job_folder)
    assert f"'{typed}' (from NODEWEAVE_STEP_PATTERN)" in out.stderr + out.stdout and "\\\\" not in out.stderr, out.stderr


def test_a_spec_value_with_a_backslash_is_shown_as_written(capsys, job_folder):
    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text().replace("name: proj", "name: 'a\\b'"))
    code, out, err = run_cli(capsys, "validate")
    assert code == 2 and "name: got 'a\\b';" in err, err


# -- W26: logs --rank on torchrun's [defaultN]: (local rank) lines: the run's plans give the global rank ----------

def _plan(node_rank: int, procs: int, **extra) -> str:
    import json

    return json.dumps({"schema": "nodeweave.entrypoint/1", "topology": {
        "node_rank": {"value": node_rank, "source": "x"}, "nproc_per_node": {"value": procs, "source": "x"},
        "elastic": False}, **extra})


def _tee_run(root, procs: int, plans: bool = True, **extra):
    import json

    folder = root / "runs" / "20261129T120000Z-proj"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"job": "proj", "ended": "2026-11-29T12:00:00Z"}))
    for node in range(2):
        (folder / f"node-{node}.log").write_text("".join(f"[default{local}]:step 1 on node {node} local {local}\n"
                                                         for local in range(procs)))
        if plans:
            (folder / f"node-{node}.plan.json").write_text(_plan(node, procs, **extra))
    return folder


@pytest.mark.parametrize("procs, rank, node, local", [(1, 0, 0, 0), (1, 1, 1, 0), (2, 3, 1, 1), (2, 2, 1, 0)])
def test_logs_rank_maps_torchruns_local_rank_to_the_global_one(capsys, job_folder, procs, rank, node, local):
    _tee_run(job_folder, procs)
    code, out, err = run_cli(capsys, "logs", "--run", "last", "--rank", str(rank))
    assert code == 0, err
    assert out.count("step 1") == 1 and f"on node {node} local {local}" in out and f"r{rank}]" in out, out


@pytest.mark.parametrize("extra", [{"plans": False}, {"role": {"kind": "training node", "generation": 1}}])
def test_local_ranks_no_plan_numbers_name_what_rank_takes(capsys, job_folder, extra):
    from nodeweave.errors import EXIT_USAGE

    plans = extra.pop("plans", True)
    _tee_run(job_folder, 1, plans=plans, **extra)
    code, out, err = run_cli(capsys, "logs", "--run", "last", "--rank", "1")
    assert code == EXIT_USAGE and "accepted: --node I" in err and "a rank they mark: local" not in err, err


# -- W38: validate echoes nodes as written; under recovery min_nodes is a floor, not an elastic range --------------

@pytest.mark.parametrize("nodes, recovery, line, data", [
    ("4", "recovery: {enabled: true, spares: 1, min_nodes: 2, checkpoint_dir: checkpoints}\n",
     "4 node(s) (recovery down to 2) x", {"nodes": 4, "nodes_max": 4, "min_nodes": 2, "elastic": False}),
    ("4", "recovery: {enabled: true, spares: 1, checkpoint_dir: checkpoints}\n",
     "4 node(s) x", {"nodes": 4, "nodes_max": 4, "min_nodes": 4, "elastic": False}),
    ('"2:4"', "", "2:4 node(s) x", {"nodes": 2, "nodes_max": 4, "min_nodes": 2, "elastic": True}),
    ("3", "", "3 node(s) x", {"nodes": 3, "nodes_max": 3, "min_nodes": 3, "elastic": False}),
])
def test_validate_shows_nodes_as_the_spec_writes_them(capsys, job_folder, nodes, recovery, line, data):
    import json

    spec = job_folder / "nodeweave.yaml"
    spec.write_text(spec.read_text().replace("nodes: 2", f"nodes: {nodes}") + recovery)
    code, out, err = run_cli(capsys, "validate")
    assert code == 0 and f"valid: proj, {line} " in out, out + err
    assert "2:4" not in out or not recovery
    code, out, err = run_cli(capsys, "validate", "-o", "json")
    shown = json.loads(out)
    assert {key: shown[key] for key in data} == data


# -- W32: a refused node count hides only the checks that weigh it, never another section's own mistakes ---------

OWN_MISTAKES = {
    "recovery: {enabled: yes}\n": "recovery.enabled: got 'yes'",
    "recovery: {enabled: true, spares: \"1\"}\n": "recovery.spares: got the string '1'",
    "recovery: {enabled: false, max_restarts: -1}\n": "recovery.max_restarts",
    "metrics: {port: http}\n": "metrics.port",
    "gpus_per_node: many\n": "gpus_per_node",
}


@pytest.mark.parametrize("wrong_count", ["nodes: two\n", "nodes: 2\nhosts: 5\n", "nodes: 0\n"])
@pytest.mark.parametrize("mistake", sorted(OWN_MISTAKES))
def test_a_wrong_node_count_does_not_hide_another_sections_mistake(capsys, tmp_path, monkeypatch, wrong_count,
                                                                   mistake):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "nodeweave.yaml").write_text("name: proj\nimage: {variant: cpu}\nlauncher: {script: train.py}\n"
                                             + wrong_count + mistake)
    code, out, err = run_cli(capsys, "validate")
    first = wrong_count.splitlines()[-1].split(":")[0]
    assert code == 2 and f"{first}: got" in err and OWN_MISTAKES[mistake] in err, err


# -- W22: the dashboard on a wildcard names URLs a browser can open, warns it is exposed; --open says it found none --

def test_a_wildcard_bind_gives_every_reachable_url_and_loopback_gives_one():
    from nodeweave.cli.dashboard import exposure_warning, page_urls

    assert page_urls("127.0.0.1", 8080) == ["http://127.0.0.1:8080/"]
    wild = page_urls("0.0.0.0", 8080)
    assert "0.0.0.0" not in " ".join(wild) and wild[-1] == "http://127.0.0.1:8080/" and all(":" not in u[7:-6]
                                                                                             for u in wild)
    assert page_urls("::", 8080)[-1] == "http://[::1]:8080/"
    for bind in ("0.0.0.0", "::", "192.0.2.7", "gpu01"):
        assert f"--bind {bind} serves the page to every machine that can reach this one" in exposure_warning(bind)
    for bind in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert exposure_warning(bind) == ""


@pytest.mark.parametrize("browser, said", [("false", True), ("true", False)])
def test_the_dashboard_on_every_address_warns_and_open_says_when_no_browser_opened(job_folder, browser, said):
    import os
    import signal
    import subprocess

    import cli_run

    _tee_run(job_folder, 1)
    env = {"PATH": "/usr/bin:/bin", "HOME": home_beside(job_folder), "BROWSER": browser}
    proc = cli_run.popen([*cli_run.NODEWEAVE, "dashboard", "--run", "last", "--bind", "0.0.0.0", "--port", "0",
                          "--open"], env=env, cwd=job_folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=cli_run.ctrl_c_reaches_it)
    try:
        line = proc.stdout.readline()
        assert "dashboard at http://" in line and "0.0.0.0" not in line and "http://127.0.0.1:" in line, line
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        finally:
            if proc.poll() is None:
                proc.kill()
    err = proc.stderr.read()
    assert "warning: --bind 0.0.0.0 serves the page to every machine that can reach this one" in err, err
    assert ("--open found no browser on this machine" in err) == said, err


# -- W14: every record of a run folder beside run.json gets run.json's rule: damaged, piped or linked is said --------

DAMAGE = {
    "not JSON": lambda path: path.write_text("garbage\n"),
    "a field of the wrong type": lambda path: path.write_text('{"generations": "x", "columns": "x", "history": 3}'),
    "a list": lambda path: path.write_text("[1, 2]"),
    "a named pipe": lambda path: __import__("os").mkfifo(path),
    "a folder": lambda path: path.mkdir(),
    "a link": lambda path: path.symlink_to("/etc/hostname"),
}


def run_records():
    from nodeweave.runs.history import RUN_RECORDS

    return sorted(RUN_RECORDS)


@pytest.mark.parametrize("record", run_records())
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_record_of_a_run_is_named_by_runs_show_and_the_dashboard(capsys, job_folder, record, damage):
    import json

    from nodeweave.cli.dashboard import _finished_run
    from nodeweave.cluster import dashboard
    from nodeweave.runs.history import record_problems

    folder = _tee_run(job_folder, 1)
    DAMAGE[damage](folder / record)
    code, out, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0 and f"not shown: {record}" in out, out + err
    code, out, err = run_cli(capsys, "runs", "show", "last", "-o", "json")
    problems = json.loads(out)["problems"]
    assert len(problems) == 1 and problems[0].startswith(record), problems
    path, data, timeline, book, heat = _finished_run("last", None, None)
    assert {"goodput.json": timeline, "recovery.json": book, "heat.json": heat}[record] is None
    state = dashboard.run_state(path, data, timeline, book, heat, record_problems(path))
    assert state["problems"] == problems and state["live"]["timeline"] is None  # never served raw to the page


def test_runs_compare_names_the_damaged_record_behind_its_dash(capsys, job_folder):
    import json

    folder = _tee_run(job_folder, 1)
    other = folder.with_name("20261129T130000Z-proj")
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"job": "proj", "ended": "2026-11-29T13:00:00Z"}))
    (folder / "goodput.json").write_text("garbage\n")
    code, out, err = run_cli(capsys, "runs", "compare", folder.name, other.name)
    assert code == 0 and f"warning: {folder.name}/goodput.json not JSON" in err, err


def test_the_page_shows_the_problems_of_the_folder():
    from nodeweave.cluster.dashboard import PAGE

    assert "doc.problems" in PAGE.read_text()


def test_a_whole_record_is_read_and_no_problem_said(capsys, job_folder):
    import json

    folder = _tee_run(job_folder, 1)
    (folder / "goodput.json").write_text(json.dumps({"launched": 1.0, "ended": 11.0, "generations": [
        {"generation": 0, "first": 2.0, "last": 11.0, "steps": [[2.0, 1], [11.0, 10]]}]}))
    code, out, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0 and "goodput:" in out and "not shown" not in out, out + err
