"""The job's check-in secret: random, made by ``up``, rotated on every ``up``, never in a rendered file.

Without it every node derives the check-in token from the job id and the
master port (``entrypoint/checkin/wire.py: job_token``), which anyone who can list the
pods or read the compose file knows, so any container that reaches node 0's
exchange could check in as a node or relay a forged failure. Where nodeweave
brings the nodes up it knows them all, so it hands each one a fresh secret:

- compose (local and per host): a 0600 file, ``.nodeweave/<job>/job-token`` beside
  the spec (on each host ``<remote dir>/.nodeweave/<job>/job-token``), bind-mounted
  read-only at :data:`CONTAINER_PATH`; the rendered compose file names only
  the variables (``NODEWEAVE_JOB_TOKEN_HOST``, ``NODEWEAVE_JOB_TOKEN_FILE``);
- Kubernetes/OpenShift: a Secret ``<name>-job-token-<hash>`` that ``up``'s
  overlay generates (kustomize ``secretGenerator``, from a 0600 file in the
  overlay folder under ``.nodeweave/<job>/kube/``), mounted at the same path; a
  new token is a new name, so the pods roll onto it together;
- bare hosts (``--engine none``): the file itself, named by the variable;
- Slurm (``slurm.runtime: host``): ``<workdir>/.nodeweave/<job>/job-token`` on every
  node of the allocation, written by a one-task ``srun`` step per node with the
  token on stdin (never in argv, so not in ``ps``, ``sacct``'s SubmitLine or
  ``scontrol show job``), 0600 and owned by the user the steps run as; the run
  step names only the path (``NODEWEAVE_JOB_TOKEN_FILE``).

Written as root (a rootful engine), the file is root's, group 0, mode 0440: the images' user (``USER 1000:0``)
reads it through its group 0, and on the host only root and the accounts group 0 holds (none, on most hosts; named
in a warning where one does). It is never handed to UID 1000: on the host that is whatever account holds it, most
workstations' first user (walk15a A15).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from nodeweave.targets.compose.common import TOKEN_HOST_VARIABLE as HOST_VARIABLE
from nodeweave.entrypoint.planning.exchange_plan import TOKEN_FILE_VARIABLE as FILE_VARIABLE
from nodeweave.entrypoint.planning.exchange_plan import TOKEN_MOUNT as CONTAINER_PATH
from nodeweave.overlay import token_secret_name as secret_name
from nodeweave.remote.replace import replace_from_stdin  # the Kubernetes overlay names the Secret

CONTAINER_DIR = CONTAINER_PATH.rpartition("/")[0]  # Kubernetes mounts the Secret's folder here
TOKEN_BYTES = 32


def job_file(job: str) -> str:
    """The token's place relative to the spec's (or a Slurm workdir's) folder: one per job, git-ignored."""
    return f".nodeweave/{job}/job-token"


SECRET_KEY = CONTAINER_PATH.rpartition("/")[2]  # the Secret's one key: the file name in the mounted folder
CONTAINER_GID = 0  # the images' `USER 1000:0`: the group a token written as root is readable by, never UID 1000's
ROOT_MODE = 0o440  # a token written as root: root's and group 0's to read, nobody's to write


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def mounted_mode() -> int:
    """The mode of a token a container bind-mounts (local compose): 0600, this user's, where the engine maps this
    user into the container (rootless); written as root, :data:`ROOT_MODE`, for the images' user's group 0."""
    return ROOT_MODE if os.geteuid() == 0 else 0o600


def write_token(path: Path, token: str, mode: int = 0o600) -> Path:
    """Write ``token`` to ``path`` as a fresh 0600 file (0700 folder), replacing an older one; ``mode``
    :data:`ROOT_MODE`, as root (a container bind-mounts it): root's and group 0's, for the container's user to read
    through its group, and a warning naming any other host account group 0 holds."""
    from nodeweave.jobstate import keep_out_of_git, refuse_in_the_way

    refuse_in_the_way(path.parent.parent.parent, path)  # <folder>/.nodeweave/<job>/job-token: never through a link
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    keep_out_of_git(path.parent.parent)  # .nodeweave/<job>/job-token: never committed with the folder
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, token.encode("ascii") + b"\n")
    finally:
        os.close(fd)
    if mode == ROOT_MODE and os.geteuid() == 0:  # rootful engine: the container's user reads it by group 0
        os.chown(scratch, 0, CONTAINER_GID)
        os.chmod(scratch, ROOT_MODE)
        warn_group_readers(path)
    os.replace(scratch, path)
    return path


def group_readers(gid: int = CONTAINER_GID) -> "list[str]":
    """The host accounts other than root's that hold group ``gid`` (as members or as their own group): who besides
    root could read a token written as root."""
    import grp
    import pwd

    try:
        names = set(grp.getgrgid(gid).gr_mem)
    except KeyError:
        names = set()
    accounts = {entry.pw_name: entry for entry in pwd.getpwall()}
    names |= {name for name, entry in accounts.items() if entry.pw_gid == gid}
    return sorted(name for name in names if name not in accounts or accounts[name].pw_uid != 0)


def warn_group_readers(path: Path) -> None:
    """One warning where a host account other than root's can read the token written as root (group 0)."""
    import sys

    readers = group_readers()
    if readers:
        print(f"nodeweave: warning: the job token {path} is group 0's to read (the container's user reads it so), and "
              f"on this host group 0 is held by {', '.join(readers)} too: they can read it; take them out of group "
              "0, or run `up` as a user of the rootless engine (the token is then that user's alone)", file=sys.stderr)


def rotate(path: Path, mode: int = 0o600) -> "tuple[Path, str]":
    """A new token for this ``up``, written to the job's state file ``path`` (``mode``: as planned): (path, token)."""
    token = new_token()
    return write_token(path, token, mode), token


def compose_env(host_file: str) -> "tuple[tuple[str, str], ...]":
    """What the compose command gets so the rendered file mounts and names the token."""
    return ((HOST_VARIABLE, host_file), (FILE_VARIABLE, CONTAINER_PATH))


# The remote side of a hosts up: a 0600 file (written as root: root's and group 0's, 0440, as write_token's, never
# a host account's by UID), replaced whole by one rename (remote/replace.py: the hosts may share the folder, and
# each writes the one file at once).
REMOTE_WRITE = ("sh", "-c", 'umask 077 && mkdir -p "$1" && ' + replace_from_stdin(
    '"$1"', '"$2"', f'{{ [ "$(id -u)" != 0 ] || {{ chown 0:{CONTAINER_GID} "$t" && chmod {ROOT_MODE:o} "$t"; }}; }}'),
    "sh")
# A Slurm node's side, and a bare host's with no container (`--engine none`): the same file for the user the job
# runs as (no chown: UID 1000 there is whatever account the host gave it, never the job's; walk11 A16).
USER_WRITE = ("sh", "-c", 'umask 077 && mkdir -p "$1" && ' + replace_from_stdin('"$1"', '"$2"'), "sh")


def remote_write(in_container: bool) -> "tuple[str, ...]":
    """The remote command writing the token file (folder and name after it): group 0's to read, written as root,
    only where a container of the images' user reads it; else the writing user's, the one the job runs as."""
    return REMOTE_WRITE if in_container else USER_WRITE

