"""Where nodeweave keeps one job's files beside its spec: ``.nodeweave/<job>/``.

Below both ``build/`` (the OpenShift build keeps its trees there) and ``cluster/`` (the verbs' state), so
neither has to climb into the other to find a job's folder.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from nodeweave.entrypoint.ownfolders import STATE_DIR  # one name, which the entrypoint judges too
GITIGNORE = "# made by nodeweave: what it keeps for this folder's jobs (each job's check-in token among them)\n*\n"
RUNS_GITIGNORE = ("# made by nodeweave: its run folders (every node's log, plan and record; `nodeweave runs ls` lists "
                  "them)\n*\n")


def make_own_folder(folder: Path, gitignore: str) -> None:
    """``folder`` (and the folders above it) for nodeweave's own files, which no commit wants (the run folders, as
    ``.nodeweave/``): when this call makes it, a ``.gitignore`` ignoring all of it goes in first, as pytest's
    ``.pytest_cache/`` and a venv carry one (walk15a A13: ``git add -A`` took six run folders). A folder already
    there is left as it is: it may be the user's, committed on purpose."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir()
    except FileExistsError:
        return
    try:
        (folder / ".gitignore").write_text(gitignore, encoding="utf-8")
    except OSError:
        pass  # a full disk: the run's own first write says so


def keep_out_of_git(state_dir: Path) -> None:
    """``.nodeweave/.gitignore`` ignoring everything in it, once: a team folder is a git repository, and
    ``git add -A`` would otherwise commit a job's token. A ``.gitignore`` already there is the user's: kept."""
    from nodeweave.rootwrites import note_root_writes

    note_root_writes(state_dir.parent, "the job's state (.nodeweave/, its token)")
    ignore = state_dir / ".gitignore"
    if state_dir.name == STATE_DIR and not ignore.exists() and not ignore.is_symlink():  # a link: never followed
        try:
            ignore.write_text(GITIGNORE, encoding="utf-8")
        except OSError:
            pass  # a read-only folder: the token's own write says what went wrong


def in_the_way(spec_dir: Path, path: Path, folder: bool = False, links_only: bool = False) -> str:
    """Why nodeweave must not write its own file ``path`` (inside ``spec_dir``), or "": every folder on the way a
    real folder, and the file itself a regular file or not there yet. A link is never written through (a link to
    the training script would be "replaced" by a compose file or a token), a folder or a device never written
    over; the user moves it away, nodeweave never does. ``folder``: ``path`` is a folder nodeweave fills (a kept
    tree), so a folder there is its own and anything else is in the way. ``links_only``: only a link on the way
    (render's files, whose folder or device in the way its plan names as ``refused`` itself: walk13a A5, a rendered
    file linked to a shared file was unlinked, and a linked rendered folder written and pruned through)."""
    for base in (spec_dir.absolute(), spec_dir.resolve()):  # the folders above the spec's are the user's own
        if path.absolute().is_relative_to(base):
            parts = path.absolute().relative_to(base).parts
            break
    else:
        return ""  # not under the spec's folder: not a file of this job's state
    here = base
    for i, part in enumerate(parts):
        here = here / part
        last = i == len(parts) - 1
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return ""  # nothing there yet: made by nodeweave
        except OSError as err:
            if links_only:  # a file where a folder must go: the write itself says it (nothing written)
                return ""
            return f"{here} cannot be looked at ({err.strerror or err})"
        shown = _from_here(here)
        if stat.S_ISLNK(mode):
            what = "a file" if last and not folder else "a folder"
            return f"{shown} is a symbolic link (to {os.readlink(here)}), not {what} nodeweave made; it never " \
                   "writes through a link"
        if links_only:
            continue
        if last and folder and not stat.S_ISDIR(mode):
            return f"{shown} is {_kind(mode)}, not the folder nodeweave keeps its files in"
        if last and not folder and not stat.S_ISREG(mode):
            return f"{shown} is {_kind(mode)}, not a file nodeweave made; it never writes over one"
        if not last and not stat.S_ISDIR(mode):
            return f"{shown} is {_kind(mode)}, not the folder nodeweave keeps its files in"
    return ""


