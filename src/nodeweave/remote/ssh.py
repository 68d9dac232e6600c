"""Hosts over ssh, and containers on a host over ssh (``ssh`` then ``docker``/``podman exec``).

Over ssh the remote command is one string that the far side's shell
splits, so every argv word is quoted (``remote_command``; a home-relative
``~/x`` becomes ``"$HOME"/'x'``, the host's own home); names are checked
before that, so nothing typed can reach the shell unquoted. The user's
``-o`` options come first because ssh keeps the first value it gets.
Exit 255 is ssh's own (connection) failure: worth a retry.

The nested kinds reach a container on a bare host, as a ROCm or DeepSpeed
team runs one container per host: ``ssh HOST -- 'docker exec -i NAME CMD'``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from nodeweave.errors import UsageError
from nodeweave.hidden import in_single_quotes
from nodeweave.remote.base import Remote, RemoteOptions, flags, permanent_ssh_text, rsync_quote, transient_text
from nodeweave.remote.names import check_container_name, check_ssh_host, refuse

SSH_DEFAULT_OPTIONS = ("BatchMode=yes", "ConnectTimeout=10", "ServerAliveInterval=15",
                       "ServerAliveCountMax=4")


_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=~/(.*)$", re.S)


def remote_word(word: str) -> str:
    """One argv word for the remote shell: quoted, except that a home-relative path (``~/x``, or ``VAR=~/x``
    as ``env`` takes it) becomes ``"$HOME"/'x'``, so each host's own home is used (``--remote-dir ~/x``)."""
    if word.startswith("~/"):
        return '"$HOME"/' + shlex.quote(word[2:])
    found = _ASSIGNMENT.match(word)
    if found:
        return f'{found.group(1)}="$HOME"/{shlex.quote(found.group(2))}'
    return shlex.quote(word)


def remote_command(argv: "list[str]") -> str:
    """The command string ssh sends: every word quoted (home-relative paths expanded there, see remote_word); a
    hidden ``-e`` value's placeholder is filled shell-quoted (``nodeweave.hidden.in_single_quotes``)."""
    return in_single_quotes(" ".join(remote_word(word) for word in argv))


def ssh_argv(options: RemoteOptions, stdin: bool = True, tty: bool = False) -> "list[str]":
    """``ssh -o ...`` up to (not including) the destination."""
    argv = ["ssh"]
    for option in options.ssh_options + SSH_DEFAULT_OPTIONS:
        argv += ["-o", option]
    return argv + (["-t"] if tty else []) + ([] if stdin else ["-n"])


@dataclass(frozen=True)
class Ssh(Remote):
    """A host reached with ssh: ``ssh:[user@]host``."""

    kind = "ssh"
    tool = "ssh"
    network_link = True
    relay_by_default = False  # hosts reached over ssh: forwarding between them would leave ssh's encryption

    @classmethod
    def make(cls, name: str, *, namespace: "str | None" = None, container: "str | None" = None,
             options: RemoteOptions = RemoteOptions()) -> "Ssh":
        return cls(check_ssh_host(name), options)

    @property
    def host(self) -> str:
        return self.name.rpartition("@")[2]

    def exec_argv(self, argv: "list[str]", stdin: bool = True, tty: bool = False) -> "list[str]":
        return [*ssh_argv(self.options, stdin, tty), self.name, "--", remote_command(argv)]

    def rsh(self) -> str:
        return " ".join(rsync_quote(t) for t in ssh_argv(self.options))

    def shell_argv(self) -> "list[str]":
        return [*ssh_argv(self.options, tty=True), self.name]  # the account's own login shell

    def transient(self, code: int, stderr: str) -> bool:
        if permanent_ssh_text(stderr):
            return False
        return code == 255 or (code not in (125, 126, 127) and transient_text(stderr))

    def unreachable(self, code: int, stderr: str) -> bool:
        return code == 255 or super().unreachable(code, stderr)


@dataclass(frozen=True)
class SshEngine(Ssh):
    """A container on a host: ``ssh+docker:[user@]host/container``."""

    network_link = True
    tool = "ssh"

    @classmethod
    def make(cls, name: str, *, namespace: "str | None" = None, container: "str | None" = None,
             options: RemoteOptions = RemoteOptions()) -> "SshEngine":
        host, sep, inner = name.partition("/")
        if not sep:
            raise refuse(f"{cls.kind} target", name, "[user@]host/container, e.g. me@gpu01/trainer")
        try:
            check_ssh_host(host)
            check_container_name(inner)
        except UsageError as err:
            raise UsageError(f"{cls.kind} target {name!r}: {err}") from None
        return cls(name, options)

    @property
    def ssh_host(self) -> str:
        return self.name.partition("/")[0]

    @property
    def container_name(self) -> str:
        return self.name.partition("/")[2]

    @property
    def host(self) -> str:
        return self.ssh_host.rpartition("@")[2]

    def on_host(self, argv: "list[str]") -> "list[str]":
        """``argv`` run on the container's host, not in it (its engine's ``inspect``), no stdin."""
        return self._on_host(argv, stdin=False)

    def _on_host(self, argv: "list[str]", stdin: bool = True, tty: bool = False) -> "list[str]":
        return [*ssh_argv(self.options, stdin, tty), self.ssh_host, "--", in_single_quotes(shlex.join(argv))]

    def exec_argv(self, argv: "list[str]", stdin: bool = True, tty: bool = False) -> "list[str]":
        inner = [self.engine_cli, "exec", *flags(stdin, tty), self.container_name, *argv]
        return self._on_host(inner, stdin, tty)

    def rsh(self) -> str:
        tokens = [*ssh_argv(self.options), self.ssh_host, self.engine_cli, "exec", "-i"]
        return " ".join(rsync_quote(t) for t in tokens)

    @property
    def rsync_host(self) -> str:
        return self.container_name  # rsync appends it after the rsh: `... docker exec -i NAME rsync --server`

    def shell_argv(self) -> "list[str]":
        return Remote.shell_argv(self)

    def logs_argv(self, follow: bool = True, window: "tuple[str, ...]" = ()) -> "list[str]":
        return self._on_host([self.engine_cli, "logs", *(["-f"] if follow else []), *window, self.container_name],
                             stdin=False)

    def unreachable(self, code: int, stderr: str) -> bool:
        return code == 125 or super().unreachable(code, stderr)


@dataclass(frozen=True)
class SshPodman(SshEngine):
    kind = "ssh+podman"
    engine_cli = "podman"
    tail_splits_lines = True  # Remote.tail_splits_lines (walk14 A2)


@dataclass(frozen=True)
class SshDocker(SshEngine):
    kind = "ssh+docker"
    engine_cli = "docker"
