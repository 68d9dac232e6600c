"""The fresh walk's findings on the CLI verbs (issue 43), each fixed as a class and walked here.

Each test walks every member of its class it can find (every repeatable option of every verb, every verb that
picks nodes, every option naming a file or a runs folder, every verb's unknown option, every run record) and
fails on the main before these fixes. No container is started: where a verb would reach a tool (podman, ssh,
kubectl), a stand-in on PATH answers, or records that it was reached.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli
from test_walk_classes import BASE, LEAVES, REPO, flags_of, one_line, params_judged_by

COMMANDS = {" ".join(words): command for words, command in LEAVES}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    (tmp_path / "hosts.txt").write_text("gpu01\ngpu02\n")
    return tmp_path


def stand_in(folder: Path, tool: str, body: str) -> Path:
    """A program called ``tool`` in ``folder`` running the shell ``body``; ``folder`` goes first on PATH."""
    folder.mkdir(exist_ok=True)
    path = folder / tool
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def tail_for(words) -> "list[str]":
    return ["--", "t.py"] if words[0] in ("run", "exec") else []


# -- a value given twice to a repeatable option -------------------------------------------------------------


# KEY=VALUE options (the value: whether KEY ignores case, as ssh's do), and those judged where their meaning is
# known (--node by node, --host by host name, --sweep by variable, runs once resolved, the command's own words).
KEYED = {"--env": False, "--build-arg": False, "--ssh-option": True}
OWN_JUDGE = ("--node", "--host", "--sweep", "--to", "runs", "command")


def repeat_cases():
    cases = []
    for words, command in LEAVES:
        for param in command.params:
            if not (getattr(param, "multiple", False) or getattr(param, "nargs", 1) == -1):
                continue
            name = max(param.opts, key=len) if param.param_type_name == "option" else param.name.upper()
            if name in OWN_JUDGE or param.name in OWN_JUDGE:
                continue
            if name in KEYED:
                key = "a" if KEYED[name] else "A"  # ssh reads its option names whatever their case
                values, said = ["A=1", "A=2"], f"{name} {key} is given 2 times (A=1, A=2)"
            else:
                values, said = ["a", "a"], f"{name} a is given 2 times"
            argv = [w for v in values for w in ([name, v] if name.startswith("-") else [v])]
            cases.append((words, argv, said))
    return cases


REPEATS = repeat_cases()


def test_the_walk_finds_every_repeatable_option():
    from nodeweave.cli.habits.repeats import KEYED as judged_keyed, OWN_JUDGE as judged_apart

    assert (judged_keyed, judged_apart) == (KEYED, OWN_JUDGE)  # the walk and the rule agree on what they skip
    found = {(" ".join(w), argv[0]) for w, argv, _ in REPEATS}
    assert {("run", "--env"), ("exec", "--env"), ("image build", "--build-arg"), ("sync", "--exclude"),
            ("up", "--ssh-option"), ("init", "--ssh-option"), ("hosts probe", "a")} <= found, found


@pytest.mark.parametrize("words, argv, said", REPEATS, ids=[f"{' '.join(w)} {' '.join(a)}" for w, a, _ in REPEATS])
def test_a_value_given_twice_to_any_repeatable_option_is_refused(capsys, project, words, argv, said):
    code, out, err = run_cli(capsys, *words, *argv, *tail_for(words))
    assert code == EXIT_USAGE, (out, err)
    assert said in one_line(err)


def test_an_ssh_option_key_is_one_whatever_its_case(capsys, project):
    code, _, err = run_cli(capsys, "up", "--target", "hosts", "--host", "a", "--remote-dir", "/srv/x",
                           "--ssh-option", "Port=22", "--ssh-option", "port 23", "--dry-run")
    assert code == EXIT_USAGE and "--ssh-option port is given 2 times (Port=22, port 23)" in one_line(err)


@pytest.mark.parametrize("value", ["=1", " =1", "", " "])
def test_a_keyed_option_with_no_key_is_named_by_its_own_check_never_a_traceback(capsys, project, value):
    code, _, err = run_cli(capsys, "run", "--dry-run", "-e", value, "-e", value, "--", "t.py")
    assert code == EXIT_USAGE and "--env" in one_line(err)


def test_distinct_values_of_a_repeatable_option_are_taken(capsys, project):
    code, out, err = run_cli(capsys, "run", "-e", "A=1", "-e", "B=2", "--dry-run", "--", "t.py")
    assert code == 0, err
    assert "env A=1 B=2" in out


NODE_VERBS = [words for words, command in LEAVES if "--node" in flags_of(command) and words[0] not in ("hosts",)]


def test_the_walk_finds_every_verb_that_picks_nodes():
    assert {"run", "exec", "status", "logs", "stop", "shell", "check", "sync", "top"} <= {" ".join(w)
                                                                                         for w in NODE_VERBS}


@pytest.mark.parametrize("words", NODE_VERBS, ids=[" ".join(w) for w in NODE_VERBS])
@pytest.mark.parametrize("picked", [["--node", "0,0"], ["--node", "0", "--node", "0"]])
def test_a_node_given_twice_is_refused_on_every_verb_that_picks_nodes(capsys, project, words, picked):
    dry = ["--dry-run"] if "--dry-run" in flags_of(COMMANDS[" ".join(words)]) else []
    code, out, err = run_cli(capsys, *words, *picked, *dry, *tail_for(words))
    assert code == EXIT_USAGE, (out, err)
    assert "--node 0 is given 2 times; give each node once" in one_line(err)


@pytest.mark.parametrize("picked", [["0-1,1"], ["0", "node-0"], ["1", "j-1"]])
def test_two_words_picking_one_node_are_refused(picked):
    from nodeweave.cli.habits.nodes import pick_nodes
    from nodeweave.errors import UsageError

    class Node:
        def __init__(self, index):
            self.index, self.name = index, f"node-{index}"
            self.remote = type("Remote", (), {"label": f"podman:j-{index}", "name": f"j-{index}"})()

    with pytest.raises(UsageError, match="both pick node-"):
        pick_nodes([Node(0), Node(1)], picked)
    assert [n.index for n in pick_nodes([Node(0), Node(1)], ["0-1"])] == [0, 1]


def test_direct_addresses_given_twice_are_refused(capsys, project):
    code, _, err = run_cli(capsys, "sync", ".", "/workspace", "--node", "podman:a", "--node", "podman:a", "--dry-run")
    assert code == EXIT_USAGE and "--node podman:a is given 2 times" in one_line(err)


# -- checks that come before any network, ssh or kubectl call ---------------------------------------------------


@pytest.fixture
def reached(tmp_path, monkeypatch):
    """ssh and kubectl stand-ins that write down that they were called (and fail as an unreachable one would)."""
    folder, log = tmp_path / "bin", tmp_path / "reached.log"
    for tool in ("ssh", "kubectl", "oc"):
        stand_in(folder, tool, f'echo "{tool} $*" >> {log}; echo "{tool}: cannot reach" >&2; exit 255')
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


@pytest.mark.parametrize("argv, said", [
    (["init", "--host", "a", "--host", "a", "--dry-run"], "--host a is given 2 times"),
    (["init", "--host", "gpu01", "--host", "GPU01.", "--dry-run"], "--host gpu01 is given 2 times"),
    (["init", "--nodes", "3", "--host", "a", "--dry-run"], "--nodes 3 with 1 --host"),
    (["sync", "--replicas", "0", "--statefulset", "x"], "--replicas 0 is not accepted: 1 or more"),
    (["sync", "--statefulset", "x", "--compose-project", "y"], "--statefulset and --compose-project both name"),
    (["sync", "--hosts-file", "hosts.txt", "--selector", "a=b"], "--hosts-file and --selector both name"),
])
def test_bad_input_is_refused_before_ssh_or_kubectl_is_reached(capsys, project, reached, argv, said):
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert said in one_line(err)
    assert not reached.exists(), reached.read_text()


def test_init_with_as_many_nodes_as_hosts_still_probes_them(capsys, project, reached):
    # the real init (its dry run reaches no host since walk16a A21: it prints the probe, as hosts probe's does)
    code, _, err = run_cli(capsys, "init", "--nodes", "1", "--host", "a", "--out", "new.yaml")
    assert code != EXIT_USAGE and reached.read_text().startswith("ssh "), err


@pytest.mark.parametrize("argv, said", [
    (["run", "--nodes", "1", "--node", "0", "--dry-run", "--", "t.py"], "--nodes and --node both pick the nodes"),
    (["run", "--nodes", "2", "--node", "0-1", "--dry-run", "--", "t.py"], "--nodes and --node both pick the nodes"),
    # init --dry-run --force: the forced plan now, as render and hosts probe show it (walk5 W80, test_walk5_habits)
    (["top", "--url", "http://127.0.0.1:9", "--node", "1"], "--node does nothing with --url"),
    (["dashboard", "--url", "http://127.0.0.1:9", "--target", "local"], "--target does nothing with --url"),
    (["sync", "--tar", "--method", "rsync", "--dry-run"], "--tar and --method both pick how files are sent"),
    (["hosts", "probe", "--node", "a", "--hosts-file", "hosts.txt"], "--node and --hosts-file both name the hosts"),
])
@pytest.mark.timeout(120)  # before the fix, dashboard --url served its page until stopped
def test_flags_that_say_one_thing_twice_or_do_nothing_together_are_refused(capsys, project, argv, said):
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert said in one_line(err)


@pytest.mark.parametrize("argv", [["shell", "--", "ls"], ["shell", "ls"], ["shell", "--node", "1", "--", "nvidia-smi"],
                                  ["shell", "--", "ls", "-la"], ["shell", "--", "ls", "ls"]])
def test_a_command_given_to_shell_points_to_exec(capsys, project, argv):
    code, _, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "opens an interactive shell and runs no command" in line and "nodeweave exec --node " in line
    assert "is now `shell --node" not in err


def test_a_cluster_verbs_node_still_picks_among_the_hosts_file(capsys, project):
    code, _, err = run_cli(capsys, "status", "--target", "hosts", "--hosts-file", "hosts.txt", "--remote-dir", "/x",
                           "--node", "0")
    assert "both name" not in err


def test_render_dry_run_with_force_stays_a_preview_of_what_force_replaces(capsys, project):
    (project / "images" / "cpu").mkdir(parents=True)
    (project / "images" / "cpu" / "Dockerfile").write_text("mine\n")
    code, out, err = run_cli(capsys, "render", "images", "--dry-run", "--force")
    assert code == 0, err
    assert (project / "images" / "cpu" / "Dockerfile").read_text() == "mine\n"


# -- a dry run judges what its real run would -------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["init", "--out", "{tmp}/missing/x.yaml"],
    ["init", "--out", "sub/"],
    ["init", "--out", "nodeweave.yaml/x.yaml"],
    ["run", "--runs-dir", "/dev/null", "--", "t.py"],
    ["run", "--runs-dir", "nodeweave.yaml", "--", "t.py"],
    ["check", "--runs-dir", "/dev/null"],
    ["render", "images", "--out", "images"],
    ["run", "--", "../outside.py"],
])
def test_a_dry_run_is_refused_where_its_real_run_is(capsys, project, argv):
    argv = [word.replace("{tmp}", str(project)) for word in argv]
    cut = argv.index("--") if "--" in argv else len(argv)
    dry = [*argv[:cut], "--dry-run", *argv[cut:]]
    code, out, err = run_cli(capsys, *dry)
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert one_line(err) == line  # the same refusal, named the same way
    assert not (project / "sub").exists() and not (project / "images" / "images").exists()


def test_a_sync_dry_run_to_a_target_that_would_fail_notes_it_and_ends_with_its_exit(capsys, project, tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    stand_in(folder, "podman", 'echo "Error: no container with name or ID \\"foo\\" found: no such container" >&2; '
                               'exit 125')
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    code, out, err = run_cli(capsys, "sync", ".", "/workspace", "--node", "podman:foo", "--dry-run")
    assert code == 1, (out, err)  # the one dry-run rule (walk18a A5, A7): a refusal the dry run found ends it with the real exit
    assert "# the real sync would end with exit 1: podman:foo: podman has no container named foo" in out, (out, err)


def test_a_real_sync_to_that_target_still_fails(capsys, project, tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    stand_in(folder, "podman", 'echo "Error: no such container" >&2; exit 125')
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    code, _, err = run_cli(capsys, "sync", ".", "/workspace", "--node", "podman:foo", "--retries", "0")
    assert code == 1, err


# -- every option naming a file nodeweave writes, or a runs folder ---------------------------------------------------


OUTPUT_FILES = params_judged_by("output_file")


@pytest.mark.parametrize("words, flag", OUTPUT_FILES, ids=[f"{' '.join(w)} {f}" for w, f in OUTPUT_FILES])
@pytest.mark.parametrize("spelt", ["sub/", ".", "sub/.."])
def test_an_output_file_spelt_as_a_folder_is_refused(capsys, project, words, flag, spelt):
    extra = ["a", "b"] if words == ["runs", "compare"] else []
    code, _, err = run_cli(capsys, *words, flag, spelt, *extra)
    assert code == EXIT_USAGE, err
    assert f"{flag} {spelt}: names a folder, not a file" in one_line(err)
    assert not (project / "sub").exists()


@pytest.mark.parametrize("words, flag", OUTPUT_FILES, ids=[f"{' '.join(w)} {f}" for w, f in OUTPUT_FILES])
def test_an_output_file_in_a_missing_folder_is_refused_unless_the_verb_makes_it(capsys, project, words, flag):
    from nodeweave.cli.habits.output import MAKES_FOLDERS, not_a_file_to_write

    target = project / "missing" / "x.out"
    problem = not_a_file_to_write(target, makes_folders=flag in MAKES_FOLDERS)
    assert (problem == "") == (flag in MAKES_FOLDERS), problem
    if problem:
        extra = ["a", "b"] if words == ["runs", "compare"] else []
        code, _, err = run_cli(capsys, *words, flag, str(target), *extra)
        assert code == EXIT_USAGE and "does not exist (create it first)" in one_line(err)
    assert "not a folder" in not_a_file_to_write(project / "nodeweave.yaml" / "x.out", makes_folders=True)


RUNS_DIRS = [words for words, command in LEAVES if "--runs-dir" in flags_of(command)]


def test_the_walk_finds_every_runs_folder_option():
    assert {"run", "check", "logs", "dashboard", "runs ls", "runs show", "runs compare"} <= {" ".join(w)
                                                                                            for w in RUNS_DIRS}


@pytest.mark.parametrize("words", RUNS_DIRS, ids=[" ".join(w) for w in RUNS_DIRS])
@pytest.mark.parametrize("bad", ["/dev/null", "nodeweave.yaml"])
def test_a_runs_folder_that_is_a_file_or_a_device_is_refused_by_every_verb(capsys, project, words, bad):
    extra = {"runs show": ["last"], "runs compare": ["a", "b"], "logs": ["--run", "last"],
             "dashboard": ["--run", "last"]}.get(" ".join(words), [])
    dry = ["--dry-run"] if "--dry-run" in flags_of(COMMANDS[" ".join(words)]) else []
    code, out, err = run_cli(capsys, *words, "--runs-dir", bad, *extra, *dry, *tail_for(words))
    assert code == EXIT_USAGE, (out, err)
    assert f"--runs-dir {bad}" in one_line(err) and "not a " in err


# -- an unreadable run record, a named pipe with no writer ------------------------------------------------------------


@pytest.mark.parametrize("record", ["run.json", "sweep.json"])
def test_an_unreadable_run_record_is_listed_with_why_and_named_when_asked_for(capsys, project, record):
    folder = project / "runs" / ("20260101T000000Z-j" + ("-sweep" if record == "sweep.json" else ""))
    folder.mkdir(parents=True)
    (folder / record).write_text('{"job": "j", "exit_co')
    code, out, err = run_cli(capsys, "runs", "ls", "-o", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [row["run"] for row in rows] == [folder.name]
    assert rows[0]["state"] == f"unreadable: {record} not JSON (being written, or damaged)"
    for argv in (["runs", "show", "last"], ["logs", "--run", "last"], ["runs", "show", "2026"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == EXIT_USAGE, err
        assert f"{record} not JSON" in one_line(err) and "no runs under" not in err


@pytest.mark.parametrize("argv", [["validate", "--spec", "{fifo}"],
                                  ["up", "--target", "hosts", "--hosts-file", "{fifo}", "--remote-dir", "/srv/x",
                                   "--dry-run"],
                                  ["sync", "--hosts-file", "{fifo}", "--dry-run"]])
def test_a_named_pipe_nothing_is_written_to_is_named_so(capsys, project, argv):
    fifo = project / "fifo"
    os.mkfifo(fifo)
    code, _, err = run_cli(capsys, *[w.replace("{fifo}", str(fifo)) for w in argv])
    assert code == EXIT_USAGE, err
    line = one_line(err)
    assert "a named pipe that nothing was written to" in line and "empty" not in line


# -- an unknown option's suggestions -----------------------------------------------------------------------------


def long_options(command) -> "list[str]":
    return sorted(name for p in command.params if p.param_type_name == "option" for name in p.opts
                  if name.startswith("--") and name != "--help" and len(name) > 6)


TYPO_VERBS = [(words, long_options(command)[0]) for words, command in LEAVES if long_options(command)]


@pytest.mark.parametrize("words, option", TYPO_VERBS, ids=[" ".join(w) for w, _ in TYPO_VERBS])
def test_every_verb_suggests_only_options_near_the_one_typed(capsys, project, words, option):
    typo = option[:4] + option[5:]  # one letter dropped
    code, _, err = run_cli(capsys, *words, typo, *tail_for(words))
    assert code == EXIT_USAGE
    assert f"did you mean {option}" in one_line(err) or f"did you mean" in err and option in err, err
    if "--since" in dict((tuple(w), long_options(c)) for w, c in LEAVES)[tuple(words)]:
        return  # its own option (logs --since, walk6 W49): nothing to suggest
    code, _, err = run_cli(capsys, *words, "--since", "5m", *tail_for(words))
    assert code == EXIT_USAGE
    assert "did you mean" not in one_line(err) or "--since" in err.split("did you mean")[1][:12], err


def test_logs_since_of_the_walk_is_the_engines_window_now(capsys, project):
    """`logs --since 5m` (the kubectl/podman habit) was refused as unknown; since walk6 W49 it is the engine's own
    window: taken (exit 3 with nothing up, or with no engine here: the machine's answer, never exit 2), and a value
    that is no duration is exit 2 on any machine."""
    from nodeweave.errors import EXIT_ENVIRONMENT

    code, _, err = run_cli(capsys, "logs", "--since", "5m")
    assert code == EXIT_ENVIRONMENT and "--since" not in one_line(err), err
    code, _, err = run_cli(capsys, "logs", "--since", "yesterday")
    assert code == EXIT_USAGE and "is not accepted: a number of seconds" in one_line(err), err


@pytest.mark.skipif(__import__("shutil").which("podman") is None,
                    reason="podman is not installed (.ci/setup-engine.sh installs it): it answers that the nodes are "
                           "not up")
def test_logs_since_with_nothing_up_is_the_one_not_up_answer(capsys, project):
    from nodeweave.errors import EXIT_ENVIRONMENT

    code, _, err = run_cli(capsys, "logs", "--since", "5m")
    assert code == EXIT_ENVIRONMENT and "is not up" in one_line(err), err


# -- options typed before the verb, and after `--` where they are taken once ---------------------------------------


@pytest.mark.parametrize("before, after", [
    (["-o", "json", "validate"], ["validate", "-o", "json"]),
    (["--output=yaml", "validate"], ["validate", "--output=yaml"]),
    (["--json", "runs", "ls"], ["runs", "ls", "--json"]),
    (["-o", "json", "runs", "ls"], ["runs", "ls", "-o", "json"]),
    (["--spec", "nodeweave.yaml", "validate"], ["validate", "--spec", "nodeweave.yaml"]),
])
def test_a_verbs_option_typed_before_the_verb_goes_to_it(capsys, project, before, after):
    assert run_cli(capsys, *before) == run_cli(capsys, *after)
    assert run_cli(capsys, *before)[0] == 0


def test_the_groups_whose_options_move_are_the_apps_groups():
    from nodeweave.cli import GROUPS

    groups = {}
    for words, _ in LEAVES:
        if len(words) == 2:
            groups.setdefault(words[0], set()).add(words[1])
    assert {name: set(subs) for name, subs in GROUPS.items()} == {name: subs for name, subs in groups.items()
                                                                  if name in GROUPS} and set(groups) <= set(GROUPS)


@pytest.mark.parametrize("first, again", [(["--spec", "a.yaml"], ["--spec", "b.yaml"]), (["-o", "json"], ["-o", "yaml"]),
                                          (["--target", "local"], ["--target", "hosts"])])
@pytest.mark.parametrize("verb", ["run", "exec"])
def test_an_option_taken_once_typed_again_after_dashes_is_suggested_in_place(capsys, project, verb, first, again):
    _, _, err = run_cli(capsys, verb, "--dry-run", *first, "--", "t.py", *again)
    assert f"put it before `--` in place of {' '.join(first)}: nodeweave {verb} --dry-run {' '.join(again)} -- t.py" \
        in err, err


# -- the script a run would start ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["../outside.py"], ["python", "../outside.py"], ["/workspace/../x.py"]])
def test_a_script_leaving_the_workspace_is_refused_before_any_node_is_asked(capsys, project, command):
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", *command)
    assert code == EXIT_USAGE, (out, err)
    assert "the script leaves the workspace (/workspace)" in one_line(err)


def test_a_script_the_workspace_lacks_gets_a_note_and_one_it_has_none(capsys, project):
    # a dry run's note is the plan's own (`# note: ...`), as its -o json carries it (walk5 W15)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "missing.py")
    assert code == 0 and "missing.py is not in the workspace" in out
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "t.py")
    assert code == 0 and "not in the workspace" not in out + err
    (project / "nodeweave.yaml").write_text(BASE.replace("t.py", "absent.py"))
    code, out, err = run_cli(capsys, "run", "--dry-run")
    assert code == 0 and "absent.py is not in the workspace" in out


# -- image build's inputs ----------------------------------------------------------------------------------------


@pytest.fixture
def context(tmp_path):
    """A build context holding what the cpu Dockerfile copies (the rendered zipapp) and no wheelhouse."""
    folder = tmp_path / "context"
    (folder / "entrypoint").mkdir(parents=True)
    (folder / "entrypoint" / "nodeweave-entrypoint.pyz").write_bytes(
        (REPO / "entrypoint" / "nodeweave-entrypoint.pyz").read_bytes())
    return folder


@pytest.mark.parametrize("network", ["hots", "Host", "nonne", "bridg"])
def test_a_build_network_one_letter_from_a_mode_is_refused(capsys, project, context, network):
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--network", network, "--context", str(context),
                           "--dry-run")
    assert code == EXIT_USAGE, err
    assert f"--network {network!r} is not accepted (did you mean" in one_line(err)


@pytest.mark.parametrize("network", ["host", "none"])  # a name or container:ID must exist: test_walk3_classes.py
def test_a_build_network_mode_or_name_is_taken(capsys, project, context, network):
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--network", network, "--context", str(context),
                             "--dry-run")
    assert code == 0, err
    assert f"--network {network}" in out


def test_a_push_to_localhost_is_refused_and_an_absent_wheelhouse_said_so(capsys, project, context):
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--push", "--context", str(context), "--dry-run")
    assert code == EXIT_USAGE, err  # walk5 W51: refused before the build, not warned about and then failed
    assert "--push would send localhost/" in one_line(err) and "image.registry" in err
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--context", str(context), "--dry-run")
    assert "(no such folder: the build makes it empty" in out and "(0 files)" not in out
    (project / "nodeweave.yaml").write_text(BASE.replace("{variant: cpu}", "{variant: cpu, registry: ghcr.io/me}"))
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--push", "--context", str(context), "--dry-run")
    assert code == 0, err
    assert "localhost/" not in out


# -- an option that takes one value, given twice ---------------------------------------------------------------------


def once_cases():
    cases = []
    for words, command in LEAVES:
        for param in command.params:
            if param.param_type_name != "option" or param.multiple or param.is_flag or getattr(param, "count", False):
                continue
            names = [n for n in param.opts if n not in ("-h", "--help")]
            if names:
                cases.append((words, names[0], max(names, key=len)))
    return cases


ONCE = once_cases()


def test_the_walk_finds_every_option_taking_one_value():
    found = {(" ".join(w), longest) for w, _, longest in ONCE}
    assert {("validate", "--spec"), ("status", "--output"), ("run", "--target"), ("runs ls", "--job"),
            ("sync", "--statefulset"), ("image build", "--tag"), ("init", "--out")} <= found
    assert len(ONCE) > 150


@pytest.mark.parametrize("words, typed, longest", ONCE, ids=[f"{' '.join(w)} {t}" for w, t, _ in ONCE])
def test_an_option_taking_one_value_given_twice_is_refused_naming_both(capsys, project, words, typed, longest):
    first = [f"{typed}=1"] if typed.startswith("--") else [typed, "1"]
    code, out, err = run_cli(capsys, *words, *first, typed, "2", *tail_for(words))
    assert code == EXIT_USAGE, (out, err)
    assert f"{longest} is given 2 times (1, 2) and takes one value" in one_line(err)


def test_an_option_after_dashes_is_the_commands_even_when_given_before(capsys, project):
    code, _, err = run_cli(capsys, "run", "--dry-run", "--spec", "nodeweave.yaml", "--", "t.py", "--spec", "x")
    assert code == 0 and "is given 2 times" not in err
