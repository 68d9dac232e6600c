"""Where a cluster runs and how to reach it: the options every cluster verb shares, and their memory.

``nodeweave up`` writes what it was told (target, engine, hosts, namespace,
...) to ``.nodeweave/<job>/cluster.json`` beside the spec (:class:`JobState`: every
file nodeweave keeps for one job lives in that job's folder, so two specs in one
folder never touch each other's), so ``run``, ``status``, ``logs``, ``stop``,
``shell`` and ``down`` find the same cluster without repeating the flags; a flag
given to them still wins. Nothing here touches a node.

Beside what it was told, ``up`` records what it made (``made``: the job's name, the
folder's mark, the namespace or compose project, the spec file; ``record_made``),
which ``down`` drops: the verbs of a renamed job act on it (``recorded.py``).

The old single file ``.nodeweave/cluster.json`` (one entry per job) is read once:
a job's entry moves into the job's folder the first time that job is opened, and
the old file goes when its last entry has moved. A state file that is not what
nodeweave wrote (hand-edited, cut short) is one line naming it, the field and the
remedy, never a traceback nor a silent default.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Optional, Tuple

from nodeweave.entrypoint.nodelists import ranges
from nodeweave.entrypoint import bounded
from nodeweave.jobstate import STATE_DIR, JobState
from nodeweave.errors import UsageError, remove_the_record
from nodeweave.remote.names import check_dest, check_job_namespace, check_ssh_host
from nodeweave.specpath import spec_folder
from nodeweave.entrypoint.hostport import host_key

TARGETS = ("local", "hosts", "kubernetes", "slurm")
TARGET_ALIASES = {"compose": "local", "ssh": "hosts", "k8s": "kubernetes", "kube": "kubernetes",
                  "openshift": "kubernetes"}
ENGINES = ("podman", "docker")
HOST_ENGINES = ("docker", "podman", "none")  # none: bare hosts, the entrypoint installed on each
OVERLAYS = ("base", "openshift", "rocm")
STATE_FILE = ".nodeweave/<job>/cluster.json"
LEGACY_STATE_FILE = ".nodeweave/cluster.json"  # before per-job folders: {job: options}


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
    # --hosts-file as typed, read (``with_hosts_file_read``) only once the target is known to be one it is for:
    # ``up -t kubernetes --hosts-file nodeweave.yaml`` read the spec as a hosts file (walk5 W18); never recorded
    hosts_file: Optional[Path] = None

    def merged(self, saved: "ClusterOptions") -> "ClusterOptions":
        """These options, with what ``saved`` says where these say nothing (same target only)."""
        if self.target is not None and saved.target not in (None, self.target):
            return self
        values = {f.name: getattr(self, f.name) or getattr(saved, f.name) for f in fields(self)}
        return ClusterOptions(**values)

    def with_engine_said(self, target: str) -> "ClusterOptions":
        """$NODEWEAVE_ENGINE read as --engine is, on the local target, where --engine is not typed: the engine
        the user named, before what ``up`` remembered fills the rest (``merged``). walk14 A9: a job brought up
        with ``up --engine podman`` remembers podman, and the variable (docker, or a value that is no engine) was
        then passed over silently by every verb, ``up`` too, while ``--engine docker`` was refused against the
        record. A bad value is refused here (exit 2), wherever the job is up or not."""
        if target != "local" or self.engine is not None:
            return self
        from nodeweave.engines import engine_said

        said = engine_said()
        return replace(self, engine=said) if said else self

    def resolved_target(self) -> str:
        """The target these options pick (aliases resolved; hosts when hosts are given, else local), judging no
        other value: what a flag that does nothing for it is refused by before its value is judged."""
        target = TARGET_ALIASES.get(self.target or "", self.target) or (
            "hosts" if self.hosts or self.hosts_file else "local")
        if target not in TARGETS:
            from nodeweave.failures import target_meant

            raise UsageError(f"--target {self.target!r} is not accepted: {', '.join(TARGETS)} "
                             f"(or {', '.join(TARGET_ALIASES)}){target_meant(self.target)}")
        return target

    def with_hosts_file_read(self) -> "ClusterOptions":
        """--hosts-file's hosts after --host's, the file read now (its target judged first)."""
        if self.hosts_file is None:
            return self
        return replace(self, hosts=self.hosts + read_hosts_file(self.hosts_file), hosts_file=None)

    def checked(self) -> "ClusterOptions":
        """Names validated, aliases resolved, a default target chosen; a usage error names the bad value."""
        target = self.resolved_target()
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
        refuse_repeated_hosts(self.hosts)
        refuse_loopback_hosts(self.hosts)
        if target == "hosts" and not self.hosts:
            from nodeweave.failures import offered

            raise UsageError("target hosts needs its hosts: " + (
                "--host HOST (repeat, node 0 first) or --hosts-file FILE" if offered("--host") else
                "the spec's hosts list (node 0 first), or `nodeweave up --target hosts --host HOST ...`"))
        remote_dir = self.remote_dir
        if remote_dir is not None:
            remote_dir = check_remote_dir(remote_dir)
        if self.namespace is not None:
            check_job_namespace(self.namespace, "--namespace")
        if self.kube_cli not in (None, "kubectl", "oc"):
            raise UsageError(f"--kube-cli {self.kube_cli!r} is not accepted: kubectl or oc")
        if self.overlay not in (None, *OVERLAYS) and not _relative_folder(self.overlay):
            raise UsageError(f"--overlay {self.overlay!r} is not accepted: {', '.join(OVERLAYS)}, or a folder of "
                             "your own beside the spec (relative, holding a kustomization.yaml)")
        kube_cli = "oc" if self.target == "openshift" and self.kube_cli is None else self.kube_cli
        # -t openshift means OpenShift's pods too, not only its client: the openshift overlay (no fixed runAsUser,
        # which restricted-v2 refuses), unless --overlay says otherwise (walk7 A40: it applied base's UID 1000)
        overlay = "openshift" if self.target == "openshift" and self.overlay is None else self.overlay
        return replace(self, target=target, kube_cli=kube_cli, remote_dir=remote_dir, overlay=overlay)


# Each reach flag and the targets it does something for; given for any other target it is refused (one wording).
FLAG_TARGETS = {"engine": ("--engine", ("local", "hosts")), "hosts": ("--host", ("hosts",)),
                "hosts_file": ("--hosts-file", ("hosts",)),
                "remote_dir": ("--remote-dir", ("hosts", "slurm")), "namespace": ("--namespace", ("kubernetes",)),
                "kube_cli": ("--kube-cli", ("kubernetes",)), "kube_context": ("--kube-context", ("kubernetes",)),
                "overlay": ("--overlay", ("kubernetes",)), "ssh_options": ("--ssh-option", ("hosts",))}


# The reach flags that are what a verb makes rather than how it reaches the nodes, and the verbs that make something
# of them: given to any other verb they do nothing, whatever the target (walk10 A10: `run --overlay nosuch` planned
# its run, `status --overlay nosuch` asked the cluster). {field: (flag, verbs, what they make of it)}
FLAG_VERBS = {"overlay": ("--overlay", ("up", "down"), "the kustomize folder up applies and down deletes; the other "
                          "verbs reach the pods up made, whatever folder made them")}


def refuse_verb_idle_flags(given: ClusterOptions, verb: str) -> None:
    """A reach flag typed to a verb that makes nothing of it (``FLAG_VERBS``) is refused, exit 2, in the words
    :func:`refuse_idle_flags` uses for a target, before anything else is judged (its target's rule would hint
    ``--target kubernetes``, which does nothing for such a verb either)."""
    for name, (flag, verbs, what) in FLAG_VERBS.items():
        if getattr(given, name) and verb not in verbs:
            raise UsageError(f"{flag} does nothing for {verb} (it is for {' and '.join(verbs)}: {what}): leave it "
                             "out")


def refuse_idle_flags(given: ClusterOptions, target: str, extra: "dict[str, tuple[bool, tuple]]" = None) -> None:
    """A flag given on the command line that does nothing for ``target`` is refused, exit 2, naming the targets it
    is for (README: a flag that would do nothing is refused), before its value is judged or its file read (the
    callers judge values after this: ``--remote-dir /srv`` for kubernetes is idle, not a system folder).
    ``extra``: a verb's own such flags, {flag: (given, targets)} (``down --delete-claims``, ``up --image``)."""
    rows = [(flag, bool(getattr(given, name)), targets) for name, (flag, targets) in FLAG_TARGETS.items()]
    rows += [(flag, said, targets) for flag, (said, targets) in (extra or {}).items()]
    for flag, said, targets in rows:
        if said and target not in targets:
            if flag == "--engine" and target == "slurm":
                raise UsageError(f"--engine does nothing for target slurm: the nodes run the spec's slurm.runtime "
                                 "(pyxis, apptainer or host); leave it out")
            raise UsageError(f"{flag} does nothing for target {target} (it is for target {' or '.join(targets)}): "
                             f"leave it out, or give --target {targets[0]}")


