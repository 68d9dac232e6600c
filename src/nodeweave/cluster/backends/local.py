"""The local cluster: the spec's compose file on podman (podman-compose) or docker (``docker compose``).

Each node is a container ``<name>-<i>`` on one bridge network, reached with
``podman exec`` / ``docker exec``. ``up`` renders the job's own compose file,
``.nodeweave/<job>/compose.yaml`` (what ``render compose`` writes to
``compose/local.yaml``, host paths made absolute so it can live there), then
starts it with ``NODEWEAVE_MODE`` set (``--hold``: every node holds for
``nodeweave run``) and ``NODEWEAVE_IMAGE`` always given (``--image``, else the
caller's ``NODEWEAVE_IMAGE``, noted in the plan, else the spec's). Kept per
job, with the job's token beside it, so two specs in one folder never start,
stop or re-key each other's nodes: ``down --spec a.yaml`` uses a's file only;
and in this folder's own compose project, every container labelled with the
job and the folder (``identity.py``), so another folder's job of the same
name is refused, never acted on.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from nodeweave.entrypoint import bounded
from nodeweave.cluster.base import Backend, Node, NodeState, PlatformState
from nodeweave.steps import Step
from nodeweave.errors import UsageError
from nodeweave.remote import make_target

INSPECT_TIMEOUT_S = 60  # one inspect of every container of the job: well under a second for thousands


def compose_tool(engine: str) -> List[str]:
    """podman-compose (the one beside this Python first) or ``docker compose``."""
    if engine == "docker":
        return ["docker", "compose"]
    beside = Path(sys.executable).parent / "podman-compose"
    return [str(beside) if beside.exists() else "podman-compose"]


def detect_engine(given: "str | None" = None) -> "str | None":
    """The engine every verb uses (``nodeweave.engines``): --engine, else $NODEWEAVE_ENGINE, else podman where
    installed, else docker (None: neither is)."""
    from nodeweave.engines import installed_engine

    return installed_engine(given)


def _other_engine(engine: str) -> str:
    """``, or use --engine ENGINE`` where the verb running has --engine and ENGINE is on PATH, else nothing: a
    hint offers only what the verb takes (replay11 R2: the option is judged by ``failures.offered``, the one rule)."""
    from nodeweave.failures import offered

    return f", or use --engine {engine}" if offered("--engine") and shutil.which(engine) else ""


def _ask(argv: List[str]) -> "Optional[subprocess.CompletedProcess]":
    """One short question to the engine's client; None: it could not be asked (not there, no answer in time)."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None


def recorded_daemon(backend) -> str:
    """When ``up`` recorded this job up on this engine through another daemon ($DOCKER_HOST, $CONTAINER_HOST) than
    the one the client asks now: the words that say which and how to ask it again, else "" (walk10 C18: the
    remedy was "or use --engine podman", which starts a second cluster)."""
    from nodeweave.cluster.options import load_made
    from nodeweave.engines import HOST_VARIABLES, engine_host
    from nodeweave.jobstate import STATE_DIR

    try:
        made = load_made(backend.spec_path, backend.spec.name)
    except UsageError:
        return ""  # a damaged record is named by the verb's own reading of it
    if not made or made.get("engine") != backend.engine or made.get("engine_host") == engine_host(backend.engine):
        return ""
    variable = HOST_VARIABLES[backend.engine]
    then = f"{variable}={made['engine_host']}" if made.get("engine_host") else f"{variable} unset (the default daemon)"
    now = f"{variable}={engine_host(backend.engine)}" if engine_host(backend.engine) else f"{variable} unset"
    again = (f"export {variable}={made['engine_host']}" if made.get("engine_host") else f"unset {variable}")
    return (f"{STATE_DIR}/{backend.spec.name}/cluster.json records {backend.spec.name} brought up on {backend.engine} "
            f"with {then}, and this shell has {now}: `{again}` and run the verb again")


