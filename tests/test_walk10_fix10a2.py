"""The tenth walk, part A, rows A10, A13, A14, A16, A19, A26, A30 (issue 43, /work/wt/walk10a-report.md): each row's
class, one test per class, each failing on the code before its fix; each test's docstring starts with the rows it
covers."""

from __future__ import annotations

import os

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A30: the shell's current folder removed under it ---------------------------------------------------------------

@pytest.mark.parametrize("words", [["validate"], ["runs", "ls"], ["init", "--dry-run"], ["render", "all", "--dry-run"],
                                   ["up", "--dry-run"], ["status"]], ids=" ".join)
def test_a_removed_current_folder_is_named_as_such(capsys, tmp_path, monkeypatch, words):
    """A30: `cannot use: No such file or directory` named no path and no subject; the folder the shell is in is gone."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    code, out, err = run_cli(capsys, *words)
    line = one_line(err)
    assert code == EXIT_USAGE and "current folder no longer exists" in line and "cd to the project" in line, line


# -- A19: a quote or a backslash at any sweep value's edge ----------------------------------------------------------

@pytest.mark.parametrize("verb", [["run"], ["bench"]], ids=" ".join)
@pytest.mark.parametrize("sweep, comma", [('LR="1e-3,3e-4"', True), ('A="x,y",z', True), ("A=x\\,y,z", True),
                                          ("LR='1e-3,3e-4'", True), ('LR="1e-3",3e-4', False),
                                          ("LR=1e-3,3e-4'", False)])
def test_a_quote_or_backslash_at_a_sweep_values_edge_is_refused(capsys, team, verb, sweep, comma):
    """A19: only a value quoted at both ends was refused; `LR="1e-3,3e-4"` sent `"1e-3` and `3e-4"` to the nodes, and
    the docs had no word on a value holding a comma."""
    code, out, err = run_cli(capsys, *verb, "--sweep", sweep, "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and "is not accepted" in line and "written bare" in line, line
    assert ("can hold a comma" in line) == comma, line


# -- A26: a node log that is not a file: the hint names only what the reading verb takes -----------------------------

def _run_folder(root, run_id, line):
    import json

    run = root / "runs" / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": run_id, "job": "team", "started": "2026-11-29T10:00:00Z",
                                              "ended": "2026-11-29T10:05:00Z", "exit_code": 0, "nodes": []}))
    (run / "node-0.log").write_text(line + "\n")
    return run


READERS = {"logs": ["logs", "--run", "20261129T100000Z-team"],
           "runs compare": ["runs", "compare", "20261129T100000Z-team", "20261129T110000Z-team", "--metric",
                            "loss ([0-9.]+)"]}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_node_log_that_is_a_pipe_is_refused_with_a_hint_the_verb_takes(capsys, team, reader):
    """A26: `runs compare` said "leave that node out with --node", an option only `logs` has."""
    import re

    from cli_run import leaves

    first = _run_folder(team, "20261129T100000Z-team", "loss 1.5")
    _run_folder(team, "20261129T110000Z-team", "loss 1.0")
    (first / "node-0.log").unlink()
    os.mkfifo(first / "node-0.log")
    code, out, err = run_cli(capsys, *READERS[reader])
    line = one_line(err)
    assert code == EXIT_USAGE and "named pipe" in line, line
    command = dict((" ".join(w), c) for w, c in leaves())[reader]
    taken = {name for p in command.params for name in getattr(p, "opts", [])}
    named = set(re.findall(r"with (--[\w-]+)", line))
    assert named <= taken, (line, named - taken)
    assert reader != "logs" or named == {"--node"}, line


# -- A14: the command launcher's program a path that is no program ---------------------------------------------------

KINDS = {"folder": (lambda p: p.mkdir(), "is a folder, not a program", 126),
         "pipe": (lambda p: os.mkfifo(p), "is a named pipe, not a program", 126),
         "device": (None, "is a character device, not a program", 126),
         "dangling link": (lambda p: p.symlink_to(p.parent / "gone"), "which does not exist", 127)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_path_command_that_is_no_program_is_named_before_the_plan(tmp_path, kind):
    """A14: `-- /some/folder` started the node and then said "launcher '/some/folder' not found on PATH ...;
    choose another with NODEWEAVE_LAUNCHER": a path is never looked up in PATH, and the launcher is not at fault."""
    from cli_run import entrypoint

    make, said, code = KINDS[kind]
    program = "/dev/null" if make is None else str(tmp_path / "thing")
    if make is not None:
        make(tmp_path / "thing")
    done = entrypoint("--nnodes", "1", "--launcher", "command", "--", program, cwd=tmp_path,
                      env={**os.environ, "NODEWEAVE_METRICS": "off"}, timeout=60)
    assert done.returncode == code and said in done.stderr, done.stderr
    assert "PATH" not in done.stderr and "node 0 of 1" not in done.stdout + done.stderr, done.stderr


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_supervise_resolve_names_a_path_as_what_it_is(tmp_path, kind):
    """A14: the start's own resolve (where exec finds out) says the same words as the check before the plan."""
    from nodeweave.entrypoint.errors import EntrypointError
    from nodeweave.entrypoint.running.supervise import resolve

    make, said, code = KINDS[kind]
    program = "/dev/null" if make is None else str(tmp_path / "thing")
    if make is not None:
        make(tmp_path / "thing")
    with pytest.raises(EntrypointError) as caught:
        resolve(program, "/usr/bin:/bin")
    assert said in str(caught.value) and "PATH" not in str(caught.value), caught.value
    assert caught.value.exit_code == code


