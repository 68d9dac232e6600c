"""The command line's habits, checked over every command so a new verb cannot forget them.

Walks the real click tree typer builds from ``nodeweave.cli.app`` and checks the naming rules
(docs/design.md, "Command-line conventions"), then every ``nodeweave ...`` command line the
README and docs/ show: each flag it names must exist on that verb.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import cli_run
import pytest
import typer.main
from rich.text import Text

from nodeweave.cli import app
from nodeweave.cli.habits.lazy import LazyVerbs, every_command

REPO = Path(__file__).resolve().parents[1]
LONG_FLAG = re.compile(r"^--[a-z0-9]+(-[a-z0-9]+)*$")
# The one meaning each short flag has, wherever it appears.
SHORT_FLAGS = {"-t": "--target", "-n": "--namespace", "-e": "--env", "-f": "--follow", "-q": "--quiet",
               "-v": "--verbose", "-l": "--selector", "-c": "--container", "-x": "--exclude", "-j": "--jobs",
               "-z": "--compress", "-o": "--output", "-d": "--detach"}
# Verbs that change the world and therefore offer a dry run.
CHANGING_VERBS = {"up", "down", "run", "stop", "shell", "render", "sync", "image build"}


def commands():
    def walk(command, path):
        yield path, command
        below = every_command(command) if isinstance(command, LazyVerbs) else getattr(command, "commands", {})
        for name, sub in sorted(below.items()):
            yield from walk(sub, f"{path} {name}".strip())
    return list(walk(typer.main.get_command(app), ""))


COMMANDS = commands()
BY_PATH = dict(COMMANDS)


def options(command):
    return [p for p in command.params if p.param_type_name == "option"]


def test_the_tree_holds_every_verb():
    assert {"up", "down", "run", "status", "render", "sync", "validate", "image build", "hosts probe"} <= set(BY_PATH)


@pytest.mark.parametrize("path, command", COMMANDS, ids=[p or "nodeweave" for p, _ in COMMANDS])
def test_naming_rules(path, command):
    if not getattr(command, "hidden", False):
        assert (command.help or "").strip(), f"`nodeweave {path}` has no help text"
    for param in options(command):
        for flag in param.opts + param.secondary_opts:
            if flag.startswith("--"):
                assert LONG_FLAG.match(flag), f"{path}: {flag} is not lower-case kebab-case"
            else:
                assert SHORT_FLAGS.get(flag) == param.opts[0], (
                    f"{path}: {flag} means {param.opts[0]} here, {SHORT_FLAGS.get(flag)} everywhere else")
        if not param.hidden:
            assert (param.help or "").strip(), f"{path}: {param.opts[0]} has no help text"


@pytest.mark.parametrize("path, command", COMMANDS, ids=[p or "nodeweave" for p, _ in COMMANDS])
def test_help_shows_what_is_typed(path, command):
    """No ``<bool>`` after a flag, no ``<list[...]>``, and no help text eaten as rich markup."""
    ctx = typer.main.get_command(app).make_context("nodeweave", [], resilient_parsing=True)
    for param in command.get_params(ctx):
        if param.param_type_name != "option":
            continue
        if param.is_flag:
            assert param.metavar == "", f"{path}: {param.opts[0]} shows a value placeholder"
        shown = param.display_type_rich(ctx) if hasattr(param, "display_type_rich") else ""
        assert "list[" not in (shown or ""), f"{path}: {param.opts[0]} shows {shown}"
        help_text = param.help or ""
        plain = Text.from_markup(help_text).plain
        assert plain.replace("[", "") == help_text.replace("\\[", "").replace("[", ""), (
            f"{path}: {param.opts[0]}'s help loses text to rich markup: {help_text!r} shows as {plain!r}")


@pytest.mark.parametrize("path", sorted(CHANGING_VERBS))
def test_every_changing_verb_has_a_dry_run(path):
    assert "--dry-run" in {f for p in options(BY_PATH[path]) for f in p.opts}


@pytest.mark.parametrize("path, command", COMMANDS, ids=[p or "nodeweave" for p, _ in COMMANDS])
def test_json_and_spec_mean_one_thing(path, command):
    for param in options(command):
        if "--json" in param.opts:
            assert param.is_flag and "JSON" in (param.help or ""), f"{path}: --json is a flag that says JSON"
        if "--spec" in param.opts and path != "doctor":  # doctor's --spec is opt-in: judge as a node of it
            assert param.envvar == "NODEWEAVE_SPEC" and param.default is None, (
                f"{path}: --spec is found like every verb's (flag, $NODEWEAVE_SPEC, nearest nodeweave.yaml)")


# ---- flags named in the docs are the real ones ------------------------------------------------

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def doc_command_lines():
    """(file, line number, text) of every ``nodeweave ...`` command line in a code block or span."""
    found = []
    for doc in DOCS:
        block = False
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip().startswith("```"):
                block = not block
                continue
            pieces = [line] if block else CODE_SPAN.findall(line)
            for piece in pieces:
                for part in re.split(r"\s*(?:;|&&|\|\|?)\s*", piece.split("  #")[0]):
                    words = part.strip().split()
                    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value nodeweave ...
                        words = words[1:]
                    if words[:1] == ["nodeweave"] and len(words) > 1:
                        found.append((doc.name, number, " ".join(words)))
    return found


def resolve(words):
    """The command a doc line names, and the words after its name (``help VERB`` is ``VERB --help``, as in main)."""
    if words[1:2] == ["help"]:
        words = [words[0], *words[2:], "--help"]
    from nodeweave.cli import verb_options_first

    words = [words[0], *verb_options_first(words[1:])]  # `nodeweave -o json status` is `status -o json`, as in main
    path, rest = "", words[1:]
    while rest and f"{path} {rest[0]}".strip() in BY_PATH:
        path, rest = f"{path} {rest[0]}".strip(), rest[1:]
    return path, rest


DOC_LINES = doc_command_lines()


def test_the_docs_show_many_command_lines():
    assert len(DOC_LINES) > 40


@pytest.mark.parametrize("doc, number, text", DOC_LINES, ids=[f"{d}:{n}" for d, n, _ in DOC_LINES])
def test_every_flag_the_docs_name_exists(doc, number, text):
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    path, rest = resolve(words)
    if not path and rest and not rest[0].startswith("-"):
        pytest.fail(f"{doc}:{number}: `{text}` names no nodeweave command")
    command = BY_PATH[path]
    known = {flag for p in command.params if not getattr(p, "hidden", False)  # a deprecated spelling is not shown
             for flag in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())) if flag.startswith("-")} | {"--help"}
    for word in rest:
        if word == "--":
            break
        if word.startswith("-") and not re.match(r"^-\d", word) and word not in ("-", "..."):
            flag = word.split("=", 1)[0]
            assert flag in known, f"{doc}:{number}: `nodeweave {path}` has no {flag} (in `{text}`)"


def test_old_short_flags_still_work_with_a_note(capsys):
    from nodeweave.cli.habits.spellings import upgrade

    assert upgrade(["sync", "-t", "podman:a", "--", "-t"]) == ["sync", "--node", "podman:a", "--", "-t"]
    assert upgrade(["sync", "-t", "local"]) == ["sync", "-t", "local"]  # -t is --target in every verb
    assert upgrade(["bench", "-o", "json"]) == ["bench", "-o", "json"]  # -o is the output format everywhere
    assert upgrade(["run", "-t", "local"]) == ["run", "-t", "local"]
    assert "`sync -t podman:a` is now `sync --node podman:a`" in capsys.readouterr().err


def test_shell_completion_is_clicks_own(tmp_path):
    import os
    import subprocess
    import sys

    def complete(words, cword):
        env = {**os.environ, "_NODEWEAVE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
        return cli_run.run([*cli_run.NODEWEAVE],
                              env=env, cwd=tmp_path, timeout=60).stdout.split()

    assert complete("nodeweave st", 1) == ["status", "stop"]
    assert complete("nodeweave runs ", 2) == ["ls", "show", "compare"]
    assert "--target" in complete("nodeweave up --ta", 2)
    env = {**os.environ, "_NODEWEAVE_COMPLETE": "source_bash"}
    script = cli_run.run([*cli_run.NODEWEAVE],
                            env=env, timeout=60).stdout
    assert "_nodeweave_completion()" in script and "complete " in script


# ---- one way to pick nodes (nodeweave.cli.habits.nodes) ---------------------------------------

from nodeweave.cli.habits.nodes import NODE_HELP  # noqa: E402

# Verbs that act on the whole cluster at once (or build where it pulls from) and pick no nodes.
WHOLE_CLUSTER = {"up", "down", "image build"}
# Verbs that reach nodes without a cluster (addresses KIND:NAME), so take --node without --target.
NODES_WITHOUT_CLUSTER = {"sync", "doctor", "hosts probe"}
# Spellings that picked nodes before --node (hidden, deprecated) and names that would start another way.
OTHER_WAYS = {"--to", "--on", "--via", "--rank", "--node-rank", "--index", "--pod", "--pods", "--targets",
              "--nodes-list", "--node-list", "--only", "--where"}
OTHER_ARGUMENTS = {"index", "node", "nodes", "host", "hosts", "target", "targets", "rank", "pod", "pods"}
# --rank as a training rank (a process of the job, not a node): `logs --rank 3` keeps that rank's lines (issue 44).
TRAINING_RANK = {"logs"}
# --nodes is a count (torchrun's --nnodes), never a selection: these verbs only.
NODE_COUNT = {"run", "init"}


def node_picking_problems(path, command):
    """What makes ``command`` pick nodes other than through ``--node`` (empty: it keeps the rule)."""
    problems = []
    opts = {flag: p for p in command.params for flag in getattr(p, "opts", ())}
    acts_on_nodes = bool({"--target", "--node"} & set(opts)) or path in NODES_WITHOUT_CLUSTER
    for param in command.params:
        visible = not getattr(param, "hidden", False)
        if param.param_type_name == "argument" and visible and param.name in OTHER_ARGUMENTS and acts_on_nodes:
            problems.append(f"{path}: positional {param.name.upper()} picks nodes; use --node")
        for flag in getattr(param, "opts", ()):
            if flag in OTHER_WAYS and visible and not (flag == "--rank" and path in TRAINING_RANK):
                problems.append(f"{path}: {flag} picks nodes another way; use --node (old spellings: hidden)")
            if flag == "--nodes" and (path not in NODE_COUNT or "count" not in (param.help or "").lower()):
                problems.append(f"{path}: --nodes is the node count (run, init) and nothing else; use --node")
    if "--target" in opts and path not in WHOLE_CLUSTER and "--node" not in opts:
        problems.append(f"{path}: acts on a cluster's nodes but takes no --node")
    node = opts.get("--node")
    if node is not None:
        from typing import get_args

        if not node.multiple or get_args(node.type_descriptor.annotation) != (str,) or node.metavar != "NODE":
            problems.append(f"{path}: --node is repeatable text (index, range, name or KIND:NAME), shown as NODE")
        if node.help != NODE_HELP and "every verb's --node" not in (node.help or ""):
            problems.append(f"{path}: --node's help is the shared one (NODE_HELP) or refers to it")
    elif path in NODES_WITHOUT_CLUSTER:
        problems.append(f"{path}: reaches nodes but takes no --node")
    return problems


@pytest.mark.parametrize("path, command", COMMANDS, ids=[p or "nodeweave" for p, _ in COMMANDS])
def test_every_verb_picks_nodes_with_node(path, command):
    assert node_picking_problems(path, command) == []


def test_the_node_rule_fails_a_verb_that_picks_nodes_another_way():
    """The rule above is not vacuous: verbs spelled the old ways fail it."""
    probe = typer.Typer()

    @probe.command("shell")
    def shell(index: int = typer.Argument(0), target: str = typer.Option(None, "--target")):
        """x"""

    @probe.command("sync")
    def sync(to: list[str] = typer.Option([], "--to")):
        """x"""

    @probe.command("status")
    def status(node: list[int] = typer.Option([], "--node"), target: str = typer.Option(None, "--target")):
        """x"""

    group = typer.main.get_command(probe)
    found = {name: node_picking_problems(name, group.commands[name]) for name in ("shell", "sync", "status")}
    assert any("positional INDEX" in p for p in found["shell"]) and any("no --node" in p for p in found["shell"])
    assert any("--to picks nodes another way" in p for p in found["sync"])
    assert any("repeatable text" in p for p in found["status"])


def test_the_verbs_that_pick_nodes_are_the_expected_ones():
    picking = {path for path, command in COMMANDS if any("--node" in getattr(p, "opts", ()) for p in command.params)}
    assert {"status", "logs", "exec", "run", "stop", "shell", "sync", "doctor", "check", "hosts probe"} <= picking


@pytest.mark.parametrize("argv, old, new", [
    (["shell", "1", "--dry-run"], "shell 1", "shell --node 1"),
    (["sync", "src", "/workspace", "--to", "podman:nwold-0", "--dry-run"], "sync --to podman:nwold-0",
     "sync --node podman:nwold-0"),
    (["sync", "src", "/workspace", "-t", "podman:nwold-0", "--dry-run"], "sync -t podman:nwold-0",
     "sync --node podman:nwold-0"),
    (["doctor", "--cluster", "--on", "podman:nwold-0", "--json"], "doctor --on podman:nwold-0",
     "doctor --cluster --node podman:nwold-0"),
    (["hosts", "probe", "--via", "podman", "nwold-0"], "hosts probe --via podman nwold-0",
     "hosts probe --node podman:nwold-0"),
    (["init", "--via", "podman", "--host", "nwold-0", "--out", "new.yaml", "--dry-run"], "init --via podman --host nwold-0",
     "init --host podman:nwold-0"),
])
def test_old_node_spellings_work_with_one_note(tmp_path, monkeypatch, capsys, argv, old, new):
    """Each old way still reaches the same nodes, and says the new spelling once (no engine here: exit 3 or the
    dry run, after the note)."""
    from nodeweave.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no podman: nothing is reached
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "t.py").write_text("print(1)\n")  # an empty SRC is refused first (walk5 W11)
    (tmp_path / "nodeweave.yaml").write_text("name: nwold\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    code = main(argv)
    captured = capsys.readouterr()
    err = captured.err
    notes = [line for line in err.splitlines() if line.startswith("nodeweave: note:")
             and "the real shell would end" not in line]  # shell's dry run, its input no terminal here (walk15 A29)
    assert len(notes) == 1, err
    assert notes[0].startswith(f"nodeweave: note: `{old}` is now `{new}` (") and "next release" in notes[0]
    if argv[0] == "shell":
        assert code == 0
    elif argv[0] == "sync":  # a dry run, as every verb's: exit 0, noting the missing tool the real sync would meet
        assert code == 0 and "the real sync would end with exit 3" in captured.out and "podman" in captured.out
    elif argv[0] == "init":  # its dry run reaches no host, as hosts probe's: the missing tool noted (walk16a A21)
        assert code == 0 and "the real init would end with exit 3" in captured.out and "podman" in captured.out
    elif argv[0] == "hosts":
        assert code == 3 and "podman" in err.splitlines()[-1]  # refused for the tool, as the new spelling is


@pytest.mark.parametrize("given, chosen", [
    (["1"], [1]), (["0,2-3"], [0, 2, 3]), (["3", "1"], [1, 3]), (["node-2"], [2]), (["nwsel-3"], [3]),
    (["podman:nwsel-0"], [0]), ([], [0, 1, 2, 3]),
])
def test_the_node_selector(given, chosen):
    from nodeweave.cli.habits.nodes import pick_nodes
    from nodeweave.cluster.base import Node
    from nodeweave.remote import make_target

    nodes = [Node(i, make_target("podman", f"nwsel-{i}")) for i in range(4)]
    assert [n.index for n in pick_nodes(nodes, given)] == chosen


@pytest.mark.parametrize("given, words", [
    (["4"], "--node 4 is not a node of this cluster (0-3); the nodes: node-0 ("), (["3-1"], "a range runs low to high"),
    (["gpu09"], "--node 'gpu09' names no node of this cluster"),
])
def test_a_bad_node_is_one_line_naming_it(given, words):
    from nodeweave.cli.habits.nodes import pick_nodes
    from nodeweave.cluster.base import Node
    from nodeweave.errors import UsageError
    from nodeweave.remote import make_target

    nodes = [Node(i, make_target("podman", f"nwsel-{i}")) for i in range(4)]
    with pytest.raises(UsageError, match=re.escape(words)):
        pick_nodes(nodes, given)
