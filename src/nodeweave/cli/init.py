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

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import typer

from nodeweave.entrypoint.planning.contract import plain_int  # ASCII digits only (walk13 A22), no 02/+2 (walk17a A20)
from nodeweave.cli.habits.base import find_spec, spec_option
from nodeweave.cli.habits.clusteropts import KUBE_CONTEXT
from nodeweave.cli.habits.output import complete_from, data_format, emit, option_named, output_file, output_option
from nodeweave.errors import NodeweaveError, UsageError

VARIANT_BY_VENDOR = {"nvidia": "cuda12", "amd": "rocm70", "none": "cpu"}
# A team's dependencies, when its folder has this file: the image installs them (image.requirements).
REQUIREMENTS = "requirements.txt"
TEMPLATE = """\
# nodeweave cluster spec, written by `nodeweave init` from what {source} showed:
# {found}.
# docs/spec.md documents every field; `nodeweave validate` checks it, `nodeweave render all` renders it.

name: {name}  # DNS-1035 label (starts with a letter), at most 52 characters: containers, pods and hosts <name>-0..N-1

image:
  variant: {variant}  # `nodeweave image variants` lists the catalogue
{requirements}
nodes: {nodes}
gpus_per_node: {gpus}  # processes per node{gpu_note}

launcher:
  type: {launcher}
  script: {script}  # {script_note}
  args: {args}
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
    from nodeweave.entrypoint import EntrypointError, detect
    from nodeweave.entrypoint.planning.contract import read_sysroot

    try:  # the one rule of every --sysroot (doctor's, the entrypoint's): a captured tree or /
        read_sysroot(str(sysroot), "--sysroot", "the command line")
    except EntrypointError as err:
        raise UsageError(str(err)) from None
    node = detect(str(sysroot))
    return Seen("this machine" if str(sysroot) == "/" else f"the tree under {sysroot}", node.gpus.vendor,
                node.gpus.count, node.gpus.model or "", tuple(p.name for p in node.nics if p.active))


def probe_targets(hosts: List[str], via: str, ssh_option: List[str], namespace: Optional[str] = None,
                  container: Optional[str] = None, kube_context: Optional[str] = None) -> list:
    """The hosts --host names, as targets to probe (a pod's namespace, container and context read as ``hosts
    probe`` reads them): the one reading of them for the probe and for its dry run."""
    from nodeweave import remote

    kind = remote.kind_class(via, "--via").kind
    options = remote.RemoteOptions(ssh_options=tuple(ssh_option), kube_context=kube_context)
    where = dict(namespace=namespace, container=container, options=options)
    targets = [remote.parse_target(h, **where) if ":" in h else remote.make_target(kind, h, **where) for h in hosts]
    from nodeweave.cli.habits.reachkinds import refuse_idle_transport_flags

    refuse_idle_transport_flags([type(t) for t in targets], "hosts", namespace=namespace, container=container,
                                kube_context=kube_context)
    return targets


def show_probe(targets: list, path: Path) -> None:
    """``init --host --dry-run``: the probe the real init runs, as ``hosts probe --dry-run`` prints it, reaching no
    host (walk16a A21: it probed them over ssh); the spec is what they answer, so none is printed."""
    from dataclasses import replace

    from nodeweave.cli.habits.clusteropts import show_plan
    from nodeweave.failures import address_tool_missing
    from nodeweave.hosts import probe_plan

    plan = probe_plan(targets, None, None)
    missing = address_tool_missing(targets, "init --host")
    notes = (*plan.notes, f"then {path} is written from what they answer (a dry run reaches no host, so it prints "
             "no spec)", *([f"the real init would end with exit 3: {missing}"] if missing else []))
    show_plan(replace(plan, verb="init", notes=notes), "text")


def seen_on_hosts(hosts: List[str], via: str, ssh_option: List[str], namespace: Optional[str] = None,
                  container: Optional[str] = None, kube_context: Optional[str] = None) -> Seen:
    """Every host probed at once (``hosts probe``); all must answer and share one GPU vendor. A pod's namespace,
    container and kubeconfig context are read as ``hosts probe`` and ``sync`` read them (walk10 A29)."""
    from nodeweave import remote
    from nodeweave.errors import EnvironmentProblem
    from nodeweave.failures import address_tool_missing
    from nodeweave.hosts import probe_hosts

    kind = remote.kind_class(via, "--via").kind
    targets = probe_targets(hosts, via, ssh_option, namespace, container, kube_context)
    missing = address_tool_missing(targets, "init --host")
    if missing:
        raise EnvironmentProblem(missing)
    reports = probe_hosts(targets)
    from nodeweave.hosts import unanswered

    problem = unanswered(reports, detail=True)  # as hosts probe answers (walk10 A28)
    if problem is not None:
        raise problem
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
    path: Path = typer.Option(Path("nodeweave.yaml"), "--out", callback=output_file, help="Where to write the spec (a UTF-8 name ending in .yaml or .yml: render refuses another)"),
    name: Optional[str] = typer.Option(None, "--name", help="The job's name (default: the name of the folder the spec is written in (--out's), made a DNS-1035 label; job-<4 hex of its path>, with a note, when nothing of it can be kept)"),
    nodes: str = typer.Option("2", "--nodes", callback=lambda value: node_count(value), metavar="N",
                              help="Node count (with --host: the hosts' number; another is refused)"),
    script: str = typer.Option("train.py", "--script", help="The training script, relative to this folder (default: train.py, or the folder's only other *.py file)"),
    launcher: str = typer.Option("torchrun", "--launcher", autocompletion=complete_from("torchrun", "deepspeed", "accelerate", "command"), help="torchrun, deepspeed, accelerate or command"),
    host: List[str] = typer.Option([], "--host", help="Probe these hosts (node 0 first, repeat) instead of this "
                                   "machine, as `nodeweave hosts probe` does; they become the spec's hosts (an "
                                   "address KIND:NAME, e.g. podman:trainer-0, probes through that container)"),
    hosts_file: Optional[Path] = typer.Option(None, "--hosts-file", help="Probe the hosts of this file instead: one "
                                              "\\[user@]host per line, node 0 first (a DeepSpeed hostfile works "
                                              "too), as up, sync, check and hosts probe read it"),
    via: Optional[str] = typer.Option(None, "--via", hidden=True, help="Deprecated: --host KIND:NAME"),
    ssh_option: List[str] = typer.Option([], "--ssh-option", help="Extra ssh -o KEY=VALUE (repeat)"),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace of the pods (--host pod:NAME, "
                                            "oc:NAME; or --host pod:NAMESPACE/NAME), as hosts probe reads it"),
    container: Optional[str] = typer.Option(None, "--container", "-c", help="Container in each pod (--host pod:NAME, "
                                            "oc:NAME; or --host pod:NAME[CONTAINER])"),
    kube_context: Optional[str] = KUBE_CONTEXT,  # the one declaration (habits/clusteropts.py)
    sysroot: Path = typer.Option(Path("/"), "--sysroot", help="Detect from this captured sysfs/procfs tree "
                                 "instead of this machine"),
    force: bool = typer.Option(False, "--force",
                               help="Replace an earlier spec at --out (never a file that is not a spec), write "
                               "nodeweave.yaml below a folder whose spec already covers this one or beside a nodeweave.yml (and --out nodeweave.yml or NODEWEAVE.YAML beside a nodeweave.yaml), or keep a --script "
                               "the folder lacks while a close name is there (train for train.py)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the spec; write nothing (an existing --out is "
                                 "refused without --force, as the real run refuses it); with --host, print the "
                                 "probe each host would get and reach none, as hosts probe --dry-run"),
) -> None:
    """Write a first spec from this machine's (or the hosts') GPUs and RDMA ports, validated.

    The spec's image variant and gpus_per_node are what it detects. For a GPU cluster's spec written from a machine
    without GPUs: --host GPU-HOST probes a GPU node, --sysroot DIR reads a `nodeweave doctor --capture` of one, or
    edit image.variant and gpus_per_node in the spec it writes.
    """
    from nodeweave.spec import parse_spec
    from nodeweave.specpath import spec_folder

    if hosts_file is not None:  # the one reader of a hosts file (walk16a A22: every other verb that reaches hosts
        from nodeweave.remote.names import hosts_file_lines  # took --hosts-file; init refused it)

        host = [name for _, name in hosts_file_lines(hosts_file, fold_case=(via or "ssh").startswith("ssh"))]
    refuse_idle_flags(host, ssh_option, via, _given(ctx, "sysroot"))
    if not host:
        for flag, value in (("--namespace", namespace), ("--container", container), ("--kube-context", kube_context)):
            if value is not None:
                raise UsageError(f"{flag} {value} does nothing without --host: init probes this machine; give "
                                 f"--host pod:NAME too, or leave {flag} out")
    script, script_found = script_here(spec_folder(path), script, _given(ctx, "script"))
    if _given(ctx, "script"):  # a default train.py the folder lacks is named by script_here's note, not refused
        refuse_a_near_miss(spec_folder(path), script, launcher, force)
    out_named = option_named("path", "--out", path, ctx)  # as typed, or the default said as one
    from nodeweave.cli.render import spec_name_problem

    unnamed = spec_name_problem(path)
    if unnamed:  # a spec render would refuse is not written (walk14a A17)
        raise UsageError(f"{out_named}: {unnamed}, so `nodeweave render` refuses such a spec; give --out a UTF-8 "
                         "name (nodeweave.yaml is the default)")
    refuse_naming_itself(path, script, out_named)
    if via is not None:
        from nodeweave.cli.habits.spellings import note_renamed

        note_renamed(f"init --via {via} --host {host[0] if host else 'NAME'}",
                     f"init --host {via}:{host[0] if host else 'NAME'}", "a node's address is KIND:NAME everywhere")
    if host:
        refuse_before_probing(host, nodes, _given(ctx, "nodes"))
    refuse_replacing(path, script, force, out_named)  # before probing; a dry run refuses what its real run would (README)
    refuse_splitting(path, force)
    refuse_beside_another_spelling(path, force)
    if host and dry_run:  # a dry run reaches no host, as hosts probe's does
        show_probe(probe_targets(host, via or "ssh", ssh_option, namespace, container, kube_context), path)
        return
    seen = (seen_on_hosts(host, via or "ssh", ssh_option, namespace, container, kube_context) if host
            else seen_here(sysroot))
    # named after the spec's folder, where its workspace, script and requirements are (walk14a A3: after the current
    # folder, `init --out ../p2/nodeweave.yaml` gave p2's job p1's name)
    derived, name_note = folder_job_name(spec_folder(path))
    arguments = (seen, name or derived, len(seen.hosts) or nodes, script, launcher)
    text, notes = spec_text(*arguments, requirements=REQUIREMENTS), [script_found, None if name else name_note]
    if (spec_folder(path) / REQUIREMENTS).is_file():
        try:
            with_requirements = parse_spec(text, str(path), base_dir=spec_folder(path))
        except UsageError as err:  # e.g. an unpinned line: the spec is written without it, and says why
            text = spec_text(*arguments)
            notes.append(left_out_note(err))
        else:
            linked = linked_out_field(with_requirements, path, "image.requirements")
            if linked:  # a link out of the folder: the image build would refuse the spec init wrote (walk13 A3)
                text = spec_text(*arguments)
                notes.append(f"{REQUIREMENTS} left out of image.requirements (the image build would refuse it): "
                             f"{linked}; then add it under image: requirements: {REQUIREMENTS}")
    else:
        text = spec_text(*arguments)
        notes.append(not_a_requirements_file(spec_folder(path) / REQUIREMENTS))
    try:
        written = parse_spec(text, str(path), base_dir=spec_folder(path))  # the validator's word first
    except UsageError as err:
        flags = {"name": name or arguments[1], "launcher.type": launcher, "launcher.script": script}
        raise UsageError("\n".join(_as_flag(line, error, flags) for line, error in _lines(err))) from None
    from nodeweave.cli.run import note_script, script_refusal

    refused = script_refusal(written, path, [written.launcher.script, *written.launcher.args], launcher)
    if refused:  # a spec validate would refuse, every node refusing its script (issue 43 A16): not written
        raise UsageError(f"{refused}; nothing was written: give the training script with --script, or "
                         "--launcher command for a program")
    notes += build_link_notes(written, path)
    for note in filter(None, notes):  # each on its own line, once, before the summary
        typer.echo(f"nodeweave: note: {note}", err=True)
    note_script(written, path, [written.launcher.script, *written.launcher.args], launcher)  # as validate does
    if dry_run:
        if path.exists():  # --force given (refuse_replacing): the forced plan, said as hosts probe and render say it
            typer.echo(f"nodeweave: note: the real init replaces {path} (--force)", err=True)
        typer.echo(text, nl=False)
        return
    from nodeweave.newfile import write_new

    try:  # exclusively: a spec another init wrote meanwhile is kept (walk12 A23)
        write_new(path, text.encode("utf-8"), "--out", replacement(path, script, force, out_named), subject=out_named)
    except OSError as err:
        from nodeweave.failures import path_problem

        raise path_problem(err, "init --out") from None
    typer.echo(f"nodeweave: wrote {path} ({seen.summary()}); {next_verbs(path)}", err=True)


def next_verbs(path: Path) -> str:
    """The hint after a written spec, acting on it: $NODEWEAVE_SPEC naming another spec would send the next verbs
    there (walk7 A49), and a spec not found by the verbs' search gets --spec (the hint pasted reads this file)."""
    from nodeweave.cli.habits.spec_path import SPEC_ENV, SPEC_NAME, variable_elsewhere

    elsewhere = variable_elsewhere(path)
    plain = path.name == SPEC_NAME and Path(os.path.abspath(path)).parent == Path.cwd()
    spec = "" if plain and elsewhere is None else f" --spec {path}"
    hint = f"next: nodeweave validate{spec}, nodeweave render all{spec}"
    if elsewhere is None:
        return hint
    return (f"{hint} (${SPEC_ENV} names {elsewhere}, so a verb without --spec reads that one: unset {SPEC_ENV} "
            "to work on this one)")


