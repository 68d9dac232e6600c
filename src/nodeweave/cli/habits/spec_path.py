"""Which spec a verb works on when none is named: its own room, so the shell completions in ``output`` and
the command classes in ``base`` both reach it without importing each other."""

from __future__ import annotations

import os
from pathlib import Path

SPEC_NAME = "nodeweave.yaml"


def find_spec(given: "Path | None") -> Path:
    """The spec a verb works on: ``given`` as is, else the nearest ``nodeweave.yaml`` from here upwards."""
    if given is not None:
        return given
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / SPEC_NAME
        if candidate.is_file():
            return Path(SPEC_NAME) if folder == here else Path(os.path.relpath(candidate, here))
    return Path(SPEC_NAME)  # absent: the loader names it and what to pass
