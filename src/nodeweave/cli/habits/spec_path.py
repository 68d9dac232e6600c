"""Which spec a verb works on when none is named: its own room, so the shell completions in ``output`` and
the command classes in ``base`` both reach it without importing each other."""

from __future__ import annotations

import os
from pathlib import Path

SPEC_NAME = "nodeweave.yaml"
SPEC_ENV = "NODEWEAVE_SPEC"


def find_spec(given: "Path | None") -> Path:
    """The spec a verb works on: ``given`` as is, else the nearest ``nodeweave.yaml`` from here upwards."""
    if given is not None:
        return given
    if SPEC_ENV in os.environ and not os.environ[SPEC_ENV].strip():  # click reads an empty variable as unset
        from nodeweave.errors import UsageError

        raise UsageError(f"{SPEC_ENV} is set but empty: a spec file, or unset it to find {SPEC_NAME} here or above "
                         "(an empty value is never read as 'here')")
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / SPEC_NAME
        if candidate.is_file():
            return Path(SPEC_NAME) if folder == here else Path(os.path.relpath(candidate, here))
    return Path(SPEC_NAME)  # absent: the loader names it and what to pass
