"""Bare hosts over ssh: one container per host with docker/podman compose, or the hosts themselves.

With ``--engine docker`` (or ``podman``) ``up`` sends the rendered
``compose/node.yaml`` to ``<remote dir>/compose/`` on every host (over the
ssh channel, on stdin) and starts it there with that host's ``NODE_RANK``,
the first host as ``MASTER_ADDR`` and the node count in the environment of
the compose command: no hand-written ``.env`` per host. Nodes are then
reached as ``ssh+docker:HOST/<name>-node``. With ``--engine none`` the hosts
run the entrypoint themselves (installed there, as on a LAN of workstations):
nothing is started (a spec ``hosts`` list is sent to
``<remote dir>/.nodeweave/hosts``, where ``NODEWEAVE_HOSTFILE`` points), and
every command gets the variables a compose file would have given the
container, plus ``cd <remote dir>``.

A job is what its own folder started (``identity.py``): the compose file sent to the hosts names this
folder's own compose project and labels each host's container with the job and the folder, and every
verb reads those labels first (one ``inspect`` over ssh per host): another folder's container is
refused, never acted on. Bare hosts start no container: ``up`` leaves the same labels as
``.nodeweave/<job>/owner.json`` beside the job's token in the remote folder, and ``down`` takes it back.
"""

from __future__ import annotations

import posixpath
from typing import Dict, List, Optional, Tuple

from nodeweave.cluster.base import Backend, Node, PlatformState
from nodeweave.cluster.phases import SPARE_ROLE
from nodeweave.cluster.options import check_remote_dir
from nodeweave.steps import Step, printed
from nodeweave.errors import UsageError
from nodeweave.remote import RemoteOptions, make_target
from nodeweave.remote.replace import replace_from_stdin

# Every write replaces the file by one rename (remote/replace.py): the hosts may share the remote folder.
_REPLACE = replace_from_stdin('"$1"', '"$2"')
WRITE_FILE = ("sh", "-c", 'mkdir -p "$1" && ' + _REPLACE, "sh")  # fixed text; the folder and name are arguments
# The same write for a file in the workspace's own tree (compose/node.yaml, compose/hosts): a file already there
# without nodeweave's header in its first five lines is the team's (sent by `nodeweave sync`, or made on the host),
# and is refused, exit 3, as `render` refuses it here (walk6, W40). ``$3``: this file's name as the message says it.
WRITE_RENDERED = ("sh", "-c", 'mkdir -p "$1" && if [ -e "$1/$2" ] && ! head -n 5 "$1/$2" | grep -Eiq '
                  '"^[[:space:]]*#+[[:space:]]*(generated|rendered) by nodeweave"; then echo "nodeweave: error: '
                  '$1/$2 on $(hostname) has no nodeweave header, so it is yours: refusing to overwrite it with the '
                  'rendered $3; move it away" >&2; exit 3; fi; ' + _REPLACE, "sh")
COMPOSE_CLI = {"docker": ("docker", "compose"), "podman": ("podman-compose",)}
BARE_HOSTFILE = ".nodeweave/hosts"  # bare hosts: the spec's hosts list, under the workspace folder
MARK_FILE = "owner.json"  # bare hosts: the job's mark (identity.py's labels), beside its token
NO_MARK = "no job mark: not brought up"  # bare hosts: a host without the mark, as a local job's "missing" container


