"""The local cluster: the spec's compose file on podman (podman-compose) or docker (``docker compose``).

Each node is a container ``<name>-<i>`` on one bridge network, reached with
``podman exec`` / ``docker exec``. ``up`` renders the job's own compose file,
``.nodeweave/<job>/compose.yaml`` (what ``render compose`` writes to
``compose/local.yaml``, host paths made absolute so it can live there), then
starts it with ``NODEWEAVE_MODE`` set (``--hold``: every node holds for
``nodeweave run``) and ``NODEWEAVE_IMAGE`` when ``--image`` names one. Kept per
job, with the job's token beside it, so two specs in one folder never start,
stop or re-key each other's nodes: ``down --spec a.yaml`` uses a's file only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

from nodeweave.cluster.base import Backend, Node
from nodeweave.steps import Step
from nodeweave.errors import UsageError
from nodeweave.remote import make_target

COMPOSE_FILE = "compose/local.yaml"  # the rendered file this one is made like


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


class LocalCluster(Backend):
    target = "local"

    def __init__(self, spec, spec_path, options):
        super().__init__(spec, spec_path, options)
        self.detected = detect_engine(options.engine)
        self.engine = self.detected or "podman"  # a dry run still shows the commands; check_tools refuses
        from nodeweave.cluster.options import JobState

        self.state = JobState(self.spec_dir, spec.name)
        self.compose_file = self.state.compose_file

    def nodes(self, for_up: bool = False) -> List[Node]:
        return [Node(i, make_target(self.engine, f"{self.spec.name}-{i}")) for i in range(self.spec.containers)]

    def tool(self) -> str:
        return self.engine

    def check_tools(self) -> None:
        if self.detected is None:
            from nodeweave.failures import no_engine

            raise no_engine()
        super().check_tools()

    def compose(self, *args: str) -> tuple:
        return (*compose_tool(self.engine), "-f", str(self.compose_file), *args)

    def up_files(self, mode: str) -> List["PlannedFile"]:
        """The job's compose file (when it differs from what the spec renders) and a fresh job token."""
        from nodeweave.cluster import token
        from nodeweave.cluster.plan import PlannedFile

        path = self.state.token_file
        self.token_env = token.compose_env(str(path))
        secret = PlannedFile(self.state.shown(path), f"a new random job token (0600), mounted at "
                             f"{token.CONTAINER_PATH} in every node", mode=0o600)
        return self._compose_files() + [secret]

    def _compose_files(self) -> List["PlannedFile"]:
        """The job's compose file, planned when it differs from what the spec renders (it is nodeweave's own)."""
        from nodeweave.cluster.plan import PlannedFile

        text = render_up_compose(self.spec, self.spec_dir)
        if self.compose_file.is_file() and self.compose_file.read_text(encoding="utf-8") == text:
            return []
        status = "changed" if self.compose_file.exists() else "new"
        return [PlannedFile(self.state.shown(self.compose_file), f"{status}: rendered from {self.spec_path.name}",
                            text.encode("utf-8"))]

    def down_files(self) -> List["PlannedFile"]:
        """compose takes the node list from the file: render it when it is gone (the spec's nodes)."""
        return [] if self.compose_file.exists() else self._compose_files()

    def prepare_up(self, mode: str, dry_run: bool) -> List[str]:
        return self._done(self.up_files(mode), dry_run)

    def prepare_down(self, dry_run: bool) -> List[str]:
        return self._done(self.down_files(), dry_run)

    def _done(self, files, dry_run: bool) -> List[str]:
        """Write ``files`` (unless a dry run): what a verb without a plan executor did before (tests use it)."""
        from nodeweave.cluster.execute import write_files
        from nodeweave.cluster.plan import Phase

        if dry_run:
            return [f"would write {f.path} ({f.what})" for f in files]
        done: List[str] = []
        write_files(Phase("files", "write", files=tuple(files)), self.spec_dir, done.append)
        return done

    def up_steps(self, mode: str, image: Optional[str]) -> List[List[Step]]:
        env = (("NODEWEAVE_MODE", mode),) + ((("NODEWEAVE_IMAGE", image),) if image else ())
        env += getattr(self, "token_env", ())
        # Every up recreates the nodes: each must start with this up's token, none with the last one's.
        return [[Step(f"start {self.spec.containers} node containers ({mode} mode)",
                      self.compose("up", "-d", "--force-recreate"), env,
                      timeout=900)]]

    def down_steps(self, delete_claims: bool) -> List[List[Step]]:
        grace = str(self.spec.kubernetes.grace_period)
        return [[Step("stop and remove the node containers and their network", self.compose("down", "-t", grace),
                      timeout=self.spec.kubernetes.grace_period + 300)]]

    def states(self, nodes: List[Node]) -> Dict[int, str]:
        """``running``, ``exited (N)``, ``created`` or ``missing`` per container, in one inspect."""
        names = {node.remote.name: node.index for node in nodes}
        argv = [self.engine, "inspect", "--format", "{{json .Name}} {{json .State.Status}} {{.State.ExitCode}}", *names]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
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
        return {index: found.get(index, "missing") for index in names.values()}

    def failed_state(self, state: str) -> bool:
        return state.startswith("exited") or state == "dead"

    def sync_targets(self):
        nodes = self.nodes()
        self.require_up(nodes, "sync")  # not up: exit 3 in one line, as every verb, before any exec is tried
        return [node.remote for node in nodes], self.spec.workspace.path

    def where(self) -> str:
        return f"{self.engine} on this machine ({self.state.shown(self.compose_file)})"


def container_state(status: str, exit_code: str) -> str:
    """The engine's status as ``status`` shows it: ``exited (N)`` once the process ended. podman says ``stopped``
    between the process's exit (its code already known) and its own cleanup, which a loaded machine can make last
    seconds; that is the same ended container, so it reads the same as docker's ``exited``."""
    return f"exited ({exit_code})" if status in ("exited", "stopped") else status


def render_up_compose(spec, spec_dir: Path) -> str:
    """``compose/local.yaml`` as ``render`` makes it, with every relative host path made absolute (from the spec's
    folder), so the file means the same from the job's state folder as from compose/."""
    from dataclasses import replace

    from nodeweave.targets.compose import render_files

    def absolute(host_path):
        if host_path is None or host_path.startswith(("/", "~")):
            return host_path
        return str((spec_dir / host_path).resolve())

    rebased = replace(spec, workspace=replace(spec.workspace, host_path=absolute(spec.workspace.host_path)),
                      cache=replace(spec.cache, host_path=absolute(spec.cache.host_path)),
                      volumes=tuple(replace(v, host_path=absolute(v.host_path)) for v in spec.volumes))
    return render_files(rebased)[COMPOSE_FILE]
