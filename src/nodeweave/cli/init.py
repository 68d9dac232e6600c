"""``nodeweave init`` and ``validate``: a first nodeweave.yaml from what this machine, or the hosts, show,
and the check of any spec (kubectl, compose and SkyPilot all have one; every other verb's first
step is the same check, this one stops there and exits 0 or 2).

Why: the first spec is where new users stall. The entrypoint's own detection (no torch) sees the
GPUs, their vendor and count, and the active RDMA ports, here (``doctor``'s view) or on every
``--host`` at once (``hosts probe``'s); those pick ``image.variant``, ``gpus_per_node``,
``network.rdma`` and, for hosts, ``hosts`` and ``nodes``. The written spec is loaded back
through the validator before it is kept; an existing file is never overwritten without ``--force``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import typer

from nodeweave.cli.habits.base import find_spec, spec_option
from nodeweave.cli.habits.output import complete_from, data_format, emit, output_file, output_option
from nodeweave.errors import NodeweaveError, UsageError

VARIANT_BY_VENDOR = {"nvidia": "cuda12", "amd": "rocm70", "none": "cpu"}
# A team's dependencies, when its folder has this file: the image installs them (image.requirements).
REQUIREMENTS = "requirements.txt"
TEMPLATE = """\
# nodeweave cluster spec, written by `nodeweave init` from what {source} showed:
# {found}.
# docs/spec.md documents every field; `nodeweave validate` checks it, `nodeweave render all` renders it.

name: {name}  # DNS-1123 label: containers, pods and hosts <name>-0..N-1

image:
  variant: {variant}  # `nodeweave image variants` lists the catalogue
{requirements}
nodes: {nodes}
gpus_per_node: {gpus}  # processes per node{gpu_note}

