"""``nodeweave bench``: collective bandwidth through the training launch path.

No torch import here: the worker imports it in its own processes, started
by the entrypoint exactly as training is.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import List, Optional

import typer

from nodeweave.cli.habits.coercion import seconds_option

from nodeweave.cli.habits.output import complete_comma_list, complete_from, data_format, emit, option_named, output_file, output_option, tell
from nodeweave.cli.habits.replace import may_replace, refuse_foreign_file
from nodeweave.errors import EXIT_FAILURE, EnvironmentProblem, UsageError
from nodeweave.quantities import plain_number
from nodeweave.usertext import styled


# Under runs/, where nodeweave keeps what runs leave (ignored by git in nodeweave's own folder; docs/cluster.md),
# not loose in whatever folder the command ran from.
# In runs/ beside the nearest spec, as every verb's runs (walk9 A11), one file per bench as run keeps one folder per
# run: a second bench never replaces the first's numbers (a baseline; walk10 A27). The plot beside it shares its stem.
DEFAULT_JSON_NAME = "<UTC time>-bench.json"


def default_json_path(parent: Path) -> Path:
    """``parent/<UTC time>-bench.json``, ``-2``, ``-3``... where a bench of that second (or its plot) is there."""
    from nodeweave.cluster.runfolder import utc_stamp

    stamp = utc_stamp()
    for n in range(1, 1000):
        stem = f"{stamp}-bench" if n == 1 else f"{stamp}-bench-{n}"
        path = parent / f"{stem}.json"
        if not any(os.path.lexists(path.with_suffix(suffix)) for suffix in (".json", ".png")):
            return path
    raise UsageError(f"{parent}: a thousand bench results of {stamp} are there already; give --json-out PATH")


def bench(
    ctx: typer.Context,
    sizes: Optional[str] = typer.Option(None, "--sizes", help="MIN:MAX[:FACTOR] or a comma list, units K/M/G "
                                        "(powers of 1024, as nccl-tests: 1M is 1 MiB; MB is refused) (default 1K:1G on GPUs, 1K:64M on CPU)"),
    ops: str = typer.Option("all_reduce,all_gather,reduce_scatter", "--ops",
                            autocompletion=complete_comma_list("all_reduce", "all_gather", "reduce_scatter", alone=("all",)),
                            help="comma list of all_reduce, all_gather, reduce_scatter; the first ranks a sweep"),
    iters: int = typer.Option(20, "--iters", min=1, help="timed iterations per size"),
    warmup: int = typer.Option(5, "--warmup", min=0, help="untimed iterations per size"),
    nproc: str = typer.Option("auto", "--nproc", help="processes on this node, 1 to 1024 (auto: one per GPU, 2 on CPU; on CPU "
                       "no more than this machine holds)"),
    backend: str = typer.Option("auto", "--backend", autocompletion=complete_from("auto", "nccl", "gloo"), help="auto | nccl | gloo (auto: nccl where torch sees a GPU)"),
    dtype: str = typer.Option("float32", "--dtype", autocompletion=complete_from("float32", "bfloat16", "float16"), help="float32 | bfloat16 | float16 (fp32, bf16, fp16 too)"),
    sweep: List[str] = typer.Option([], "--sweep", help="VAR=a,b,c; repeatable; each point of the matrix is a "
                                    "fresh launch with those variables, ranked against a baseline launch"),
    max_points: Optional[int] = typer.Option(None, "--max-points", min=1, help="The most points a --sweep may have "
                                             "(the product of its value counts; default 256): more is refused "
                                             "before anything starts"),
    as_json: bool = typer.Option(False, "--json", help="print every number as JSON on stdout (tables go to stderr)"),
    output: str = output_option(),
    json_path: Optional[Path] = typer.Option(None, "--json-out", callback=output_file, show_default=False,
                                   help=f"where to write every number, a .json file (default: runs/{DEFAULT_JSON_NAME} "
                                   "beside the nearest nodeweave.yaml, as every verb's runs; else here, but never a runs/ made in / or a system folder; one file per bench, "
                                   "so an earlier result is kept) (long form "
                                   "only: -o selects the output format); by default nothing is written when no "
                                   "launch measured anything; with --json-out, that file then holds the failed "
                                   "launches' exit codes and output"),
    plot: Optional[Path] = typer.Option(None, "--plot", callback=output_file, help="PNG (or .svg) of busbw against size (needs matplotlib; "
                                        "default: beside --json-out when matplotlib is importable)"),
    timeout: float = seconds_option(typer.Option(1800.0, "--timeout", help="seconds one launch may take")),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="stream the launches' output"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the launches (baseline and each sweep point) and "
                                 "the files they write; start nothing"),
    force: bool = typer.Option(False, "--force", help="replace an earlier bench result at --json-out (or chart at "
                               "--plot); without it an existing one is refused, never lost"),
) -> None:
    """Measure all_reduce, all_gather and reduce_scatter bandwidth (nccl-tests formulas) and check every result."""
    from nodeweave.usertext import console as people_console

    from nodeweave.bench import options, report, runner
    from nodeweave.cluster.sweep import assignment_notes, parse_sweeps, sweep_points

    output = data_format(as_json, output)
    data_out = output in ("json", "yaml")
    if backend not in options.BACKENDS:
        raise UsageError(f"--backend: {backend!r} is not a backend; expected one of {', '.join(options.BACKENDS)}")
    dtype = options.DTYPE_NAMES.get(dtype, dtype)  # fp16, bf16, fp32: the short names every framework uses
    if dtype not in options.DTYPES:
        raise UsageError(f"--dtype: {dtype!r} is not supported; expected one of {', '.join(options.DTYPES)} "
                         f"(or {', '.join(options.DTYPE_NAMES)})")
    if sizes is not None:
        options.parse_sizes(sizes)
    op_list = options.parse_ops(ops)
    axes = parse_sweeps(sweep, run=False)
    points = [point for point in sweep_points(axes, max_points) if point]
    _refuse_what_this_machine_cannot_run(backend, [name for name, _ in axes])
    if not (math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout {plain_number(timeout)} is not accepted: a finite number more than 0 (seconds)")
    if plot is not None:  # judged as --chart is, before the library is looked for
        from nodeweave.runs.chart import check_chart_path, require_matplotlib

        check_chart_path(plot, "--plot", library=False)
        refuse_foreign_file(plot, "--plot", "chart", force=force)
        require_matplotlib(plot, "--plot")
    default_out = json_path is None
    if default_out:  # runs/ beside the spec, as run, check and runs ls read it; judged by their rule (runs_parent)
        from nodeweave.cli.habits.output import runs_parent
        from nodeweave.cli.habits.spec_path import find_spec

        from nodeweave.cluster.runfolder import RUNS
        from nodeweave.specpath import spec_folder

        from nodeweave.systemdirs import made_in_system_folder

        spec_here = find_spec(None)
        parent = spec_folder(spec_here) / RUNS
        accepted = ("; accepted: --json-out FILE in a folder of your own, or bench run from your project's folder "
                    "(runs/ beside its nodeweave.yaml)")
        made = made_in_system_folder(str(parent))  # run from / or /usr/local: runs/ made there (replay10 R3), said
        if made:  # as --json-out's, the option that moves it, before runs/'s own rule names a folder option
            raise UsageError(f"{option_named('json_path', '--json-out', parent / DEFAULT_JSON_NAME, ctx)}: {made}"
                             f"{accepted}")
        if not (parent.is_symlink() and parent.is_dir()):  # a link: the file rule below names --json-out's real
            parent = runs_parent(None, spec_here, writes=True, instead="--json-out FILE",  # path (bench has no
                                 what="bench's result")  # --runs-dir to offer)
        json_path = default_json_path(Path(os.path.abspath(parent)))
        from nodeweave.cli.habits.output import file_to_write_problem

        problem = file_to_write_problem(json_path, "--json-out")  # the rules --json-out's callback applies
        if problem:
            raise UsageError(f"{option_named('json_path', '--json-out', json_path, ctx)}: {problem}{accepted}")
    plot_beside = plot is None  # the default plot shares the result's stem
    plot = _plot_path(plot, json_path, report.matplotlib_available())
    # before the launches: minutes, then a refusal
    refuse_foreign_file(json_path, "--json-out", "bench", force=force,
                        subject=option_named("json_path", "--json-out", json_path, ctx))
    if plot is not None:  # the default beside an explicit --json-out too: an earlier chart there is kept
        refuse_foreign_file(plot, "--plot", "chart", force=force)
    for note in assignment_notes(axes, {}, runs=False):  # after every refusal: a refusal is the one line
        tell(f"note: {note}")
    err_console = people_console(stderr=True)
    console = err_console if data_out else people_console()
    config = runner.BenchConfig(tuple(op_list), sizes, iters, warmup, _processes(nproc, backend, err_console),
                                backend, dtype, timeout)
    _refuse_processes_past_this_machine(config)
    _refuse_sizes_past_memory(config)
    _judge_sizes_measured(config, sizes)
    if dry_run:
        from nodeweave.cli.habits.clusteropts import show_plan

        show_plan(runner.bench_plan(config, points, json_path, plot, default_out), output)
        return
    echo = (lambda line: err_console.print(line, markup=False, highlight=False)) if verbose else None

    def on_start(label: str, index: int, total: int) -> None:
        err_console.print(styled(("bench", "bold"), f" run {index}/{total}: {label}"))

    runs = runner.run_matrix(config, points, echo=echo, on_start=on_start)
    ranking = runner.rank_runs(runs, op_list[0])
    _show(runs, ranking, points, op_list, console, err_console)
    document = report.document(runs, ranking, list(sweep))
    if not any(run.report for run in runs) and default_out:  # no numbers: no file to mistake
        tell(f"bench: no launch measured anything, so {json_path} was not written (--json-out PATH "
             "writes the failed launches' exit codes and output there)")
        raise typer.Exit(EXIT_FAILURE)
    if default_out:  # runs/, made as run makes it: with its .gitignore (walk15a A13)
        from nodeweave.jobstate import RUNS_GITIGNORE, make_own_folder

        make_own_folder(json_path.parent, RUNS_GITIGNORE)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    named = option_named("json_path", "--json-out", json_path, ctx)
    written = report.write_json(json_path, document, may_replace("--json-out", "bench", force, subject=named), named,
                                next_name=default_json_path if default_out else None)
    if written != json_path:  # the default name another bench took meanwhile: the next free one, its plot beside it
        plot = written.with_suffix(".png") if plot is not None and plot_beside else plot
        json_path = written
    measured = any(run.report for run in runs)
    console.print(f"wrote {json_path}" if measured else
                  f"wrote {json_path}: no measurement in it ({runner.NOTHING_MEASURED.split(', ', 1)[1]})")
    if data_out:
        emit(json.loads(json.dumps(document, sort_keys=True)), output)
    if plot is not None and measured:
        report.write_plot(plot, runs, op_list, may_replace("--plot", "chart", force))
        console.print(f"wrote {plot}")
    elif plot_beside and measured:  # the default chart skipped: said, never silently (walk17 A27)
        tell("note: no chart drawn: matplotlib is not installed (`pip install 'nodeweave[plot]'` draws busbw "
             f"against size as {json_path.with_suffix('.png').name} beside the result); the table has every number")
    if not all(run.correct for run in runs):
        raise typer.Exit(EXIT_FAILURE)


# The collective libraries' own variables: gloo reads none of them (RCCL reads NCCL_* too).
COLLECTIVE_PREFIXES = ("NCCL_", "RCCL_")


def _refuse_what_this_machine_cannot_run(backend: str, swept: "list[str]") -> None:
    """``--backend nccl`` with no GPU here, or a sweep of NCCL_*/RCCL_* variables over gloo launches (every point
    would measure the same): exit 2 before any launch (walk5, W75, W82)."""
    inert = [name for name in swept if name.startswith(COLLECTIVE_PREFIXES)]
    if backend == "gloo" and inert:
        raise UsageError(f"--sweep {inert[0]}: --backend gloo reads no NCCL_*/RCCL_* variable, so every point would "
                         "measure the same; accepted: --backend nccl (or auto) on a GPU machine, or leave the sweep out")
    if backend == "gloo" or (backend == "auto" and not inert):
        return
    from nodeweave.entrypoint import detect

    if detect().gpus.count:
        return
    if backend == "nccl":
        raise UsageError("--backend nccl: no GPU here, and NCCL runs only on GPUs; accepted: gloo, or auto (nccl "
                         "where a GPU is seen, else gloo)")
    raise UsageError(f"--sweep {inert[0]}: no GPU here, so the launches run gloo, which reads no NCCL_*/RCCL_* "
                     "variable: every point would measure the same; accepted: a GPU machine, or leave the sweep out")


def _refuse_processes_past_this_machine(config) -> None:
    """On CPU (gloo) every rank is a process of this machine importing torch: more than it holds
    (``local.torch_processes_fit``, the rule the local target's nodes are counted by) is refused before any launch,
    naming the count that fits (walk13 A24: ``--nproc 200`` on a 2-CPU machine was planned, exit 0). A GPU
    machine's ranks are its GPUs, judged by the launch."""
    from nodeweave.cluster.backends.local import NODES_PER_CPU, torch_processes_fit
    from nodeweave.entrypoint import detect

    if config.backend == "nccl" or (config.backend == "auto" and detect().gpus.count) or not config.nproc.isdigit():
        return
    fits, cpus, memory = torch_processes_fit()
    if int(config.nproc) > fits:
        size = f", {memory / 2**30:.0f} GiB" if memory else ""
        raise UsageError(f"--nproc {config.nproc} is not accepted on CPU: each gloo rank is a process of this machine "
                         f"importing torch (~0.5 GiB, at most {NODES_PER_CPU} a CPU), and this machine ({cpus} "
                         f"CPU(s){size}) holds about {fits}; accepted: --nproc 1 to {fits} here, or a GPU machine "
                         "(one rank per GPU)")


BUFFERS_PER_PROCESS = 2  # at least: a size's input and output (or the check's pattern) in each process's memory


def _refuse_sizes_past_memory(config) -> None:
    """On CPU (gloo on this machine's memory), a largest size whose buffers, in every process, exceed the memory
    this machine has available is refused before any launch, naming both (walk9 A3: `--sizes 16G` for 2 processes
    on a 23 GiB machine launched, and torchrun's traceback hid the failed allocation; on a shared machine it would
    push the others into swap). A GPU's memory is its own, judged by the launch."""
    from nodeweave.bench.options import DEFAULT_SIZES, parse_sizes
    from nodeweave.entrypoint import detect
    from nodeweave.quantities import human_bytes

    if config.backend == "nccl" or (config.backend == "auto" and detect().gpus.count):
        return
    try:
        available = next(int(line.split()[1]) * 1024 for line in open("/proc/meminfo", encoding="ascii")
                         if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return  # not Linux, or no such line: nothing to judge by
    procs = int(config.nproc) if str(config.nproc).isdigit() else 1
    largest = max(parse_sizes(config.sizes or DEFAULT_SIZES["gloo"]))
    needed = largest * BUFFERS_PER_PROCESS * procs
    if needed > available:
        fits = available // (BUFFERS_PER_PROCESS * procs)
        raise UsageError(f"--sizes: the largest size, {human_bytes(largest)}, needs at least {human_bytes(needed)} "
                         f"on CPU ({procs} gloo process(es) x {BUFFERS_PER_PROCESS} buffers), more than the "
                         f"{human_bytes(available)} this machine has available; accepted: sizes up to about "
                         f"{human_bytes(fits)}, or fewer processes (--nproc)")


def _judge_sizes_measured(config, sizes: "str | None") -> None:
    """The sizes given, as the launch will measure them, said before any launch and in the dry run (walk10 A5:
    ``--sizes 3,5`` became two rows of 8 B without a word): a size that is no whole number of elements per rank is
    named with the size measured; two measured as one are refused (``options.measured_sizes``). Judged where the
    ranks are known here: this node alone (no launcher's topology variable set), its process count given or one per
    GPU; else the worker judges the same rule when it starts."""
    from nodeweave.bench.options import measured_sizes, parse_sizes
    from nodeweave.bench.runner import TOPOLOGY_VARS

    if sizes is None or any(os.environ.get(name) for name in TOPOLOGY_VARS):
        return
    nranks = int(config.nproc) if str(config.nproc).isdigit() else None
    if nranks is None:
        from nodeweave.entrypoint import detect

        nranks = detect().gpus.count or None
    if nranks:
        _, note = measured_sizes(parse_sizes(sizes), config.dtype, nranks, sizes)
        if note:
            tell(f"note: {note}")


def _processes(nproc: str, backend: str, err_console) -> str:
    """``auto`` means one per GPU; with no GPU, one gloo process would measure nothing, so two."""
    if nproc == "auto" and backend != "nccl":
        from nodeweave.entrypoint import detect

        if detect().gpus.count == 0:
            tell("bench: no GPU here, so 2 gloo processes on this node (--nproc to change)")
            return "2"
    return nproc


def _plot_path(plot: Optional[Path], json_path: Path, have_matplotlib: bool) -> Optional[Path]:
    if plot is None:
        return json_path.with_suffix(".png") if have_matplotlib else None
    if not have_matplotlib:
        from nodeweave.runs.chart import matplotlib_missing

        raise matplotlib_missing(plot, "--plot")
    return plot


def _show(runs, ranking, points, op_list, console, err_console) -> None:
    from nodeweave.bench import report

    for run in runs:
        if run.report and not points:
            console.print(report.results_table(run))
        if not run.correct:
            cause = (": " + run.cause) if run.cause else ""  # the worker's own error first (walk9 A3)
            err_console.print(styled((f"run {run.label!r} failed (exit {run.exit_code})", "red"), cause,
                                     "; its output ended:"))
            err_console.print(run.log_tail[-1500:], markup=False, highlight=False)
    if points:
        console.print(report.ranking_table(ranking, report.largest_size(runs, op_list[0])))


def upgrade_old_spelling(argv: "list[str]") -> "list[str]":
    """``bench --json PATH`` (before 0.2) is now ``--json-out PATH``; ``--json`` alone prints to stdout."""
    out = list(argv)
    for i, arg in enumerate(out):
        old_value = arg.startswith("--json=") or (arg == "--json" and i + 1 < len(out) and not out[i + 1].startswith("-"))
        if old_value:
            out[i] = "--json-out" + arg[len("--json"):]
            typer.echo("nodeweave: note: `bench --json PATH` is now `bench --json-out PATH` (`--json` alone "
                       "prints the numbers on stdout); the old spelling goes in the next release", err=True)
    return out


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
