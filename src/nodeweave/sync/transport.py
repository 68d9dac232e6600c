"""Argv builders for every transport: pure functions, no I/O.

``oc rsync`` is rsync whose remote shell is ``oc rsh``; nodeweave does the
same for each target kind. rsync starts its remote side as
``<rsh> HOST rsync --server ...``: ``podman exec -i``, ``docker exec -i``
and ``ssh`` take that shape as is, but ``kubectl exec``/``oc exec`` need
``--`` between the pod and the command (else rsync's ``--server`` is read as
kubectl's own flag), so for them the remote shell is ``nodeweave.sync.rsh``,
a tiny wrapper that puts the pod and ``--`` where kubectl wants them (what
krsync's shell wrapper does). ``--blocking-io`` as ``oc rsync`` passes it:
exec channels misbehave with rsync's non-blocking pipes.

Over ssh the remote command is one string the remote shell splits, so argv
is joined with ``shlex.join``; every other exec kind passes argv untouched.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass

from nodeweave.errors import UsageError
from nodeweave.sync.targets import Target

RSH_MARK = "::"  # separates the wrapper's fixed argv from what rsync appends

_SSH_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9]*=[A-Za-z0-9._@%+,:/~-]+$")
SSH_DEFAULT_OPTIONS = ("BatchMode=yes", "ConnectTimeout=10", "ServerAliveInterval=15",
                       "ServerAliveCountMax=4")


@dataclass(frozen=True)
class TransportOptions:
    """How to reach targets, shared by every target of one run."""

    ssh_options: "tuple[str, ...]" = ()  # extra ``-o KEY=VALUE`` for ssh
    kube_context: "str | None" = None
    python: str = sys.executable  # runs the kubectl/oc rsh wrapper

    def __post_init__(self):
        for option in self.ssh_options:
            if not _SSH_OPTION.match(option):
                raise UsageError(f"--ssh-option {option!r} is not accepted: KEY=VALUE as in "
                                 "ssh_config (e.g. Port=2222, IdentityFile=~/.ssh/id_gpu)")
        if self.kube_context is not None and not re.match(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]*$",
                                                          self.kube_context):
            raise UsageError(f"--kube-context {self.kube_context!r} is not accepted: a context "
                             "name from your kubeconfig (letters, digits and . _ @ : / -)")


def _ssh_base(opts: TransportOptions) -> "list[str]":
    """ssh keeps the first value it gets for an option, so the user's come first."""
    argv = ["ssh"]
    for option in opts.ssh_options + SSH_DEFAULT_OPTIONS:
        argv += ["-o", option]
    return argv


def _kube_base(target: Target, opts: TransportOptions) -> "list[str]":
    argv = [target.kind]
    if opts.kube_context:
        argv += ["--context", opts.kube_context]
    argv += ["exec", "-i"]
    if target.namespace:
        argv += ["-n", target.namespace]
    if target.container:
        argv += ["-c", target.container]
    return argv


def remote_argv(target: Target, argv: "list[str]", opts: TransportOptions = TransportOptions()) -> "list[str]":
    """Local argv that runs ``argv`` on ``target`` with stdin attached."""
    if target.kind in ("podman", "docker"):
        return [target.kind, "exec", "-i", target.name, *argv]
    if target.kind in ("kubectl", "oc"):
        return [*_kube_base(target, opts), target.name, "--", *argv]
    if target.kind == "ssh":
        return [*_ssh_base(opts), target.name, "--", shlex.join(argv)]
    raise UsageError(f"target kind {target.kind!r} has no transport")


def _rsync_quote(token: str) -> str:
    """rsync splits ``--rsh`` on spaces and honours quotes (not a shell: no expansion)."""
    if token and re.match(r"^[A-Za-z0-9._/@%+=:,-]+$", token):
        return token
    return "'" + token.replace("'", "''") + "'"


def rsh_command(target: Target, opts: TransportOptions = TransportOptions()) -> str:
    """The ``--rsh`` value for ``target``'s kind."""
    if target.kind in ("podman", "docker"):
        tokens = [target.kind, "exec", "-i"]
    elif target.kind in ("kubectl", "oc"):
        tokens = [opts.python, "-m", "nodeweave.sync.rsh", *_kube_base(target, opts), RSH_MARK]
    elif target.kind == "ssh":
        tokens = _ssh_base(opts)
    else:
        raise UsageError(f"target kind {target.kind!r} has no transport")
    return " ".join(_rsync_quote(t) for t in tokens)