launcher:
  type: {launcher}
  script: {script}  # relative to workspace.path (this folder, mounted there)
  args: []
{network}"""


@dataclass(frozen=True)
class Seen:
    """What the detection found: where, the GPUs, the active RDMA ports, the hosts (node 0 first)."""

    source: str
    vendor: str
    gpus: int
    model: str
    rdma_ports: Tuple[str, ...]
    hosts: Tuple[str, ...] = ()
    note: str = ""
    counts: Tuple[int, ...] = ()  # every host's GPU count, node 0 first (--host)

    def summary(self) -> str:
        found = f"{self.gpus}x {self.model} ({self.vendor})" if self.gpus else "no GPU"
        return f"{found}, {len(self.rdma_ports)} active RDMA port(s)" + (f"; {self.note}" if self.note else "")


def seen_here(sysroot: Path) -> Seen:
    from nodeweave.entrypoint import detect

    if not sysroot.is_dir():
        raise UsageError(f"--sysroot {sysroot}: not a directory; accepted: / or a captured tree")
    node = detect(str(sysroot))
    return Seen("this machine" if str(sysroot) == "/" else f"the tree under {sysroot}", node.gpus.vendor,
                node.gpus.count, node.gpus.model or "", tuple(p.name for p in node.nics if p.active))


def seen_on_hosts(hosts: List[str], via: str, ssh_option: List[str]) -> Seen:
    """Every host probed at once (``hosts probe``); all must answer and share one GPU vendor."""
    from nodeweave import remote
    from nodeweave.failures import need_tool
    from nodeweave.hosts import probe_hosts

    kind = remote.kind_class(via, "--via").kind
    options = remote.RemoteOptions(ssh_options=tuple(ssh_option))
    targets = [remote.parse_target(h, options=options) if ":" in h else remote.make_target(kind, h, options=options)
               for h in hosts]
    need_tool(targets[0].tool, f"init --host {targets[0].label} reaches the hosts with it")
    reports = probe_hosts(targets)
    bad = [r for r in reports if r.status in ("unreachable", "error")]
    if bad:
        raise NodeweaveError(f"{len(bad)} of {len(reports)} host(s) did not answer: "
                             + "; ".join(f"{r.target.label}: {r.error}" for r in bad))
    vendors = sorted({r.vendor for r in reports})
    if len(vendors) > 1:
        raise UsageError("the hosts mix GPU vendors (" + "; ".join(f"{r.target.label}: {r.vendor}" for r in reports)
                         + "): one job runs one vendor's collectives; give the hosts of one vendor")
    counts = [r.gpu_count for r in reports]
    first = reports[0].node or {}
    ports = tuple(f"{n.get('device')}:{n.get('port')}" for n in first.get("nics") or [] if n.get("state") == "ACTIVE")
    note = f"uneven GPU counts {counts}" if len(set(counts)) > 1 else ""
    return Seen(f"{len(hosts)} host(s) via {kind}", vendors[0], min(counts),
                str((first.get("gpus") or {}).get("model") or ""), ports, tuple(r.host for r in reports), note,
                tuple(counts))


def init(
    ctx: typer.Context,
    path: Path = typer.Option(Path("nodeweave.yaml"), "--out", callback=output_file, help="Where to write the spec"),
    name: Optional[str] = typer.Option(None, "--name", help="The job's name (default: this folder's, made a DNS label)"),
    nodes: str = typer.Option("2", "--nodes", callback=lambda value: node_count(value), metavar="N",
                              help="Node count (with --host: the hosts' number; another is refused)"),
    script: str = typer.Option("train.py", "--script", help="The training script, relative to this folder"),
    launcher: str = typer.Option("torchrun", "--launcher", autocompletion=complete_from("torchrun", "deepspeed", "accelerate", "command"), help="torchrun, deepspeed, accelerate or command"),
    host: List[str] = typer.Option([], "--host", help="Probe these hosts (node 0 first, repeat) instead of this "
                                   "machine, as `nodeweave hosts probe` does; they become the spec's hosts (an "
                                   "address KIND:NAME, e.g. podman:trainer-0, probes through that container)"),
    via: Optional[str] = typer.Option(None, "--via", hidden=True, help="Deprecated: --host KIND:NAME"),
    ssh_option: List[str] = typer.Option([], "--ssh-option", help="Extra ssh -o KEY=VALUE (repeat)"),
    sysroot: Path = typer.Option(Path("/"), "--sysroot", help="Detect from this captured sysfs/procfs tree "
                                 "instead of this machine"),
    force: bool = typer.Option(False, "--force",
                               help="Replace an earlier spec at --out (never a file that is not a spec)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the spec; write nothing (an existing --out is "
                                 "refused without --force, as the real run refuses it)"),
) -> None:
    """Write a first spec from this machine's (or the hosts') GPUs and RDMA ports, validated."""
    from nodeweave.spec import parse_spec

    refuse_idle_flags(host, ssh_option, via, _given(ctx, "sysroot"))
    refuse_naming_itself(path, script)
    if via is not None:
        from nodeweave.cli.habits.spellings import note_renamed

        note_renamed(f"init --via {via} --host {host[0] if host else 'NAME'}",
                     f"init --host {via}:{host[0] if host else 'NAME'}", "a node's address is KIND:NAME everywhere")
    if host:
        refuse_before_probing(host, nodes, _given(ctx, "nodes"))
    refuse_replacing(path, script, force)  # before probing; a dry run refuses what its real run would (README)
    seen = seen_on_hosts(host, via or "ssh", ssh_option) if host else seen_here(sysroot)
    arguments = (seen, name or _label(Path.cwd().name), len(seen.hosts) or nodes, script, launcher)
    text, notes = spec_text(*arguments, requirements=REQUIREMENTS), []
    if (path.resolve().parent / REQUIREMENTS).is_file():
        try:
            parse_spec(text, str(path), base_dir=path.resolve().parent)
        except UsageError as err:  # e.g. an unpinned line: the spec is written without it, and says why
            text = spec_text(*arguments)
            notes.append(left_out_note(err))
    else:
        text = spec_text(*arguments)
    try:
        written = parse_spec(text, str(path), base_dir=path.resolve().parent)  # the validator's word first
    except UsageError as err:
        flags = {"name": name or arguments[1], "launcher.type": launcher, "launcher.script": script}
        raise UsageError("\n".join(_as_flag(line, error, flags) for line, error in _lines(err))) from None
    from nodeweave.cli.run import note_script

    for note in filter(None, notes):  # each on its own line, once, before the summary
        typer.echo(f"nodeweave: note: {note}", err=True)
    note_script(written, path, [script], launcher)  # --script nothere.py: noted, as validate, up, run do
    if dry_run:
        if path.exists():  # --force given (refuse_replacing): the forced plan, said as hosts probe and render say it
            typer.echo(f"nodeweave: note: the real init replaces {path} (--force)", err=True)
        typer.echo(text, nl=False)
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        from nodeweave.failures import path_problem

        raise path_problem(err, "init --out") from None
    typer.echo(f"nodeweave: wrote {path} ({seen.summary()}); next: nodeweave validate, nodeweave render all",
               err=True)


def left_out_note(err: UsageError) -> str:
    """Why the folder's requirements file is not in the spec init wrote (an unpinned line), and what brings it in:
    the team's dependencies would otherwise drop out of the image without a word (walk3 F33)."""
    why = next((e.problem for e in _field_errors(err) if e.field == "image.requirements"), str(err))
    fix = "pin it (name==version)" if "is not pinned" in why else "change that line"
    return (f"{REQUIREMENTS} left out of image.requirements (the image installs it only when every line is pinned "
            f"and one the image can take): {why}; {fix} and run init again")