def refuse_splitting(path: Path, force: bool) -> None:
    """A spec written below a folder another spec governs makes the folder a job of its own: every verb typed
    there would act on the new job while the other one runs unseen (walk7 A37). Refused without --force, as a
    spec is not replaced without it."""
    from nodeweave.cli.habits.spec_path import SPEC_NAME, spec_above

    if force or path.name != SPEC_NAME:
        return
    above = spec_above(path.parent)
    if above is None:
        return
    folder = Path(os.path.abspath(path)).parent
    shown = os.path.relpath(above, Path.cwd())
    raise UsageError(f"{shown}{_job_of(above)} already covers {folder} (every verb typed there reads it); a spec "
                     f"here makes {folder.name}/ a job of its own: --force to do it anyway, or edit {shown}")


def other_spellings(path: Path) -> "list[Path]":
    """The files beside ``path`` that are the spec's name spelt another way (``nodeweave.yaml``, ``nodeweave.yml``,
    the spelling compose and GitHub take, ``Nodeweave.yaml``), one file on a case-blind disk counted once: no verb
    reads a spec under a near name, so two of them are two specs of one folder, one of which nothing runs (walk9 A30,
    walk13 A19). The one rule: ``habits.spec_path.near_names``."""
    from nodeweave.cli.habits.spec_path import SPEC_NAME, SPELLINGS, near_names

    folder = Path(os.path.abspath(path)).parent
    names = [*near_names(folder), *([SPEC_NAME] if (folder / SPEC_NAME).is_file() else [])]
    found = []
    for name in names:
        other = folder / name
        try:
            if name == path.name or (path.exists() and os.path.samefile(other, path)):
                continue
        except OSError:
            continue
        found.append(other)
    return sorted(found) if path.name.lower() in SPELLINGS else []


