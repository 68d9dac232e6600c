"""``nodeweave run [--sweep VAR=a,b] [--profile nsys|rocprofv3] -- SCRIPT ARGS``: the command line over the run engine."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import List, Optional

import typer

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import (DRY_RUN, ENGINE, HOST, HOSTS_FILE, JSON, KUBE_CLI, KUBE_CONTEXT, NAMESPACE,
                                       OVERLAY, REMOTE_DIR, SPEC, SSH_OPTION, TARGET, console, open_cluster,
                                       options, spec_command)
from nodeweave.cli.habits.dashes import CommandAfterDashes, launcher_command
from nodeweave.cli.habits.nodes import NODE
from nodeweave.cli.habits.output import complete_from
from nodeweave.cli.habits.detach import announce
from nodeweave.errors import NodeweaveError, UsageError

LAUNCHER_CHOICES = complete_from("torchrun", "deepspeed", "accelerate", "command")

RUN_HELP = ("Start COMMAND (default: the spec's script and args) on every node at once, through each node's "
            "entrypoint, and see it through: output with \\[node-i] prefixes; runs/<UTC time>-<job>/ with logs, plans, "
            "exit codes, commit and sync digest; the first node to fail stops the others; Ctrl-C stops every node. "
            "The nodes should hold (`nodeweave up --hold`). Exit 0: every node 0; 1: a node failed (named); "
            "130: interrupted.")


def run_command(
    command: List[str] = typer.Argument(None, help="SCRIPT ARGS after `--` (every option before `--` is nodeweave's); "
                                        "default: the spec's launcher.script and args"),
    sweep: List[str] = typer.Option([], "--sweep", help="VAR=a,b,...: one full run per value (repeat: every combination)"),
    metric: Optional[str] = typer.Option(None, "--metric", help="REGEX whose first group is read from each node's log "
                                         "and compared across the sweep, e.g. 'samples/s ([0-9.]+)'"),
    lower_is_better: bool = typer.Option(False, "--lower-is-better", help="The sweep's best point has the lowest metric"),
    env: List[str] = typer.Option([], "--env", "-e", help="VAR=VALUE for every node's run (repeat)"),
    profile: Optional[str] = typer.Option(None, "--profile", autocompletion=complete_from("nsys", "rocprofv3"), help="nsys or rocprofv3: every rank under the profiler, "
                                          "its files collected into the run folder"),
    nproc_per_node: Optional[str] = typer.Option(None, "--nproc-per-node", help="Processes per node for this run "
                                                 "(a number, or auto); a node refuses more than its usable GPUs"),
    nodes_wanted: Optional[int] = typer.Option(None, "--nodes", help="The node count: run on the first N nodes only "
                                               "(node 0 the master), as torchrun's --nnodes"),
    node: List[str] = NODE,
    launcher: Optional[str] = typer.Option(None, "--launcher", autocompletion=LAUNCHER_CHOICES, help="torchrun, deepspeed, accelerate or command, "
                                           "for this run instead of the spec's launcher.type"),
    profile_options: Optional[str] = typer.Option(None, "--profile-options", help="The profiler's own options, "
                                                  "shell-quoted, instead of nodeweave's, e.g. '-i counters.yaml' "
                                                  "(rocprofv3) or '--trace=cuda,nvtx --stats=true' (nsys)"),
    grace: float = typer.Option(10, "--grace", min=0, help="Seconds between SIGTERM and SIGKILL when stopping nodes"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="Where run folders go (default: runs/ beside the spec)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not show the nodes' output (it still goes to the run folder)"),
    check: bool = typer.Option(False, "--check", help="`nodeweave check` first (its defaults); start nothing when it "
                               "names a node or link (exit 5)"),
    detach: bool = typer.Option(False, "--detach", "-d", help="Start the run in the background and return once its "
                                "folder exists, printing its id: `nodeweave logs -f --run ID` follows (attaches "
                                "to) it, `nodeweave stop` ends it"),
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE, host: List[str] = HOST,
    hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, dry_run: bool = DRY_RUN, as_json: bool = JSON,
) -> None:
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.runfolder import RUNS
    from nodeweave.cluster.sweep import compile_metric, parse_assignment, parse_sweeps, sweep_points

    if profile not in (None, "nsys", "rocprofv3"):
        raise UsageError(f"--profile {profile!r} is not accepted: nsys or rocprofv3")
    if profile_options is not None and profile is None:
        raise UsageError("--profile-options needs --profile nsys or rocprofv3")
    points = sweep_points(parse_sweeps(sweep)) if sweep else [{}]
    pattern = compile_metric(metric)
    extra = dict(parse_assignment(text, "--env") for text in env)
    if profile_options is not None:  # the entrypoint's own variable, in front of it as every -e is
        extra = {"NODEWEAVE_PROFILE_OPTIONS": profile_options, **extra}
    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given, dry_run=dry_run)
    command = launcher_command(command, launcher or spec.launcher.type) if command else spec_command(spec)
    from nodeweave.cluster.overrides import run_overrides

    everyone = backend.live_nodes("run", dry_run)
    nodes_wanted = _node_count(everyone, node, nodes_wanted)
    nodes, shape = run_overrides(everyone, nproc_per_node, nodes_wanted, launcher)
    extra = {**shape, **extra}
    parent = runs_dir or spec_path.resolve().parent / RUNS
    if dry_run:
        _dry_run(nodes, command, points, extra, profile, parent, spec.name, as_json)
        return
    from nodeweave.cluster.job import JobContext

    backend.require_up(nodes, "run")
    if detach:
        from nodeweave.cli.habits.detach import detach_run

        detach_run(parent, as_json)
        return
    spec_dir = spec_path.resolve().parent
    host_path = spec.workspace.host_path  # absolute: a path on the hosts, not here
    context = JobContext(job=spec.name, spec_text=spec_path.read_text(encoding="utf-8"),
                         workspace=spec_dir if host_path.startswith(("/", "~")) else (spec_dir / host_path).resolve(),
                         target=backend.where(), recovery=spec.recovery.enabled)
    out = console(stderr=as_json)
    if check:
        from nodeweave.cli.check import check_first

        check_first(nodes, spec, spec_path, backend, runs_dir, out, "nothing was started")
    if not sweep:
        data = _one_run(nodes, command, extra, profile, grace, parent, context, out, quiet)
        _finish(data, as_json, out)
        return
    _sweep(nodes, command, points, extra, profile, grace, parent, context, out, quiet, pattern, metric,
           lower_is_better, as_json)


def _node_count(nodes, node: List[str], count: Optional[int]) -> Optional[int]:
    """--nodes N, or the N of --node 0-(N-1): a run's ranks are the nodes' places, so only a prefix can run."""
    if not node:
        return count
    from nodeweave.cli.habits.nodes import first_nodes

    picked = first_nodes(nodes, node, "run")
    if count is not None and count != picked:
        raise UsageError(f"--nodes {count} and --node {','.join(node)} ({picked} node(s)) disagree; give one")
    return picked if picked < len(nodes) else count


def _one_run(nodes, command, env, profile, grace, parent, context, out, quiet, suffix=""):
    from nodeweave.cluster.job import run_job
    from nodeweave.cluster.runfolder import RunFolder
    from nodeweave.cluster.runner import RunRequest

    folder = RunFolder.create(parent, context.job, context.spec_text, suffix)
    if not suffix:
        announce(folder.path)
    out.print(f"[bold]nodeweave:[/] run {folder.run_id} on {len(nodes)} node(s) ({context.target}): "
              f"{shlex.join(command)}" + (f" with {' '.join(f'{k}={v}' for k, v in env.items())}" if env else ""),
              highlight=False)
    request = RunRequest(run_id=folder.run_id, command=command, env=env, profile=profile, grace=grace,
                         recovery=context.recovery)
    data = run_job(nodes, request, folder, context, out, quiet=quiet)
    recovered = (data.get("recovery") or {}).get("restarts")
    if recovered and data.get("exit_code") == 0:
        data["summary"] += f"; recovered {recovered} time(s) (runs/{folder.run_id}/recovery.json)"
    data["folder"] = str(folder.path)
    return data


def _finish(data: dict, as_json: bool, out) -> None:
    out.print(f"[bold]nodeweave:[/] {data['summary']}; run folder {data['folder']}", highlight=False)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    if data["exit_code"] == 130:
        raise typer.Exit(130)
    if data["exit_code"] != 0:
        raise NodeweaveError(data["summary"])


def _sweep(nodes, command, points, extra, profile, grace, parent, context, out, quiet, pattern, metric,
           lower_is_better, as_json) -> None:
    from nodeweave.cluster.runfolder import RunFolder
    from nodeweave.cluster.sweep import point_label, point_metric, sweep_table

    sweep_folder = RunFolder.create(parent, context.job, context.spec_text, suffix="-sweep")
    announce(sweep_folder.path)
    rows = []
    for number, point in enumerate(points, start=1):
        data = _one_run(nodes, command, {**extra, **point}, profile, grace, sweep_folder.path, context, out, quiet,
                        suffix=f"-{number:02d}-{point_label(point, context.job)}")
        value, per_node = point_metric(pattern, Path(data["folder"]), len(nodes)) if pattern else (None, [])
        rows.append({"point": point, "exit_code": data["exit_code"], "seconds": data.get("seconds", 0.0),
                     "metric": value, "per_node": per_node, "folder": Path(data["folder"]).name})
        sweep_folder.write_json("sweep.json", {"metric": metric, "command": command, "points": rows})
        if data["exit_code"] == 130:
            break
    table = sweep_table(rows, metric, lower_is_better)
    out.print(table)
    (sweep_folder.path / "sweep.txt").write_text(_plain(table), encoding="utf-8")
    out.print(f"[bold]nodeweave:[/] sweep folder {sweep_folder.path}", highlight=False)
    if as_json:
        typer.echo(json.dumps({"folder": str(sweep_folder.path), "metric": metric, "points": rows}, indent=2))
    if any(r["exit_code"] == 130 for r in rows):
        raise typer.Exit(130)
    failed = [r for r in rows if r["exit_code"] != 0]
    if failed:
        raise NodeweaveError(f"{len(failed)} of {len(rows)} sweep point(s) failed: "
                             + "; ".join(",".join(f"{k}={v}" for k, v in r["point"].items()) for r in failed))


def _plain(table) -> str:
    import io

    from rich.console import Console

    text = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    text.print(table)
    return text.export_text()


def _dry_run(nodes, command, points, extra, profile, parent, job, as_json: bool = False) -> None:
    """Every node's exec per point, and the folder each point's run would get (a sweep nests them)."""
    from nodeweave.cluster.runner import RunRequest
    from nodeweave.cluster.sweep import point_label

    plan = []
    for number, point in enumerate(points, start=1):
        folder = (f"{parent}/<UTC time>-{job}-sweep/<UTC time>-{job}-{number:02d}-{point_label(point, job)}/" if point
                  else f"{parent}/<UTC time>-{job}/")
        request = RunRequest(run_id="RUN_ID", command=command, env={**extra, **point}, profile=profile)
        group = nodes[0].group if nodes else None  # one launch for every node (a Slurm step)
        plan.append({"point": point, "folder": folder, "nodes": [
            {"node": n.name, "reached_as": n.remote.label,
             "argv": n.entrypoint_argv(request.entrypoint_args(), request.env)} for n in nodes],
            **({"every_node_at_once": group.argv(request)} if group is not None else {})})
    if as_json:
        typer.echo(json.dumps({"dry_run": True, "command": command, "runs": plan}, indent=2))
        return
    for number, run in enumerate(plan, start=1):
        label = f"point {number} of {len(points)}: {run['point']}" if run["point"] else "one run"
        typer.echo(f"# {label}; the run folder would be {run['folder']}")
        if "every_node_at_once" in run:
            typer.echo(f"# every node at once ({', '.join(n['reached_as'] for n in run['nodes'])})")
            typer.echo(shlex.join(run["every_node_at_once"]))
            continue
        for node in run["nodes"]:
            typer.echo(f"# {node['node']} ({node['reached_as']})")
            typer.echo(shlex.join(node["argv"]))


def register(app: typer.Typer) -> None:
    app.command("run", help=RUN_HELP, cls=CommandAfterDashes)(run_command)