def spec_hosts(spec, spec_path: Optional[Path] = None) -> Tuple[str, ...]:
    """The spec's ``hosts``, each judged by the host rule every verb applies (``check_ssh_host``), naming the spec's
    field, not a --host nobody typed (walk13 A17: an IPv6 address the spec may hold for compose/node.yaml run by
    hand was refused as ``--host '2001:db8::1'``)."""
    where = spec_path.name if spec_path is not None else "the spec"
    for index, host in enumerate(spec.hosts):
        check_ssh_host(host, f"{where}: hosts[{index}]")
    return tuple(spec.hosts)


def spec_default(options: ClusterOptions, spec, spec_path: Optional[Path] = None) -> ClusterOptions:
    """No target said or remembered: the spec's ``hosts`` (target hosts), an OpenShift spec's cluster
    (``kubernetes.openshift`` or ``.build``: kubernetes, oc), a spec that fills ``slurm:`` (its partition, account,
    ...: only a Slurm cluster reads them; walk9 A25: the shipped Slurm example's plain `up` started its containers on
    this machine, the login node), else this machine (local), the default ``checked`` gives. One rule for every
    verb, ``sync`` included."""
    if options.target is not None or options.hosts or options.hosts_file:
        return options
    target = spec_target(spec)
    if target == "hosts":
        return replace(options, target="hosts", hosts=spec_hosts(spec, spec_path))
    return options if target == "local" else replace(options, target=target)


