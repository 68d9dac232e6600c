"""``nodeweave sync``: the command line over ``nodeweave.sync``."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from nodeweave import remote
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError
from nodeweave.remote import discover
from nodeweave.sync.filters import build_filter
from nodeweave.sync.transport import RsyncOptions

SYNC_HELP = """Push SRC (default: the spec's workspace.host_path, else .) to DEST on every target at once.

Targets: --to KIND:NAME (podman, docker, pod, oc, ssh), --hosts-file, --statefulset,
--compose-project; with none, the spec's StatefulSet pods <name>-0..N-1. rsync runs over
each target's exec channel (tar where the target has no rsync), then every target's
content digest and git commit are checked against the source. Exit 1 names every
target that failed.
"""


def _spec_or_none(path: Path):
    if not path.is_file():
        return None
    from nodeweave.spec import load_spec

    return load_spec(path)


def resolve_targets(*, to: "list[str]", hosts_file: "Path | None", statefulset: "str | None",
                    replicas: "int | None", selector: "str | None", compose_project: "str | None",
                    engine: str, namespace: "str | None", container: "str | None",
                    kube_cli: "str | None", spec,
                    options: remote.RemoteOptions) -> "list[remote.Remote]":
    """Every target named on the command line, or the spec's StatefulSet pods."""
    openshift = bool(spec and spec.kubernetes.openshift)
    kind = remote.pod_kind(kube_cli) if kube_cli else remote.cluster_kind(openshift)
    engine = remote.engine_kind(engine)
    ns = namespace or (spec.kubernetes.namespace if spec else None)
    where = dict(namespace=ns, container=container, options=options)
    found = [remote.parse_target(t, **where) for t in to]
    if hosts_file is not None:
        found += discover.read_hosts_file(hosts_file, options=options)
    if statefulset is not None or (selector is not None):
        if selector is not None:
            found += discover.pods_by_selector(selector, kind=kind, **where)
        else:
            count = replicas or discover.statefulset_replicas(statefulset, kind=kind, namespace=ns,
                                                              options=options)
            found += discover.statefulset_targets(statefulset, count, kind=kind, **where)
    if compose_project is not None:
        found += discover.compose_targets(compose_project, engine=engine, options=options)
    if not found and spec is not None:
        from nodeweave.manifests.common import CONTAINER

        count = replicas or (spec.nodes.min if not spec.nodes.elastic
                             else discover.statefulset_replicas(spec.name, kind=kind, namespace=ns,
                                                                options=options))
        found = discover.statefulset_targets(spec.name, count, kind=kind, namespace=ns,
                                             container=container or CONTAINER, options=options)
    if not found:
        raise UsageError("no targets: give --to KIND:NAME, --hosts-file, --statefulset or "
                         "--compose-project, or run where nodeweave.yaml is (--spec)")
    labels = [t.label for t in found]
    dupes = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dupes:
        raise UsageError(f"target(s) named twice: {', '.join(dupes)}")
    return found


def _check_tools(found: "list[remote.Remote]", need_rsync: bool) -> None:
    if need_rsync and shutil.which("rsync") is None:
        raise EnvironmentProblem("rsync is not installed on this machine (apt-get install rsync); "
                                 "use --tar to send with tar instead")
    for tool in sorted({t.tool for t in found}):
        if shutil.which(tool) is None:
            raise EnvironmentProblem(f"{tool} is not on PATH, and target(s) "
                                     f"{', '.join(t.label for t in found if t.tool == tool)} need it")


def sync_command(
    src: Optional[Path] = typer.Argument(None, help="Local directory to send (default: spec workspace.host_path, else .)"),
    dest: Optional[str] = typer.Argument(None, help="Absolute directory on the targets (default: spec workspace.path)"),
    to: List[str] = typer.Option([], "--to", "-t", help="A target KIND:NAME (repeat): podman:trainer-0, pod:llama-0, oc:llama-1, ssh:me@gpu01"),
    hosts_file: Optional[Path] = typer.Option(None, "--hosts-file", help="ssh hosts, one per line, master first"),
    statefulset: Optional[str] = typer.Option(None, "--statefulset", help="Pods <NAME>-0..N-1 of this StatefulSet"),
    replicas: Optional[int] = typer.Option(None, "--replicas", help="N for --statefulset (default: ask the cluster)"),
    selector: Optional[str] = typer.Option(None, "--selector", "-l", help="Pods by label selector instead of ordinals"),
    compose_project: Optional[str] = typer.Option(None, "--compose-project", help="The running containers of this compose project"),
    engine: str = typer.Option("podman", "--engine", help="Engine for --compose-project: podman or docker"),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Kubernetes namespace (default: the spec's)"),
    container: Optional[str] = typer.Option(None, "--container", "-c", help="Container in each pod (default: the pod's default)"),
    kube_cli: Optional[str] = typer.Option(None, "--kube-cli", help="kubectl or oc (default: oc when the spec says openshift)"),
    kube_context: Optional[str] = typer.Option(None, "--kube-context", help="kubeconfig context"),
    ssh_option: List[str] = typer.Option([], "--ssh-option", help="Extra ssh -o KEY=VALUE (repeat)"),
    spec_path: Path = typer.Option(Path("nodeweave.yaml"), "--spec", help="Cluster spec for defaults"),
    delete: bool = typer.Option(False, "--delete", help="Delete files on the targets that SRC lacks (excluded files are kept)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would move where; change nothing"),
    check: bool = typer.Option(False, "--check", help="Move nothing: compare every target's digest and stamp with SRC"),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Digest every target after the sync"),
    exclude: List[str] = typer.Option([], "--exclude", "-x", help="gitignore pattern to leave out (repeat); '!pat' re-includes"),
    default_excludes: bool = typer.Option(True, "--default-excludes/--no-default-excludes", help="Leave out caches, venvs, .git and checkpoints"),
    gitignore: bool = typer.Option(True, "--gitignore/--no-gitignore", help="In a git checkout, also leave out what git ignores"),
    include_secrets: bool = typer.Option(False, "--include-secrets", help="Also send credential-like files (.env, *.pem, .ssh/, ...)"),
    jobs: int = typer.Option(8, "--jobs", "-j", min=1, max=256, help="Targets synced at once"),
    retries: int = typer.Option(2, "--retries", min=0, max=10, help="Retries for transient failures, with exponential backoff"),
    compress: bool = typer.Option(False, "--compress", "-z", help="rsync -z (worth it over slow links only)"),
    force_tar: bool = typer.Option(False, "--tar", help="Use the tar fallback even where the target has rsync"),
    shared: Optional[bool] = typer.Option(None, "--shared/--no-shared", help="Targets mount the same storage at DEST: write through the first, check the rest (default: on for the spec's pods with kubernetes.claim: shared)"),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON instead of a table"),
) -> None:
    from nodeweave.sync.display import LiveTargets, changes_text, check_table, summary_table
    from nodeweave.sync.runner import SyncRequest, run_check, run_sync
    from nodeweave.sync.verify import git_info

    explicit = bool(to or hosts_file or statefulset or selector or compose_project)
    needs_spec = (src is None or dest is None or not explicit
                  or (namespace is None and any(remote.target_kind(t).namespaced for t in to if ":" in t))
                  or statefulset or selector)
    spec = _spec_or_none(spec_path) if needs_spec else None
    if src is None:
        src = (spec_path.parent / spec.workspace.host_path) if spec else Path(".")
    if not src.is_dir():
        raise UsageError(f"SRC {str(src)!r} is not a directory: give the workspace folder to send")
    if dest is None:
        if spec is None:
            raise UsageError("DEST is missing: give the absolute directory on the targets "
                             f"(or a spec, {spec_path}, whose workspace.path says it)")
        dest = spec.workspace.path
    dest = remote.check_dest(dest)
    options = remote.RemoteOptions(ssh_options=tuple(ssh_option), kube_context=kube_context)
    src = src.resolve()
    found = resolve_targets(to=to, hosts_file=hosts_file, statefulset=statefulset,
                            replicas=replicas, selector=selector, compose_project=compose_project,
                            engine=engine, namespace=namespace, container=container,
                            kube_cli=kube_cli, spec=spec, options=options)
    if shared is None:
        shared = bool(spec is not None and not explicit and spec.kubernetes.claim == "shared")
    # Bad input (a filter pattern, a .nodeweaveignore line) is judged before the machine is asked for tools.
    filt = build_filter(src, extra_excludes=exclude, default_excludes=default_excludes,
                        include_secrets=include_secrets, use_gitignore=gitignore)
    _check_tools(found, need_rsync=not (force_tar or check))
    fileset = filt.walk(src)
    console = Console(stderr=as_json, width=_table_width())
    if fileset.held_back_secrets:
        shown = ", ".join(fileset.held_back_secrets[:5])
        more = len(fileset.held_back_secrets) - 5
        console.print(f"[yellow]held back {len(fileset.held_back_secrets)} credential-like path(s): "
                      f"{shown}{f' and {more} more' if more > 0 else ''} (--include-secrets sends them)[/]")
    git = git_info(src)
    req = SyncRequest(src=src, dest=dest, targets=tuple(found), fileset=fileset, filt=filt,
                      rsync=RsyncOptions(delete=delete, dry_run=dry_run, compress=compress),
                      git=git, jobs=jobs, retries=retries, verify=verify, force_tar=force_tar,
                      shared=shared)
    with LiveTargets(found, console) as live:
        results, digest = (run_check if check else run_sync)(req, live.update)
    if as_json:
        typer.echo(json.dumps(_as_json(results, digest, git, fileset), indent=2))
    elif check:
        console.print(check_table(results, digest, git.commit))
    else:
        if dry_run:
            for line in changes_text(results):
                console.print(line, markup=False, highlight=False)
        title = (f"{len(fileset.files):,} files, {fileset.total_bytes / 2**20:.1f} MiB from {src} "
                 f"to {dest}" + (f" @ {git.commit[:12]} ({git.branch}{', uncommitted changes' if git.dirty else ''})"
                                if git.commit else ""))
        console.print(summary_table(results, digest, title))
    failed = [r for r in results if not r.ok]
    commits = {str((r.check.stamp or {}).get("commit")) for r in results if r.check and r.check.stamp}
    if check and len(commits) > 1:
        typer.echo(f"nodeweave: targets disagree on the commit: {', '.join(sorted(commits))}", err=True)
    for r in failed:
        typer.echo(f"nodeweave: {r.status}: {r.target.label}: {r.error}", err=True)
    if failed or (check and len(commits) > 1):
        raise NodeweaveError(f"{len(failed)} of {len(results)} target(s) did not "
                             f"{'match' if check else 'sync'}: "
                             + ", ".join(r.target.label for r in failed) if failed else
                             "targets hold different commits")


def _as_json(results, digest, git, fileset) -> dict:
    return {
        "source": {"path": str(fileset.root), "files": len(fileset.files), "bytes": fileset.total_bytes,
                   "digest": digest, "commit": git.commit, "branch": git.branch,
                   "held_back_secrets": fileset.held_back_secrets},
        "targets": [{"target": r.target.label, "status": r.status, "method": r.method,
                     "files": r.files, "bytes": r.bytes, "seconds": round(r.seconds, 3),
                     "attempts": r.attempts, "error": r.error, "changes": r.changes,
                     "digest": r.check.digest if r.check else None,
                     "mismatched": (r.check.mismatched or [])[:50] if r.check else [],
                     "stamp": r.check.stamp if r.check else None} for r in results],
    }


def _table_width() -> "int | None":
    """Rich's default off a terminal is 80 columns, too narrow for these tables; COLUMNS still wins."""
    return None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120


def register(app: typer.Typer) -> None:
    app.command("sync", help=SYNC_HELP)(sync_command)
