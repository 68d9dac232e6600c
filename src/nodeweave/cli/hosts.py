"""``nodeweave hosts probe``: a table of what each host has, and a DeepSpeed hostfile.

Spelling, as in ``nodeweave sync``: ``--hosts-file`` is a list to read,
``--write-hostfile`` the DeepSpeed hostfile to write. ``--hostfile`` (the old
name of ``--write-hostfile``) still works for one release, with a note.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from nodeweave.entrypoint.planning.contract import digits  # ASCII digits only (walk13 A22)
from nodeweave.cli.habits.base import NodeweaveTyper
from nodeweave.cli.habits.clusteropts import KUBE_CONTEXT
from nodeweave.cli.habits.nodes import checked_selectors
from nodeweave.cli.habits.output import complete_from, data_format, emit, is_data, output_file, output_option, tell
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError
from nodeweave.usertext import styled

if TYPE_CHECKING:  # rich is imported where a table is drawn, not at start-up
    from nodeweave.tables import Table

hosts_app = NodeweaveTyper(help="Find out what GPUs, RDMA NICs and interfaces each host has.",
                           no_args_is_help=True)

_STYLE = {"ok": "green", "no-gpu": "yellow", "unreachable": "bold red", "error": "bold red"}


@hosts_app.command("probe")
def probe_command(
    node: List[str] = typer.Option([], "--node", metavar="NODE", help="A host to probe, master first (repeat, or a "
                                   "list): an ssh host \\[user@]gpu01, or an address KIND:NAME (podman:trainer-0, "
                                   "pod:llama-0, ssh+docker:gpu01/trainer), as every verb's --node", callback=checked_selectors),
    hosts: List[str] = typer.Argument(None, hidden=True, help="Deprecated: the hosts (now --node)"),
    hosts_file: Optional[Path] = typer.Option(None, "--hosts-file", help="Read the hosts from this file: one per line, master first (a DeepSpeed hostfile works too)"),
    via: Optional[str] = typer.Option(None, "--via", hidden=True, help="Deprecated: --node KIND:NAME"),
    write_hostfile: Optional[Path] = typer.Option(None, "--write-hostfile", callback=output_file, help="Write a DeepSpeed hostfile (host slots=N, master first) here"),
    old_hostfile: Optional[Path] = typer.Option(None, "--hostfile", callback=output_file, hidden=True, help="Deprecated spelling of --write-hostfile"),
    force: bool = typer.Option(False, "--force", help="Replace an existing --write-hostfile"),
    vendor: Optional[str] = typer.Option(None, "--vendor", autocompletion=complete_from("nvidia", "amd"), help="Write only the nvidia or amd hosts (a hostfile mixing both is refused)"),
    master: Optional[str] = typer.Option(None, "--master", help="Name whose route picks each host's interface (default: the first host)"),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace of the pods (--node pod:NAME, oc:NAME)"),
    container: Optional[str] = typer.Option(None, "--container", "-c", help="Container in each pod (--node pod:NAME, oc:NAME)"),
    kube_context: Optional[str] = KUBE_CONTEXT,  # the one declaration (habits/clusteropts.py)
    ssh_option: List[str] = typer.Option([], "--ssh-option", help="Extra ssh -o KEY=VALUE (repeat)"),
    jobs: int = typer.Option(16, "--jobs", "-j", min=1, max=256, help="Hosts probed at once"),
    as_json: bool = typer.Option(False, "--json", help="Print each host's detection as JSON on stdout (everything else "
                                 "goes to stderr; as -o json)"),
    output: str = output_option(),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the probe each host would get (and the hostfile "
                                 "written); reach no host"),
) -> None:
    """Ask every host at once what GPUs, RDMA NICs and interfaces it has: one row per host; exit 3 when ssh cannot
    reach a host or the Kubernetes API cannot be reached for any pod, 1 when a reached host or a container does not
    answer, or --write-hostfile has no host with a GPU to write (nothing is written then)."""
    from nodeweave.usertext import console as people_console

    from nodeweave.hosts import probe_hosts

    fmt = data_format(as_json, output)
    hostfile = _hostfile_path(write_hostfile, old_hostfile, force)
    if vendor is not None:
        from nodeweave.hosts import GPU_VENDORS

        if vendor not in GPU_VENDORS:
            raise UsageError(f"--vendor {vendor!r} is not accepted: {' or '.join(GPU_VENDORS)}")
        if hostfile is None:
            raise UsageError("--vendor picks the hosts of --write-hostfile: give --write-hostfile too")
    words = _node_words(node, hosts or [], via)
    from nodeweave.cli.habits.reachkinds import kinds_named

    _refuse_idle_flags(kinds_named(words, via or "ssh", hosts_file is not None), force, write_hostfile or old_hostfile,
                       namespace, container, ssh_option, kube_context)
    found = _targets(words, hosts_file, via or "ssh", namespace, container, ssh_option, kube_context)
    if master is not None:
        from nodeweave.remote import check_ssh_host

        check_ssh_host(master, "--master")
    from nodeweave.failures import address_tool_missing

    missing = [line for line in [address_tool_missing(found, "hosts probe --node")] if line]
    if dry_run:  # what the real probe would meet first is noted, as every dry run notes it
        from dataclasses import replace

        from nodeweave.cli.habits.clusteropts import show_plan
        from nodeweave.hosts import probe_plan

        plan = probe_plan(found, master, hostfile)
        show_plan(replace(plan, notes=(*plan.notes, *(f"the real probe would end with exit 3: {m}" for m in missing))),
                  fmt)
        return
    if missing:
        raise EnvironmentProblem(missing[0])
    console = people_console(stderr=is_data(fmt), width=_table_width())
    with console.status(f"probing {len(found)} host(s)"):
        reports = probe_hosts(found, master=master, jobs=jobs)
    if is_data(fmt):
        emit([{"host": r.target.label, "status": r.status, "error": r.error, "seconds": round(r.seconds, 3),
               "node": r.node} for r in reports], fmt)
    else:
        console.print(_table(reports))
    from nodeweave.hosts import unanswered

    problem = unanswered(reports)  # one cause, said once, exit 3 (walk9 A8); init --host says it alike
    said_once = problem is not None and str(problem).startswith("nothing probed on")  # hosts ssh never reached
    for r in reports:
        if r.error and not (said_once and r.status in ("unreachable", "error")):
            typer.echo(f"nodeweave: {r.status}: {r.target.label}: {r.error}", err=True)
    if hostfile is not None:
        _write(hostfile, reports, force, vendor)
    if problem is not None:
        raise problem


def _node_words(node: "list[str]", old_hosts: "list[str]", via: "str | None") -> "list[str]":
    """--node's hosts and addresses; the old positional hosts and --via KIND still read, with a note."""
    from nodeweave.cli.habits.nodes import words
    from nodeweave.cli.habits.spellings import note_renamed

    if old_hosts or via:
        kind = f"{via}:" if via else ""
        old = " ".join(([f"--via {via}"] if via else []) + old_hosts[:2])
        new = " ".join(f"--node {kind}{h}" for h in old_hosts[:2]) or f"--node {via}:NAME"
        note_renamed(f"hosts probe {old}", f"hosts probe {new}")
    given = words([*node, *old_hosts])
    numbers = [w for w in given if digits(w)]
    if numbers:
        raise UsageError(f"--node {numbers[0]}: hosts probe has no cluster to count in; name the host "
                         "(gpu01, user@gpu01) or its address KIND:NAME")
    return given


