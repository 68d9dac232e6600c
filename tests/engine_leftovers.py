"""What a test run made in the container engines, removed when the run ends.

A run builds images (each with torch: about 1 GB of layers), pushes them to
loopback registries, makes networks, volumes and pods, and the docker path
leaves BuildKit's cache behind (every build's context and layers). Nothing
else removes them: on 2026-11-28 one machine held 46 GB of BuildKit cache
and 5 GB of podman images from a day's runs, on a disk that the workplace's
machines share, and the next CI run ran out of space.

The controller (the one process without xdist) notes each engine's objects
before any test starts; when the run ends it removes every object that is
new, whichever test made it, and says what it removed and how much space
came back. What was there before the run stays, and so does the offline
base image (``e2e_harness.BASE_IMAGE``, minutes to make again).
``NODEWEAVE_TEST_KEEP_ENGINE=1`` keeps everything, to look at what a failed
run left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

KEEP_VARIABLE = "NODEWEAVE_TEST_KEEP_ENGINE"
BASE_IMAGE = "localhost/nodeweave-base:bookworm"  # e2e_harness.BASE_IMAGE, without importing the e2e path
DOCKER_HOST = os.environ.get("NODEWEAVE_DOCKER_HOST", "unix:///run/nodeweave-docker/docker.sock")
PODMAN_STORAGE = "/var/lib/containers"
DOCKER_STORAGE = "/var/lib/nodeweave-docker"  # .ci/setup-docker.sh's --data-root

# kind -> (the command that lists its objects' ids, the command that removes some)
PODMAN_KINDS = {
    "container": (["ps", "-aq", "--no-trunc"], ["rm", "-f", "-t", "0"]),
    "pod": (["pod", "ps", "-q", "--no-trunc"], ["pod", "rm", "-f"]),
    "image": (["images", "-aq", "--no-trunc"], ["rmi", "-f"]),
    "network": (["network", "ls", "--format", "{{.Name}}"], ["network", "rm", "-f"]),
    "volume": (["volume", "ls", "-q"], ["volume", "rm", "-f"]),
}
DOCKER_KINDS = {
    "container": (["ps", "-aq", "--no-trunc"], ["rm", "-f"]),
    "image": (["images", "-aq", "--no-trunc"], ["rmi", "-f"]),
    "network": (["network", "ls", "--format", "{{.Name}}"], ["network", "rm"]),
    "volume": (["volume", "ls", "-q"], ["volume", "rm", "-f"]),
}
LIST_TIMEOUT_S = 60
REMOVE_TIMEOUT_S = 600


@dataclass
class Engine:
    name: str
    argv: List[str]  # the client, with what points it at its daemon
    env: Dict[str, str]
    kinds: Dict[str, Tuple[List[str], List[str]]]
    storage: str  # where its objects take disk space
    kept_images: Tuple[str, ...] = (BASE_IMAGE,)  # kept even when the run made them
    before: Dict[str, Set[str]] = field(default_factory=dict)

    def _run(self, args: List[str], timeout: int) -> Optional[subprocess.CompletedProcess]:
        try:
            return subprocess.run(self.argv + args, capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, **self.env})
        except (OSError, subprocess.TimeoutExpired):
            return None

    def listing(self, kind: str) -> Optional[Set[str]]:
        out = self._run(self.kinds[kind][0], LIST_TIMEOUT_S)
        if out is None or out.returncode != 0:
            return None
        return {line.strip() for line in out.stdout.splitlines() if line.strip()}

    def build_cache(self) -> Optional[Set[str]]:
        """BuildKit's cache records (docker only): their ids."""
        if self.name != "docker":
            return None
        out = self._run(["system", "df", "-v", "--format", "{{json .BuildCache}}"], LIST_TIMEOUT_S)
        if out is None or out.returncode != 0:
            return None
        try:
            return {record["ID"] for record in json.loads(out.stdout or "[]") or []}
        except (ValueError, KeyError, TypeError):
            return None

    def image_id(self, ref: str) -> Optional[str]:
        out = self._run(["image", "inspect", "--format", "{{.Id}}", ref], LIST_TIMEOUT_S)
        if out is None or out.returncode != 0:
            return None
        return out.stdout.strip().removeprefix("sha256:")

    def note(self) -> None:
        for kind in self.kinds:
            found = self.listing(kind)
            if found is not None:
                self.before[kind] = found
        cache = self.build_cache()
        if cache is not None:
            self.before["build cache record"] = cache

    def remove_new(self) -> Dict[str, int]:
        """Remove what is new since ``note()``; how many of each kind went."""
        removed: Dict[str, int] = {}
        keep = {self.image_id(ref) for ref in self.kept_images} - {None}
        for kind in self.kinds:  # containers and pods first: they hold images, networks and volumes
            if kind not in self.before:
                continue
            now = self.listing(kind) or set()
            new = sorted(ident for ident in now - self.before[kind]
                         if ident.removeprefix("sha256:") not in keep)
            if new:
                self._run(self.kinds[kind][1] + new, REMOVE_TIMEOUT_S)
                left = self.listing(kind) or set()
                removed[kind] = len(set(new) - left)
        if "build cache record" in self.before:
            new = sorted((self.build_cache() or set()) - self.before["build cache record"])
            if new:
                filters = [arg for ident in new for arg in ("--filter", f"id={ident}")]
                self._run(["builder", "prune", "-f"] + filters, REMOVE_TIMEOUT_S)
                removed["build cache record"] = len(set(new) - (self.build_cache() or set()))
        return {kind: count for kind, count in removed.items() if count}


