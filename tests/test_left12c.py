"""Two classes the eleventh replay found and the last round took only in part (issue 43, left12c; rows R2 and R3
of /work/wt/replay11-report.md), each walked over the product's own table. Each test fails on the code before its
fix. No container is started: the tools are stood in for, or left off PATH.
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli
from team_folder import make_team
from nodeweave.entrypoint.planning.contract import SETTINGS


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- R3: a spec value every node refuses is refused by validate, through the node's own reader ------------------------

SPEC_ROWS = [row for row in SETTINGS if row.spec]


@pytest.mark.parametrize("row", SPEC_ROWS, ids=[row.key for row in SPEC_ROWS])
def test_r3_every_spec_field_that_becomes_a_variable_is_read_by_the_nodes_own_reader(capsys, team, monkeypatch, row):
    """R3: `launcher.setup: ["source"]` was valid, rendered as NODEWEAVE_SETUP and planned, and every node refused
    that very value. validate reads every field the contract's table renders into a node's variable with the node's
    own reader of that variable: here each row's reader refuses what it is given, and validate must say so, naming
    the row's spec field (a new row of the table is walked here with nothing added)."""
    from nodeweave.entrypoint.errors import UsageError as NodeRefusal

    def refuse(text, what, source):
        raise NodeRefusal(f"{what} {text!r} (from {source}) is refused by this node; accepted: what it reads")

    monkeypatch.setattr(row, "text", lambda value: "as-rendered")
    monkeypatch.setattr(row, "read", refuse)
    code, out, err = run_cli(capsys, "validate")
    assert code == 2, (out, err)
    assert f" {row.spec}: {row.what} 'as-rendered' (from {row.variable}, as every node receives it) is refused by " \
           "this node; accepted: what it reads" in err, err


@pytest.mark.parametrize("field, value, said", [
    ("launcher", {"setup": ["source"]}, "'source' alone does nothing"),
    ("launcher", {"setup": ["module"]}, "'module' alone does nothing"),
    ("network", {"interfaces": ["eth*"]}, "'eth*' holds a glob (*, ? or [)"),
    ("network", {"interfaces": ["ib?"]}, "'ib?' holds a glob (*, ? or [)"),
])
@pytest.mark.parametrize("verb", [("validate",), ("render", "compose", "--dry-run"), ("up", "--dry-run")])
def test_r3_a_value_every_node_refuses_is_refused_by_validate_render_and_up(capsys, team, field, value, said, verb):
    """R3: real values the spec took and every node refused: a setup line that is one word doing nothing alone, and
    an interface written as a glob (`network.interfaces: ["eth*"]` was valid, rendered as NODEWEAVE_INTERFACES=eth*,
    and each node refused it: nothing expands it). validate, render and up --dry-run refuse it, exit 2, naming the
    field and its line."""
    spec = team / "nodeweave.yaml"
    text = spec.read_text()
    if field == "launcher":
        text = text.replace("  script: train.py\n", f"  script: train.py\n  setup: {json.dumps(value['setup'])}\n")
    else:
        text += f"{field}: {json.dumps(value)}\n"
    spec.write_text(text)
    line = next(i for i, written in enumerate(text.splitlines(), 1) if ("setup" in written or "interfaces" in written))
    code, out, err = run_cli(capsys, *verb)
    assert code == 2 and said in err and f"nodeweave.yaml:{line}: {field}." in err, (out, err)


# -- R2: a missing tool's hint offers only what the running verb has, and names the address as typed ---------------

def command_of(words):
    """The click command of the verb ``words`` names (``["hosts", "probe"]``)."""
    import typer.main
    from typer._click import Context

    from nodeweave.cli import app
    from nodeweave.cli.habits.lazy import every_command

    command = every_command(typer.main.get_command(app))[words[0]]
    for word in words[1:]:
        command = command.get_command(Context(command), word)
    return command


def every_verb():
    import typer.main
    from typer._click import Context

    from nodeweave.cli import app
    from nodeweave.cli.habits.lazy import every_command

    found = []
    for name, command in every_command(typer.main.get_command(app)).items():
        if hasattr(command, "list_commands"):
            found += [([name, sub], command.get_command(Context(command), sub))
                      for sub in command.list_commands(Context(command))]
        else:
            found.append(([name], command))
    return found


