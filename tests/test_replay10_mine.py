"""The ninth walk's rows the replay found with a neighbour still failing (issue 43), fixed as classes:

- a file option of another tool's spelling is answered with nodeweave's (A10: kubectl's long ``--filename``);
- a workspace script named bare to ``exec`` is said to be looked up on the node's PATH (R6);
- the job's secret set while the exchange that alone reads it is off is warned (B19).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_a_folder_with_train_py, in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE
from team_folder import make_team

TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def test_kubectls_long_filename_is_answered_with_spec(capsys, team):
    """A10: `status --filename x.yaml` (kubectl apply's long form of the -f the hint quotes) had no did-you-mean."""
    code, _, err = run_cli(capsys, "status", "--filename", "x.yaml")
    assert code == EXIT_USAGE and "(did you mean --spec x.yaml?" in one_line(err)


@pytest.mark.parametrize("script, runner, run_too", [("train.py", "python", True), ("prep.sh", "bash", False)])
def test_a_workspace_script_named_bare_to_exec_is_said(capsys, team, script, runner, run_too):
    """R6: `exec --dry-run -- train.py` planned `podman exec NODE train.py` without a word; on the nodes it is
    "executable file not found in $PATH"."""
    code, out, err = run_cli(capsys, "exec", "--dry-run", "--", script)
    assert code == 0, err
    said = " ".join((out + err).split())
    assert f"{script} is looked up as a program on the node's PATH" in said, said
    assert f"nodeweave exec -- {runner} {script}" in said and (f"nodeweave run -- {script}" in said) == run_too


@pytest.mark.parametrize("command", [["python", "train.py"], ["./train.py"], ["nvidia-smi", "-L"]])
def test_a_command_that_finds_its_program_gets_no_script_note(capsys, team, command):
    """R6: the note is for a bare script name only."""
    code, out, err = run_cli(capsys, "exec", "--dry-run", "--", *command)
    assert code == 0, err
    assert "on the node's PATH" not in out + err


@pytest.mark.parametrize("off", [{"NODEWEAVE_EXCHANGE": "off"}, {"NODEWEAVE_WAIT_TIMEOUT": "0"}],
                         ids=["exchange-off", "wait-timeout-0"])
def test_the_secret_with_the_exchange_off_is_warned(entrypoint, off):
    """B19: NODEWEAVE_JOB_TOKEN with the exchange off was taken without a word: the user believes the nodes check
    each other's secret."""
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"],
                                dict(TWO_NODES, NODEWEAVE_JOB_TOKEN="abc", **off))
    assert code == 0, err
    warned = [str(w) for w in json.loads(out)["warnings"]]
    assert any("NODEWEAVE_JOB_TOKEN is set, but the check-in exchange that alone reads it is off" in w
               for w in warned), warned


@pytest.mark.parametrize("env", [{"NODEWEAVE_EXCHANGE": "off"}, {"NODEWEAVE_JOB_TOKEN": "abc"}],
                         ids=["no-token", "exchange-on"])
def test_no_unread_secret_warning_where_none_is_unread(entrypoint, env):
    """B19: neither a job with the exchange off and no secret, nor a secret the exchange reads, is warned."""
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], dict(TWO_NODES, **env))
    assert code == 0, err
    assert "alone reads it is off" not in out


@pytest.mark.parametrize("words", [
    ["up", "-t", "hosts", "--host", "-oProxyCommand=x", "--host", "gpu02", "--remote-dir", "/srv/job", "--dry-run"],
    ["sync", "--dry-run", "--node", "-x"], ["exec", "-e", "-x", "--", "ls"], ["up", "--namespace", "-n1", "--dry-run"],
    ["up", "--target", "-x", "--dry-run"],
], ids=["host", "node", "env", "namespace", "target"])
def test_a_name_option_is_not_advised_a_value_starting_with_a_dash(capsys, team, words):
    """A21: `--host -oProxyCommand=x` was advised `--host=-oProxyCommand=x`, which --host then refused: a name never
    starts with -, so the joined form is not offered there."""
    code, _, err = run_cli(capsys, *words)
    line = one_line(err)
    assert code == EXIT_USAGE and "not a value for" in line and "where the value itself starts with -" not in line


@pytest.mark.parametrize("words, joined", [
    (["render", "compose", "--out", "-x", "--dry-run"], "--out=-x"),
    (["bench", "--dry-run", "--json-out", "-o.json"], "--json-out=-o.json"),
    (["run", "--dry-run", "--runs-dir", "-r"], "--runs-dir=-r"),
], ids=["out", "json-out", "runs-dir"])
def test_a_path_option_keeps_the_joined_form(capsys, team, words, joined):
    """A21: a file or folder may be named -x: the joined form stays the way to give one."""
    code, _, err = run_cli(capsys, *words)
    assert code == EXIT_USAGE and f"or {joined} where the value itself starts with -" in one_line(err)


SPEC = "name: m\nimage: {variant: cpu}\nlauncher: {script: train.py}\n"


