"""The twelfth walk, part A (issue 43, /work/wt/walk12a-report.md), rows fixed by fix12a1: each row's class, one test
per class, each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cli_run
from cli_run import in_process as run_cli

FOREIGN = b"somebody else's file\n"


# -- A21, A22, A23: a file nodeweave writes for the user is made exclusively at the moment of writing; one that
# appeared after the start-up check is kept (replaced only with --force, judged again then) ---------------------------

def _bench_json(path: Path, force: bool):
    from nodeweave.bench import report
    from nodeweave.cli.habits.replace import may_replace

    return report.write_json(path, {"schema": "nodeweave.bench/1", "runs": []},
                             may_replace("--json-out", "bench", force), f"--json-out {path}")


def _hostfile(path: Path, force: bool):
    from nodeweave.cli.habits.replace import may_replace
    from nodeweave.hosts import Hostfile, write_hostfile

    write_hostfile(path, Hostfile("node-0 slots=8\n"), force, may_replace("--write-hostfile", "hostfile", force))


def _plan_record(path: Path, force: bool, monkeypatch=None):
    from nodeweave.cluster import execute
    from nodeweave.plan import Plan

    import os

    os.environ[execute.RECORD_ENV] = str(path)
    try:
        execute.record(Plan("up", "here", (), ()))
    finally:
        del os.environ[execute.RECORD_ENV]


WRITERS = {"bench --json-out": (_bench_json, "out.json"), "hosts probe --write-hostfile": (_hostfile, "hostfile"),
           "NODEWEAVE_PLAN_RECORD": (_plan_record, "plan.json")}


@pytest.mark.parametrize("member", sorted(WRITERS))
@pytest.mark.parametrize("force", [False, True])
def test_a_file_that_appeared_after_the_check_is_kept(tmp_path, member, force):
    """A21, A22, A23: every writer of a file the user names, called as the verb calls it after its start-up check
    found the name free, keeps a foreign file that appeared meanwhile (one line, exit 2), --force or not."""
    from nodeweave.errors import UsageError

    writer, name = WRITERS[member]
    path = tmp_path / name
    path.write_bytes(FOREIGN)
    with pytest.raises(UsageError) as err:
        writer(path, force)
    assert path.read_bytes() == FOREIGN
    assert "\n" not in str(err.value) and str(path) in str(err.value)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_an_earlier_result_that_appeared_is_kept_without_force(tmp_path):
    """A22: a bench result written at --json-out by another bench while this one ran is kept without --force (the
    refusal says so and names the file), and replaced with it."""
    from nodeweave.errors import UsageError

    path = tmp_path / "base.json"
    earlier = json.dumps({"schema": "nodeweave.bench/1", "runs": ["first"]}).encode()
    path.write_bytes(earlier)
    with pytest.raises(UsageError, match="appeared after this command started.*--force"):
        _bench_json(path, False)
    assert path.read_bytes() == earlier
    _bench_json(path, True)
    assert json.loads(path.read_text())["runs"] == []


def test_the_default_bench_name_taken_meanwhile_moves_on(tmp_path):
    """A21: two benches of one second: the second writes the next free default name, never over the first's."""
    from nodeweave.bench import report
    from nodeweave.cli.bench import default_json_path

    first = default_json_path(tmp_path)
    first.write_text('{"schema": "nodeweave.bench/1", "runs": ["first"]}')
    written = report.write_json(first, {"schema": "nodeweave.bench/1", "runs": []}, next_name=default_json_path)
    assert written != first and written.parent == tmp_path
    assert json.loads(first.read_text())["runs"] == ["first"]
    assert json.loads(written.read_text())["runs"] == []


