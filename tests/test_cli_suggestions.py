"""Every command line an error message suggests is one the real CLI accepts (issue 34, item 3, wrong remedies).

A remedy that names a flag the verb lacks (``check --node 1`` once suggested ``--nodes``), drops the
script (``run train.py -- --lr 1e-3``), or a spec field the spec refuses is a second mistake handed to
the user. Each mistake below runs through the real CLI; every ``nodeweave VERB ...`` its message
suggests is parsed by that verb's own click command (options, arguments, callbacks: all but running
it), and every spec field it names is loaded into a spec.
"""

from __future__ import annotations

import re
import shlex

import pytest
import typer.main

from nodeweave.cli import app, main
from nodeweave.cli.habits.lazy import every_command
from nodeweave.errors import UsageError
from nodeweave.spec import parse_spec

SPEC = """name: nwhint
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""
MISTAKES = [
    ["run", "--dry-run", "--", "torchrun", "--nproc-per-node", "8", "train.py"],
    ["run", "--dry-run", "--", "torchrun", "--nnodes=2", "--master-port", "1234", "--log-dir", "/x", "train.py"],
    ["run", "--dry-run", "--", "python", "-m", "torch.distributed.run", "--nproc_per_node=4", "train.py"],
    ["run", "--dry-run", "--", "deepspeed", "--num_gpus", "2", "train.py"],
    ["run", "--dry-run", "--", "python", "-u", "train.py"],
    ["run", "--dry-run", "train.py", "--", "--lr", "1e-3"],
    ["run", "--dry-run", "--lr", "1e-3"],
    ["check", "--dry-run", "--node", "1"],
    ["run", "--dry-run", "--node", "1"],
    ["run", "--dry-run", "--node", "1-1"],
    ["exec", "--dry-run", "--node", "7", "--", "true"],
    ["stop", "--node", ","],
    ["render", "helm"],
    ["status", "--target", "kube-ish"],
    ["run", "--dry-run", "-e", "NODEWEAVE_NPROC_PER_NODE=4"],
    ["validat"],
]
SUGGESTED = re.compile(r"nodeweave (?:[a-z]+)(?: [^;`()]*)?")
PLACEHOLDERS = {"[OPTIONS]", "ARGS", "...", "N"}


def commands():
    root = typer.main.get_command(app)
    found = dict(every_command(root))
    for name, command in list(found.items()):
        for sub, below in (getattr(command, "commands", None) or {}).items():
            found[f"{name} {sub}"] = below
    return found


COMMANDS = commands()


def suggestions(message: str):
    for match in SUGGESTED.finditer(message):
        words = [w for w in shlex.split(match.group(0).rstrip(" .,")) if w not in PLACEHOLDERS]
        if len(words) > 1 and words[1] in COMMANDS:
            yield words[1:]


def parses(words):
    """Whether the verb's own click command reads ``words`` (options, arguments and their callbacks)."""
    name = words[0] if words[0] not in ("hosts", "image", "runs") else " ".join(words[:2])
    command = COMMANDS[name]
    args = words[len(name.split()):]
    try:
        command.make_context(name, list(args))
    except Exception as ended:  # --help: click's Exit(0) after printing the help, a parse that succeeded
        if getattr(ended, "exit_code", None) != 0 or type(ended).__name__ != "Exit":
            raise


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return tmp_path


@pytest.mark.parametrize("argv", MISTAKES, ids=[" ".join(a) for a in MISTAKES])
def test_every_suggested_command_parses_and_every_named_spec_field_loads(project, capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("nodeweave: error: ") and "Traceback" not in err, err
    for words in suggestions(err):
        try:
            parses(words)
        except UsageError as refused:
            pytest.fail(f"`nodeweave {' '.join(words)}` (suggested by `nodeweave {' '.join(argv)}`) is refused: "
                        f"{refused}")
        except Exception as refused:  # click's usage errors, found by shape
            pytest.fail(f"`nodeweave {' '.join(words)}` (suggested by `nodeweave {' '.join(argv)}`) does not parse: "
                        f"{getattr(refused, 'format_message', lambda: refused)()}")
    for field, value in re.findall(r"in the spec's (launcher\.options)|(launcher\.master_port)", err):
        spec_field = field or value
        if spec_field == "launcher.options":
            options = re.search(r"\(([^)]*)\) go in the spec's launcher.options", err).group(1)
            parse_spec(SPEC.replace("{script: train.py}", f"{{script: train.py, options: {options.split()!r}}}"))


def test_the_torchrun_remedy_keeps_processes_per_node_a_run_flag(project, capsys):
    main(["run", "--dry-run", "--", "torchrun", "--nproc-per-node", "8", "train.py"])
    err = capsys.readouterr().err
    assert "nodeweave run --nproc-per-node 8 -- train.py" in err
    assert "launcher.options" not in err and "NODEWEAVE_NPROC_PER_NODE" not in err


def test_the_twice_given_command_keeps_the_script(project, capsys):
    main(["run", "--dry-run", "train.py", "--", "--lr", "1e-3"])
    assert "nodeweave run [OPTIONS] -- train.py --lr 1e-3" in capsys.readouterr().err


def test_check_is_never_told_to_use_a_flag_it_lacks(project, capsys):
    main(["check", "--dry-run", "--node", "1"])
    err = capsys.readouterr().err
    assert "--nodes" not in err and "select --node 0-1" in err
