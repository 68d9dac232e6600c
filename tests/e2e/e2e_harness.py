"""Drive real containers for the end-to-end tests: a rendered compose cluster, kube-played pods.

Everything here starts from files the renderers produced for a spec written
to a temporary directory (never a hand copy), brings them up with the real
engine (podman-compose / ``podman kube play``, or docker compose), and reads
back exit codes, logs and the ``NODEWEAVE-E2E`` records of the training script.
Containers talk only on networks these helpers create, and are removed after.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import yaml

REPO = Path(__file__).resolve().parents[2]
WORKSPACE = Path(__file__).parent / "workspace"
BASE_IMAGE = "localhost/nodeweave-base:bookworm"
# The session image's repository: one per checkout, so two checkouts testing on one machine
# (worktrees, a CI runner beside a developer) never run each other's image.
REGISTRY = os.environ.get("NODEWEAVE_E2E_REGISTRY") or (
    "localhost/nodeweave-e2e-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:8])
RECORD = "NODEWEAVE-E2E "


def records(text: str) -> List[dict]:
    """The JSON records the training script printed, one per rank."""
    return [json.loads(line.split(RECORD, 1)[1]) for line in text.splitlines() if RECORD in line]


def container_pid(kind: str, name: str) -> str:
    """The host pid of a running container's PID 1 (``inspect {{.State.Pid}}``), for a test that signals or enters
    it from the host; the test fails, naming the container's state, where it is not running. A stopped container's
    pid is 0, and ``kill -9 0`` signals the caller's own process group: under ``make test`` that is pytest, its
    workers and make (cleanci12: a recovery test whose node had already finished its training killed them all)."""
    out = subprocess.run([kind, "inspect", "-f", "{{.State.Pid}} {{.State.Status}}", name], capture_output=True,
                         text=True, timeout=60)
    pid, _, state = out.stdout.strip().partition(" ")
    said = f": {out.stderr.strip()[:300]}" if out.stderr.strip() else ""
    assert out.returncode == 0 and pid.isdigit() and int(pid) > 0, (
        f"{name} has no running process to signal or enter: {kind} inspect says pid {pid or '-'}, "
        f"status {state or '-'} (exit {out.returncode}{said})")
    return pid


def prepare_workdir(workdir: Path, spec_text: str) -> Path:
    """Spec file plus the training scripts in ``workdir`` (readable by the image's uid 1000)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "nodeweave.yaml").write_text(spec_text)
    for script in WORKSPACE.iterdir():
        if script.is_file():
            shutil.copy(script, workdir / script.name)
    for path in [workdir, *workdir.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    cache = workdir / "cache"  # the specs' cache.host_path; the image's uid 1000 writes there
    cache.mkdir(exist_ok=True)
    cache.chmod(0o777)
    return workdir / "nodeweave.yaml"


# The engines' words for a container whose process ended, its exit code known: podman says ``stopped`` until its own
# cleanup has run (seconds on a loaded machine), then ``exited``; docker says ``exited`` at once, or ``dead``.
ENDED = ("exited", "stopped", "dead")


@dataclass
class Cluster:
    """Containers of one test, by name, on the engine; knows how to read and remove them."""

    engine: object  # nodeweave.build.Engine
    names: List[str]
    networks: List[str] = field(default_factory=list)
    pods: List[str] = field(default_factory=list)

    @property
    def client(self):
        return self.engine.client

    def state(self, name: str):
        return self.client.container.inspect(name).state

    def exit_code(self, name: str) -> Optional[int]:
        """The exit code once the container ended; None while it is made, runs or is still stopping."""
        state = self.state(name)
        return state.exit_code if state.status in ENDED else None

    def logs(self, name: str) -> str:
        return self.client.container.logs(name)

    def all_logs(self) -> str:
        return "\n".join(f"----- {name} -----\n{self.logs(name)}" for name in self.names)

    def wait_exit(self, names: Optional[List[str]] = None, timeout: float = 300) -> Dict[str, int]:
        """Exit codes once every container stopped; raise with the logs when ``timeout`` passes."""
        names = names or self.names
        deadline = time.monotonic() + timeout
        while True:
            codes = {name: self.exit_code(name) for name in names}
            if all(code is not None for code in codes.values()):
                return codes
            if time.monotonic() > deadline:
                raise AssertionError(f"containers still running after {timeout:.0f} s: {codes}\n{self.all_logs()}")
            time.sleep(1)

    def wait_log(self, name: str, needle: str, timeout: float = 240) -> float:
        """Seconds until ``needle`` appears in the container's log."""
        started = time.monotonic()
        while needle not in self.logs(name):
            if self.exit_code(name) is not None:
                raise AssertionError(f"{name} exited ({self.exit_code(name)}) before printing {needle!r}\n{self.all_logs()}")
            if time.monotonic() - started > timeout:
                raise AssertionError(f"{name} did not print {needle!r} in {timeout:.0f} s\n{self.all_logs()}")
            time.sleep(0.5)
        return time.monotonic() - started

    def processes(self, name: str) -> List[str]:
        """The container's process list (``ps`` inside it), while it runs."""
        out = self.client.container.execute(name, ["ps", "-eo", "pid,ppid,stat,args"])
        return out.splitlines()[1:]

    def remove(self) -> None:
        # podman's `-t 0` skips the stop timeout; docker's `rm -f` kills at once and has no -t, and
        # docker 20.10's `network rm` no -f (a network already gone is an error ignored here)
        podman = self.engine.kind == "podman"
        rm, net_rm = (["rm", "-f", "-t", "0"], ["network", "rm", "-f"]) if podman else (["rm", "-f"], ["network", "rm"])
        for name in self.names:
            subprocess.run([self.engine.kind, *rm, name], capture_output=True, timeout=120)
        for pod in self.pods:
            subprocess.run(["podman", "pod", "rm", "-f", "-t", "0", pod], capture_output=True, timeout=120)
        for network in self.networks:
            subprocess.run([self.engine.kind, *net_rm, network], capture_output=True, timeout=120)


def compose_command(engine, compose_file: Path) -> List[str]:
    if engine.kind == "podman":
        beside_python = Path(sys.executable).parent / "podman-compose"
        tool = str(beside_python) if beside_python.exists() else shutil.which("podman-compose") or "podman-compose"
        return [tool, "-f", str(compose_file)]
    return ["docker", "compose", "-f", str(compose_file)]


@dataclass
class ComposeCluster(Cluster):
    compose_file: Optional[Path] = None
    image: str = ""

    def up(self, services: Optional[List[str]] = None) -> float:
        """``compose up -d`` (of ``services``, default all); returns the epoch time it was called."""
        started = time.time()
        env = {**os.environ, "NODEWEAVE_IMAGE": self.image}
        out = subprocess.run(compose_command(self.engine, self.compose_file) + ["up", "-d", *(services or [])],
                             capture_output=True, text=True, env=env, timeout=300)
        if out.returncode != 0:
            raise AssertionError(f"compose up failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        return started

    def run_like(self, service: str, hostname: str, env: Optional[Dict[str, str]] = None,
                 volumes: Optional[Dict[str, str]] = None, extra: Optional[List[str]] = None,
                 name: Optional[str] = None) -> None:
        """Start one more node, ``hostname``, exactly as the rendered ``service`` but for its name and what a
        test changes: ``env`` added or replaced, ``volumes`` ({container path: host path}) added or
        replacing the mount at that path, ``extra`` engine arguments, another container ``name``."""
        document = yaml.safe_load(self.compose_file.read_text())
        svc = document["services"][service]
        network = self.networks[0]
        name = name or hostname
        argv = [self.engine.kind, "run", "-d", "--name", name, "--hostname", hostname,
                "--network", network, "--shm-size", svc.get("shm_size", "1g"),
                "--workdir", svc["working_dir"], *(extra or [])]
        variables = {**os.environ, "NODEWEAVE_IMAGE": self.image}  # what `compose up` interpolates with
        for key, value in {**svc["environment"], **(env or {})}.items():
            argv += ["--env", f"{key}={interpolate(str(value), variables)}"]
        mounts = dict(compose_mount(volume, self.compose_file.parent, variables) for volume in svc.get("volumes", []))
        mounts.update(volumes or {})
        for target, host_path in mounts.items():
            argv += ["--volume", f"{host_path}:{target}"]
        argv += [self.image, *svc["command"]]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise AssertionError(f"starting {name} failed: {out.stderr}")
        if name not in self.names:  # a rendered service's own name when the test starts it this way instead
            self.names.append(name)


def compose_cluster(engine, spec_path: Path, image: str) -> ComposeCluster:
    """Render ``compose/local.yaml`` for the spec with nodeweave's own renderer and describe its cluster."""
    from nodeweave.targets.compose import render_files
    from nodeweave.spec import load_spec

    spec = load_spec(spec_path)
    files = render_files(spec)
    compose_file = spec_path.parent / "compose" / "local.yaml"
    compose_file.parent.mkdir(exist_ok=True)
    compose_file.write_text(files["compose/local.yaml"])
    document = yaml.safe_load(files["compose/local.yaml"])
    names = [svc.get("container_name", key) for key, svc in document["services"].items()]
    project = document.get("name", spec_path.parent.name)
    networks = [f"{project}_{key}" for key in document.get("networks", {})]
    # podman-compose (1.x) puts a project's containers in a pod named pod_<project>
    pods = [f"pod_{project}"] if engine.kind == "podman" else []
    return ComposeCluster(engine=engine, names=names, networks=networks, pods=pods, compose_file=compose_file,
                          image=image)


def checkout_context(repo: Path, target: Path) -> Path:
    """:func:`snapshot_context` in a clone of the checkout's commit, holding only the context's paths.

    The build labels the image with that commit (``-dirty`` where the checkout's context files differ from
    it), and refreshes a stale zipapp in the copy, never in the checkout: the checkout's committed one must
    stay as it is, for tests/test_rendered_up_to_date.py to find it stale when it is.
    """
    def git(*argv):
        subprocess.run(["git", *argv], check=True, capture_output=True, text=True, timeout=120)

    git("clone", "-q", "--shared", "--no-checkout", str(repo), str(target))
    git("-C", str(target), "sparse-checkout", "set", "--no-cone", "/.dockerignore", "/entrypoint/")
    git("-C", str(target), "reset", "-q", "--hard", "HEAD")
    shutil.rmtree(target / "entrypoint")
    return snapshot_context(repo, target)


def snapshot_context(repo: Path, target: Path) -> Path:
    """A still copy of what the image build reads (others may edit the checkout meanwhile).

    The files the rendered .dockerignore lets in, with the wheelhouse hard-linked.
    """
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(repo / ".dockerignore", target / ".dockerignore")
    shutil.copytree(repo / "entrypoint", target / "entrypoint")
    house = target / "wheelhouse"
    house.mkdir()
    for wheel in (repo / "wheelhouse").iterdir():
        if wheel.is_file():
            os.link(wheel, house / wheel.name)
    return target


def edit_entrypoint(context: Path, module: str, text: str) -> None:
    """A code edit as the image sees one: ``nodeweave/<module>.py`` added to the context's zipapp.

    The "by nodeweave" line is dropped, so the result is the user's own archive, which ``image build``
    keeps as it is (a marked one that differs from this nodeweave's would be refreshed). The image puts
    the archive on the venv's path, so ``from nodeweave import <module>`` reads it back.
    """
    import io
    import zipfile

    archive = context / "entrypoint" / "nodeweave-entrypoint.pyz"
    with zipfile.ZipFile(archive) as old:
        members = {name: old.read(name) for name in old.namelist()}
    members[f"nodeweave/{module}.py"] = text.encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as new:  # written whole: zipimport misreads an appended-to archive
        for name, data in sorted(members.items()):
            new.writestr(name, data)
    archive.write_bytes(archive.read_bytes().split(b"\n", 1)[0] + b"\n" + buffer.getvalue())


_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")


def interpolate(value: str, variables: Dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?message}``, as an engine would read them."""
    def one(match):
        name, kind, rest = match.groups()
        if name in variables and variables[name] != "":
            return variables[name]
        if kind == "-":
            return rest
        raise AssertionError(f"compose would refuse: {name} unset ({rest})")
    return _INTERPOLATION.sub(one, value)


def compose_mount(volume: str, base: Path, variables: Dict[str, str]) -> "tuple[str, str]":
    """A short-syntax compose volume ``HOST:TARGET[:OPTIONS]`` as ``(TARGET[:OPTIONS], host path)``: the host
    part interpolated (``${NODEWEAVE_JOB_TOKEN_HOST:-/dev/null}``) and resolved against the compose file's
    folder, as compose reads it."""
    host, target = interpolate(volume, variables).split(":", 1)  # `${VAR:-default}` holds a colon of its own
    return target, str((base / os.path.expanduser(host)).resolve())


def run_node_service(engine, compose_text: str, hostname: str, network: str, image: str, workdir: Path,
                     variables: Dict[str, str]) -> None:
    """One host of the rendered per-host ``compose/node.yaml``, on a test bridge network instead of the
    host network (one machine cannot give two containers the same host ports)."""
    svc = next(iter(yaml.safe_load(compose_text)["services"].values()))
    argv = [engine.kind, "run", "-d", "--name", hostname, "--hostname", hostname, "--network", network,
            "--workdir", svc["working_dir"]]
    for key, value in svc["environment"].items():
        argv += ["--env", f"{key}={interpolate(str(value), variables)}"]
    for volume in svc.get("volumes", []):
        target, host = compose_mount(volume, workdir / "compose", variables)
        argv += ["--volume", f"{host}:{target}"]
    argv += [image, *svc["command"]]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"starting {hostname} failed: {out.stderr}")
