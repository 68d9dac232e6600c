"""What the replay of the ninth walk found still failing, fix10r1's rows (issue 43, /work/wt/replay10-report.md): one
test per class, parametrized over its members, each failing on the code before its fix."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

import cli_run

SRC = Path(__file__).resolve().parents[1] / "src"
# Text a user or a node wrote that reads as rich markup: a closing tag with no opening one (a traceback before),
# a tag-like prefix (eaten before), a style (applied before).
MARKUP_LIKE = ["loading shards [/workspace/data/a.bin]", "[rank0]: step 1", "[bold]loss[/bold] 0.5"]


def _run_folder(runs: Path, command: str, last_line: str) -> str:
    run_id = "20261130T104500Z-t"
    folder = runs / run_id
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "run_id": run_id, "job": "t", "command": ["train.py", "--tag", command], "target": "local",
        "started": "2026-11-30T10:45:00Z", "ended": None, "exit_code": None, "seconds": None,
        "nodes": [{"node": "node-0", "log": "node-0.log", "exit_code": None, "ended_s": None}]}))
    (folder / "node-0.log").write_text(f"step 0\n{last_line}\n")
    return run_id


def _drawn(renderable) -> str:
    """``renderable`` as nodeweave's own console prints it (the one every verb's table goes through)."""
    from nodeweave.cli.habits.clusteropts import console

    out = console()
    out.file = io.StringIO()
    out.print(renderable)
    return out.file.getvalue()


def _runs_ls(tmp_path, capsys, text):
    runs = tmp_path / "runs"
    _run_folder(runs, text, "step 1")
    return cli_run.in_process(capsys, "runs", "ls", "--runs-dir", str(runs))


def _runs_show(tmp_path, capsys, text):
    runs = tmp_path / "runs"
    run_id = _run_folder(runs, "plain", text)
    return cli_run.in_process(capsys, "runs", "show", run_id, "--runs-dir", str(runs))


def _top(tmp_path, capsys, text):
    from nodeweave.cluster.top import picture

    live = {"job": "t", "nodes": [{"node": 0, "host": text, "state": "running"}]}
    return 0, _drawn(picture(live)), ""


def _doctor_findings(tmp_path, capsys, text):
    from nodeweave.cli.doctor import _findings
    from nodeweave.doctor.findings import Finding

    return 0, _drawn(_findings([Finding("warning", "x", f"NCCL_SOCKET_IFNAME={text}", text)])), ""


def _status(tmp_path, capsys, text):
    from nodeweave.cluster import ClusterOptions, open_backend
    from nodeweave.cluster.status import status_table
    from nodeweave.spec import parse_spec

    spec = "name: st\nimage: {variant: cpu}\nnodes: 1\nlauncher: {script: t.py}\n"
    (tmp_path / "nodeweave.yaml").write_text(spec)
    backend = open_backend(parse_spec(spec, str(tmp_path / "nodeweave.yaml")), tmp_path / "nodeweave.yaml",
                           ClusterOptions().checked())
    row = {"node": "node-0", "reached_as": "podman:x", "platform": None, "up": False, "error": text,
           "mode": None, "rank": None, "plan_hash": None, "plan_errors": [], "run": None, "now": None, "gpu": None}
    return 0, _drawn(status_table(backend, [row], wide=True)), ""


@pytest.mark.parametrize("text", MARKUP_LIKE)
@pytest.mark.parametrize("printer", [_runs_ls, _runs_show, _top, _doctor_findings, _status],
                         ids=["runs-ls-command", "runs-show-last-line", "top-node-text", "doctor-finding", "status-row"])
def test_a_users_or_a_nodes_text_is_printed_as_text_never_read_as_markup(tmp_path, capsys, printer, text):
    """R1, R2: a log line holding ``[/...]`` (runs show) or a recorded command holding ``[/x]`` (runs ls) ended in a
    rich MarkupError traceback; ``[rank0]:`` was eaten and ``[bold]`` applied. Every rich console nodeweave prints
    through reads no markup (nodeweave.usertext.console); nodeweave's own colours are styles, not tags."""
    code, out, err = printer(tmp_path, capsys, text)
    assert code == 0 and "Traceback" not in out + err, (out, err)
    assert text in out.replace("\n", ""), out