def test_init_keeps_a_spec_that_appeared(tmp_path, monkeypatch, capsys):
    """A23: init's --out, when another init wrote the spec after this one's check: exit 2, that spec kept."""
    from nodeweave.cli import init

    (tmp_path / "main.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(init, "refuse_replacing", lambda *a: None)  # the name was free when it was checked
    spec = tmp_path / "spec.yml"
    spec.write_text("name: other\nimage: {variant: cpu}\nlauncher: {type: torchrun, script: other.py}\nnodes: 1\n")
    before = spec.read_bytes()
    code, out, err = run_cli(capsys, "init", "--script", "main.py", "--out", "spec.yml")
    assert code == 2, err
    assert "appeared after this command started" in err and "Traceback" not in err
    assert spec.read_bytes() == before


def test_two_exclusive_writers_never_both_win(tmp_path):
    """A21, A22, A23: the one write rule (nodeweave.newfile): of two writers of one free name, one writes it, the
    other is told the name is taken."""
    from nodeweave.newfile import Taken, create

    path = tmp_path / "x.json"
    create(path, b"first")
    with pytest.raises(Taken):
        create(path, b"second")
    assert path.read_bytes() == b"first"


# -- A25: `python -m nodeweave` is the nodeweave command --------------------------------------------------------------

@pytest.mark.parametrize("module,program", [("nodeweave", "nodeweave"), ("nodeweave.cli", "nodeweave"),
                                            ("nodeweave.entrypoint", "nodeweave-entrypoint")])
def test_python_dash_m_runs_the_command(tmp_path, module, program):
    """A25: `python -m nodeweave` (and the node side's `python -m nodeweave.entrypoint`) runs the command, whose
    name in errors stays the program's."""
    done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, cwd=tmp_path,
                          env=cli_run.checkout_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(program + " ") or done.stdout.startswith("nodeweave"), done.stdout
    wrong = subprocess.run([sys.executable, "-m", module, "--no-such-flag"], capture_output=True, text=True,
                           cwd=tmp_path, env=cli_run.checkout_env(), timeout=120)
    assert wrong.returncode == 2 and wrong.stderr.startswith(f"{program}: error:"), wrong.stderr


# -- A5: a launch Ctrl-C ended interrupts the verb (bench, doctor --bench: one launcher): exit 130, no result ---------

@pytest.mark.parametrize("ending", ["exit 130", "kill -INT $$"])
def test_an_interrupted_bench_launch_interrupts_the_verb(tmp_path, monkeypatch, capsys, ending):
    """A5: a bench whose launch Ctrl-C ended exits 130 (README's exit codes) and writes no result file."""
    from nodeweave.bench import runner

    monkeypatch.setattr(runner, "worker_command", lambda config, out: ["sh", "-c", ending])
    (tmp_path / "nodeweave.yaml").write_text("name: b\nimage: {variant: cpu}\nlauncher: {type: torchrun, script: "
                                             "train.py}\nnodes: 1\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "bench", "--sizes", "1K", "--iters", "1", "--warmup", "0", "--ops",
                             "all_reduce", "--backend", "gloo", "--nproc", "1", "--json-out", "b.json")
    assert code == 130, (out, err)
    assert not (tmp_path / "b.json").exists() and "wrote" not in out + err


# -- A14, A15, A16: a second variable typed into one --sweep or -e is named, with each variable as its own option ---

SPEC = "name: sp\nimage: {variant: cpu}\nlauncher: {type: torchrun, script: train.py}\nnodes: 2\n"
SECOND_VARIABLE = [  # (argv, exit code, the options offered)
    (["run", "--dry-run", "--sweep", "A=1 B=2"], 2, "--sweep A=1 --sweep B=2"),
    (["bench", "--dry-run", "--sweep", "A=1 B=2"], 2, "--sweep A=1 --sweep B=2"),
    (["run", "--dry-run", "--sweep", "A=1,B=2"], 0, "--sweep A=1 --sweep B=2"),
    (["bench", "--dry-run", "--sweep", "A=1,B=2"], 0, "--sweep A=1 --sweep B=2"),
    (["run", "--dry-run", "-e", "A=1 B=2"], 0, "-e A=1 -e B=2"),
    (["exec", "--dry-run", "-e", "A=1 B=2", "--", "env"], 0, "-e A=1 -e B=2"),
]


@pytest.mark.parametrize("argv,code,offered", SECOND_VARIABLE, ids=[" ".join(a[:4]) for a, _, _ in SECOND_VARIABLE])
def test_a_second_variable_in_one_option_is_named(tmp_path, monkeypatch, capsys, argv, code, offered):
    """A14, A15, A16: `--sweep 'A=1 B=2'` is refused offering two options (not A=1,B=2, a sweep of A over 'B=2'),
    `--sweep A=1,B=2` and `-e 'A=1 B=2'` are noted the same way; a plain value with words is not."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    got, out, err = run_cli(capsys, *argv)
    assert got == code, err
    said = out + err  # a dry run's notes are in its plan
    assert "holds another variable" in said and offered in said, said
    plain = [a if "=" not in a else a.split("=")[0] + "=--lr 3" for a in argv]
    got, out, err = run_cli(capsys, *plain)
    assert "holds another variable" not in out + err


# -- A1: an option typed before a verb that does not take it is "no such option", never an after-the-verb form that
# is then refused ------------------------------------------------------------------------------------------------

def _verb_paths():
    from nodeweave.cli import GROUPS, VERBS

    return [[verb] for verb in VERBS if verb not in GROUPS] + [[g, sub] for g, subs in GROUPS.items() for sub in subs]


@pytest.mark.parametrize("verb", [" ".join(v) for v in _verb_paths()])
def test_an_option_no_verb_takes_before_the_verb(capsys, tmp_path, monkeypatch, verb):
    """A1: `nodeweave --no-such-flag VERB` (every verb and sub-verb of the product's tables) says no such option,
    naming the verb, and offers no pasted form; an option the verb does take is still moved after it."""
    monkeypatch.chdir(tmp_path)
    words = verb.split()
    argv = [*words[:-1], "--no-such-flag", words[-1]] if len(words) == 2 else ["--no-such-flag", verb]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    line = cli_run.one_line(err)
    assert "no such option: --no-such-flag" in line and f"nor {verb} takes it" in line and "accepted: `" not in line


def test_an_option_the_verb_takes_is_still_offered_after_it(capsys, tmp_path, monkeypatch):
    """A1: `nodeweave --dry-run up` still offers `nodeweave up --dry-run` (up takes it)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "--dry-run", "up")
    assert code == 2 and "accepted: `nodeweave up --dry-run`" in err


# -- A11: another tool's -f/--file/--filename given a file nodeweave rendered offers the spec, never that file ------

@pytest.mark.parametrize("flag", ["-f", "--file", "--filename"])
@pytest.mark.parametrize("argv,rendered", [(["image", "build", "cpu", "--dry-run"], "images/cpu/Dockerfile"),
                                           (["up", "--dry-run"], "compose/local.yaml"),
                                           (["down"], "compose/local.yaml")])
def test_a_habit_option_naming_a_rendered_file_offers_the_spec(tmp_path, monkeypatch, capsys, flag, argv, rendered):
    """A11: `image build -f images/cpu/Dockerfile`, `up -f compose/local.yaml` (every habit spelling of --spec
    in othertools.OPTIONS): the hint names the spec (--spec nodeweave.yaml), never the rendered file it refuses."""
    from nodeweave.cli.habits.othertools import OPTIONS

    assert OPTIONS[flag][0] == "--spec"
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "render", "all")[0] == 0
    code, out, err = run_cli(capsys, *argv, flag, rendered)
    assert code == 2
    line = cli_run.one_line(err)
    assert f"--spec {rendered}" not in line and "(--spec nodeweave.yaml)" in line, line