def _targets(hosts: "list[str]", hosts_file: "Path | None", via: str, namespace: "str | None",
             container: "str | None", ssh_option: "list[str]", kube_context: "str | None" = None) -> list:
    from nodeweave import remote
    from nodeweave.remote.discover import read_hosts_file

    via = remote.kind_class(via, "--via").kind
    where = dict(namespace=namespace, container=container,
                 options=remote.RemoteOptions(ssh_options=tuple(ssh_option), kube_context=kube_context))
    found = [remote.parse_target(h, **where) if ":" in h else remote.make_target(via, h, **where)
             for h in hosts]
    if hosts_file is not None:
        found += read_hosts_file(hosts_file, kind=via, **where)
    if not found:
        raise UsageError("no hosts: name them with --node HOST (repeat, master first) or give --hosts-file"
                         + _recorded_hosts_hint())
    remote.refuse_same_host(found)
    return found


def _recorded_hosts_hint() -> str:
    """``; the hosts `up` recorded here: --node a --node b ...`` where the nearest spec's job was brought up on bare
    hosts (what status, exec and top reach without being told; walk11 A15: the refusal never named them), else ""."""
    import shlex

    try:
        from nodeweave.cli.habits.output import spec_job
        from nodeweave.cli.habits.spec_path import find_spec
        from nodeweave.cluster.options import load_state

        spec_path = find_spec(None)
        job = spec_job(spec_path)
        recorded = load_state(spec_path, job) if job else None
    except Exception:  # noqa: BLE001 - a hint only: no readable record, no hint
        return ""
    if recorded is None or recorded.target != "hosts" or not recorded.hosts:
        return ""
    words = [*(f"--node {shlex.quote(h)}" for h in recorded.hosts),
             *(f"--ssh-option {shlex.quote(o)}" for o in recorded.ssh_options)]
    return f"; the hosts `nodeweave up` recorded for job {job} here: nodeweave hosts probe {' '.join(words)}"