def test_every_rich_console_is_made_by_the_one_that_reads_no_markup():
    """R1, R2: the class's mechanism: no rich Console is made, no markup written as a tag, outside
    nodeweave.usertext (a new printer gets markup=False by being made there, not by remembering to escape)."""
    made, tagged = [], []
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "usertext.py" and re.search(r"\bConsole\(", text):
            made.append(str(path))
        if re.search(r"rich\.markup|markup=True|from_markup|\"\[/\]|\[/(bold|red|green|yellow|dim|cyan)\]", text):
            tagged.append(str(path))
    assert not made and not tagged, (made, tagged)


SYSTEM_FOLDERS = ["/var/cache", "/var/cache/apt", "/var/spool", "/var/mail", "/var/backups", "/var/opt", "/var/local",
                  "/usr/src"]


@pytest.mark.parametrize("folder", SYSTEM_FOLDERS)
def test_a_file_in_each_system_folder_is_refused(capsys, folder):
    """A32: --json-out in /var/cache, /var/cache/apt (apt's cache), /var/spool, /var/mail, /var/backups, /var/opt was
    accepted while /var/lib and /var/log were refused: the system folders' table (systemdirs) now holds every /var
    and /usr folder of the system's (the trees: caches, queues, mailboxes, backups; the folders: /opt's state)."""
    if not Path(folder).is_dir():
        pytest.skip(f"{folder} is not on this machine")
    code, out, err = cli_run.in_process(capsys, "bench", "--dry-run", "--json-out", f"{folder}/x.json")
    assert code == 2 and "where nodeweave writes nothing" in err and f"{folder}/x.json" in err, (code, out, err)


@pytest.mark.parametrize("where", ["/", "/usr/local", "/root"])
def test_bench_run_from_a_system_folder_makes_no_runs_folder_there(capsys, monkeypatch, where):
    """R3: bench without a spec, run from / (or /usr/local, /root), planned to make runs/ there (`# would write
    /runs/nodeweave-bench.json`): a folder made directly in / or a system folder is refused, naming --json-out."""
    if not Path(where).is_dir():
        pytest.skip(f"{where} is not on this machine")
    from nodeweave import systemdirs

    # /root as another user's (walk12 A19: root's own home takes a folder, as any user's ~ does)
    monkeypatch.setattr(systemdirs, "own_homes", lambda: {"/home/lab": "your home folder ($HOME)"})
    monkeypatch.chdir(where)
    code, out, err = cli_run.in_process(capsys, "bench", "--dry-run")
    made = str(Path(where) / "runs")
    assert code == 2 and f"{made} would be made directly in {where}" in err and "--json-out FILE" in err, (out, err)


@pytest.mark.parametrize("argv", [["bench", "--dry-run", "--json-out", "/usr/local/runs/x.json"],
                                  ["bench", "--dry-run", "--json-out", "/nodeweave-new/x.json"]],
                         ids=["json-out-new-folder-in-usr-local", "json-out-new-folder-in-root"])
def test_a_new_folder_directly_in_a_system_folder_is_refused_for_a_file(capsys, argv):
    """R3: `--json-out /usr/local/runs/x.json` was accepted while `--json-out /usr/local/x.json` was refused: the rule
    judged only the file's own folder, and the verb makes the missing ones."""
    code, out, err = cli_run.in_process(capsys, *argv)
    assert code == 2 and "would be made directly in" in err, (out, err)


@pytest.mark.parametrize("folder", ["/runs", "/usr/local/runs", "/mnt/nodeweave-runs/a"])
def test_a_new_folder_directly_in_a_system_folder_is_refused_for_a_folder_option(folder):
    """R3: `run --runs-dir /runs` planned its run folders in a folder it would make in /: the folder options' rule
    (failures.own_folder_problem, every --runs-dir, --out, --capture) refuses it as the file options' does."""
    from nodeweave.errors import UsageError
    from nodeweave.failures import writable_dir

    with pytest.raises(UsageError, match="would be made directly in"):
        writable_dir(Path(folder), "--runs-dir", runs_ok=True)


def test_a_new_folder_in_scratch_or_an_own_folder_is_still_made(tmp_path):
    """R3 (what stays): /tmp takes a new folder, and so does a folder of the user's own."""
    from nodeweave.failures import writable_dir

    assert writable_dir(tmp_path / "a" / "b", "--runs-dir", runs_ok=True) == tmp_path / "a" / "b"
    assert writable_dir(Path("/tmp/nodeweave-fix10r1-never-made/runs"), "--runs-dir", runs_ok=True)


def _port_rows():
    from test_walk9_fix9b2 import PORT_OPTIONS, PORT_VARIABLES

    return [("variable", name) for name in PORT_VARIABLES] + [("option", f"{verb} {option}")
                                                             for verb, option in PORT_OPTIONS]