def options_of(command):
    return {opt for param in command.params for opt in getattr(param, "opts", ())}


def offered_options(line):
    import re

    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line))


ADDRESSED = ["hosts probe --node {a}", "init --host {a} --dry-run --out i.yaml", "sync . /ws --node {a}"]
REACHES = [  # (argv, the tool it needs first, the address typed or None)
    *[(form.format(a=a), tool, a) for form in ADDRESSED
      for a, tool in (("pod:x", "kubectl"), ("oc:x", "oc"), ("podman:x", "podman"), ("docker:x", "docker"),
                      ("ssh:gpu1", "ssh"))],
    *[(f"{verb} -t kubernetes{cli}{rest}", tool, None) for verb, rest in (
        ("status", ""), ("logs", ""), ("stop", ""), ("down", ""), ("up", ""), ("run", ""), ("exec", " -- ls"),
        ("sync", ""), ("check", "")) for cli, tool in (("", "kubectl"), (" --kube-cli oc", "oc"))],
    *[(f"{verb} -t local --engine {engine}{rest}", engine, None) for verb, rest in (
        ("status", ""), ("logs", ""), ("down", ""), ("exec", " -- ls")) for engine in ("podman", "docker")],
    ("sync . /ws --node podman:x --method rsync", "rsync", None),
    ("up -t slurm", "srun", None),
    ("doctor --cluster", "no container engine", None), ("status", "no container engine", None),
]


@pytest.mark.parametrize("argv, tool, address", REACHES, ids=[argv for argv, _, _ in REACHES])
def test_r2_a_missing_tool_is_said_with_only_what_the_verb_takes(capsys, team, monkeypatch, argv, tool, address):
    """R2: `init --host oc:x` without oc said `init --host pod:x reaches the hosts with it (... or pass --kube-cli
    kubectl)`: init has no --kube-cli, and oc:x was named pod:x. Every verb that can meet a missing tool (kubectl,
    oc, ssh, rsync, podman, docker, srun) says it with options that verb has, and an address with the kind typed
    (`sync --node oc:x` named pod:default/x)."""
    words = argv.split()
    monkeypatch.setenv("PATH", str(team / "no-tools"))
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")
    code, out, err = run_cli(capsys, *words)
    said = err + out
    assert code in (0, 3) and any(f"{tool}{is_}" in said for is_ in (" is not on PATH", " is not installed", ":")), said
    verb = [word for word in words if not word.startswith("-")][:2]
    command = command_of(verb if verb[0] == "hosts" else verb[:1])
    assert offered_options(said) <= options_of(command), (said, offered_options(said) - options_of(command))
    if address:  # the address with the kind typed, never as the other tool's (oc:x said pod:default/x)
        kind = address.partition(":")[0]
        other = {"pod": "oc", "oc": "pod"}.get(kind)
        assert f"{kind}:" in said and (other is None or not any(f"{other}:{name}" in said for name in
                                                                 ("x", "default/x"))), said


@pytest.mark.parametrize("tool", ["kubectl", "oc", "ssh", "rsync", "podman", "docker", "podman-compose", "srun",
                                  "sbatch"])
@pytest.mark.parametrize("verb", [words for words, _ in every_verb()], ids=" ".join)
def test_r2_the_last_resort_says_a_missing_tool_with_only_the_verbs_options(verb, tool, tmp_path, monkeypatch):
    """R2's class, every verb x every tool: the CLI's last resort (``from_os_error``, a program that could not start)
    and ``need_tool`` offer an option only where the running verb (click's current command) has it."""
    import subprocess

    from typer._click import Context

    from nodeweave.errors import EnvironmentProblem
    from nodeweave.failures import from_os_error, need_tool

    monkeypatch.setenv("PATH", str(tmp_path))
    command = command_of(verb)
    with Context(command):
        try:
            subprocess.run([tool])
        except FileNotFoundError as err:
            last = str(from_os_error(err))
        with pytest.raises(EnvironmentProblem) as needed:
            need_tool(tool, "it reaches the nodes")
    for line in (last, str(needed.value)):
        assert f"{tool} is not on PATH" in line and offered_options(line) <= options_of(command), (verb, line)