def _docker_client() -> Optional[str]:
    """A docker client (Debian's, which .ci/setup-docker.sh installs, before any other)."""
    if os.access("/usr/bin/docker", os.X_OK):
        return "/usr/bin/docker"
    return shutil.which("docker")


def engines() -> List[Engine]:
    """The engines that answer here: podman, and the tests' dockerd where it runs."""
    found = []
    if shutil.which("podman"):
        found.append(Engine("podman", ["podman"], {}, PODMAN_KINDS, PODMAN_STORAGE))
    client = _docker_client()
    if client:
        found.append(Engine("docker", [client], {"DOCKER_HOST": DOCKER_HOST}, DOCKER_KINDS, DOCKER_STORAGE))
    return found


def free_bytes(path: str) -> Optional[int]:
    """Free space where ``path`` is, or where its nearest existing parent is."""
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    try:
        return shutil.disk_usage(path or "/").free
    except OSError:
        return None


def gigabytes(count: int) -> str:
    return f"{count / 1e9:.1f} GB"


class Sweeper:
    """Notes the engines at the start of a run and removes what the run made at its end."""

    def __init__(self) -> None:
        self.engines: List[Engine] = []
        self.summary: Optional[str] = None

    def start(self) -> None:
        if os.environ.get(KEEP_VARIABLE) == "1":
            return
        for engine in engines():
            engine.note()
            if engine.before:
                self.engines.append(engine)

    def finish(self) -> None:
        if os.environ.get(KEEP_VARIABLE) == "1":
            self.summary = f"engine objects this run made are kept ({KEEP_VARIABLE}=1)"
            return
        parts, freed = [], 0
        for engine in self.engines:
            was = free_bytes(engine.storage)
            removed = engine.remove_new()
            now = free_bytes(engine.storage)
            if was is not None and now is not None:
                freed = max(freed, now - was)  # one disk, most often: the larger gain, not the sum
            if removed:
                parts.append(f"{engine.name}: " + ", ".join(f"{n} {kind}{'s' if n > 1 else ''}"
                                                            for kind, n in removed.items()))
        if parts:
            self.summary = (f"removed what this run made in the engines ({'; '.join(parts)}), "
                            f"{gigabytes(freed)} freed; {KEEP_VARIABLE}=1 keeps it")


def disk_line() -> str:
    """The free space where the engines and the tests write, for the run's header."""
    seen, parts = set(), []
    for label, path in (("engines", PODMAN_STORAGE), ("tmp", os.environ.get("TMPDIR", "/tmp"))):
        try:
            device = os.stat(path if os.path.exists(path) else "/").st_dev
        except OSError:
            continue
        free = free_bytes(path)
        if device in seen or free is None:
            continue
        seen.add(device)
        parts.append(f"{gigabytes(free)} free for the {label} ({path})")
    return "disk: " + "; ".join(parts)
