"""Build nodeweave's wheel from a copy of the checkout, never in place.

setuptools writes ``build/`` beside the sources it packs; two builds of the same checkout at once (pytest-xdist
workers, or a developer's own ``pip wheel .``) delete each other's half-copied files and fail with ENOENT. Each
build therefore packs its own copy: ``pyproject.toml``, ``README.md`` (the project's readme) and ``src/``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def source_copy(into: Path) -> Path:
    """A private copy of what the wheel is made of, in ``into`` (made here)."""
    source = into
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return source


def build_wheel(into: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """``pip wheel`` of a private copy (setuptools from this venv: no network) into ``into``."""
    with tempfile.TemporaryDirectory(prefix="nodeweave-wheel-") as scratch:
        source = source_copy(Path(scratch) / "nodeweave")
        return subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                               "-w", str(into), str(source)], capture_output=True, text=True, timeout=timeout)
