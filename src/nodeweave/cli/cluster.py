"""``nodeweave up``, ``down``, ``status``, ``stop``, ``shell``, ``logs``: the command line over ``nodeweave.cluster``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.entrypoint.planning.contract import digits  # ASCII digits only (walk13 A22)
from nodeweave.cli.habits.coercion import seconds_option

from nodeweave.cli.habits.base import find_spec
from nodeweave.cli.habits.clusteropts import (DRY_RUN, JSON, REACH, SPEC, console, default_mode,
                                              foretold, open_cluster, reach_options, remember_up, say, show_plan,
                                              spec_command)
from nodeweave.cli.habits.nodes import NODE, checked_selectors, complete_node, pick_nodes, pick_one, run_folder_indices
from nodeweave.cli.habits.output import (check_image_reference, complete_run_ids, data_format, emit, emit_names, is_data,
                                        output_option, runs_folder_read, runs_parent, spec_job, tell)
from nodeweave.errors import EXIT_ENVIRONMENT, EXIT_FAILURE, NodeweaveError, UsageError

if TYPE_CHECKING:
    from nodeweave.cluster.options import ClusterOptions


UP_TIMEOUT = 300.0  # seconds every node has to come up, unless --timeout says


@reach_options
def up_command(
    hold: Optional[bool] = typer.Option(None, "--hold/--run", help="Hold: nodes plan and wait for `nodeweave run`; "
                                        "run: they start the spec's job (default: the spec's launcher.mode); not "
                                        "on Slurm or bare hosts, which start nothing in a mode"),
    image: Optional[str] = typer.Option(None, "--image", help="compose targets (local, "
                                        "hosts with an engine): the image every node runs (NODEWEAVE_IMAGE), e.g. a "
                                        "<variant>-<sha> tag"),
    timeout: Optional[float] = seconds_option(typer.Option(None, "--timeout", min=1, help="Seconds every node has to come up "
                                            "(default 300; read only while up waits: not with --no-wait)")),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait until every node is up (live table)"),
    check: bool = typer.Option(False, "--check", help="Then `nodeweave check` the nodes (exit 5 when it names "
                               "a node or link; the nodes stay up): held ones (with --hold) where nodes hold, the "
                               "allocation's or the hosts on Slurm and bare hosts"),
    force_recreate: bool = typer.Option(False, "--force-recreate", help="Recreate nodes that are already up as "
                                        "this up would start them (local target; elsewhere up recreates every "
                                        "node anyway): what sync and exec put outside the mounts is lost"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, dry_run: bool = DRY_RUN, as_json: bool = JSON,
    output: str = output_option(),
) -> None:
    """Bring the cluster up: compose on this machine, compose over ssh on every host, or apply -k on Kubernetes."""
    spec_path = find_spec(spec_path)
    from nodeweave.cli.check import CheckSession, default_check
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.onbackend import refuse_idle_up_flags

    fmt = data_format(as_json, output)

    def judge_up_flags(backend) -> None:
        """up's own flags, exit 2 before the tools or the cluster are asked (the dry run judges them so too)."""
        refuse_idle_up_flags(backend, hold, image, check, wait, up_mode(backend.spec), force_recreate)
        if image is not None:  # judged once it is known to do something here (--image for slurm is idle first)
            check_image_reference(image, "--image")
        backend.judge_tree()

    def up_mode(spec) -> str:
        return default_mode(spec) if hold is None else ("hold" if hold else "run")

    spec, backend, checked = open_cluster(spec_path, reach, dry_run=dry_run, for_up=True,
                                          judge_backend=judge_up_flags)
    refuse_unwritable_state(backend.spec_dir, spec.name)
    mode = up_mode(spec)
    from nodeweave.cli.run import past_this_machine

    # the spec's job starts with the nodes: its processes judged as `run` judges them (walk13 A25)
    crowded = past_this_machine(backend, spec.containers, None, spec, spec_path) if mode == "run" else ""
    if crowded and not dry_run:
        raise UsageError(f"{crowded}; nothing was started or recorded")
    out = console(stderr=is_data(fmt))
    timeout = UP_TIMEOUT if timeout is None else timeout
    plan = backend.plan_up(mode, image, timeout, wait,
                           (lambda nodes: default_check(nodes, spec, spec_path)) if check else None)
    absent = backend.image_problem(image)  # a localhost/ image not built here: nothing started would find it
    if absent and not dry_run:  # after the plan's own refusals (exit 2: a state file in the way), before any write
        from nodeweave.errors import EnvironmentProblem

        raise EnvironmentProblem(absent)
    from nodeweave.cluster.onbackend import recreate_note, unchanged_line, up_over
    from nodeweave.cluster.pullable import pull, pull_note, to_pull

    # an image the engine's store lacks, from a registry: the real up pulls it first (walk17a A18)
    fetch = to_pull(plan.image, getattr(backend, "detected", None)) if backend.target == "local" else None

    busy, live = up_over(backend)  # a run in progress: up would recreate the nodes under it (walk10 C8)
    live = live if backend.recreates_nodes else []
    unchanged = bool(live) and not force_recreate and backend.up_unchanged(live, mode, image)
    # the run's guard is for an up that recreates the nodes: one that recreates nothing kills nothing (walk18a A3)
    left_running = busy if unchanged else None
    busy = None if unchanged else busy
    if not dry_run:  # what up was told and makes, once its flags are taken (a dry run writes nothing)
        from nodeweave.cluster.onbackend import unreached_hosts, unreached_line
        from nodeweave.errors import EnvironmentProblem
        from nodeweave.jobstate import hold_job

        hold_job(backend.spec_dir, spec.name, "up")  # one up or down of the job at a time (walk14a A20)

        unreached = unreached_hosts(backend, backend.nodes(for_up=True))
        if unreached:  # bare hosts ssh cannot reach: nothing starts there, so nothing is recorded (walk9 A36)
            raise EnvironmentProblem(unreached_line(backend, unreached) + "; nothing was started or recorded")
        if busy:
            raise EnvironmentProblem(busy + "; nothing was started or recorded")
        if fetch:  # before any node is removed or recreated: a typo of the image takes nothing down (walk17a A18)
            out.print(f"pulling image {fetch} ({backend.engine}'s store lacks it) before any node is touched",
                      highlight=False, markup=False)
            failed = pull(fetch, backend.engine)
            if failed:
                raise EnvironmentProblem(failed + "; nothing was started or recorded, and no node was touched")
        remember_up(spec_path, spec, checked, backend)
    from dataclasses import replace

    from nodeweave.cli.run import missing_volume_notes, missing_workspace_note, script_note, script_refusal

    # the nodes start the spec's script: one the workspace lacks is noted, as `run` notes it, once the plan is
    # made (a refusal before it, an image, a flag, is the one line a mistake gets)
    # a `~/...` workspace on bare hosts is each host's own home, which this machine's ~ says nothing of (walk8 A20)
    elsewhere = backend.target == "hosts" and str(spec.workspace.host_path).startswith("~")
    missing = "" if elsewhere else script_note(spec, spec_path, [spec.launcher.script], spec.launcher.type,
                                               backend.workspace_seen_at, here=backend.target == "local") \
        if mode == "run" else missing_workspace_note(spec, spec_path) if backend.target == "local" else ""
    certain = script_refusal(spec, spec_path, [spec.launcher.script, *spec.launcher.args], spec.launcher.type,
                             mounted=backend.target == "local") \
        if mode == "run" and not elsewhere else ""  # every node would fail it (replay11 C10, issue 43 A8)
    if certain and not dry_run:
        raise UsageError(f"{certain}; nothing was started or recorded")
    unpullable = _unpullable(backend, plan)
    mounted = missing_volume_notes(spec, spec_path) if backend.target == "local" else []  # the engine mounts them
    said = [*([foretold("up", 2, crowded)] if crowded else []),  # the real up refuses it first
            *([foretold("up", 2, certain)] if certain else [f"note: {missing}"] if missing else []),
            *(f"note: {note}" for note in mounted),
            *([f"warning: {unpullable}"] if unpullable else []),
            *([f"note: {pull_note(fetch, backend.engine)}"] if fetch and dry_run else [])]
    plan = replace(plan, notes=(*plan.notes, *said))  # in the plan the real run executes too, as its dry run shows it
    if unchanged:  # compose's habit: nodes already up as this up starts them are left running (walk12c C7)
        from nodeweave.plan import CommandsPhase, FilesPhase

        plan = replace(plan, phases=tuple(p for p in plan.phases if not isinstance(p, (FilesPhase, CommandsPhase))),
                       notes=(*plan.notes, unchanged_line(backend, live),
                              *([f"{_runs_said(left_running)}: nothing recreated, so it goes on"]
                                if left_running else [])))
    elif live:  # what recreating the nodes up now loses, said before it is done (walk12c C7)
        plan = replace(plan, notes=(*plan.notes, f"warning: {recreate_note(backend, live, force_recreate)}"))
    # a dry run (the real up refused above): a run in progress is certain, the real exit; an image not built yet is
    # a step not taken yet, as nothing up is for the other verbs: a note, exit 0
    if absent:
        plan = replace(plan, notes=(*plan.notes, f"the real up would end with exit 3: {absent}"))
    if busy:
        plan = replace(plan, notes=(*plan.notes, foretold("up", 3, busy)))
    if dry_run:
        show_plan(plan, fmt, backend, None, "up")  # the engine or tool missing; the nodes need not be up
        return
    # the notes in ``said`` are the plan's: execute says them once, as every executed plan's (replay11 R5)
    # the nodes once the plan's phases before the check ran (a Slurm allocation's are Slurm's to pick)
    checks = CheckSession(lambda: backend.nodes(for_up=True), spec, spec_path, backend, out,
                          then="the nodes stay up (`nodeweave down` takes them down)")
    job = Execution(backend.spec_dir, say(out), out, backend, checks=checks)
    try:
        execute(plan, job)
    finally:  # the nodes the wait saw up, as data, even when the check after it named one
        for waited in job.outcomes.get("wait", []):
            emit(waited, fmt)
    _say_metrics(backend, out, training=mode == "run")