@pytest.mark.parametrize("value", ["0", "70000", "29500x"])
@pytest.mark.parametrize("kind,name", _port_rows())
def test_each_ports_refusal_gives_an_example_that_port_takes(tmp_path, kind, name, value):
    """B16: every port's refusal said "e.g. 9464", the metrics port's default, which the master and exchange ports
    then refuse as the metrics port's; a malformed port said "e.g. 5". Each port's refusal gives its own default, and
    following it is taken."""
    import os

    (tmp_path / "train.py").write_text("print('hi')\n")
    env = {"PATH": os.environ["PATH"], "NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "HOME": str(tmp_path)}
    if kind == "option":
        verb, option = name.split()
        argv = lambda port: ["--node", verb, option, port]  # noqa: E731
    else:
        argv = lambda port: ["--explain", "--", "train.py"]  # noqa: E731
    out = cli_run.entrypoint(*argv(value), env=dict(env, **({name: value} if kind == "variable" else {})),
                             cwd=tmp_path, timeout=60)
    assert out.returncode == 2 and "e.g. 5;" not in out.stderr, out.stderr
    example = re.search(r"\(e\.g\. (\d+)", out.stderr.splitlines()[-1]).group(1)
    if kind == "variable":
        taken = cli_run.entrypoint(*argv(example), env=dict(env, **{name: example}), cwd=tmp_path, timeout=60)
        assert taken.returncode == 0, (example, taken.stderr)
    else:
        assert example == "9464"


@pytest.mark.parametrize("argv,shown", [
    (["dashboard", "--run", "last", "--bind", "\u202e", "--port", "0"], "--bind \\u202e"),
    (["bench", "--dry-run", "--json-out", "/x\u202e.json"], "--json-out /x\\u202e.json"),
    (["runs", "ls", "--runs-dir", "/nonexist\u202e"], "--runs-dir /nonexist\\u202e"),
    (["runs", "show", "a\u202eb"], "'a\\u202eb'"),
    (["status", "--bogus\x07"], "--bogus\\x07"),
], ids=["dashboard-bind", "bench-json-out", "runs-dir", "runs-show-id", "click-option"])
def test_a_value_a_terminal_would_not_show_is_escaped_in_the_error_line(tmp_path, capsys, monkeypatch, argv, shown):
    """R4: `dashboard --bind $'\\u202e'` echoed the right-to-left override raw, which reorders the rest of the
    terminal line (top --url writes it as \\u202e). Every error line cli.main writes escapes such a character."""
    runs = tmp_path / "runs"
    _run_folder(runs, "plain", "step 1")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli_run.in_process(capsys, *argv)
    line = cli_run.one_line(err)
    assert code != 0 and shown in line and line.isprintable(), line


FAILED_NODES = {"job": "w9", "nodes": [{"node": 0, "state": "failed", "role": "hub"},
                                       {"node": 1, "state": "failed", "role": "member"}], "ranks": []}
NO_RANK_YET = {"job": "w9", "nodes": [{"node": 0, "state": "running", "role": "hub"}], "ranks": []}
MOVING = {"job": "w9", "nodes": [{"node": 0, "state": "running", "role": "hub"}],
          "ranks": [{"node": 0, "rank": 0, "state": "in all_reduce", "seq": 3}]}


def _top_header(live):
    from nodeweave.cluster.top import picture

    return _drawn(picture(live)).splitlines()[0]


def _page_header(live):
    from nodeweave.cluster import dashboard

    page = (Path(dashboard.__file__).parent / "dashboard.html").read_text()
    assert "doc.motion" in page  # the page draws the document's word, not its own
    return dashboard.state([(0.0, live)], {}, "test")["motion"]["said"]


@pytest.mark.parametrize("header", [_top_header, _page_header], ids=["top", "dashboard"])
@pytest.mark.parametrize("live,said", [(FAILED_NODES, "no node running (2 failed)"), (NO_RANK_YET, "no rank seen yet"),
                                       (MOVING, "moving")], ids=["nodes-failed", "no-rank", "moving"])
def test_the_headers_word_says_moving_only_while_a_node_runs_and_a_rank_is_seen(header, live, said):
    """A18: top's header said `moving` above two nodes failed and no rank at all; the dashboard's header draws the
    same word (dashboard.motion, one judge for both)."""
    line = header(live)
    assert said in line and (said == "moving" or "moving" not in line.replace("not moving", "")), line


@pytest.mark.parametrize("signame,code", [("SIGTERM", 143), ("SIGINT", 130)])
@pytest.mark.parametrize("rank,extra", [(0, {}), (1, {}), (2, {"NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1"})],
                         ids=["node-0-at-its-check-in", "node-1-waiting-for-node-0", "a-spare-waiting"])
def test_a_stop_before_any_launch_ends_the_node_in_its_one_line(tmp_path, rank, extra, signame, code):
    """B23: a spare's SIGINT and node 0's SIGTERM at its check-in ended the node (130, 143) without the one line a
    stop with no launcher running gets once a launcher has run (`stopped by SIGTERM with no launcher running`):
    the same handler holds from the node's start."""
    import os
    import signal
    import subprocess
    import sys

    from free_ports import free_port_pair
    from recovery_harness import heard_until

    (tmp_path / "train.py").write_text("print('step 1')\n")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", TMPDIR=str(tmp_path),
               NODEWEAVE_NNODES="3" if extra else "2", NODEWEAVE_NODE_RANK=str(rank),
               NODEWEAVE_MASTER_ADDR="127.0.0.1", NODEWEAVE_MASTER_PORT=str(free_port_pair()),
               NODEWEAVE_METRICS="off", NODEWEAVE_WAIT_TIMEOUT="120", **extra)
    node = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        heard = heard_until(node.stderr, "waiting for")  # at its check-in, or waiting for node 0's
        node.send_signal(getattr(signal, signame))
        err = heard + node.communicate(timeout=60)[1]
    finally:
        if node.poll() is None:
            node.kill()
            node.communicate()
    assert node.returncode == code, err
    assert f"stopped by {signame} with no launcher running (exit {code})" in err.splitlines()[-1], err


