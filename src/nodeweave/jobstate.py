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


def in_the_way(spec_dir: Path, path: Path, folder: bool = False) -> str:
    """Why nodeweave must not write its own file ``path`` (inside ``spec_dir``), or "": every folder on the way a
    real folder, and the file itself a regular file or not there yet. A link is never written through (a link to
    the training script would be "replaced" by a compose file or a token), a folder or a device never written
    over; the user moves it away, nodeweave never does. ``folder``: ``path`` is a folder nodeweave fills (a kept
    tree), so a folder there is its own and anything else is in the way."""
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
            return f"{here} cannot be looked at ({err.strerror or err})"
        shown = _from_here(here)
        if stat.S_ISLNK(mode):
            what = "a file" if last and not folder else "a folder"
            return f"{shown} is a symbolic link (to {os.readlink(here)}), not {what} nodeweave made; it never " \
                   "writes through a link"
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
    problem = in_the_way(spec_dir, path, folder)
    if problem:
        from nodeweave.errors import UsageError

        raise UsageError(f"{problem}: move it away (nodeweave remakes its own file there) and run again")


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