def _runs_said(busy: str) -> str:
    """The runs in progress of ``busy_line``'s refusal of ``up``, without its consequence."""
    from nodeweave.cluster.onbackend import BUSY_CONSEQUENCE

    return busy.split(f": {BUSY_CONSEQUENCE['up']}")[0]


def _say_metrics(backend, out, training: bool) -> None:
    """Where node 0's /metrics is published on this machine (walk12c C12: the engine picks a new host port at
    every up that recreates node 0, and nothing said which): ``up`` and ``status`` print it on stderr.
    ``training``: a job runs on the nodes (run mode, or a `nodeweave run` in progress); node 0 serves its metrics
    only then, so nodes that hold are told so (walk14 A10: the URL was given while nothing answered there)."""
    url = backend.metrics_url()
    if url:
        why = "" if backend.spec.metrics.host_port else (
            " (node 0's, on a port the engine picked at up: a static scrape config wants metrics.host_port in the "
            "spec; `nodeweave top` finds it by itself)")
        when = "" if training else (
            f"; {HOLDING_METRICS}")
        out.print(f"metrics: {url}{why}{when}", highlight=False, markup=False)


# what node 0's metrics port is while the nodes hold: its entrypoint serves it while a job runs (walk14 A10)
HOLDING_METRICS = "answers only while a run is in progress: the nodes hold now (`nodeweave run` starts one)"


