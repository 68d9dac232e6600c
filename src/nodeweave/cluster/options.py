"""Where a cluster runs and how to reach it: the options every cluster verb shares, and their memory.

``nodeweave up`` writes what it was told (target, engine, hosts, namespace,
...) to ``.nodeweave/cluster.json`` beside the spec, so ``run``, ``status``,
``logs``, ``stop``, ``shell`` and ``down`` find the same cluster without
repeating the flags; a flag given to them still wins. Nothing here touches a
node.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Optional, Tuple

from nodeweave.errors import UsageError
from nodeweave.remote.names import check_dest, check_dns_label, check_ssh_host

TARGETS = ("local", "hosts", "kubernetes", "slurm")
TARGET_ALIASES = {"compose": "local", "ssh": "hosts", "k8s": "kubernetes", "kube": "kubernetes",
                  "openshift": "kubernetes"}
ENGINES = ("podman", "docker")
HOST_ENGINES = ("docker", "podman", "none")  # none: bare hosts, the entrypoint installed on each
OVERLAYS = ("base", "openshift", "rocm")
STATE_FILE = ".nodeweave/cluster.json"


@dataclass(frozen=True)
class ClusterOptions:
    """What the verbs need to find and reach the nodes; None means 'not said' (state or default decides)."""

    target: Optional[str] = None
    engine: Optional[str] = None  # local: podman|docker; hosts: docker|podman|none
    hosts: Tuple[str, ...] = ()
    remote_dir: Optional[str] = None  # hosts: where compose/node.yaml and the workspace are
    namespace: Optional[str] = None
    kube_cli: Optional[str] = None  # kubectl | oc
    kube_context: Optional[str] = None
    overlay: Optional[str] = None
    ssh_options: Tuple[str, ...] = ()
    slurm_job: Optional[str] = None  # slurm: the allocation `up` took (its job id), recorded by up only

    def merged(self, saved: "ClusterOptions") -> "ClusterOptions":
        """These options, with what ``saved`` says where these say nothing (same target only)."""
        if self.target is not None and saved.target not in (None, self.target):
            return self
        values = {f.name: getattr(self, f.name) or getattr(saved, f.name) for f in fields(self)}
        return ClusterOptions(**values)

    def checked(self) -> "ClusterOptions":
        """Names validated, aliases resolved, a default target chosen; a usage error names the bad value."""
        target = TARGET_ALIASES.get(self.target or "", self.target) or ("hosts" if self.hosts else "local")
        if target not in TARGETS:
            raise UsageError(f"--target {self.target!r} is not accepted: {', '.join(TARGETS)} "
                             f"(or {', '.join(TARGET_ALIASES)})")
        if target == "slurm" and self.engine is not None:
            raise UsageError(f"--engine {self.engine!r} is not accepted for target slurm: the nodes run the "
                             "spec's slurm.runtime (pyxis, apptainer or host)")
        if self.slurm_job is not None and not str(self.slurm_job).isdigit():
            raise UsageError(f"{STATE_FILE}: slurm_job {self.slurm_job!r} is not accepted: a Slurm job id (digits)")
        engines = HOST_ENGINES if target == "hosts" else ENGINES
        if self.engine is not None and self.engine not in engines:
            raise UsageError(f"--engine {self.engine!r} is not accepted for target {target}: {', '.join(engines)}")
        for host in self.hosts:
            check_ssh_host(host, "--host")
        names = [h.rpartition("@")[2] for h in self.hosts]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UsageError(f"--host {twice[0]} is given {names.count(twice[0])} times; a host's place is its node "
                             "rank, so each host is listed once (node 0 first)")
        if target == "hosts" and not self.hosts:
            raise UsageError("target hosts needs its hosts: --host HOST (repeat, node 0 first) or --hosts-file FILE")
        remote_dir = self.remote_dir
        if remote_dir is not None:
            remote_dir = check_remote_dir(remote_dir)
        if self.namespace is not None:
            check_dns_label(self.namespace, "--namespace")
        if self.kube_cli not in (None, "kubectl", "oc"):
            raise UsageError(f"--kube-cli {self.kube_cli!r} is not accepted: kubectl or oc")
        if self.overlay not in (None, *OVERLAYS) and not _relative_folder(self.overlay):
            raise UsageError(f"--overlay {self.overlay!r} is not accepted: {', '.join(OVERLAYS)}, or a folder of "
                             "your own beside the spec (relative, holding a kustomization.yaml)")
        kube_cli = "oc" if self.target == "openshift" and self.kube_cli is None else self.kube_cli
        return replace(self, target=target, kube_cli=kube_cli, remote_dir=remote_dir)


def check_remote_dir(text: str) -> str:
    """--remote-dir: an absolute folder, or one under each host's home (``~/aorta``), which the remote shell
    expands on every host (nodeweave.remote.ssh); normalised, and never a system folder or the home itself."""
    if text == "~" or text.startswith("~/"):
        rest = check_dest("/" + text[2:].strip("/"), "--remote-dir").lstrip("/")  # the same rules, under ~
        return f"~/{rest}"
    try:
        return check_dest(text, "--remote-dir")
    except UsageError as err:
        raise UsageError(f"{err}; or ~/FOLDER, under each host's home") from None


def _relative_folder(text: str) -> bool:
    parts = text.split("/")
    return not text.startswith("/") and all(p and p not in (".", "..") for p in parts) and \
        all(c.isalnum() or c in "._-/" for c in text)


def check_host_count(hosts: Tuple[str, ...], nodes) -> None:
    """As many hosts as the spec has nodes (an elastic MIN:MAX spec: MIN to MAX), each one a rank."""
    if not hosts or nodes.min <= len(hosts) <= nodes.max:
        return
    wanted = str(nodes.min) if nodes.min == nodes.max else f"{nodes.min} to {nodes.max}"
    raise UsageError(f"{len(hosts)} host(s) for a spec of nodes: {nodes} ({', '.join(hosts)}); give {wanted} "
                     "(--host or --hosts-file, node 0 first), or change the spec's nodes")


def state_path(spec_path: Path) -> Path:
    return spec_path.resolve().parent / STATE_FILE


def load_state(spec_path: Path, name: str) -> ClusterOptions:
    """What ``up`` remembered for the job ``name`` (nothing when it did not run here)."""
    try:
        data = json.loads(state_path(spec_path).read_text(encoding="utf-8")).get(name) or {}
    except (OSError, ValueError, AttributeError):
        return ClusterOptions()
    known = {f.name for f in fields(ClusterOptions)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
    try:
        return ClusterOptions(**values)
    except TypeError:
        return ClusterOptions()


def save_state(spec_path: Path, name: str, options: ClusterOptions) -> Path:
    path = state_path(spec_path)
    try:
        everything = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        everything = {}
    everything[name] = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(everything, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def forget_allocation(spec_path: Path, name: str) -> None:
    """After ``down``: the Slurm allocation's job id goes with the allocation; what ``up`` was told stays."""
    remembered = load_state(spec_path, name)
    if remembered.slurm_job is not None:
        save_state(spec_path, name, replace(remembered, slurm_job=None))


def read_hosts_file(path: Path) -> Tuple[str, ...]:
    """One ``[user@]host`` per line, node 0 first; ``#`` comments and DeepSpeed ``slots=`` words ignored."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"hosts file {path}: cannot read it ({err})") from err
    hosts = [line.split("#", 1)[0].split()[0] for line in lines if line.split("#", 1)[0].strip()]
    if not hosts:
        raise UsageError(f"hosts file {path} lists no host: one [user@]host per line, node 0 first")
    return tuple(hosts)