def refuse_beside_another_spelling(path: Path, force: bool) -> None:
    """``init`` writing a spec beside another spelling of its name, either way, refused without --force, naming the
    file and its job, as a spec above this folder is (``refuse_splitting``): nodeweave.yaml beside the user's
    nodeweave.yml (the way out: rename it), or ``--out nodeweave.yml`` / ``NODEWEAVE.YAML`` beside the folder's
    nodeweave.yaml (a second spec nothing runs; on a case-blind disk, the very file)."""
    from nodeweave.cli.habits.spec_path import SPEC_NAME

    if force:
        return
    found = other_spellings(path)
    if not found:
        return
    shown = os.path.relpath(found[0], Path.cwd())
    written = os.path.relpath(Path(os.path.abspath(path)), Path.cwd())
    if path.name != SPEC_NAME:
        read = next((f for f in found if f.name == SPEC_NAME), found[0])
        shown = os.path.relpath(read, Path.cwd())
        what = ("the spec every verb here reads" if read.name == SPEC_NAME
                else f"a spec under a name no verb reads either (they read {SPEC_NAME})")
        same = (f" (on a case-insensitive disk, as macOS's is, {path.name} and {read.name} are one file)"
                if path.name.lower() == read.name.lower() else "")
        raise UsageError(f"{shown}{_job_of(read)} is {what}; {written} beside it would be a second spec of this "
                         f"folder under a name no verb reads{same}: edit {shown}, write the new spec in another "
                         "folder, or --force to write it anyway")
    raise UsageError(f"{shown}{_job_of(found[0])} is a spec under a name no verb reads (they read {SPEC_NAME}); a "
                     f"new {SPEC_NAME} beside it would be the job every verb runs: rename it (mv {shown} "
                     f"{written}), pass it with --spec {shown}, or --force to write a second spec anyway")


