"""Whose job is this: the mark ``up`` puts on what it makes, and the refusal of anything another folder made.

A job is what its own folder started. Two folders holding a spec with the same ``name`` (two clones, a git
worktree, two people on one box) would otherwise plan ``podman exec <name>-0`` alike, and ``run`` in one
would run in the other's containers, ``down`` in one remove the other's job. So ``up`` marks every
container, pod and StatefulSet it makes with the job and the spec's absolute folder (:class:`JobMark`:
container labels, Kubernetes annotations, a per-folder compose project), records the mark in
``.nodeweave/<job>/cluster.json``, and every verb reads the mark of what it is about to act on before it
acts: another folder's is refused in one line naming that folder (exit 3, :func:`foreign_owner`).
Where a target says how to remove an object by hand (``unmarked_removal``: the local target's containers), one
that carries no mark (plain ``podman-compose -f compose/local.yaml up``, in this folder or another clone, an
older nodeweave) is not this folder's either: refused the same way, naming the command that removes it (walk7
A34: another clone's ``down`` removed containers a plain compose started). Elsewhere it is acted on as before.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional

from nodeweave.errors import EnvironmentProblem
from nodeweave.usertext import as_bytes, shell_shown

# Container labels (podman, docker); Kubernetes keeps the same three as annotations under its own prefix.
JOB_LABEL = "io.nodeweave.job"
FOLDER_LABEL = "io.nodeweave.folder"
OWNER_LABEL = "io.nodeweave.owner"
KUBE_JOB = "nodeweave.io/job"
KUBE_FOLDER = "nodeweave.io/folder"
ANNOTATION_MAX = 63  # podman kube play's limit on an annotation's value
KUBE_OWNER = "nodeweave.io/owner"
# An image's mark: keys of its own, as a container inherits its image's labels. Under the container keys, every
# container anyone runs from the image by hand would read as started by `up` in the folder that built it.
IMAGE_JOB_LABEL = "io.nodeweave.image.job"
IMAGE_FOLDER_LABEL = "io.nodeweave.image.folder"
IMAGE_OWNER_LABEL = "io.nodeweave.image.owner"


@dataclass(frozen=True)
class JobMark:
    """One job of one folder: the spec's absolute folder and the job's name, and a stable id of the two."""

    folder: str  # the spec's folder, absolute
    job: str

    @classmethod
    def of(cls, spec_dir: Path, job: str) -> "JobMark":
        return cls(str(Path(spec_dir).resolve()), job)

    @property
    def owner(self) -> str:
        """12 hex digits of SHA-256 over folder and job: the same for every verb of this folder's job."""
        return hashlib.sha256(as_bytes(f"{self.folder}\0{self.job}")).hexdigest()[:12]

    @property
    def project(self) -> str:
        """The compose project of this folder's job (compose's default would be one per name, machine-wide)."""
        return f"{self.job}-{self.owner[:8]}"

    @property
    def shown_folder(self) -> str:
        """The folder as a label shows it: a byte that is not UTF-8 as the shell writes it (labels and annotations
        are UTF-8 text; the owner id, over the folder's bytes, is what decides)."""
        return shell_shown(self.folder)

    def labels(self) -> dict:
        return {JOB_LABEL: self.job, FOLDER_LABEL: self.shown_folder, OWNER_LABEL: self.owner}

    def image_labels(self) -> dict:
        """The mark a build puts on its image: which folder's build it is, never whose container."""
        return {IMAGE_JOB_LABEL: self.job, IMAGE_FOLDER_LABEL: self.shown_folder, IMAGE_OWNER_LABEL: self.owner}

    def annotations(self) -> dict:
        """The mark on Kubernetes objects. The owner id decides; the folder is only shown, and at most 63
        bytes of it (its end, after '...') are kept: `podman kube play`, which runs the StatefulSet's pods on one
        machine (docs/engine.md), refuses a longer annotation value, as it does a label's."""
        raw = self.shown_folder.encode("utf-8")  # podman counts bytes
        folder = self.shown_folder if len(raw) <= ANNOTATION_MAX else \
            "..." + raw[-(ANNOTATION_MAX - 3):].decode("utf-8", "ignore")
        return {KUBE_JOB: self.job, KUBE_FOLDER: folder, KUBE_OWNER: self.owner}


@dataclass(frozen=True)
class FoundMark:
    """The mark read back from an object: the owner id it carries, and the folder and job it names."""

    owner: str
    folder: str
    job: str


def mark_of(found: Optional[Mapping[str, str]], kube: bool = False) -> Optional[FoundMark]:
    """The mark on an object (its labels, or with ``kube`` its annotations), None when it carries none."""
    job, folder, owner = (KUBE_JOB, KUBE_FOLDER, KUBE_OWNER) if kube else (JOB_LABEL, FOLDER_LABEL, OWNER_LABEL)
    if not found or not found.get(owner):
        return None
    return FoundMark(found[owner], found.get(folder) or "an unnamed folder", found.get(job) or "?")