# -- A24: `python -m MOD` after `--` is the launcher's own `-m MOD`, rewritten with a note as `python train.py` is ---

@pytest.mark.parametrize("python", ["python", "python3", "/usr/bin/python3"])
def test_python_dash_m_is_the_launchers_module_form(python):
    """A24: `nodeweave run -- python -m train` runs as `-- -m train` (said in a note), as `python train.py` runs as
    `train.py`; a launcher's module is still refused."""
    from nodeweave.cli.habits.dashes import launcher_command
    from nodeweave.errors import UsageError

    words, note = launcher_command([python, "-m", "train", "--lr", "1"], "torchrun")
    assert words == ["-m", "train", "--lr", "1"] and "runs as `-m train`" in note
    with pytest.raises(UsageError):
        launcher_command([python, "-m", "torch.distributed.run", "train.py"], "torchrun")


# -- A4, A8: every option naming a folder to read says "does not exist" / "is a symbolic link to X, which does not
# exist" / "is not a directory" (one rule: bounded.not_a_folder) ------------------------------------------------------

FOLDER_OPTIONS = {  # member: argv with {p} for the path
    "sync SRC": ["sync", "--dry-run", "{p}", "/workspace", "--node", "podman:c1"],
    "doctor --sysroot": ["doctor", "--sysroot", "{p}"],
    "image build --context": ["image", "build", "cpu", "--dry-run", "--context", "{p}"],
}