class LocalCluster(Backend):
    target = "local"
    recreates_nodes = True  # compose up -d --force-recreate (_up_steps)
    knows_unchanged = True

    def __init__(self, spec, spec_path, options):
        super().__init__(spec, spec_path, options)
        self.detected = detect_engine(options.engine)
        self.engine = self.detected or "podman"  # a dry run still shows the commands; check_tools refuses
        from nodeweave.jobstate import JobState

        self.state = JobState(self.spec_dir, spec.name)
        self.compose_file = self.state.compose_file
        self.tool = self.engine
        from nodeweave.engines import engine_host

        # the engine and the daemon it answered on are where the nodes are: up on another is a second cluster
        self.recorded = {"project": self.mark.project, "engine": self.engine, "engine_host": engine_host(self.engine)}

    def nodes(self, for_up: bool = False, dry_run: bool = False) -> List[Node]:
        return self._counted(self.spec.containers)

    def made_nodes(self, dry_run: bool = False) -> List[Node]:
        return self._counted(max(self.made_count() or 0, self.spec.containers))

    def _counted(self, count: int) -> List[Node]:
        return [self._node(i, make_target(self.engine, f"{self.spec.name}-{i}")) for i in range(count)]

    def check_tools(self) -> None:
        if self.detected is None:
            from nodeweave.failures import no_engine

            raise no_engine()
        super().check_tools()

    def reach_problem(self) -> Optional[str]:
        """The engine is on PATH but cannot start the nodes: docker's daemon does not answer, or the compose tool
        is missing (``docker compose`` v2, podman-compose). Every real verb ends with exit 3 on it before writing
        anything, and its dry run notes it (walk7 A3: ``down --engine docker`` wrote the job's compose file, then
        failed on docker's usage text for the missing ``compose``)."""
        if self.detected is None:
            return None  # check_tools names the missing engine
        tool = compose_tool(self.engine)
        if self.engine == "podman":
            if shutil.which(tool[0]) is None:
                return ("podman-compose is not on PATH; the local target starts the nodes with it (pip install "
                        "'nodeweave[local]' or podman-compose" + _other_engine("docker") + ")")
            return None
        daemon = _ask(["docker", "version", "--format", "{{.Server.Version}}"])
        if daemon is not None and daemon.returncode != 0:
            from nodeweave.failures import tool_message

            said = tool_message(daemon.stderr) or "no message"
            elsewhere = recorded_daemon(self)
            if elsewhere:
                return f"docker is installed but its daemon does not answer ({said}): {elsewhere}"
            return (f"docker is installed but its daemon does not answer ({said}): start it (systemctl start "
                    "docker)" + _other_engine("podman"))
        plugin = _ask([*tool, "version"])
        if plugin is not None and plugin.returncode != 0:
            return ("`docker compose` (v2) is missing from this docker client: install the docker-compose-plugin "
                    "package (docker's own repository)" + _other_engine("podman"))
        return None

    def _compose(self, *args: str) -> tuple:
        """compose on the job's file, in this folder's own project (``-p``: no COMPOSE_PROJECT_NAME of the
        caller's, no other folder's job of the same name)."""
        return (*compose_tool(self.engine), "-p", self.mark.project, "-f", str(self.compose_file), *args)

    def _inspect(self, names: List[str], template: str) -> "Optional[subprocess.CompletedProcess]":
        """One engine inspect of the job's containers by name (None: no answer, said in ``unanswered``).

        ``--type container`` always: without it the engine looks each name up as every kind of object (image,
        volume, network, pod), in time that grows with the square of the names: 13 s for 600 missing ones and past
        the 60 s limit for the 2112 of a 2048-node job, on a 2-core VM (docs/benchmarks.md); a FileNotFoundError
        (no engine) is the caller's to word.
        """
        argv = [self.engine, "inspect", "--type", "container", "--format", template, *names]
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=INSPECT_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise
        except (OSError, subprocess.TimeoutExpired) as err:  # no answer: unknown, the verb goes on as planned
            why = f"in {INSPECT_TIMEOUT_S} s" if isinstance(err, subprocess.TimeoutExpired) else f"({err})"
            self.unanswered = f"`{self.engine} inspect` of the job's {len(names)} container(s) gave no answer {why}"
            return None

    @property
    def unmarked_removal(self) -> str:
        """How containers of this job's names that no `up` marked are removed by hand ({names}: theirs)."""
        compose = "docker compose" if self.engine == "docker" else "podman-compose"
        return (f"`{compose} -f compose/local.yaml down` in the folder that started it, or "
                f"`{self.engine} rm -f {{names}}`")

    def marks(self):
        """Each node container's mark (its labels), in one inspect; missing containers are left out."""
        from nodeweave.cluster.identity import INSPECT_MARKS, inspected_marks

        if self.detected is None:
            return {}
        names = [node.remote.name for node in self.nodes()]
        try:
            out = self._inspect(names, INSPECT_MARKS)
        except FileNotFoundError:
            out = None
        if out is None:
            return {}
        return {name: mark for name, mark in inspected_marks(out.stdout).items() if name in names}

    @functools.cached_property
    def up_compose(self) -> str:
        """The job's compose file, rendered once per verb: a 2048-node job's is 2.2 MB, and ``up`` reads it for
        the file it plans and for the variables it interpolates."""
        return render_up_compose(self.spec, self.spec_dir, self.mark)

    def _up_files(self, mode: str) -> List["PlannedFile"]:
        """The job's compose file (when it differs from what the spec renders) and a fresh job token."""
        from nodeweave.cluster import token
        from nodeweave.plan import PlannedFile

        if self._own_token_file:
            return self._compose_files()
        path = self.state.token_file
        mode = token.mounted_mode()
        secret = PlannedFile(self.state.shown(path), f"a new random job token ({mode:04o}"
                             + (", root's and group 0's: the images' user reads it by its group 0" if
                                mode == token.ROOT_MODE else "")
                             + f"), mounted at {token.CONTAINER_PATH} in every node", mode=mode)
        return self._compose_files() + [secret]

    def _compose_files(self) -> List["PlannedFile"]:
        """The job's compose file, planned when it differs from what the spec renders (it is nodeweave's own)."""
        from nodeweave.plan import PlannedFile

        text = self.up_compose
        if self.compose_file.is_file() and \
                bounded.read_text(self.compose_file, bounded.TEXT_CAP, "a compose file") == text:
            return []
        status = "changed" if self.compose_file.exists() else "new"
        return [PlannedFile(self.state.shown(self.compose_file), f"{status}: rendered from {self.spec_path.name}",
                            text.encode("utf-8"))]

    def _down_files(self, delete_claims: bool) -> List["PlannedFile"]:
        """compose takes the node list from the file: render it when it is gone (the spec's nodes)."""
        return [] if self.compose_file.exists() else self._compose_files()

    def _down_removals(self) -> List["PlannedFile"]:
        """The token ``up`` wrote and mounted (a secret no node reads once they are gone; the next ``up`` writes a
        new one); never a token file the spec's env names, which is the user's."""
        from nodeweave.plan import PlannedFile

        path = self.state.token_file
        if self._own_token_file or not (path.is_file() or path.is_symlink()):
            return []
        return [PlannedFile(self.state.shown(path), "the job token up wrote; the next up writes a new one")]

    # which engine compose reaches (podman-compose and docker compose read them); the project and file are -p, -f
    reach_variables = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "CONTAINER_HOST", "CONTAINER_CONNECTION",
                       "CONTAINERS_CONF", "COMPOSE_PROFILES", "COMPOSE_ENV_FILES", "PODMAN_COMPOSE_PROVIDER")

    def _up_env(self, mode: str, image: Optional[str]) -> tuple:
        """Every variable the compose file reads, given: none is left to the caller's environment."""
        from nodeweave.cluster import token
        from nodeweave.cluster.environment import IMAGE_VARIABLE, image_choice

        chosen, _ = image_choice(image, self._spec_image())
        env = (("NODEWEAVE_MODE", mode), (IMAGE_VARIABLE, chosen))
        return env if self._own_token_file else env + token.compose_env(str(self.state.token_file))

    @property
    def _own_token_file(self) -> bool:
        """The spec's env names the token file every node reads (validate: on a mount of the spec): ``up`` then
        writes and mounts no token of its own, which no node would read (walk7 A48)."""
        from nodeweave.cluster import token

        return token.FILE_VARIABLE in self.spec.env

    def _spec_image(self) -> str:
        """The image the spec gives the local nodes: the datum the compose file's ``${NODEWEAVE_IMAGE:-...}``
        default is rendered from (the local variant's resolved image), read as data, not out of the file."""
        from nodeweave.resolve import resolve
        from nodeweave.targets.compose.local import LOCAL_VARIANT

        return resolve(self.spec, LOCAL_VARIANT).image

    @property
    def image_variant(self) -> str:
        """The local nodes run the cpu variant, whatever the spec builds (``_spec_image``; walk6 W47)."""
        from nodeweave.targets.compose.local import LOCAL_VARIANT

        return LOCAL_VARIANT

    def _spec_image_why(self) -> str:
        """Why the local nodes run the spec's image, or its ``cpu`` variant (the local target simulates each node on
        this machine's CPU, whatever variant the spec builds)."""
        from nodeweave.cluster.environment import SPEC_IMAGE
        from nodeweave.targets.compose.local import LOCAL_VARIANT

        if self.spec.image.variant == LOCAL_VARIANT:
            return SPEC_IMAGE
        return (f"the spec's image.registry and name with the {LOCAL_VARIANT} variant, not its "
                f"{self.spec.image.variant}: the local target simulates every node on this machine's CPU (give "
                "--image for another)")

    def _up_image(self, image: Optional[str]) -> Optional[str]:
        from nodeweave.cluster.environment import image_choice

        return image_choice(image, self._spec_image())[0]

    def _up_notes(self, image: Optional[str]) -> List[str]:
        from nodeweave.cluster.environment import image_choice, inherited_notes, interpolated
        from nodeweave.targets.compose.local import dropped_note

        given = dict(self._up_env("hold", image))
        read = interpolated(self.up_compose)

        return [*machine_too_small(self.spec.containers, processes=spec_processes(self.spec)),
                *[note for note in [dropped_note(self.spec)] if note],
                image_choice(image, self._spec_image(), why=self._spec_image_why())[1], *self._image_of_another(image),
                *inherited_notes((*self.reach_variables, *read), given=given)]

    def _image_of_another(self, image: Optional[str]) -> List[str]:
        """The spec's image in the store built from another folder whose job has this name: refused, exit 3, its dry
        run too (walk16 A4: a note let `up` recreate this folder's nodes with that folder's code); an image named
        (--image, $NODEWEAVE_IMAGE) is the user's choice: said (walk8 A3)."""
        from nodeweave.cluster.environment import IMAGE_VARIABLE
        from nodeweave.cluster.pullable import built_elsewhere

        chosen = self._up_image(image)
        other = built_elsewhere(chosen, self.detected, self.mark.owner)
        if other and not image and not os.environ.get(IMAGE_VARIABLE):
            from nodeweave.errors import EnvironmentProblem

            raise EnvironmentProblem(f"image {chosen} was built from {other}, not this folder (its spec is also named "
                                     f"{self.spec.name}): the nodes would run that folder's requirements and code; "
                                     "`nodeweave image build --force` here first, or give one spec another name (or "
                                     f"image.registry or image.tag), or --image {chosen} to run it anyway")
        return [f"image {chosen} was built from {other}, not this folder: the nodes would run that folder's "
                f"requirements and code"] if other else []

    def image_problem(self, image: Optional[str]) -> Optional[str]:
        """A ``localhost/`` image this machine's store lacks (walk7 A35): podman-compose would fail pulling it."""
        from nodeweave.cluster.pullable import absent_here

        from nodeweave.targets.compose.local import LOCAL_VARIANT

        chosen = self._up_image(image)
        build = f"nodeweave image build {LOCAL_VARIANT}" if chosen == self._spec_image() else "nodeweave image build"
        return absent_here(chosen, self.detected, build)

    def check_folders(self) -> List[str]:
        from nodeweave.cluster.writable import check_folders

        return check_folders(self.spec, self.spec_dir, self.engine)

    def made_count(self) -> Optional[int]:
        """The services of ``.nodeweave/<job>/compose.yaml``, the file ``up`` started the nodes from; None when there
        is none or it cannot be read (the verbs' own reading of it names why)."""
        import yaml

        try:
            made = yaml.safe_load(bounded.read_text(self.compose_file, bounded.TEXT_CAP, "a compose file"))
        except (OSError, ValueError, yaml.YAMLError, bounded.TooLarge):
            return None
        services = made.get("services") if isinstance(made, dict) else None
        return len(services) if isinstance(services, dict) and services else None

    def made_stale(self) -> Optional[bool]:
        try:
            made = bounded.read_text(self.compose_file, bounded.TEXT_CAP, "a compose file")
        except (OSError, ValueError, bounded.TooLarge):
            return None
        return made != self.up_compose

    def metrics_url(self) -> Optional[str]:
        """``<engine> port <job>-0 <metrics.port>``: the host port the engine picked for node 0's ``/metrics``
        (compose's ``127.0.0.1::PORT``: one fixed port would stop a second job of this machine from starting)."""
        if not self.spec.metrics.enabled:
            return None
        try:
            out = subprocess.run([self.engine, "port", f"{self.spec.name}-0", str(self.spec.metrics.port)],
                                 capture_output=True, text=True, timeout=INSPECT_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        from nodeweave.entrypoint.hostport import http_url, split_host_port

        published = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
        if published.startswith(":") and published.count(":") == 1:  # no host said: every address of this machine
            published = "0.0.0.0" + published
        try:
            host, port = split_host_port(published)
        except ValueError:
            return None
        if port is None:
            return None
        host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
        return http_url(host, port, "/metrics")

    def up_unchanged(self, nodes: List[Node], mode: str, image: Optional[str]) -> bool:
        """Every node's container running from the compose file ``up`` would write (the file unchanged, so the
        same labels, mounts, ports and token), in ``mode``, from the image ``up`` picks as the engine has it now
        (a rebuilt tag is a change, as compose sees it): one inspect of the containers, one of the image."""
        if not nodes or self._compose_files() or len(nodes) != self.spec.containers:
            return False
        chosen = self._up_image(image)
        try:
            out = self._inspect([n.remote.name for n in nodes],
                                "{{json .State.Status}} {{json .Image}} {{json .Config.Env}}")
            built = subprocess.run([self.engine, "image", "inspect", "--format", "{{.Id}}", chosen],
                                   capture_output=True, text=True, timeout=INSPECT_TIMEOUT_S,
                                   stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if out is None or out.returncode != 0 or built.returncode != 0:
            return False
        image_id = built.stdout.strip().rpartition(":")[2]
        want = {f"NODEWEAVE_MODE={mode}", f"NODEWEAVE_IMAGE_REF={chosen}"}
        lines = out.stdout.splitlines()
        try:
            seen = [[json.loads(part) for part in line.split(" ", 2)] for line in lines]
        except ValueError:
            return False
        return len(seen) == len(nodes) and all(
            status == "running" and str(ran).rpartition(":")[2] == image_id and want <= set(env or ())
            for status, ran, env in seen)

    def _up_steps(self, mode: str, image: Optional[str]) -> List[List[Step]]:
        env = self._up_env(mode, image)
        # Every up recreates the nodes: each must start with this up's token, none with the last one's.
        return [[Step(f"start {self.spec.containers} node containers ({mode} mode)",
                      self._compose("up", "-d", "--force-recreate"), env,
                      timeout=900, engine=self._engine_step("fix what it names and run `nodeweave up` again "
                                                            "(`nodeweave status` shows each node)"))]]

    def _engine_step(self, remedy: str) -> "EngineStep":
        """How a compose step of this job says its failure: the engine's reason, the node its container names."""
        from nodeweave.failures import EngineStep

        return EngineStep(self.engine, remedy, containers=f"{self.spec.name}-")

    def _down_steps(self, delete_claims: bool) -> List[List[Step]]:
        grace = str(self.spec.kubernetes.grace_period)
        return [[Step("stop and remove the node containers and their network", self._compose("down", "-t", grace),
                      timeout=self.spec.kubernetes.grace_period + 300,
                      engine=self._engine_step("fix what it names and run `nodeweave down` again"))]]

    def states(self, nodes: List[Node]) -> Dict[int, PlatformState]:
        """``running``, ``exited (N)``, ``created`` or ``missing`` per container, in one inspect."""
        names = {node.remote.name: node.index for node in nodes}
        try:
            out = self._inspect(list(names), "{{json .Name}} {{json .State.Status}} {{.State.ExitCode}}")
        except FileNotFoundError:  # no engine here: nothing can be up on it, and the line says what to install
            from nodeweave.failures import need_tool

            need_tool(self.engine, f"the {self.target} target reaches its nodes with it")
            return {}
        if out is None:  # no answer: unknown, the verb goes on as planned
            return {}
        found = {}
        for line in out.stdout.splitlines():
            try:
                name_text, status_text, code = line.rsplit(" ", 2)
                name, status = json.loads(name_text).lstrip("/"), json.loads(status_text)
            except ValueError:
                continue
            if name in names:
                found[names[name]] = container_state(status, code)
        return {index: found.get(index, PlatformState(NodeState.ABSENT, "missing")) for index in names.values()}

    def nothing_up_line(self) -> Optional[str]:
        """Only when the engine answers, for every container, that there is no such container (podman exit 125,
        docker exit 1, "no such ..."): any other answer, or none, leaves down to go on as planned."""
        names = [node.remote.name for node in self.nodes()]
        try:
            out = self._inspect(names, "{{.Name}}")
        except FileNotFoundError:
            out = None
        if out is None:
            return None
        said = out.stderr.lower()
        if out.returncode == 0 or out.stdout.strip() or said.count("no such") < len(names):
            return None
        return (f"{self.spec.name} is not up on {self.where}: none of its {len(names)} container(s) exists; "
                "nothing to take down")

    def host_mounts(self):
        """The compose file's bind mounts (compose.common.volumes): the workspace, the cache, each volume with a
        host_path; a relative host path is relative to the spec's folder."""
        from nodeweave.specpath import host_folder, spec_folder

        spec, here = self.spec, spec_folder(self.spec_path)
        pairs = [(spec.workspace.host_path, spec.workspace.path), (spec.cache.host_path, spec.cache.path)]
        pairs += [(volume.host_path, volume.path) for volume in spec.volumes if volume.host_path is not None]
        return [(host_folder(host, here).resolve(), inside) for host, inside in pairs]

    def sync_targets(self):
        from nodeweave.cluster.onbackend import require_up

        nodes = self.nodes()
        require_up(self, nodes, "sync")  # not up: exit 3 in one line, as every verb, before any exec is tried
        return [node.remote for node in nodes], self.spec.workspace.path

    @property
    def where(self) -> str:
        return f"{self.engine} on this machine ({self.state.shown(self.compose_file)})"


ENGINE_STATES = {"running": NodeState.RUNNING, "created": NodeState.CREATED, "configured": NodeState.STARTING,
                 "dead": NodeState.ENDED}  # podman's and docker's words; any other is asked (paused, restarting)


def container_state(status: str, exit_code: str) -> PlatformState:
    """The engine's status as ``status`` shows it: ``exited (N)`` once the process ended. podman says ``stopped``
    between the process's exit (its code already known) and its own cleanup, which a loaded machine can make last
    seconds; that is the same ended container, so it reads the same as docker's ``exited``."""
    if status in ("exited", "stopped"):
        return PlatformState(NodeState.ENDED, f"exited ({exit_code})")
    return PlatformState(ENGINE_STATES.get(status, NodeState.UNKNOWN), status)


def render_up_compose(spec, spec_dir: Path, mark=None) -> str:
    """The job's compose file (``overlay.local_compose``, pure): host paths absolute from the spec's
    folder; with ``mark``, this folder's compose project and every container labelled with the job and the
    folder (identity.py)."""
    from nodeweave.overlay import local_compose

    if mark is None:
        return local_compose(spec, str(spec_dir))
    return local_compose(spec, str(spec_dir), mark.project, mark.labels())


TORCH_NODE_BYTES = 1 << 29  # one node container importing torch on the CPU: ~0.5 GiB resident (the cpu image)
NODES_PER_CPU = 4  # a few small simulated nodes share a CPU well (the tests run 3 on 2 CPUs); more starve


def torch_processes_fit(cpus: Optional[int] = None, memory: Optional[int] = None) -> Tuple[int, int, int]:
    """(about how many processes importing torch on the CPU this machine holds, its CPUs, its memory in bytes or
    0 when unknown): ``NODES_PER_CPU`` a CPU, and ~0.5 GiB of memory each. The one rule of what this machine holds,
    for the local target's node containers and their processes and for bench's gloo ranks (walk7 B29, walk13 A24,
    A25)."""
    cpus = cpus if cpus is not None else (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                          else os.cpu_count() or 1)
    if memory is None:
        try:
            with open("/proc/meminfo") as f:
                memory = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
        except (OSError, StopIteration, ValueError, IndexError):
            memory = 0
    fits = min(NODES_PER_CPU * cpus, memory // TORCH_NODE_BYTES) if memory else NODES_PER_CPU * cpus
    return max(fits, 1), cpus, memory


def cpu_processes(count) -> int:
    """Processes per node on the local target's CPU nodes from a count given (the spec's ``gpus_per_node``, ``run
    --nproc-per-node``): ``auto`` there is 1, as every node's entrypoint reads it with no GPU."""
    return int(count) if str(count).isdigit() else 1


def spec_processes(spec) -> int:
    """Processes per node the local target's nodes run from the spec: its ``gpus_per_node`` on a cpu variant's
    spec; a GPU spec's nodes run ``auto`` there, 1 on their CPU (``targets/compose/local.py``)."""
    from nodeweave.catalogue import get_variant

    return cpu_processes(spec.gpus_per_node) if get_variant(spec.image.variant).vendor == "cpu" else 1


def machine_too_small(containers: int, cpus: Optional[int] = None, memory: Optional[int] = None,
                      processes: int = 1, ask: bool = True) -> List[str]:
    """A line when the local target would start more node containers, or processes in them (``processes`` a
    node: on the local target's CPU nodes each imports torch), than this machine can hold (``torch_processes_fit``;
    walk7 B29: a 2,048-node spec planned 2,048 containers on a 2-CPU VM with only the note that the local target
    simulates every node on its CPU). A spec that size is meant for a cluster target; the line names them (``ask``:
    a caller naming its own remedy leaves them out)."""
    fits, cpus, memory = torch_processes_fit(cpus, memory)
    if containers * processes <= fits:
        return []
    many = (f"{containers} node containers" if processes == 1 else
            f"{containers} node container(s) x {processes} processes ({containers * processes})")
    return [f"{many} on this machine ({cpus} CPU(s)"
            + (f", {memory / 2**30:.0f} GiB" if memory else "") + f"): each imports torch (~0.5 GiB), so about "
            f"{fits} fit here" + ("; the local target is for trying a few nodes: did you mean -t kubernetes, "
                                  "-t slurm or -t hosts?" if ask else "")]
