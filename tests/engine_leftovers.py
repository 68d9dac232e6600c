"""The images a test run built, removed when the run ends; the disk's free space in the run's header.

A run builds images (each with torch: about 1 GB of layers) and a rebuild
leaves the image before it untagged. Nothing removed them: on 2026-11-28 one
machine held 5 GB of podman images and 46 GB of BuildKit cache from a day's
runs, on a disk that the workplace's machines share, and the next CI run
ran out of space. BuildKit's cache in the tests' own dockerd is capped by
its garbage collector (.ci/setup-docker.sh); this module does the images.

It removes only images made while test runs went on (ids new since the
first of them started) that carry, or carried before a rebuild moved the
tag, a name the suite's tests use (``SUITE_REPOSITORIES``: this checkout's
own ``e2e_harness.REGISTRY`` and a few fixed names), in podman and in the
tests' dockerd, with the untagged layers beneath them (``rmi`` prunes
those). Containers, pods, networks and volumes are the tests' own to remove,
and nothing else is touched: another run, another checkout or the user may
be using the engines at the same moment (a first version that removed every
new object took a running suite's containers).

Runs that overlap on one machine share one sweep, done by the last to end
(``Runs``). An image id cannot say which run built it, so a run that ended
while another went on would take the other's images: on 2026-11-29 the
one-test pytest that tests/test_ci_gate.py starts removed the image
test_push.py had just built, and the push failed with "image not known".
``NODEWEAVE_TEST_KEEP_ENGINE=1`` keeps the images, to look at what a failed
run built.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

KEEP_VARIABLE = "NODEWEAVE_TEST_KEEP_ENGINE"
REPO = Path(__file__).resolve().parents[1]
# e2e_harness.REGISTRY, without importing the e2e path
REGISTRY = os.environ.get("NODEWEAVE_E2E_REGISTRY") or (
    "localhost/nodeweave-e2e-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:8])
DOCKER_HOST = os.environ.get("NODEWEAVE_DOCKER_HOST", "unix:///run/nodeweave-docker/docker.sock")
PODMAN_STORAGE = "/var/lib/containers"
# Machine-wide, as the engines are (not TMPDIR, which a run may point elsewhere); one per user, as
# rootless podman's storage is.
RUNS_DIR = Path("/tmp") / f"nodeweave-test-runs-{os.getuid()}"
LIST_TIMEOUT_S = 60  # a listing; a removal of many images may take minutes
LIST_TRIES = 5  # a listing that raced another group's removal is asked again (Engine._listing)
REMOVE_TIMEOUT_S = 600


# Where the suite's tests put the images they build: this checkout's own repository, and the few fixed
# names that tests need (a registry's path, the README's default, a test's own small image). fnmatch
# patterns for the repository part of a tag; tests/test_engine_leftovers.py checks the tests' names match.
SUITE_REPOSITORIES = (
    f"{REGISTRY}/*",
    "ghcr.io/example/llama-pretrain",  # the default spec's image: the README flow builds it
    "127.0.0.1:*/team/pushed",  # test_push.py's loopback registry
    "localhost/nwplanrec",  # test_plan_record.py's sleeper
    "localhost/nwzip-byo",  # test_zipapp_image.py's own torch image
    "localhost/nwl-*/*",  # test_engine_leftovers.py's own
)


def suite_made(name: str) -> bool:
    """Whether an image name (``repository:tag``) is one the suite's tests use."""
    repository = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    return any(fnmatchcase(repository, pattern) for pattern in SUITE_REPOSITORIES)


@dataclass(frozen=True)
class Image:
    names: Tuple[str, ...] = ()  # its tags now
    history: Tuple[str, ...] = ()  # the tags it had (podman)
    parent: str = ""  # the image it was built on (podman's layer cache)