def _job_of(spec: Path) -> str:
    """`` (job NAME)`` of a readable spec, else nothing: the refusal names the job it would hide."""
    try:
        from nodeweave.spec import load_spec

        return f" (job {load_spec(spec).name})"
    except (NodeweaveError, OSError, ValueError):  # an unreadable spec is named by its path alone
        return ""


# Python files of a folder that are never its training script.
NOT_SCRIPTS = ("setup.py", "conftest.py", "__init__.py", "noxfile.py")


def script_here(folder: Path, script: str, given: bool) -> "tuple[str, str]":
    """(the script the new spec runs, a note or ""): ``--script`` as given; else ``train.py`` when the folder has it,
    or the folder's only other Python file (``main.py``), said in a note; several are named in the note instead,
    as init finds requirements.txt (walk6, W23). An absolute ``--script`` inside this folder (tab completion,
    realpath) is written relative to it, as the nodes see it, and said (walk7 A10)."""
    if given and Path(script).is_absolute():
        try:
            inside = Path(script).resolve().relative_to(folder.resolve()).as_posix()
        except ValueError:
            return script, ""  # a path in the image (/opt/...): validate's rule judges it
        return inside, (f"--script {script} is this machine's path; the nodes see this folder at workspace.path, "
                        f"so launcher.script: {inside}")
    if given or (folder / script).is_file():
        return script, ""
    found = sorted(p.name for p in folder.glob("*.py") if p.is_file() and p.name not in NOT_SCRIPTS)
    if len(found) == 1:
        return found[0], (f"no {script} in {folder}; launcher.script: {found[0]}, the folder's only Python file "
                          "(--script names another)")
    if found:
        shown = ", ".join(found[:6]) + (", ..." if len(found) > 6 else "")
        return script, (f"no {script} in {folder}; it holds {shown}: give the training script with --script "
                        f"(nodeweave init --script {found[0]}), or edit launcher.script")
    return script, ""


