"""``nodeweave doctor``: the node, the entrypoint's plan for it, and graded findings.

Imports no torch (``--bench`` runs the bench worker in its own processes).
Exit codes: 0 no error finding (warnings allowed), 1 at least one error
finding (with ``--cluster``: a refusal the check-in would make, or node 0's
exchange could not be asked), 2 bad input (``--sysroot`` not a directory), 3 (``--cluster``
outside a node) the job is not up, as every verb that needs it says.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.cli.habits.clusteropts import REACH, REACH_FLAGS, reach_options
from nodeweave.cli.habits.nodes import checked_selectors, complete_node
from nodeweave.cli.habits.output import data_format, emit, is_data, output_option, table_width
from nodeweave.errors import UsageError
from nodeweave.usertext import styled

if TYPE_CHECKING:  # rich is imported where a table is drawn, not at start-up
    from rich.console import Console
    from nodeweave.tables import Table

    from nodeweave.cluster.options import ClusterOptions

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _size(nbytes: "int | None") -> str:
    if nbytes is None:
        return "unlimited"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}".replace(".0 ", " ")
    return f"{nbytes} B"


def _hardware(node) -> Table:
    from nodeweave.tables import Table

    table = Table(title=f"node {node.hostname or '?'} (sysroot {node.sysroot})", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("found")
    gpus = node.gpus
    if gpus.vendor == "none":
        table.add_row("GPUs", "none (CPU: gloo)")
    else:
        hidden = f", {gpus.visible_env} shows {gpus.count} of {len(gpus.devices)}" if gpus.visible_env else ""
        table.add_row("GPUs", f"{gpus.count}x {gpus.model} ({gpus.interconnect}){hidden}, driver {gpus.driver or '?'}")
        table.add_row("GPUDirect RDMA", gpus.gpudirect_rdma or ("not available" if node.nics else "- (no RDMA ports)"))
    active = [p for p in node.nics if p.active]
    ports = ", ".join(f"{p.name} {p.link_layer or '?'} {p.rate_gbps or '?'}G {p.state}" for p in node.nics)
    table.add_row("RDMA ports", f"{len(active)}/{len(node.nics)} active: {ports}" if node.nics else "none")
    if node.interface:
        table.add_row("toward master", f"{node.interface} {node.local_ipv4 or ''} ({node.interface_reason})")
    lim = node.limits
    table.add_row("/dev/shm", f"{_size(lim.shm_bytes)} ({lim.shm_source})")
    table.add_row("memlock", _size(lim.memlock_bytes))
    table.add_row("CPUs", f"{lim.cpus} ({lim.cpus_source})")
    if node.cloud and (node.cloud.provider or node.cloud.product):
        table.add_row("platform", f"{node.cloud.provider or '-'}: {node.cloud.vendor} {node.cloud.product}")
    return table


def _topology(topology, role=None) -> Table:
    """Who this node is, and the rank source (platform) that said so; with recovery, its role (a spare...)."""
    from nodeweave.tables import Table

    table = Table(title="this node in the job", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("found", overflow="fold")
    table.add_row("rank from", topology.platform or "nothing: a single node")
    for label, value in (("node rank", topology.node_rank), ("nodes", topology.nnodes),
                         ("master", topology.master_addr)):
        table.add_row(label, f"{value.value} ({value.source})")
    if role and (role["kind"] != "training node" or role.get("why")):  # recovery said more than the rank
        name = f"training node {role['rank']}" if role["kind"] == "training node" else role["kind"]
        table.add_row("role", name + (f" ({role['why']})" if role.get("why") else ""))
    return table


def _plan_env(plan) -> Table:
    from nodeweave.tables import Table

    table = Table(title="environment the entrypoint would launch with (NCCL/RCCL/Gloo and yours)")
    for name in ("variable", "value", "action", "why"):
        table.add_column(name, overflow="fold")
    for var in plan.env:
        if var.action != "export":
            table.add_row(var.name, var.value, var.action, var.reason)
    return table


def _findings(findings) -> Table:
    from nodeweave.tables import Table

    table = Table(title="findings")
    for name in ("severity", "code", "finding", "what to do"):
        table.add_column(name, overflow="fold")
    for f in findings:
        table.add_row(styled((f.severity, _STYLE[f.severity])), f.code, f.message, f.action)
    return table


def _cluster_table(view) -> Table:
    from nodeweave.tables import Table

    labels, rows = view.table()
    table = Table(title=f"fingerprints from {view.source} (differences from node 0 highlighted)")
    table.add_column("field", style="bold")
    for label in labels:
        table.add_column(label, overflow="fold")
    for field, values, differs in rows:
        table.add_row(field, *[styled((str(v), "bold yellow")) if d else v for v, d in zip(values, differs)])
    return table


def _cluster(fmt: str, node: "list[str]", reach: "ClusterOptions") -> None:
    from nodeweave.usertext import console as people_console

    from nodeweave.doctor.cluster import NotANode, survey_here, survey_targets

    if node:
        view = survey_targets(_asked_through(node, reach=reach))
    else:
        try:
            view = survey_here()
        except NotANode as err:  # outside the job: ask through the nodes `nodeweave up` made (exit 3: none up)
            from nodeweave.errors import EnvironmentProblem

            if not cluster_spec().is_file():
                raise EnvironmentProblem(f"no job to ask: {err}, and no nodeweave.yaml here or above names one; run "
                                         "it inside a node, or give --node KIND:NAME (podman:trainer-1, pod:llama-0, "
                                         "ssh:gpu01)") from None
            view = survey_targets(_asked_through(["all"], reach=reach))
    if is_data(fmt):
        emit({"schema": "nodeweave.doctor.cluster/1", **view.to_dict()}, fmt)
    else:
        print_cluster_view(view, people_console(width=table_width()))
    if any(f.severity == "error" for f in view.findings):
        raise typer.Exit(1)


def _dry_run(fmt: str, node: "list[str]", cluster: bool, bench: bool, sysroot: "Path | None",
             capture: "Path | None", reach: "ClusterOptions") -> None:
    """What the real doctor would start (--bench's launch), reach (--cluster's nodes) or write (--capture's
    folder, refused as the real run refuses it); the rest only reads."""
    from dataclasses import replace

    from nodeweave.cli.habits.clusteropts import show_plan
    from nodeweave.plan import Plan

    if capture is not None:
        from nodeweave.failures import writable_dir

        writable_dir(capture, "--capture", missing="new or empty; created if missing")  # as _capture (walk8 A10)
        if capture.exists() and (not capture.is_dir() or any(capture.iterdir())):
            raise UsageError(f"--capture: {capture} is not empty; the capture goes into a new or empty folder")
        show_plan(Plan("doctor --capture", "this node", (), (
            f"would copy the files detection reads (sysfs, procfs, /etc), the GPU tools' text and the detected node "
            f"into {capture} (new or empty); reads this node, starts nothing",)), fmt)
        return

    if cluster:
        from nodeweave.doctor.cluster import NotANode, survey_here, survey_plan

        if not node:
            try:
                survey_here(_NO_ASKING)
            except NotANode:
                node = ["all"]
            else:
                show_plan(Plan("doctor --cluster", "this node", (), (
                    "asks node 0's check-in exchange with this node's variables (nodeweave-entrypoint --status "
                    "--all does the same); changes nothing",)), fmt)
                return
        targets, notes = _asked_through(node, dry_run=True, reach=reach)
        plan = survey_plan(targets)
        show_plan(replace(plan, notes=(*notes, *plan.notes)), fmt)  # what the real one would meet first (A4)
        return
    if bench:
        from nodeweave.bench.runner import bench_plan
        from nodeweave.doctor.bench_check import bench_config
        from nodeweave.entrypoint import detect

        config = bench_config(detect(sysroot=str(sysroot) if sysroot is not None else "/"))
        plan = bench_plan(config, [], Path("-"), None)
        show_plan(replace(plan, verb="doctor --bench", phases=plan.phases[:-1], notes=(
            "reads this node (sysfs, procfs), then one short all_reduce launch; writes no file",)), fmt)
        return
    show_plan(Plan("doctor", "this node", (), ("reads this node only (sysfs, procfs, /etc): nothing to start or "
                                               "reach; --bench launches, --cluster asks the nodes",)), fmt)


_NO_ASKING = None  # survey_here's environment: this process's own (only its plan is made before NotANode)


def cluster_spec() -> Path:
    """The spec whose job --cluster asks outside a node: found as every cluster verb finds it, $NODEWEAVE_SPEC
    first, else the nearest nodeweave.yaml (walk13 A2: the variable was passed over for the folder's spec)."""
    import os

    from nodeweave.cli.habits.spec_path import SPEC_ENV, find_spec

    named = os.environ.get(SPEC_ENV, "").strip()
    return find_spec(Path(os.environ[SPEC_ENV]) if named else None)


def _spec_here() -> "Path | None":
    """The spec whose folder a node named directly is judged against; None where there is none."""
    from nodeweave.errors import NodeweaveError

    try:
        return cluster_spec()
    except NodeweaveError:
        return None


def _which_nodes(node: "list[str]", on: "list[str]", cluster: bool, spec_path: "Path | None") -> "list[str]":
    """--node (and the old --on, with its note) for the mode that reads it: --cluster or --spec."""
    if on:
        from nodeweave.cli.habits.spellings import note_renamed

        note_renamed(f"doctor --on {on[0]}", f"doctor --cluster --node {on[0]}")  # --on only ever meant --cluster's
        if not cluster:
            raise UsageError("--on names the nodes of --cluster; add --cluster (or leave --on out)")
    if node and not cluster and spec_path is None:
        raise UsageError("--node names the node this machine is judged as (with --spec), or the nodes "
                         "--cluster asks through: add --spec or --cluster")
    return [*node, *on]


def _asked_through(node: "list[str]", dry_run: bool = False, reach: "ClusterOptions | None" = None):
    """The nodes --cluster asks through: KIND:NAME addresses as they are (reached with --ssh-option and
    --kube-context), indices and names of the cluster `nodeweave up` made for the nearest spec, reached as the
    reach flags say, as every verb reaches it (walk13 A8); a dry run returns (nodes, what the real one would meet)."""
    from nodeweave.cli.habits.nodes import pick_nodes, split_addresses
    from nodeweave.cluster.options import ClusterOptions
    from nodeweave.remote import RemoteOptions, parse_target
    from nodeweave.cluster.onbackend import live_nodes, require_up

    reach = reach if reach is not None else ClusterOptions()
    every = node == ["all"]  # --cluster outside a node: every node of the job the nearest spec names
    addresses, picks = ([], []) if every else split_addresses(node)
    if addresses and not (picks or every):
        refuse_cluster_flags_with_addresses(reach)
    if addresses:  # the cluster's own reach is judged by open_cluster, a flag idle for its target first (walk5 W18)
        options = RemoteOptions(ssh_options=tuple(reach.ssh_options), kube_context=reach.kube_context)
    found = [parse_target(text, options=options) for text in addresses]
    if found:  # a node named directly is judged as the job's own nodes are (walk15 A20)
        from nodeweave.cluster.identity import refuse_foreign_reached

        refuse_foreign_reached(found, _spec_here())
    absent = _unreachable_addresses(found) if dry_run else []
    if picks or every:
        from nodeweave.cli.habits.clusteropts import open_cluster

        _, backend, _ = open_cluster(cluster_spec(), reach, dry_run=dry_run)
        picked = pick_nodes(live_nodes(backend, "ask", dry_run), picks, backend, "ask")
        if dry_run:
            from nodeweave.cli.habits.clusteropts import would_fail

            met = would_fail(backend, picked, "ask", "doctor --cluster")  # "no node to ask for its fingerprint"
            return [*found, *picked], [*absent, *met]
        require_up(backend, picked, "ask")  # nothing up: "<job> is not up ... `nodeweave up`", exit 3, as every verb
        found += picked
    return (found, absent) if dry_run else found


def _unreachable_addresses(targets) -> "list[str]":
    """A dry run's first line for each KIND:NAME that is not there (no such container, pod or host), as sync's dry
    run says it (walk8 A4): one harmless ``true`` through the target, the way the real doctor reaches it; each ends
    the dry run with the real exit, 1 (walk18a A7)."""
    import subprocess

    from nodeweave.plan import foretold

    lines = []
    for target in targets:
        try:
            out = subprocess.run(target.exec_argv(["true"], stdin=False), capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            lines.append(foretold("doctor --cluster", 1, f"{target.label}: no answer within 30s"))
            continue
        except OSError as err:
            lines.append(foretold("doctor --cluster", 1, f"{target.label}: cannot run "
                                  f"{target.tool or 'its tool'}: {err.strerror}"))
            continue
        if out.returncode != 0 and target.unreachable(out.returncode, out.stderr):
            said = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
            lines.append(foretold("doctor --cluster", 1, f"{target.label}: {said}"))
    return lines


def print_cluster_view(view, console: Console) -> None:
    """The fingerprints side by side, then the findings and a one-line count (also ``nodeweave status``'s)."""
    if view.nodes:
        console.print(_cluster_table(view))
    if view.findings:
        console.print(_findings(view.findings))
    errors = sum(f.severity == "error" for f in view.findings)
    console.print(styled(("errors found", "bold red") if errors else ("no errors", "green"),
                         f": {errors} error(s), {len(view.findings) - errors} warning(s) over {len(view.nodes)} node(s)"))


# doctor's two modes besides judging this machine, what each is, and the flags it reads (-o, --json and --dry-run:
# every mode): any other flag given with one does nothing there and is refused, exit 2, naming the mode (walk5 W63,
# W64: `--cluster --sysroot DIR` and `--capture DIR --bench` were dropped without a word).
# The reach flags (clusteropts.REACH_FLAGS), read by --cluster alone: how it reaches the nodes of the cluster `up` made.
REACH_FLAG_NAMES = {{"host": "hosts", "ssh_option": "ssh_options"}.get(param, param): option.param_decls[0]
                    for param, _, option in REACH_FLAGS}  # {ClusterOptions field: flag}
MODES = {"--cluster": ("asks the job's nodes", ("--node", "--on", *REACH_FLAG_NAMES.values())),
         "--capture": ("copies the files detection reads on this machine, as they are", ())}
# What each flag a mode may not read does, for the refusal's words.
JUDGES_THIS_MACHINE = {"--sysroot": "reads a captured tree in place of this machine",
                       "--bench": "runs a short all_reduce from this machine",
                       "--spec": "judges this machine as a node of the spec",
                       "--node": "names the node --spec judges this machine as, or the nodes --cluster asks",
                       "--on": "names the nodes --cluster asks",
                       "--capture": "copies this machine's files", "--cluster": "asks the job's nodes",
                       **{flag: "picks how --cluster reaches the nodes of the cluster `nodeweave up` made"
                          for flag in REACH_FLAG_NAMES.values()}}


def reach_given(reach: "ClusterOptions") -> "dict[str, bool]":
    """{reach flag: whether it was typed}, as doctor's modes judge flags."""
    return {flag: bool(getattr(reach, field)) for field, flag in REACH_FLAG_NAMES.items()}


def refuse_cluster_flags_with_addresses(reach: "ClusterOptions") -> None:
    """--cluster --node KIND:NAME names the nodes itself: a reach flag that picks the cluster (all but --ssh-option
    and --kube-context, which reach the addresses too) would do nothing there, so it is refused, exit 2."""
    for field, flag in REACH_FLAG_NAMES.items():
        if field not in ("ssh_options", "kube_context") and getattr(reach, field):
            raise UsageError(f"{flag} does nothing with --node KIND:NAME only: {flag} picks how --cluster reaches the "
                             "nodes of the cluster `nodeweave up` made, and KIND:NAME names a node itself; give "
                             f"{flag} with --node's indices or names (or no --node: every node), or leave it out")


def refuse_idle_flags(given: "dict[str, bool]") -> None:
    """A flag given with --cluster or --capture that the mode does not read: one line, exit 2, before anything
    is read, asked or written."""
    for mode, (what, reads) in MODES.items():
        if not given.get(mode):
            continue
        for flag, said in given.items():
            if said and flag != mode and flag not in reads:
                raise UsageError(f"{flag} does nothing with {mode}: {mode} {what}, and {flag} "
                                 f"{JUDGES_THIS_MACHINE[flag]}; leave one of them out")
    for flag in REACH_FLAG_NAMES.values():  # read by --cluster alone (walk13 A8)
        if given.get(flag) and not given.get("--cluster"):
            raise UsageError(f"{flag} does nothing without --cluster: it {JUDGES_THIS_MACHINE[flag]}, and doctor "
                             "without --cluster judges this machine; add --cluster, or leave it out")


def gpus_in_words(text: str) -> str:
    """The capture's ``"<count> x <model>"`` in words: "no GPU found", "8 GPUs (NVIDIA H100 80GB HBM3)"."""
    count, _, model = text.partition(" x ")
    if count.strip() in ("", "0"):
        return "no GPU found"
    return f"{count.strip()} GPU{'' if count.strip() == '1' else 's'} ({model.strip()})"


def _capture(folder: Path, fmt: str = "table") -> None:
    from nodeweave.entrypoint.snapshot import capture
    from nodeweave.errors import UsageError
    from nodeweave.failures import writable_dir

    writable_dir(folder, "--capture", missing="new or empty; created if missing")  # --out's rule (walk6 M5)
    try:
        provenance = capture(str(folder))
    except ValueError as err:
        raise UsageError(f"--capture: {err}") from None
    except OSError as err:  # what is accepted, as `render --out /dev/null` says (walk2 U6)
        raise UsageError(f"--capture {folder}: {err.strerror or err}; accepted: a folder to write the capture into "
                         "(new or empty; created if missing)") from None
    gpus = gpus_in_words(provenance["gpus"])
    typer.echo(f"captured {provenance['paths_read']} path(s) that detection reads ({gpus}) into {folder}; "
               f"GPU tool text: {', '.join(provenance['tools']) or 'none found'}. Read it back with "
               f"nodeweave doctor --sysroot {folder}", err=is_data(fmt))
    emit({"schema": "nodeweave.doctor.capture/1", "folder": str(folder), **provenance}, fmt)


def note_spec_not_read() -> None:
    """doctor without --spec judges this machine alone, by its own variables: the one verb that finds no spec by
    itself (a node has its variables, and a team folder's spec is not this machine). A spec it would otherwise be
    taken to read, $NODEWEAVE_SPEC or the nearest nodeweave.yaml, is named once on stderr with the --spec to type
    (walk13 A2: both were passed over without a word, while every other verb reads them)."""
    import os
    import sys

    from nodeweave.cli.habits.spec_path import SPEC_ENV, SPEC_NAME, spec_above

    named = os.environ.get(SPEC_ENV, "").strip()
    if named:
        unread, source = named, f"${SPEC_ENV} ({named})"
    else:
        here = Path(SPEC_NAME)
        found = here if here.is_file() else spec_above(Path.cwd())
        if found is None:
            return
        unread = found if found == here else Path(os.path.relpath(found))
        source = f"{unread}" + (" here" if found == here else ", the spec above this folder")
    print(f"nodeweave: note: doctor judged this machine alone, by its own variables: {source} is read only with "
          f"--spec ({'nodeweave doctor --spec ' + str(unread)} judges it as node 0 of that spec)", file=sys.stderr)


def spec_env(spec_path: Path, node: "list[str]") -> "dict[str, str]":
    """The variables the node ``--node`` picks (default node 0) of the spec starts with, under this shell's own
    (which win, as in compose)."""
    import os

    from nodeweave.cli.habits.nodes import picked_indices
    from nodeweave.resolve import resolve
    from nodeweave.spec import load_spec

    spec = load_spec(spec_path)
    containers = spec.nodes.max + spec.recovery.spare_nodes  # a spare is a node of the job too (docs/recovery.md)
    shown = f"nodes: {spec.nodes.max if spec.recovery.enabled else spec.nodes}" + (f", recovery.spares: {spec.recovery.spare_nodes}" if spec.recovery.spare_nodes
                                      else "")
    picked = picked_indices(node, containers, f"{spec_path} ({shown}) without a cluster") or [0]
    if len(picked) != 1:
        raise UsageError(f"--node {','.join(node)}: this machine is judged as one node of {spec_path}; give one index")
    rank = picked[0]
    master = spec.hosts[0] if spec.hosts else f"{spec.name}-0"
    env = {**spec.env, **dict(resolve(spec).contract_env("compose")), "NODEWEAVE_NNODES": str(spec.nodes),
           "NODE_RANK": str(rank), "MASTER_ADDR": master, "MASTER_PORT": str(spec.launcher.master_port),
           "NODEWEAVE_JOB_ID": spec.name}  # the job id the nodes read from their names <name>-<i>
    return {**env, **os.environ}


@reach_options
def doctor(
    json_output: bool = typer.Option(False, "--json", help="print the diagnosis as JSON (schema nodeweave.doctor/1; "
                                     "with --capture its summary, nodeweave.doctor.capture/1; as -o json)"),
    output: str = output_option(),
    sysroot: Optional[Path] = typer.Option(None, "--sysroot", help="read sysfs/procfs under this root "
                                           "(a captured tree), like nodeweave-entrypoint --sysroot"),
    bench: bool = typer.Option(False, "--bench", help="also run a short all_reduce through the entrypoint and "
                               "torchrun, checking results and bus bandwidth (in a multi-node job: on every "
                               "node at once, as training starts)"),
    cluster: bool = typer.Option(False, "--cluster", help="every node of the running job side by side, as node 0's "
                                 "check-in exchange sees them; differences highlighted, the check-in's refusals "
                                 "as errors. Asked from here with this machine's variables (inside a node), through --node, "
                                 "or else through every node of the cluster `nodeweave up` made (none up: exit 3; "
                                 "a KIND:NAME container or pod another folder's `up` made: exit 3, naming that "
                                 "folder)"),
    on: Optional[List[str]] = typer.Option(None, "--on", hidden=True, help="Deprecated: --node KIND:NAME"),
    capture: Optional[Path] = typer.Option(None, "--capture", metavar="DIR", help="copy exactly the files "
                                           "detection reads (sysfs, procfs, /etc) into DIR, a tree --sysroot "
                                           "reads, plus nvidia-smi/amd-smi text and the detected node under "
                                           "DIR/capture/: attach it to a bug report (DIR must be new or empty)"),
    spec_path: Optional[Path] = typer.Option(None, "--spec", help="judge this node as node --node of this spec: "
                                             "its node count, launcher, env and master (variables set here win). "
                                             "Only when given: unlike every other verb, doctor finds no spec by "
                                             "itself ($NODEWEAVE_SPEC and a nodeweave.yaml here are not read; a "
                                             "note names them)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print what --bench would launch and what --cluster "
                                 "would run on each node; start nothing, ask no node"),
    node: List[str] = typer.Option([], "--node", metavar="NODE", callback=checked_selectors, autocompletion=complete_node,
                                   help="As every verb's --node (an index, a range, a name or KIND:NAME); with "
                                        "--spec, the one node this machine is judged as (default: 0); with "
                                        "--cluster, the nodes to ask through (default: every node)"),
    reach: "ClusterOptions" = REACH,
) -> None:
    """Check this node for NCCL/RCCL settings, limits and hardware that hurt multi-node training.

    --node, as in every verb: with --spec, the one node of the spec this machine is judged as (default: 0);
    with --cluster, the nodes to ask through (KIND:NAME addresses, or indices and names of the cluster
    `nodeweave up` made; default: every node).

    --target and the other reach flags, with --cluster only: how the nodes of the cluster `nodeweave up`
    made are reached, as in every verb (--kube-cli kubectl for an OpenShift spec's pods on a machine without
    oc); they ask through that cluster even inside a node.
    """
    from nodeweave.doctor import diagnose
    from nodeweave.usertext import console as people_console

    fmt = data_format(json_output, output)
    refuse_idle_flags({"--cluster": cluster, "--capture": capture is not None, "--sysroot": sysroot is not None,
                       "--bench": bench, "--spec": spec_path is not None, "--node": bool(node), "--on": bool(on),
                       **reach_given(reach)})
    node = _which_nodes(node, on or [], cluster, spec_path)
    if cluster and not node and any(reach_given(reach).values()):
        node = ["all"]  # the reach flags name the cluster `up` made: ask through it, not this node's exchange
    if dry_run:
        _dry_run(fmt, node, cluster, bench, sysroot, capture, reach)
        return
    if cluster:
        _cluster(fmt, node, reach)
        return
    if capture is not None:
        _capture(capture, fmt)
        return
    env = spec_env(spec_path, node) if spec_path is not None else None
    diagnosis = diagnose(str(sysroot) if sysroot is not None else None, env)
    if spec_path is None:  # once this machine is judged: a refusal (a bad --sysroot) stays its one line
        note_spec_not_read()
    if bench:
        from nodeweave.doctor.bench_check import run_bench
        from nodeweave.doctor.findings import sort_findings

        diagnosis.bench, found = run_bench(diagnosis.node)
        diagnosis.findings = sort_findings(diagnosis.findings + found)
    if is_data(fmt):
        emit(diagnosis.to_dict(), fmt)
    else:
        console = people_console(width=table_width())
        console.print(_hardware(diagnosis.node))
        if diagnosis.plan is not None:
            if diagnosis.plan.topology is not None:
                console.print(_topology(diagnosis.plan.topology, diagnosis.plan.role))
            console.print(_plan_env(diagnosis.plan))
        if diagnosis.findings:
            console.print(_findings(diagnosis.findings))
        counts = diagnosis.counts()
        verdict = ("errors found", "bold red") if diagnosis.exit_code else ("no errors", "green")
        console.print(styled(verdict, f": {counts['error']} error(s), {counts['warning']} warning(s), "
                                      f"{counts['info']} note(s)"))
    if diagnosis.exit_code:
        raise typer.Exit(diagnosis.exit_code)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