def foreign_owner(mine: JobMark, found: Mapping[str, Optional[FoundMark]], what: str,
                  unmarked_removal: str = "", busy: Callable[[], Optional[str]] = lambda: None) -> None:
    """Refuse (exit 3) when an object in ``found`` (its name: its mark, None for no mark) is another folder's,
    naming that folder; ``what`` says what the objects are ("container", "StatefulSet"). With
    ``unmarked_removal`` (the command that removes them by hand, ``{names}`` standing for theirs), an object with
    no mark is refused too: nothing says this folder started it. ``busy``: the run in progress on them, asked
    only where the refusal offers to remove them, which would kill it (walk12c C13): said before that remedy."""
    unmarked = sorted(name for name, mark in found.items() if mark is None)
    if unmarked and unmarked_removal:
        others = f" (and {len(unmarked) - 1} more)" if len(unmarked) > 1 else ""
        raise EnvironmentProblem(
            f"{what} {unmarked[0]}{others} carries no nodeweave mark, so this folder's `nodeweave up` did not start "
            f"it (a plain compose of compose/local.yaml, here or in another clone, or an older nodeweave did) and "
            f"it is not this folder's job {mine.job} ({mine.folder}) to act on: nodeweave acts only on what this "
            f"folder's `up` made; {_killed_by_removal(busy)}remove it by hand where it was started "
            f"({unmarked_removal.format(names=' '.join(unmarked))}), then `nodeweave up` here")
    theirs = {name: mark for name, mark in found.items() if mark is not None and mark.owner != mine.owner}
    if not theirs:
        return
    name, mark = sorted(theirs.items())[0]
    others = f" (and {len(theirs) - 1} more)" if len(theirs) > 1 else ""
    whose = (f"job {mark.job} of this folder" if mark.folder == mine.shown_folder
             else f"`nodeweave up` in {mark.folder} (job {mark.job})")
    said = (f"{what} {name}{others} was started by {whose}, not by this folder's job {mine.job} ({mine.folder}): "
            f"nodeweave acts only on what this folder's `up` made; ")
    if not Path(mark.folder).is_dir():  # no verb can run there: another name would leave them up, unseen (C9)
        by_hand = unmarked_removal.split(", or ")[-1].format(names=" ".join(sorted(theirs))) if unmarked_removal \
            else "remove them by hand where they run"
        moved = (f"this folder is that one, moved or renamed (its .nodeweave/{mine.job}/ record names "
                 f"{mark.folder}): `mv` it back there and run the verb there" if _recorded_owner(mine) == mark.owner
                 else f"{mark.folder} no longer exists (moved, renamed or removed): `mv` its folder back there and run "
                 "the verb there")
        raise EnvironmentProblem(f"{said}{moved}{_runs_here(mine)}, or {_killed_by_removal(busy)}remove them "
                                 f"({by_hand}), then `nodeweave up` here")
    raise EnvironmentProblem(f"{said}run the verb in {mark.folder}, or give this job another `name:` in its spec")


def _killed_by_removal(busy: Callable[[], Optional[str]]) -> str:
    """Before a remedy that removes the job's objects by hand: the run in progress there that it would kill."""
    run = busy()
    return f"once it ended ({run}, and removing them kills it), " if run else ""


def _runs_here(mine: JobMark) -> str:
    """A moved folder took its run folders along: the verbs that read only them work here (walk12c C13)."""
    runs = Path(mine.folder) / "runs"
    return (" (its run folders moved with it: `nodeweave runs ls` and `nodeweave logs --run last` read them here)"
            if runs.is_dir() else "")


def _recorded_owner(mine: JobMark) -> Optional[str]:
    """The owner id this folder's ``.nodeweave/<job>/cluster.json`` recorded ``up`` made (None: none readable)."""
    import json

    from nodeweave.jobstate import STATE_DIR

    from nodeweave.entrypoint import bounded

    try:
        made = json.loads(bounded.read_text(Path(mine.folder) / STATE_DIR / mine.job / "cluster.json",
                                            bounded.RECORD_CAP, "a state file")).get("made")
    except (OSError, ValueError, AttributeError):
        return None
    return made.get("owner") if isinstance(made, dict) else None


def refuse_foreign_reached(targets, spec_path: Optional[Path], dry_run: bool = False) -> None:
    """The one check of a node named directly (``--node KIND:NAME``, ``--compose-project``, ``--statefulset``,
    ``--selector``: sync and ``doctor --cluster``) that every verb reaching the job's own nodes makes through its
    target (walk15 A20: ``sync --node podman:train-0`` in bob's folder replaced alice's train.py, where exec, logs,
    shell and stop refused the same address): a container or pod another folder's ``up`` marked is that job, and
    on this machine its /workspace is the other folder itself. Refused, exit 3, as :func:`foreign_owner` says it;
    with no spec here, any folder's mark is another folder's. An object with no mark (a container of your own) is
    reached as before, and so is an ssh host (a bare host's mark lies in a remote folder no address names); a
    container on a host (``ssh+docker:HOST/NAME``) is judged by its labels, asked of that host's engine over ssh.
    An API that does not answer is said here once, exit 3 (the verb would ask it again), but for a ``dry_run``,
    which prints its plan with what the real run would meet."""
    found = reached_marks(targets, dry_run)
    if not any(found.values()):
        return
    mine = _mark_here(spec_path)
    if mine is not None:
        foreign_owner(mine, {name: mark for name, mark in found.items() if mark is not None}, "node")
        return
    name, mark = sorted((n, m) for n, m in found.items() if m is not None)[0]
    raise EnvironmentProblem(f"{name} was started by `nodeweave up` in {mark.folder} (job {mark.job}), and this "
                             f"folder ({Path.cwd()}) holds no spec of that job: nodeweave acts only on what a folder's "
                             f"`up` made; run the verb in {mark.folder}")