def refuse_idle_flags(host: List[str], ssh_option: List[str], via: Optional[str], sysroot_given: bool) -> None:
    """A flag that does nothing without (or with) another is refused, exit 2 (README): --ssh-option and --via
    reach --host's hosts; --sysroot is this machine's tree, which --host does not read."""
    if not host and ssh_option:
        raise UsageError(f"--ssh-option {ssh_option[0]} does nothing without --host: init probes this machine, "
                         "with no ssh; give --host HOST too, or leave --ssh-option out")
    kinds = {h.partition(":")[0] if ":" in h else (via or "ssh") for h in host}
    if host and ssh_option and not any(kind.startswith("ssh") for kind in kinds):
        raise UsageError(f"--ssh-option {ssh_option[0]} does nothing for {', '.join(sorted(kinds))} hosts (no ssh "
                         "reaches them): leave it out")
    if not host and via is not None:
        raise UsageError(f"--via {via} does nothing without --host: give --host {via}:NAME")
    if host and sysroot_given:
        raise UsageError("--sysroot does nothing with --host: the hosts are probed, not a captured tree; "
                         "give one of them")


def refuse_naming_itself(path: Path, script: str) -> None:
    """``--out`` where the new spec's own training script or requirements file goes is refused whether or not the
    file exists yet: the spec would run itself (``init --out train.py`` wrote a spec whose launcher.script is
    train.py), and the file meant to be the user's would be nodeweave's."""
    folder = path.resolve().parent
    for named, what, other in (
            (folder / script, f"the training script the new spec runs (launcher.script {script})",
             ", or --script another script"),
            (folder / REQUIREMENTS, f"where the folder's requirements file goes (image.requirements {REQUIREMENTS})",
             "")):
        if path.resolve() == named.resolve():
            raise UsageError(f"--out {path}: that is {what}; give --out another file (nodeweave.yaml){other}")


def refuse_replacing(path: Path, script: str, force: bool) -> None:
    """``--force`` replaces an earlier spec only: never the training script or requirements file the new spec
    names, nor any file that is not a spec (walk2, row D1)."""
    from nodeweave.cli.habits.replace import refuse_foreign_file

    folder = path.resolve().parent
    refuse_foreign_file(path, "--out", "spec", also_not={
        folder / REQUIREMENTS: f"the requirements file the new spec installs (image.requirements {REQUIREMENTS})",
        folder / script: f"the training script the new spec runs (launcher.script {script})"})
    if path.exists() and not force:
        raise UsageError(f"{path} exists (a spec); pass --force to replace it, or --out another file")


def node_count(text) -> int:
    """--nodes: a count, 1 to 2048; ``2:4`` (the spec's elastic MIN:MAX) is pointed at the spec (walk2, row U9: it
    was "'2:4' is not a valid integer")."""
    text = str(text).strip()
    if ":" in text:
        raise UsageError(f"--nodes {text!r}: init takes a count (1 to 2048); for an elastic job write nodes: "
                         f"\"{text}\" in the spec it writes")
    if not text.isdigit() or not 1 <= int(text) <= 2048:
        raise UsageError(f"--nodes {text!r} is not accepted: a whole number of nodes, 1 to 2048")
    return int(text)


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the user typed option ``name`` (not its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and getattr(source, "name", "") in ("COMMANDLINE", "ENVIRONMENT")


def refuse_before_probing(hosts: List[str], nodes: int, nodes_given: bool) -> None:
    """What the hosts' list says wrong is refused before any of them is reached over ssh (exit 2)."""
    from nodeweave.cluster.options import refuse_repeated_hosts

    refuse_repeated_hosts(hosts)
    if nodes_given and nodes != len(hosts):
        raise UsageError(f"--nodes {nodes} with {len(hosts)} --host: with --host the node count is the hosts' "
                         f"number (one node each); leave --nodes out, or give {nodes} hosts")


# The spec fields init fills from its flags: a refusal names the flag the user typed, not a line of a file
# that was never written (issue 43, row 26).
FLAG_OF_FIELD = {"name": "--name", "launcher.type": "--launcher", "launcher.script": "--script"}


def _lines(err: UsageError) -> "list[tuple[str, object]]":
    """(line, its FieldError or None) of a refusal of the spec: the parts are read as data, never out of the text."""
    from nodeweave.spec.nodes import FieldError, SpecErrors

    if isinstance(err, SpecErrors):
        return list(zip(err.problems, err.errors))
    return [(str(err), err if isinstance(err, FieldError) else None)]


def _field_errors(err: UsageError) -> list:
    return [error for _, error in _lines(err) if error is not None]


def _as_flag(message: str, error, values: "dict[str, str]") -> str:
    """``nodeweave.yaml:5: name: got 'Bad_Name' ...`` as ``--name 'Bad_Name': got 'Bad_Name' ...``."""
    if error is not None and error.field in FLAG_OF_FIELD:
        return f"{FLAG_OF_FIELD[error.field]} {values[error.field]!r}: {error.problem}; accepted: {error.accepted}"
    return f"the spec init would write: {message}"


# Launchers that take every node's own process count: torchrun's agents sum them in the rendezvous, and the
# check-in hands DeepSpeed's hostfile and a command's WORLD_SIZE every node's real count. accelerate is told
# one --num_processes total before the check-in, so it needs one count everywhere.
UNEVEN_LAUNCHERS = ("torchrun", "deepspeed", "command")


def _gpus(seen: Seen, launcher: str) -> Tuple[str, str]:
    """``gpus_per_node`` and its comment: ``auto`` over uneven counts where the launcher takes them."""
    if len(set(seen.counts)) > 1 and launcher in UNEVEN_LAUNCHERS:
        counts = ", ".join(map(str, seen.counts))
        return "auto", f": one per GPU each node has ({counts}; uneven counts: {launcher} takes them)"
    if len(set(seen.counts)) > 1:
        return str(seen.gpus or 1), (f": the smallest of {', '.join(map(str, seen.counts))} ({launcher} needs one "
                                     "count on every node)")
    return str(seen.gpus or 1), f": {seen.gpus}x {seen.model}" if seen.gpus else ": CPU"


def spec_text(seen: Seen, name: str, nodes: int, script: str, launcher: str,
              requirements: Optional[str] = None) -> str:
    """The spec's text; ``requirements`` names the folder's requirements file for ``image.requirements``."""
    network = ("\nnetwork:\n  rdma: true  # active RDMA ports: " + ", ".join(seen.rdma_ports[:8]) + "\n"
               ) if seen.rdma_ports else ""
    hosts = ("\nhosts:  # node 0 first: its place is its rank\n" + "".join(f"  - {h}\n" for h in seen.hosts)
             ) if seen.hosts else ""
    return TEMPLATE.format(
        source=seen.source, found=seen.summary(), name=name, variant=VARIANT_BY_VENDOR.get(seen.vendor, "cpu"),
        nodes=nodes, gpus=_gpus(seen, launcher)[0], gpu_note=_gpus(seen, launcher)[1],
        launcher=launcher, script=script, network=network,
        requirements=(f"  requirements: {requirements}  # installed into the image (every line pinned)\n"
                      if requirements else "")) + hosts


def _label(text: str) -> str:
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:52].strip("-")
    return label if label and label[0].isalpha() else f"job-{label}".strip("-")[:52]