def _refuse_unreached_down(backend, spec_path: Path) -> None:
    """``down`` on bare hosts ssh reaches none of: exit 3 with status's line, the record kept (a name that does not
    resolve now may again: a DNS outage), and the way out named for hosts gone for good (walk9 A36: a failed
    ``up -t hosts`` left a record no verb could clear, and the refusal of another ``up`` named none)."""
    from nodeweave.cluster.onbackend import unreached_hosts, unreached_line
    from nodeweave.errors import EnvironmentProblem
    from nodeweave.jobstate import STATE_DIR

    nodes = backend.nodes(dry_run=True)
    unreached = unreached_hosts(backend, nodes)
    if not unreached or len(unreached) < len({getattr(n.remote, "host", n.remote.name) for n in nodes}):
        return
    record = backend.spec_dir / STATE_DIR / backend.spec.name / "cluster.json"
    raise EnvironmentProblem(unreached_line(backend, unreached) + f"; nothing was taken down and {record} is kept; "
                             "if those hosts are gone for good (or were a typo), remove that file: it only records "
                             "what up was told and made, and nothing on the hosts is touched")


def refuse_unwritable_state(spec_dir: Path, job: str) -> None:
    """``up`` writes ``.nodeweave/<job>/`` beside the spec (what it was told, the compose file, the job's token):
    in a folder nothing can be written to, the real up fails there, so it and its dry run refuse first, exit 2
    (walk8 A10: a read-only NFS export, a snapshot)."""
    from nodeweave.failures import unwritable
    from nodeweave.jobstate import STATE_DIR

    problem = unwritable(spec_dir / STATE_DIR / job)
    if problem:
        raise UsageError(f"up writes {STATE_DIR}/{job}/ beside the spec (its record, the compose file, the job's "
                         f"token), but {problem}; accepted: a spec folder you can write (a copy of this one)")


def _unpullable(backend, plan) -> Optional[str]:
    """The note for an image a remote target's nodes cannot pull (``localhost/...``): the image the plan runs
    (``Plan.image``: a pinned digest, --image, the spec's; none on bare hosts or Slurm's shared venv)."""
    from nodeweave.cluster.pullable import unpullable_note

    return unpullable_note(plan.image, backend.target)