@pytest.mark.parametrize("line, field, home", [
    ("nodes: ~", "nodes", False),
    ("recovery: {enabled: ~}", "recovery.enabled", False),
    ("workspace: {host_path: ~}", "workspace.host_path", True),
    ("recovery: {enabled: true, checkpoint_dir: ~}", "recovery.checkpoint_dir", True),
])
def test_a_bare_tilde_is_told_of_home_folders_only_where_a_path_goes(capsys, tmp_path, monkeypatch, line, field,
                                                                      home):
    """walk10 A20: `nodes: ~` was refused with "not a home folder; accepted: '~/' quoted for your home, or the
    path" for a node count."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "m.yaml").write_text(SPEC + line + "\n")
    code, _, err = run_cli(capsys, "validate", "--spec", "m.yaml")
    said = one_line(err)
    assert code == EXIT_USAGE and f"{field}: ~ is YAML's null, read as not given (the default)" in said, said
    assert ("home" in said) == home, said


@pytest.mark.parametrize("args, said", [
    (["--build-arg", "BASE_IMAGE=registry.example.com/base:1", "--base", "localhost/nodeweave-base:bookworm"],
     "--build-arg BASE_IMAGE=registry.example.com/base:1 and --base localhost/nodeweave-base:bookworm both set"),
    (["--build-arg", "PIP_NO_INDEX=0", "--offline"], "--build-arg PIP_NO_INDEX=0 and --offline say opposite things"),
    (["--build-arg", "PIP_NO_INDEX=maybe"], "--build-arg PIP_NO_INDEX='maybe' is not accepted"),
    (["--build-arg", "BASE_IMAGE=Bad:x"], "--build-arg BASE_IMAGE 'Bad:x' is not accepted"),
], ids=["base-twice", "offline-opposite", "offline-odd", "base-bad"])
def test_a_build_arg_an_option_sets_is_judged_as_that_option(capsys, team, args, said):
    """walk10 A21, replay10 A5: `--build-arg BASE_IMAGE=x --base y` dropped the build arg without a word, and
    `--build-arg PIP_NO_INDEX=1` (offline spelt by hand) skipped the offline build's wheelhouse check."""
    code, _, err = run_cli(capsys, "image", "build", "cpu", *args, "--dry-run")
    assert code == EXIT_USAGE and said in one_line(err), err


def test_offline_spelt_as_a_build_arg_gets_the_offline_check(capsys, team):
    """replay10 A5: PIP_NO_INDEX=1 by hand is an offline build: an empty wheelhouse is refused as for --offline."""
    assert run_cli(capsys, "render", "all")[0] == 0
    (team / "wheelhouse").mkdir(exist_ok=True)
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--build-arg", "PIP_NO_INDEX=1", "--dry-run")
    assert code == EXIT_USAGE and "--offline needs wheels" in one_line(err), err


def test_a_base_spelt_as_a_build_arg_is_the_base(capsys, team):
    """walk10 A21: alone, the build arg is the base the build uses, as --base would be."""
    assert run_cli(capsys, "render", "all")[0] == 0
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--build-arg", "BASE_IMAGE=registry.example.com/b:1",
                             "--dry-run")
    assert code == 0 and "--build-arg BASE_IMAGE=registry.example.com/b:1" in out, out + err


@pytest.fixture
def running_exchange():
    """Node 0's real hub of job 'trainer' with one node checked in, serving on loopback."""
    from loopback_hub import serving_hub

    yield from serving_hub()


def test_a_status_asked_as_another_job_names_the_job_to_ask_as(entrypoint, running_exchange):
    """R7: `--status` without NODEWEAVE_JOB_ID was told "belongs to job 'trainer', not 'nodeweave'", not what to
    set."""
    code, _, err = entrypoint(["--status"], {"NODEWEAVE_MASTER_ADDR": "127.0.0.1",
                                             "NODEWEAVE_EXCHANGE_PORT": str(running_exchange.port)})
    assert code == 3, err
    assert "belongs to job 'trainer', not 'nodeweave': ask it as that job, NODEWEAVE_JOB_ID=trainer" in err, err


@pytest.mark.parametrize("verb", [["validate"], ["run", "--dry-run"], ["run", "--dry-run", "--", "prep.sh"]],
                         ids=["validate", "run", "run-typed"])
def test_a_script_the_nodes_refuse_as_no_python_is_noted_here(capsys, team, verb):
    """replay10 B18: a .py holding `#!/bin/bash` (or a .sh) under torchrun is refused by every node at its start;
    validate and run's dry run said nothing. The nodes' own rule (script_kind) is read here too; validate refuses it
    (exit 2) and run's dry run says the real run would (issue 43 A8)."""
    (team / "train.py").write_text("#!/bin/bash\necho hi\n")
    (team / "prep.sh").write_text("#!/bin/bash\necho hi\n")
    code, out, err = run_cli(capsys, *verb)
    said = " ".join((out + err).split())
    assert code == (2 if verb == ["validate"] else 0) and "is a script for another interpreter (#!/bin/bash), which torchrun would run with Python" \
        in said, said