def _from_here(path: Path) -> str:
    """``path`` as the user can act on it from the current folder: relative to it where it lies inside it, else
    whole (walk10 A13: from a subfolder of the project, `.nodeweave is a file` named a path that was not there)."""
    try:
        here = Path.cwd()
    except OSError:
        return str(path)
    return path.relative_to(here).as_posix() if path.is_relative_to(here) and path != here else str(path)


def _kind(mode: int) -> str:
    from nodeweave.entrypoint.bounded import file_kind

    return file_kind(mode)


def refuse_in_the_way(spec_dir: Path, path: Path, folder: bool = False) -> None:
    """Exit 2 in one line when :func:`in_the_way` finds something at ``path`` nodeweave must not write over: asked
    by the plan (so the dry run refuses as the real run does) and again by the write itself."""
    refuse_links(spec_dir, [path], folder=folder, links_only=False)


def refuse_links(spec_dir: Path, paths, folder: bool = False, links_only: bool = True) -> None:
    """:func:`refuse_in_the_way` for many paths (render's files, those it writes and those ``--prune`` removes):
    each link on their way named once, in one line, exit 2."""
    found = []
    for path in paths:
        problem = in_the_way(spec_dir, path, folder, links_only)
        if problem and problem not in found:
            found.append(problem)
    if found:
        from nodeweave.errors import UsageError

        raise UsageError(f"{'; '.join(found)}: move {'it' if len(found) == 1 else 'them'} away (nodeweave remakes "
                         "its own file there) and run again")


@dataclass(frozen=True)
class JobState:
    """Where nodeweave keeps one job's files beside its spec: ``.nodeweave/<job>/``."""

    spec_dir: Path
    job: str

    @classmethod
    def of(cls, spec_path: Path, job: str) -> "JobState":
        from nodeweave.specpath import spec_folder

        return cls(spec_folder(spec_path), job)

    @property
    def folder(self) -> Path:
        return self.spec_dir / STATE_DIR / self.job

    def kept(self, what: str) -> Path:
        """A tree nodeweave keeps for this job (``kube``: what ``apply -k`` read; ``openshift-build``,
        ``openshift-upload``: what the OpenShift build applied and sent), inside the job's folder, so two
        jobs never share one and no job's name can meet another's tree."""
        return self.folder / what

    @property
    def cluster_file(self) -> Path:
        """What ``up`` was told (target, engine, hosts, ...)."""
        return self.folder / "cluster.json"

    @property
    def token_file(self) -> Path:
        """The job's check-in secret (0600), mounted into the nodes of a compose target."""
        return self.folder / "job-token"

    @property
    def compose_file(self) -> Path:
        """The compose file ``up`` starts the local target from (absolute host paths, so it may live here)."""
        return self.folder / "compose.yaml"

    def shown(self, path: Path) -> str:
        """``path`` as the user sees it: relative to the spec's folder."""
        return path.relative_to(self.spec_dir).as_posix()


# The verbs that change what a job is on its platform from this folder (its token, compose file, nodes): one at a time
# per job (walk14a A20: two `up`s in two terminals both rewrote the token and recreated the nodes under each other).
CHANGES_THE_JOB = ("up", "down")
BUSY_FILE = "changing"  # in the job's folder: the pid, verb and start of the one changing it (a lock while it lives)
_HELD: "dict[Path, object]" = {}  # the open lock files of this process: the lock lasts as long as the process