class HostsCluster(Backend):
    target = "hosts"
    tool = "ssh"

    def __init__(self, spec, spec_path, options):
        super().__init__(spec, spec_path, options)
        self.engine = options.engine or "docker"
        self.remote = RemoteOptions(ssh_options=tuple(options.ssh_options))
        self.hosts = list(options.hosts)
        self.master = self.hosts[0].rpartition("@")[2]
        self.dir = self._remote_dir()
        self.holds = self.engine != "none"
        self.recreates_nodes = self.engine != "none"  # compose up --force-recreate on every host (walk12c C7)
        if not self.holds:  # nothing is started: the hosts run the entrypoint installed there when a verb asks
            self.unheld = ("--engine none starts nothing: each host runs the entrypoint installed there only when "
                           "`nodeweave run` or `check` asks")
            self.fixed_image = "--engine none runs the entrypoint installed on each host, no image"
        self.recorded = {"project": self.mark.project, "engine": self.engine} if self.engine != "none" else \
            {"engine": self.engine}

    def _remote_dir(self) -> str:
        if self.options.remote_dir:
            return self.options.remote_dir
        host_path = self.spec.workspace.host_path
        if host_path.startswith("/"):
            return posixpath.normpath(host_path)
        if host_path.startswith("~/"):  # each host's own home, as --remote-dir '~/DIR' (walk5, W59: the LAN example)
            return check_remote_dir(host_path, "workspace.host_path")
        from nodeweave.failures import offered

        what = ("the workspace folder on every host (where " + ("the hosts list and the job token go"
                if self.engine == "none" else "compose/node.yaml goes") + " and `nodeweave sync` sends the code)")
        if offered("--remote-dir"):  # a verb without it (doctor --cluster) is told the spec's field only (left12c)
            raise UsageError(f"target hosts: workspace.host_path {host_path!r} is relative to this machine; give "
                             f"--remote-dir /ABSOLUTE/PATH or --remote-dir '~/DIR' (quoted: under each host's home), "
                             f"{what}, or set workspace.host_path to one of those")
        raise UsageError(f"target hosts: workspace.host_path {host_path!r} is relative to this machine; set it to an "
                         f"absolute path or '~/DIR' (under each host's home), {what}")

    def grow_hint(self, count: int) -> str:
        return f"list {count} hosts (--host, --hosts-file or the spec's hosts) and `nodeweave up` again"

    @property
    def runs_image(self) -> bool:
        return self.engine != "none"

    @property
    def workspace_seen_at(self) -> str:
        return self.dir if self.engine == "none" else self.spec.workspace.path

    @property
    def container(self) -> str:
        return f"{self.spec.name}-node"  # compose/node.yaml's container_name

    def _host_env(self, index: int) -> Tuple[Tuple[str, str], ...]:
        """What differs per host, generated: rank, master, node count."""
        return (("NODE_RANK", str(index)), ("MASTER_ADDR", self.master), ("NNODES", str(self.spec.nodes)))

    def _bare_env(self, index: int) -> Tuple[Tuple[str, str], ...]:
        """A bare host gets what compose/node.yaml's environment would give its container."""
        from nodeweave.resolve import resolve

        r = resolve(self.spec)
        env = [*self.spec.env.items(), *r.contract_env("compose"), *self._host_env(index),
               ("MASTER_PORT", str(self.spec.launcher.master_port))]
        if self.spec.hosts:  # no container mounts the list: it is where up sent it
            env = [(k, self._bare_hostfile if k == "NODEWEAVE_HOSTFILE" else v) for k, v in env]
        return tuple(env)

    @property
    def _bare_hostfile(self) -> str:
        return f"{self.dir}/{BARE_HOSTFILE}"

    @property
    def _token_file(self) -> str:
        """Where ``up`` puts the job's random token on every host (0600): per job, as beside the spec, so two
        specs sharing a remote folder never re-key each other's nodes."""
        from nodeweave.cluster import token

        return f"{self.dir}/{token.job_file(self.spec.name)}"

    def nodes(self, for_up: bool = False, dry_run: bool = False) -> List[Node]:
        if self.engine == "none":
            token = (("NODEWEAVE_JOB_TOKEN_FILE", self._token_file),) \
                if "NODEWEAVE_JOB_TOKEN_FILE" not in self.spec.env \
                else ()
            return [self._node(i, make_target("ssh", host, options=self.remote), env=self._bare_env(i) + token,
                         workdir=self.dir)
                    for i, host in enumerate(self.hosts)]
        kind = f"ssh+{self.engine}"
        return [self._node(i, make_target(kind, f"{host}/{self.container}", options=self.remote))
                for i, host in enumerate(self.hosts)]

    def states(self, nodes: List[Node]) -> Dict[int, PlatformState]:
        """No platform stands over the hosts, so every verb asks each node's entrypoint itself; on bare hosts the
        job's mark is what ``up`` made there and ``down`` takes back (the container a compose host has), so a host
        that answers without it is not up, whatever its entrypoint says (walk11a A17: after ``down`` status, exec
        and top still acted on the hosts). With a container engine the node container is what ``up`` made and
        ``down`` removes, so each host's engine is asked for it, one inspect per host, all at once (fix12x: after
        ``down`` the verbs met the missing container in their own exec). A host that does not answer is left out:
        the verb's ssh ask names it."""
        if not nodes:
            return {}
        from nodeweave.cluster.base import NodeState
        from nodeweave.steps import fan_out

        hosts = [self.hosts[n.index] for n in nodes if n.index < len(self.hosts)]
        if self.engine != "none":
            seen = dict(fan_out(self._container_state, hosts, jobs=32))
            return {n.index: seen[self.hosts[n.index]] for n in nodes
                    if n.index < len(self.hosts) and seen.get(self.hosts[n.index]) is not None}
        held = dict(fan_out(self._holds_mark, hosts, jobs=32))
        return {n.index: PlatformState(NodeState.ABSENT, NO_MARK) for n in nodes
                if n.index < len(self.hosts) and held.get(self.hosts[n.index]) is False}

    def _container_state(self, host: str):
        """A host with a container engine: (host, its node container's state as the engine says it, ``missing``
        when the engine answers that there is no such container; None when the host or its engine gave no clear
        answer: the verb goes on and its own ask names why)."""
        import subprocess

        from nodeweave.cluster.backends.local import container_state
        from nodeweave.cluster.base import NodeState

        read = [self.engine, "inspect", "--type", "container", "--format", "{{.State.Status}} {{.State.ExitCode}}",
                self.container]
        argv = self._ssh(host).exec_argv(read, stdin=False)
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return host, None
        if out.returncode == 0:
            said = out.stdout.strip().splitlines()
            parts = said[-1].split() if said else []
            return host, container_state(parts[0], parts[1]) if len(parts) == 2 else None
        if out.returncode != 255 and "no such" in out.stderr.lower():  # podman 125, docker 1; 255 is ssh's own
            return host, PlatformState(NodeState.ABSENT, "missing")
        return host, None

    def nothing_up_line(self) -> Optional[str]:
        """Bare hosts: every host answers and none holds the job's mark (``down`` took it back, or no ``up`` left
        one): nothing to take down, as a local job none of whose containers exists. None on a compose host (the
        containers are asked), or when a host does not answer (``down`` goes on and names it)."""
        if self.engine != "none":
            return None
        from nodeweave.steps import fan_out

        if any(held is not False for _, held in fan_out(self._holds_mark, self.hosts, jobs=32)):
            return None
        return (f"{self.spec.name} is not up on {self.where}: none of its {len(self.hosts)} host(s) holds the job's "
                f"mark ({self._mark_file}); nothing to take down")

    def _ssh(self, host: str):
        return make_target("ssh", host, options=self.remote)

    def _compose(self, index: int, *args: str, env: Tuple[Tuple[str, str], ...] = ()) -> List[str]:
        variables = [f"{k}={v}" for k, v in (*self._host_env(index), *env)]
        argv = ["env", *variables, *COMPOSE_CLI[self.engine], "-p", self.mark.project,
                "-f", f"{self.dir}/compose/node.yaml", *args]
        return self._ssh(self.hosts[index]).exec_argv(argv, stdin=False)

    def _token_steps(self) -> List[Step]:
        """A fresh random job token, the same on every host, written there as a 0600 file (on stdin, never argv)."""
        from nodeweave.cluster import token

        secret, (folder, name) = token.new_token(), posixpath.split(self._token_file)
        return [Step(f"send a new job token to node-{i} ({self._ssh(host).label})", tuple(self._ssh(host).exec_argv(
            [*token.remote_write(self.holds), folder, name], stdin=True)), stdin=secret + "\n",
            stdin_name="a new random job token") for i, host in enumerate(self.hosts)]

    def _up_steps(self, mode: str, image: Optional[str]) -> List[List[Step]]:
        from nodeweave.cluster import token
        from nodeweave.overlay import host_files

        if self.engine == "none":
            return [(self._send_hostfile() if self.spec.hosts else []) + self._token_steps() + self._mark_steps()]
        from nodeweave.rendering.provenance import named_for

        sent = host_files(self.spec, self.mark.project, self.mark.labels())  # this folder's project and labels
        sent = named_for(sent, self.spec_path.name)  # walk8 A20: the header names this spec, not nodeweave.yaml
        self._refuse_users_compose(sent)
        env = (("NODEWEAVE_MODE", mode), ("NODEWEAVE_IMAGE", image or self._spec_image()))  # never a host's own
        env += token.compose_env(self._token_file)
        writes = self._token_steps() + [Step(f"send compose/{name} to {host}",
                       tuple(self._ssh(host).exec_argv([*WRITE_RENDERED, f"{self.dir}/compose", name,
                                                        f"compose/{name}"], stdin=True)),
                       stdin=text, stdin_name=f"compose/{name} (rendered)", stdin_from=printed(text))
                  for host in self.hosts for name, text in sent.items()]
        starts = [Step(f"start node {i}{f' ({SPARE_ROLE})' if self.spec.is_spare(i) else ''} on {host} ({mode} mode)",
                       tuple(self._compose(i, "up", "-d", "--force-recreate", env=env)), timeout=900,
                       engine=self._engine_step(i, "fix what it names and run `nodeweave up` again"))
                  for i, host in enumerate(self.hosts)]
        return [writes, starts]

    def _engine_step(self, index: int, remedy: str) -> "EngineStep":
        """How host ``index``'s compose step says its failure: that node, the engine's reason there."""
        from nodeweave.failures import EngineStep

        return EngineStep(f"{self.engine} on {self.hosts[index]}", remedy, node=f"node-{index}")

    def _refuse_users_compose(self, sent: Dict[str, str]) -> None:
        """``up`` writes ``<remote dir>/compose/NAME``, where `nodeweave sync` puts this folder's own
        ``compose/NAME``: a file there that is not nodeweave's (no header, as ``render`` judges it) is the team's,
        and ``up`` refuses before any host is touched, as ``render`` refuses to overwrite it (walk6, W40)."""
        from nodeweave.entrypoint import bounded
        from nodeweave.renderedmark import is_marked

        for name in sent:
            own = self.spec_dir / "compose" / name
            if not own.is_file() or own.is_symlink():
                continue
            if not is_marked(bounded.read_bytes(own, bounded.RENDERED_CAP, "a rendered file")):
                raise UsageError(f"{own} lacks nodeweave's header, so it is yours, and `nodeweave sync` puts it at "
                                 f"{self.dir}/compose/{name} on every host, where `up -t hosts` writes nodeweave's "
                                 f"compose/{name}: refusing to overwrite it there; move yours to another name (as "
                                 "`nodeweave render compose` asks too)")

    def _spec_image(self) -> str:
        """The image compose/node.yaml gives a node when NODEWEAVE_IMAGE is not set: the resolved image it is
        rendered from, read as data."""
        from nodeweave.resolve import resolve

        return resolve(self.spec).image

    def _unread_variables(self) -> Dict[str, str]:
        if self.engine == "none":
            return {"NODEWEAVE_IMAGE": "--engine none runs the entrypoint installed on each host, no image"}
        return {"NODEWEAVE_IMAGE": "every host runs the image above (give --image to choose another)"}

    def _up_image(self, image: Optional[str]) -> Optional[str]:
        return None if self.engine == "none" else image or self._spec_image()

    def _up_notes(self, image: Optional[str]) -> List[str]:
        from nodeweave.cluster.environment import SPEC_IMAGE

        from nodeweave.cluster.options import cleared_folder_warning

        given = "--remote-dir" if self.options.remote_dir else "workspace.host_path"
        kept = "the code `nodeweave sync` sends to each host" + (
            ", the hosts list and the job token" if self.engine == "none" else ", compose/node.yaml and the job token")
        cleared = [line for line in [cleared_folder_warning(self.dir, given, self.spec.name, kept)] if line]
        if self.engine == "none":
            return [*cleared, *super()._up_notes(image)]
        why = "--image" if image else f"{SPEC_IMAGE}; a host's own NODEWEAVE_IMAGE is not read"
        return [f"every node runs image {self._up_image(image)}: {why}", *cleared, *super()._up_notes(image)]

    @property
    def _mark_file(self) -> str:
        """Bare hosts: where ``up`` leaves the job's mark, beside its token (no container carries one)."""
        return f"{self.dir}/.nodeweave/{self.spec.name}/{MARK_FILE}"

    def _mark_steps(self) -> List[Step]:
        """Bare hosts: this folder's mark (the labels a container would carry, as JSON) sent to every host."""
        import json

        folder, name = posixpath.split(self._mark_file)
        text = json.dumps(self.mark.labels(), sort_keys=True) + "\n"
        return [Step(f"mark node-{i} ({self._ssh(host).label}) as this folder's job", tuple(self._ssh(host).exec_argv(
            [*WRITE_FILE, folder, name], stdin=True)), stdin=text, stdin_name=f"the job's mark ({MARK_FILE})",
            stdin_from=printed(text))
                for i, host in enumerate(self.hosts)]

    def _release_steps(self) -> List[Step]:
        """Bare hosts' ``down``: the mark taken back from every host once the runs are stopped (a mark of another
        folder's is never reached: the verb refused it first)."""
        if self.engine != "none":
            return []
        return [Step(f"take this folder's mark and the job token back from node-{i} ({self._ssh(host).label})",
                     tuple(self._ssh(host).exec_argv(["rm", "-f", self._mark_file, self._token_file], stdin=False)),
                     timeout=60) for i, host in enumerate(self.hosts)]

    def _token_removal_steps(self) -> List[Step]:
        """``down``'s last steps on compose hosts: the job token ``up`` sent each host, once its node is gone (the
        next ``up`` sends a new one), as Slurm's ``down`` deletes it on each node."""
        return [Step(f"remove the job token from node-{i} ({self._ssh(host).label})",
                     tuple(self._ssh(host).exec_argv(["rm", "-f", self._token_file], stdin=False)), timeout=60)
                for i, host in enumerate(self.hosts)]

    def _awaited(self, count: int, mode: str) -> str:
        """Bare hosts: up starts nothing, so it waits for each host to answer (walk6, W28: "until 3 node(s) run")."""
        if self.holds:
            return super()._awaited(count, mode)
        return (f"until each of the {count} host(s) answers over ssh with nodeweave-entrypoint on PATH (nothing starts "
                "until `nodeweave run` or `nodeweave check`)")

    def _send_hostfile(self) -> List[Step]:
        """Bare hosts: the spec's hosts list, where NODEWEAVE_HOSTFILE points (under the workspace folder), each
        step named by the path it writes and the file's header true for bare hosts (walk15b B18)."""
        from nodeweave.resolve import resolve
        from nodeweave.targets.compose.node import render_hosts

        text = render_hosts(resolve(self.spec), "bare")
        folder, name = posixpath.split(self._bare_hostfile)
        return [Step(f"send the hosts list to {host} as {self._bare_hostfile}",
                     tuple(self._ssh(host).exec_argv([*WRITE_FILE, folder, name], stdin=True)),
                     stdin=text, stdin_name=f"the hosts list (rendered) as {self._bare_hostfile}",
                     stdin_from=printed(text))
                for host in self.hosts]

    def plan_down(self, delete_claims: bool, renamed=(), idle=None):
        """Bare hosts have nothing to take down but the runs: they are stopped and the mark taken back."""
        from dataclasses import replace

        from nodeweave.cluster.verbs import stop_plan

        if self.engine != "none" or renamed or idle is not None:  # idle: nothing of this name to take down
            return super().plan_down(delete_claims, renamed, idle)
        stopped = stop_plan(self, self.nodes(), 10.0, verb="down")
        (stop,) = stopped.phases
        return replace(stopped, phases=(replace(stop, steps=stop.steps + tuple(self._release_steps())),))

    def _down_steps(self, delete_claims: bool) -> List[List[Step]]:
        if self.engine == "none":
            return []
        grace = str(self.spec.kubernetes.grace_period)
        return [[Step(f"stop and remove node {i} on {host}", tuple(self._compose(i, "down", "-t", grace)),
                      timeout=self.spec.kubernetes.grace_period + 300,
                      engine=self._engine_step(i, "fix what it names and run `nodeweave down` again"))
                 for i, host in enumerate(self.hosts)],
                self._token_removal_steps()]

    def marks(self):
        """Each host's mark of the job, all hosts at once over ssh: its node container's labels (``inspect``), or
        on bare hosts the mark file ``up`` left beside the job's token; a host that does not answer or has
        neither is left out."""
        from nodeweave.steps import fan_out

        found = {}
        what = self._mark_file if self.engine == "none" else self.container
        for host, mark in fan_out(self._mark_on, self.hosts, jobs=32):
            if mark is not False:
                found[f"{what} on {host.rpartition('@')[2]}"] = mark
        return found

    @property
    def marked_kind(self) -> str:
        return "the job's mark" if self.engine == "none" else "container"

    def _mark_on(self, host: str):
        """(host, the mark read there or None when there is none); False: nothing read there (no such container
        or mark file, or the host did not answer)."""
        import json
        import subprocess

        from nodeweave.cluster.identity import mark_of

        read = ["cat", self._mark_file] if self.engine == "none" else \
            [self.engine, "inspect", "--type", "container", "--format", "{{json .Config.Labels}}", self.container]
        argv = self._ssh(host).exec_argv(read, stdin=False)
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            labels = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else False
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
            return host, False
        return host, False if labels is False else mark_of(labels if isinstance(labels, dict) else {})

    def _holds_mark(self, host: str):
        """Bare hosts: (host, True when the job's mark file is there, False when the host answered without it, None
        when it did not answer: ssh's own failure, 255)."""
        import subprocess

        argv = self._ssh(host).exec_argv(["sh", "-c", 'test -e "$1"', "sh", self._mark_file], stdin=False)
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return host, None
        return host, {0: True, 1: False}.get(out.returncode)

    def sync_targets(self):
        """The hosts themselves, at the workspace folder (a container's workspace is the same folder, mounted); bare
        hosts without the job's mark, or hosts without the node container, are not up, exit 3, as every verb says
        after ``down`` (walk11a A17; fix12x: with an engine too)."""
        from nodeweave.cluster.onbackend import down_line
        from nodeweave.errors import EnvironmentProblem

        line = down_line(self, self.nodes(), "sync")
        if line is not None:
            raise EnvironmentProblem(line)
        return [self._ssh(host) for host in self.hosts], self.dir

    def logs(self, node: Node, follow: bool, window: Tuple[str, ...] = ()) -> List[str]:
        if self.engine == "none":
            raise UsageError(f"{node.remote.label} is a bare host: it has no container log; `nodeweave logs` shows "
                             "the runs' logs from runs/")
        return node.remote.logs_argv(follow, window)

    @property
    def where(self) -> str:
        how = "bare hosts" if self.engine == "none" else f"{self.engine} compose on each host"
        if not self.options.engine:  # docker by default: hosts that run podman need --engine podman (walk12 C11)
            how += " unless --engine podman"
        return f"{len(self.hosts)} hosts over ssh ({how}, {self.dir})"