def spec_target(spec) -> str:
    """The target a spec's verbs use with no -t said or remembered (:func:`spec_default`'s rule), also what
    ``validate`` judges the spec for (walk18a A24: an OpenShift spec was told what the local target leaves out)."""
    if spec.hosts:
        return "hosts"
    if spec.kubernetes.openshift or spec.kubernetes.build:
        return "kubernetes"
    if spec.slurm is not None:  # None: the spec has no slurm: section
        return "slurm"
    return "local"


def spec_sections(spec) -> "list[tuple[str, str, str]]":
    """(section, its fields as written, the -t that reads it) of each target's own section the spec fills: ``hosts``
    (-t hosts), ``slurm:`` (-t slurm), ``kubernetes:`` (-t kubernetes; -t openshift where it says openshift)."""
    found = []
    if spec.hosts:
        found.append(("hosts", ", ".join(spec.hosts[:3]) + (", ..." if len(spec.hosts) > 3 else ""), "hosts"))
    if spec.slurm is not None:
        found.append(("slurm:", "", "slurm"))
    if spec.kubernetes_given:
        found.append(("kubernetes:", ", ".join(spec.kubernetes_given[:4]) + (", ..." if len(spec.kubernetes_given)
                                                                              > 4 else ""),
                      "openshift" if spec.kubernetes.openshift else "kubernetes"))
    return found


