"""``nodeweave run [--sweep VAR=a,b] [--profile nsys|rocprofv3] -- SCRIPT ARGS``: the command line over the run engine."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Tuple

import typer

from nodeweave.entrypoint.planning.contract import digits  # ASCII digits only (walk13 A22)
from nodeweave.cli.habits.coercion import seconds_option

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import (DRY_RUN, JSON, REACH, SPEC, console, open_cluster, reach_options,
                                              foretold, say, show_plan, spec_command)
from nodeweave.cli.habits.dashes import CommandAfterDashes, launcher_command
from nodeweave.cli.habits.nodes import NODE
from nodeweave.cli.habits.output import (complete_from, data_format, emit, is_data, judge_runs_written,
                                         output_option, runs_folder_written, runs_parent)
from nodeweave.cli.habits.detach import announce
from nodeweave.errors import NodeweaveError, UsageError
from nodeweave.usertext import styled

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
    max_points: Optional[int] = typer.Option(None, "--max-points", min=1, help="The most points a --sweep may have "
                                             "(the product of its value counts; default 256): more is refused "
                                             "before anything starts"),
    metric: Optional[str] = typer.Option(None, "--metric", help="REGEX whose first group is read from each node's log "
                                         "and compared across the sweep, e.g. 'samples/s ([0-9.]+)'"),
    lower_is_better: bool = typer.Option(False, "--lower-is-better", help="The sweep's best point has the lowest metric"),
    env: List[str] = typer.Option([], "--env", "-e", help="VAR=VALUE for every node's run (repeat); VAR alone: "
                                  "this shell's value of VAR (unset or empty is refused), shown as $VAR in the plan "
                                  "and records, as a secret-looking name's value is shown as ***"),
    profile: Optional[str] = typer.Option(None, "--profile", autocompletion=complete_from("nsys", "rocprofv3"), help="nsys or rocprofv3: every rank under the profiler, "
                                          "its files collected into the run folder"),
    nproc_per_node: Optional[str] = typer.Option(None, "--nproc-per-node", help="Processes per node for this run "
                                                 "(1 to 1024, or auto); a node refuses more than its usable GPUs, the local "
                                                 "target more than this machine holds"),
    nodes_wanted: Optional[int] = typer.Option(None, "--nodes", help="The node count: run on the first N nodes only "
                                               "(node 0 the master), as torchrun's --nnodes; under recovery only the whole job (a "
                                               "no-op), any other count refused"),
    node: List[str] = NODE,
    launcher: Optional[str] = typer.Option(None, "--launcher", autocompletion=LAUNCHER_CHOICES, help="torchrun, deepspeed, accelerate or command, "
                                           "for this run instead of the spec's launcher.type"),
    profile_options: Optional[str] = typer.Option(None, "--profile-options", help="The profiler's own options, "
                                                  "shell-quoted, instead of nodeweave's, e.g. '-i counters.yaml' "
                                                  "(rocprofv3) or '--trace=cuda,nvtx --stats=true' (nsys)"),
    grace: float = seconds_option(typer.Option(10, "--grace", min=0, help="Seconds between SIGTERM and SIGKILL when stopping nodes")),
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
    from nodeweave.cluster.sweep import (RunFlagInstead, assignment_notes, compile_metric, hidden_notes, parse_env,
                                         parse_sweeps, sweep_points)
    from nodeweave.hidden import NONE, hide
    from nodeweave.cluster.onbackend import held_launcher, live_nodes, refuse_busy, require_up
    from nodeweave.entrypoint.planning.consistency import no_script

    fmt = data_format(as_json, output)
    if quiet and detach:  # a flag that does nothing is refused (README)
        raise UsageError("--quiet does nothing with --detach: a detached run shows no output anyway (it goes to the "
                         "run folder; `nodeweave logs -f --run ID` follows it); give one of them")
    if profile not in (None, "nsys", "rocprofv3"):
        raise UsageError(f"--profile {profile!r} is not accepted: nsys or rocprofv3")
    if profile_options is not None and profile is None:
        raise UsageError("--profile-options needs --profile nsys or rocprofv3")
    flag_instead = None  # `-e NODEWEAVE_NNODES=3`: refused once the cluster says which --nodes it takes
    try:
        sweeps = parse_sweeps(sweep)
        extra, hidden = parse_env(env, "--env", run=True)
    except RunFlagInstead as err:
        flag_instead, sweeps, extra, hidden = err, [], {}, NONE
    points = sweep_points(sweeps, max_points) if sweeps or max_points else [{}]
    compile_metric(metric)  # a bad expression is refused before anything starts
    if not sweep and (metric is not None or lower_is_better):
        given = "--metric" if metric is not None else "--lower-is-better"
        raise UsageError(f"{given} ranks the points of a --sweep, and this run has none; add --sweep VAR=a,b, or "
                         "compare finished runs with `nodeweave runs compare A B --metric REGEX`")
    from nodeweave.cluster.sweep import ranking_note

    backwards = ranking_note(metric, lower_is_better)
    if backwards:  # said before any point starts: Ctrl-C and --lower-is-better cost nothing yet
        typer.echo(f"nodeweave: note: {backwards}", err=True)
    for name, values in sweeps:
        if name in extra:
            raise UsageError(f"{name} is both set (-e {name}={hide(extra[name])}) and swept (--sweep {name}="
                             f"{','.join(values)}); give it once: drop the -e, or add its value to the sweep")
    if profile_options is not None:  # the entrypoint's own variable, in front of it as every -e is
        _check_profile_options(profile, profile_options)
        extra = {"NODEWEAVE_PROFILE_OPTIONS": profile_options, **extra}
    judged: List[Tuple[List[str], str]] = []
    shape_notes: List[str] = []

    def judge(spec) -> None:
        """The command every node runs, its script inside the workspace: refused first, whatever the machine has."""
        shape_notes.append(recovery_shape_note(spec, nodes_wanted, node))
        line, rewritten = launcher_command(command, launcher or spec.launcher.type,
                                           workspace=workspace_folder(spec, spec_path)) if command else (
            spec_command(spec), "")
        if command:  # a script path typed here is read from here, as the shell reads it (walk10 C10)
            line, moved = typed_from_here(spec, spec_path, line, launcher or spec.launcher.type)
            rewritten = "; ".join(note for note in (rewritten, moved) if note)
        problem = no_script(launcher or spec.launcher.type, line, spec.launcher.script)
        if problem:  # the nodes' own rule (walk6 W12): refused here before any node reads it
            raise UsageError(problem)
        script_inside(spec, line, launcher or spec.launcher.type)
        judge_runs_written(spec, spec_path, runs_dir)
        judged.append((line, rewritten))

    spec, backend, _ = open_cluster(spec_path, reach, dry_run=dry_run, judge=judge)
    command, rewritten = judged[0]
    held = held_launcher(backend, launcher)  # one launcher per run: the one the command was judged for
    if held and not dry_run:
        backend._spec_change_said = True  # the refusal's one line says it, not a note before it
    everyone = live_nodes(backend, "run", dry_run)
    if held and not dry_run:
        raise UsageError(f"{held}; nothing was started")
    if flag_instead is not None:
        raise flag_instead.refusal(lambda value: _flag_problem(flag_instead.flag, value, spec, everyone, backend))
    shape_notes.append(recovery_shape_note(spec, nodes_wanted, node, everyone))
    if any(shape_notes):  # every node named under recovery: the run's own shape
        nodes_wanted, node = None, []
    nodes_wanted = _node_count(everyone, node, nodes_wanted, backend)
    nodes, shape = run_overrides(everyone, nproc_per_node, nodes_wanted, launcher,
                                 backend.grow_hint(nodes_wanted or 0))
    crowded = past_this_machine(backend, len(nodes), nproc_per_node, spec, spec_path)
    if crowded and (nproc_per_node is not None or not dry_run):  # a flag's value is refused in a dry run too
        raise UsageError(crowded)
    parent = runs_parent(runs_dir, spec_path, writes=True)
    checking = default_check(nodes, spec, spec_path, runs_dir) if check else None
    plan = run_plan(backend.where, nodes, command, points, {**shape, **extra}, profile, grace,
                    spec.recovery.enabled, parent, spec.name, SweepRequest(metric, lower_is_better) if sweep else None,
                    checking, nnodes=nodes_wanted)
    if not dry_run:
        require_up(backend, nodes, "run")
        refuse_busy(backend, nodes, "run")  # before a run folder is made (walk10 C1: each node refused it)
    lacking = (profiler_lacking(profile, spec, backend, nodes, extra) if profile is not None else "") or (
        "" if bare_program_note(spec, spec_path, command, launcher or spec.launcher.type)  # a workspace file: its line
        else program_lacking(command, launcher or spec.launcher.type, spec, nodes, extra))
    if lacking and not dry_run:
        raise UsageError(f"{lacking}; nothing was started")
    # after every refusal (nodes judged, the cluster up): a refusal is the one line a mistake gets
    from nodeweave.cli.habits.dashes import unexpanded_note

    here = backend.target == "local"  # this machine's folder is mounted at workspace.path
    missing = script_refusal(spec, spec_path, command, launcher or spec.launcher.type, mounted=here)
    if missing and not dry_run:
        raise UsageError(f"{missing}; nothing was started")
    said = [f"note: {note}" for note in (*dict.fromkeys(shape_notes), rewritten, "" if missing else script_note(
                spec, spec_path, command, launcher or spec.launcher.type, typed=True),
                                         unexpanded_note(command, [*(name for name, _ in sweeps), *extra])) if note]
    said += [foretold("run", 2, held)] if held else []  # in the order the real run refuses them
    said += [foretold("run", 2, crowded)] if crowded else []  # the spec's count, this machine
    said += [foretold("run", 2, missing)] if missing else []
    said += [foretold("run", 2, lacking)] if lacking else []
    if profile is not None and not lacking:
        said += [f"note: {note}" for note in [profiler_note(profile, backend.image_variant, backend.target)] if note]
    said += [f"note: {note}" for note in [inert_sweep_note([name for name, _ in sweeps], backend.image_variant,
                                                               backend.target if backend.image_variant !=
                                                               spec.image.variant else "")]
             if note]
    said += [f"note: {note}" for note in assignment_notes(sweeps, extra) + hidden_notes(extra, nodes)]
    if detach and dry_run:  # what the real run does with --detach, said by its dry run (walk5, W56)
        what = "the sweep's id (<UTC time>-<job>-sweep)" if sweep else "the run's id"
        follows = "the point running then" if sweep else "it"
        said.append(f"note: --detach: the real run goes to the background and prints {what} once its folder exists; "
                    f"`nodeweave logs -f --run ID` follows {follows}, `nodeweave runs show ID` gives the result, "
                    "`nodeweave stop` ends it")
    from dataclasses import replace

    plan = replace(plan, notes=(*plan.notes, *said))  # the plan's: its dry run's text and -o json, the executed one's
    # more one-process nodes up than this machine holds: said as up said it, where they are up (walk17a A23)
    crowded_up = [f"warning: {line}" for line in [crowded_note(backend, len(nodes), nproc_per_node, spec)] if line]
    if dry_run:
        show_plan(plan, fmt, backend, nodes, "run", if_up=crowded_up)
        return
    plan = replace(plan, notes=(*plan.notes, *crowded_up))
    if detach:  # the plan is executed in the background run: its notes are said here (executed, the plan says them)
        for line in said:
            typer.echo(f"nodeweave: {line}", err=True)
        from nodeweave.cli.habits.detach import detach_run

        detach_run(parent, as_json or is_data(fmt))
        return
    _execute(plan, nodes, spec, spec_path, backend, parent, quiet, fmt, hidden)


def _execute(plan, nodes, spec, spec_path: Path, backend, parent: Path, quiet: bool, fmt: str, hidden=None) -> None:
    """Walk the run plan (check, sweep folder, each point's run), then say how it went."""
    from nodeweave.cli.check import CheckSession, job_context
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.runplan import RunSession

    context = job_context(spec, spec_path, backend)
    context.recovery = spec.recovery.enabled
    context.hidden = hidden  # the hidden -e values, filled in at each spawn, never recorded
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


def workspace_folder(spec, spec_path: Path) -> Path:
    """This machine's folder that the nodes see at workspace.path (workspace.host_path, from the spec's folder)."""
    from nodeweave.specpath import host_folder, spec_folder

    return host_folder(spec.workspace.host_path, spec_folder(spec_path)).resolve()


def bare_program_note(spec, spec_path: Path, command: List[str], launcher: str) -> str:
    """Launcher ``command`` execs its first word through PATH, which never holds the workspace: a bare
    ``train.py`` that is a file of the workspace is not found on any node (exit 127), as the entrypoint warns on
    the node (command-not-found); said here by the plan too (walk5 W72). "" otherwise."""
    if launcher != "command" or not command or "/" in command[0]:
        return ""
    from nodeweave.specpath import host_folder, spec_folder

    folder = host_folder(spec.workspace.host_path, spec_folder(spec_path)).resolve()
    if not (folder / command[0]).is_file():
        return ""
    return (f"launcher command execs {command[0]!r} through PATH, which does not hold the workspace: every node "
            f"would exit 127; write ./{command[0]} (an executable with its #! line), or python {command[0]} (for a "
            f"program of the image's own by that name, its absolute path in the image, e.g. /usr/local/bin/{command[0]})")


def program_script_note(spec, spec_path: Path, command: List[str], launcher: str) -> str:
    """The spec's launcher.script naming a program (``nvidia-smi``, ``bash``) under a Python launcher: every rank
    would run ``python nvidia-smi`` whatever the image holds, as ``run -- nvidia-smi`` refuses (issue 43 A30); a note
    for validate, up and run, whose nodes refuse it at the start. "" otherwise."""
    from nodeweave.entrypoint.planning.consistency import LAUNCHERS_WITH_WORKERS, is_a_program

    folder = workspace_folder(spec, spec_path)
    word = command[0] if command else ""
    if launcher not in LAUNCHERS_WITH_WORKERS or not is_a_program(word, lambda name: (folder / name).is_file()):
        return ""
    if close_script(folder, word):  # `train` beside train.py: a script misspelt, which the missing-script note names
        return ""
    return (f"launcher.script {word!r} is a program, not a Python script (no .py, and no file of the workspace "
            f"{folder}): {launcher} starts it with the image's Python (`python {word}`), so every node would stop "
            f"at the start whatever the image holds; set launcher.type: command to run it as given, or "
            "launcher.script to the training script (train.py)")


def inert_sweep_note(swept: List[str], variant: str, target: str = "") -> str:
    """The note for a sweep whose every variable is a collective library's that the image variant's stack never
    reads (``NCCL_*`` on the cpu variant, gloo; ``RCCL_*`` on a CUDA one): every point would measure the same
    (walk5, W82); "" otherwise. ``variant``: the one the target's nodes run (``Backend.image_variant``: cpu on the
    local target whatever the spec builds, walk9 A19), which ``target`` names."""
    from nodeweave.catalogue import VARIANTS

    row = VARIANTS.get(variant)
    if row is None or not swept or row.vendor not in COLLECTIVE_READS:
        return ""
    reads = COLLECTIVE_READS[row.vendor]
    inert = [name for name in swept if name.startswith(("NCCL_", "RCCL_")) and not name.startswith(reads)]
    if len(inert) != len(swept):
        return ""
    library = "gloo, which reads no NCCL_*/RCCL_* variable" if not reads else "NCCL, which reads no RCCL_* variable"
    runs = f"the {target} target's nodes run image variant {variant}, which" if target else f"image variant {variant}"
    return (f"{runs} runs {library}: no point of this sweep ({', '.join(inert)}) changes "
            "anything, so the runs would differ only by noise")


def profiler_note(profile: str, variant: str, target: str = "") -> str:
    """The note for a profiler that traces another vendor's GPUs than the image variant the nodes run is built
    for (``--profile nsys`` on the cpu or a ROCm variant; the local target runs the cpu variant whatever the spec
    builds, walk6 W47): every node would stop with exit 127 unless the image holds it anyway; "" when the vendors
    agree."""
    from nodeweave.catalogue import VARIANTS

    row = VARIANTS.get(variant)
    wanted = PROFILER_VENDOR[profile]
    if row is None or row.vendor == wanted:
        return ""
    fits = ", ".join(key for key, v in VARIANTS.items() if v.vendor == wanted)
    runs = f"the {target} target's nodes run image variant {variant}" if target else f"image variant {variant}"
    return (f"--profile {profile} traces {wanted} GPUs, and {runs}, built for {row.vendor}: "
            f"unless the image holds {profile}, every node stops before the launch with exit 127 ("
            + ("the local target runs the cpu variant whatever the spec builds: `nodeweave up --image REF` names "
               "one that holds it" if target == "local" else f"variants for {wanted}: {fits}") + ")")


def profiler_lacking(profile: str, spec, backend, nodes, env=None) -> str:
    """Why ``--profile`` is refused before any node starts: the nodes' image variant is built for another vendor
    (``profiler_note``) and node 0, asked, has no such profiler on PATH, which every node's start would refuse with
    exit 127 after the nodes started (walk15 A34); "" where the vendors agree, launcher.setup may put it on PATH (as
    the node's own rule lets it), or node 0 does not answer (not up: the note says what the image lacks). Node 0 is
    asked with the PATH the run gives its ranks (``-e PATH=...``, the spec's env), as its start looks it up."""
    if not profiler_note(profile, backend.image_variant, backend.target) or not _node0_lacks(profile, spec, nodes,
                                                                                           env):
        return ""
    from nodeweave.catalogue import VARIANTS

    wanted = PROFILER_VENDOR[profile]
    fits = ", ".join(key for key, v in VARIANTS.items() if v.vendor == wanted)
    return (f"--profile {profile}: {nodes[0].name}'s image holds no {profile} (not on PATH there): its nodes run image "
            f"variant {backend.image_variant}, built for {VARIANTS[backend.image_variant].vendor}, and {profile} "
            f"traces {wanted} GPUs, so every node would stop before the launch with exit 127; accepted: a run "
            f"without --profile, nodes on a variant built for {wanted} ({fits}), or "
            + ("`nodeweave up --image REF` with an image that holds it (the local target runs the cpu variant "
               "whatever the spec builds)" if backend.target == "local" else "an image that holds it"))


def program_lacking(command: List[str], launcher: str, spec, nodes, env=None) -> str:
    """Why ``--launcher command`` is refused before any node starts: node 0, asked as ``--profile``'s program is
    (``_node0_lacks``), has no ``command[0]`` on PATH, so every node would exec nothing and end with exit 127 once
    started (walk18a A17: the dry run asked the image for nsys and a workspace script, not for ``nvidia-smi``); "" for
    a path, another launcher, or node 0 not answering (not up: the run is refused for that)."""
    import shlex

    if launcher != "command" or not command or "/" in command[0] or not _node0_lacks(command[0], spec, nodes, env):
        return ""
    return (f"launcher command execs {command[0]!r}, but {nodes[0].name}'s image has no {command[0]} on PATH: every "
            f"node would exit 127 (command not found); accepted: a program the image holds (`nodeweave exec --node 0 "
            f"-- sh -c {shlex.quote('command -v ' + command[0])}` asks), its absolute path in the image, or nodes on an "
            "image that holds it (`nodeweave up --image REF`)")


def _node0_lacks(program: str, spec, nodes, env=None) -> bool:
    """Whether node 0, asked, has no ``program`` on the PATH the run gives its ranks (``-e PATH=...``, the spec's
    env), as its start looks it up; False where launcher.setup may put it there or node 0 does not answer."""
    import shlex
    import subprocess

    if not nodes or spec.launcher.setup:
        return False
    probe = f"command -v {shlex.quote(program)} >/dev/null 2>&1 && echo nodeweave-has || echo nodeweave-lacks"
    path = (env or {}).get("PATH") or spec.env.get("PATH")
    if path:
        probe = f"PATH={shlex.quote(path)}; {probe}"
    try:
        asked = subprocess.run(nodes[0].exec_argv(["sh", "-c", probe]), capture_output=True, text=True, timeout=30,
                               stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "nodeweave-lacks" in asked.stdout.split()


def recovery_shape_note(spec, count: Optional[int], node: List[str], everyone=None) -> str:
    """--nodes/--node under recovery: the recovery places the training nodes and the spares (generation 0's
    training nodes win over any count, so the flag would do nothing, or make a spare train). One that names every
    node (--nodes equal to all of them or to the training count, --node naming each) is "all", said in a note (walk6
    W29: `--nodes 3` of 3 was refused as picking nodes); any other is refused, saying to leave it out. ``everyone``:
    the nodes, once known (--node is judged then)."""
    if not spec.recovery.enabled or (count is None and not node):
        return ""
    spares = spec.recovery.spare_nodes
    shape = f"{spec.nodes.max} training node(s){f' and {spares} spare(s)' if spares else ''}"
    given = f"--nodes {count}" if count is not None else f"--node {','.join(node)}"
    if count is not None and count in (spec.containers, spec.nodes.max):
        every = True
    elif node and everyone is None:
        return ""  # judged once the nodes are known
    elif node:
        from nodeweave.cli.habits.nodes import pick_nodes

        every = {n.index for n in pick_nodes(everyone, node)} == {n.index for n in everyone}
    else:
        every = False
    if every:
        return (f"{given} names the whole job ({shape}), which a run under recovery always runs on, the recovery "
                "placing each node: it changes nothing; leave it out")
    floor = f", going on with as few as {spec.nodes.min} (recovery.min_nodes)" if spec.nodes.elastic else ""
    raise UsageError(f"{given} is not accepted under recovery ({shape}{floor}): the recovery places every node and "
                     "a node's count is its generation's, so a run cannot pick nodes; leave it out (the run uses "
                     "every node), or change `nodes`/`recovery.spares` in the spec and `nodeweave up` again")


def past_this_machine(backend, nodes: int, nproc: Optional[str], spec, spec_path: Path) -> str:
    """On the local target every node is a container on this machine, and each of its processes a CPU process
    importing torch: why a run of more than this machine holds (``local.torch_processes_fit``, the rule its ``up``
    note counts by) is refused before any starts, naming the count that fits, or "" (walk13 A25:
    ``--nproc-per-node 100000`` planned 200000 processes on a 2-CPU machine); ``up --run`` (the spec's job started
    by up) is judged so too. ``nodes``: how many run. One process a node is ``up``'s own question (a note)."""
    if backend.target != "local":
        return ""
    from nodeweave.cluster.backends.local import cpu_processes, machine_too_small, spec_processes, torch_processes_fit

    per_node = cpu_processes(nproc) if nproc is not None else spec_processes(spec)
    too_many = machine_too_small(nodes, processes=per_node, ask=False) if per_node > 1 else []
    if too_many:
        given = f"--nproc-per-node {nproc}" if nproc is not None else f"{spec_path.name}: gpus_per_node: {spec.gpus_per_node}"
        most = torch_processes_fit()[0] // nodes
        instead = "--nproc-per-node" if nproc is not None else "gpus_per_node:"
        # never a range itself past the limit (walk17a A23: "1 to 1" offered for 10 nodes where 8 fit)
        fewer = (f"{instead} 1 to {most} for {nodes} node(s) on the local target here" if most >= 1 else
                 f"fewer nodes (nodes: in {spec_path.name}, then `nodeweave up`): {nodes} node(s) of one process "
                 "each are past it already")
        return f"{given}: {too_many[0]}; accepted: {fewer}, or a cluster target (-t kubernetes, -t slurm or -t hosts)"
    return ""


def crowded_note(backend, nodes: int, nproc: Optional[str], spec) -> str:
    """``up``'s own note when the nodes alone, one process each, are more than this machine holds: a run of one
    process a node on them is said so too (walk17a A23: 10 nodes were noted at up, their run planned in silence),
    the one rule (``local.machine_too_small``) counting processes either way."""
    if backend.target != "local":
        return ""
    from nodeweave.cluster.backends.local import cpu_processes, machine_too_small, spec_processes

    per_node = cpu_processes(nproc) if nproc is not None else spec_processes(spec)
    return next(iter(machine_too_small(nodes) if per_node == 1 else []), "")


def _flag_problem(flag: str, value: str, spec, everyone, backend) -> Optional[str]:
    """Why this run would refuse (or ignore) ``flag value`` on this spec and cluster, in the flag's own words, or
    None: a remedy names only a command `nodeweave run` takes (walk6 M2: `--nodes 3` of 2 nodes)."""
    from nodeweave.cluster.overrides import run_overrides

    try:
        if flag == "--nodes":
            if not digits(value):
                return f"--nodes {value!r} is not accepted: a whole number of nodes"
            note = recovery_shape_note(spec, int(value), [], everyone)
            if note:
                return note
            run_overrides(everyone, None, int(value), None, backend.grow_hint(int(value)))
        elif flag in ("--nproc-per-node", "--launcher"):
            run_overrides(everyone, value if flag == "--nproc-per-node" else None, None,
                          value if flag == "--launcher" else None)
        elif flag == "--profile" and value not in ("nsys", "rocprofv3"):
            return f"--profile {value!r} is not accepted: nsys or rocprofv3"
        elif flag == "--profile-options":
            _check_profile_options("nsys", value)
            return "it needs --profile too: `nodeweave run --profile nsys --profile-options ...`"
    except UsageError as err:
        return str(err)
    return None


def _node_count(nodes, node: List[str], count: Optional[int], backend=None) -> Optional[int]:
    """--nodes N, or the N of --node 0-(N-1): a run's ranks are the nodes' places, so only a prefix can run (the
    two together are refused as the command line is read: habits/conflicts.py)."""
    if not node:
        return count
    from nodeweave.cli.habits.nodes import first_nodes

    picked = first_nodes(nodes, node, "run", backend)
    return picked if picked < len(nodes) else None


PYTHONS = ("python", "python3")


def typed_from_here(spec, spec_path: Path, command: List[str], launcher: str) -> Tuple[List[str], str]:
    """(the command with its script given from the workspace's root, the note saying so, or ""): a script path
    typed on the command line is read as the shell reads it, from the current folder (``cd sub/a; run -- hi.py``,
    ``run -- ../../train.py``, an absolute path of this machine), while the nodes start in the workspace's root;
    when that file is there and inside the workspace, the path from the root replaces the typed one, said as every
    changed command is (walk10 C10; walk7 A24 and A10 only noted it, and the run failed on every node). A path
    that names no file from here is left as typed: the checks after it judge it from the root. The script's
    arguments are its own to read (a path, or a value that looks like one): never changed, but one that names a
    file from here that is another path from the root is said (walk13a A12: the script reads it from the root)."""
    script = script_word(command, launcher)
    inside = from_root(spec, spec_path, script)
    index = command.index(script) if script else -1
    seen = spec.workspace.path
    said = []
    if inside:
        said.append(f"{script} runs as {inside}: read from where you typed it ({Path.cwd()}), given from the "
                    f"workspace's root, where every node starts ({seen})")
    args = {word: from_root(spec, spec_path, word) for word in command[index + 1:]}
    args = {word: path for word, path in args.items() if path}
    if args:
        named = ", ".join(f"{word} is {path}" for word, path in args.items())
        said.append(f"the script's arguments are passed as typed, and the script runs in the workspace's root "
                    f"({seen}), not where you typed them ({Path.cwd()}): from there {named} (give "
                    f"{'it' if len(args) == 1 else 'them'} so, if the script opens {'it' if len(args) == 1 else 'them'} "
                    "as a path)")
    fixed = [*command[:index], inside, *command[index + 1:]] if inside else command
    return fixed, "; ".join(said)


def from_root(spec, spec_path: Path, word: str) -> str:
    """The path from the workspace's root of the file ``word`` names as the shell reads it here (from the current
    folder, ``..`` as the shell takes it, or an absolute path of this machine), when that file is inside the
    workspace and its path from the root is not ``word`` itself: the nodes start in the root, so they read ``word``
    as another file (walk10 C10; walk13a A12). "" otherwise (an option, a path of the nodes' own, a file not here).
    The one reading of a typed path: run's script and exec's words."""
    import os
    import posixpath

    if not word or word.startswith("-") or "\0" in word or posixpath.isabs(word) and word.startswith(
            spec.workspace.path.rstrip("/") + "/"):
        return ""
    folder = workspace_folder(spec, spec_path)
    here = Path(os.path.abspath(Path.cwd() / word))  # the path as typed, `..` taken as the shell takes it
    try:
        inside = here.relative_to(folder).as_posix()
        found = here.is_file()
    except (ValueError, OSError):
        return ""
    if not found or inside == posixpath.normpath(word):
        return ""
    return inside


def script_word(command: List[str], launcher: str) -> str:
    """The word of ``command`` that names the script the nodes run ("" when none does: a program, ``-m``)."""
    import posixpath

    words = list(command)
    if launcher == "command":
        words = words[1:] if words and posixpath.basename(words[0]) in PYTHONS else []
    return words[0] if words else ""


def host_path_note(spec, spec_path: Path, command: List[str], launcher: str) -> str:
    """An absolute script path of this machine inside the workspace's folder (``/home/me/proj/train.py``, as tab
    completion and realpath give it): the nodes see that folder at workspace.path, and no such path exists there
    (walk7 A10). The line names the path to give instead; one of this machine outside the workspace is said too
    (the image may hold it); "" for any other script (a path in the image)."""
    import posixpath

    from nodeweave.specpath import host_folder, spec_folder

    script = script_word(command, launcher)
    if not posixpath.isabs(script) or script.startswith(spec.workspace.path.rstrip("/") + "/"):
        return ""
    folder = host_folder(spec.workspace.host_path, spec_folder(spec_path)).resolve()
    try:
        inside = Path(script).resolve().relative_to(folder).as_posix()
    except ValueError:
        if not os.path.lexists(script):
            return ""  # a path in the image (/opt/...): nothing here to compare with
        # one of this machine outside the workspace (walk14a A11: `init --script /tmp/other/train.py`, /etc/passwd
        # were taken without a word): the nodes have it only if the image does
        return (f"{script} is a path of this machine outside the workspace {folder}: the nodes see only the "
                f"workspace (at {spec.workspace.path}) and the image, so every node would fail with 'No such file' "
                f"unless the image holds {script}; to run this machine's file, copy it into the workspace and give "
                "its path there (relative to workspace.path)")
    return (f"{script} is this machine's path, and the nodes see {folder} at {spec.workspace.path}: there every "
            f"node would fail with 'No such file'; give {inside} (relative to workspace.path) or "
            f"{posixpath.join(spec.workspace.path, inside)}")


def script_inside(spec, command: List[str], launcher: str) -> Optional[tuple]:
    """(the script as given, its path inside the workspace) of the script the nodes would run, or None (a
    program, an option, a path in the image: nothing here to compare with). One that leaves the workspace is
    refused by the spec's own rule for launcher.script (exit 2): `run` asks this before any node is asked."""
    import posixpath

    script = script_word(command, launcher)
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


def _typed_in_a_subfolder(folder: Path, script: str) -> str:
    """A relative script typed in a subfolder of the workspace that holds it (``cd sub; run -- ./train.py``): the
    nodes start in the workspace's root and read it from there, another file or none; said with the path to give
    (walk7 A24). "" at the root, outside the workspace, for an absolute path or when the subfolder lacks it."""
    import os
    import posixpath

    here = Path.cwd().resolve()
    if posixpath.isabs(script) or here == folder or folder not in here.parents or not (here / script).is_file():
        return ""
    where = Path(os.path.relpath(here, folder)).as_posix()
    given = posixpath.normpath(posixpath.join(where, script))
    root = folder / posixpath.normpath(script)
    runs = f"the root's {posixpath.normpath(script)}" if root.is_file() else "nothing (the root has no such file)"
    return (f"{script} is read from the workspace's root, not from {where}/ where you are: every node would run "
            f"{runs}; give {given} to run the one here")


def script_note(spec, spec_path: Path, command: List[str], launcher: str, seen_at: Optional[str] = None,
                here: bool = False, typed: bool = False, mounted: bool = False) -> str:
    """The script the nodes would run, judged here: refused when it leaves the workspace (:func:`script_inside`);
    for one the workspace lacks, the note to print (the image may hold it), for a dry run and a real run alike;
    else "". ``here``: this machine's engine mounts the workspace (the local target, or validate of a spec with
    no hosts list): a workspace folder that does not exist is the note then, said once. ``typed`` (a command
    typed after ``--``, read from where it was typed): one typed in a subfolder that holds it is noted.
    ``mounted``: the verb starts it on the local target, whose nodes see this very folder (no image's copy)."""
    absolute = host_path_note(spec, spec_path, command, launcher)  # a path of this machine as the script (walk7 A10)
    if absolute:
        return absolute
    bare = bare_program_note(spec, spec_path, command, launcher)  # validate and init say it too (walk7 A42)
    if bare:
        return bare
    program = program_script_note(spec, spec_path, command, launcher)
    if program:
        return program
    found = script_inside(spec, command, launcher)
    if found is None:
        return ""
    script, inside = found
    from nodeweave.specpath import host_folder, spec_folder

    folder = host_folder(spec.workspace.host_path, spec_folder(spec_path)).resolve()
    typed_here = _typed_in_a_subfolder(folder, script) if typed else ""
    if typed_here:
        return typed_here
    from nodeweave.failures import leads_out_of

    out = leads_out_of(folder, inside)
    seen = seen_at or spec.workspace.path
    if out is not None and (out.is_file() or not out.exists()):  # a device or folder: its own note, below
        return (f"{script} in the workspace {folder} is a symbolic link out of it (to {out}): the nodes see only "
                f"the workspace (at {seen}), where it leads nowhere, so the run would fail with 'No such file'; copy "
                "the file into the workspace instead of linking it")
    if (folder / inside).is_file():
        return _not_python_note(script, folder / inside, launcher)
    if here and not folder.exists():  # this machine mounts it: the folder, said once, not its script (walk6 M7)
        return missing_workspace_note(spec, spec_path, f"no {script}")
    if (folder / inside).exists():  # a folder, a pipe, a device: python runs none of them (walk6, W24)
        from nodeweave.cli.habits.output import not_a_file_to_read

        return (f"{script} in the workspace {folder} {not_a_file_to_read(folder / inside)}: every node would fail "
                "to run it as the training script (launcher.script names the script file)")
    close = close_script(folder, inside)
    meant = f"; did you mean {close}, which is there?" if close else ""
    if mounted:  # this folder is mounted at workspace.path, over the image's: nothing there holds it (replay11 C10)
        return (f"{script} is not in the workspace {folder}, which every node sees at {seen} (mounted there, over "
                f"whatever the image holds): every node would fail with 'No such file'{meant}")
    unless = "the image holds it" if seen == spec.workspace.path else f"{seen} on every node holds it (no image)"
    return (f"{script} is not in the workspace {folder} (the nodes see it at {seen}): the run would fail with "
            f"'No such file' unless {unless}{meant}")


def script_refusal(spec, spec_path: Path, command: List[str], launcher: str, mounted: bool = False) -> str:
    """What every node would refuse at its start whatever the image holds, judged here, or "": the one rule by
    which validate, up and run refuse (exit 2) before anything starts what nodeweave already knows fails (issue 43
    A8, A16: said as a note, then `valid` and exit 0, or started on every node). A bare workspace file under
    launcher command (exit 127), a program or a file that is no Python under a Python launcher, a folder, pipe or
    link out of the workspace as the script; ``mounted`` (this machine's folder is mounted at workspace.path, the
    local target): a script the workspace lacks too, which no image's copy can stand in for (replay11 C10). A
    script missing from a workspace the image copies, or the workspace folder itself missing, stays a note."""
    for judged in (bare_program_note, program_script_note):
        said = judged(spec, spec_path, command, launcher)
        if said:
            return said
    found = script_inside(spec, command, launcher)
    if found is None:
        return ""
    folder = workspace_folder(spec, spec_path)
    if not folder.is_dir():
        return ""
    from nodeweave.failures import leads_out_of

    path = folder / found[1]
    out = leads_out_of(folder, found[1])
    if out is None and path.is_file():
        return _not_python_note(found[0], path, launcher)
    if out is not None or os.path.lexists(path) or mounted:
        return script_note(spec, spec_path, command, launcher, here=True, mounted=mounted)
    return ""


def _not_python_note(script: str, path: Path, launcher: str) -> str:
    """The note for a script every node would refuse at its start as no Python file (a shell script named .py, an
    ELF, a notebook), judged by the nodes' own rule (``script_kind``), or "" (replay10 B18: validate and run's
    dry run said nothing, and the nodes refused it only once started)."""
    from nodeweave.entrypoint.planning.consistency import LAUNCHERS_WITH_WORKERS, script_kind

    if launcher not in LAUNCHERS_WITH_WORKERS:
        return ""
    kind = script_kind(str(path))
    if kind is None:
        return ""
    return (f"{script} is {kind}, which {launcher} would run with Python on every rank: every node refuses it at "
            "its start (exit 2); accepted: a Python file, or launcher.type: command to run it as a program")


def close_script(folder: Path, inside: str) -> str:
    """The workspace file a missing script most likely meant, as the workspace names it, or "": the same name with
    ``.py`` (``train`` for ``train.py``, a ``python -m`` habit), else one close spelling in its folder (walk8 A6)."""
    import difflib
    import posixpath

    wanted = folder / inside
    if Path(f"{wanted}.py").is_file():
        return f"{inside}.py"
    try:
        names = sorted(p.name for p in wanted.parent.iterdir() if p.is_file())
    except OSError:
        return ""
    close = difflib.get_close_matches(wanted.name, names, n=1, cutoff=0.8)
    return posixpath.join(posixpath.dirname(inside), close[0]) if close else ""


def missing_host_folder(field: str, written: str, folder: Path, then: str) -> str:
    """The note for a folder of this machine the spec mounts into every container (``field``, as ``written``)
    that does not exist: what the engines do with a missing bind source, before ``up`` meets it."""
    return (f"{field} {written!r} is {folder}, which does not exist on this machine: a local `up` would make it "
            f"empty to mount it (podman-compose as you, docker as root), so {then}; make it (`mkdir -p "
            f"{shlex_quote(folder)}`) or set {field} to the folder meant")


def missing_workspace_note(spec, spec_path: Path, lacking: str = "nothing") -> str:
    """The note for a workspace folder this machine would mount that does not exist, else ""."""
    from nodeweave.specpath import host_folder, spec_folder

    folder = host_folder(spec.workspace.host_path, spec_folder(spec_path)).resolve()
    if folder.exists():
        return ""
    return missing_host_folder("workspace.host_path", spec.workspace.host_path, folder,
                               f"the nodes would find {lacking} at {spec.workspace.path}")


def missing_volume_notes(spec, spec_path: Path) -> List[str]:
    """One note per ``volumes[].host_path`` of this machine that does not exist (relative ones are the spec
    folder's): each is mounted as the workspace is, and meets the same refusal."""
    from nodeweave.specpath import host_folder, spec_folder

    found = []
    for index, volume in enumerate(spec.volumes):
        if volume.host_path is None:
            continue
        folder = host_folder(volume.host_path, spec_folder(spec_path)).resolve()
        if not folder.exists():
            found.append(missing_host_folder(f"volumes[{index}].host_path", volume.host_path, folder,
                                             f"the nodes would find nothing at {volume.path}"))
    return found


def shlex_quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def note_script(spec, spec_path: Path, command: List[str], launcher: str, seen_at: Optional[str] = None) -> None:
    """Judge the script the nodes would run (:func:`script_note`) and print its note on stderr, for a verb with no
    document to carry it (init); validate, up and run put the same note in their -o json too."""
    note = script_note(spec, spec_path, command, launcher, seen_at)
    if note:
        typer.echo(f"nodeweave: note: {note}", err=True)


def _finish(data: dict, fmt: str, out) -> None:
    """The run's one closing line: its summary and run folder, as the error when it failed (walk17a A22: the
    failure was said twice, the summary line and then the error repeating it without the folder)."""
    said = f"{data['summary']}; run folder {data['folder']}"
    failed = data["exit_code"] not in (0, 130)
    if not failed:
        out.print(styled(("nodeweave:", "bold"), f" {said}"), highlight=False)
    emit(data, fmt)
    if data["exit_code"] == 130:
        raise typer.Exit(130)
    if failed:
        raise NodeweaveError(said)


def _sweep_result(session, plan, fmt: str) -> None:
    rows = session.rows
    emit({"folder": str(session.sweep_folder.path), "metric": session.sweep.metric, "points": rows}, fmt)
    if any(r["exit_code"] == 130 for r in rows):
        raise typer.Exit(130)
    if session.stopped_by is not None:  # the user ended it (walk10 C22): not a failure of its points
        from nodeweave.plan import RunPhase

        left = len(plan.of_kind(RunPhase)) - len(rows)
        if any(r["exit_code"] != 0 for r in rows):
            raise NodeweaveError(session.stopped_line(left))
        return
    failed = [r for r in rows if r["exit_code"] != 0 and not r.get("stopped")]
    if failed:
        raise NodeweaveError(f"{len(failed)} of {len(rows)} sweep point(s) failed: "
                             + "; ".join(",".join(f"{k}={v}" for k, v in r["point"].items()) for r in failed))
    halted = [r for r in rows if r["exit_code"] != 0]  # `stop --node N` ended a point: stopped, not failed (C22)
    if halted:
        raise NodeweaveError(f"{len(halted)} of {len(rows)} sweep point(s) stopped by nodeweave stop: "
                             + "; ".join(",".join(f"{k}={v}" for k, v in r["point"].items()) for r in halted))


def register(app: typer.Typer) -> None:
    app.command("run", help=RUN_HELP, cls=CommandAfterDashes)(run_command)
