"""What to sync where: the command line and the spec turned into one ``SyncRequest``.

Everything a user can get wrong is judged here, before the machine is asked
for tools: DEST, the filter rules (``--exclude``, ``.nodeweaveignore``) and
every target name. Defaults come from the spec (SRC = ``workspace.host_path``,
DEST = ``workspace.path``, targets = the StatefulSet's pods ``<name>-0..N-1``
in its namespace and container, written once through pod 0 when they share a
``claim: shared`` volume). The cluster or engine is asked only when a flag
needs it (``--selector``, ``--statefulset`` without ``--replicas``,
``--compose-project``, an elastic spec).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from nodeweave import remote
from nodeweave.cluster.base import NothingToSend  # noqa: F401  (sync's outcome; a backend says it too: Slurm)
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError
from nodeweave.plan import foretold
from nodeweave.remote import discover
from nodeweave.remote.names import check_dns_label, refuse
from nodeweave.specpath import host_folder, is_stream, spec_folder
from nodeweave.sync.filters import FileSet, Filter, build_filter, refuse_credentials_asked, refuse_nothing_to_send
from nodeweave.sync.verify import GitInfo, git_info

METHODS = ("auto", "stream", "rsync", "tar")
RELAY_MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class TargetArgs:
    """Where the command line says to sync (all optional: the spec fills the gaps)."""

    to: "tuple[str, ...]" = ()
    hosts_file: "Path | None" = None
    statefulset: "str | None" = None
    replicas: "int | None" = None
    selector: "str | None" = None
    compose_project: "str | None" = None
    engine: str = "podman"
    namespace: "str | None" = None
    container: "str | None" = None
    kube_cli: "str | None" = None
    options: remote.RemoteOptions = remote.RemoteOptions()

    @property
    def explicit(self) -> bool:
        return bool(self.to or self.hosts_file or self.statefulset or self.selector or self.compose_project)

    def needs_spec(self) -> bool:
        """Whether a default only the spec can give is needed (so a broken spec elsewhere is not read)."""
        pods_without_namespace = self.namespace is None and any(_names_a_pod(t) for t in self.to)
        return not self.explicit or pods_without_namespace or bool(self.statefulset or self.selector)


def _names_a_pod(text: str) -> bool:
    try:
        return remote.target_kind(text).namespaced
    except UsageError:  # judged, with its message, when the targets are made
        return False


@dataclass(frozen=True)
class FilterArgs:
    excludes: "tuple[str, ...]" = ()
    default_excludes: bool = True
    gitignore: bool = True
    include_secrets: bool = False


@dataclass(frozen=True)
class SyncOptions:
    """How to sync: the same for every target of one run."""

    delete: bool = False
    dry_run: bool = False
    check: bool = False  # move nothing: compare every target with SRC
    verify: bool = True
    compress: bool = False
    method: str = "auto"  # auto | stream | rsync | tar (see plan.choose_method)
    jobs: int = 8
    retries: int = 2
    backoff_s: float = 1.0
    shared: bool = False  # every target mounts the same storage at DEST: write once, check all
    relay: str = "auto"  # targets forward a group's payload to each other (see sync/transport/relay.py)

    def __post_init__(self):
        if self.method not in METHODS:
            raise refuse("--method", self.method, " | ".join(METHODS))
        if self.relay not in RELAY_MODES:
            raise refuse("relay mode", self.relay, " | ".join(RELAY_MODES))


@dataclass(frozen=True)
class SyncRequest:
    src: Path
    dest: str
    targets: "tuple[remote.Remote, ...]"
    fileset: FileSet
    filt: Filter
    options: SyncOptions = SyncOptions()
    git: GitInfo = field(default_factory=GitInfo)
    notes: "tuple[str, ...]" = ()  # a dry run's: what the real sync would meet first (the cluster is not up)
    left_out: "tuple[str, ...]" = ()  # the spec's own files (launcher.script, image.requirements) the rules leave out
    named_directly: bool = False  # targets named on the command line, not a cluster `up` made: their marks are asked


def load_spec_if_present(path: Path):
    if not (path.is_file() or is_stream(path)):  # a pipe (`--spec <(...)`) is a spec too (W76)
        return None
    from nodeweave.spec import load_spec

    return load_spec(path)


def resolve_src(src: "Path | None", spec, spec_path: Path) -> Path:
    """SRC: an existing directory, made absolute (default: the spec's workspace.host_path, else .)."""
    if src is None:
        src = host_folder(spec.workspace.host_path, spec_folder(spec_path)) if spec else Path(".")
    if not src.is_dir():
        from nodeweave.entrypoint.bounded import not_a_folder

        raise UsageError(f"SRC {str(src)!r} {not_a_folder(src)}: give the workspace folder to send")
    check_src(src)
    refuse_state_src(src, spec_path)
    return src.resolve()


def refuse_state_src(src: Path, spec_path: Path) -> None:
    """SRC is never nodeweave's own state, nor a folder inside it: a ``.nodeweave/`` folder (cluster.json, each
    job's token) or the run folders beside the spec. The rule that holds them back is judged on paths relative to
    SRC, so giving the state folder itself as SRC turned it off and pushed the job token (walk7 A2)."""
    from nodeweave.cluster.runfolder import RUNS

    real = src.resolve()
    if ".nodeweave" in real.parts:
        state = Path(*real.parts[:real.parts.index(".nodeweave") + 1])
        raise UsageError(f"SRC {str(src)!r} is not accepted ({real} is nodeweave's own state, {state}: the cluster "
                         "record and the job's token, never workspace to send): give the project folder, which sync "
                         "sends without its .nodeweave/ (--exclude '!.nodeweave/' is the explicit way to send it)")
    runs = spec_folder(spec_path).resolve() / RUNS
    if real == runs or runs in real.parents:
        raise UsageError(f"SRC {str(src)!r} is not accepted ({real} is in the run folders {runs}, this machine's "
                         "record of past runs and their variables, never workspace to send): give the project "
                         "folder, or copy what the nodes need out of the run folder first")


def check_src(src: Path) -> None:
    """SRC is a workspace folder: never ``/`` or a system folder (``/etc``, ``/usr``, ``/home``, ...), whose whole
    tree would be walked and sent (and mirrored over DEST with --delete); nor a home itself or a credential folder,
    whose keys and tokens would land on every node (walk6 W69): the same folders DEST refuses, judged as the
    spec's workspace.host_path is (``shared_folder_problem``)."""
    from nodeweave.remote.names import shared_folder_problem

    real = str(src.resolve())
    why = shared_folder_problem(real)
    if why:
        raise UsageError(f"SRC {str(src)!r} is not accepted ({why}): give the workspace folder to send, such as . "
                         "or ~/project")


def resolve_paths(src: "Path | None", dest: "str | None", spec, spec_path: Path) -> "tuple[Path, str]":
    """SRC (an existing directory, made absolute) and DEST (checked, normalised)."""
    src = resolve_src(src, spec, spec_path)
    if dest is None:
        if spec is None:
            raise UsageError("DEST is missing: give the absolute directory on the targets "
                             f"(or a spec, {spec_path}, whose workspace.path says it)")
        return src.resolve(), remote.check_dest(spec.workspace.path, f"DEST (workspace.path of {spec_path})")
    return src.resolve(), remote.check_dest(dest, home=True)


def _named_targets(args: TargetArgs, spec, dry_run: bool) -> "tuple[list, tuple]":
    """(targets, notes) of the targets named on the command line. Finding none there (a compose project with no
    container, a selector or StatefulSet the API cannot be asked for) ends a real sync with its exit code; a dry
    run, as every verb's, plans no target and notes the exit the real sync would end with (bad input stays exit 2)."""
    try:
        found = resolve_targets(args, spec)
    except UsageError:
        raise
    except NodeweaveError as err:
        if not dry_run:
            raise
        return [], (f"the real sync would end with exit {err.exit_code}: {err}",)
    # a dry run notes a named node this machine can tell is not there (a local engine's container; walk12 A20), as
    # it notes a compose project with no container
    missing = [f"{target.label}: {why}" for target in found for why in [target.absent() if dry_run else ""] if why]
    return found, ((foretold("sync", 1, "; ".join(missing)),) if missing else ())  # certain: the engine said so


def _not_mounting(found: list, src: Path, dest: str) -> "tuple[list, list[str]]":
    """(the targets that do not bind-mount SRC at DEST, the "nothing to send" line of each that does); a DEST in a
    folder a named container mounts from this machine other than SRC is refused (exit 2) by :func:`mount_answer`."""
    kept, mounted = [], []
    for target in found:
        said = mount_answer(target.host_mounts(), src, dest, f"{target.label} mounts")
        if said:
            mounted.append(said)
        else:
            kept.append(target)
    return kept, mounted


def resolve_targets(args: TargetArgs, spec) -> "list[remote.Remote]":
    """Every target named on the command line (the cluster's own nodes come from ``recorded_cluster``)."""
    openshift = bool(spec and spec.kubernetes.openshift)
    kind = remote.pod_kind(args.kube_cli) if args.kube_cli else remote.cluster_kind(openshift)
    engine = remote.engine_kind(args.engine)
    ns = args.namespace or (spec.kubernetes.namespace if spec else None)
    where = dict(namespace=ns, container=args.container, options=args.options)
    found = [remote.parse_target(t, **where) for t in args.to]
    if args.hosts_file is not None:
        found += discover.read_hosts_file(args.hosts_file, options=args.options)
    remote.refuse_same_host(found)
    if args.selector is not None:
        found += discover.pods_by_selector(args.selector, kind=kind, **where)
    elif args.statefulset is not None:
        check_dns_label(args.statefulset, "StatefulSet name")  # before asking the cluster
        count = args.replicas or discover.statefulset_replicas(args.statefulset, kind=kind, namespace=ns,
                                                               options=args.options)
        if spec is not None and args.statefulset == spec.name and args.container is None:
            from nodeweave.targets.kubernetes.common import CONTAINER

            where["container"] = CONTAINER  # the spec's own pods: the container its manifests define
        found += discover.statefulset_targets(args.statefulset, count, kind=kind, **where)
    if args.compose_project is not None:
        found += discover.compose_targets(args.compose_project, engine=engine, options=args.options)
    if not found:
        raise UsageError("no targets: give --node KIND:NAME, --hosts-file, --statefulset or "
                         "--compose-project, or run where nodeweave.yaml is (--spec)")
    labels = [t.label for t in found]
    dupes = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dupes:
        raise UsageError(f"target(s) named twice: {', '.join(dupes)}")
    return found


def recorded_cluster(spec, spec_path: Path, given=None, fallback: bool = True, dry_run: bool = False,
                     typed=None, src: "Path | None" = None, dest: "str | None" = None, choose=None):
    """(remotes, folder) of the cluster ``-t/--target`` names (``given``, ClusterOptions), else the one
    ``nodeweave up`` recorded for this job (.nodeweave/cluster.json), else the spec's default cluster, as
    every verb picks it (``spec_default``; ``fallback`` False: None instead); None without a spec. The third item:
    notes; a dry run of a cluster that is not up plans its nodes anyway, with the note the real sync would fail with.
    ``typed``: (ClusterOptions, extra) of the reach flags typed on the command line, each judged on the target
    resolved here (typed, recorded or the default), as every verb judges them (``refuse_idle_flags``)."""
    if spec is None:
        return None
    from nodeweave.cluster import open_backend
    from nodeweave.cluster.onbackend import refuse_foreign
    from nodeweave.cluster.options import ClusterOptions, load_state, spec_default

    saved = load_state(spec_path, spec.name)
    given = ClusterOptions() if given is None else given.with_hosts_file_read()
    # $NODEWEAVE_ENGINE is --engine where none is typed, as every verb reads it (with_engine_said, walk14 A9)
    given = given.with_engine_said(spec_default(given.merged(saved), spec, spec_path).resolved_target())
    saved = given.merged(saved)
    if saved.target is None and not fallback:
        return None
    from nodeweave.cluster.options import default_target_note

    chosen = spec_default(saved, spec, spec_path).checked()
    # the spec's target section the default target does not read, as every verb notes it (replay10 A25)
    extra = tuple(n for n in [default_target_note(saved, spec, chosen.target)] if n)
    saved = chosen
    if typed is not None:
        from nodeweave.cluster.options import refuse_idle_flags

        refuse_idle_flags(typed[0], saved.target, typed[1])
    backend = open_backend(spec, spec_path, saved)
    refuse_foreign(backend)  # another folder's job of the same name is not this one's to sync into
    mounted = mounted_dest(backend, src, dest or spec.workspace.path) if src is not None else None
    try:
        if mounted:  # nothing to send, but a machine without the target's engine still says so first
            _require_mounted_up(backend, choose)
            backend.check_tools()
        else:
            found = backend.sync_targets()
    except EnvironmentProblem as err:  # not up, or the platform does not answer: exit 3 ...
        if not dry_run:
            raise
        # ... which a dry run, as every verb's, says in a note and plans the nodes `up` would start
        note = f"the real sync would end with exit 3: {err}"
        if mounted:
            raise NothingToSend(mounted, (*extra, note)) from None
        return ([node.remote for node in backend.nodes(dry_run=True)], spec.workspace.path, (*extra, note))
    if mounted:
        raise NothingToSend(mounted, extra)
    return (*found, extra)


def _require_mounted_up(backend, choose) -> None:
    """Exit 3 when a node ``--node`` picked (every node without it) is not up, its hint leaving ``sync`` out: the nodes
    mount SRC, so nothing is ever to be synced there (walk6, W27: the hint said `up --hold`, then `sync`, then `run`,
    and named node-0 for ``--node 1``)."""
    from nodeweave.cluster.base import MOUNTED_SYNC
    from nodeweave.cluster.onbackend import require_up

    nodes = backend.nodes()
    if choose is not None:
        picked = choose([node.remote for node in nodes])
        nodes = [node for node in nodes if node.remote in picked]
    require_up(backend, nodes, MOUNTED_SYNC)


def mounted_dest(backend, src: Path, dest: str) -> "str | None":
    """When DEST is inside a folder the nodes bind-mount from this machine (the local target's workspace), a sync
    would write that folder through every container at once (with --delete, removing files there), the user's own
    folder (W36): when it is SRC itself, the note that there is nothing to send (the nodes already see it; raised as
    :class:`NothingToSend` once the nodes are known to be up, so a cluster not up still says so), else exit 2,
    before the nodes are asked. None: DEST is not a mount of this machine's."""
    return mount_answer(backend.host_mounts(), src, dest, f"target {backend.target}: the nodes mount")


def mount_answer(mounts, src: Path, dest: str, who: str) -> "str | None":
    """:func:`mounted_dest`'s answer for bind mounts ``mounts`` ((folder here, path in the node)), ``who`` naming
    the nodes that mount them: one rule for a cluster's nodes and for a container named with --node (walk17 A5:
    `sync . /workspace --node podman:NAME` was planned, then told to write "in the workspace")."""
    import posixpath

    for host, inside in mounts:
        host = Path(host)
        below = posixpath.relpath(dest, inside)
        if below == ".." or below.startswith("../"):
            continue
        folder = (host / below).resolve() if below != "." else host.resolve()
        said = f"{who} {host} at {inside}, so DEST {dest} is {folder} on this machine"
        if folder == src:
            return f"nothing to send: {said}, SRC itself; every node sees each change at once"
        raise UsageError(f"{said}: a sync would write {src} into it through the nodes, over your files there; copy "
                         "what you need into it on this machine, or give a DEST outside the nodes' mounts")
    return None




def recorded_hosts(spec, spec_path: Path):
    """([], folder) of the bare hosts `up -t hosts` recorded for this job, read from the record alone (no host
    asked): the folder ssh targets named directly are sent to with DEST left out; None: no hosts cluster recorded."""
    if spec is None:
        return None
    from nodeweave.cluster import open_backend
    from nodeweave.cluster.options import TARGET_ALIASES, load_state

    saved = load_state(spec_path, spec.name)
    if TARGET_ALIASES.get(saved.target, saved.target) != "hosts":
        return None
    return [], open_backend(spec, spec_path, saved).dir


def hosts_workspace(spec, recorded, found) -> str:
    """DEST on bare ssh hosts: the workspace folder up recorded, else an absolute workspace.host_path."""
    if recorded is not None and all(t.kind == "ssh" for t in recorded[0]):  # ([], folder): recorded_hosts
        return recorded[1]
    if spec is not None and spec.workspace.host_path.startswith("/"):
        return spec.workspace.host_path
    raise UsageError(f"DEST is missing for ssh target(s) {', '.join(t.label for t in found)}: give the workspace "
                     "folder on the hosts (the --remote-dir of `nodeweave up --target hosts`, which sync then "
                     "remembers); workspace.path is the folder inside a container")


def run_folders(src: Path, spec_path: Path) -> "list[str]":
    """The run folders nodeweave writes (``runs/`` beside the spec), relative to ``src`` when they are under it:
    the workstation's record of past runs, never workspace to send (W10)."""
    from nodeweave.cluster.runfolder import RUNS

    runs = spec_folder(spec_path) / RUNS
    try:
        return [runs.relative_to(src).as_posix()]
    except ValueError:
        return []


def checkpoint_folders(spec) -> "list[str]":
    """The job's checkpoint folder (``recovery.checkpoint_dir``) relative to the workspace, when it lies in it: the
    nodes' saves there are the job's, never workspace to send, so a push does not lay a stale local save over
    them and ``--delete`` keeps them (W56: only the literal ``checkpoints/`` was held back)."""
    import posixpath

    from nodeweave.entrypoint.systemfolders import normal_path

    if spec is None or not spec.recovery.checkpoint_dir:
        return []
    folder = normal_path(spec.recovery.checkpoint_dir)
    inside = normal_path(spec.workspace.path)
    if folder.startswith("/"):
        if not folder.startswith(inside.rstrip("/") + "/"):
            return []  # on a volume of its own or in the container's layer: no part of the workspace
        folder = posixpath.relpath(folder, inside)
    return [] if folder == "." or folder.startswith("../") or folder == ".." else [folder]


def build_request(src: "Path | None", dest: "str | None", targets: TargetArgs, filters: FilterArgs,
                  options: SyncOptions, spec_path: Path, shared: "bool | None" = None, cluster=None,
                  choose=None, typed=None) -> SyncRequest:
    """Judge every input, then walk SRC: the whole "what to sync where", before any tool runs.

    ``cluster`` (ClusterOptions, from ``-t/--target``) names the cluster whose nodes are the targets;
    ``choose`` (the ``--node`` selection) keeps some of the targets, in their order.
    """
    if cluster is not None and targets.explicit:
        raise UsageError("--target names a cluster whose nodes are the targets; --node KIND:NAME, --hosts-file, "
                         "--statefulset, --selector and --compose-project name targets without one: give one way")
    needs = targets.needs_spec() or src is None or dest is None or cluster is not None
    spec = load_spec_if_present(spec_path) if needs else None
    if cluster is not None and spec is None:
        raise UsageError(f"--target names the cluster of a spec, and {spec_path} is not there: give --spec, or name "
                         "the targets with --node KIND:NAME")
    if options.delete and not options.check and src is not None and dest is None:
        refuse_delete_into_a_default(src, spec)
    src = resolve_src(src, spec, spec_path)
    if dest is None:
        resolve_paths(src, dest, spec, spec_path)  # names the missing DEST, or the spec's workspace.path sync refuses
    dest = remote.check_dest(dest, home=True) if dest is not None else None
    filt = build_filter(src, extra_excludes=list(filters.excludes), default_excludes=filters.default_excludes,
                        include_secrets=filters.include_secrets, use_gitignore=filters.gitignore,
                        state=run_folders(src, spec_path),
                        checkpoints=checkpoint_folders(spec or _spec_beside(spec_path)))
    # targets named on the command line are the targets, whether or not DEST was typed: the recorded cluster (its
    # nodes, whether they are up, whether they mount SRC) is never asked then (walk16a A23: `sync --node ssh:gpu01`
    # with DEST left out answered for the local cluster up had made, "nothing to send", or "not up", exit 3)
    recorded = None if targets.explicit else recorded_cluster(
        spec, spec_path, cluster, dry_run=options.dry_run, typed=typed, src=src, dest=dest, choose=choose)
    if recorded:
        found, notes = recorded[0], recorded[2]
    else:
        found, notes = _named_targets(targets, spec, options.dry_run)
    if choose is not None:
        found = choose(found)
    if dest is None and found and all(t.kind == "ssh" for t in found):
        dest = hosts_workspace(spec, recorded or recorded_hosts(spec, spec_path), found)
    elif dest is None and recorded:
        dest = recorded[1]
    _, dest = resolve_paths(src, dest, spec, spec_path)
    if not recorded:  # a container named directly is judged by its own mounts, as the cluster's nodes are
        found, mounted = _not_mounting(found, src, dest)
        if mounted and not found:
            raise NothingToSend(mounted[0], notes)
        notes = (*notes, *mounted)
    tmpdir = (spec.env or {}).get("TMPDIR", "") if spec is not None else ""
    if tmpdir.startswith("/") and dest.startswith("/"):  # the spec's own $TMPDIR on the nodes: its nodeweave/ too
        remote.refuse_node_state(dest, tmpdirs=(tmpdir,))
    if options.delete and not options.check:
        from nodeweave.spec.model import Workspace


        remote.check_delete_dest(dest, (spec.workspace if spec is not None else Workspace()).path)
    if dest.startswith("~/") and any(t.kind != "ssh" for t in found):
        raise UsageError(f"DEST {dest!r} is not accepted for {', '.join(t.label for t in found if t.kind != 'ssh')}: "
                         "~/FOLDER is for ssh hosts only (each host's home); a container or pod needs an absolute "
                         "path such as /workspace")
    if shared is None:  # the spec's own pods on a claim: shared volume see one directory
        own_pods = not targets.explicit or (targets.statefulset == spec.name if spec is not None else False)
        shared = bool(spec is not None and own_pods and spec.kubernetes.claim == "shared"
                      and all(_names_a_pod(t.label) for t in found))
    # credentials sent on request travel only over each target's own exec channel, never relayed in the clear
    relay = "off" if filters.include_secrets and options.relay == "auto" else options.relay
    fileset = filt.walk(src)
    refuse_nothing_to_send(src, filt, fileset)
    asked = refuse_credentials_asked(fileset)
    return SyncRequest(src=src, dest=dest, targets=tuple(found), fileset=fileset, filt=filt,
                       options=replace(options, shared=shared, relay=relay), git=git_info(src), notes=notes,
                       left_out=spec_files_left_out(spec or _spec_beside(spec_path), spec_path, src, filt, fileset,
                                                     checking=options.check) + asked,
                       named_directly=not recorded)


def refuse_delete_into_a_default(src: Path, spec) -> None:
    """``--delete`` with SRC typed and DEST not: refused (exit 2), before any target is asked. A destructive flag
    never acts on a folder the user did not type: ``sync $SRC /data/x --delete`` with ``SRC`` unset reached
    nodeweave as ``sync /data/x --delete``, read /data/x as SRC and mirrored it over the spec's workspace on every
    node (walk7 A51). With neither typed, SRC and DEST are the spec's own pair (workspace.host_path to
    workspace.path: ``make sync SYNC_ARGS=--delete``), which is taken."""
    default = f"the spec's workspace.path, {spec.workspace.path}" if spec is not None else "the spec's workspace.path"
    raise UsageError(f"sync --delete with SRC {str(src)!r} and no DEST: DEST would be the default ({default}), which "
                     "was not typed, and --delete never empties a folder nodeweave chose; accepted: DEST given too "
                     f"(`nodeweave sync {src} DEST --delete`), or neither SRC nor DEST for the spec's own pair; if "
                     f"{src} was meant as DEST, SRC is missing (an unset variable? quote it: \"$SRC\")")


def _spec_beside(spec_path: Path):
    """The folder's spec, when SRC, DEST and the targets were all typed (none of them read it): its script and
    requirements are still the job's, so a rule leaving them out is still said (replay of W66); a spec that does
    not load is not this sync's business."""
    from nodeweave.errors import NodeweaveError

    try:
        return load_spec_if_present(spec_path)
    except NodeweaveError:
        return None


def spec_files_left_out(spec, spec_path: Path, src: Path, filt: Filter, fileset: FileSet,
                        checking: bool = False) -> "tuple[str, ...]":
    """A note for each file the spec's job needs (``launcher.script``, ``image.requirements``) that is in SRC but
    that a rule leaves out, naming the rule: the nodes would run an old copy or none (W66); with ``checking``
    (``--check``, which sends nothing), it is left out of the comparison."""
    if spec is None:
        return ()
    wanted = {"launcher.script": src / spec.launcher.script}
    if spec.image.requirements:
        wanted["image.requirements"] = spec_folder(spec_path) / spec.image.requirements
    notes = []
    for field_name, path in wanted.items():
        try:
            rel = path.resolve().relative_to(src).as_posix()
        except ValueError:
            continue
        if not path.is_file() or rel in fileset.files:
            continue
        parts = rel.split("/")
        rule = next((r for r in (filt.match("/".join(parts[:i + 1]), i < len(parts) - 1) for i in range(len(parts)))
                     if r is not None and r.action == "-"), None)
        by = f"{rule.origin} {(rule.given or rule.pattern)!r}" if rule is not None else "a rule"
        why = ("--check does not compare it, so an old copy or none on the nodes goes unseen" if checking else
               "the nodes would have an old copy or none")
        notes.append(f"{by} leaves out {field_name} {rel}: {why}; re-include it ('!{rel}')")
    return tuple(notes)


def check_tools(req: SyncRequest) -> None:
    """Exit 3 naming what this machine lacks: the targets' programs, and rsync when it is asked for.

    Without ``--method rsync`` rsync is optional here: targets with python3
    take a stream, the others rsync when both ends have it, else tar.
    """
    if req.options.method == "rsync" and not req.options.check and shutil.which("rsync") is None:
        raise EnvironmentProblem("rsync is not installed on this machine (apt-get install rsync); "
                                 "leave out --method rsync to send a tar stream instead")
    for tool in sorted({t.tool for t in req.targets}):
        if shutil.which(tool) is None:
            from nodeweave.failures import install_hint

            hint = install_hint(tool, address=True)  # the addresses' other spelling (replay11 R2)
            raise EnvironmentProblem(f"{tool} is not on PATH, and target(s) "
                                     f"{', '.join(t.label for t in req.targets if t.tool == tool)} need it"
                                     + (f" ({hint})" if hint else ""))