@dataclass(frozen=True)
class RsyncOptions:
    delete: bool = False
    dry_run: bool = False
    compress: bool = False
    timeout_s: int = 120  # rsync --timeout: no data for this long = exit 30 (retried)


def rsync_argv(target: Target, src: str, dest: str, filter_args: "list[str]",
               rsync: RsyncOptions = RsyncOptions(),
               opts: TransportOptions = TransportOptions()) -> "list[str]":
    """rsync from the local ``src`` directory into ``dest`` on ``target``.

    ``-rlpt`` rather than ``-a``: owners and groups of a laptop mean nothing in
    a pod (and OpenShift's random UID cannot chown); ``--omit-dir-times`` as
    ``oc rsync`` does, since a non-root user may not set times on ``dest``.
    """
    if not src.startswith("/"):
        raise UsageError(f"SRC {src!r} must be made absolute before building rsync's argv")
    argv = ["rsync", "--recursive", "--links", "--perms", "--times", "--omit-dir-times",
            "--blocking-io", "--stats", "--itemize-changes", "--info=progress2",
            f"--timeout={rsync.timeout_s}", "--rsh", rsh_command(target, opts)]
    if target.kind != "ssh":
        argv.append("--whole-file")  # a local pipe: the delta algorithm only costs CPU
    if rsync.compress:
        argv.append("--compress")
    if rsync.delete:
        argv.append("--delete")
    if rsync.dry_run:
        argv.append("--dry-run")
    argv += filter_args
    argv += [src.rstrip("/") + "/", f"{target.name}:{dest.rstrip('/')}/"]
    return argv


# What a target has, and its DEST made, in one round trip. Constant text; DEST is $1.
# $2 = "dry": create nothing, and report a missing DEST as such.
PROBE_SCRIPT = (
    'for t in rsync tar python3 find sha256sum; do command -v "$t" >/dev/null 2>&1 && echo "has:$t"; done; '
    'if [ "$2" = dry ] && [ ! -e "$1" ]; then echo dest:absent; '
    'else mkdir -p -- "$1" && test -w "$1" && echo dest:ok; fi'
)
PROBE_TOOLS = ("rsync", "tar", "python3", "find", "sha256sum")


def probe_argv(target: Target, dest: str, opts: TransportOptions = TransportOptions(),
               dry_run: bool = False) -> "list[str]":
    return remote_argv(target, ["sh", "-c", PROBE_SCRIPT, "sh", dest, "dry" if dry_run else "make"], opts)


def tar_extract_argv(target: Target, dest: str, opts: TransportOptions = TransportOptions()) -> "list[str]":
    """Unpack a tar stream from stdin into ``dest`` (``-o``: don't restore owners; GNU and busybox)."""
    return remote_argv(target, ["tar", "-x", "-o", "-f", "-", "-C", dest], opts)


def list_files_argv(target: Target, dest: str, opts: TransportOptions = TransportOptions()) -> "list[str]":
    """NUL-separated ``type size mtime mode relpath`` of everything under ``dest`` (GNU find)."""
    return remote_argv(target, ["find", dest, "-mindepth", "1", "-printf", r"%y %s %T@ %m %P\0"], opts)


def remove_argv(target: Target, opts: TransportOptions = TransportOptions()) -> "list[str]":
    """Remove the NUL-separated absolute paths on stdin (files and links)."""
    return remote_argv(target, ["xargs", "-0", "-r", "rm", "-f", "--"], opts)


def rmdir_argv(target: Target, opts: TransportOptions = TransportOptions()) -> "list[str]":
    return remote_argv(target, ["xargs", "-0", "-r", "rmdir", "--ignore-fail-on-non-empty", "--"], opts)


# Writes the stamp atomically from stdin and prints what landed on disk. $1 = path.
STAMP_SCRIPT = 'cat > "$1.tmp" && mv -f -- "$1.tmp" "$1" && cat -- "$1"'


def write_stamp_argv(target: Target, path: str, opts: TransportOptions = TransportOptions()) -> "list[str]":
    return remote_argv(target, ["sh", "-c", STAMP_SCRIPT, "sh", path], opts)


def read_stamp_argv(target: Target, path: str, opts: TransportOptions = TransportOptions()) -> "list[str]":
    return remote_argv(target, ["cat", "--", path], opts)