def _refuse_idle_flags(kinds: list, force: bool, hostfile: "Path | None", namespace: "str | None",
                       container: "str | None", ssh_option: "list[str]", kube_context: "str | None" = None) -> None:
    """A flag that does nothing for these hosts is refused, exit 2, before any is reached (README), and before
    its value is judged or the hosts file read (walk5 W18): --force without a hostfile to replace,
    --namespace/--container with no pod among them, --ssh-option with no ssh (``kinds``: the hosts' transport
    classes, habits.reachkinds)."""
    from nodeweave.cli.habits.reachkinds import refuse_idle_transport_flags

    if force and hostfile is None:
        raise UsageError("--force does nothing without --write-hostfile (it replaces an existing hostfile): "
                         "leave it out, or give --write-hostfile FILE")
    refuse_idle_transport_flags(kinds, "hosts", namespace=namespace, container=container, ssh_options=ssh_option,
                                kube_context=kube_context)


def _hostfile_path(new: "Path | None", old: "Path | None", force: bool) -> "Path | None":
    """--write-hostfile, or the deprecated --hostfile; an existing file is refused before the slow part."""
    if new is not None and old is not None:
        raise UsageError("--hostfile is the old spelling of --write-hostfile: give only --write-hostfile")
    if old is not None:
        from nodeweave.cli.habits.spellings import note_renamed

        note_renamed(f"hosts probe --hostfile {old}", f"hosts probe --write-hostfile {old}",
                     "--hostfile reads like the input list")
    path = new or old
    if path is not None:
        from nodeweave.cli.habits.replace import refuse_foreign_file

        refuse_foreign_file(path, "--write-hostfile", "hostfile", force=force)
    return path


def _write(path: Path, reports: list, force: bool, vendor: "str | None") -> None:
    from nodeweave.hosts import deepspeed_hostfile, write_hostfile

    made = deepspeed_hostfile(reports, vendor)
    for r, why in made.skipped:
        typer.echo(f"nodeweave: warning: {r.target.label} left out of {path}: {why}", err=True)
    from nodeweave.cli.habits.replace import may_replace

    write_hostfile(path, made, force, may_replace("--write-hostfile", "hostfile", force))
    tell(f"wrote {path}: {len(made.text.splitlines())} host(s)")


def _table(reports: list) -> Table:
    from nodeweave.tables import Table

    from nodeweave.hosts import describe_nics

    table = Table(title_justify="left")
    for column in ("host", "status", "GPUs", "RDMA NICs", "interface", "slots"):
        table.add_column(column, no_wrap=column in ("host", "status"))
    for r in reports:
        node = r.node or {}
        gpus = node.get("gpus") or {}
        iface, ipv4 = node.get("interface"), node.get("local_ipv4")
        model = gpus.get("model") or gpus.get("vendor") or ""
        table.add_row(r.target.label, styled((r.status, _STYLE[r.status])),
                      (f"{gpus.get('count', 0)} x {model}" if gpus.get("count") else "none") if r.node else "-",
                      describe_nics(node) if r.node else "-",
                      f"{iface} {ipv4}" if iface and ipv4 else (iface or "-"),
                      str(r.gpu_count) if r.gpu_count else "-")
    return table


def _table_width() -> "int | None":
    """Rich's default off a terminal is 80 columns, too narrow for these tables: full rows (COLUMNS still wins)."""
    from nodeweave.cli.habits.output import table_width

    return table_width()


def register(app: typer.Typer) -> None:
    app.add_typer(hosts_app, name="hosts")
