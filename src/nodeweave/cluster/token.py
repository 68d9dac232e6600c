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

The file is owned by the image's user (UID 1000) when ``up`` runs as root, so
the container can read it and nobody else on the host can.
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
CONTAINER_UID, CONTAINER_GID = 1000, 0  # the images' `USER 1000:0`


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def write_token(path: Path, token: str) -> Path:
    """Write ``token`` to ``path`` as a fresh 0600 file (0700 folder), replacing an older one."""
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
    if os.geteuid() == 0:  # rootful engine: the container's user must read what only it and root may
        os.chown(scratch, CONTAINER_UID, CONTAINER_GID)
    os.replace(scratch, path)
    return path


def rotate(path: Path) -> "tuple[Path, str]":
    """A new token for this ``up``, written to the job's state file ``path``: (path, token)."""
    token = new_token()
    return write_token(path, token), token


def compose_env(host_file: str) -> "tuple[tuple[str, str], ...]":
    """What the compose command gets so the rendered file mounts and names the token."""
    return ((HOST_VARIABLE, host_file), (FILE_VARIABLE, CONTAINER_PATH))


# The remote side of a hosts up: a 0600 file (owned by the container's UID when written as root), replaced whole
# by one rename (remote/replace.py: the hosts may share the folder, and each writes the one file at once).
REMOTE_WRITE = ("sh", "-c", 'umask 077 && mkdir -p "$1" && ' + replace_from_stdin(
    '"$1"', '"$2"', f'{{ [ "$(id -u)" != 0 ] || chown {CONTAINER_UID}:{CONTAINER_GID} "$t"; }}'), "sh")
# A Slurm node's side, and a bare host's with no container (`--engine none`): the same file for the user the job
# runs as (no chown: UID 1000 there is whatever account the host gave it, never the job's; walk11 A16).
USER_WRITE = ("sh", "-c", 'umask 077 && mkdir -p "$1" && ' + replace_from_stdin('"$1"', '"$2"'), "sh")


def remote_write(in_container: bool) -> "tuple[str, ...]":
    """The remote command writing the token file (folder and name after it): chowned to the images' user only
    where a container of that user reads it; else the writing user's, the one the job runs as."""
    return REMOTE_WRITE if in_container else USER_WRITE