def hold_job(spec_dir: Path, job: str, verb: str) -> None:
    """Take job ``job``'s lock for ``verb`` (one of :data:`CHANGES_THE_JOB`) until this process ends; exit 3 naming
    the other process (its verb, pid, since when) where another holds it. A lock of the kernel's (``flock``): a
    process that died holds nothing, so no stale file ever refuses anything. Nothing written before: a refusal
    leaves the job as the other made it."""
    import fcntl
    import time

    from nodeweave.errors import EnvironmentProblem

    state = JobState(spec_dir, job)
    path = state.folder / BUSY_FILE
    if path in _HELD:
        return
    refuse_in_the_way(spec_dir, path)
    try:
        state.folder.mkdir(parents=True, exist_ok=True)
        keep_out_of_git(state.folder.parent)
        handle = open(path, "a+", encoding="utf-8")
    except OSError:  # a folder nothing can be written to (down from a read-only copy): up refuses it on its own
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        words = _holder(handle)
        raise EnvironmentProblem(
            f"{_who(words)} is changing job {job} from this folder ({state.shown(path)} is locked): a "
            f"second `nodeweave {verb}` now would race it on the job's token, compose file and nodes; wait for it "
            f"to end (`nodeweave status` then shows the nodes), or end it first"
            + (f" (`kill {words[0]}`)" if words and words[0].isdigit() else "") + "; nothing was started or recorded")
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()} {verb} {int(time.time())}\n")
    handle.flush()
    _HELD[path] = handle


def _holder(handle) -> "list[str]":
    """The words the lock's holder wrote (pid, verb, start), read from ``handle``, which is then closed."""
    handle.seek(0)
    words = handle.read(200).split()
    handle.close()
    return words


def _who(words: "list[str]") -> str:
    """```nodeweave up` (pid N, since HH:MM:SS UTC)``: the holder as the refusals name it."""
    import time

    other = f"`nodeweave {words[1]}`" if len(words) > 1 and words[1] in CHANGES_THE_JOB else "another nodeweave"
    pid = f"pid {words[0]}" if words and words[0].isdigit() else "its pid not yet written"
    since = (f", since {time.strftime('%H:%M:%S', time.gmtime(int(words[2])))} UTC"
             if len(words) > 2 and words[2].isdigit() else "")
    return f"{other} ({pid}{since})"


def refuse_while_changing(spec_dir: Path, job: str, verb: str) -> None:
    """Exit 3 naming the holder while an ``up`` or ``down`` of another process changes job ``job``: a verb that
    uses the nodes would land in containers being removed or recreated (walk17a A31: a run recorded podman's
    "container state improper" as each node's exit). Only asks: opens no file for writing, creates nothing."""
    from nodeweave.errors import EnvironmentProblem

    changing, pid = _changing(spec_dir, job)
    if changing:
        consequence = ("`nodeweave down` now would race it: what it took down, the other could be making or "
                       "have still to make" if verb == "down" else
                       f"`nodeweave {verb}` now would land in nodes being removed or recreated")
        raise EnvironmentProblem(f"{changing}: {consequence}; wait for it to end (`nodeweave status` then shows the "
                                 f"nodes), or Ctrl-C it{f' (`kill {pid}`)' if pid else ''}; nothing was started or "
                                 "recorded")


def changing_line(spec_dir: Path, job: str) -> str:
    """"`nodeweave up` (pid N, since ...) is changing job JOB's nodes from this folder (... is locked)" while another
    process holds job ``job``'s lock, else "": what every verb but the readers is refused with, and ``status``
    notes. Only asks: opens no file for writing, creates nothing."""
    return _changing(spec_dir, job)[0]


def _changing(spec_dir: Path, job: str) -> "tuple[str, str]":
    """(:func:`changing_line`, the holder's pid or "")."""
    import fcntl

    state = JobState(spec_dir, job)
    path = state.folder / BUSY_FILE
    if path in _HELD or path.is_symlink() or not path.is_file():
        return "", ""
    try:
        handle = open(path, "r", encoding="utf-8")
    except OSError:
        return "", ""
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        words = _holder(handle)
        return (f"{_who(words)} is changing job {job}'s nodes from this folder ({state.shown(path)} is locked)",
                words[0] if words and words[0].isdigit() else "")
    handle.close()
    return "", ""
