"""``runs/<UTC time>-<job>/``: everything one run leaves on the workstation.

- ``spec.yaml``: the spec the run was started from, as it was;
- ``up-spec.yaml``: only where the held nodes were made from another spec, in a field they do not see again at
  each run (``onbackend.spec_changed``): the spec ``nodeweave up`` made them from;
- ``node-<i>.log``: the node's whole output (entrypoint, launcher, every rank), as it arrived;
- ``node-<i>.plan.json``: the plan the node's entrypoint made for this run (``--explain --json`` schema);
- ``profile/node-<i>/``: the profiler's files, with ``--profile``;
- ``run.json``: command, variables, target, start/end times, every node's exit code, first output,
  the variables it exported, the workspace's git commit here and the sync stamp (digest, commit) there.

A sweep keeps one such folder per point inside its own (``<time>-<job>-sweep/<n>-<VAR=value>/``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from nodeweave.entrypoint import bounded
from nodeweave.entrypoint.ownfolders import RUNS  # one name for the run folders, which the spec's rules judge too
from nodeweave.errors import EnvironmentProblem, NodeweaveError, UsageError

# The files a node names by its own path in its lines and the run's record copies into the run folder here under the
# same name (``job.keep_after_stop``): the launcher's output after a stop (``runstate.AFTER_STOP``). The one rule for
# both: what is copied, and which paths in a node's lines are shown as the copy's (walk14a A1).
KEPT_NAME = r"launcher-after-stop-node-\w{1,12}\.log"
_KEPT_PATH = re.compile(r"(?:/[^\s:;,'\"`()]*)?/(" + KEPT_NAME + r")\b")


def as_kept_here(line: str, folder: Path) -> str:
    """``line`` with every node path of a file the run folder keeps (:data:`KEPT_NAME`) as that copy's path here:
    ``/tmp/nodeweave/runs/ID/launcher-after-stop-node-1.log`` (inside the container, gone at ``down``) becomes
    ``runs/ID/launcher-after-stop-node-1.log`` of this machine, which the user can open."""
    if "launcher-after-stop-node-" not in line:
        return line
    return _KEPT_PATH.sub(lambda m: str(folder / m.group(1)), line)

SCHEMA = "nodeweave.runfolder/1"
UP_SPEC = "up-spec.yaml"  # the spec `up` made the held nodes from, where it is not the run's own (walk16a A13)


def own_log(path: Path, leave_out: str = "") -> Path:
    """``path`` when it is a node log as a run wrote it (a regular file, or absent: FileNotFoundError); one line,
    exit 2, for a link (to ``/etc/shadow``, say), a pipe, a device or a folder: every reader of a run's logs
    (``logs --run``, ``runs compare --metric``, a sweep's metric) refuses it alike, never reads through it.
    ``leave_out``: the reader's own option that leaves a node out (``logs``' ``--node``), named in the hint only
    where the reader takes one (walk10 A26: ``runs compare`` was told to use a --node it has not)."""
    try:
        return bounded.own_file(path)
    except bounded.NotOwnFile as err:
        raise UsageError(f"{path} {err.strerror}: a run's logs are read only as the run wrote them; move it out of "
                         f"{path.parent.name}/" + (f" (or leave that node out with {leave_out})" if leave_out
                                                   else "")) from None


def utc_stamp(epoch: Optional[float] = None) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch))


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"


def git_state(path: Path) -> dict:
    """Commit, branch and whether the checkout holding ``path`` has uncommitted edits (None outside git)."""
    def git(*args: str) -> Optional[str]:
        try:
            out = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"path": str(path), "commit": None, "branch": None, "dirty": None}
    porcelain = git("status", "--porcelain", "--untracked-files=no")
    return {"path": str(path), "commit": commit, "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(porcelain)}


@dataclass
class RunFolder:
    path: Path
    run_id: str

    @classmethod
    def create(cls, parent: Path, job: str, spec_text: str, suffix: str = "",
               made_from: Optional[str] = None) -> "RunFolder":
        """A new folder ``<parent>/<UTC time>-<job><suffix>`` (``-2``, ``-3``... if that second is taken), holding
        ``spec_text`` (the spec the run was started from) and ``made_from`` (:data:`UP_SPEC`), where given."""
        from nodeweave.jobstate import RUNS_GITIGNORE, make_own_folder
        from nodeweave.rootwrites import note_root_writes

        base = f"{utc_stamp()}-{job}{suffix}"
        note_root_writes(parent, "the run folders")
        make_own_folder(parent, RUNS_GITIGNORE)
        for n in range(1, 1000):
            name = base if n == 1 else f"{base}-{n}"
            try:
                (parent / name).mkdir()
            except FileExistsError:
                continue
            folder = cls(parent / name, name)
            try:
                folder.write_text("spec.yaml", spec_text)
                if made_from is not None:
                    folder.write_text(UP_SPEC, made_from)
            except NodeweaveError:  # nothing of the run is there yet: no half-made folder left behind (C7)
                import shutil

                shutil.rmtree(folder.path, ignore_errors=True)
                raise
            return folder
        raise RuntimeError(f"no free run folder name under {parent}")

    def log_path(self, node_name: str) -> Path:
        return self.path / f"{node_name}.log"

    def write_json(self, name: str, data) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def write_text(self, name: str, text: str) -> Path:
        """``name`` in the run folder, whole or not at all (a temporary file renamed over it: a record once written
        is never left empty by a later write that failed); a failed write names the file and is exit 3 (walk10 C7:
        a full runs/ was said as "cannot write the output to stdout", and left run.json empty)."""
        target = self.path / name
        partial = self.path / f".{name}.partial"
        try:
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, target)
        except OSError as err:
            try:
                partial.unlink()
            except OSError:
                pass
            raise EnvironmentProblem(f"cannot write {target}: {err.strerror or err}; free space there, or give "
                                     "--runs-dir DIR (a folder elsewhere for the run folders)") from None
        return target


def run_folder_named(parent: Path, run_id: Optional[str]) -> Optional[Path]:
    """The folder of run ``run_id`` under ``parent`` (a run's own, or a sweep's point), or None (none given, none
    there: the run was started from another folder)."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        return None
    for folder in (parent / run_id, *parent.glob(f"*/{run_id}")):
        if folder.is_dir() and ((folder / "run.json").exists() or any(folder.glob("node-*.log"))):
            return folder
    return None


def latest_run(parent: Path, job: str) -> Optional[Path]:
    """The newest run folder of ``job`` under ``parent`` by start (sweep points included), or None: ``last`` as
    ``runs show last`` and ``logs --run last`` read it (``runs.history``: the folders' names, which start with the
    UTC time, then a sweep's points in order). Never by modification time: a note added to an older run made it
    "the last run" of a hint whose command showed another (walk16a A19)."""
    pattern = re.compile(rf"^\d{{8}}T\d{{6}}Z-{re.escape(job)}(-\d+)?$")
    found = [p for p in parent.glob("*") if p.is_dir() and pattern.match(p.name)]
    found += [p for sweep in parent.glob(f"*-{job}-sweep*") if sweep.is_dir() for p in sweep.iterdir()
              if p.is_dir() and (p / "run.json").exists()]
    found = [p for p in found if (p / "run.json").exists() or any(p.glob("node-*.log"))]
    return max(found, key=lambda p: p.relative_to(parent).parts) if found else None
