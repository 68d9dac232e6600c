"""``nodeweave exec [OPTIONS] -- COMMAND``: a command on every node, output prefixed, exit codes collected."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.cli.habits.coercion import seconds_option

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import (DRY_RUN, JSON, REACH, SPEC, console, open_cluster, reach_options,
                                              say, show_plan)
from nodeweave.cli.habits.nodes import NODE, pick_nodes
from nodeweave.cli.habits.dashes import CommandAfterDashes
from nodeweave.cli.habits.output import data_format, emit, is_data, output_option, tell
from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.usertext import styled

if TYPE_CHECKING:
    from nodeweave.cluster.options import ClusterOptions

EXEC_HELP = ("Run COMMAND on every node at once through its exec channel, without the launcher (as `sky exec` or "
             "pdsh): each line prefixed with \\[node-i], every node's exit code collected. At --timeout or Ctrl-C "
             "(SIGTERM, SIGHUP, a closed stdout too) the command is ended on every node still running it (SIGTERM, "
             "SIGKILL 5 s later). Exit 0: every node "
             "ended 0; else the command's own code when every node ended with the same one (one node: its code, as "
             "ssh or `docker exec` passes it on); 1: nodes that failed with different codes (all named); 124: --timeout cut a "
             "node; 130: Ctrl-C; 2: bad input (named; input waiting on standard input too, which no node's command "
             "reads: `nodeweave sync` a file first, or </dev/null); 3: no engine or the cluster is not up (a command's own 2, "
             "3, 124 or 130 on every node comes back as such too: the last line says which).")


@reach_options
def exec_command(
    command: List[str] = typer.Argument(None, help="COMMAND ARGS after `--`, run as is on every node, in the "
                                        "workspace's root (no shell: `-- sh -c '...'` for one; a path typed in a "
                                        "subfolder is noted with its path from the root)"),
    node: List[str] = NODE,
    env: List[str] = typer.Option([], "--env", "-e", help="VAR=VALUE for the command on every node (repeat); VAR "
                                  "alone: this shell's value of VAR (unset or empty is refused), shown as $VAR in "
                                  "the plan, as a secret-looking name's value is shown as ***"),
    timeout: Optional[float] = seconds_option(typer.Option(None, "--timeout", min=0.1, help="Seconds before "
                                              "the command is ended on every node still running it (SIGTERM to it "
                                              "and its children, SIGKILL 5 s later; exit 124; default: no limit), "
                                              "as Ctrl-C ends it (exit 130); the line names those nodes")),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the summary (and --json), not the nodes' output"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, dry_run: bool = DRY_RUN, as_json: bool = JSON,
    output: str = output_option(),
) -> None:
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.sweep import assignment_notes, hidden_notes, parse_env
    from nodeweave.cluster.verbs import exec_plan
    from nodeweave.cluster.onbackend import live_nodes, require_up

    fmt = data_format(as_json, output)

    if not command:
        raise UsageError("no command: give it after `--`, e.g. nodeweave exec -- nvidia-smi -L")
    if command[0].startswith("-") and command[0] != "-":  # `exec -- -c true`: sh's option, never a program
        typed = " ".join(command)
        shells = not command[0].startswith("--")  # -c, -lc: a shell's; --x: a program's, which one is not known
        raise UsageError(f"the command {typed!r} starts with {command[0]!r}, an option, not a program: every node "
                         f"would answer `exec: {command[0]}: not found` (exit 127); accepted: a program first, "
                         + (f"`{exec_line(node, command)}` for a shell's {command[0]}" if shells else
                            f"`{exec_line(node, ['PROGRAM', *command])}`"))
    variables, hidden = parse_env(env, "--env")
    from nodeweave.cluster.execute import exec_input_problem

    dropped = exec_input_problem()  # refused as the command line is read, a dry run too (walk15 A29)
    if dropped:
        raise UsageError(dropped)
    spec_path = find_spec(spec_path)
    spec, backend, _ = open_cluster(spec_path, reach, dry_run=dry_run)
    nodes = pick_nodes(live_nodes(backend, "exec", dry_run), node, backend, "exec")
    plan = exec_plan(backend, nodes, list(command), variables, timeout)
    moved = typed_here(spec, spec_path, list(command))
    noted = [f"note: {note}" for note in assignment_notes([], variables, runs=False) + hidden_notes(variables, nodes)
             + script_notes(command, moved) + moved_notes(_root(spec, nodes), node, list(command), moved)]
    if dry_run:
        from dataclasses import replace

        plan = replace(plan, notes=(*plan.notes, *noted))
        show_plan(plan, fmt, backend, nodes, "exec")
        return
    require_up(backend, nodes, "exec")
    for line in noted:
        tell(line)
    out = console(stderr=is_data(fmt))
    done = execute(plan, Execution(backend.spec_dir, say(out), out, backend, nodes, quiet=quiet, hidden=hidden))
    _report(list(plan.phases[0].command), done.outcomes["exec"][0], fmt, out)


def exec_line(node: List[str], words: List[str]) -> str:
    """The ``nodeweave exec`` line that runs ``words`` on the nodes ``node`` picks, as one can paste it: each word
    quoted as the shell needs, and ``sh`` before words that start with a short option (``-c true`` is sh's habit,
    and a program is never named ``-c``: walk12 C6). The one line every verb's hint to exec gives."""
    import shlex

    shells = words and words[0].startswith("-") and not words[0].startswith("--") and words[0] != "-"
    run = (["sh"] if shells else []) + list(words)
    picked = f" --node {','.join(node)}" if node else ""
    return f"nodeweave exec{picked} -- " + " ".join(shlex.quote(word) for word in run)