def refuse_a_near_miss(folder: Path, script: str, launcher: str, force: bool) -> None:
    """``--script train`` beside ``train.py`` (a ``python -m`` habit, a typo): a spec whose every run would fail with
    'No such file' is not written while the file meant is in plain sight; --force writes it (the image may hold the
    script), as validate's note then says (walk8 A6)."""
    if force or launcher == "command" or Path(script).is_absolute() or (folder / script).exists():
        return
    from nodeweave.cli.run import close_script

    close = close_script(folder, script)
    if close:
        raise UsageError(f"--script {script}: no such file in {folder}; did you mean {close}? (nodeweave init --script "
                         f"{close}); --force writes {script} anyway, for a script the image holds")


def build_link_notes(spec, spec_path: Path) -> "list[str]":
    """What ``image build`` (its context: the spec's folder) would refuse as linked out of the context
    (``build.context.linked_out``, the one rule), said by ``init`` and ``validate`` as notes (replay10 A7)."""
    from nodeweave.build.context import linked_out
    from nodeweave.specpath import spec_folder

    return [f"the image build would refuse it: {line}" for line in linked_out(spec_folder(spec_path), spec)]


def linked_out_field(spec, spec_path: Path, field: str) -> str:
    """The line ``image build`` would refuse ``field`` of ``spec`` with as linked out of its context (the one rule,
    ``build.context.linked_out``), or ""."""
    from nodeweave.build.context import linked_out_by_what
    from nodeweave.specpath import spec_folder

    return linked_out_by_what(spec_folder(spec_path), spec).get(field, "")


def not_a_requirements_file(path: Path) -> str:
    """A note when the folder's requirements.txt is there but no regular file (a folder, a named pipe, a device):
    left out of image.requirements, said, never silently (walk6, W24); else ""."""
    if not (path.exists() or path.is_symlink()):
        return ""
    from nodeweave.cli.habits.output import not_a_file_to_read

    why = not_a_file_to_read(path) or "cannot be read"
    return f"{REQUIREMENTS} {why}: left out of image.requirements (the image installs a regular file of pinned lines)"