@reach_options
def down_command(
    delete_claims: bool = typer.Option(False, "--delete-claims", help="kubernetes: also delete the workspace claims "
                                       "(synced code, checkpoints)"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, dry_run: bool = DRY_RUN,
    as_json: bool = JSON, output: str = output_option(),
) -> None:
    """Take down what `up` made (keeps Kubernetes claims unless --delete-claims).

    Refused (exit 3) while a run is in progress on the nodes: removing them would SIGKILL it with no grace; `nodeweave
    stop` ends it first (SIGTERM, the grace), then `nodeweave down`."""
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.options import forget_allocation
    from nodeweave.plan import StopPhase
    from nodeweave.cluster.recorded import renamed_down

    fmt = data_format(as_json, output)
    spec, backend, _ = open_cluster(spec_path, reach, dry_run=dry_run,
                                    extra={"--delete-claims": (delete_claims, ("kubernetes",))},
                                    judge_backend=lambda backend: backend.judge_tree())
    from nodeweave.jobstate import refuse_while_changing

    # an up of another process holding the job's lock: its nodes are not made yet, so "nothing to take down" would
    # be said while the job comes up (walk18a A14); refused as every verb that uses the nodes is, its dry run too
    refuse_while_changing(backend.spec_dir, spec.name, "down")
    out = console(stderr=is_data(fmt))
    renamed = renamed_down(spec, spec_path)  # what up made under the spec's old name: down takes it down too
    idle = backend.nothing_up_line()  # after a rename, only the old name's half then (walk15 A16)
    if idle is not None and not renamed:  # nothing to take down: said, nothing rendered or written, exit 0 (a dry
        # run the same); the token a node removed by hand left is taken back still
        from dataclasses import replace

        taken_back = backend.plan_down(delete_claims, (), idle)
        taken_back = replace(taken_back, notes=(*([backend.target_note] if backend.target_note else []),
                                                *taken_back.notes))
        if dry_run:
            show_plan(taken_back, fmt)
            return
        execute(taken_back, Execution(backend.spec_dir, say(out), out, backend))  # says the idle line, a note
        forget_allocation(spec_path, spec.name)
        emit({"job": spec.name, "where": backend.where, "down": True, "was_up": False, "also": []}, fmt)
        return
    plan = backend.plan_down(delete_claims, renamed, idle)
    # a run in progress: down would SIGKILL it with the nodes, as up's recreate would (walk14a A18); refused the
    # same way (exit 3, naming the run and `nodeweave stop`), before anything is taken down. Bare hosts' down is
    # itself a stop (SIGTERM, the grace): nothing to refuse there.
    from nodeweave.cluster.onbackend import up_over

    busy = None if plan.of_kind(StopPhase) or idle is not None else up_over(backend, "down")[0]
    if dry_run:
        from dataclasses import replace

        plan = replace(plan, notes=(*plan.notes, *_unreached_notes(backend, "down"),
                                    *([foretold("down", 3, busy)] if busy else [])))
        show_plan(plan, fmt, backend, None, "down")
        return
    if busy:
        from nodeweave.errors import EnvironmentProblem

        raise EnvironmentProblem(busy + "; nothing was taken down")
    from nodeweave.jobstate import hold_job

    for job in [*([] if idle else [spec.name]), *(old.spec.name for old, _ in renamed)]:
        hold_job(backend.spec_dir, job, "down")  # one up or down of a job at a time (walk14a A20); none written for
        # a name nothing is up under (walk15 A16)
    if plan.of_kind(StopPhase):  # bare hosts: nothing to take down but the runs (and the marks)
        _stop(plan, backend.spec_dir, out, fmt)
        # the record ends as every target's does (walk11a A17: it stayed, and every verb still acted on the hosts)
        forget_allocation(spec_path, spec.name)
        out.print(f"{spec.name} is down ({backend.where})", highlight=False)
        return
    _refuse_unreached_down(backend, spec_path)
    execute(plan, Execution(backend.spec_dir, say(out), out, backend))
    for old, _ in renamed:
        forget_allocation(spec_path, old.spec.name)
        out.print(f"{old.spec.name} (the job's old name) is down ({old.where})", highlight=False)
    forget_allocation(spec_path, spec.name)  # the flags stay: `up` alone brings the same cluster back
    if idle is None:  # else the plan's last note said it: nothing of this name to take down
        out.print(f"{spec.name} is down ({backend.where})", highlight=False)
    emit({"job": spec.name, "where": backend.where, "down": True, **({"was_up": False} if idle else {}),
          "also": [{"job": old.spec.name, "where": old.where} for old, _ in renamed]}, fmt)


@reach_options
def status_command(
    node: List[str] = NODE,
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, as_json: bool = JSON,
    output: str = output_option(names="status"),
    fingerprints: bool = typer.Option(False, "--fingerprints", help="Also every node's check-in fingerprint side by "
                                      "side, differences highlighted (node 0's exchange while a job runs, else each "
                                      "node's --explain), as `nodeweave doctor --cluster` shows them"),
    ranks: bool = typer.Option(False, "--ranks", help="Also every rank: its collective, for how long, the verdicts"),
    stacks: bool = typer.Option(False, "--stacks", help="--ranks and every rank's stack, grouped; stops nothing"),
) -> None:
    """One row per node: up, hold or run, rank, plan hash (do all agree?), run in progress, GPU use.

    It only reads (changes nothing), so it takes no --dry-run."""
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.status import agreement, ask_ranks, gather, rank_view, status_table
    from nodeweave.cluster.status import problems as status_problems
    from nodeweave.cluster.onbackend import live_nodes

    from nodeweave.cluster.onbackend import count_changed, spec_changed

    spec, backend, _ = open_cluster(spec_path, reach)
    from nodeweave.jobstate import changing_line

    changing = changing_line(backend.spec_dir, spec.name)  # what is shown is the nodes mid-change (walk18a A14)
    every = live_nodes(backend, "fingerprint") if fingerprints else backend.nodes()
    made, changed = backend.made_count(), count_changed(backend) or spec_changed(backend)
    if made is not None and made < len(every):  # a node the spec added since up is not made, not "down" (walk15 A18)
        every = [n for n in every if n.index < made]
    nodes = pick_nodes(every, node, backend, "status")
    rows = gather(backend, nodes, spec_command(spec), say=lambda line: console(stderr=True).print(
        f"# {line}", highlight=False, markup=False))
    agree = agreement(rows)
    view = None
    answering = [n for n, r in zip(nodes, rows) if r["up"]]
    if fingerprints and answering:  # nothing up: no fingerprints to ask for, and none "refused"
        from nodeweave.doctor.cluster import survey_targets  # doctor --cluster's view, asked through the nodes

        view = survey_targets(answering)
    watch = ask_ranks([n for n, r in zip(nodes, rows) if r["up"]], stacks) if ranks or stacks else None
    extra = {**({"fingerprints": view.to_dict()} if view is not None else {}), **({"ranks": watch[0]} if watch else {})}
    renamed = list(backend.renamed)
    data = {"where": backend.where, "plans_agree": agree, "nodes": rows, **extra,
            **({"changing": changing} if changing else {}),
            **({"renamed": renamed} if renamed else {}), **({"spec_changed": changed} if changed else {})}
    fmt = data_format(as_json, output)
    unasked = not any(r.get("asked", True) for r in rows)  # the platform says every node is down
    if emit_names((r["node"] for r in rows if r["up"]), fmt):  # -o name: the nodes that answer, one a line
        pass
    elif not emit(data, fmt) and not (rows and unasked):  # then the one line below names them all, as ranges
        console().print(status_table(backend, rows, wide=fmt == "wide"))
        if view is not None:
            from nodeweave.cli.doctor import print_cluster_view

            print_cluster_view(view, console())
        for line in rank_view(watch):
            console().print(line, highlight=False, markup=False)
    for line in renamed:  # the old name's nodes still hold their GPUs: said on every status until down
        tell(f"note: {line}")
    if changed and any(r["up"] for r in rows):  # what the nodes do not see, as run and exec say it: nothing failed
        tell(f"note: {changed}")
    if changing and answering:  # none answering: the error below says it
        tell(f"note: {changing}: the nodes shown are as they stand mid-change, not what it will leave; `nodeweave "
             "status` again once it ends")
    if answering and fmt != "name":  # -o name is the names alone, quiet on stderr as kubectl's (walk18a A22)
        _say_metrics(backend, console(stderr=True), training=any(r["run"] or r["mode"] == "run" for r in rows
                                                                  if r["up"]))
    problems = status_problems(rows, spec, made)
    if rows and not answering:  # the same answer as every verb's when nothing is up: exit 3, one line
        from nodeweave.errors import EnvironmentProblem

        from nodeweave.cluster.base import start_hint
        from nodeweave.entrypoint.nodelists import noted_ranges

        said = noted_ranges((r["node"], r["platform"]) for r in rows) if unasked else "no node answers"
        unreached, every = _unreached(nodes, rows)
        if every:  # ssh reached no host: `up` cannot help, the names or the network can
            raise EnvironmentProblem(f"{spec.name} cannot be asked on {backend.where}: {unreached}")
        from nodeweave.cluster.onbackend import runs_kept

        if changing:  # not up yet, or no longer: the change decides, not "not up"
            raise EnvironmentProblem(f"{changing}: no node answers yet ({said}); `nodeweave status` again once it ends")
        raise EnvironmentProblem(f"{spec.name} is not up on {backend.where}: {said}{runs_kept(backend, 'status')}; "
                                 f"{start_hint('status', spec, backend.holds)}"  # the words of every verb that needs the job up
                                 + (f"; and {unreached}" if unreached else ""))
    refusals = sum(f.severity == "error" for f in view.findings) if view is not None else 0
    if refusals:
        problems.append(f"the fingerprints hold {refusals} refusal(s) (see the findings)")
    if problems:
        raise NodeweaveError("; ".join(problems))


def _unreached_notes(backend, verb: str) -> "list[str]":
    """What a dry run of ``verb`` says of hosts ssh cannot reach (walk8 A22: down's dry run planned its ssh commands
    to hosts whose names do not resolve, while status and sync's dry run named them): asked as status asks, only
    on bare hosts (the other targets' dry runs ask their platform through ``show_plan``)."""
    from nodeweave.cluster.onbackend import unreached_hosts
    from nodeweave.failures import unreached_hosts_line

    if backend.target != "hosts":
        return []
    unreached = unreached_hosts(backend, backend.nodes(dry_run=True))
    return [f"the real {verb} would fail there: {unreached_hosts_line(unreached, backend.remote.ssh_options)}"] \
        if unreached else []


def _unreached(nodes, rows) -> "tuple[str, bool]":
    """(the line naming the hosts ssh never reached, or "", whether it reached none): a host that answered without
    the job's container is "not up", which `up` helps; one ssh never reached is not (walk7 A39)."""
    from nodeweave.failures import ssh_unreached, unreached_hosts_line

    found = [(getattr(n.remote, "host", n.remote.name), ssh_unreached(r.get("error") or ""))
             for n, r in zip(nodes, rows)]
    unreached = list(dict.fromkeys((host, why) for host, why in found if why))
    options = nodes[0].remote.options.ssh_options if nodes else ()
    return (unreached_hosts_line(unreached, options) if unreached else ""), bool(found) and len(unreached) == len(
        {host for host, _ in found})


def _stop(plan, spec_dir: Path, out, fmt: str) -> bool:
    """Execute a stop plan; print every node's report (``-o json|yaml``: as data); False when a process outlived
    SIGKILL somewhere. A node that could not stop what it runs (a job run as its main command, a node that did not
    answer) ends the verb non-zero once every report is printed: a stop that stopped nothing there is no success."""
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.stop import report_line

    done = execute(plan, Execution(spec_dir, say(out), out))
    reports = [pair for stopped in done.outcomes.get("stop", []) for pair in stopped]
    from nodeweave.cluster.stop import mark_stopped

    mark_stopped(spec_dir / "runs", [r for _, r in reports], plan.phases[0].timeout or 0.0
                 if plan.phases else 0.0, nodes=[n.node for n, _ in reports])
    emit([{"node": n.node, **r} for n, r in reports], fmt)
    for node, report in reports:
        out.print(f"{node.node} ({node.reached_as}): {report_line(report)}", highlight=False, markup=False)
    failed = [(node, r) for node, r in reports if r.get("error")]
    if failed:
        names = ", ".join(node.node for node, _ in failed)
        raise NodeweaveError(f"stop did not stop what runs on {len(failed)} of {len(reports)} node(s) ({names}; "
                             f"each line above says why)", EXIT_ENVIRONMENT if all(r.get("main") for _, r in failed)
                             else EXIT_FAILURE)
    return not any(r.get("left") for _, r in reports)


def refuse_run_mode(backend, spec, nodes, verb: str) -> None:
    """Nodes started in run mode (``up --run``) run the spec's job as their main process, which no ``nodeweave run``
    started: ``stop`` has no run to end there, and said "no run", exit 0, while the job trained (walk10 C16). Exit 3
    naming what ends it; node 0 is asked (the nodes are started in one mode)."""
    if not backend.holds or not nodes:
        return
    from nodeweave.cluster.base import ask_status

    answer = ask_status(nodes[0], spec_command(spec))
    if answer.up and answer.data.get("mode") == "run" and not answer.data.get("runs"):
        raise NodeweaveError(
            f"{nodes[0].name} runs the spec's job as its main process (`nodeweave up --run`), which `nodeweave {verb}` "
            "does not end (it ends runs started by `nodeweave run` in held nodes): `nodeweave down` ends the job; "
            "`nodeweave up --hold` then starts nodes that `nodeweave run` and `stop` act on", EXIT_ENVIRONMENT)


@reach_options
def stop_command(
    grace: float = seconds_option(typer.Option(10, "--grace", min=0, help="Seconds between SIGTERM and SIGKILL")),
    node: List[str] = NODE,
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, dry_run: bool = DRY_RUN, as_json: bool = JSON,
    output: str = output_option(),
) -> None:
    """Stop the current run on every node: SIGTERM to all its processes, SIGKILL after the grace; a sweep of
    `run --sweep` walking its points here starts no further point (nodes started with `up --run` run the spec's job
    as their main process: `nodeweave down` ends it)."""
    spec_path = find_spec(spec_path)
    from nodeweave.cluster.verbs import stop_plan
    from nodeweave.cluster.onbackend import live_nodes, require_up

    fmt = data_format(as_json, output)
    spec, backend, _ = open_cluster(spec_path, reach, dry_run=dry_run)
    every = live_nodes(backend, "stop", dry_run)
    nodes = pick_nodes(every, node, backend, "stop")
    plan = stop_plan(backend, nodes, grace, every_node=len(nodes) == len(every))
    if dry_run:
        show_plan(plan, fmt, backend, nodes, "stop")
        return
    require_up(backend, nodes, "stop")
    refuse_run_mode(backend, spec, nodes, "stop")
    out = console(stderr=is_data(fmt))
    if len(nodes) == len(every):  # the whole run stopped: a sweep walking its points here starts no further one
        from nodeweave.cluster.stop import stop_sweeps

        for name in stop_sweeps(backend.spec_dir / "runs", grace):
            out.print(f"sweep {name}: stopped (it starts no further point)", highlight=False, markup=False)
    else:  # some nodes: their point ends (recorded stopped), the sweep is not the user's to end so (replay11 C22)
        from nodeweave.cluster.stop import sweeps_going

        for folder in sweeps_going(backend.spec_dir / "runs"):
            out.print(f"sweep {folder.name}: goes on to its next point (`stop --node` ends the point in progress, "
                      "recorded stopped; `nodeweave stop` with no --node ends the sweep too)", highlight=False,
                      markup=False)
    if not _stop(plan, backend.spec_dir, out, fmt):
        raise NodeweaveError("a process outlived SIGKILL on some node (see above)")


@reach_options
def shell_command(
    node: List[str] = typer.Option([], "--node", metavar="NODE", help="The node (default: node 0, the master): "
                                   "its index, name or address KIND:NAME, as every verb's --node", callback=checked_selectors,
                                   autocompletion=complete_node),
    command: Optional[List[str]] = typer.Argument(None, hidden=True, help="Deprecated: the node's index (now "
                                                  "--node); a command here is pointed to exec"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH, dry_run: bool = DRY_RUN,
    output: str = output_option(), as_json: bool = JSON,
) -> None:
    """An interactive shell in one node (--node; default node 0)."""
    from nodeweave.cluster.onbackend import live_nodes, require_up

    spec_path = find_spec(spec_path)
    wanted = list(node)
    words = list(command or ())
    if len(words) > 1 or words and not digits(words[0]):  # `shell -- ls -la`: a command, not the old INDEX
        from nodeweave.cli.execute import exec_line

        typed = " ".join(words)
        raise UsageError(f"`nodeweave shell` opens an interactive shell and runs no command ({typed!r}): "
                         f"`{exec_line(list(node) or ['0'], words)}` runs one, on that node")
    index = words[0] if words else None
    if index is not None:
        from nodeweave.cli.habits.spellings import note_renamed

        note_renamed(f"shell {index}", f"shell --node {index}")
        wanted.append(index)
    if not dry_run and (as_json or output != "table"):  # the verbs-without-rows rule (NO_FORMAT)
        from nodeweave.cli import no_format_line

        raise UsageError(no_format_line("shell", "--json" if as_json else "-o"))
    spec, backend, _ = open_cluster(spec_path, reach, dry_run=dry_run)
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.verbs import shell_plan

    chosen = pick_one(live_nodes(backend, "open a shell in", dry_run), wanted, "shell", backend)
    plan = shell_plan(backend, chosen)
    if dry_run:
        from nodeweave.cli.habits.output import tell
        from nodeweave.cluster.execute import shell_input_problem

        refused = shell_input_problem()  # as the real shell says it (walk15 A29), beside the plan it shares
        if refused:
            tell(f"note: the real shell would end with exit 2: {refused}")
        # exit 2 after the plan where the node is up (walk17a A9): certain, as the real shell's refusal
        show_plan(plan, data_format(as_json, output), backend, [chosen], "shell", ends=2 if refused else 0)
        return
    require_up(backend, [chosen], "shell")
    execute(plan, Execution(backend.spec_dir, say(console(stderr=True)), backend=backend, nodes=[chosen]))


@reach_options
def logs_command(
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing as lines arrive"),
    node: List[str] = NODE,
    container: bool = typer.Option(False, "--container", help="The containers' own logs even when they hold"),
    run: Optional[str] = typer.Option(None, "--run", autocompletion=complete_run_ids, help="This run instead of the latest: its id (`nodeweave runs "
                                      "ls`), a unique prefix, its folder, or last; read here, no cluster asked"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", callback=runs_folder_read, help="Where run folders are (default: runs/ beside the spec)"),
    rank: Optional[int] = typer.Option(None, "--rank", min=0, help="Only this rank's lines (the rank the launcher "
                                       "marks a line with: torchrun's \\[rank3]:, DeepSpeed's \\[Rank 3]); a training rank, not a node"),
    no_collapse: bool = typer.Option(False, "--no-collapse", help="Print the same line from several ranks once per "
                                     "rank, instead of once with their count"),
    tail: Optional[int] = typer.Option(None, "--tail", min=0, help="Start from each node's last N lines (as "
                                       "kubectl, docker and podman logs --tail), then follow with -f"),
    since: Optional[str] = typer.Option(None, "--since", help="Only lines from the last DURATION (10s, 5m, 2h, 1h30m; plain seconds, 300, too) "
                                        "or since a TIME (2026-11-30T21:00:00Z, RFC 3339) of the containers' logs, "
                                        "as docker/podman logs --since (kubectl's --since and --since-time); a "
                                        "run's log lines carry no time: --tail there"),
    spec_path: Optional[Path] = SPEC, reach: "ClusterOptions" = REACH,
) -> None:
    """Every node's output with \\[node-i rN] prefixes, the same line from N ranks once with its count: the
    containers' logs in run mode, the runs' logs in hold mode, across a recovering job's generations.

    It only reads (changes nothing), so it takes no --dry-run."""
    from nodeweave.cli.habits.spec_path import reader_spec

    spec_path = reader_spec(spec_path) if run is not None else find_spec(spec_path)  # --run: a named spec is read
    from nodeweave.cluster.base import ask_status
    from nodeweave.cluster.logs import container_logs, log_window, run_logs

    window = log_window(tail, since)  # judged before any node is asked
    from nodeweave.cluster.runfolder import latest_run, run_folder_named
    from nodeweave.cluster.onbackend import down_line, live_nodes, not_up, require_up, unreached_hosts, with_logs
    from nodeweave.errors import EnvironmentProblem

    out = console()
    if run is not None:  # a run folder on this machine: no cluster, no engine needed to read or follow it
        from nodeweave.runs.history import find_run

        from nodeweave.runs.history import one_run, sweep_not_started

        entry = find_run(runs_parent(runs_dir, spec_path, writes=False), run, spec_job(spec_path))
        waiting = sweep_not_started(entry)
        if waiting:  # no log of its own: never a header over nothing
            typer.echo(f"nodeweave: {waiting}", err=True)
            raise typer.Exit(EXIT_ENVIRONMENT)
        entry = one_run(entry)  # a sweep: the point running now, or the last one
        refuse_since_for_runs(since, f"--run {run} reads")
        indices = run_folder_indices(entry.path, node)  # judged before the header: a refusal prints no stdout (C3)
        out.print(f"# {entry.path}", highlight=False, markup=False)
        raise typer.Exit(run_logs(entry.path, indices, follow, out, rank=rank, collapse=not no_collapse, tail=tail))
    spec, backend, _ = open_cluster(spec_path, reach)
    if backend.recorded_nothing():  # walk8 A19: no allocation, yet the newest run folder was shown as the job's
        live_nodes(backend, "read logs of")  # the "not up" answer status gives (exit 3)
    folder = None
    if not container:
        held, going = not backend.holds, None
        if not held:  # node 0 says whether the nodes hold; one the platform calls down is not asked
            first = live_nodes(backend, "read logs of")[0]
            answer = None if not_up(backend, [first]) else ask_status(first, spec_command(spec))
            held = answer is not None and answer.holding
            going = ((answer.data or {}).get("runs") or [{}])[0].get("run_id") if held else None
        if held:
            parent = runs_parent(runs_dir, spec_path, writes=False)
            # the run in progress, as status shows it, before the newest folder (walk10 C2: a newer failed one)
            folder = run_folder_named(parent, going) or latest_run(parent, spec.name)
            if not backend.holds:  # nothing holds: with nothing up that is the answer (exit 3), as status says,
                # before any run folder (walk11a A17: after `down` on bare hosts the newest run's logs were shown)
                line = down_line(backend, live_nodes(backend, "read logs of"), "logs")
                if line is not None:
                    raise EnvironmentProblem(line)
            if folder is None:
                state = "the nodes hold and " if backend.holds else ""
                raise UsageError(f"{state}no run of {spec.name} is in {parent}: `nodeweave run -- SCRIPT` starts one"
                                 + (" (or --container for the containers' logs)" if backend.holds else ""))
    if folder is not None:
        refuse_since_for_runs(since, "the nodes hold, so logs reads")
        wanted = [n.index for n in pick_nodes(live_nodes(backend, "read logs of"), node, backend, "logs")] if node else []
        out.print(f"# {folder}", highlight=False, markup=False)  # once every option is judged (walk10 C3)
        raise typer.Exit(run_logs(folder, wanted, follow, out, rank=rank, collapse=not no_collapse, tail=tail))
    nodes = pick_nodes(live_nodes(backend, "read logs of"), node, backend, "logs")
    unreached = unreached_hosts(backend, nodes)
    if unreached:
        require_up(backend, nodes, "logs")
    nodes, notes = with_logs(backend, nodes)  # an exited node's log is read, never refused (walk10 C21)
    for line in notes:
        typer.echo(f"nodeweave: note: {line}", err=True)
    static = isinstance(spec.gpus_per_node, int) and not spec.recovery.enabled and not spec.nodes.elastic
    firsts = {n.name: n.index * spec.gpus_per_node for n in nodes} if static else {}  # a static job's numbering
    raise typer.Exit(container_logs(backend, nodes, follow, out, rank=rank, collapse=not no_collapse,
                                    first_ranks=firsts, window=window))


def refuse_since_for_runs(since: Optional[str], where: str) -> None:
    """``--since`` reads the engine's timestamps; a run folder's node logs carry none (exit 2, never ignored). The
    remedy is the whole command: ``--container`` added to ``--run`` is refused in turn (walk8 A13)."""
    if since is not None:
        import shlex

        whole = f"nodeweave logs --container --since {shlex.quote(since)}"  # the remedy as a command to paste
        dropped = " (--run left out: the two read different logs)" if where.startswith("--run") else ""
        raise UsageError(f"--since {since}: {where} a run folder's node logs, whose lines carry no time; accepted: "
                         f"--tail N there, or the live containers' own logs with --since: `{whole}`{dropped}")


def register(app: typer.Typer) -> None:
    for name, function in (("up", up_command), ("down", down_command), ("status", status_command),
                           ("stop", stop_command), ("shell", shell_command), ("logs", logs_command)):
        app.command(name)(function)