def typed_here(spec, spec_path: Path, command: List[str]) -> "dict[str, str]":
    """{word: its path from the workspace's root} for each word of ``command`` that names a file as the shell
    reads it here, from a subfolder of the workspace (``cd sub/a; exec -- python hi.py``): the command runs as
    given in the root, where every node starts, so there the word names another file or none (walk13a A12).
    ``run.from_root`` is the one reading, as run's script is given from the root."""
    from nodeweave.cli.run import from_root

    found = {}
    for word in command:
        inside = from_root(spec, spec_path, word)
        if inside:
            found[word] = inside
    return found


def _root(spec, nodes) -> str:
    """Where the nodes start: a bare host's or a Slurm step's folder (``Node.workdir``), else workspace.path."""
    return next((n.workdir for n in nodes if getattr(n, "workdir", None)), None) or spec.workspace.path


def moved_notes(root: str, node: List[str], command: List[str], moved: "dict[str, str]") -> List[str]:
    """The note for :func:`typed_here`'s words: where the command runs, what each word is there, the line to type."""
    import os

    moved = {word: inside for word, inside in moved.items()  # a bare program is looked up on PATH (script_notes)
             if not (command and word == command[0] and "/" not in word)}
    if not moved:
        return []

    named = ", ".join(f"{word} is {inside}" for word, inside in moved.items())
    fixed = [moved.get(word, word) for word in command]
    return [f"the command runs as given in the workspace's root ({root}), where every node starts, "
            f"not where you typed it ({os.getcwd()}): from there {named}; `{exec_line(node, fixed)}` names "
            f"{'it' if len(moved) == 1 else 'them'} from the root"]


def script_notes(command: List[str], moved: "dict[str, str] | None" = None) -> List[str]:
    """A script named bare (``exec -- train.py``) is looked up on the node's PATH, never in the workspace: the
    exec fails with "executable file not found" on every node (replay10 R6). Say which verb the user meant, with
    the script's path from the workspace's root, where exec's command runs (``moved``: ``typed_here``'s)."""
    first = command[0]
    if "/" in first or not first.endswith((".py", ".sh")):
        return []
    rooted = (moved or {}).get(first, first)
    if first.endswith(".sh"):
        return [f"{first} is looked up as a program on the node's PATH, where no script of the workspace is: "
                f"`nodeweave exec -- bash {rooted}` runs it once per node"]
    return [f"{first} is looked up as a program on the node's PATH, where no script of the workspace is: "
            f"`nodeweave run -- {first}` starts it under the launcher on every rank; "
            f"`nodeweave exec -- python {rooted}` runs it once per node"]


def _report(command: List[str], results, fmt: str, out) -> None:
    """Every node's result (-o json|yaml: as data), then the summary; exit 124 when the timeout cut a node (its
    command ended there), else, when a node failed, the command's own code where every node ended with the same one
    (``logs.common_exit``: a script can tell grep's 1 from its 2 on one node or all, walk14a A6), 1 where they
    differ."""
    from nodeweave.cluster.logs import summary

    line = summary(results, command)
    emit({"command": command, "nodes": [r.to_dict() for r in results]}, fmt)
    if any(r.exit_code is None for r in results):  # the limit cut it: timeout(1)'s exit (walk10 C4)
        from nodeweave.errors import EXIT_TIMED_OUT

        raise NodeweaveError(line, EXIT_TIMED_OUT)
    if any(r.exit_code != 0 for r in results):
        from nodeweave.cluster.logs import common_exit

        raise NodeweaveError(line, common_exit([r.exit_code for r in results]))
    out.print(styled(("nodeweave:", "bold"), f" {line}"), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("exec", help=EXEC_HELP, cls=CommandAfterDashes)(exec_command)
