"""``nodeweave up``, ``down``, ``status``, ``stop``, ``shell``, ``logs``: the command line over ``nodeweave.cluster``."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import List, Optional

import typer

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import (DRY_RUN, ENGINE, HOST, HOSTS_FILE, JSON, KUBE_CLI, KUBE_CONTEXT, NAMESPACE,
                                       OVERLAY, REMOTE_DIR, SPEC, SSH_OPTION, TARGET, console,
                                       default_mode, open_cluster, options, print_steps, spec_command)
from nodeweave.cli.habits.nodes import NODE, checked_selectors, pick_nodes, pick_one, run_folder_indices
from nodeweave.cli.habits.output import checked, complete_run_ids, emit, output_option
from nodeweave.errors import NodeweaveError, UsageError


def up_command(
    hold: Optional[bool] = typer.Option(None, "--hold/--run", help="Hold: nodes plan and wait for `nodeweave run`; "
                                        "run: they start the spec's job (default: the spec's launcher.mode)"),
    image: Optional[str] = typer.Option(None, "--image", help="compose targets: the image every node runs "
                                        "(NODEWEAVE_IMAGE), e.g. a <variant>-<sha> tag"),
    timeout: float = typer.Option(300, "--timeout", min=1, help="Seconds every node has to come up"),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait until every node is up (live table)"),
    check: bool = typer.Option(False, "--check", help="Then `nodeweave check` the held nodes (exit 5 when it names "
                               "a node or link; the nodes stay up)"),
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE, host: List[str] = HOST,
    hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, dry_run: bool = DRY_RUN, as_json: bool = JSON,
) -> None:
    """Bring the cluster up: compose on this machine, compose over ssh on every host, or apply -k on Kubernetes."""
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.ready import wait_until_up
    from nodeweave.steps import execute_all

    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given, remember=not dry_run, dry_run=dry_run)
    mode = default_mode(spec) if hold is None else ("hold" if hold else "run")
    if check and (mode != "hold" or not wait):
        raise UsageError("up --check needs nodes that hold and a wait for them: add --hold (and leave out --no-wait)")
    out = console(stderr=as_json)
    try:
        done = backend.prepare_up(mode, dry_run)
        phases = backend.up_steps(mode, image)
        nodes = backend.nodes(for_up=True)
        if dry_run:
            print_steps(console(), phases, done, as_json)
            if as_json:
                return
            typer.echo(f"# then wait up to {timeout:.0f} s until {len(nodes)} node(s) "
                       f"{'hold' if mode == 'hold' else 'run'}: " + ", ".join(n.remote.label for n in nodes))
            return
        for line in done:
            out.print(line, highlight=False)
        for phase in phases:
            for step in phase:
                out.print(f"{step.what}: {step.text()}", highlight=False, markup=False, soft_wrap=True)
            execute_all(phase)
        if not wait:
            return
        if not backend.holds:
            mode = "run"  # bare hosts: nothing to start or hold; up means every host answers
        progress = wait_until_up(backend, nodes, mode, timeout, out, spec_command(spec))
    finally:
        backend.close()
    from nodeweave.cluster.status import plan_verdict

    agree, failures = plan_verdict([(n, progress.ready.get(n.index)) for n in nodes])
    what = f"in {mode} mode" if backend.holds else "and answer (bare hosts: nothing held)"
    out.print(f"{len(nodes)} node(s) up {what} on {backend.where()}; {agree}", highlight=False)
    if failures:  # a node that answers but cannot start is no agreement (issue 33): up fails, naming it
        raise NodeweaveError(f"{len(failures)} of {len(nodes)} node(s) cannot start: " + "; ".join(failures)
                             + "; `nodeweave status` shows each plan (fix the spec, then `nodeweave up` again)")
    if as_json:
        typer.echo(json.dumps({"mode": mode, "where": backend.where(), "nodes": [
            {"node": n.name, "reached_as": n.remote.label, "state": progress.state.get(n.index)} for n in nodes]},
            indent=2))
    if check and not dry_run:
        from nodeweave.cli.check import check_first

        check_first(nodes, spec, spec_path, backend, None, out, "the nodes stay up (`nodeweave down` takes them down)")


def down_command(
    delete_claims: bool = typer.Option(False, "--delete-claims", help="kubernetes: also delete the workspace claims "
                                       "(synced code, checkpoints)"),
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE, host: List[str] = HOST,
    hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, dry_run: bool = DRY_RUN,
    as_json: bool = JSON,
) -> None:
    """Take down what `up` made (keeps Kubernetes claims unless --delete-claims)."""
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.options import forget_allocation
    from nodeweave.steps import execute_all

    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given, dry_run=dry_run)
    out = console(stderr=as_json)
    try:
        if backend.target == "hosts" and not backend.down_steps(delete_claims):
            _stop_everywhere(backend, backend.nodes(), 10.0, out, dry_run, as_json)
            return
        done = backend.prepare_down(dry_run)
        phases = backend.down_steps(delete_claims)
        if dry_run:
            print_steps(out, phases, done, as_json)
            return
        for phase in phases:
            for step in phase:
                out.print(f"{step.what}: {step.text()}", highlight=False, markup=False, soft_wrap=True)
            execute_all(phase)
    finally:
        backend.close()
    forget_allocation(spec_path, spec.name)  # the flags stay: `up` alone brings the same cluster back
    out.print(f"{spec.name} is down ({backend.where()})", highlight=False)
    if as_json:
        typer.echo(json.dumps({"job": spec.name, "where": backend.where(), "down": True}, indent=2))


def status_command(
    node: List[str] = NODE,
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE, host: List[str] = HOST,
    hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, as_json: bool = JSON,
    output: str = output_option(),
    fingerprints: bool = typer.Option(False, "--fingerprints", help="Also every node's check-in fingerprint side by "
                                      "side, differences highlighted (node 0's exchange while a job runs, else each "
                                      "node's --explain), as `nodeweave doctor --cluster` shows them"),
    ranks: bool = typer.Option(False, "--ranks", help="Also every rank: its collective, for how long, the verdicts"),
    stacks: bool = typer.Option(False, "--stacks", help="--ranks and every rank's stack, grouped; stops nothing"),
) -> None:
    """One row per node: up, hold or run, rank, plan hash (do all agree?), run in progress, GPU use."""
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.status import agreement, ask_ranks, gather, rank_view, status_table
    from nodeweave.cluster.status import problems as status_problems

    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given)
    nodes = pick_nodes(backend.live_nodes("fingerprint") if fingerprints else backend.nodes(), node)
    rows = gather(backend, nodes, spec_command(spec))
    agree = agreement(rows)
    view = None
    if fingerprints:
        from nodeweave.doctor.cluster import survey_targets  # doctor --cluster's view, asked through the nodes

        view = survey_targets([n for n, r in zip(nodes, rows) if r["up"]])
    watch = ask_ranks([n for n, r in zip(nodes, rows) if r["up"]], stacks) if ranks or stacks else None
    extra = {**({"fingerprints": view.to_dict()} if view is not None else {}), **({"ranks": watch[0]} if watch else {})}
    data = {"where": backend.where(), "plans_agree": agree, "nodes": rows, **extra}
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    elif not emit(data, checked(output)):
        console().print(status_table(backend, rows))
        if view is not None:
            from nodeweave.cli.doctor import print_cluster_view

            print_cluster_view(view, console())
        for line in rank_view(watch):
            console().print(line, highlight=False, markup=False)
    problems = status_problems(rows)
    if rows and not any(r["up"] for r in rows):
        problems = [f"{spec.name} is down on {backend.where()} (no node answers); `nodeweave up` starts it"]
    refusals = sum(f.severity == "error" for f in view.findings) if view is not None else 0
    if refusals:
        problems.append(f"the fingerprints hold {refusals} refusal(s) (see the findings)")
    if problems:
        raise NodeweaveError("; ".join(problems))


def _stop_everywhere(backend, nodes, grace: float, out, dry_run: bool, as_json: bool = False,
                     every_node: bool = True) -> bool:
    from nodeweave.cluster.stop import report_line, stop_argv, stop_runs

    if dry_run:
        argv = stop_argv(nodes, grace)
        if as_json:
            typer.echo(json.dumps({"dry_run": True, "nodes": [{"node": n.name, "reached_as": n.remote.label,
                                                               "argv": line} for n, line in zip(nodes, argv)]}, indent=2))
        else:
            for node, line in zip(nodes, argv):
                typer.echo(f"# {node.name}\n{shlex.join(line)}")
        return True
    reports = stop_runs(backend, nodes, grace, out, every_node)
    if as_json:
        typer.echo(json.dumps([{"node": n.name, **r} for n, r in zip(nodes, reports)], indent=2))
    for node, report in zip(nodes, reports):
        out.print(f"{node.name} ({node.remote.label}): {report_line(report)}", highlight=False, markup=False)
    return not any(r.get("left") for r in reports)


def stop_command(
    grace: float = typer.Option(10, "--grace", min=0, help="Seconds between SIGTERM and SIGKILL"),
    node: List[str] = NODE,
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE, host: List[str] = HOST,
    hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, dry_run: bool = DRY_RUN, as_json: bool = JSON,
) -> None:
    """Stop the current run on every node: SIGTERM to all its processes, SIGKILL after the grace."""
    spec_path = find_spec(spec_path)
    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given, dry_run=dry_run)
    every = backend.live_nodes("stop", dry_run)
    nodes = pick_nodes(every, node)
    if not dry_run:
        backend.require_up(nodes, "stop")
    if not _stop_everywhere(backend, nodes, grace, console(stderr=as_json), dry_run, as_json, len(nodes) == len(every)):
        raise NodeweaveError("a process outlived SIGKILL on some node (see above)")


def shell_command(
    node: List[str] = typer.Option([], "--node", metavar="NODE", help="The node (default: node 0, the master): "
                                   "its index, name or address KIND:NAME, as every verb's --node", callback=checked_selectors),
    index: Optional[str] = typer.Argument(None, hidden=True, help="Deprecated: the node's index (now --node)"),
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE, host: List[str] = HOST,
    hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, dry_run: bool = DRY_RUN,
) -> None:
    """An interactive shell in one node (--node; default node 0)."""
    spec_path = find_spec(spec_path)
    wanted = list(node)
    if index is not None:
        from nodeweave.cli.habits.spellings import note_renamed

        note_renamed(f"shell {index}", f"shell --node {index}")
        wanted.append(index)
    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given, dry_run=dry_run)
    chosen = pick_one(backend.live_nodes("open a shell in", dry_run), wanted, "shell")
    argv = chosen.remote.shell_argv()
    if dry_run:
        typer.echo(shlex.join(argv))
        return
    backend.require_up([chosen], "shell")
    os.execvp(argv[0], argv)


def logs_command(
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing as lines arrive"),
    node: List[str] = NODE,
    container: bool = typer.Option(False, "--container", help="The containers' own logs even when they hold"),
    run: Optional[str] = typer.Option(None, "--run", autocompletion=complete_run_ids, help="This run instead of the latest: its id (`nodeweave runs "
                                      "ls`), a unique prefix, its folder, or last; read here, no cluster asked"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="Where run folders are (default: runs/ beside the spec)"),
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE, host: List[str] = HOST,
    hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION,
) -> None:
    """Every node's output with \\[node-i] prefixes: the containers' logs in run mode, the runs' logs in hold mode."""
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.base import ask_status
    from nodeweave.cluster.logs import container_logs, run_logs
    from nodeweave.cluster.runfolder import RUNS, latest_run

    out = console()
    if run is not None:  # a run folder on this machine: no cluster, no engine needed to read or follow it
        from nodeweave.runs.history import find_run

        entry = find_run(runs_dir or spec_path.resolve().parent / RUNS, run)
        if entry.kind == "sweep" and entry.points:
            entry = entry.points[-1]  # the point running now, or the last one
        out.print(f"# {entry.path}", highlight=False, markup=False)
        raise typer.Exit(run_logs(entry.path, run_folder_indices(entry.path, node), follow, out))
    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given)
    folder = None
    if not container:
        held = not backend.holds
        if not held:
            held = ask_status(backend.live_nodes("read logs of")[0], spec_command(spec)).holding
        if held:
            parent = runs_dir or spec_path.resolve().parent / RUNS
            folder = latest_run(parent, spec.name)
            if folder is None:
                raise UsageError(f"the nodes hold and no run of {spec.name} is in {parent}: "
                                 "`nodeweave run -- SCRIPT` starts one (or --container for the containers' logs)")
    if folder is not None:
        out.print(f"# {folder}", highlight=False, markup=False)
        wanted = [n.index for n in pick_nodes(backend.live_nodes("read logs of"), node)] if node else []
        raise typer.Exit(run_logs(folder, wanted, follow, out))
    nodes = pick_nodes(backend.live_nodes("read logs of"), node)
    backend.require_up(nodes, "logs")
    raise typer.Exit(container_logs(backend, nodes, follow, out))


def register(app: typer.Typer) -> None:
    for name, function in (("up", up_command), ("down", down_command), ("status", status_command),
                           ("stop", stop_command), ("shell", shell_command), ("logs", logs_command)):
        app.command(name)(function)