# -- A13: what is in the way of nodeweave's own files, named from a subfolder of the project -------------------------

IN_THE_WAY = {"file": lambda p: p.write_text("x"), "pipe": lambda p: os.mkfifo(p),
              "link": lambda p: p.symlink_to("/etc/hostname")}


@pytest.mark.parametrize("words", [["render", "all", "--dry-run"], ["up", "--dry-run"]], ids=" ".join)
@pytest.mark.parametrize("kind", sorted(IN_THE_WAY))
def test_a_state_folder_in_the_way_is_named_by_a_path_the_user_can_act_on(capsys, team, monkeypatch, words, kind):
    """A13: from a subfolder of the project (README allows it) `.nodeweave is a file` named a path that was not
    there; the sibling refusal for runs/ names the whole path."""
    IN_THE_WAY[kind](team / ".nodeweave")
    deep = team / "src" / "deep"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    code, out, err = run_cli(capsys, *words)
    line = one_line(err)
    assert code == EXIT_USAGE and line.startswith(f"nodeweave: error: {team / '.nodeweave'} is "), line
    monkeypatch.chdir(team)
    code, out, err = run_cli(capsys, *words)
    assert code == EXIT_USAGE and one_line(err).startswith("nodeweave: error: .nodeweave is "), err


# -- A10: --overlay on a verb that applies nothing; a missing overlay folder whatever this machine has ---------------

def _reach_verbs():
    """Every verb that takes the reach flags (habits.clusteropts.reach_options puts --overlay on each)."""
    from cli_run import leaves

    return [words for words, command in leaves()
            if "--overlay" in {name for p in command.params for name in getattr(p, "opts", [])}]


def test_the_walk_finds_up_down_and_run_among_the_verbs_with_overlay():
    verbs = _reach_verbs()
    assert ["up"] in verbs and ["down"] in verbs and ["run"] in verbs and len(verbs) >= 10, verbs


@pytest.mark.parametrize("words", [w for w in _reach_verbs() if w not in (["up"], ["down"])], ids=" ".join)
@pytest.mark.parametrize("target", ["kubernetes", "local"])
def test_overlay_on_a_verb_that_applies_nothing_is_refused(capsys, team, words, target):
    """A10: `run -t kubernetes --overlay nosuch --dry-run` planned its run (exit 0), `status` asked the cluster;
    on local the refusal hinted --target kubernetes, where it does nothing either."""
    from nodeweave.cluster.options import FLAG_VERBS

    assert FLAG_VERBS["overlay"][1] == ("up", "down")
    tail = {"exec": ["--", "true"]}.get(words[0], [])
    code, out, err = run_cli(capsys, *words, "-t", target, "--overlay", "nosuch", *tail)
    line = one_line(err)
    assert code == EXIT_USAGE and f"--overlay does nothing for {words[0]} (it is for up and down" in line, line
    assert "--target" not in line, line


