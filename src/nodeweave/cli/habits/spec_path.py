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
        if _from_variable(given):
            _note_another_spec_here(given)
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


def _from_variable(given: Path) -> bool:
    """Whether this command's ``--spec`` came from $NODEWEAVE_SPEC: the variable's value, and no --spec typed."""
    from nodeweave.cli.habits.invocation import invoked_argv

    typed = any(word == "--spec" or word.startswith("--spec=") for word in invoked_argv())
    return not typed and os.environ.get(SPEC_ENV) == str(given)


def _note_another_spec_here(given: Path) -> None:
    """$NODEWEAVE_SPEC left in a shell names another folder's spec than the one found here: every verb says so
    on stderr, absolute, before acting on that folder's job (walk5, W62: a `down` here took down that job)."""
    here = Path.cwd()
    found = next((folder / SPEC_NAME for folder in (here, *here.parents) if (folder / SPEC_NAME).is_file()), None)
    if found is None or str(given) == "-":
        return
    try:
        same = found.resolve() == given.resolve()
    except OSError:
        return
    if not same:
        import sys

        shown = os.path.relpath(found, here)
        print(f"nodeweave: note: the spec is {given.resolve()} (from ${SPEC_ENV}), not {shown} found here: every "
              f"path and the job this command acts on are that spec's; unset {SPEC_ENV} or give --spec {shown}",
              file=sys.stderr)
