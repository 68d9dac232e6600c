"""The fresh walk's open findings (issue 43, /work/wt/walk-report.md), each fixed as a class and walked here.

Each test walks every member of its class it can find (every switch variable, every recovery field, every
run reference, every reach flag of every cluster verb, every path option, ...), not only the walk's instance,
and each fails on the main before these fixes. No container is started.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import cli_run
from cli_run import in_process as run_cli, leaves, one_line

from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.spec import parse_spec

REPO = Path(__file__).resolve().parents[1]
BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"


# -- boolean environment variables: one parser, the documented words only --------------------------


def switch_variables():
    from nodeweave.entrypoint.planning.contract import SETTINGS, read_switch

    return [row for row in SETTINGS if row.read is read_switch]


def test_the_walk_finds_every_switch_of_the_entrypoint():
    names = {row.variable for row in switch_variables()}
    assert {"NODEWEAVE_RECOVERY", "NODEWEAVE_EXCHANGE", "NODEWEAVE_WARM_START", "NODEWEAVE_METRICS",
            "NODEWEAVE_STRAGGLER_IS_FAULT"} <= names


@pytest.mark.parametrize("row", switch_variables(), ids=lambda row: row.variable)
@pytest.mark.parametrize("word", ["yes", "no", "y", "enable", "maybe"])
def test_every_switch_variable_refuses_an_undocumented_word_naming_variable_value_and_words(row, word):
    from nodeweave.entrypoint.planning.settings import parse

    with pytest.raises(Exception) as caught:
        parse(["--", "t.py"], {row.variable: word})
    message = str(caught.value)
    assert row.variable in message and repr(word) in message
    assert "accepted: on, off (also true, false, 1, 0)" in message


@pytest.mark.parametrize("row", switch_variables(), ids=lambda row: row.variable)
@pytest.mark.parametrize("word, value", [("on", True), ("OFF", False), ("true", True), ("0", False)])
def test_every_switch_variable_reads_the_documented_words(row, word, value):
    from nodeweave.entrypoint.planning.settings import parse

    from nodeweave.entrypoint.planning.shared_rules import SWITCHED

    switch = next((s for s, keys in SWITCHED.items() if row.key in keys), None)  # read only while its switch is on
    assert parse(["--", "t.py"], {row.variable: word, **({"NODEWEAVE_" + switch.upper(): "on"} if switch else {})}
                 ).get(row.key) is value


def test_the_recovery_variable_of_the_walk_is_refused_by_the_entrypoint_with_exit_2(tmp_path):
    env = {"PATH": os.environ["PATH"], "MASTER_ADDR": "10.0.0.1",
           "NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "yes"}
    done = cli_run.entrypoint("--explain", "--", "t.py", env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "recovery must be on or off, got 'yes' (from NODEWEAVE_RECOVERY)" in done.stderr


def test_the_command_lines_switch_variable_uses_the_same_words(capsys, monkeypatch):
    from nodeweave.cli.habits.base import RICH_HELP_ENV

    monkeypatch.setenv(RICH_HELP_ENV, "yes")
    code, _, err = run_cli(capsys, "validate", "--help")
    assert code == EXIT_USAGE
    assert f"{RICH_HELP_ENV} must be on or off, got 'yes'" in one_line(err)
    monkeypatch.setenv(RICH_HELP_ENV, "off")
    assert run_cli(capsys, "validate", "--help")[0] == 0


# -- runs: a run reference with no runs at all ------------------------------------------------------


@pytest.mark.parametrize("argv", [["runs", "show"], ["runs", "show", "last"], ["runs", "show", "2026"],
                                  ["runs", "compare", "last", "2026"], ["logs", "--run", "last"]])
def test_every_run_reference_with_no_runs_says_there_are_none_yet(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    code, _, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "no runs under" in line and "yet (`nodeweave run` makes them)" in line
    assert "accepted: a run id" not in line  # `last` was never the mistake


def test_a_prefix_matching_several_runs_names_them(capsys, tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    for name in ("20260101T000000Z-j", "20260102T000000Z-j"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "run.json").write_text(json.dumps({"job": "j", "exit_code": 0}))
    code, _, err = run_cli(capsys, "runs", "show", "2026")
    assert code == EXIT_USAGE
    assert "matches 2 runs" in one_line(err) and "20260101T000000Z-j" in err


# -- the spec: cross-field contradictions and paths leaving the workspace, at validate ------------------


def refusal(extra: str, base: str = BASE) -> str:
    with pytest.raises(UsageError) as caught:
        parse_spec(base + extra, "s.yaml")
    message = str(caught.value)
    assert "\n" not in message
    return message


RECOVERY_FIELDS = {"spares": "2", "max_restarts": "7", "no_progress_restarts": "0", "checkpoint_dir": "ck",
                   "straggler_is_fault": "true", "warm_start": "false", "min_nodes": "1"}


def test_the_walk_covers_every_recovery_field():
    from nodeweave.spec.sections.recovery import KEYS

    assert set(KEYS) == {"enabled", *RECOVERY_FIELDS}


@pytest.mark.parametrize("key", sorted(RECOVERY_FIELDS))
@pytest.mark.parametrize("off", ["enabled: false, ", ""])
def test_every_recovery_field_set_with_recovery_off_is_refused(key, off):
    message = refusal(f"recovery: {{{off}{key}: {RECOVERY_FIELDS[key]}}}\n")
    assert f"recovery.{key}" in message and "does nothing with recovery.enabled false" in message
    assert "recovery.enabled: true, or leave" in message
    parse_spec(BASE + f"recovery: {{enabled: true, {key}: {RECOVERY_FIELDS[key]}}}\n", "s.yaml")  # on: read


def test_recovery_fields_at_their_defaults_with_recovery_off_are_valid():
    """docs/design.md writes the whole section at its defaults, enabled: false: nothing there does anything."""
    parse_spec(BASE + "recovery: {enabled: false, spares: 0, max_restarts: 5, no_progress_restarts: 3, "
                      "checkpoint_dir: null, straggler_is_fault: false, warm_start: true}\n", "s.yaml")


@pytest.mark.parametrize("warn, timeout, words", [
    (600, 60, "stall_warn 600 s is above stall_timeout 60 s"),
    (0, 60, "stall_timeout 60 s with stall_warn 0"),
])
def test_a_stall_warning_that_cannot_come_before_its_stop_is_refused_in_the_spec_and_the_entrypoint(warn, timeout,
                                                                                                       words):
    from nodeweave.entrypoint.planning.settings import parse

    assert words in refusal("", BASE.replace("{script: t.py}", f"{{script: t.py, stall_warn: {warn}, "
                                                               f"stall_timeout: {timeout}}}"))
    with pytest.raises(Exception) as caught:
        parse(["--", "t.py"], {"NODEWEAVE_STALL_WARN": str(warn), "NODEWEAVE_STALL_TIMEOUT": str(timeout)})
    assert words in str(caught.value) and "NODEWEAVE_STALL_TIMEOUT" in str(caught.value)
    with pytest.raises(Exception):
        parse(["--stall-warn", str(warn), "--stall-timeout", str(timeout), "--", "t.py"], {})


@pytest.mark.parametrize("launcher", ["{script: t.py, stall_warn: 0}", "{script: t.py, stall_warn: 30, stall_timeout: 60}",
                                      "{script: t.py, stall_warn: 600, stall_timeout: 0}"])
def test_stall_settings_that_agree_are_valid(launcher):
    parse_spec(BASE.replace("{script: t.py}", launcher), "s.yaml")


@pytest.mark.parametrize("field, line", [
    ("recovery.checkpoint_dir", "recovery: {enabled: true, checkpoint_dir: ../../etc}\n"),
    ("recovery.checkpoint_dir", "recovery: {enabled: true, checkpoint_dir: ck/../../x}\n"),
    ("recovery.checkpoint_dir", "recovery: {enabled: true, checkpoint_dir: /etc}\n"),
    ("recovery.checkpoint_dir", "recovery: {enabled: true, checkpoint_dir: /}\n"),
    ("recovery.checkpoint_dir", "recovery: {enabled: true, checkpoint_dir: /proc/x}\n"),
    ("launcher.script", None),
])
def test_a_path_read_relative_to_the_workspace_that_leaves_it_is_refused(field, line):
    if line is None:
        message = refusal("", BASE.replace("{script: t.py}", "{script: ../../etc/t.py}"))
    else:
        message = refusal(line)
    assert field in message and "accepted: a path inside workspace.path" in message


def test_paths_inside_the_workspace_or_of_the_jobs_own_are_valid():
    for folder in ("checkpoints", "a/../b", "/data/checkpoints", "/workspace/ck"):
        parse_spec(BASE + f"recovery: {{enabled: true, checkpoint_dir: {folder}}}\n", "s.yaml")
    parse_spec(BASE.replace("{script: t.py}", "{script: /usr/bin/env, type: command}"), "s.yaml")


# -- flags that contradict each other, or do nothing without another, on every verb ----------------------


LEAVES = leaves()
VALUES = {"--host": "gpu01", "--hosts-file": "hosts.txt", "--statefulset": "x", "--selector": "a=b",
          "--replicas": "3", "--remote-dir": "/srv/x", "--namespace": "ns", "--kube-cli": "oc",
          "--kube-context": "c", "--overlay": "base", "--ssh-option": "Port=22", "--engine": "podman",
          "--container": "c", "--nodes": "1", "--node": "0", "--compose-project": "p",
          "--url": "http://127.0.0.1:9", "--target": "local", "--method": "rsync"}


def flags_of(command) -> "set[str]":
    return {name for p in command.params if p.param_type_name == "option" for name in p.opts if name.startswith("--")}


def with_value(flag: str) -> "list[str]":
    return [flag, VALUES[flag]] if flag in VALUES else [flag]


def conflict_cases():
    try:
        from nodeweave.cli.habits.conflicts import EXCLUSIVE, IDLE_WITH, NEEDS
    except ImportError:  # before the table: the walk finds none, and its test below says so
        return []

    cases = []
    for words, command in LEAVES:
        flags = flags_of(command)
        for (first, second) in [*EXCLUSIVE, *IDLE_WITH]:
            if first in flags and second in flags:
                cases.append((words, [*with_value(first), *with_value(second)], f"{first} "))
        for flag, (needed, _) in NEEDS.items():
            if flag in flags:
                cases.append((words, with_value(flag), f"{flag} does nothing without {needed}"))
    return cases


CONFLICTS = conflict_cases()


def test_the_walk_finds_the_conflicting_flags_on_every_cluster_verb():
    verbs = {" ".join(words) for words, argv, _ in CONFLICTS if "--host" in argv}
    assert {"up", "down", "run", "exec", "status", "logs", "stop", "shell", "check", "top"} <= verbs
    assert {"sync"} <= {" ".join(words) for words, _, _ in CONFLICTS}


@pytest.mark.timeout(120)  # a refusal is at once; without one, dashboard --url would serve until stopped
@pytest.mark.parametrize("words, argv, words_said", CONFLICTS,
                         ids=[f"{' '.join(w)} {' '.join(a)}" for w, a, _ in CONFLICTS])
def test_flags_that_contradict_or_do_nothing_together_are_refused_on_every_verb(capsys, tmp_path, monkeypatch, words,
                                                                              argv, words_said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    (tmp_path / "hosts.txt").write_text("gpu01\ngpu02\n")
    tail = ["--", "t.py"] if words[0] in ("run", "exec") else []
    code, out, err = run_cli(capsys, *words, *argv, *tail)
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    assert words_said in line and ("give one of them" in line or "leave" in line), line


def test_the_walks_host_and_hosts_file_case_names_both_flags(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, _, err = run_cli(capsys, "up", "--target", "hosts", "--host", "gpu01", "--hosts-file", "hosts.txt",
                           "--remote-dir", "/srv/job", "--dry-run")
    assert code == EXIT_USAGE
    assert one_line(err) == "nodeweave: error: --host and --hosts-file both name the hosts (node 0 first): give one of them"


# -- flags that do nothing for the chosen target ------------------------------------------------------------


def idle_cases():
    try:
        from nodeweave.cluster.options import FLAG_TARGETS, FLAG_VERBS, TARGETS
    except ImportError:  # before the table: the walk finds none, and its test below says so
        return []

    cases = []
    for words, command in LEAVES:
        flags = flags_of(command)
        if "--remote-dir" not in flags:  # the reach verbs (image build's --target is another thing)
            continue
        for name, (shown, targets) in FLAG_TARGETS.items():
            flag = shown.split("/")[0]
            if flag not in flags:  # sync takes the hosts target's flags (walk7 A12), not every reach flag
                continue
            wrong = next(t for t in ("local", "kubernetes") if t not in targets)
            idle_verb = name in FLAG_VERBS and words[0] not in FLAG_VERBS[name][1]  # walk10 A10: whatever target
            cases.append((words, ["--target", wrong, *with_value(flag)],
                          f"{shown} does nothing for {words[0]} (" if idle_verb else
                          f"{shown} does nothing for target {wrong}"))
    cases.append((["down"], ["--delete-claims"], "--delete-claims does nothing for target local"))
    cases.append((["sync"], ["--target", "local", "--namespace", "ns"], "--namespace does nothing for target local"))
    cases.append((["sync"], ["--target", "local", "--container", "c"], "--container does nothing for target local"))
    assert TARGETS
    return cases


IDLE = idle_cases()


def test_the_walk_finds_every_reach_flag_on_every_cluster_verb():
    assert len({" ".join(w) for w, _, _ in IDLE}) >= 10 and len(IDLE) >= 80


@pytest.mark.parametrize("words, argv, words_said", IDLE, ids=[f"{' '.join(w)} {' '.join(a)}" for w, a, _ in IDLE])
def test_a_flag_that_does_nothing_for_the_target_is_refused_on_every_verb(capsys, tmp_path, monkeypatch, words, argv,
                                                                        words_said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    (tmp_path / "hosts.txt").write_text("gpu01\ngpu02\n")
    tail = ["--", "t.py"] if words[0] in ("run", "exec") else []
    tail += ["--cluster"] if words[0] == "doctor" else []  # doctor reaches the nodes with --cluster only (walk13 A8)
    dry = ["--dry-run"] if "--dry-run" in flags_of(dict((" ".join(w), c) for w, c in LEAVES)[" ".join(words)]) else []
    code, out, err = run_cli(capsys, *words, *argv, *dry, *tail)
    assert code == EXIT_USAGE, (out, err)
    assert words_said in one_line(err)


def test_flags_for_the_chosen_target_are_still_taken(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")  # the script there: up's dry run ends 2 on a missing one (walk17a)
    code, out, err = run_cli(capsys, "up", "--target", "hosts", "--host", "a", "--host", "b", "--remote-dir", "/srv/x",
                             "--ssh-option", "Port=22", "--engine", "podman", "--dry-run")
    assert code == 0, err
    code, out, err = run_cli(capsys, "up", "--target", "local", "--engine", "podman", "--dry-run")
    assert code == 0 or "is not built here" in out, err  # exit 3 where the image is not built (walk18a A5)


# -- `~` the shell left in a path option ---------------------------------------------------------------------


def path_params():
    from nodeweave.cli.habits.coercion import plain_runtime_param

    found = []
    for words, command in LEAVES:
        for param in command.params:
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is not None and descriptor.annotation is Path:
                found.append((words, param, plain_runtime_param(param)))
    return found


PATHS = path_params()


def test_the_walk_finds_every_local_path_option():
    names = {f"{' '.join(w)} {max(p.opts, key=len) if p.opts else p.name}" for w, p, _ in PATHS}
    assert {"validate --spec", "init --out", "render --out", "runs ls --runs-dir", "up --hosts-file",
            "doctor --capture", "image build --context", "sync src"} <= names, names
    assert len(PATHS) >= 40


@pytest.mark.parametrize("words, param, plain", PATHS,
                         ids=[f"{' '.join(w)} {max(p.opts, key=len) if p.opts else p.name}" for w, p, _ in PATHS])
def test_every_local_path_option_expands_a_tilde_the_shell_left(monkeypatch, tmp_path, words, param, plain):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert plain is not None, "a path option converted outside nodeweave's plain conversion would keep '~'"
    assert plain.click_type.convert("~/x.yaml", param, None) == tmp_path / "x.yaml"
    assert plain.click_type.convert("~", param, None) == tmp_path
    with pytest.raises(Exception) as caught:
        plain.click_type.convert("~no-such-user-43/x", param, None)
    assert "no user 'no-such-user-43'" in str(caught.value)


def test_spec_given_as_opt_equals_tilde_is_the_homes_file(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path / "..")
    (tmp_path / "proj").mkdir()  # a project folder in the home: the home itself is no workspace (walk9 A27)
    (tmp_path / "proj" / "s.yaml").write_text(BASE)
    code, out, err = run_cli(capsys, "validate", "--spec=~/proj/s.yaml")
    assert code == 0, err
    assert f"{tmp_path / 'proj' / 's.yaml'}: valid" in out


@pytest.mark.parametrize("argv", [["up", "--target", "hosts", "--host", "a", "--host", "b", "--dry-run"],
                                  ["sync", ".", "--node", "ssh:a", "--dry-run"]])
def test_a_remote_folder_under_this_machines_home_gets_the_quoted_spelling(capsys, tmp_path, monkeypatch, argv):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    where = ["--remote-dir", f"{home}/aorta"] if argv[0] == "up" else [f"{home}/aorta"]
    argv = argv[:2] + where + argv[2:] if argv[0] == "sync" else argv + where
    _, _, err = run_cli(capsys, *argv)
    assert f"is under this machine's home ({home})" in err and "'~/aorta' (quoted)" in err, err


# -- sync's sources, and dry runs with nothing up -------------------------------------------------------------


@pytest.mark.parametrize("src", ["/", "/etc", "/usr/", "/etc/..", "/home"])
def test_sync_refuses_a_source_that_is_root_or_a_system_folder(capsys, tmp_path, monkeypatch, src):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "sync", src, "/workspace", "--dry-run", "--node", "podman:a")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert f"SRC {str(Path(src))!r} is not accepted" in line and "whole tree would be sent" in line


DRY_VERBS = [words for words, command in LEAVES if "--dry-run" in flags_of(command) and "--remote-dir" in
             flags_of(command)] + [["sync"]]


def test_the_walk_finds_every_cluster_verbs_dry_run():
    assert {"up", "down", "run", "exec", "stop", "check", "shell", "sync"} <= {" ".join(w) for w in DRY_VERBS}


@pytest.mark.parametrize("words", DRY_VERBS, ids=[" ".join(w) for w in DRY_VERBS])
def test_every_dry_run_with_nothing_up_exits_0_and_says_what_the_real_verb_would_meet(capsys, tmp_path, monkeypatch,
                                                                                    words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    tail = ["--", "t.py"] if words[0] in ("run", "exec") else []
    tail += ["--cluster"] if words[0] == "doctor" else []  # doctor reaches the nodes with --cluster only (walk13 A8)
    code, out, err = run_cli(capsys, *words, "--dry-run", *tail)
    assert code == 0 or (words[0] == "up" and "is not built here" in out), (out, err)  # up: its image (walk18a A5)
    if words[0] != "up":
        assert "the real " in out or "nothing to take down" in out, out
    assert not (tmp_path / ".nodeweave" / "j" / "compose.yaml").exists()  # a dry run writes nothing


def test_down_with_nothing_up_says_so_and_writes_nothing(capsys, tmp_path, monkeypatch):
    import shutil

    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (.ci/setup-engine.sh installs it): it says that no container "
                    "exists (nothing is started)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE.replace("name: j", "name: walk-down-nothing-up"))
    code, out, err = run_cli(capsys, "down", "--dry-run")
    assert code == 0 and "nothing to take down" in out and "podman-compose" not in out, out
    code, out, err = run_cli(capsys, "down")
    assert code == 0 and "nothing to take down" in out + err, (out, err)
    assert not (tmp_path / ".nodeweave" / "walk-down-nothing-up" / "compose.yaml").exists()


# -- output paths that are not regular files ----------------------------------------------------------------


def params_judged_by(name):
    """(command words, longest flag) of every option whose callback is ``habits.output``'s ``name``; none before
    that one callback existed (the walk finds none, and the tests below say so)."""
    try:
        from nodeweave.cli.habits import output
    except ImportError:
        return []
    judge = getattr(output, name, None)
    if judge is None:
        return []
    return [(words, max(p.opts, key=len)) for words, command in LEAVES for p in command.params
            if getattr(getattr(p, "callback", None), "__wrapped__", None) is judge]


OUTPUT_FILES = params_judged_by("output_file")


def test_every_option_naming_a_file_nodeweave_writes_is_judged():
    assert {("init", "--out"), ("bench", "--json-out"), ("bench", "--plot"), ("runs compare", "--chart"),
            ("hosts probe", "--write-hostfile"), ("hosts probe", "--hostfile")} <= \
        {(" ".join(w), flag) for w, flag in OUTPUT_FILES}, OUTPUT_FILES


@pytest.mark.parametrize("words, flag", OUTPUT_FILES, ids=[f"{' '.join(w)} {f}" for w, f in OUTPUT_FILES])
@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_an_output_file_that_is_a_device_a_pipe_or_a_folder_is_refused(capsys, tmp_path, monkeypatch, words, flag,
                                                                       kind):
    monkeypatch.chdir(tmp_path)
    target = {"device": "/dev/zero", "fifo": str(tmp_path / "fifo"), "folder": str(tmp_path)}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    extra = ["a", "b"] if words == ["runs", "compare"] else []
    code, _, err = run_cli(capsys, *words, flag, target, "--force", *extra) if "--force" in flags_of(
        dict((" ".join(w), c) for w, c in LEAVES)[" ".join(words)]) else run_cli(capsys, *words, flag, target, *extra)
    assert code == EXIT_USAGE, err
    what = {"device": "a character device", "fifo": "a named pipe", "folder": "a folder"}[kind]
    assert f"{flag} {target}: is {what}, not a file" in one_line(err)


# -- nodeweave's own options typed after `--` -------------------------------------------------------------------


def after_dashes_cases():
    from nodeweave.cli.habits.dashes import CommandAfterDashes

    cases = []
    for words, command in LEAVES:
        if not isinstance(command, CommandAfterDashes):
            continue
        for param in command.params:
            if param.param_type_name != "option" or "--help" in param.opts or "--dry-run" in param.opts:
                continue
            value = [] if param.is_flag else [{"--output": "json", "--node": "1", "--env": "A=1"}.get(
                max(param.opts, key=len), "1")]
            for name in param.opts:
                cases.append((words, [name, *value]))
    return cases


AFTER_DASHES = after_dashes_cases()


def test_the_walk_finds_every_option_of_the_verbs_that_take_a_command():
    assert {" ".join(w) for w, _ in AFTER_DASHES} == {"run", "exec"} and len(AFTER_DASHES) > 30


@pytest.mark.parametrize("words, typed", AFTER_DASHES, ids=[f"{' '.join(w)} -- x {' '.join(t)}" for w, t in AFTER_DASHES])
def test_an_option_of_the_verb_appended_after_the_command_is_warned_about(capsys, tmp_path, monkeypatch, words, typed):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    program = "t.py" if words == ["run"] else "ls"
    _, _, err = run_cli(capsys, *words, "--dry-run", "--", program, *typed)
    assert f"warning: {' '.join(typed)} comes after `--`, so it goes to the command" in err, err
    assert f"put it before `--`: nodeweave {words[0]} --dry-run {' '.join(typed)} -- {program}" in err, err


def test_an_option_in_the_middle_of_the_command_is_the_commands(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "t.py", "--output", "x", "--epochs", "3")
    assert "comes after `--`" not in err


# -- image references: one validator --------------------------------------------------------------------------


# up --image is judged by the same rule (check_image_reference) once up knows its target takes an image: for one
# that does not (slurm, bare hosts) the flag is refused as idle before its value is judged (walk5 W18).
IMAGES = params_judged_by("image_reference") + [(["up"], "--image")]


def test_the_walk_finds_every_option_naming_an_image():
    named = {(" ".join(w), f) for w, f in IMAGES}
    assert {("up", "--image"), ("image build", "--base")} <= named
    for words, command in LEAVES:  # no option that takes an image reference is left out of the rule
        for p in command.params:
            if p.param_type_name == "option" and set(p.opts) & {"--image", "--base"}:
                assert (" ".join(words), max(p.opts, key=len)) in named


@pytest.mark.parametrize("words, flag", IMAGES, ids=[f"{' '.join(w)} {f}" for w, f in IMAGES])
@pytest.mark.parametrize("bad", ["UPPER:tag", "a b", "x:", "ghcr.io/x/y:tag with space", ":latest"])
def test_an_invalid_image_reference_is_refused_by_the_specs_rule(capsys, tmp_path, monkeypatch, words, flag, bad):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    code, _, err = run_cli(capsys, *words, flag, bad, "--dry-run")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert f"{flag} {bad!r} is not accepted" in line and "an image reference such as" in line


def test_an_invalid_image_in_the_environment_is_refused_naming_the_variable(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    monkeypatch.setenv("NODEWEAVE_IMAGE", "UPPER:tag")
    code, _, err = run_cli(capsys, "up", "--dry-run")
    assert code == EXIT_USAGE
    assert "NODEWEAVE_IMAGE='UPPER:tag' from this environment is not an image reference" in one_line(err)
    monkeypatch.setenv("NODEWEAVE_IMAGE", "ghcr.io/x/y:t")
    (tmp_path / "t.py").write_text("print(1)\n")  # the script there: up's dry run ends 2 on a missing one (walk17a)
    code, out, _ = run_cli(capsys, "up", "--dry-run")
    assert code == 0 and "ghcr.io/x/y:t" in out


# -- a push outside git --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [[], ["-o", "json"]])
def test_a_push_outside_git_says_only_the_mutable_tag_goes(capsys, tmp_path, monkeypatch, fmt):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE.replace("{variant: cpu}", "{variant: cpu, registry: ghcr.io/me}"))
    assert run_cli(capsys, "render", "entrypoint")[0] == 0
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--push", "--dry-run", *fmt)
    assert code == 0, err
    assert "is not in a git checkout, so there is no <variant>-<git sha> tag: only the mutable :cpu is pushed" in out
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--push", "--dry-run", "--tag", "v1", *fmt)
    assert code == 0 and "not in a git checkout" not in out  # a fixed tag was asked for


# -- the plan's first line: why each node runs the image it runs, a whole clause on every target -----------------


@pytest.mark.parametrize("variant, target", [("cpu", "local"), ("cuda12", "local"), ("cuda12", "hosts"),
                                             ("cuda12", "kubernetes")])
def test_the_image_line_of_every_targets_plan_says_why_in_full(capsys, tmp_path, monkeypatch, variant, target):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_IMAGE", raising=False)
    (tmp_path / "nodeweave.yaml").write_text(BASE.replace("variant: cpu", f"variant: {variant}")
                                             + ("gpus_per_node: 8\n" if variant != "cpu" else ""))
    reach = {"local": [], "hosts": ["--host", "a", "--host", "b", "--remote-dir", "/srv/x"],
             "kubernetes": []}[target]
    code, out, err = run_cli(capsys, "up", "--target", target, *reach, "--dry-run")
    line = next(line for line in out.splitlines() if "runs image" in line)
    assert not line.rstrip().endswith("the spec's"), line  # the walk's cut sentence
    if target == "local" and variant != "cpu":
        assert f"with the cpu variant, not its {variant}: the local target simulates every node" in line, line
    else:
        assert "the spec's image (image.registry, name and variant)" in line, line
