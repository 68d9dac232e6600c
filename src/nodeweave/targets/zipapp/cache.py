"""The entrypoint zipapp kept between calls, rebuilt only when a file it is made of changed.

Why: building it reads every entrypoint module and parses the check worker's import closure (338
modules) on every ``render`` call, ~65% of ``render all --check`` (issue 43: 23x a bare Python's CPU,
14x before the zipapp). What goes in depends only on those files and on the code that assembles them,
so a hit is checked against each input's content (its SHA-256: sizes and mtimes matched while the
sources differed, walk6 W65, and the cache, shared by every checkout and venv of this user, handed
back an archive of other sources), the builder's own source (``archive.py``) and nodeweave's version,
the entrypoint folder's listing, and the paths the closure looked for and did not find (a module made
there would join it): a render is byte-identical to a fresh build whatever the cache holds. Reading
and hashing the inputs costs milliseconds; parsing the import closure is what the cache saves. A
stale or damaged entry is rebuilt; a cache folder that cannot be written (a read-only home, a
sandbox) means building every time, silently. The folder is :func:`nodeweave.cachedir.cache_root`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from nodeweave.cachedir import cache_root
from nodeweave.entrypoint import bounded
from nodeweave.targets.zipapp import archive
from nodeweave.targets.zipapp.archive import build, entrypoint_sources
from nodeweave.usertext import as_bytes

VERSION = 3  # 1 judged inputs by (size, mtime_ns); 2 was two branches' formats: neither trusted again


def cache_file(package_root: Path) -> Path:
    """One entry per package folder (a checkout and site-packages each keep theirs)."""
    key = hashlib.sha256(as_bytes(package_root.resolve())).hexdigest()[:16]
    return cache_root() / "zipapp" / f"{key}.json"


def _stamp(root: Path, name: str):
    """The SHA-256 of ``root/name``'s content, None when it is absent."""
    try:
        return hashlib.sha256(bounded.read_bytes(root / name, bounded.RENDERED_CAP, "an entrypoint source")).hexdigest()
    except OSError:
        return None


def _builder() -> str:
    """What assembles the archive: nodeweave's version and ``archive.py``'s own source (a new member rule or mark
    line there makes another archive of the same inputs; walk6 W25: the cache kept the old mark line)."""
    import nodeweave

    return hashlib.sha256(f"{getattr(nodeweave, '__version__', '?')}\0".encode("utf-8")
                          + bounded.read_bytes(Path(archive.__file__), bounded.RENDERED_CAP,
                                               "the zipapp's builder")).hexdigest()


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
        if not isinstance(record, dict) or record.get("version") != VERSION or record.get("listing") != listing \
                or record.get("builder") != _builder():
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
    record = {"version": VERSION, "listing": listing, "builder": _builder(), "sha256": hashlib.sha256(data).hexdigest(),
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