@pytest.mark.parametrize("verb", ["up", "down"])
@pytest.mark.parametrize("dry", [True, False], ids=["dry run", "real"])
def test_a_missing_overlay_folder_is_exit_2_without_kubectl_too(capsys, team, monkeypatch, verb, dry):
    """A10: a missing overlay folder was refused by up's dry run and, without kubectl here, the real up and down
    said "kubectl is not on PATH" (exit 3) instead."""
    empty = team / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out, err = run_cli(capsys, verb, "-t", "kubernetes", "--overlay", "nosuch", *(["--dry-run"] if dry else []))
    line = one_line(err)
    assert code == EXIT_USAGE and "holds no kustomization.yaml" in line, line


# -- A16: a file nodeweave wrote given as --spec, named as what it is ----------------------------------------------

def _schemas():
    """Every schema nodeweave writes, from the modules that own them."""
    from nodeweave.bench.report import SCHEMA as bench
    from nodeweave.check import SCHEMA as check
    from nodeweave.cluster.dashboard import SCHEMA as dashboard
    from nodeweave.cluster.runfolder import SCHEMA as runfolder
    from nodeweave.doctor import SCHEMA as doctor
    from nodeweave.entrypoint.metrics.goodput import SCHEMA as goodput
    from nodeweave.entrypoint.metrics.heat import SCHEMA as heat
    from nodeweave.entrypoint.metrics.shape import SCHEMA as live
    from nodeweave.entrypoint.model import SCHEMA as entrypoint
    from nodeweave.entrypoint.nodeinfo import NODE_SCHEMA
    from nodeweave.entrypoint.running.runstate import HOLD_SCHEMA, RUN_SCHEMA

    return [bench, check, dashboard, runfolder, doctor, goodput, heat, live, entrypoint, NODE_SCHEMA, HOLD_SCHEMA,
            RUN_SCHEMA]


@pytest.mark.parametrize("schema", _schemas())
@pytest.mark.parametrize("form", ["json", "yaml"])
def test_a_document_nodeweave_wrote_given_as_the_spec_is_named(capsys, team, schema, form):
    """A16: bench's result and doctor's report as --spec got one `unknown key` line per top-level key."""
    import json

    from nodeweave.spec.loader import DOCUMENTS

    name = schema.split(".", 1)[1].split("/")[0]
    assert name in DOCUMENTS, name
    doc = {"ok": True, "schema": schema, "node": 0, "findings": []}
    (team / "doc.out").write_text(json.dumps(doc, indent=2) if form == "json" else
                                  "".join(f"{k}: {json.dumps(v)}\n" for k, v in doc.items()))
    code, out, err = run_cli(capsys, "validate", "--spec", "doc.out")
    line = one_line(err)
    assert code == EXIT_USAGE and f"is {DOCUMENTS[name]}, schema {schema}, not a spec" in line, line


RUN_FILES = {"spec.yaml": "the spec run", "node-0.plan.json": "node 0's plan", "node-1.log": "node 1's output",
             "run.json": "own record", "goodput.json": "goodput", "heat.json": "heat map",
             "recovery.json": "recovery record"}


@pytest.mark.parametrize("name", sorted(RUN_FILES))
def test_each_file_of_a_run_folder_given_as_the_spec_is_named_as_what_it_holds(capsys, team, name):
    """A16: a run folder's node-0.plan.json, run.json, goodput.json were each "the spec the run started from"."""
    run = team / "runs" / "20261130T140001Z-team"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"job": "team"}\n')
    (run / "spec.yaml").write_text((team / "nodeweave.yaml").read_text())
    if not (run / name).exists():
        (run / name).write_text('{"x": 1}\n')
    code, out, err = run_cli(capsys, "validate", "--spec", f"runs/20261130T140001Z-team/{name}")
    line = one_line(err)
    assert code == EXIT_USAGE and "is a run's record (" in line and RUN_FILES[name] in line, line
    assert name == "spec.yaml" or "started from" not in line, line
