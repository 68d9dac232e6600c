"""The stdlib entrypoint as one runnable file: a zipapp, the same bytes from the same sources.

A zipapp is a shebang line, then a zip whose root ``__main__.py`` Python runs
(``python3 nodeweave-entrypoint.pyz`` or, executable, the file itself). Python
finds a zip from its end, so lines before it are allowed: the second line is
the "by nodeweave" mark every rendered file carries in its head.

Byte-reproducible, so ``render all --check`` can compare it like text: members
in sorted order, one fixed timestamp (1980-01-01, zip's epoch), fixed modes,
no extra fields, and stored, not deflated: the compressed bytes depend on the
zlib build (zlib-ng, which some distributions ship, deflates differently), the
stored ones on nothing but the sources. This module is stdlib only and reads
nothing of nodeweave, so a test builds the archive under every Python from 3.9
and compares the bytes.
"""

import ast
import io
import zipfile
from pathlib import Path

SHEBANG = b"#!/usr/bin/env python3\n"
MARK_LINE = (b"# Rendered by nodeweave from src/nodeweave/entrypoint (stdlib only); "
             b"`nodeweave render entrypoint` rebuilds it, do not edit.\n")
EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold
MAIN = b'''\
"""Run nodeweave-entrypoint from this archive: python3 nodeweave-entrypoint.pyz --help."""
import sys

from nodeweave.entrypoint.__main__ import main

sys.exit(main())
'''


# What ``nodeweave check`` runs on every node (``python -m nodeweave.check.worker``, torch and the stdlib):
# held too, with every nodeweave module it imports, so an image with this file alone can be checked.
WORKER = "nodeweave/check/worker.py"


def _imports(name: str, source: bytes):
    """The nodeweave modules ``name`` imports (lazy ones too), as archive paths without ``.py``."""
    package = name.split("/")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            modules = [".".join([*base, *([node.module] if node.module else [])])]
            modules += [f"{modules[0]}.{alias.name}" for alias in node.names]  # a submodule imported by name
        else:
            continue
        for module in modules:
            if module.split(".")[0] == "nodeweave":
                yield module.replace(".", "/")


def _closure(package_root: Path, start: str, absent: "set | None" = None):
    """``start`` and every nodeweave module it reaches through imports, with their packages' ``__init__.py``
    (``absent`` collects the paths looked for and not found: a file made there would change the archive)."""
    found, todo = {}, [start]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = package_root.parent / name
        if not path.is_file():
            if absent is not None:
                absent.add(name)
            continue
        found[name] = path.read_bytes()
        parts = name.split("/")
        todo += ["/".join(parts[:depth] + ["__init__.py"]) for depth in range(1, len(parts))]
        for module in _imports(name, found[name]):
            todo += [module + ".py", module + "/__init__.py"]
    return found


def entrypoint_sources(package_root: Path):
    """The archive names of ``nodeweave/entrypoint/``'s modules (sources only, no bytecode), sorted."""
    names = []
    for path in (package_root / "entrypoint").rglob("*.py"):
        relative = path.relative_to(package_root.parent)
        if "__pycache__" not in relative.parts:
            names.append(relative.as_posix())
    return sorted(names)


def members(package_root: Path, absent: "set | None" = None):
    """``(name in the archive, bytes)``: ``nodeweave/__init__.py``, every module of ``nodeweave/entrypoint/``,
    the check worker with what it imports, and the archive's ``__main__.py``; sorted."""
    found = {"__main__.py": MAIN, "nodeweave/__init__.py": (package_root / "__init__.py").read_bytes()}
    for name in entrypoint_sources(package_root):
        found[name] = (package_root.parent / name).read_bytes()
    found.update(_closure(package_root, WORKER, absent))
    return sorted(found.items())


def build(package_root: Path, absent: "set | None" = None) -> bytes:
    """The zipapp's bytes for the ``nodeweave`` package at ``package_root`` (a source tree or site-packages)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in members(package_root, absent):
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3  # Unix, so the mode below is read as one
            info.external_attr = 0o100644 << 16
            archive.writestr(info, data)
    return SHEBANG + MARK_LINE + buffer.getvalue()