def test_a_python_script_gets_no_interpreter_note(capsys, team):
    """replay10 B18: a Python file, its shebang naming python or none, is no note."""
    (team / "train.py").write_text("#!/usr/bin/env python3\nprint(1)\n")
    code, out, err = run_cli(capsys, "validate")
    assert code == 0 and "another interpreter" not in out + err


@pytest.mark.parametrize("ending", ["done", "failed", "interrupted"])
def test_the_wheels_linked_in_for_a_build_leave_the_project_after_it(capsys, team, tmp_path_factory, monkeypatch,
                                                                    ending):
    """walk10 C12: `image build --wheelhouse W` left W's wheels linked into the project's wheelhouse/ (225 MiB that
    git status showed and `sync` sent to every node). Whatever the build's end, what was linked in for it is taken
    out again, the folder too when the build made it; a wheel of the user's own there is kept."""
    import nodeweave.build as build
    import nodeweave.cli.image as image
    from nodeweave.errors import NodeweaveError

    assert run_cli(capsys, "render", "all")[0] == 0
    house = tmp_path_factory.mktemp("house")
    (house / "tqdm-4.66.1-py3-none-any.whl").write_bytes(b"wheel")

    class Engine:
        kind, builder = "podman", "buildx"

    seen = []

    def build_it(plan, engine, build_plan, spec_path, quiet, console):
        seen.append(sorted(p.name for p in (team / "wheelhouse").iterdir()))
        if ending == "failed":
            raise NodeweaveError("the build failed")
        if ending == "interrupted":
            raise KeyboardInterrupt
        return None

    monkeypatch.setattr(build, "detect_engine", lambda name=None: Engine())
    monkeypatch.setattr(build, "check_network_exists", lambda *a: None)
    monkeypatch.setattr(image, "_execute_build", build_it)
    monkeypatch.setattr(image, "_report", lambda *a: None)
    monkeypatch.setattr(image, "_mark_build", lambda *a: [])
    try:
        run_cli(capsys, "image", "build", "cpu", "--wheelhouse", str(house))
    except KeyboardInterrupt:
        pass
    assert seen == [["tqdm-4.66.1-py3-none-any.whl"]]  # the build saw the wheel
    assert not (team / "wheelhouse").exists()  # made for the build, gone after it

    (team / "wheelhouse").mkdir()
    (team / "wheelhouse" / "own-1.0-py3-none-any.whl").write_bytes(b"mine")
    seen.clear()
    try:
        run_cli(capsys, "image", "build", "cpu", "--wheelhouse", str(house))
    except KeyboardInterrupt:
        pass
    assert seen == [["own-1.0-py3-none-any.whl", "tqdm-4.66.1-py3-none-any.whl"]]
    assert sorted(p.name for p in (team / "wheelhouse").iterdir()) == ["own-1.0-py3-none-any.whl"]


def test_a_run_ended_by_stop_is_recorded_as_stopped_not_failed(capsys, tmp_path, monkeypatch):
    """walk10 C11: a run ended with `nodeweave stop` read `exit 1` in `runs ls` and `runs show`, as a failure (node 1
    blaming node 0); `stop` leaves a mark in the run's folder beside the spec, and the record reads as stopped."""
    from nodeweave.cluster.runfolder import RunFolder
    from nodeweave.cluster.stop import mark_stopped

    spec = "name: nwstop\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
    (tmp_path / "nodeweave.yaml").write_text(spec)
    monkeypatch.chdir(tmp_path)
    folder = RunFolder.create(tmp_path / "runs", "nwstop", spec)
    folder.write_json("run.json", {"schema": "nodeweave.runfolder/1", "run_id": folder.run_id, "job": "nwstop",
                                   "command": ["train.py"], "env": {}, "target": "podman",
                                   "started": "2026-11-30T14:03:12Z", "ended": "2026-11-30T14:03:30Z",
                                   "seconds": 18.0, "exit_code": 1, "summary": "failed", "nodes": []})
    code, out, _ = run_cli(capsys, "runs", "ls", "-o", "json")
    assert code == 0 and json.loads(out)[0]["state"] == "exit 1"
    mark_stopped(tmp_path / "runs", [{"stopped": [{"run_id": folder.run_id, "processes": 2, "killed": True}]},
                                     {"stopped": [{"run_id": "not-a-run-here", "processes": 1, "killed": False}]}],
                 0.0)
    assert not (tmp_path / "runs" / "not-a-run-here").exists()  # never a folder of its own making
    code, out, _ = run_cli(capsys, "runs", "ls", "-o", "json")
    assert code == 0 and json.loads(out)[0]["state"].startswith("stopped by nodeweave stop at "), out
    code, out, _ = run_cli(capsys, "runs", "show", folder.run_id, "-o", "json")
    assert code == 0 and json.loads(out)["state"].startswith("stopped by nodeweave stop"), out
