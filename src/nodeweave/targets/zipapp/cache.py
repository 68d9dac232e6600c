"""The entrypoint zipapp kept between calls, rebuilt only when a file it is made of changed.

Why: building it reads every entrypoint module and parses the check worker's import closure (338
modules) on every ``render`` call, ~65% of ``render all --check`` (issue 43: 23x a bare Python's CPU,
14x before the zipapp). What goes in depends only on those files, so the cache keys the archive by
each input's (path, size, mtime_ns), the entrypoint folder's listing, and the paths the closure looked
for and did not find (a module made there would join it). A stale or damaged entry is rebuilt; a cache
folder that cannot be written (a read-only home, a sandbox) means building every time, silently.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from nodeweave.entrypoint import bounded
from nodeweave.targets.zipapp.archive import build, entrypoint_sources

CACHE_ENV = "NODEWEAVE_CACHE_DIR"  # default: $XDG_CACHE_HOME/nodeweave, else ~/.cache/nodeweave (as jinja_cache)
VERSION = 1


def cache_file(package_root: Path) -> Path:
    """One entry per package folder (a checkout and site-packages each keep theirs)."""
    given = os.environ.get(CACHE_ENV)
    base = Path(given) if given else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodeweave"
    key = hashlib.sha256(str(package_root.resolve()).encode("utf-8")).hexdigest()[:16]
    return base / "zipapp" / f"{key}.json"


def _stamp(root: Path, name: str):
    """(size, mtime_ns) of ``root/name``, None when it is absent."""
    try:
        info = (root / name).stat()
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def cached_build(package_root: Path) -> bytes:
    """``archive.build(package_root)``, from the cache when none of its inputs changed."""
    root = package_root.parent
    entry = cache_file(package_root)
    listing = entrypoint_sources(package_root)
    found = _load(entry, root, listing)
    if found is not None:
        return found
    absent: set = set()
    before = _stamps(package_root)
    data = build(package_root, absent)
    if _stamps(package_root) == before:  # a file edited while it was read: build again next time
        _store(entry, root, listing, absent, data)
    return data


def _stamps(package_root: Path):
    return {path: _stamp(path.parent, path.name) for path in package_root.rglob("*.py")}


def _inputs(data: bytes):
    """The archive names of the nodeweave files inside ``data`` (all but ``__main__.py``)."""
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [name for name in archive.namelist() if name != "__main__.py"]


def _load(entry: Path, root: Path, listing) -> "bytes | None":
    try:
        record = json.loads(bounded.read_own(entry, bounded.RECORD_CAP, "a zipapp cache record"))
        if not isinstance(record, dict) or record.get("version") != VERSION or record.get("listing") != listing:
            return None
        if any(_stamp(root, name) != stamp for name, stamp in record["inputs"]):
            return None
        if any(_stamp(root, name) is not None for name in record["absent"]):
            return None
        data = bounded.read_bytes(entry.with_suffix(".pyz"), bounded.RENDERED_CAP, "a cached zipapp")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if hashlib.sha256(data).hexdigest() == record.get("sha256") else None


def _store(entry: Path, root: Path, listing, absent, data: bytes) -> None:
    record = {"version": VERSION, "listing": listing, "sha256": hashlib.sha256(data).hexdigest(),
              "inputs": [[name, _stamp(root, name)] for name in _inputs(data)], "absent": sorted(absent)}
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        for path, content in ((entry.with_suffix(".pyz"), data),
                              (entry, json.dumps(record, sort_keys=True).encode("utf-8"))):
            scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            scratch.write_bytes(content)
            os.replace(scratch, path)
    except OSError:
        pass
