"""Find the container engine that will build and run images.

nodeweave drives docker (with the buildx/BuildKit plugin) and podman through
one client, python-on-whales, so every command has the same shape on both.
Detection asks each engine to answer, not just to exist on PATH: a docker
client without a daemon, or without buildx, is reported and skipped.
``NODEWEAVE_ENGINE=docker|podman`` picks one explicitly.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import List, Optional

from nodeweave.errors import EnvironmentProblem, UsageError

ENGINES = ("docker", "podman")
ENGINE_VARIABLE = "NODEWEAVE_ENGINE"


@dataclass(frozen=True)
class Engine:
    """A container engine that answered: its kind, version and a client for it."""

    kind: str  # "docker" or "podman"
    version: str
    client: object  # python_on_whales.DockerClient

    def __str__(self) -> str:
        return f"{self.kind} {self.version}"


def _first_line(text: "str | None") -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no message"


def _probe_docker() -> "tuple[Optional[Engine], str]":
    from python_on_whales import DockerClient
    from python_on_whales.exceptions import DockerException

    if shutil.which("docker") is None:
        return None, "docker: not on PATH"
    client = DockerClient(client_call=["docker"])
    try:
        info = client.system.info()
    except DockerException as err:
        return None, f"docker: the daemon does not answer ({_first_line(err.stderr)})"
    try:
        client.buildx.version()
    except DockerException:
        return None, "docker: the buildx plugin is missing (install docker-buildx; BuildKit builds need it)"
    return Engine("docker", str(info.server_version or "unknown"), client), ""


def _probe_podman() -> "tuple[Optional[Engine], str]":
    from python_on_whales import DockerClient
    from python_on_whales.exceptions import DockerException

    if shutil.which("podman") is None:
        return None, "podman: not on PATH"
    client = DockerClient(client_call=["podman"])
    try:
        version = client.version()
        client.system.info()
    except DockerException as err:
        return None, f"podman: `podman info` fails ({_first_line(err.stderr)})"
    client_version = getattr(version.client, "version", None) or "unknown"
    return Engine("podman", str(client_version), client), ""


_PROBES = {"docker": _probe_docker, "podman": _probe_podman}


def detect_engine(preferred: "str | None" = None) -> Engine:
    """The first engine that answers: ``preferred``, else $NODEWEAVE_ENGINE, else docker then podman."""
    choice = preferred or os.environ.get(ENGINE_VARIABLE) or None
    if choice is not None and choice not in ENGINES:
        source = "--engine" if preferred else ENGINE_VARIABLE
        raise UsageError(f"{source}={choice!r} is not an engine nodeweave drives; use one of {', '.join(ENGINES)}")
    order = [choice] if choice else list(ENGINES)
    reasons: List[str] = []
    for kind in order:
        engine, reason = _PROBES[kind]()
        if engine is not None:
            return engine
        reasons.append(reason)
    raise EnvironmentProblem(
        "no container engine is running: " + "; ".join(reasons)
        + ". Start dockerd (with buildx) or install podman (bash .ci/setup-engine.sh does it on Debian)."
    )
