"""``nodeweave sync``: the command line over ``nodeweave.sync`` (parse, build the request, run, report)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from nodeweave.cli.habits.base import find_spec, spec_option
from nodeweave.cli.habits.clusteropts import DEFAULT_TARGET_TEXT, HOST, REMOTE_DIR, TARGET
from nodeweave.cli.habits.nodes import NODE
from nodeweave.cli.habits.output import complete_from, data_format, output_option

SYNC_HELP = """Push SRC (default: the spec's workspace.host_path, else .) to DEST on every target at once.

Targets: the nodes of the cluster -t/--target names (default, as on every verb: {default_target};
not up: exit 3),
--node picking some as in every verb; or nodes
named directly: --node KIND:NAME (podman, docker, pod, oc, ssh, ssh+docker), --hosts-file,
--statefulset, --compose-project. The source is read once; every target says what differs there, targets needing the same files get one tar
stream, sent once to the first of them and forwarded target to target (relay; over each
exec channel where peers cannot connect; rsync where it pays or python3 is missing), and
every target's content digest and git commit are checked against the source. Nodes synced
before keep a resident agent: the next sync execs into the first target only. Exit 0: every
target matches; 1: names every target that failed; 2: bad input (named); 3: no engine or tool,
or the cluster is not up (a dry run notes it and exits 0, as every verb's), or a node named directly
is a container or pod another folder's `nodeweave up` made (its mark says which; docs/cluster.md).
--json prints JSON on stdout; everything else goes to stderr.
--dry-run prints the plan the real sync executes (one agent exec per target; -o json: as JSON,
what NODEWEAVE_PLAN_RECORD=FILE records of a real sync, and every path each target would be sent,
would_move), then what would move where (-o wide: every path, none cut to a few).
""".replace("{default_target}", DEFAULT_TARGET_TEXT)


def sync_command(
    src: Optional[Path] = typer.Argument(None, help="Local directory to send (default: spec workspace.host_path, else .)"),
    dest: Optional[str] = typer.Argument(None, help="Absolute directory on the targets, or '~/DIR' under each ssh host's home (default: spec workspace.path)"),
    node: List[str] = NODE,
    target: Optional[str] = TARGET,
    to: List[str] = typer.Option([], "--to", hidden=True, help="Deprecated: --node KIND:NAME"),
    host: List[str] = HOST,
    hosts_file: Optional[Path] = typer.Option(None, "--hosts-file", help="ssh hosts, one per line, master first "
                                              "(with -t hosts: the cluster's hosts, as every cluster verb takes it)"),
    remote_dir: Optional[str] = REMOTE_DIR,
    statefulset: Optional[str] = typer.Option(None, "--statefulset", help="Pods <NAME>-0..N-1 of this StatefulSet"),
    replicas: Optional[int] = typer.Option(None, "--replicas", min=1, help="N for --statefulset (default: ask the cluster)"),
    selector: Optional[str] = typer.Option(None, "--selector", "-l", help="Pods by label selector instead of ordinals"),
    compose_project: Optional[str] = typer.Option(None, "--compose-project", help="The running containers of this compose project"),
    engine: Optional[str] = typer.Option(None, "--engine", help="Engine for --compose-project: podman or docker "
                                         "(default: $NODEWEAVE_ENGINE, else podman where installed, else docker, as "
                                         "every verb picks)"),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Kubernetes namespace (default: the spec's)"),
    container: Optional[str] = typer.Option(None, "--container", "-c", help="Container in each pod (default: the pod's default)"),
    kube_cli: Optional[str] = typer.Option(None, "--kube-cli", autocompletion=complete_from("kubectl", "oc"), help="kubectl or oc (default: oc when the spec says openshift)"),
    kube_context: Optional[str] = typer.Option(None, "--kube-context", help="kubeconfig context"),
    ssh_option: List[str] = typer.Option([], "--ssh-option", help="Extra ssh -o KEY=VALUE (repeat)"),
    spec_path: Optional[Path] = spec_option("Cluster spec for defaults"),
    delete: bool = typer.Option(False, "--delete", help="Delete files on the targets that SRC lacks (excluded files are kept); "
                                "with SRC given, DEST must be given too"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (-o json: as JSON), then what would move "
                                 "where; change nothing"),
    check: bool = typer.Option(False, "--check", help="Move nothing: compare every target's digest and stamp with SRC"),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Compare content digests (else size and mtime, as rsync's quick check) and stamp"),
    exclude: List[str] = typer.Option([], "--exclude", "-x", help="gitignore pattern to leave out (repeat); '!pat' re-includes"),
    default_excludes: bool = typer.Option(True, "--default-excludes/--no-default-excludes", help="Leave out caches, venvs, .git and checkpoints"),
    gitignore: bool = typer.Option(True, "--gitignore/--no-gitignore", help="In a git checkout, also leave out what git ignores"),
    include_secrets: bool = typer.Option(False, "--include-secrets", help="Also send credential-like files (.env, prod.env, *.pem, .ssh/, the job token, ...); turns default relay off (refused with --relay)"),
    jobs: int = typer.Option(8, "--jobs", "-j", min=1, max=256, help="Targets synced at once (execs started at once; through the head, one round takes every target)"),
    retries: int = typer.Option(2, "--retries", min=0, max=10, help="Retries for transient failures, with exponential backoff"),
    compress: bool = typer.Option(False, "--compress", "-z", help="rsync -z, where rsync is used (worth it over slow links only; refused with --method stream or tar)"),
    method: str = typer.Option("auto", "--method", autocompletion=complete_from("auto", "stream", "rsync", "tar"), help="auto (a stream to targets with python3, else rsync or tar), stream, rsync or tar"),
    force_tar: bool = typer.Option(False, "--tar", help="Same as --method tar: the target's own tar -x receives"),
    relay: Optional[bool] = typer.Option(None, "--relay/--no-relay", help="Targets forward a payload to each other over TCP (each hop authenticated by a fresh token; the bytes unencrypted), so the source sends it once, and keep a resident agent so the next sync execs into one of them and reaches the rest through it; a target that cannot be reached so is fed over its own exec (default: payloads of 4 MiB or more, residents for 2+ targets; not over ssh, not with --include-secrets; --relay: always; --no-relay: never, and no resident)"),
    shared: Optional[bool] = typer.Option(None, "--shared/--no-shared", help="Targets mount the same storage at DEST: write through the first, check the rest (default: on for the spec's pods with kubernetes.claim: shared)"),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON on stdout (everything else goes to stderr)"),
    output: str = output_option(),
) -> None:
    from nodeweave.errors import EnvironmentProblem, UsageError
    from nodeweave.remote import RemoteOptions
    from nodeweave.sync import request as rq

    from nodeweave.cluster.backends.local import detect_engine

    addresses, choose = _nodes(node, to)
    if dest is not None:
        from nodeweave.cli.habits.clusteropts import note_local_home

        note_local_home("DEST", dest)
    from nodeweave.cluster.options import TARGET_ALIASES, TARGETS, ClusterOptions, refuse_idle_flags

    # the reach flags as typed: judged on -t's target here, else on the target the cluster resolves to
    if target is None and (host or remote_dir):  # the hosts of `-t hosts`, as every cluster verb takes them
        flag = "--host" if host else "--remote-dir"
        raise UsageError(f"{flag} names the hosts target's {'hosts' if host else 'folder'}: give -t hosts too "
                         "(`nodeweave sync -t hosts --host gpu01 --host gpu02`), or name ssh targets directly with "
                         "--node ssh:HOST or --hosts-file FILE and a DEST")
    cluster_hosts_file = hosts_file if target is not None else None  # -t hosts --hosts-file: the cluster's hosts
    hosts_file = None if target is not None else hosts_file
    typed = (ClusterOptions(target=target, engine=engine, namespace=namespace, kube_cli=kube_cli,
                            kube_context=kube_context, ssh_options=tuple(ssh_option), hosts=tuple(host),
                            hosts_file=cluster_hosts_file, remote_dir=remote_dir),
             {"--container": (container is not None, ("kubernetes",))})
    cluster = typed[0] if target is not None else None
    if target is not None and TARGET_ALIASES.get(target, target) in TARGETS:  # a wrong name is refused below
        refuse_idle_flags(typed[0], TARGET_ALIASES.get(target, target), typed[1])
    if target is None and (addresses or hosts_file or statefulset or selector or compose_project):
        _refuse_idle_transport_flags(addresses, hosts_file, statefulset or selector, compose_project, kube_cli,
                                     engine, namespace, container, ssh_option, kube_context)
    engine = detect_engine(engine) or "podman"
    targets = rq.TargetArgs(tuple(addresses), hosts_file, statefulset, replicas, selector, compose_project, engine,
                            namespace, container, kube_cli,
                            RemoteOptions(ssh_options=tuple(ssh_option), kube_context=kube_context))
    filters = rq.FilterArgs(tuple(exclude), default_excludes, gitignore, include_secrets)
    options = rq.SyncOptions(delete=delete, dry_run=dry_run, check=check, verify=verify, compress=compress,
                             method="tar" if force_tar else method, jobs=jobs, retries=retries,
                             relay="auto" if relay is None else ("on" if relay else "off"))
    spec_path = find_spec(spec_path)
    try:
        req = rq.build_request(src, dest, targets, filters, options, spec_path, shared, cluster, choose, typed)
    except rq.NothingToSend as said:  # the nodes mount SRC at DEST: exit 0, a plan of nothing that says why
        from nodeweave.cli.habits.clusteropts import show_plan
        from nodeweave.plan import Plan

        plan = Plan("sync", "the nodes' own mount of SRC", (), notes=(*said.notes, str(said)))
        fmt = data_format(as_json, output)
        if dry_run or fmt in ("json", "yaml"):
            show_plan(plan, fmt)
        else:
            typer.echo(f"nodeweave: {said}", err=True)
        return
    if req.named_directly:  # a node named directly: the job's own? asked of its engine or API (walk15 A20)
        from nodeweave.cluster.identity import refuse_foreign_reached

        refuse_foreign_reached(req.targets, spec_path, options.dry_run)
    try:
        rq.check_tools(req)
    except EnvironmentProblem as err:  # a dry run, as every verb's, notes what the real sync would end with
        if not dry_run:
            raise
        from dataclasses import replace

        req = replace(req, notes=(*req.notes, f"the real sync would end with exit 3: {err}"))
    from nodeweave.specpath import spec_folder

    _run_plan(req, data_format(as_json, output), spec_folder(spec_path))


def _run_plan(req, fmt: str, spec_dir: Path) -> None:
    """The sync's plan: a dry run prints it, then asks every target what would move (stderr under -o json|yaml),
    writing nothing; a real run hands it to the executor, whose sync phase is synced as planned."""
    from nodeweave.cli.habits.clusteropts import console, say, show_plan
    from nodeweave.cli.habits.output import is_data
    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.sync.display import run_and_show
    from nodeweave.sync.syncplan import SyncSession, sync_plan

    plan = sync_plan(req, full=fmt == "wide")
    if req.options.dry_run:
        from dataclasses import replace

        from nodeweave.cli.habits.output import emit
        from nodeweave.sync.display import would_move

        plan = replace(plan, notes=(*plan.notes, *req.notes))
        if req.notes or not is_data(fmt):  # not up, or a person reading: the plan, then what would move
            show_plan(plan, fmt)
        if req.notes:
            return
        results = run_and_show(req, "wide" if fmt == "wide" else "table", stderr=is_data(fmt))
        if is_data(fmt):  # one document: the plan and every path each target would be sent (walk15a A31)
            emit({**plan.to_dict(), "would_move": would_move(results)}, fmt)
        return
    for note in req.left_out:  # what the plan's notes say, said before the real sync too
        typer.echo(f"nodeweave: note: {note}", err=True)
    execute(plan, Execution(spec_dir, say(console(stderr=True)), syncs=SyncSession(req, fmt)))


def _refuse_idle_transport_flags(addresses, hosts_file, pods, compose_project, kube_cli, engine, namespace,
                                 container, ssh_option, kube_context) -> None:
    """The targets named directly, by their kinds (habits.reachkinds): a pod flag with no pod among them, or
    --ssh-option with no ssh host, is refused before a name is judged or the hosts file read (walk5 W18)."""
    from nodeweave import remote
    from nodeweave.cli.habits.reachkinds import kinds_named, refuse_idle_transport_flags

    also = ([remote.kind_class(kube_cli or "kubectl", "--kube-cli")] if pods else []) + (
        [remote.kind_class(engine or "podman", "--engine")] if compose_project else [])
    refuse_idle_transport_flags(kinds_named(addresses, "ssh", hosts_file is not None, also), "targets",
                                namespace=namespace, container=container, ssh_options=ssh_option,
                                kube_context=kube_context)


def _nodes(node: List[str], old_to: List[str]):
    """(KIND:NAME addresses reached directly, a chooser over the cluster's nodes or None) from --node."""
    from nodeweave.cli.habits.nodes import pick_nodes, split_addresses
    from nodeweave.errors import UsageError

    if old_to:
        from nodeweave.cli.habits.spellings import note_renamed

        note_renamed(f"sync --to {old_to[0]}", f"sync --node {old_to[0]}")
    addresses, picks = split_addresses([*node, *old_to])
    if addresses and picks:
        raise UsageError(f"--node {picks[0]} picks a node of the cluster and --node {addresses[0]} names one "
                         "directly; give one kind: indices/names of the cluster's nodes, or KIND:NAME addresses")
    if not picks:
        return addresses, None
    return addresses, lambda found: [t.remote for t in pick_nodes([_Target(i, t) for i, t in enumerate(found)], picks)]


class _Target:
    """A sync target as a node of the cluster (index = its place, node 0 first), for --node."""

    def __init__(self, index: int, remote) -> None:
        self.index, self.remote, self.name = index, remote, f"node-{index}"


def register(app: typer.Typer) -> None:
    app.command("sync", help=SYNC_HELP)(sync_command)