def _left_out_live(tmp_path):
    import time

    from nodeweave.entrypoint.metrics.live import Live

    class Settings:
        env = {"TMPDIR": str(tmp_path)}

        def get(self, key, default=None):
            return {"metrics": False}.get(key, default)

    live = Live(Settings(), lambda line: None)
    live.step = ("plain", 121, time.time() - 60)  # generation 1's, when node 0 still trained
    live.generation = {"generation": 2, "node_0_trains": False, "ended": None, "fault": None, "steps": [],
                       "began": time.time() - 50}
    return live


def _said_by_status(live):
    from nodeweave.entrypoint.metrics.collect import status

    doc = status(live)
    return doc["step"], doc["steps_per_s"], doc["step_note"]


def _said_by_metrics(live):
    from nodeweave.entrypoint.metrics.collect import families

    found = {name: samples for name, _, _, samples in families(live)}
    step = found.get("nodeweave_step")
    return (step[0][1] if step else None), found["nodeweave_steps_per_second"][0][1], live.step_note()


@pytest.mark.parametrize("said", [_said_by_status, _said_by_metrics], ids=["status.json", "metrics"])
def test_node_0_left_out_of_a_generation_says_the_step_is_unknown_and_the_rate_stays(tmp_path, said):
    """R5: with node 0 left out of generation 2 (its ranks print nothing), /status.json and /metrics kept generation
    1's step 121 as the job's, and nodeweave_steps_per_second had no series at all, so the documented alert
    (`< 0.1`) had nothing to fire on: the step is unknown, said so, and the rate is 0 (node 0 sees no step)."""
    step, rate, note = said(_left_out_live(tmp_path))
    assert step is None and rate == 0.0, (step, rate)
    assert "node 0 is left out of generation 2" in note and "step 121" in note, note


HOSTS = ["-t", "hosts", "--host", "gpu01.invalid", "--host", "gpu02.invalid", "--remote-dir", "/srv/job"]


@pytest.mark.parametrize("argv", [["sync", *HOSTS, ".", "/srv/job"], ["sync", *HOSTS], ["sync", "--check", *HOSTS]],
                         ids=["sync-src-dest", "sync", "sync-check"])
def test_sync_to_hosts_ssh_never_reached_ends_in_the_one_line_every_verb_gives(tmp_path, capsys, monkeypatch, argv):
    """A35: `sync $H . /srv/job` to hosts ssh cannot reach printed a table of failed rows, ssh's own words per host
    and exit 1, where status, run, logs ... (and sync to an unreachable Kubernetes API) exit 3 in one line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('step 1')\n")
    assert cli_run.in_process(capsys, "init")[0] == 0
    code, out, err = cli_run.in_process(capsys, *argv)
    line = cli_run.one_line(err)
    undone = "nothing checked on" if "--check" in argv else "nothing synced to"
    assert code == 3 and f"{undone} gpu01.invalid, gpu02.invalid: ssh cannot reach" in line, (code, err)
    assert "failed" not in out, out
