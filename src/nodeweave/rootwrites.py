"""Writing as root into a folder another user owns: said once, never silently (walk7 A29).

``sudo nodeweave ...`` is how rootful podman or docker without the docker group is run, and everything nodeweave then
makes in the project (rendered files, ``.nodeweave/`` with the 0600 job token, ``runs/``) is root's: its owner can no
longer re-render, prune, or read the token for ``status`` without sudo. Each writer of the project's files calls
:func:`note_root_writes` with the folder it writes into; the first such folder owned by another user is named once.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_SAID: "list[Path]" = []


def note_root_writes(folder: Path, what: str) -> None:
    """One warning line on stderr when this process runs as root and ``folder`` (or the nearest folder above it that
    exists) belongs to another user; ``what`` names what is written there ("the rendered files")."""
    if _SAID or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    here = Path(os.path.abspath(folder))
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        found = here.stat()
    except OSError:
        return
    if found.st_uid == 0:
        return
    _SAID.append(here)
    try:
        import pwd

        owner = f"{pwd.getpwuid(found.st_uid).pw_name} ({found.st_uid})"
    except (ImportError, KeyError):
        owner = f"uid {found.st_uid}"
    print(f"nodeweave: warning: running as root in {here}, which belongs to {owner}: {what} made here are root's, "
          "and its owner cannot rewrite or remove them (nor read the job token) without sudo; run nodeweave as that "
          f"user, or afterwards `sudo chown -R {found.st_uid}:{found.st_gid}` what it made", file=sys.stderr)
