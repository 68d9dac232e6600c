"""The entrypoint as one file, ``entrypoint/nodeweave-entrypoint.pyz``, for images nodeweave does not build.

A team that brings its own image (an NGC or ROCm PyTorch image) adds two
Dockerfile lines: COPY this file to ``/usr/local/bin/nodeweave-entrypoint`` and
an ENTRYPOINT through tini (or ``--init``); docs/images.md shows them. The
rendered images install the same file (unpacked and compiled, so no start
compiles it again), so a team's folder (where ``render`` writes this file)
is their whole build context. The archive holds ``nodeweave.entrypoint``
and the package's ``__init__.py``, which is all it imports, and the check
worker with what it imports (tests/test_zipapp.py checks both), so the image
needs Python 3 and nothing of nodeweave.

It does not depend on the spec: its input is the entrypoint's own sources,
read from the installed package like the images target's templates. The value
is bytes (``archive.build``), which ``nodeweave.rendering`` writes as they are,
executable because they start with ``#!``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Dict

from nodeweave.spec import Spec
from nodeweave.targets.zipapp.archive import build

PATH = "entrypoint/nodeweave-entrypoint.pyz"


def package_root() -> Path:
    """The installed ``nodeweave`` package's folder (``src/nodeweave`` in a checkout)."""
    found = importlib.util.find_spec("nodeweave")
    return Path(found.origin).parent


def render_files(spec: Spec) -> Dict[str, bytes]:
    from nodeweave.targets.zipapp.cache import cached_build

    return {PATH: cached_build(package_root())}


__all__ = ["PATH", "build", "package_root", "render_files"]
