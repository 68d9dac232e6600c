"""Where nodeweave keeps one job's files beside its spec: ``.nodeweave/<job>/``.

Below both ``build/`` (the OpenShift build keeps its trees there) and ``cluster/`` (the verbs' state), so
neither has to climb into the other to find a job's folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".nodeweave"
GITIGNORE = "# made by nodeweave: what it keeps for this folder's jobs (each job's check-in token among them)\n*\n"


def keep_out_of_git(state_dir: Path) -> None:
    """``.nodeweave/.gitignore`` ignoring everything in it, once: a team folder is a git repository, and
    ``git add -A`` would otherwise commit a job's token. A ``.gitignore`` already there is the user's: kept."""
    ignore = state_dir / ".gitignore"
    if state_dir.name == STATE_DIR and not ignore.exists():
        try:
            ignore.write_text(GITIGNORE, encoding="utf-8")
        except OSError:
            pass  # a read-only folder: the token's own write says what went wrong


@dataclass(frozen=True)
class JobState:
    """Where nodeweave keeps one job's files beside its spec: ``.nodeweave/<job>/``."""

    spec_dir: Path
    job: str

    @classmethod
    def of(cls, spec_path: Path, job: str) -> "JobState":
        return cls(spec_path.resolve().parent, job)

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