def validate(
    spec_path: Optional[Path] = spec_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout"),
    output: str = output_option(),
) -> None:
    """Check the spec (every independent mistake, one line each: file:line, field, what is accepted; exit 2) and
    summarise it; with -o json or yaml a refused spec is {"valid": false, "errors": [...]} on stdout too."""
    from nodeweave.errors import UsageError
    from nodeweave.spec import load_spec
    from nodeweave.spec.loader import STDIN_NAME, is_stdin

    fmt = data_format(as_json, output)
    spec_path = find_spec(spec_path)
    try:
        spec = load_spec(spec_path)
    except UsageError as err:
        problems = getattr(err, "problems", None) or [str(err)]  # a script reads why, not nothing
        emit({"spec": str(spec_path), "valid": False, "errors": problems, "error": problems[0]}, fmt)
        raise
    # stable JSON types whatever the spec says: counts are integers (an elastic range: nodes is its minimum,
    # nodes_max its maximum), processes_per_node an integer or null (auto: each node counts its GPUs)
    auto = spec.gpus_per_node == "auto"
    shown = STDIN_NAME if is_stdin(spec_path) else str(spec_path)
    notes = list(spec.notes)  # valid, but likely not what was meant: on stderr, and in the document a script reads
    if not is_stdin(spec_path):  # the script the nodes would run, as `run` and `up` note it (walk2 M1)
        from nodeweave.cli.run import script_note

        notes += [note for note in [script_note(spec, spec_path, [spec.launcher.script], spec.launcher.type)] if note]
    summary = {"spec": shown, "name": spec.name, "nodes": spec.nodes.min, "nodes_max": spec.nodes.max,
               "elastic": spec.nodes.elastic, "processes_per_node": None if auto else int(spec.gpus_per_node),
               "processes_per_node_auto": auto, "launcher": spec.launcher.type,
               "script": spec.launcher.script, "variant": spec.image.variant, "containers": spec.containers,
               "starts": spec.starts, "valid": True, "notes": notes}
    for note in notes:
        typer.echo(f"nodeweave: note: {note}", err=True)
    if emit(summary, fmt):
        return
    typer.echo(f"{shown}: valid: {spec.name}, {spec.nodes} node(s) x {spec.gpus_per_node} process(es), "
               f"{spec.launcher.type} {spec.launcher.script}, image variant {spec.image.variant}")
    typer.echo(f"  {spec.starts}")


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("validate")(validate)