@pytest.mark.parametrize("member", sorted(FOLDER_OPTIONS))
@pytest.mark.parametrize("shape,said", [("missing", "does not exist"),
                                        ("dangling", "is a symbolic link to {target}, which does not exist"),
                                        ("file", "is not a directory")])
def test_a_folder_option_says_what_the_path_is(tmp_path, monkeypatch, capsys, member, shape, said):
    """A4, A8: `sync nonexist/`, `doctor --sysroot /nonexist` (and every option naming a folder to read) name a
    missing path as missing and a dangling link as one, never "is not a directory"."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "gone"
    path = tmp_path / "p"
    if shape == "dangling":
        path.symlink_to(target)
    elif shape == "file":
        path.write_text("x\n")
    code, out, err = run_cli(capsys, *[w.replace("{p}", str(path)) for w in FOLDER_OPTIONS[member]])
    assert code == 2, err
    line = cli_run.one_line(err)
    assert said.format(target=target) in line, line


# -- A19: a new folder in this user's own home is fine wherever that home is, root's /root too ----------------------

@pytest.mark.parametrize("home", ["/root"])
def test_a_folder_in_this_users_own_home_may_be_made(monkeypatch, home):
    """A19: as root (HOME=/root) or any user whose home is directly in a system folder, `--out ~/proj` (every
    folder option: systemdirs.made_in_system_folder) is made, as ~/proj is for a user of /home; another user's
    /root is still refused, named as root's home."""
    from nodeweave import systemdirs

    monkeypatch.setenv("HOME", home)
    monkeypatch.setattr(systemdirs, "own_homes", lambda: {home: "your home folder ($HOME)"})
    assert systemdirs.made_in_system_folder(f"{home}/walk12-proj-that-is-not-there") is None
    monkeypatch.setattr(systemdirs, "own_homes", lambda: {"/home/lab": "your home folder ($HOME)"})
    said = systemdirs.made_in_system_folder("/root/walk12-proj-that-is-not-there")
    assert said and "root's home" in said


# -- A20: a dry run notes a named node this machine can tell is not there (a local engine's container) --------------

@pytest.mark.parametrize("engine", ["podman", "docker"])
@pytest.mark.parametrize("state,said", [("missing", "has no container named trainer-0"),
                                        ("stopped", "the container trainer-0 is not running")])
def test_sync_dry_run_notes_a_container_that_is_not_there(tmp_path, monkeypatch, capsys, engine, state, said):
    """A20: `sync . /workspace --node podman:trainer-0 --dry-run` (docs/sync.md's line, either engine) notes what the
    real sync would end with when the container is missing or stopped, as `--compose-project` does."""
    import os

    tools = tmp_path / "bin"
    tools.mkdir()
    answer = "exit 125" if state == "missing" else "echo false"
    for tool in ("podman", "docker"):
        (tools / tool).write_text(f"#!/bin/sh\n[ \"$1\" = inspect ] && {{ {answer}; }}\nexit 0\n")
        (tools / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    work = tmp_path / "w"
    work.mkdir()
    (work / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(work)
    code, out, err = run_cli(capsys, "sync", ".", "/workspace", "--node", f"{engine}:trainer-0", "--dry-run")
    assert code == 1, err  # the one dry-run rule (walk18a A5, A7): a refusal the dry run found ends it with the real exit
    assert "the real sync would end with exit 1" in out + err and said in out + err, out + err
