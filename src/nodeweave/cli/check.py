"""``nodeweave check``: every node's health and every link's speed, and the one that is slow named.

Also the ``--check`` of ``run`` and ``up`` (:func:`check_cluster`). No torch
here: the worker imports it on the nodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional

import typer

from nodeweave.cli.habits.coercion import percent_option, seconds_option

from nodeweave.cli.habits.clusteropts import (DRY_RUN, JSON, REACH, SPEC, console, open_cluster, reach_options,
                                              say, show_plan)
from nodeweave.cli.habits.nodes import NODE
from nodeweave.cli.habits.output import (complete_from, data_format, emit, is_data, judge_runs_written,
                                         output_option, runs_folder_written, runs_parent, tell)
from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.usertext import styled

if TYPE_CHECKING:
    from nodeweave.cluster.options import ClusterOptions

CHECK_HELP = ("Check every node (facts, CPU/GPU probes, nvidia-smi or amd-smi, the Xid events of its GPUs in the "
              "kernel log where readable, dcgmi where installed) and every link (point-to-point bandwidth in "
              "ceil(log2 N) rounds of disjoint pairs, in turns where pairs would share a machine unequally, through "
              "torch.distributed with the job's backend, then one ring all-reduce) and name what is more than "
              "--threshold below the median of "
              "its peers, with the figure and the likely cause. The nodes should hold (`nodeweave up --hold`). "
              "Report in runs/<time>-<job>-check/. Exit 0: healthy; 1: the check could not run; 2: bad input (named); "
              "3: no engine or the cluster is not up; 5: something named.")


def _nccl_reachable(backend, backend_name: str) -> None:
    """``--backend nccl`` on a job whose nodes run an image variant with no GPU stack (cpu: gloo only) is refused
    before any node is asked, as bench refuses it on a machine without a GPU (walk5 W75); judged on the variant the
    target runs (``Backend.image_variant``: cpu on the local target whatever the spec builds, walk9 A20)."""
    from nodeweave.catalogue import VARIANTS

    variant = backend.image_variant
    row = VARIANTS.get(variant)
    if backend_name == "nccl" and row is not None and row.vendor == "cpu":
        whose = (f"the job's image variant {variant}" if variant == backend.spec.image.variant else
                 f"the {backend.target} target's nodes run image variant {variant} (whatever the spec builds), which")
        fix = ("or a GPU variant (image.variant: cuda12, ...)" if variant == backend.spec.image.variant else
               "or a target whose nodes have GPUs (-t hosts, kubernetes, slurm)")
        raise UsageError(f"--backend nccl: {whose} has no GPU stack (gloo only), and NCCL runs only on GPUs; "
                         f"accepted: gloo or auto, {fix}")


def job_context(spec, spec_path: Path, backend):
    from nodeweave.cluster.job import JobContext
    from nodeweave.spec.loader import read_spec_text

    from nodeweave.specpath import spec_folder

    spec_dir = spec_folder(spec_path)
    host_path = spec.workspace.host_path
    from nodeweave.cluster.onbackend import ran_spec_text

    # the run folder's spec.yaml: the spec the run was started from; up-spec.yaml beside it: what the held nodes were
    # made from, where they miss a field of it (walk15 A17, walk16a A13)
    return JobContext(job=spec.name, spec_text=read_spec_text(spec_path),
                      workspace=spec_dir if host_path.startswith(("/", "~")) else (spec_dir / host_path).resolve(),
                      target=backend.where, made_from=ran_spec_text(backend))


def check_cluster(nodes, spec, spec_path: Path, backend, phase, out, fmt: str = "table"):
    """Run the plan's check phase, print its report, save it; the result (its ``exit_code`` says what to do)."""
    from nodeweave.check.driver import run_check
    from nodeweave.check.report import plain_text, render

    result = run_check(nodes, phase, job_context(spec, spec_path, backend), out)
    if result.document is None:
        out.print(styled(("nodeweave:", "bold"), f" the check did not finish: {result.run.get('summary')}; logs in "
                                                 f"{result.folder}"), highlight=False)
    else:
        out.print(render(result))
        (result.folder / "check.txt").write_text(plain_text(result), encoding="utf-8")
        out.print(styled(("nodeweave:", "bold"), f" report in {result.folder}"), highlight=False)
    emit(result.to_dict(), fmt)
    return result


