"""``nodeweave check``: every node's health and every link's speed, and the one that is slow named.

Also the ``--check`` of ``run`` and ``up`` (:func:`check_cluster`). No torch
here: the worker imports it on the nodes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from nodeweave.cli.habits.clusteropts import (DRY_RUN, ENGINE, HOST, HOSTS_FILE, JSON, KUBE_CLI, KUBE_CONTEXT, NAMESPACE,
                                       OVERLAY, REMOTE_DIR, SPEC, SSH_OPTION, TARGET, console,
                                       open_cluster, options)
from nodeweave.cli.habits.nodes import NODE
from nodeweave.errors import NodeweaveError

CHECK_HELP = ("Check every node (facts, CPU/GPU probes, nvidia-smi or amd-smi, the Xid events of its GPUs in the "
              "kernel log where readable, dcgmi where installed) and every link (point-to-point bandwidth in "
              "ceil(log2 N) rounds of disjoint pairs, in turns where pairs would share a machine unequally, through "
              "torch.distributed with the job's backend, then one ring all-reduce) and name what is more than "
              "--threshold below the median of "
              "its peers, with the figure and the likely cause. The nodes should hold (`nodeweave up --hold`). "
              "Report in runs/<time>-<job>-check/. Exit 0: healthy; 5: something named; 1: the check could not run.")


def job_context(spec, spec_path: Path, backend):
    from nodeweave.cluster.job import JobContext

    spec_dir = spec_path.resolve().parent
    host_path = spec.workspace.host_path
    return JobContext(job=spec.name, spec_text=spec_path.read_text(encoding="utf-8"),
                      workspace=spec_dir if host_path.startswith(("/", "~")) else (spec_dir / host_path).resolve(),
                      target=backend.where())


def check_cluster(nodes, spec, spec_path: Path, backend, check_options, runs_dir: Optional[Path], out,
                  as_json: bool = False, env: Optional[dict] = None):
    """Run the check, print its report, save it; the result (its ``exit_code`` says what to do)."""
    from nodeweave.check.driver import run_check
    from nodeweave.check.report import plain_text, render
    from nodeweave.cluster.runfolder import RUNS

    parent = runs_dir or spec_path.resolve().parent / RUNS
    result = run_check(nodes, check_options, parent, job_context(spec, spec_path, backend), out, env)
    if result.document is None:
        out.print(f"[bold]nodeweave:[/] the check did not finish: {result.run.get('summary')}; logs in "
                  f"{result.folder}", highlight=False)
    else:
        out.print(render(result))
        (result.folder / "check.txt").write_text(plain_text(result), encoding="utf-8")
        out.print(f"[bold]nodeweave:[/] report in {result.folder}", highlight=False)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    return result


def check_command(
    threshold: float = typer.Option(25.0, "--threshold", help="Percent below the median of its peers at which a "
                                    "node or link is named"),
    repeats: int = typer.Option(2, "--repeats", help="Extra samples of every figure near the line, before a verdict"),
    backend_name: str = typer.Option("auto", "--backend", help="auto (nccl where torch sees a GPU, else gloo) | "
                                     "nccl | gloo"),
    seconds: float = typer.Option(0.25, "--seconds", help="Seconds per direction of a link measurement"),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds a node may wait for the others: the check-in and each collective"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="Where the report goes (default: runs/ beside "
                                            "the spec)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the nodes' output as it arrives"),
    node: List[str] = NODE,
    spec_path: Optional[Path] = SPEC, target: Optional[str] = TARGET, engine: Optional[str] = ENGINE,
    host: List[str] = HOST, hosts_file: Optional[Path] = HOSTS_FILE, remote_dir: Optional[str] = REMOTE_DIR,
    namespace: Optional[str] = NAMESPACE, kube_cli: Optional[str] = KUBE_CLI, kube_context: Optional[str] = KUBE_CONTEXT,
    overlay: Optional[str] = OVERLAY, ssh_option: List[str] = SSH_OPTION, dry_run: bool = DRY_RUN, as_json: bool = JSON,
) -> None:
    from nodeweave.check.driver import CheckOptions
    from nodeweave.cli.habits.base import find_spec

    spec_path = find_spec(spec_path)

    check_options = CheckOptions(threshold / 100.0, repeats, backend_name, seconds, timeout, verbose)
    given = options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option)
    spec, backend, _ = open_cluster(spec_path, given, dry_run=dry_run)
    nodes, shape = backend.live_nodes("check", dry_run), {}
    if node:  # the first N nodes only: ranks are the nodes' places, as in `run --node`
        from nodeweave.cli.habits.nodes import first_nodes
        from nodeweave.cluster.overrides import run_overrides

        nodes, shape = run_overrides(nodes, nodes=first_nodes(nodes, node, "check"))
    if dry_run:
        _dry_run(nodes, check_options, shape)
        return
    result = check_cluster(nodes, spec, spec_path, backend, check_options, runs_dir, console(stderr=as_json), as_json,
                           shape)
    if result.exit_code:
        raise NodeweaveError(_failure(result), exit_code=result.exit_code)


def check_first(nodes, spec, spec_path: Path, backend, runs_dir: Optional[Path], out, then: str) -> None:
    """``run --check`` / ``up --check``: the check with its defaults; a named node or link stops here."""
    from nodeweave.check.driver import CheckOptions

    result = check_cluster(nodes, spec, spec_path, backend, CheckOptions(), runs_dir, out)
    if result.exit_code:
        raise NodeweaveError(f"--check: {_failure(result)}; {then}", exit_code=result.exit_code)


def _failure(result) -> str:
    if result.document is None:
        return f"the check did not finish: {result.run.get('summary')}"
    return "; ".join(f"{f.subject}: {f.text}" for f in result.findings)


def _dry_run(nodes, check_options, env) -> None:
    import shlex

    from nodeweave.check.driver import CheckRequest

    request = CheckRequest(run_id="RUN_ID", command=check_options.worker_command(), flags=check_options.entrypoint_flags())
    for node in nodes:
        typer.echo(f"# {node.name} ({node.remote.label})")
        typer.echo(shlex.join(node.entrypoint_argv(request.entrypoint_args(), env)))


def register(app: typer.Typer) -> None:
    app.command("check", help=CHECK_HELP)(check_command)