def default_target_note(options: ClusterOptions, spec, target: str) -> str:
    """The note of :func:`spec_default`'s choice (replay10 A25: a spec filling only ``kubernetes:`` planned the local
    target without a word): where no target was said or remembered, each target section the spec fills that the
    chosen ``target`` does not read, named with the ``-t`` that does. "" otherwise (a target said or remembered is
    the user's choice)."""
    if options.target is not None or options.hosts or options.hosts_file:
        return ""
    unread = [(section, fields, flag) for section, fields, flag in spec_sections(spec)
              if (flag if flag != "openshift" else "kubernetes") != target]
    if not unread:
        return ""
    said = "; ".join(f"the spec's {section} section" + (f" ({fields})" if fields else "") + " does nothing here: "
                     f"`-t {flag}` uses it" for section, fields, flag in unread)
    why = "picked by the spec" if target != "local" else "the default"
    return f"this plans target {target} ({why}: no -t given, none remembered by `nodeweave up`); {said}"


def check_remote_dir(text: str, what: str = "--remote-dir") -> str:
    """--remote-dir: an absolute folder, or one under each host's home (``~/aorta``), which the remote shell
    expands on every host (nodeweave.remote.ssh); normalised, and never a system folder or the home itself."""
    return check_dest(text, what, home=True)  # its refusals offer ~/FOLDER, as sync's DEST's do (walk13 A11)


def machine_own(folder: str) -> "str | None":
    """The folder each machine has to itself and clears that ``folder`` lies in (/tmp, /var/tmp, /dev/shm, /run), or
    None: one rule for up's warnings on every multi-node target and slurm sync's refusal (walk6 W50, issue 43 A54)."""
    from nodeweave.entrypoint.systemfolders import normal_path, per_container

    normal = normal_path(folder) if folder.startswith("/") else folder  # //dev/shm/x is /dev/shm/x (walk10 B4)
    return per_container(folder) or next((d for d in ("/var/tmp", "/dev/shm", "/run")
                                          if normal == d or normal.startswith(d + "/")), None)


def cleared_folder_warning(folder: str, given: str, job: str, kept: str) -> str:
    """The plan's warning for the folder on the nodes (``given``: the flag or field that named it) when it lies in
    one each machine keeps to itself and clears, else "": ``kept``, what nodeweave and sync put there, would not
    last, and ``up`` remembers the folder, so a later run would find nothing there (issue 43 A54)."""
    local = machine_own(folder)
    if not local:
        return ""
    return (f"warning: {given} {folder} is in {local}, which each node keeps to itself and its system clears (at a "
            f"reboot, by age, or on a Slurm site with a private /tmp when the allocation ends): {kept} would not "
            f"last there, and `nodeweave run` would find nothing; give a folder on the nodes that lasts "
            f"(--remote-dir /scratch/{job} or '~/{job}')")


def _relative_folder(text: str) -> bool:
    parts = text.split("/")
    return not text.startswith("/") and all(p and p not in (".", "..") for p in parts) and \
        all(c.isalnum() or c in "._-/" for c in text)


def check_host_count(hosts: Tuple[str, ...], nodes, spares: int = 0, recovery: bool = False) -> None:
    """As many hosts as the spec has nodes (an elastic MIN:MAX spec without recovery: MIN to MAX), each one a
    rank, and then recovery's spares (docs/recovery.md); with recovery every training node starts (Spec.containers),
    so the count is exact."""
    fewest, most = (nodes.max if recovery else nodes.min) + spares, nodes.max + spares
    if not hosts or fewest <= len(hosts) <= most:
        return
    wanted = str(fewest) if fewest == most else f"{fewest} to {most}"
    also = f" and recovery.spares: {spares}" if spares else ""
    from nodeweave.failures import offered

    where = ("--host or --hosts-file" if offered("--host") else "the spec's hosts list")  # left12c: doctor has none
    raise UsageError(f"{len(hosts)} host(s) for a spec of nodes: {nodes}{also} ({ranges(hosts)}); give {wanted} "
                     f"({where}, node 0 first, the spares last), or change the spec's nodes")


def state_path(spec_path: Path, name: str) -> Path:
    return JobState.of(spec_path, name).cluster_file