@reach_options
def check_command(
    threshold: float = percent_option(typer.Option(25.0, "--threshold", help="Percent below the median of its peers at "
                                                   "which a node or link is named")),
    repeats: int = typer.Option(2, "--repeats", help="Extra samples of every figure near the line, before a verdict (1 to 10)"),
    backend_name: str = typer.Option("auto", "--backend", autocompletion=complete_from("auto", "nccl", "gloo"), help="auto (nccl where torch sees a GPU, else gloo) | "
                                     "nccl | gloo"),
    seconds: float = seconds_option(typer.Option(0.25, "--seconds", help="Seconds per direction of a link measurement (less than --timeout)")),
    timeout: float = seconds_option(typer.Option(300.0, "--timeout", help="Seconds a node may wait for the others: the check-in and each collective")),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", callback=runs_folder_written, help="Where the report goes (default: runs/ beside "
                                            "the spec)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the nodes' output as it arrives"),
    node: List[str] = NODE,
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, dry_run: bool = DRY_RUN, as_json: bool = JSON,
    output: str = output_option(),
) -> None:
    from nodeweave.check.driver import CheckOptions
    from nodeweave.check.plan import check_plan
    from nodeweave.cli.habits.base import find_spec
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.onbackend import live_nodes, refuse_busy, require_up

    spec_path = find_spec(spec_path)
    fmt = data_format(as_json, output)
    check_options = CheckOptions(threshold / 100.0, repeats, backend_name, seconds, timeout, verbose)

    spec, backend, _ = open_cluster(spec_path, reach, dry_run=dry_run,
                                    judge=lambda spec: judge_runs_written(spec, spec_path, runs_dir),
                                    judge_backend=lambda backend: _nccl_reachable(backend, backend_name))
    notes = backend.check_folders()  # exit 3 first when the nodes could not write the checkpoint folder
    nodes, shape = live_nodes(backend, "check", dry_run), {}
    if node:  # the first N nodes only: ranks are the nodes' places, as in `run --node`
        from nodeweave.cli.habits.nodes import first_nodes
        from nodeweave.cluster.overrides import run_overrides

        nodes, shape = run_overrides(nodes, nodes=first_nodes(nodes, node, "check", backend))
    plan = check_plan(backend.where, nodes, check_options, shape, runs_parent(runs_dir, spec_path, writes=True),
                      spec.name)
    if not dry_run:
        require_up(backend, nodes, "check")  # before the run folder is made: nothing up is exit 3, said once
        refuse_busy(backend, nodes, "check")  # every node would refuse it (walk10 C1)
    if threshold < 1:  # the worker's own --threshold is a fraction (0.25): copied here it is 100x stricter
        notes.append(f"--threshold {threshold:g} is {threshold:g}%, not {threshold * 100:g}%: it is a percentage "
                     f"(the default 25 names a node 25% below its peers); did you mean --threshold "
                     f"{threshold * 100:g}?")
    for note in notes:  # what the nodes may not write: worth saying only to nodes that are up, or in the plan
        tell(f"note: {note}")
    if dry_run:
        show_plan(plan, fmt, backend, nodes, "check")
        return
    out = console(stderr=is_data(fmt))
    session = CheckSession(lambda: nodes, spec, spec_path, backend, out, fmt=fmt)
    execute(plan, Execution(backend.spec_dir, say(out), out, backend, nodes, checks=session))
    if session.results[0].exit_code:
        raise NodeweaveError(_failure(session.results[0]), exit_code=session.results[0].exit_code)


def default_check(nodes, spec, spec_path: Path, runs_dir: Optional[Path] = None):
    """``run --check`` / ``up --check``: the check with its defaults, as the plan's phase."""
    from nodeweave.check.driver import CheckOptions
    from nodeweave.check.plan import check_phase

    return check_phase(nodes, CheckOptions(), {}, runs_parent(runs_dir, spec_path, writes=True), spec.name)


class CheckSession:
    """What a plan's check phase runs with (``Execution.checks``): the nodes as they are when it runs (``up``'s:
    once the phases before it took them), the report printed and saved. ``then``: a check before a run or after
    ``up`` (``run --check``, ``up --check``): a named node or link stops the verb here, saying what was left;
    None (``nodeweave check``): the results are the verb's to judge."""

    def __init__(self, nodes: Callable[[], list], spec, spec_path: Path, backend, out, then: Optional[str] = None,
                 fmt: str = "table"):
        self.nodes, self.spec, self.spec_path, self.backend, self.out = nodes, spec, spec_path, backend, out
        self.then, self.fmt = then, fmt
        self.results: list = []

    def check(self, phase) -> None:
        result = check_cluster(self.nodes(), self.spec, self.spec_path, self.backend, phase, self.out, self.fmt)
        self.results.append(result)
        if self.then is not None and result.exit_code:
            raise NodeweaveError(f"--check: {_failure(result)}; {self.then}", exit_code=result.exit_code)


def _failure(result) -> str:
    if result.document is None:
        return f"the check did not finish: {result.run.get('summary')}"
    return "; ".join(f"{f.subject}: {f.text}" for f in result.findings)


def register(app: typer.Typer) -> None:
    app.command("check", help=CHECK_HELP)(check_command)
