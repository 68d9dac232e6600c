"""The images a test run built, removed when the run ends; the disk's free space in the run's header.

A run builds images (each with torch: about 1 GB of layers) and a rebuild
leaves the image before it untagged. Nothing removed them: on 2026-11-28 one
machine held 5 GB of podman images and 46 GB of BuildKit cache from a day's
runs, on a disk that the workplace's machines share, and the next CI run
ran out of space. BuildKit's cache in the tests' own dockerd is capped by
its garbage collector (.ci/setup-docker.sh); this module does the images.

It removes only what this checkout's runs own: every image under the
checkout's own test repository (``e2e_harness.REGISTRY``, one per checkout)
in podman and in the tests' dockerd, with the untagged layers beneath them
(``rmi`` prunes those), if the run made or moved their tags. Containers, pods, networks and volumes are the
tests' own to remove, and nothing else is touched: another run, another
checkout or the user may be using the engines at the same moment.
``NODEWEAVE_TEST_KEEP_ENGINE=1`` keeps the images, to look at what a failed
run built.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

KEEP_VARIABLE = "NODEWEAVE_TEST_KEEP_ENGINE"
REPO = Path(__file__).resolve().parents[1]
# e2e_harness.REGISTRY, without importing the e2e path
REGISTRY = os.environ.get("NODEWEAVE_E2E_REGISTRY") or (
    "localhost/nodeweave-e2e-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:8])
DOCKER_HOST = os.environ.get("NODEWEAVE_DOCKER_HOST", "unix:///run/nodeweave-docker/docker.sock")
PODMAN_STORAGE = "/var/lib/containers"
TIMEOUT_S = 600


class Engine:
    """One engine's client, as the tests reach it."""

    def __init__(self, name: str, argv: List[str], env: Optional[Dict[str, str]] = None) -> None:
        self.name, self.argv, self.env = name, argv, env or {}

    def run(self, *args: str) -> Optional[subprocess.CompletedProcess]:
        try:
            return subprocess.run(self.argv + list(args), capture_output=True, text=True, timeout=TIMEOUT_S,
                                  env={**os.environ, **self.env})
        except (OSError, subprocess.TimeoutExpired):
            return None

    def tags_under(self, repository: str) -> Dict[str, str]:
        """Every ``repository/...:tag`` this engine holds, with its image's id."""
        out = self.run("images", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}")
        if out is None or out.returncode != 0:
            return {}
        pairs = (line.split() for line in out.stdout.splitlines())
        return {tag: ident.removeprefix("sha256:") for tag, ident in (p for p in pairs if len(p) == 2)
                if tag.startswith(repository + "/") and not tag.endswith(":<none>")}

    def remove_new(self, repository: str, before: Dict[str, str]) -> int:
        """Remove the tags under ``repository`` made or moved since ``before`` (``rmi`` takes their untagged
        parents with them); how many went."""
        new = sorted(tag for tag, ident in self.tags_under(repository).items() if before.get(tag) != ident)
        if new:
            self.run("rmi", "-f", *new)
        return len(set(new) - set(self.tags_under(repository)))


def engines() -> List[Engine]:
    """podman, and the tests' dockerd through Debian's client (.ci/setup-docker.sh) or any on PATH."""
    found = []
    if shutil.which("podman"):
        found.append(Engine("podman", ["podman"]))
    client = "/usr/bin/docker" if os.access("/usr/bin/docker", os.X_OK) else shutil.which("docker")
    if client:
        found.append(Engine("docker", [client], {"DOCKER_HOST": DOCKER_HOST}))
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


class Sweep:
    """This checkout's test images as a run starts, and at its end the ones the run made or moved removed.

    A run that built nothing (one pure test file, say) removes nothing, so it never takes the image of a
    whole-suite run of the same checkout that is still going."""

    def __init__(self, repository: str = REGISTRY) -> None:
        self.repository = repository
        self.before: Dict[str, Dict[str, str]] = {}

    def start(self) -> None:
        self.before = {engine.name: engine.tags_under(self.repository) for engine in engines()}

    def finish(self) -> Optional[str]:
        """Remove what the run made; a line saying what went, or None."""
        if os.environ.get(KEEP_VARIABLE) == "1":
            return f"the images this run built under {self.repository} are kept ({KEEP_VARIABLE}=1)"
        was = free_bytes(PODMAN_STORAGE)
        removed = {engine.name: engine.remove_new(self.repository, self.before.get(engine.name, {}))
                   for engine in engines()}
        removed = {name: count for name, count in removed.items() if count}
        if not removed:
            return None
        now = free_bytes(PODMAN_STORAGE)
        freed = f", {gigabytes(now - was)} freed" if was is not None and now is not None else ""
        counts = ", ".join(f"{name} {count}" for name, count in removed.items())
        return (f"removed the images this run built under {self.repository} ({counts}){freed}; "
                f"{KEEP_VARIABLE}=1 keeps them")


def disk_line() -> str:
    """The free space where the engines and the tests write, for the run's header."""
    seen, parts = set(), []
    for label, path in (("engines", PODMAN_STORAGE), ("tests", os.environ.get("TMPDIR") or "/tmp")):
        free = free_bytes(path)
        try:
            device = os.stat(path if os.path.exists(path) else "/").st_dev
        except OSError:
            continue
        if device in seen or free is None:
            continue
        seen.add(device)
        parts.append(f"{gigabytes(free)} free for the {label} ({path})")
    return "disk: " + "; ".join(parts)