def load_state(spec_path: Path, name: str) -> ClusterOptions:
    """What ``up`` remembered for the job ``name`` (nothing when it did not run here); an entry of the old
    single file is read where it is, and moves on the next real ``up`` (``save_state``)."""
    path = state_path(spec_path, name)
    data = _read_json(path)
    if data is not None:
        return _options(path, data)
    if path.is_file():  # JSON null (`echo null >`, a jq filter that matched nothing): there, but records nothing
        raise _damaged(path, "holds JSON null, which records nothing (not even the target)")
    legacy = _legacy_entry(spec_path, name)
    return ClusterOptions() if legacy is None else _options(*legacy)


def save_state(spec_path: Path, name: str, options: ClusterOptions, made: "Optional[dict] | bool" = True) -> Path:
    """Write what ``up`` was told; ``made`` is what it made (:func:`load_made`): True keeps the file's, None
    drops it (taken down). Only a real ``up`` or ``down`` writes (a dry run reads, writes nothing); the job's
    entry of the old single file moves out of it here."""
    path = state_path(spec_path, name)
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(options).items() if k != "hosts_file"}
    if made is True:
        kept = _read_json(path)
        if isinstance(kept, dict) and MADE in kept:
            data[MADE] = kept[MADE]
    else:  # null once taken down, said so: a record with no `made` at all is one nothing vouches for (walk8 A2)
        data[MADE] = made or None
    from nodeweave.jobstate import keep_out_of_git, refuse_in_the_way

    refuse_in_the_way(spec_folder(spec_path), path)
    path.parent.mkdir(parents=True, exist_ok=True)

    keep_out_of_git(path.parent.parent)
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    scratch.replace(path)
    _drop_legacy_entry(spec_path, name)
    return path


def _read_json(path: Path):
    """The JSON in ``path``, None when there is no such file; anything unreadable is named with its remedy, and a
    link, a folder or a device there is refused as the write would refuse it (never read through)."""
    from nodeweave.jobstate import in_the_way, refuse_in_the_way

    if path.is_symlink() or (path.exists() and not path.is_file()):
        problem = in_the_way(path.parent, path)
        raise _damaged(path, problem.split(" ", 1)[1] if problem else "is not a file")
    # a folder on the way a link (.nodeweave/<job> shared with another folder): refused as up and down refuse it,
    # before anything is read through it (walk7 A11: status acted on the other folder's record)
    refuse_in_the_way(_state_root(path), path)
    try:
        text = bounded.read_text(path, bounded.RECORD_CAP, "a state file")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise _damaged(path, f"cannot be read ({getattr(err, 'strerror', None) or err})") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _damaged(path, "is not JSON") from None


def _state_root(path: Path) -> Path:
    """The spec's folder of a state file: the folder holding its ``.nodeweave``."""
    return next((parent.parent for parent in path.parents if parent.name == STATE_DIR), path.parent)


def _legacy_entry(spec_path: Path, name: str):
    """(the old single ``.nodeweave/cluster.json``, this job's entry, its prefix), or None: read, never moved
    here (cluster.md: a dry run writes nothing); ``save_state`` moves it on the next real ``up``."""
    legacy = spec_folder(spec_path) / LEGACY_STATE_FILE
    everything = _read_json(legacy)
    if everything is None:
        return None
    if not isinstance(everything, dict):
        raise _damaged(legacy, "is not a mapping of job names to what `up` was told")
    return (legacy, everything[name], f"{name}.") if name in everything else None


