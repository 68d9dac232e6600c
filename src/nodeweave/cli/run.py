"""``nodeweave run [--sweep VAR=a,b] [--profile nsys|rocprofv3] -- SCRIPT ARGS``: the command line over the run engine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Tuple

import typer

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import (DRY_RUN, JSON, REACH, SPEC, console, open_cluster, reach_options,
                                              say, show_plan, spec_command)
from nodeweave.cli.habits.dashes import CommandAfterDashes, launcher_command
from nodeweave.cli.habits.nodes import NODE
from nodeweave.cli.habits.output import (complete_from, data_format, emit, is_data, output_option, runs_folder_written,
                                         runs_parent)
from nodeweave.cli.habits.detach import announce
from nodeweave.errors import NodeweaveError, UsageError

if TYPE_CHECKING:
    from nodeweave.cluster.options import ClusterOptions

LAUNCHER_CHOICES = complete_from("torchrun", "deepspeed", "accelerate", "command")

RUN_HELP = ("Start COMMAND (default: the spec's script and args) on every node at once, through each node's "
            "entrypoint, and see it through: output with \\[node-i] prefixes; runs/<UTC time>-<job>/ with logs, plans, "
            "exit codes, commit and sync digest; the first node to fail stops the others; Ctrl-C stops every node. "
            "The nodes should hold (`nodeweave up --hold`). Exit 0: every node 0; 1: a node failed (named); "
            "2: bad input (named); 3: no engine or the cluster is not up; 5: --check named a node or link; "
            "130: interrupted.")


@reach_options
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
                                               "(node 0 the master), as torchrun's --nnodes; refused under recovery"),
    node: List[str] = NODE,
    launcher: Optional[str] = typer.Option(None, "--launcher", autocompletion=LAUNCHER_CHOICES, help="torchrun, deepspeed, accelerate or command, "
                                           "for this run instead of the spec's launcher.type"),
    profile_options: Optional[str] = typer.Option(None, "--profile-options", help="The profiler's own options, "
                                                  "shell-quoted, instead of nodeweave's, e.g. '-i counters.yaml' "
                                                  "(rocprofv3) or '--trace=cuda,nvtx --stats=true' (nsys)"),
    grace: float = typer.Option(10, "--grace", min=0, help="Seconds between SIGTERM and SIGKILL when stopping nodes"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", callback=runs_folder_written, help="Where run folders go (default: runs/ beside the spec)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not show the nodes' output (it still goes to the run folder)"),
    check: bool = typer.Option(False, "--check", help="`nodeweave check` first (its defaults); start nothing when it "
                               "names a node or link (exit 5)"),
    detach: bool = typer.Option(False, "--detach", "-d", help="Start the run in the background and return once its "
                                "folder exists, printing its id: `nodeweave logs -f --run ID` follows (attaches "
                                "to) it, `nodeweave stop` ends it"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, dry_run: bool = DRY_RUN, as_json: bool = JSON,
    output: str = output_option(),
) -> None:
    spec_path = find_spec(spec_path)
    from nodeweave.cli.check import default_check
    from nodeweave.cluster.overrides import run_overrides
    from nodeweave.cluster.runplan import SweepRequest, run_plan
    from nodeweave.cluster.sweep import compile_metric, parse_assignment, parse_sweeps, sweep_points
    from nodeweave.cluster.onbackend import live_nodes, require_up

    fmt = data_format(as_json, output)
    if quiet and detach:  # a flag that does nothing is refused (README)
        raise UsageError("--quiet does nothing with --detach: a detached run shows no output anyway (it goes to the "
                         "run folder; `nodeweave logs -f --run ID` follows it); give one of them")
    if profile not in (None, "nsys", "rocprofv3"):
        raise UsageError(f"--profile {profile!r} is not accepted: nsys or rocprofv3")
    if profile_options is not None and profile is None:
        raise UsageError("--profile-options needs --profile nsys or rocprofv3")
    sweeps = parse_sweeps(sweep)
    points = sweep_points(sweeps) if sweep else [{}]
    compile_metric(metric)  # a bad expression is refused before anything starts
    if not sweep and (metric is not None or lower_is_better):
        given = "--metric" if metric is not None else "--lower-is-better"
        raise UsageError(f"{given} ranks the points of a --sweep, and this run has none; add --sweep VAR=a,b, or "
                         "compare finished runs with `nodeweave runs compare A B --metric REGEX`")
    extra = dict(parse_assignment(text, "--env", run=True) for text in env)
    for name, values in sweeps:
        if name in extra:
            raise UsageError(f"{name} is both set (-e {name}={extra[name]}) and swept (--sweep {name}="
                             f"{','.join(values)}); give it once: drop the -e, or add its value to the sweep")
    if profile_options is not None:  # the entrypoint's own variable, in front of it as every -e is
        _check_profile_options(profile, profile_options)
        extra = {"NODEWEAVE_PROFILE_OPTIONS": profile_options, **extra}
    judged: List[Tuple[List[str], str]] = []

    def judge(spec) -> None:
        """The command every node runs, its script inside the workspace: refused first, whatever the machine has."""
        refuse_shape_under_recovery(spec, nodes_wanted, node)
        line, rewritten = launcher_command(command, launcher or spec.launcher.type) if command else (
            spec_command(spec), "")
        script_inside(spec, line, launcher or spec.launcher.type)
        judged.append((line, rewritten))

    spec, backend, _ = open_cluster(spec_path, reach, dry_run=dry_run, judge=judge)
    command, rewritten = judged[0]
    everyone = live_nodes(backend, "run", dry_run)
    nodes_wanted = _node_count(everyone, node, nodes_wanted)
    nodes, shape = run_overrides(everyone, nproc_per_node, nodes_wanted, launcher,
                                 backend.grow_hint(nodes_wanted or 0))
    parent = runs_parent(runs_dir, spec_path, writes=True)
    checking = default_check(nodes, spec, spec_path, runs_dir) if check else None
    plan = run_plan(backend.where, nodes, command, points, {**shape, **extra}, profile, grace,
                    spec.recovery.enabled, parent, spec.name, SweepRequest(metric, lower_is_better) if sweep else None,
                    checking, nnodes=nodes_wanted)
    if not dry_run:
        require_up(backend, nodes, "run")
    # after every refusal (nodes judged, the cluster up): a refusal is the one line a mistake gets
    from nodeweave.cli.habits.dashes import unexpanded_note

    said = [f"note: {note}" for note in (rewritten, script_note(spec, spec_path, command,
                                                                 launcher or spec.launcher.type),
                                         unexpanded_note(command, [*(name for name, _ in sweeps), *extra])) if note]
    if profile is not None:
        said += [f"note: {note}" for note in [profiler_note(profile, spec.image.variant)] if note]
    said += [f"note: {note}" for note in [inert_sweep_note([name for name, _ in sweeps], spec.image.variant),
                                          bare_program_note(spec, spec_path, command, launcher or spec.launcher.type)]
             if note]
    if detach and dry_run:  # what the real run does with --detach, said by its dry run (walk5, W56)
        what = "the sweep's id (<UTC time>-<job>-sweep)" if sweep else "the run's id"
        follows = "the point running then" if sweep else "it"
        said.append(f"note: --detach: the real run goes to the background and prints {what} once its folder exists; "
                    f"`nodeweave logs -f --run ID` follows {follows}, `nodeweave runs show ID` gives the result, "
                    "`nodeweave stop` ends it")
    from dataclasses import replace

    plan = replace(plan, notes=(*plan.notes, *said))  # the plan's: its dry run's text and -o json, the executed one's
    if dry_run:
        show_plan(plan, fmt, backend, nodes, "run")
        return
    for line in said:
        typer.echo(f"nodeweave: {line}", err=True)
    if detach:
        from nodeweave.cli.habits.detach import detach_run

        detach_run(parent, as_json or is_data(fmt))
        return
    _execute(plan, nodes, spec, spec_path, backend, parent, quiet, fmt)


def _execute(plan, nodes, spec, spec_path: Path, backend, parent: Path, quiet: bool, fmt: str) -> None:
    """Walk the run plan (check, sweep folder, each point's run), then say how it went."""
    from nodeweave.cli.check import CheckSession, job_context
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.runplan import RunSession

    context = job_context(spec, spec_path, backend)
    context.recovery = spec.recovery.enabled
    out = console(stderr=is_data(fmt))
    session = RunSession(nodes, parent, context, out, quiet, on_folder=announce)
    checks = CheckSession(lambda: nodes, spec, spec_path, backend, out, then="nothing was started")
    execute(plan, Execution(backend.spec_dir, say(out), out, backend, nodes, runs=session, checks=checks))
    if session.finish_sweep() is None:
        _finish(session.results[0], fmt, out)
        return
    _sweep_result(session, plan, fmt)


# The GPU vendor whose devices each profiler traces (catalogue.VENDORS keys).
PROFILER_VENDOR = {"nsys": "nvidia", "rocprofv3": "amd"}


def _check_profile_options(profile: str, text: str) -> None:
    """--profile-options judged here by the node's own rule (an option moving the profiler's output is refused),
    so the dry run refuses what every node would (walk5, W50)."""
    import shlex

    from nodeweave.entrypoint.errors import UsageError as NodeRefusal
    from nodeweave.entrypoint.running.profile import checked_options

    try:
        checked_options(profile, shlex.split(text), "--profile-options")
    except ValueError as err:  # shlex's
        raise UsageError(f"--profile-options {text!r} cannot be split into words ({err}); accepted: shell-quoted "
                         "profiler options such as '--trace=cuda,nvtx --stats=true'") from None
    except NodeRefusal as err:  # the entrypoint's own exception class: the same words, this program's exit 2
        raise UsageError(str(err)) from None


# The collective library variables each vendor's stack reads: gloo (cpu) none, NCCL its NCCL_*, RCCL both.
COLLECTIVE_READS = {"cpu": (), "nvidia": ("NCCL_",), "amd": ("NCCL_", "RCCL_")}


def bare_program_note(spec, spec_path: Path, command: List[str], launcher: str) -> str:
    """Launcher ``command`` execs its first word through PATH, which never holds the workspace: a bare
    ``train.py`` that is a file of the workspace is not found on any node (exit 127), as the entrypoint warns on
    the node (command-not-found); said here by the plan too (walk5 W72). "" otherwise."""
    if launcher != "command" or not command or "/" in command[0]:
        return ""
    folder = (spec_path.resolve().parent / Path(spec.workspace.host_path).expanduser()).resolve()
    if not (folder / command[0]).is_file():
        return ""
    return (f"launcher command execs {command[0]!r} through PATH, which does not hold the workspace: every node "
            f"would exit 127; write ./{command[0]} (an executable with its #! line), or python {command[0]}")


def inert_sweep_note(swept: List[str], variant: str) -> str:
    """The note for a sweep whose every variable is a collective library's that the image variant's stack never
    reads (``NCCL_*`` on the cpu variant, gloo; ``RCCL_*`` on a CUDA one): every point would measure the same
    (walk5, W82); "" otherwise."""
    from nodeweave.catalogue import VARIANTS

    row = VARIANTS.get(variant)
    if row is None or not swept or row.vendor not in COLLECTIVE_READS:
        return ""
    reads = COLLECTIVE_READS[row.vendor]
    inert = [name for name in swept if name.startswith(("NCCL_", "RCCL_")) and not name.startswith(reads)]
    if len(inert) != len(swept):
        return ""
    library = "gloo, which reads no NCCL_*/RCCL_* variable" if not reads else "NCCL, which reads no RCCL_* variable"
    return (f"image variant {variant} runs {library}: no point of this sweep ({', '.join(inert)}) changes "
            "anything, so the runs would differ only by noise")


def profiler_note(profile: str, variant: str) -> str:
    """The note for a profiler that traces another vendor's GPUs than the spec's image variant is built for
    (``--profile nsys`` on the cpu or a ROCm variant): every node would stop with exit 127 unless the image
    holds it anyway; "" when the vendors agree."""
    from nodeweave.catalogue import VARIANTS

    row = VARIANTS.get(variant)
    wanted = PROFILER_VENDOR[profile]
    if row is None or row.vendor == wanted:
        return ""
    fits = ", ".join(key for key, v in VARIANTS.items() if v.vendor == wanted)
    return (f"--profile {profile} traces {wanted} GPUs, and image variant {variant} is built for {row.vendor}: "
            f"unless the image holds {profile}, every node stops before the launch with exit 127 (variants for "
            f"{wanted}: {fits})")


def refuse_shape_under_recovery(spec, count: Optional[int], node: List[str]) -> None:
    """--nodes/--node under recovery: the recovery places the training nodes and the spares (generation 0's
    training nodes win over any count, so the flag would do nothing, or make a spare train), so say why here."""
    if not spec.recovery.enabled or (count is None and not node):
        return
    given = f"--nodes {count}" if count is not None else f"--node {','.join(node)}"
    spares = spec.recovery.spare_nodes
    floor = f", going on with as few as {spec.nodes.min} (recovery.min_nodes)" if spec.nodes.elastic else ""
    raise UsageError(f"{given} is not accepted under recovery ({spec.nodes.max} training node(s)"
                     f"{f' and {spares} spare(s)' if spares else ''}{floor}): the recovery places every node and a "
                     "node's count is its generation's, so a run cannot pick nodes; run on all of them, or change "
                     "`nodes`/`recovery.spares` in the spec and `nodeweave up` again")


def _node_count(nodes, node: List[str], count: Optional[int]) -> Optional[int]:
    """--nodes N, or the N of --node 0-(N-1): a run's ranks are the nodes' places, so only a prefix can run (the
    two together are refused as the command line is read: habits/conflicts.py)."""
    if not node:
        return count
    from nodeweave.cli.habits.nodes import first_nodes

    picked = first_nodes(nodes, node, "run")
    return picked if picked < len(nodes) else None


PYTHONS = ("python", "python3")


def script_inside(spec, command: List[str], launcher: str) -> Optional[tuple]:
    """(the script as given, its path inside the workspace) of the script the nodes would run, or None (a
    program, an option, a path in the image: nothing here to compare with). One that leaves the workspace is
    refused by the spec's own rule for launcher.script (exit 2): `run` asks this before any node is asked."""
    import posixpath

    words = list(command)
    if launcher == "command":
        words = words[1:] if words and posixpath.basename(words[0]) in PYTHONS else []
    script = words[0] if words else ""
    if not script or script.startswith("-") or posixpath.isabs(script) and not script.startswith(
            spec.workspace.path.rstrip("/") + "/"):
        return None
    inside = posixpath.relpath(script, spec.workspace.path) if posixpath.isabs(script) else script
    normal = posixpath.normpath(inside)
    if normal == ".." or normal.startswith("../"):  # the spec's rule for launcher.script (spec/mounts.py)
        raise UsageError(f"{script}: the script leaves the workspace ({spec.workspace.path}), which is all the "
                         "nodes see of this folder; accepted: a path inside it (as launcher.script), or an "
                         "absolute path in the image")
    return script, inside


def script_note(spec, spec_path: Path, command: List[str], launcher: str, seen_at: Optional[str] = None) -> str:
    """The script the nodes would run, judged here: refused when it leaves the workspace (:func:`script_inside`);
    for one the workspace lacks, the note to print (the image may hold it), for a dry run and a real run alike;
    else ""."""
    found = script_inside(spec, command, launcher)
    if found is None:
        return ""
    script, inside = found
    folder = (spec_path.resolve().parent / Path(spec.workspace.host_path).expanduser()).resolve()
    if (folder / inside).exists():
        return ""
    seen = seen_at or spec.workspace.path
    unless = "the image holds it" if seen == spec.workspace.path else f"{seen} on every node holds it (no image)"
    return (f"{script} is not in the workspace {folder} (the nodes see it at {seen}): the run would fail with "
            f"'No such file' unless {unless}")


def note_script(spec, spec_path: Path, command: List[str], launcher: str, seen_at: Optional[str] = None) -> None:
    """Judge the script the nodes would run (:func:`script_note`) and print its note on stderr, for a verb with no
    document to carry it (init); validate, up and run put the same note in their -o json too."""
    note = script_note(spec, spec_path, command, launcher, seen_at)
    if note:
        typer.echo(f"nodeweave: note: {note}", err=True)


def _finish(data: dict, fmt: str, out) -> None:
    out.print(f"[bold]nodeweave:[/] {data['summary']}; run folder {data['folder']}", highlight=False)
    emit(data, fmt)
    if data["exit_code"] == 130:
        raise typer.Exit(130)
    if data["exit_code"] != 0:
        raise NodeweaveError(data["summary"])


def _sweep_result(session, plan, fmt: str) -> None:
    rows = session.rows
    emit({"folder": str(session.sweep_folder.path), "metric": session.sweep.metric, "points": rows}, fmt)
    if any(r["exit_code"] == 130 for r in rows):
        raise typer.Exit(130)
    failed = [r for r in rows if r["exit_code"] != 0]
    if failed:
        raise NodeweaveError(f"{len(failed)} of {len(rows)} sweep point(s) failed: "
                             + "; ".join(",".join(f"{k}={v}" for k, v in r["point"].items()) for r in failed))


def register(app: typer.Typer) -> None:
    app.command("run", help=RUN_HELP, cls=CommandAfterDashes)(run_command)