class Engine:
    """One engine's client, as the tests reach it."""

    def __init__(self, name: str, argv: List[str], env: Optional[Dict[str, str]] = None) -> None:
        self.name, self.argv, self.env = name, argv, env or {}

    def run(self, *args: str, timeout: int = LIST_TIMEOUT_S) -> Optional[subprocess.CompletedProcess]:
        try:
            return subprocess.run(self.argv + list(args), capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, **self.env})
        except (OSError, subprocess.TimeoutExpired):
            return None

    def _listing(self, *args: str) -> Optional[subprocess.CompletedProcess]:
        """A listing that succeeded, or None. podman's ``images`` fails as a whole ("image not known") when
        another test group removes an image between its list and its inspect of it: a fresh listing is
        then right, so a failed one is asked again, a few times (a time-out is not: it would only wait)."""
        for attempt in range(LIST_TRIES):
            out = self.run(*args)
            if out is None or out.returncode == 0:
                return out
            time.sleep(0.5 * (attempt + 1))
        return None

    def images(self) -> Optional[Dict[str, Image]]:
        """Every image by id; None where the engine does not answer.

        podman keeps each image's earlier names (``History``), so an image a rebuild left untagged is still
        known by the tag it had, and its parent, so a build's cached layers are known as the image's own;
        docker's BuildKit makes no such layers, and its fixtures remove their builds by id."""
        if self.name == "podman":
            out = self._listing("images", "-a", "--format", "json")
            if out is None:
                return None
            try:
                return {image["Id"]: Image(tuple(image.get("Names") or ()), tuple(image.get("History") or ()),
                                           image.get("ParentId") or "")
                        for image in json.loads(out.stdout or "[]")}
            except (ValueError, KeyError, TypeError):
                return None
        out = self._listing("images", "-a", "--no-trunc", "--format", "{{.ID}} {{.Repository}}:{{.Tag}}")
        if out is None:
            return None
        found: Dict[str, Image] = {}
        for line in out.stdout.splitlines():
            ident, _, name = line.partition(" ")
            ident = ident.removeprefix("sha256:")
            found[ident] = Image(found.get(ident, Image()).names + (name,))
        return found

    def remove_made(self, before: Set[str]) -> int:
        """Remove the images new since ``before`` (ids) that carry or carried a suite name, then the untagged
        layers beneath them that the run made too and nothing else stands on (a build's cache); how many
        images went."""
        now = self.images()
        if not now:
            return 0
        made = sorted(ident for ident, image in now.items()
                      if ident not in before and any(suite_made(name) for name in image.names + image.history))
        if not made:
            return 0
        beneath = []  # each made image's untagged ancestors the run made, nearest first
        for ident in made:
            parent = now[ident].parent
            while parent in now and parent not in before and not now[parent].names and parent not in beneath:
                beneath.append(parent)
                parent = now[parent].parent
        self.run("rmi", "-f", *made, timeout=REMOVE_TIMEOUT_S)  # podman's rmi takes most of ``beneath`` with them
        after = self.images() or {}
        left = [ident for ident in beneath if ident in after]
        if left:  # nearest first, without -f: a layer another image stands on stays
            self.run("rmi", *left, timeout=REMOVE_TIMEOUT_S)
            after = self.images() or {}
        return len(set(made + beneath) - set(after))


def engines() -> List[Engine]:
    """podman, and the tests' dockerd through Debian's client (.ci/setup-docker.sh) or any on PATH."""
    found = []
    if shutil.which("podman"):
        found.append(Engine("podman", ["podman"]))
    client = "/usr/bin/docker" if os.access("/usr/bin/docker", os.X_OK) else shutil.which("docker")
    if client:
        found.append(Engine("docker", [client], {"DOCKER_HOST": DOCKER_HOST}))
    return found


def _existing(path: str) -> str:
    """``path``, or its nearest parent that exists (the engine's storage before its first image)."""
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    return path or "/"


def free_bytes(path: str) -> Optional[int]:
    """Free space on the disk that holds ``path`` (or its nearest existing parent)."""
    try:
        return shutil.disk_usage(_existing(path)).free
    except OSError:
        return None


def gigabytes(count: int) -> str:
    return f"{count / 1e9:.1f} GB"


Snapshot = Dict[str, Set[str]]  # engine name -> every image id it held


