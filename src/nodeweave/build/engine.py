"""Find the container engine that will build and run images.

nodeweave drives docker and podman through one client, python-on-whales, so
every command has the same shape on both. Detection asks each engine to
answer, not just to exist on PATH. Docker builds with BuildKit either way:
through the buildx plugin when the client has it, else through the classic
``docker build`` with ``DOCKER_BUILDKIT=1``, which clients before 23.0 (such
as Debian 12's docker.io 20.10) carry built in. A client from 23.0 on without
buildx can only run the legacy builder, which lacks ``RUN --mount``: it is
reported and skipped, as is a client whose daemon does not answer.
``NODEWEAVE_ENGINE=docker|podman`` picks one explicitly, for every verb (``--engine`` wins over it); else
podman is asked first, then docker, by every verb (``ORDER``), so an image is built into the engine ``up`` runs.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import List, Optional

from nodeweave.errors import EnvironmentProblem, UsageError

from nodeweave.engines import ENGINE_VARIABLE, ENGINES, ORDER, engine_said, installed_engine  # noqa: F401 (one rule)
# How an engine builds: `<engine> buildx build` (the buildx plugin; podman's built-in alias), or the
# classic `docker build` of a client with BuildKit built in, driven with DOCKER_BUILDKIT=1.
BUILDX = "buildx"
CLASSIC_BUILDKIT = "classic-buildkit"
# The first docker client release whose `docker build` needs the buildx plugin for BuildKit.
BUILDX_REQUIRED_FROM = 23


@dataclass(frozen=True)
class Engine:
    """A container engine that answered: its kind, version and a client for it."""

    kind: str  # "docker" or "podman"
    version: str
    client: object  # python_on_whales.DockerClient
    builder: str = BUILDX  # BUILDX or CLASSIC_BUILDKIT

    def __str__(self) -> str:
        via = " (BuildKit through `docker build`, no buildx plugin)" if self.builder == CLASSIC_BUILDKIT else ""
        return f"{self.kind} {self.version}{via}"


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
    server = str(info.server_version or "unknown")
    try:
        client.buildx.version()
        return Engine("docker", server, client, BUILDX), ""
    except DockerException:
        pass
    client_version = _docker_client_version(client)
    major = re.match(r"(\d+)\.", client_version)
    if major and int(major.group(1)) < BUILDX_REQUIRED_FROM:
        return Engine("docker", server, client, CLASSIC_BUILDKIT), ""
    return None, (f"docker: client {client_version} ({shutil.which('docker')}) has no buildx plugin, and docker "
                  f"clients from {BUILDX_REQUIRED_FROM}.0 on build with BuildKit only through it (install the "
                  "docker-buildx plugin, or put a client with BuildKit built in, such as Debian 12's docker.io "
                  "20.10, first on PATH)")


def _docker_client_version(client) -> str:
    from python_on_whales.exceptions import DockerException

    try:
        return str(getattr(client.version().client, "version", None) or "unknown")
    except DockerException:
        return "unknown"


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
    """The first engine that answers: ``preferred``, else $NODEWEAVE_ENGINE, else podman then docker."""
    choice = engine_said(preferred)
    order = [choice] if choice else list(ORDER)
    reasons: List[str] = []
    for kind in order:
        engine, reason = _PROBES[kind]()
        if engine is not None:
            return engine
        reasons.append(reason)
    if choice is not None:
        other = next(kind for kind in ENGINES if kind != choice)
        source = "--engine" if preferred else ENGINE_VARIABLE
        instead = (f"; {other} is installed: leave out {source} (or name {other}) to use it" if shutil.which(other)
                   else f"; start it, or install {other}")
        raise EnvironmentProblem(f"{source} names {choice}, which does not answer: {reasons[0]}{instead}")
    raise EnvironmentProblem(
        "no container engine is running: " + "; ".join(reasons)
        + ". Install podman (Debian, Ubuntu: `sudo apt-get install podman`) or start dockerd "
          "(`sudo systemctl start docker`)."
    )