def left_out_note(err: UsageError) -> str:
    """Why the folder's requirements file is not in the spec init wrote (every line it cannot take, walk15 A25:
    one a round read "and run init again" for each), and what brings it in: the team's dependencies would
    otherwise drop out of the image without a word (walk3 F33)."""
    whys = [e.problem for e in _field_errors(err) if e.field == "image.requirements"] or [str(err)]
    # the pinned form that fits a pinned line is in its why (pin_form)
    fix = "" if all("is not pinned" in why for why in whys) else "; change " + ("those lines" if len(whys) > 1
                                                                              else "that line")
    return (f"{REQUIREMENTS} left out of image.requirements (the image installs it only when every line is pinned "
            f"and one the image can take): {'; '.join(whys)}{fix}, and run init again")


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


def refuse_naming_itself(path: Path, script: str, out_named: str) -> None:
    """``--out`` where the new spec's own training script or requirements file goes is refused whether or not the
    file exists yet: the spec would run itself (``init --out train.py`` wrote a spec whose launcher.script is
    train.py), and the file meant to be the user's would be nodeweave's."""
    from nodeweave.specpath import spec_folder

    folder = spec_folder(path)
    for named, what, other in (
            (folder / script, f"the training script the new spec runs (launcher.script {script})",
             ", or --script another script"),
            (folder / REQUIREMENTS, f"where the folder's requirements file goes (image.requirements {REQUIREMENTS})",
             "")):
        if path.resolve() == named.resolve():
            raise UsageError(f"{out_named}: that is {what}; give --out another file "
                             f"(nodeweave.yaml){other}")


def _users_own(path: Path, script: str) -> "dict[Path, str]":
    from nodeweave.specpath import spec_folder

    folder = spec_folder(path)
    return {folder / REQUIREMENTS: f"the requirements file the new spec installs (image.requirements {REQUIREMENTS})",
            folder / script: f"the training script the new spec runs (launcher.script {script})"}


def refuse_replacing(path: Path, script: str, force: bool, out_named: str) -> None:
    """``--force`` replaces an earlier spec only: never the training script or requirements file the new spec
    names, nor any file that is not a spec (walk2, row D1)."""
    from nodeweave.cli.habits.replace import refuse_foreign_file

    refuse_foreign_file(path, "--out", "spec", subject=out_named, force=force, also_not=_users_own(path, script))


def replacement(path: Path, script: str, force: bool, out_named: str):
    """refuse_replacing's rule at the moment of writing (habits.replace.may_replace)."""
    from nodeweave.cli.habits.replace import may_replace

    return may_replace("--out", "spec", force, also_not=_users_own(path, script), subject=out_named)


def node_count(text) -> int:
    """--nodes: a count, 1 to 2048; ``2:4`` (the spec's elastic MIN:MAX) is pointed at the spec (walk2, row U9: it
    was "'2:4' is not a valid integer")."""
    text = str(text)
    if ":" in text:
        raise UsageError(f"--nodes {text!r}: init takes a count (1 to 2048); for an elastic job write nodes: "
                         f"\"{text.strip()}\" in the spec it writes")
    if not plain_int(text) or not 1 <= int(text) <= 2048:  # 02, +2, ' 2' as every count (walk17a A20)
        raise UsageError(f"--nodes {text!r} is not accepted: a whole number of nodes, 1 to 2048, in plain decimal "
                         "digits")
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
        launcher=launcher, network=network, **_launcher_lines(launcher, script),
        requirements=(f"  requirements: {_scalar(requirements)}  # installed into the image (every line pinned)\n"
                      if requirements else "")) + hosts


def _launcher_lines(launcher: str, script: str) -> dict:
    """``script``, its comment and ``args`` for the spec. Launcher ``command`` execs its program through PATH,
    which never holds the workspace (every node would exit 127 on a bare ``train.py``, walk7 A42): a Python file is
    written as ``python`` with the file as its argument, another bare name as ``./NAME``."""
    import json

    if script.startswith("/"):  # walk14a A11: an absolute path is none of this folder's, whatever the launcher
        return {"script": _scalar(script), "script_note": "an absolute path: the image's (this folder is at "
                "workspace.path)",
                "args": "[]"}
    if launcher != "command" or "/" in script:
        return {"script": _scalar(script), "script_note": "relative to workspace.path (this folder, mounted there)",
                "args": "[]"}
    if script.endswith(".py"):
        return {"script": "python", "script_note": "launcher command: the program, found through PATH",
                "args": f"[{json.dumps(script)}]  # relative to workspace.path (this folder, mounted there)"}
    return {"script": _scalar(f"./{script}"), "script_note": "launcher command: an executable of the workspace (#! line)",
            "args": "[]"}


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as this very string: a file named ``3`` or ``true`` is written
    quoted (walk15 A2: the spec's rule refuses a plain number where a path goes, and init wrote it plain)."""
    import yaml

    return yaml.safe_dump(text, width=1 << 30, allow_unicode=True).split("\n", 1)[0]


def _label(text: str) -> str:
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:52].strip("-")
    return label if label and label[0].isalpha() else f"job-{label}".strip("-")[:52]