class Runs:
    """The test runs going on at once on this machine, through two ``flock`` files in ``directory``.

    Each run holds ``running`` shared for its whole life; the kernel lets go of it when the run's process
    ends, killed or not, so a crashed run never stalls the others. ``mutex`` makes joining and leaving
    one step each. The first run to join while none goes on writes the engines' snapshot; a run that
    leaves while others still hold ``running`` sweeps nothing; the last to leave gets that snapshot, and
    sweeps while it still holds ``mutex``, so a run starting meanwhile waits rather than build an image
    the sweep would list as made."""

    def __init__(self, directory: Path = RUNS_DIR) -> None:
        self.directory = directory
        self.snapshot_path = directory / "snapshot.json"
        self._running = None

    @contextlib.contextmanager
    def _mutex(self) -> Iterator[None]:
        with open(self.directory / "mutex", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def join(self, snapshot: Callable[[], Snapshot]) -> None:
        """Count this run in; where it is the only one, record ``snapshot()`` as the overlap's start."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._mutex():
            self._running = open(self.directory / "running", "a")
            if _try_lock(self._running, fcntl.LOCK_EX):
                taken = {engine: sorted(ids) for engine, ids in snapshot().items()}
                partial = self.snapshot_path.with_suffix(".partial")
                partial.write_text(json.dumps(taken))
                partial.replace(self.snapshot_path)
            fcntl.flock(self._running, fcntl.LOCK_SH)  # under the mutex: no one tests the lock meanwhile

    @contextlib.contextmanager
    def leaving(self) -> Iterator[Tuple[bool, Optional[Snapshot]]]:
        """Whether this run is the last of the overlapping runs to end and, where it is, the snapshot of
        when the first of them started (None where none was recorded); the caller sweeps inside the
        block. Only after ``join``."""
        with self._mutex():
            try:
                if not _try_lock(self._running, fcntl.LOCK_EX):
                    yield False, None
                    return
                try:
                    taken = json.loads(self.snapshot_path.read_text())
                    before = {engine: set(ids) for engine, ids in taken.items()}
                except (OSError, ValueError, AttributeError):
                    before = None
                yield True, before
                self.snapshot_path.unlink(missing_ok=True)
            finally:
                self._running.close()
                self._running = None


def _try_lock(handle, kind: int) -> bool:
    try:
        fcntl.flock(handle, kind | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _snapshot() -> Snapshot:
    """Every image id, per engine that answers."""
    taken = {}
    for engine in engines():
        images = engine.images()
        if images is not None:
            taken[engine.name] = set(images)
    return taken


class Sweep:
    """Every image id as a run starts; at its end, the images made since under the suite's names removed.

    With ``runs``, the start is that of the first run still going when this one starts, and only the last
    of the overlapping runs sweeps (``Runs``); without, this run's own start, as if it were alone. A run
    that built nothing and ran alone removes nothing; an image that was there before stays."""

    def __init__(self, runs: Optional[Runs] = None) -> None:
        self.runs = runs
        self.before: Snapshot = {}
        self.kept_because = ""  # why this run sweeps nothing, known at its start

    def start(self) -> None:
        if self.runs is None:
            self.before = _snapshot()
            return
        try:
            self.runs.join(_snapshot)
        except OSError as error:  # no shared place to meet the other runs: keep, rather than take theirs
            self.kept_because = f"the images this run built are kept: the test runs' place: {error}"

    def finish(self) -> Optional[str]:
        """Remove what the run made; a line saying what went, or None."""
        if os.environ.get(KEEP_VARIABLE) == "1":
            return f"the images this run built are kept ({KEEP_VARIABLE}=1)"
        if self.kept_because:
            return self.kept_because
        if self.runs is None:
            return self._remove(self.before)
        with self.runs.leaving() as (last, before):
            if not last:
                return ("the images this run built are left to the test run still going on this machine, "
                        "whose end removes them")
            if before is None:
                return (f"the images this run built are kept: no record of when the test runs began "
                        f"({self.runs.snapshot_path} is gone or unreadable)")
            return self._remove(before)

    @staticmethod
    def _remove(before: Snapshot) -> Optional[str]:
        was = free_bytes(PODMAN_STORAGE)
        removed = {engine.name: engine.remove_made(before[engine.name])
                   for engine in engines() if engine.name in before}
        removed = {name: count for name, count in removed.items() if count}
        if not removed:
            return None
        now = free_bytes(PODMAN_STORAGE)
        freed = f", {gigabytes(now - was)} freed" if was is not None and now is not None else ""
        counts = ", ".join(f"{name} {count}" for name, count in removed.items())
        return f"removed the images this run built ({counts}){freed}; {KEEP_VARIABLE}=1 keeps them"


def disk_line() -> str:
    """The free space where the engines and the tests write, for the run's header."""
    seen, parts = set(), []
    for label, path in (("engines", PODMAN_STORAGE), ("tests", os.environ.get("TMPDIR") or "/tmp")):
        free = free_bytes(path)
        try:
            device = os.stat(_existing(path)).st_dev
        except OSError:
            continue
        if device in seen or free is None:
            continue
        seen.add(device)
        parts.append(f"{gigabytes(free)} free for the {label} ({path})")
    return "disk: " + "; ".join(parts)
