"""The command line's habits from issue 34, item 5, over every verb so a new one cannot forget them.

A misspelt option gets "did you mean" on every verb (click's suggestion, one wording, also on the
verbs that take a command after ``--``, and in ``nodeweave-entrypoint``); ``nodeweave-entrypoint
--version`` answers like ``nodeweave --version``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cli_run
from cli_run import leaves
import pytest

from nodeweave import __version__
from nodeweave.cli import app, main
from nodeweave.errors import EXIT_USAGE
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)


def misspelt_options():
    found = []
    for words, command in leaves():
        if getattr(command, "hidden", False):
            continue
        flags = [max(p.opts, key=len) for p in command.params
                 if p.param_type_name == "option" and not getattr(p, "hidden", False)]
        for flag in flags:
            swapped = flag[:-2] + flag[-1] + flag[-2]  # the last two letters swapped, else the last one dropped
            if len(flag) > 5:
                found.append((words, flag, swapped if swapped != flag else flag[:-1]))
    return found


MISSPELT = misspelt_options()


def test_the_walk_finds_every_verbs_options():
    assert len({" ".join(words) for words, _, _ in MISSPELT}) > 20 and len(MISSPELT) > 150


@pytest.mark.parametrize("words, flag, typo", MISSPELT, ids=[f"{' '.join(w)} {t}" for w, _, t in MISSPELT])
def test_a_misspelt_option_gets_did_you_mean_on_every_verb(tmp_path, monkeypatch, capsys, words, flag, typo):
    monkeypatch.chdir(tmp_path)
    code = main([*words, typo, "x"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert "did you mean" in err and flag in err.split("did you mean", 1)[1], err


def entrypoint(*argv: str) -> subprocess.CompletedProcess:
    return cli_run.entrypoint(*argv, timeout=60, env={"PATH": "/usr/bin:/bin"})


def test_entrypoint_version_answers_like_nodeweaves():
    done = entrypoint("--version")
    assert done.returncode == 0 and done.stdout == f"nodeweave-entrypoint {__version__}\n", done.stderr
    assert "--version" in entrypoint("--help").stdout


def test_entrypoint_names_the_option_meant():
    done = entrypoint("--explian")
    assert done.returncode == 2 and "unknown option '--explian' (did you mean --explain?)" in done.stderr


def complete(cwd: Path, line: str) -> "list[str]":
    """What the shell is offered for the last word of ``line`` (click's bash completion, the real program)."""
    words = line.split(" ")
    env = {"PATH": "/usr/bin:/bin", "_NODEWEAVE_COMPLETE": "complete_bash",
           "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
    done = cli_run.run(cli_run.PROGRAM, env=env, cwd=cwd, timeout=60)
    return done.stdout.split()


@pytest.mark.parametrize("line, offered", [
    ("nodeweave status -o ", ["table", "wide", "json", "yaml", "name"]), ("nodeweave runs ls -o j", ["json"]),
    ("nodeweave up --target k", ["kubernetes"]), ("nodeweave up --engine ", ["podman", "docker", "none"]),
    ("nodeweave render c", ["compose"]), ("nodeweave run --launcher d", ["deepspeed"]),
    ("nodeweave run --profile ", ["nsys", "rocprofv3"]), ("nodeweave down --overlay o", ["openshift"]),
])
def test_fixed_choices_are_completed(tmp_path, line, offered):
    assert complete(tmp_path, line) == offered


def test_run_ids_are_completed(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text("name: j\nimage: {variant: cpu}\nlauncher: {script: t.py}\n")
    for name in ("20260101T000000Z-j", "20260102T000000Z-j"):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "run.json").write_text(json.dumps(
            {"id": name, "job": "j", "started": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:05:00Z",
             "exit_code": 0, "nodes": []}))
    (tmp_path / "runs" / "20260103T000000Z-sweep").mkdir()
    (tmp_path / "runs" / "20260103T000000Z-sweep" / "sweep.json").write_text(json.dumps({"job": "j", "points": []}))
    (tmp_path / "runs" / "20260104T000000Z-j").mkdir()  # no record: no run a verb can read (walk6 W67)
    assert complete(tmp_path, "nodeweave runs show ") == ["last", "20260101T000000Z-j", "20260102T000000Z-j",
                                                          "20260103T000000Z-sweep"]
    assert complete(tmp_path, "nodeweave runs compare 20260102") == ["20260102T000000Z-j"]
    assert complete(tmp_path, "nodeweave logs --run 20260103") == ["20260103T000000Z-sweep"]


# Every verb that prints data takes -o (up, down, run, stop, check and sync too since their plans, issue 34;
# --json stays as the spelling of -o json); only the deprecated `variants` alias keeps --json alone.
JSON_ONLY = {"variants"}


def test_every_verb_that_prints_data_takes_o():
    lacking = set()
    for words, command in leaves():
        opts = {flag for param in command.params for flag in getattr(param, "opts", ())}
        if "--json" in opts and "--output" not in opts:
            lacking.add(" ".join(words))
    assert lacking == JSON_ONLY


# doctor reads a fixed tree: this machine's interfaces come and go as containers of other tests start (a veth)
DOCTOR_TREE = str(Path(__file__).parent / "fixtures" / "synthetic" / "cpu-only")


@pytest.mark.parametrize("argv", [["render", "compose", "--dry-run"], ["doctor", "--sysroot", DOCTOR_TREE],
                                  ["exec", "--dry-run", "--", "true"]])
def test_o_yaml_prints_the_same_data_as_json(tmp_path, monkeypatch, capsys, argv):
    import json

    import yaml

    (tmp_path / "nodeweave.yaml").write_text("name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    monkeypatch.chdir(tmp_path)
    cut = argv.index("--") if "--" in argv else len(argv)
    assert main([*argv[:cut], "--json", *argv[cut:]]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main([*argv[:cut], "-o", "yaml", *argv[cut:]]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json


def test_a_table_off_a_terminal_keeps_every_row_on_one_line(tmp_path):
    """`nodeweave runs ls | grep ...` sees whole rows: no cell folded onto a second line at 80 or 140 columns."""
    (tmp_path / "nodeweave.yaml").write_text("name: j\nimage: {variant: cpu}\nlauncher: {script: t.py}\n")
    folder = tmp_path / "runs" / "20260101T000000Z-j"
    folder.mkdir(parents=True)
    words = ["t.py", *(f"--option-number-{i}=a-long-value-{i}" for i in range(12))]
    (folder / "run.json").write_text(__import__("json").dumps({"job": "j", "command": words, "exit_code": 0,
                                                               "started": "2026-01-01T00:00:00Z", "ended": "x"}))
    done = cli_run.run([*cli_run.PROGRAM, "runs", "ls"], cwd=tmp_path, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "HOME": home_beside(tmp_path)})
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "20260101T000000Z-j" in line]
    assert len(rows) == 1 and "--option-number-11=a-long-value-11" in rows[0], done.stdout


CLUSTER_VERBS = ("up", "down", "status", "stop", "shell", "logs", "run", "exec", "check")


def test_the_reach_flags_are_declared_once_and_every_cluster_verb_takes_them():
    """Issue 34: the ten reach flags were re-listed by nine verbs; now one table (clusteropts.REACH_FLAGS) that
    @reach_options puts in each verb's signature, so every verb offers them with the same help."""
    import inspect

    from nodeweave.cli.habits.clusteropts import REACH_FLAGS

    wanted = {option.param_decls[0]: option.help for _, _, option in REACH_FLAGS}
    by_name = {" ".join(words): command for words, command in leaves()}
    for verb in CLUSTER_VERBS:
        shown = {opt: param.help for param in by_name[verb].params for opt in param.opts}
        assert {flag: shown.get(flag) for flag in wanted} == wanted, verb
        written = inspect.signature(inspect.unwrap(by_name[verb].callback)).parameters  # the verb as written
        assert "reach" in written and not {name for name, _, _ in REACH_FLAGS} & set(written), verb
    cli = Path(__file__).resolve().parents[1] / "src" / "nodeweave" / "cli"
    import re

    declaring = sorted(p.relative_to(cli).as_posix() for p in cli.rglob("*.py")  # an option declared, not a name said
                       if re.search(r'Option\([^)]*"--kube-context"', p.read_text()))
    assert declaring == ["habits/clusteropts.py", "sync.py"]  # sync's targets are its own (pods, hosts, projects)
