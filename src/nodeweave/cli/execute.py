"""``nodeweave exec [OPTIONS] -- COMMAND``: a command on every node, output prefixed, exit codes collected."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import List, Optional

import typer

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import (DRY_RUN, ENGINE, HOST, HOSTS_FILE, JSON, KUBE_CLI, KUBE_CONTEXT, NAMESPACE,
                                       OVERLAY, REMOTE_DIR, SPEC, SSH_OPTION, TARGET, console,
                                       open_cluster, options)
from nodeweave.cli.habits.nodes import NODE, pick_nodes
from nodeweave.cli.habits.dashes import CommandAfterDashes
from nodeweave.cli.habits.output import data_format, emit, is_data, output_option
from nodeweave.errors import NodeweaveError, UsageError

EXEC_HELP = ("Run COMMAND on every node at once through its exec channel, without the launcher (as `sky exec` or "
             "pdsh): each line prefixed with \\[node-i], every node's exit code collected. Exit 0: every node 0; "
             "1: a node failed or timed out (all named); 3: the cluster is not up.")


def exec_command(
    command: List[str] = typer.Argument(None, help="COMMAND ARGS after `--`, run as is on every node (no shell: "
                                        "`-- sh -c '...'` for one)"),
    node: List[str] = NODE,
    env: List[str] = typer.Option([], "--env", "-e", help="VAR=VALUE for the command on every node (repeat)"),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=0.1, help="Seconds before the command is "
                                            "killed on the nodes still running it (default: no limit)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the summary (and --json), not the nodes' output"),
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE,
    host: List[str] = HOST, hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, dry_run: bool = DRY_RUN, as_json: bool = JSON,
    output: str = output_option(),
) -> None:
    from nodeweave.cluster.sweep import parse_assignment

    fmt = data_format(as_json, output)

    if not command:
        raise UsageError("no command: give it after `--`, e.g. nodeweave exec -- nvidia-smi -L")
    variables = dict(parse_assignment(text, "--env") for text in env)
    spec_path = find_spec(spec_path)
    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given, dry_run=dry_run)
    nodes = pick_nodes(backend.live_nodes("exec", dry_run), node)
    if dry_run:
        argv = [(n, n.argv(list(command), variables)) for n in nodes]
        if is_data(fmt):
            emit({"dry_run": True, "nodes": [{"node": n.name, "reached_as": n.remote.label, "argv": a}
                                             for n, a in argv]}, fmt)
            return
        for n, a in argv:
            typer.echo(f"# {n.name} ({n.remote.label})\n{shlex.join(a)}")
        return
    backend.require_up(nodes, "exec")
    _run(nodes, list(command), variables, timeout, quiet, fmt)


def _run(nodes, command, variables, timeout, quiet: bool, fmt: str) -> None:
    from nodeweave.cluster.logs import exec_everywhere, summary

    out = console(stderr=is_data(fmt))
    results = exec_everywhere(nodes, command, None if quiet else out, variables, timeout)
    line = summary(results)
    if is_data(fmt):
        emit({"command": command, "nodes": [r.to_dict() for r in results]}, fmt)
    if any(r.exit_code != 0 for r in results):
        raise NodeweaveError(line)
    out.print(f"[bold]nodeweave:[/] {line}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("exec", help=EXEC_HELP, cls=CommandAfterDashes)(exec_command)
