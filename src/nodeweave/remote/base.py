"""What every way of reaching a node offers: the base class and the shared options.

A remote is a node reached one way (``podman exec``, ``kubectl exec``,
``ssh``, ...). Its class owns everything that differs by kind: which names
it accepts, its label, the argv that runs a command there, rsync's
``--rsh`` value, the argv for logs and an interactive shell, and which
failures a retry can fix. Callers (sync, hosts probe, the cluster verbs)
never ask which kind a remote is.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from typing import ClassVar

from nodeweave.errors import UsageError

_SSH_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9]*=[A-Za-z0-9._@%+,:/~-]+$")
_KUBE_CONTEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]*$")
# An interactive shell: bash where the image has it, else sh (constant text, no user input).
SHELL_ARGV = ("sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash -l; exec sh -l")
# Exit-code-free signs that a connection dropped (kubectl/oc, ssh): worth a retry.
_TRANSIENT_TEXT = re.compile(r"connection (refused|reset|timed out)|i/o timeout|TLS handshake|"
                             r"unable to upgrade connection|broken pipe|temporarily unavailable|"
                             r"connection closed|EOF", re.I)
# ssh's exit 255 that no retry can fix: the name does not resolve, the key or host key is refused.
_PERMANENT_SSH_TEXT = re.compile(r"could not resolve hostname|name or service not known|nodename nor servname|"
                                 r"permission denied|host key verification failed|bad configuration option", re.I)
# Signs that the node itself is not there (stopped container, missing pod, unknown host).
_UNREACHABLE_TEXT = re.compile(r"not running|state improper|no such container|NotFound|"
                               r"connection refused|i/o timeout|unable to connect|could not resolve|"
                               r"no route to host", re.I)


@dataclass(frozen=True)
class RemoteOptions:
    """How to reach nodes, shared by every remote of one command."""

    ssh_options: "tuple[str, ...]" = ()  # extra ``-o KEY=VALUE`` for ssh
    kube_context: "str | None" = None
    python: str = sys.executable  # runs the kubectl/oc rsh wrapper

    def __post_init__(self):
        for option in self.ssh_options:
            if not _SSH_OPTION.match(option):
                raise UsageError(f"--ssh-option {option!r} is not accepted: KEY=VALUE as in "
                                 "ssh_config (e.g. Port=2222, IdentityFile=~/.ssh/id_gpu)")
            problem = ssh_option_problem(option)
            if problem:
                raise UsageError(f"--ssh-option {option}: {problem}")
        if self.kube_context is not None and not _KUBE_CONTEXT.match(self.kube_context):
            raise UsageError(f"--kube-context {self.kube_context!r} is not accepted: a context "
                             "name from your kubeconfig (letters, digits and . _ @ : / -)")


# What nodeweave gives ssh after the user's options (remote/ssh.py's SSH_DEFAULT_OPTIONS): ssh keeps the first value
# of an option, so a user's value of one of these would silently replace nodeweave's (walk7 A50). Each is accepted
# only with a value that keeps what nodeweave relies on: no password prompt, a bounded wait for a dead host.
OWN_SSH_OPTIONS = {
    "batchmode": ("yes", "nodeweave runs ssh in batch mode: a prompt per host would wait on one terminal"),
    "connecttimeout": ("whole", "a host that does not answer must fail in bounded time (nodeweave gives 10)"),
    "serveraliveinterval": ("whole", "a silent connection must be noticed (nodeweave gives 15)"),
    "serveralivecountmax": ("whole", "a silent connection must be noticed (nodeweave gives 4)"),
}


def ssh_option_problem(option: str) -> "str | None":
    """Why ssh would not take ``KEY=VALUE`` as nodeweave needs it, or None: a value that turns off what nodeweave
    sets itself (``OWN_SSH_OPTIONS``), or an option ssh itself refuses (``ssh -G -o KEY=VALUE``, which connects to
    nothing: an unknown key, a bad port). No ssh here: only the first is judged (its absence is said on its own)."""
    key, _, value = option.partition("=")
    own = OWN_SSH_OPTIONS.get(key.lower())
    if own is not None:
        wanted, why = own
        if (wanted == "yes" and value.lower() != "yes") or (wanted == "whole" and not (value.isdigit()
                                                                                       and int(value) >= 1)):
            accepted = f"{key}=yes" if wanted == "yes" else f"{key}=N, N a whole number 1 or more (yours then " \
                "wins: ssh keeps an option's first value, and yours come first)"
            return f"{why}; accepted: {accepted}, or leave it out"
        return None
    return _ssh_refusal(option)


@functools.lru_cache(maxsize=None)
def _ssh_refusal(option: str) -> "str | None":
    """ssh's own word on ``-o option`` (``ssh -G``: the configuration it would use, no connection), or None."""
    import shutil
    import subprocess

    if shutil.which("ssh") is None:
        return None
    try:
        out = subprocess.run(["ssh", "-G", "-o", option, "nodeweave-option-check.invalid"], capture_output=True,
                             text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode == 0:
        return None
    said = next((line for line in out.stderr.splitlines() if "line 0" in line or "Bad" in line), out.stderr.strip())
    said = said.split("line 0:", 1)[-1].strip() if "line 0" in said else said
    return f"ssh refuses it ({said or 'exit ' + str(out.returncode)}); accepted: an option of ssh_config(5)"


def rsync_quote(token: str) -> str:
    """rsync splits ``--rsh`` on spaces and honours quotes (not a shell: no expansion)."""
    if token and re.match(r"^[A-Za-z0-9._/@%+=:,-]+$", token):
        return token
    return "'" + token.replace("'", "''") + "'"


def flags(stdin: bool, tty: bool) -> "list[str]":
    """``-i``/``-t`` as docker, podman, kubectl and oc spell them."""
    return (["-i"] if stdin else []) + (["-t"] if tty else [])


@dataclass(frozen=True)
class Remote:
    """One node, reached one way. Subclasses are the rows of ``nodeweave.remote.KINDS``."""

    name: str
    options: RemoteOptions = field(default=RemoteOptions(), repr=False)

    kind: ClassVar[str] = ""
    aliases: ClassVar["tuple[str, ...]"] = ()
    tool: ClassVar[str] = ""  # the local program this kind needs on PATH
    network_link: ClassVar[bool] = False  # bytes cross a network: rsync's delta algorithm pays
    namespaced: ClassVar[bool] = False  # takes a Kubernetes namespace and container
    engine: ClassVar[bool] = False  # a container of a local engine (compose projects list these)
    openshift: ClassVar[bool] = False  # the pod transport of OpenShift clusters
    # Whether sync may, unasked, have these nodes forward a payload to each other over plain TCP:
    # yes where their network is the one the job's own NCCL/c10d traffic crosses in the clear anyway.
    relay_by_default: ClassVar[bool] = True
    # Whether the exec client hands a variable of its own environment to the command (``podman exec -e NAME``):
    # a hidden ``-e`` value (nodeweave.hidden) then travels there, never on a command line.
    env_from_client: ClassVar[bool] = False

    @classmethod
    def make(cls, name: str, *, namespace: "str | None" = None, container: "str | None" = None,
             options: RemoteOptions = RemoteOptions()) -> "Remote":
        """A validated remote; ``namespace``/``container`` matter to namespaced kinds only."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        """Short unique name for tables and messages (``KIND:NAME``)."""
        return f"{self.kind}:{self.name}"

    @property
    def host(self) -> str:
        """The node's name in a hostfile: no user, no kind."""
        return self.name

    def exec_argv(self, argv: "list[str]", stdin: bool = True, tty: bool = False) -> "list[str]":
        """Local argv that runs ``argv`` on the node (stdin attached unless ``stdin=False``). A kind whose
        ``env_from_client`` is true also takes ``env=NAMES``: variables of the exec client's environment the
        command gets."""
        raise NotImplementedError

    def rsh(self) -> str:
        """rsync's ``--rsh`` value; rsync appends ``rsync_host`` and its server command."""
        raise NotImplementedError

    @property
    def rsync_host(self) -> str:
        """What goes before ``:`` in rsync's remote path."""
        return self.name

    def shell_argv(self) -> "list[str]":
        """An interactive login shell on the node (a terminal attached)."""
        return self.exec_argv(list(SHELL_ARGV), stdin=True, tty=True)

    # podman's `logs --tail N` counts its log file's entries, and a line the container wrote in pieces (podman's
    # partial entries) comes out split or glued to the next one (walk14 A2, podman 4.3): where this is True, a
    # --tail N without -f is applied to the whole log by nodeweave (cluster/logs.py), as `tail -n` would
    tail_splits_lines = False

    def logs_argv(self, follow: bool = True, window: "tuple[str, ...]" = ()) -> "list[str]":
        """The container's or pod's own log (what its main process printed); ``window``: ``--tail N``/``--since D``,
        spelt alike by podman, docker and kubectl."""
        raise UsageError(f"{self.label} is a host, not a container: it has no container log "
                         "(reach a container on it with ssh+podman:HOST/NAME or ssh+docker:HOST/NAME)")

    def transient(self, code: int, stderr: str) -> bool:
        """Could a retry fix this failure (a dropped connection, not a missing node)?"""
        return False

    def unreachable(self, code: int, stderr: str) -> bool:
        """Did this failure mean the node is not there (stopped, missing, unknown host)?"""
        return bool(_UNREACHABLE_TEXT.search(stderr))

    def absent(self) -> str:
        """Why this node is not there, where this machine can tell without reaching it (a local engine's container:
        missing or stopped), else "": what a dry run notes (walk12 A20)."""
        return ""

    def host_mounts(self) -> "list[tuple[str, str]]":
        """(folder on this machine, path in the node) of each folder this node bind-mounts from this machine, where
        this machine can tell (a local engine's container), else []: a sync into one writes this machine's folder
        (walk17 A5)."""
        return []


def transient_text(stderr: str) -> bool:
    return bool(_TRANSIENT_TEXT.search(stderr))


def permanent_ssh_text(stderr: str) -> bool:
    """ssh failed for a reason waiting cannot change (an unknown name, a refused key)."""
    return bool(_PERMANENT_SSH_TEXT.search(stderr))