def _drop_legacy_entry(spec_path: Path, name: str) -> None:
    legacy = spec_folder(spec_path) / LEGACY_STATE_FILE
    try:
        everything = json.loads(bounded.read_text(legacy, bounded.RECORD_CAP, "a state file"))
    except (OSError, ValueError, RecursionError):
        return
    if not isinstance(everything, dict) or everything.pop(name, None) is None:
        return
    if everything:
        legacy.write_text(json.dumps(everything, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    else:
        legacy.unlink()


_TEXT_FIELDS = ("target", "engine", "remote_dir", "namespace", "kube_cli", "kube_context", "overlay", "slurm_job")
_LIST_FIELDS = ("hosts", "ssh_options")


def _options(path: Path, data, prefix: str = "") -> ClusterOptions:
    """``data`` as ClusterOptions, every field's type checked (a hand edit is named, not half-read)."""
    if not isinstance(data, dict):
        raise _damaged(path, f"{prefix.rstrip('.') or 'its top level'} is not a mapping of options", prefix)
    if not data:  # walk8 A21: `{}` was read as "up made nothing", and the job looked for on the local target
        raise _damaged(path, f"{prefix.rstrip('.') or 'its top level'} is an empty mapping, which records nothing "
                       "(not even the target)", prefix)
    _judge_made(path, data.get(MADE), prefix)
    data = {k: v for k, v in data.items() if k != MADE}
    unknown = sorted(set(data) - set(_TEXT_FIELDS) - set(_LIST_FIELDS))
    if unknown:
        raise _damaged(path, f"has an unknown field {prefix}{unknown[0]!r}", prefix)
    for key in _TEXT_FIELDS:
        if data.get(key) is not None and not isinstance(data[key], str):
            raise _damaged(path, f"field {prefix}{key} is {as_json(data[key])}, not text or null", prefix)
    target = data.get("target")
    if target is not None and TARGET_ALIASES.get(target, target) not in TARGETS:  # not a flag the user gave
        raise _damaged(path, f"field {prefix}target is {target!r}, not one of {', '.join(TARGETS)}", prefix)
    for key in _LIST_FIELDS:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise _damaged(path, f"field {prefix}{key} is {as_json(value)}, not a list of text", prefix)
    options = ClusterOptions(**{k: tuple(v) if k in _LIST_FIELDS else v for k, v in data.items()})
    _judge_values(path, options, prefix)
    if TARGET_ALIASES.get(target, target) == "hosts" and not options.hosts:  # up records the hosts it was given
        raise _damaged(path, f"field {prefix}target is 'hosts' with no hosts recorded (field {prefix}hosts)", prefix)
    return options


def _judge_made(path: Path, made, prefix: str) -> None:
    """``made`` (what ``up`` made, read by ``down`` and a renamed job's verbs) judged with the other fields, as
    every verb reads the file: a mapping of MADE_FIELDS to text (or null), ``job`` given."""
    if made is None:
        return
    field = f"field {prefix}{MADE}"
    if not isinstance(made, dict):
        raise _damaged(path, f"{field} is {as_json(made)}, not a mapping of {', '.join(MADE_FIELDS)}", prefix)
    unknown = sorted(set(made) - set(MADE_FIELDS))
    if unknown:
        raise _damaged(path, f"{field} has an unknown field {unknown[0]!r} (known: {', '.join(MADE_FIELDS)})", prefix)
    for key, value in made.items():
        if value is not None and not isinstance(value, str):
            raise _damaged(path, f"{field}.{key} is {as_json(value)}, not text or null", prefix)
    if not made.get("job"):
        said = f"is {as_json(made['job'])}" if "job" in made else "is missing"
        raise _damaged(path, f"{field}.job {said}: the job `nodeweave up` made is not named", prefix)
    if made.get("target") is not None and made["target"] not in TARGETS:
        raise _damaged(path, f"{field}.target is {made['target']!r}, not one of {', '.join(TARGETS)}", prefix)


def as_json(value) -> str:
    """A value read from a record, spelt as the file spells it (null, true, {}), never Python's None (walk8 A2)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _judge_values(path: Path, saved: ClusterOptions, prefix: str) -> None:
    """The values a flag would be judged on, judged here naming the file and the field: ``"hosts": [""]`` was
    "--host '' is not accepted", a flag nobody typed (walk2, row U1)."""
    def field(key: str) -> str:
        return f"field {prefix}{key}"

    checks = [lambda: [check_ssh_host(h, f"{field('hosts')} entry") for h in saved.hosts],
              lambda: refuse_repeated_hosts(saved.hosts, f"{field('hosts')} entry"),
              lambda: refuse_loopback_hosts(saved.hosts, f"{field('hosts')} entry"),
              lambda: saved.remote_dir is None or check_remote_dir(saved.remote_dir, field("remote_dir")),
              lambda: saved.namespace is None or check_job_namespace(saved.namespace, field("namespace"))]
    for name, allowed in (("engine", HOST_ENGINES), ("kube_cli", ("kubectl", "oc"))):
        value = getattr(saved, name)
        if value is not None and value not in allowed:
            raise _damaged(path, f"{field(name)} is {value!r}, not one of {', '.join(allowed)}", prefix)
    if saved.overlay is not None and saved.overlay not in OVERLAYS and not _relative_folder(saved.overlay):
        raise _damaged(path, f"{field('overlay')} is {saved.overlay!r}, not one of {', '.join(OVERLAYS)} or a "
                       "relative folder", prefix)
    if saved.slurm_job is not None and not saved.slurm_job.isdigit():
        raise _damaged(path, f"{field('slurm_job')} is {saved.slurm_job!r}, not a Slurm job id (digits)", prefix)
    for check in checks:
        try:
            check()
        except UsageError as err:
            raise _damaged(path, str(err), prefix) from None
    from nodeweave.remote import RemoteOptions

    try:  # the rules --ssh-option and --kube-context are judged by, naming the field, not the flag
        RemoteOptions(ssh_options=saved.ssh_options, kube_context=saved.kube_context)
    except UsageError as err:
        why = str(err).replace("--ssh-option", f"{field('ssh_options')} entry").replace(
            "--kube-context", field("kube_context"))
        raise _damaged(path, why, prefix) from None


def _damaged(path: Path, why: str, prefix: str = "") -> UsageError:
    """One line naming the file, the field and the remedy; an entry of the old single file (``prefix``, the job's
    name and a dot) is removed alone, as removing the file would drop every other job's entry too (walk2 U9).

    The same line for every verb, so its remedy must serve each: the cluster may still be up, and bringing it up
    again is no way to take it down (walk6 W73). Without the record every verb takes the flags again."""
    remedy = (f"remove its entry {prefix.rstrip('.')!r} (the other jobs' entries stay)" if prefix
              else remove_the_record(path))
    return UsageError(f"{path}: {why}, so what `nodeweave up` remembered cannot be used (every verb reads it "
                      f"before its flags); {remedy}, then give the verb the flags `up` was given (the target, its namespace "
                      "or hosts): `nodeweave down -t TARGET ...` takes down what is still running, `nodeweave up` "
                      "starts anew")


def forget_allocation(spec_path: Path, name: str) -> None:
    """After ``down``: the Slurm allocation's job id and the record of what ``up`` made go with them; what
    ``up`` was told stays."""
    remembered = load_state(spec_path, name)
    if remembered.slurm_job is not None or load_made(spec_path, name) is not None:
        save_state(spec_path, name, replace(remembered, slurm_job=None), made=None)


# What ``up`` made, beside what it was told: the job's name, the folder's mark, the namespace or compose project
# it made them in, and the spec file. Verbs act on this (a renamed job, a changed namespace); ``down`` drops it.
MADE = "made"
MADE_FIELDS = ("job", "folder", "owner", "spec", "target", "namespace", "project", "where", "engine", "engine_host",
               "spec_text")


def record_made(spec_path: Path, name: str, options: ClusterOptions, made: dict) -> Path:
    """At ``up``: what it was told and what it makes, in ``.nodeweave/<job>/cluster.json``."""
    return save_state(spec_path, name, options, made={k: made.get(k) for k in MADE_FIELDS})


def load_made(spec_path: Path, name: str) -> Optional[dict]:
    """What ``up`` made for the job ``name`` of this folder and has not been taken down, or None."""
    path = state_path(spec_path, name)
    data = _read_json(path)
    made = data.get(MADE) if isinstance(data, dict) else None
    _judge_made(path, made, "")
    return made


def recorded_elsewhere(spec_path: Path, name: str) -> "list[dict]":
    """The jobs this spec file's ``up`` made under another name (the spec's ``name`` changed since), still
    recorded as up in ``.nodeweave/<job>/cluster.json``: what ``down`` must take down too."""
    spec_path = spec_path.resolve()
    root = spec_folder(spec_path) / STATE_DIR
    found = []
    for path in sorted(root.glob("*/cluster.json")) if root.is_dir() else []:
        job = path.parent.name
        if job == name:
            continue
        try:
            made = load_made(spec_path, job)
        except UsageError:  # maybe another spec's job: every cluster verb names it once (unreadable_records, W53)
            continue
        if made is not None and made.get("spec") == spec_path.name and made.get("job") == job:
            found.append(made)
    return found


def unreadable_records(spec_path: Path, name: str) -> "list[str]":
    """Why each other job's record in this folder cannot be read (walk5, W53): one of them may be the job this spec
    started under an old name, which ``down`` then cannot take down, so every verb says it (never refuses: another
    spec of the folder owns it as well)."""
    root = spec_folder(spec_path) / STATE_DIR
    lines = []
    for path in sorted(root.glob("*/cluster.json")) if root.is_dir() else []:
        if path.parent.name == name:
            continue
        job = path.parent.name
        try:
            made = load_made(spec_path, job)
        except UsageError as err:  # its remedy is the spec's own job's; this one is job <folder name>'s (walk8 A2)
            why = str(err).split(", so what `nodeweave up` remembered", 1)[0]
            lines.append(f"another job's record, unread: {why}; if it records job {job} started from this folder under "
                         f"that old name, `nodeweave down` cannot reach it while the file is so: fix the file (or "
                         f"remove it), put `name: {job}` back in {spec_path.name} and run `nodeweave down` with the "
                         "flags `up` was given, then rename the job again")
            continue
        data = _read_json(path) if made is None else None
        if isinstance(data, dict) and MADE not in data:  # neither up's record nor down's: an older nodeweave, a hand
            lines.append(f"another job's record, {path}, says nothing of what `nodeweave up` made (no field made: "
                         f"written by an older nodeweave or by hand), so whether job {job} is still up cannot be "
                         f"told; if it is this spec's job under an old name, put `name: {job}` back in "
                         f"{spec_path.name} and run `nodeweave down` (or `nodeweave status`); if it is down, remove "
                         "the file")
    return lines


def read_hosts_file(path: Path) -> Tuple[str, ...]:
    """One ``[user@]host`` per line, node 0 first; ``#`` comments and DeepSpeed ``slots=`` words ignored: the lines as
    ``names.hosts_file_lines`` reads them for every verb, each host checked as an ssh host."""
    from nodeweave.remote.names import hosts_file_lines

    hosts = []
    for where, host in hosts_file_lines(path):
        check_ssh_host(host, f"{where}: host")  # the file and its line, not a --host nobody typed (walk2 U2)
        hosts.append(host)
    return tuple(hosts)


def refuse_loopback_hosts(hosts, flag: str = "--host") -> None:
    """Exit 2 when a job of several hosts lists a loopback name (``spec.rules.loopback_problem``, as the spec's
    ``hosts`` refuses it)."""
    from nodeweave.spec.rules import loopback_problem

    found = loopback_problem(hosts)
    if found is not None:
        raise UsageError(f"{flag} {hosts[found[0]]}: {found[1]}")


def refuse_repeated_hosts(hosts, flag: str = "--host") -> None:
    """Exit 2 when one host is listed twice (``up``'s hosts, ``init --host`` before any is probed over ssh)."""
    names = [host_key(str(h).rpartition("@")[2]) for h in hosts]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        given = [h for h in hosts if host_key(str(h).rpartition("@")[2]) == twice[0]]
        raise UsageError(f"{flag} {twice[0]} is given {len(given)} times ({', '.join(given)}: a host name is "
                         "case-insensitive and a trailing dot names the same host); a host's place is its node "
                         "rank, so each host is listed once (node 0 first)")