def _mark_here(spec_path: Optional[Path]) -> Optional[JobMark]:
    """This folder's job mark, from its spec; None where there is none or it does not load (nothing is this
    folder's job then)."""
    from nodeweave.errors import NodeweaveError
    from nodeweave.specpath import is_stream, spec_folder

    if spec_path is None or not (Path(spec_path).is_file() or is_stream(Path(spec_path))):
        return None
    from nodeweave.spec import load_spec

    try:
        return JobMark.of(spec_folder(Path(spec_path)), load_spec(Path(spec_path)).name)
    except NodeweaveError:
        return None


INSPECT_MARKS = "{{json .Name}} {{json .Config.Labels}}"  # the engine's inspect format inspected_marks reads


def inspected_marks(text: str) -> "dict[str, Optional[FoundMark]]":
    """{container name: its mark} from an engine's ``inspect --format`` :data:`INSPECT_MARKS` output, one line per
    container found (docker writes its name with a leading /); a line that does not read is left out."""
    import json

    found: "dict[str, Optional[FoundMark]]" = {}
    for line in text.splitlines():
        try:
            name_text, labels_text = line.split(" ", 1)
            name, labels = json.loads(name_text).lstrip("/"), json.loads(labels_text)
        except ValueError:
            continue
        if isinstance(name, str):
            found[name] = mark_of(labels if isinstance(labels, dict) else {})
    return found


def reached_marks(targets, dry_run: bool = False) -> "dict[str, Optional[FoundMark]]":
    """{address: its mark} for each container (of this machine's engine, or of a host's over ssh) and each pod among
    ``targets``, one inspect per engine and one get per namespace; what does not answer or is another kind is left
    out."""
    from concurrent.futures import ThreadPoolExecutor

    groups: "dict[tuple, list]" = {}
    for target in targets:
        if getattr(target, "engine", False):
            groups.setdefault(("engine", target.tool), []).append(target)
        elif hasattr(target, "container_name"):  # ssh+docker:HOST/NAME: that host's engine is asked over ssh
            groups.setdefault(("host", target.engine_cli, target.ssh_host, target.options), []).append(target)
        elif getattr(target, "namespaced", False):
            groups.setdefault(("pod", target.kind, target.namespace, target.options.kube_context), []).append(target)
    found: "dict[str, Optional[FoundMark]]" = {}
    if groups:  # every engine and namespace asked at once: one ssh round per host, not one after another
        with ThreadPoolExecutor(max_workers=min(16, len(groups))) as pool:
            for marks in pool.map(lambda group: _marks_of(*group, dry_run), groups.items()):
                found.update(marks)
    return found


def _marks_of(key: tuple, members: list, dry_run: bool = False) -> "dict[str, Optional[FoundMark]]":
    """:func:`reached_marks` for one engine (this machine's, or a host's) or one namespace's pods."""
    import json
    import subprocess

    found: "dict[str, Optional[FoundMark]]" = {}
    by_name = {getattr(t, "container_name", t.name): t for t in members}
    if key[0] in ("engine", "host"):
        inspect = [key[1], "inspect", "--type", "container", "--format", INSPECT_MARKS, *by_name]
        argv = members[0].on_host(inspect) if key[0] == "host" else inspect
    else:
        argv = [*members[0].cli_argv("get", members[0].options, members[0].namespace), "pods", *by_name,
                "--ignore-not-found", "-o", "json"]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return found
    if key[0] in ("engine", "host"):
        return {by_name[name].label: mark for name, mark in inspected_marks(out.stdout).items() if name in by_name}
    if out.returncode != 0 and not dry_run:  # no API at all: said once, exit 3, as the verb would after its own try
        from nodeweave.failures import api_cut_off

        cut_off = api_cut_off([(t.label, out.stderr) for t in members], "nothing done on")
        if cut_off is not None:
            raise cut_off
    try:
        answer = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else {}
    except ValueError:
        return found
    items = answer.get("items", [answer]) if isinstance(answer, dict) else []
    for item in items:
        meta = (item.get("metadata") or {}) if isinstance(item, dict) else {}
        if meta.get("name") in by_name:
            found[by_name[meta["name"]].label] = mark_of(meta.get("annotations") or {}, kube=True)
    return found
