"""The options every cluster verb takes (where the cluster is, how to reach it), and opening it.

Declared once (``REACH_FLAGS``) and added to a verb by :func:`reach_options`, which hands the verb one
``ClusterOptions`` (``up``, ``down``, ``run``, ``status``, ``logs``, ``stop``, ``shell``, ``exec``,
``check``); ``open_cluster`` merges them with what ``up`` remembered (``.nodeweave/<job>/cluster.json``)
and returns the spec and backend. ``show_plan`` prints a verb's plan for ``--dry-run``.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import List, Optional, Tuple

import typer

from nodeweave.entrypoint.nodelists import ranges
from nodeweave.cli.habits.base import spec_option
from nodeweave.cli.habits.output import complete_from

SPEC = spec_option()
# The default target, in spec_default's order (cluster/options.py), as every verb's -t help and sync's help say it
# (walk13 A6: the help left out slurm, which a spec's slurm: section makes the default).
DEFAULT_TARGET_TEXT = ("what `nodeweave up` used, else hosts with --host (or the spec's hosts), else kubernetes for an OpenShift "
                       "spec (kubernetes.openshift or .build), else slurm for a spec with a slurm: section, else local")
TARGET = typer.Option(None, "--target", "-t",
                      autocompletion=complete_from("local", "hosts", "kubernetes", "openshift", "slurm"),
                      help="local (.nodeweave/<job>/compose.yaml on this machine), hosts (ssh), kubernetes (kubectl/oc), "
                           "openshift (kubernetes through oc, with the openshift overlay), slurm (an allocation, srun); "
                           f"default: {DEFAULT_TARGET_TEXT}")
ENGINE = typer.Option(None, "--engine", autocompletion=complete_from("podman", "docker", "none"),
                      help="local: podman or docker; hosts: docker, podman or none (bare hosts)")
HOST = typer.Option([], "--host", help="hosts: \\[user@]host over ssh, node 0 first (repeat; or --hosts-file)")
HOSTS_FILE = typer.Option(None, "--hosts-file", help="hosts: one \\[user@]host per line, node 0 first (or --host)")
REMOTE_DIR = typer.Option(None, "--remote-dir", help="hosts, slurm: the workspace folder on every host, absolute or "
                                                     "'~/DIR' (quoted) under each host's home (default: an absolute workspace.host_path)")
NAMESPACE = typer.Option(None, "--namespace", "-n", help="kubernetes: namespace (default: the spec's)")
KUBE_CLI = typer.Option(None, "--kube-cli", autocompletion=complete_from("kubectl", "oc"), help="kubectl or oc (default: oc when the spec says openshift)")
KUBE_CONTEXT = typer.Option(None, "--kube-context", help="kubeconfig context")
OVERLAY = typer.Option(None, "--overlay", autocompletion=complete_from("base", "openshift", "rocm"), help="kubernetes, up and down only: the folder they apply and delete: base (default), openshift, rocm, or a kustomize folder of your own beside the spec")
SSH_OPTION = typer.Option([], "--ssh-option", help="Extra ssh -o KEY=VALUE (repeat)")
DRY_RUN = typer.Option(False, "--dry-run", help="Print what would be done; do nothing")
JSON = typer.Option(False, "--json", help="Print the result as JSON on stdout")


# (parameter, type, option): the reach flags, in the order --help lists them.
REACH_FLAGS = (("target", Optional[str], TARGET), ("engine", Optional[str], ENGINE), ("host", List[str], HOST),
         ("hosts_file", Optional[Path], HOSTS_FILE), ("remote_dir", Optional[str], REMOTE_DIR),
         ("namespace", Optional[str], NAMESPACE), ("kube_cli", Optional[str], KUBE_CLI),
         ("kube_context", Optional[str], KUBE_CONTEXT), ("overlay", Optional[str], OVERLAY),
         ("ssh_option", List[str], SSH_OPTION))


REACH = None  # a verb's ``reach: ClusterOptions = REACH``: where reach_options puts the flags in its signature


def reach_options(verb):
    """Put the reach flags where the verb's ``reach`` parameter stands, and call it with one ``ClusterOptions``.

    typer reads a command's parameters from its signature: the wrapper's signature lists the ten flags in
    place of ``reach``, so every verb's ``--help``, completion and checks see them, declared here once.
    """
    signature = inspect.signature(verb)
    name = verb.__name__.removesuffix("_command")  # the verb as typed: up_command is `nodeweave up`
    names = [flag for flag, _, _ in REACH_FLAGS]
    flags = [inspect.Parameter(flag, inspect.Parameter.KEYWORD_ONLY, default=_listed(flag, option, name),
                               annotation=kind)
             for flag, kind, option in REACH_FLAGS]
    params = []
    for param in signature.parameters.values():
        params += flags if param.name == "reach" else [param.replace(kind=inspect.Parameter.KEYWORD_ONLY)]

    @functools.wraps(verb)
    def with_reach(**given):
        from nodeweave.cluster.options import refuse_verb_idle_flags

        reach = options(**{flag: given.pop(flag) for flag in names})
        refuse_verb_idle_flags(reach, name)  # a flag this verb makes nothing of, whatever the target (walk10 A10)
        return verb(reach=reach, **given)

    with_reach.__signature__ = signature.replace(parameters=params)
    annotations = {k: v for k, v in verb.__annotations__.items() if k != "reach"}
    with_reach.__annotations__ = {**annotations, **{name: kind for name, kind, _ in REACH_FLAGS}}
    return with_reach


def _listed(field: str, option, verb: str):
    """``option`` as ``verb`` shows it: a reach flag this verb makes nothing of (``FLAG_VERBS``: ``--overlay`` outside
    up and down) is still read, so typing it gets ``refuse_verb_idle_flags``' one line, but its ``--help`` does not
    list it (walk12 A17: nine verbs' help offered --overlay, which each of them refuses)."""
    import copy

    from nodeweave.cluster.options import FLAG_VERBS

    if field in FLAG_VERBS and verb not in FLAG_VERBS[field][1]:
        option = copy.copy(option)
        option.hidden = True
    return option


def options(target, engine, host, hosts_file, remote_dir, namespace, kube_cli, kube_context, overlay, ssh_option):
    """The reach flags as typed: nothing judged, no file read (open_cluster refuses a flag that does nothing for
    the target first)."""
    from nodeweave.cluster.options import ClusterOptions

    return ClusterOptions(target=target, engine=engine, hosts=tuple(host), hosts_file=hosts_file,
                          remote_dir=remote_dir, namespace=namespace, kube_cli=kube_cli, kube_context=kube_context,
                          overlay=overlay, ssh_options=tuple(ssh_option))


def note_local_home(flag: str, value: str) -> None:
    """A remote folder under this machine's home was most likely a ``~/DIR`` the local shell expanded (unquoted):
    said on stderr, with the quoted spelling that means each host's own home. (Shared homes are common, so it is
    a note, not a refusal.)"""
    import os

    import posixpath

    home = os.path.expanduser("~").rstrip("/")
    if posixpath.normpath(value) != value.rstrip("/"):  # '/root/../x' is refused next as it stands: no spelling
        return  # to suggest from it (replay N7 suggested '~/../x', refused in turn)
    if home and home != "~" and (value == home or value.startswith(home + "/")):
        below = value[len(home):].lstrip("/")
        typer.echo(f"nodeweave: note: {flag} {value} is under this machine's home ({home}), which your shell puts "
                   f"for an unquoted ~; for each host's own home write {flag} '~/{below}' (quoted)", err=True)


def open_cluster(spec_path: Path, given, dry_run: bool = False, for_up: bool = False, extra=None, judge=None,
                 judge_backend=None):
    """(spec, backend, checked options): flags, else what ``up`` remembered for this job, else defaults.

    Outside a dry run, a machine without the target's tool (engine, kubectl, ssh), or a platform that cannot be
    asked at all (kubectl reaches no cluster), is refused here, with exit 3, before anything is announced, written
    or started: the words the dry run's note foretells (``first_refusal``). What the job's names point at on the
    platform is read (a dry run too: reading changes nothing) and refused, exit 3, when another folder's
    ``up`` made it (nodeweave.cluster.identity); a real ``up`` records what it makes (``remember_up``) once its
    own flags are judged. A flag given that does nothing for the chosen target is refused (``refuse_idle_flags``;
    ``extra``: the verb's own flags that are for some targets by name) before any value is judged or
    --hosts-file read: that a flag does nothing is the first thing wrong with it (walk5 W18). ``judge(spec)``: the
    verb's own words checked against the spec before the tools are asked for, so a mistake is exit 2 whatever the
    machine has; ``judge_backend(backend)`` the same for words judged on the target (up's --hold, --image).
    Another job's damaged record of this folder is noted after those judgements and before the tools are asked
    for, so a machine without them still names it (the README's test command runs with no engine or kubectl).
    """
    from nodeweave.cluster import open_backend
    from nodeweave.cluster.onbackend import refuse_foreign
    from nodeweave.cli.habits.othertools import short_meant
    from nodeweave.cluster.options import FLAG_TARGETS, check_host_count, load_state, refuse_idle_flags, \
        unreadable_records
    from nodeweave.cluster.recorded import recorded_namespace, renamed_jobs, renamed_line
    from nodeweave.spec import load_spec

    spec = load_spec(spec_path)  # the verb has found it (find_spec) before
    saved = load_state(spec_path, spec.name)  # reads only: a dry run writes nothing
    target = _spec_target(given.merged(saved), spec, spec_path).resolved_target()
    meant = short_meant(given, target, FLAG_TARGETS)
    if meant:  # `logs -n 5`: tail's count, not a namespace (walk10 C13)
        from nodeweave.errors import UsageError

        raise UsageError(meant)
    refuse_idle_flags(given, target, extra)
    given = given.with_hosts_file_read().with_engine_said(target)
    if given.remote_dir:
        note_local_home("--remote-dir", given.remote_dir)
    merged = given.merged(saved)
    if spec.hosts:
        merged = _spec_hosts(merged, spec, spec_path)
    merged = _spec_target(merged, spec, spec_path)
    checked = recorded_namespace(spec, spec_path, merged.checked(), given, for_up)
    if checked.target == "hosts":
        spec = _nodes_from_hosts(spec, checked.hosts)
        check_host_count(checked.hosts, spec.nodes, spec.recovery.spare_nodes, spec.recovery.enabled)
    if judge is not None:
        judge(spec)
    backend = open_backend(spec, spec_path, checked)
    if judge_backend is not None:
        judge_backend(backend)
    for line in unreadable_records(spec_path, spec.name):  # what is wrong here is said before the machine is asked
        typer.echo(f"nodeweave: note: {line}", err=True)
    if not dry_run and (for_up or not backend.recorded_nothing()):
        # a job nothing is recorded of is said as not up, not judged by the tools it would use
        refused = first_refusal(backend)  # what its dry run notes as "the real VERB would end with exit 3"
        if refused is not None:
            raise refused
    refuse_foreign(backend)
    backend.renamed = tuple(renamed_line(made, spec, spec_path) for made in renamed_jobs(spec, spec_path))
    from nodeweave.cluster.options import default_target_note

    # the spec's target section the default target does not read (replay10 A25): in every dry run's plan, and said
    # by a real `up`, the verb that picks the target and remembers it; the other verbs act on what is up (nothing
    # up: their refusal is their one line; up: the target is remembered, so there is no note)
    backend.target_note = default_target_note(given.merged(saved), spec, checked.target)
    if backend.target_note and not dry_run and for_up:
        typer.echo(f"nodeweave: note: {backend.target_note}", err=True)
    return spec, backend, checked


def remember_up(spec_path: Path, spec, checked, backend) -> None:
    """A real ``up``, its flags judged: what it was told, and what it makes (``.nodeweave/<job>/cluster.json``)."""
    from nodeweave.cluster.onbackend import made
    from nodeweave.cluster.options import record_made

    record_made(spec_path, spec.name, checked, made(backend))


def _spec_hosts(options, spec, spec_path=None):
    """The spec's hosts list (node 0 first) is the hosts target's default; --host must name the same hosts."""
    from dataclasses import replace

    from nodeweave.errors import UsageError

    from nodeweave.cluster.options import spec_hosts

    if not options.hosts:
        return replace(options, hosts=spec_hosts(spec, spec_path), target=options.target or "hosts")
    from nodeweave.entrypoint.hostport import host_key

    named = [h.rpartition("@")[2] for h in options.hosts]
    if [host_key(h) for h in named] != [host_key(h) for h in spec.hosts]:
        raise UsageError(f"--host names {ranges(named)} but the spec's hosts are {ranges(spec.hosts)} (node 0 "
                         "first; compose/hosts gives each its rank): give the same hosts in the same order, "
                         "as user@host if you like, or none")
    return options


def _nodes_from_hosts(spec, hosts):
    """A spec that leaves ``nodes`` out runs on as many nodes as the hosts given (--host, --hosts-file), less
    recovery's spares (the last hosts); a spec that sets it keeps it, and a different host count is still
    refused (check_host_count)."""
    from dataclasses import replace

    from nodeweave.spec.model import NodeRange

    training = len(hosts) - spec.recovery.spare_nodes
    if spec.nodes_given or not hosts or spec.nodes.min == training or training < 1:
        return spec
    return replace(spec, nodes=NodeRange(training, training))


def _spec_target(options, spec, spec_path=None):
    """No target said or remembered: the spec's default (``spec_default``: an OpenShift spec is for its cluster,
    so kubernetes, oc from the spec, rather than this machine's compose)."""
    from nodeweave.cluster.options import spec_default

    return spec_default(options, spec, spec_path)


def spec_command(spec) -> List[str]:
    """The spec's own command: what a held node's plan is made for."""
    return [spec.launcher.script, *spec.launcher.args]


def default_mode(spec) -> str:
    """The mode ``up`` starts nodes in without --hold/--run: the spec's ``launcher.mode``."""
    return spec.launcher.mode


def console(stderr: bool = False):
    from nodeweave.usertext import console as people_console

    from nodeweave.cli.habits.output import table_width

    return people_console(stderr=stderr, width=table_width())


def say(out):
    """What a plan's executor prints a line of what it does with: ``out``, as the line is (no markup)."""
    return lambda line: out.print(line, highlight=False, markup=False, soft_wrap=True)


def foretold(verb: str, code: int, line: str):
    """:func:`nodeweave.plan.foretold`, imported when a verb says one (the plan's modules stay off start-up)."""
    from nodeweave.plan import foretold as said

    return said(verb, code, line)


def show_plan(plan, fmt: str, backend=None, nodes=None, verb: str = "", ends: int = 0, if_up=()) -> None:
    """A dry run: the plan as lines a person could paste, or (``-o json|yaml``, ``--json``) its ``to_dict()``;
    then the exit of its first :class:`Foretold` note, if any, else ``ends`` (a refusal the verb said itself).
    ``if_up``: notes said only where nothing says the nodes are not up (where they are not, ``up`` says them).

    With ``backend``, its notes say what the real run would meet first, as ``image build --dry-run``
    does: this machine lacks the target's tool, or (``nodes``) the nodes are not up.
    """
    from dataclasses import replace

    from nodeweave.cli.habits.output import emit
    from nodeweave.plan import Foretold, plan_lines

    failing = would_fail(backend, nodes, verb) if backend is not None else []
    if backend is not None:
        said = getattr(backend, "target_note", "")  # the spec's section the default target does not read (A25)
        plan = replace(plan, notes=(*([said] if said and said not in plan.notes else []), *plan.notes, *failing,
                                    *([] if failing else if_up)))
    if not emit(plan.to_dict(), fmt):
        for line in plan_lines(plan):
            typer.echo(line)
    if any(not isinstance(note, Foretold) for note in failing):
        return  # nothing up, or the platform not reached: the real verb ends on that first; its dry run notes it
    ending = next((note.exit_code for note in plan.notes if isinstance(note, Foretold)), ends)
    if ending:
        raise typer.Exit(ending)


def first_refusal(backend):
    """What every real verb of ``backend`` refuses with before it writes, announces or starts anything (exit 3),
    and what its dry run notes instead: this machine lacks the target's tool, or the platform cannot be asked at
    all (kubectl reaches no cluster: replay N1, where the real ``down`` wrote its tree and failed on the delete).
    None: neither."""
    from nodeweave.errors import EnvironmentProblem

    try:
        backend.check_tools()
    except EnvironmentProblem as err:
        return err
    unreached = backend.reach_problem()
    return EnvironmentProblem(unreached) if unreached else None


def would_fail(backend, nodes, verb: str, said_as: str = "") -> "list[str]":
    """What the real ``verb`` would refuse with, asking only what a dry run may read, as :class:`Foretold` notes
    (``said_as``: the verb as the note names it, where ``verb`` is the refusal's word); empty: nothing."""
    from nodeweave.cluster.onbackend import down_line
    from nodeweave.errors import EnvironmentProblem, NodeweaveError

    named = said_as or verb
    refused = first_refusal(backend)
    if refused is not None:  # no engine, kubectl or ssh here, or the platform unreachable: a step not taken yet
        return [f"the real {named} would end with exit 3: {refused}"]
    stood_in = backend.nodes_refused  # the dry run's placeholders stand where the real nodes() refuses: its line
    if stood_in is not None:
        return [f"the real {named} would end with exit {getattr(stood_in, 'exit_code', 1)}: {stood_in}"]
    if not nodes:
        return []
    try:
        line = down_line(backend, nodes, verb)
    except (EnvironmentProblem, OSError) as err:  # the platform could not be asked
        line = str(err)
    except NodeweaveError as err:  # it answered with an error (a scheduler with no controller): a note, no verdict
        return [f"whether the nodes are up could not be asked: {err}"]
    if line:  # a note where nothing is up; certain where some of the nodes are up and others not (walk17a A10)
        return [foretold(named, 3, line) if _some_up(backend, nodes)
                else f"the real {named} would end with exit 3: {line}"]
    if backend.unanswered:
        return [f"whether the nodes are up could not be asked: {backend.unanswered}"]
    return _busy(backend, nodes, verb)


def _some_up(backend, nodes) -> bool:
    """Whether the platform says any of ``nodes`` is up: then the nodes' refusal was read, not guessed."""
    try:
        return any(not seen.state.down for seen in backend.states(nodes).values())
    except Exception:  # noqa: BLE001 - the platform could not be asked: nothing read, a note
        return False


def _busy(backend, nodes, verb: str) -> "list[str]":
    """The run in progress the real ``verb`` would refuse (``onbackend.BUSY_CONSEQUENCE``'s verbs but up, whose
    plan says it itself), as its dry run's note (replay11 C1: `run --dry-run` printed a clean plan while a run was
    in progress, and the real one ended with exit 3)."""
    from nodeweave.cluster.onbackend import BUSY_CONSEQUENCE, busy_line
    from nodeweave.errors import NodeweaveError

    if verb not in BUSY_CONSEQUENCE or verb == "up":
        return []
    try:
        line = busy_line(backend, nodes, verb)
    except (NodeweaveError, OSError):  # the nodes could not be asked: the real verb asks again
        return []
    return [foretold(verb, 3, line)] if line else []  # the nodes are up and said so: certain


def cluster_nodes(backend, spec, dry_run: bool = False):
    """The cluster's nodes; a dry run only reads (a StatefulSet's live replicas, else the spec's count)."""
    return backend.nodes(dry_run=dry_run)
