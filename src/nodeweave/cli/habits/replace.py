"""What an output option may replace: only a file of the kind nodeweave writes there.

Why: ``init --out train.py --force`` replaced the training script with a spec, and ``bench --json-out
notes.txt`` or ``runs compare --chart photo.png`` wrote over whatever was there (walk2, row D1). ``--force``
says "replace my earlier output", never "replace any file": a file that is not of the option's kind (a
spec, a JSON document, a DeepSpeed hostfile, a PNG/SVG chart) is refused whatever the flags say (exit 2),
and the message does not suggest ``--force`` for it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, Dict

from nodeweave.errors import UsageError

PEEK_BYTES = 1 << 20  # a file of ours is small; a bigger one is judged on its head (and is no spec or hostfile)


def _head(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(PEEK_BYTES)


def _is_spec(data: bytes) -> bool:
    """An earlier spec: init's header, or a YAML mapping with a ``name`` and a spec section."""
    text = data.decode("utf-8", "replace")
    if "written by `nodeweave init`" in text:
        return True
    try:
        import yaml

        doc = yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - not YAML at all: not a spec
        return False
    return isinstance(doc, dict) and "name" in doc and bool({"launcher", "image", "nodes"} & set(doc))


def _is_json_document(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError):
        return False


HOSTFILE_LINE = re.compile(r"^\s*(#.*)?$|^\s*\S+\s+slots=\d+\s*(#.*)?$")


def _is_hostfile(data: bytes) -> bool:
    text = data.decode("utf-8", "replace")
    return bool(text.strip()) and all(HOSTFILE_LINE.match(line) for line in text.splitlines())


def _is_chart(data: bytes) -> bool:
    head = data[:512].lstrip()
    return head.startswith(b"\x89PNG") or head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data)


KINDS: Dict[str, "tuple[str, Callable[[bytes], bool]]"] = {
    "spec": ("a nodeweave spec", _is_spec),
    "json": ("a JSON document", _is_json_document),
    "hostfile": ("a DeepSpeed hostfile (HOST slots=N lines)", _is_hostfile),
    "chart": ("a PNG or SVG chart", _is_chart),
}


def refuse_foreign_file(path: Path, flag: str, kind: str, also_not: "Dict[Path, str] | None" = None) -> None:
    """Refuse replacing ``path`` unless it is missing or of ``kind``; ``also_not`` maps the user's own files the
    new output names (init's script and requirements file) to what they are, refused even when they happen to
    parse as ``kind``."""
    if not path.is_file():
        return  # missing (written new), or a device/folder: output_file's check names those
    what, looks_like = KINDS[kind]
    resolved = path.resolve()
    named = next((what for p, what in (also_not or {}).items() if p.resolve() == resolved), None)
    if named is not None:
        raise UsageError(f"{flag} {path}: that is {named}; nodeweave never replaces it, whatever the flags say: "
                         f"give {flag} another file")
    try:
        ours = looks_like(_head(path))
    except OSError as err:
        raise UsageError(f"{flag} {path}: cannot read it to see what it is ({err.strerror}); give {flag} another "
                         "file") from None
    if not ours:
        raise UsageError(f"{flag} {path}: the file exists and is not {what}, so nodeweave never replaces it, "
                         f"whatever the flags say: give {flag} another file, or move it away first")

