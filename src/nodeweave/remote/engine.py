"""Containers of a local engine: ``podman exec`` and ``docker exec``.

rsync starts its far side as ``<rsh> HOST rsync --server ...``, which
``podman exec -i`` already is (the container is rsync's HOST), so no wrapper
is needed. Engine exit codes 125-127 mean a stopped or missing container or
command: a retry cannot fix them.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeweave.remote.base import Remote, RemoteOptions, flags, rsync_quote
from nodeweave.remote.names import check_container_name


@dataclass(frozen=True)
class EngineExec(Remote):
    """A container reached with ``<engine> exec``."""

    engine = True
    env_from_client = True  # `podman exec -e NAME` / `docker exec -e NAME`: the value from the client's environment

    @classmethod
    def make(cls, name: str, *, namespace: "str | None" = None, container: "str | None" = None,
             options: RemoteOptions = RemoteOptions()) -> "EngineExec":
        return cls(check_container_name(name), options)

    def exec_argv(self, argv: "list[str]", stdin: bool = True, tty: bool = False, env=()) -> "list[str]":
        passed = [word for name in env for word in ("-e", name)]  # no value: the engine reads it from its own
        return [self.kind, "exec", *flags(stdin, tty), *passed, self.name, *argv]

    def rsh(self) -> str:
        return " ".join(rsync_quote(t) for t in (self.kind, "exec", "-i"))

    def logs_argv(self, follow: bool = True, window: "tuple[str, ...]" = ()) -> "list[str]":
        return [self.kind, "logs", *(["-f"] if follow else []), *window, self.name]

    def unreachable(self, code: int, stderr: str) -> bool:
        return code == 125 or super().unreachable(code, stderr)

    def absent(self) -> str:
        """"no container named NAME" or "is not running" as this machine's engine says it; "" when it runs or the
        engine cannot be asked (its absence is check_tools' to say)."""
        import shutil
        import subprocess

        if shutil.which(self.tool) is None:
            return ""
        try:
            seen = subprocess.run([self.tool, "inspect", "--type", "container", "--format", "{{.State.Running}}",
                                   self.name], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        if seen.returncode != 0:
            return f"{self.tool} has no container named {self.name} on this machine"
        if seen.stdout.strip() != "true":
            return f"the container {self.name} is not running ({self.tool} start {self.name} starts it)"
        return ""

    def host_mounts(self) -> "list[tuple[str, str]]":
        """The container's bind mounts as this machine's engine reports them; [] when it cannot be asked."""
        import shutil
        import subprocess

        if shutil.which(self.tool) is None:
            return []
        template = '{{range .Mounts}}{{if eq .Type "bind"}}{{.Source}}\t{{.Destination}}\n{{end}}{{end}}'
        try:
            seen = subprocess.run([self.tool, "inspect", "--type", "container", "--format", template, self.name],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return []
        pairs = [line.split("\t", 1) for line in seen.stdout.splitlines() if "\t" in line]
        return [(host, inside) for host, inside in pairs if host.startswith("/") and inside.startswith("/")] \
            if seen.returncode == 0 else []


@dataclass(frozen=True)
class PodmanExec(EngineExec):
    kind = "podman"
    tail_splits_lines = True  # Remote.tail_splits_lines (walk14 A2)
    aliases = ("container",)
    tool = "podman"


@dataclass(frozen=True)
class DockerExec(EngineExec):
    kind = "docker"
    tool = "docker"