def folder_job_name(folder: Path) -> "tuple[str, str]":
    """The job name init gives a folder (its name made a DNS-1035 label) and a note when nothing of the name is
    kept (``ü``, ``日本語``, ``__``): then ``job-`` and 4 hex of the folder's path, so two such folders do not share
    one job's containers and image tag, said with --name (walk8 A26: every one was ``job``, without a word)."""
    import hashlib

    if re.sub(r"[^a-z0-9]+", "", folder.name.lower()):  # something of the name is kept
        return _label(folder.name), ""
    named = f"job-{hashlib.sha256(str(folder).encode()).hexdigest()[:4]}"
    return named, (f"the folder's name {folder.name!r} keeps no letter or digit a job name can hold, so the job is "
                   f"named {named!r} (from the folder's path); give --name to choose one")


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
    # nodes_max its maximum, min_nodes the fewest the job goes on with; under recovery nodes is the count written,
    # which starts, and min_nodes recovery's floor, never "elastic": walk6 W38), processes_per_node an integer or null (auto: each node counts its GPUs)
    auto = spec.gpus_per_node == "auto"
    shown = STDIN_NAME if is_stdin(spec_path) else str(spec_path)
    notes = list(spec.notes)  # valid, but likely not what was meant: on stderr, and in the document a script reads
    if not is_stdin(spec_path):  # the script the nodes would run, as `run` and `up` note it (walk2 M1)
        from nodeweave.cli.run import missing_volume_notes, script_note, script_refusal

        here = not spec.hosts  # a hosts list's nodes mount their own folders, not this machine's
        command = [spec.launcher.script, *spec.launcher.args]
        elsewhere = spec.hosts and str(spec.workspace.host_path).startswith("~")  # each host's own home (walk8 A20)
        refused = "" if elsewhere else script_refusal(spec, spec_path, command, spec.launcher.type)
        if refused:  # what every node refuses at its start is no valid spec (issue 43 A8, A16), as run refuses it
            problem = f"{shown}: {refused}"
            emit({"spec": shown, "valid": False, "errors": [problem], "error": problem}, fmt)
            raise UsageError(problem)
        notes += [note for note in [script_note(spec, spec_path, command, spec.launcher.type, here=here)] if note]
        notes += missing_volume_notes(spec, spec_path) if here else []  # mounted, missing here (walk6 M7)
        notes += build_link_notes(spec, spec_path)
    from nodeweave.cluster.options import spec_target

    if spec_target(spec) == "local":  # the fields the local target leaves out, as up says them (walk17a A25), only
        from nodeweave.targets.compose.local import dropped_note  # where it is the spec's own target (walk18a A24)

        notes += [note for note in [dropped_note(spec)] if note]
    recovering = spec.recovery.enabled
    summary = {"spec": shown, "name": spec.name, "nodes": spec.nodes.max if recovering else spec.nodes.min,
               "nodes_max": spec.nodes.max, "min_nodes": spec.nodes.min,
               "elastic": spec.nodes.elastic and not recovering, "processes_per_node": None if auto else int(spec.gpus_per_node),
               "processes_per_node_auto": auto, "launcher": spec.launcher.type,
               "script": spec.launcher.script, "variant": spec.image.variant, "containers": spec.containers,
               "starts": spec.starts, "valid": True, "notes": notes}
    for note in notes:
        typer.echo(f"nodeweave: note: {note}", err=True)
    if emit(summary, fmt):
        return
    typer.echo(f"{shown}: valid: {spec.name}, {spec.nodes_written} x {spec.gpus_per_node} process(es), "
               f"{spec.launcher.type} {spec.launcher.script}, image variant {spec.image.variant}")
    typer.echo(f"  {spec.starts}")


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("validate")(validate)
