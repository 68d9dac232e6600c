"""The record of what ``nodeweave render`` wrote under an output folder: the one ground for ``--prune``.

Why a record and not a mark in the text: a copy of a rendered file, or a note that quotes
the mark, carries it too, and pruning by it deleted the user's own files. The record lives
beside the rendered tree, ``<out>/.nodeweave/rendered.json`` (git-ignored with the rest of
``.nodeweave/``), and maps each path to the sha256 of the bytes written, the target that
rendered it and the job (spec ``name``) it was rendered for, so two specs rendering into one
folder never prune each other's files. A file absent from the record is never removed.

Why each entry is checked against its target's roots: the record is a file in the user's tree, and a
bad merge or a copied ``.nodeweave/`` listed the spec, the requirements file and the training script
(issue 43, W33), which ``--prune`` then removed. An entry is taken only for a target nodeweave has and
a path that target can render: its exact names (``compose/node.yaml``, ``images/cpu/Dockerfile``:
``Target.paths``), never any other file under its folders (``compose/.env``, an overlay of the user's under
``manifests/overlays/``: walk6, W35); any other entry refuses the whole record, in one line, before anything
is planned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, NamedTuple

from nodeweave.entrypoint import bounded
from nodeweave.errors import UsageError, remove_the_record

RECORD = ".nodeweave/rendered.json"
VERSION = 1


class Entry(NamedTuple):
    sha256: str
    target: str
    job: str


def read(out: Path) -> Dict[str, Entry]:
    """The record under ``out`` (empty when no render wrote one); a damaged record is named with its remedy."""
    path = out / RECORD
    try:
        text = bounded.read_own(path, bounded.RECORD_CAP, "a render record")
    except FileNotFoundError:
        return {}
    except bounded.NotOwnFile as err:  # a link or a pipe: never read through
        raise _damaged(path, err.strerror) from None
    except (OSError, UnicodeDecodeError) as err:
        raise _damaged(path, f"cannot read it ({getattr(err, 'strerror', None) or err})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise _damaged(path, "not JSON") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or data.get("version") != VERSION:
        raise _damaged(path, f'not a version-{VERSION} record ({{"version": {VERSION}, "files": {{...}}}})')
    entries = {}
    for rel, item in files.items():
        fields = [item.get(key) if isinstance(item, dict) else None for key in Entry._fields]
        if not all(isinstance(value, str) for value in fields) or not _inside(rel):
            raise _damaged(path, f"entry {rel!r} is not {{sha256, target, job}} strings for a relative path")
        entry = Entry(*fields)
        _renderable(path, rel, entry.target)
        entries[rel] = entry
    return entries


def _renderable(path: Path, rel: str, target: str) -> None:
    """Refuses an entry naming a path its target never renders (the spec, a script: the user's, whatever it says)."""
    from nodeweave.targets.registry import RENDERERS

    row = RENDERERS.get(target)
    if row is None:
        raise _damaged(path, f"entry {rel!r} names the target {target!r}, which nodeweave does not render "
                             f"(accepted: {', '.join(RENDERERS)})")
    if not row.makes(rel):
        raise _damaged(path, f"entry {rel!r} is not a path target {target} renders (a file of yours under "
                             f"{', '.join(row.roots)}, or a file {target} never makes); nodeweave never wrote it")


def dumps(entries: Dict[str, Entry]) -> str:
    files = {rel: entry._asdict() for rel, entry in sorted(entries.items())}
    return json.dumps({"version": VERSION, "files": files}, indent=2, sort_keys=True) + "\n"


def _inside(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and all(part not in ("", ".", "..") for part in parts)


def _damaged(path: Path, why: str) -> UsageError:
    return UsageError(f"{path}: {why}, so nodeweave cannot tell which files it wrote; "
                      f"{remove_the_record(path)}, nodeweave's record alone, not a file it lists (the next render "
                      "records afresh; --prune then removes nothing until a render has recorded its files)")
