"""The NODEWEAVE_* variables the ``nodeweave`` command itself reads, and the one rule for an empty one.

Why one list: each reader once judged an empty value its own way. ``NODEWEAVE_ENGINE=`` and
``NODEWEAVE_SPEC=`` were refused, while ``NODEWEAVE_IMAGE=`` quietly meant the spec's image (walk5, W14)
and ``NODEWEAVE_CACHE_DIR=`` the default folder. A variable set but empty is most often ``-e X=$Y`` with
``Y`` unset: the CLI refuses it at start-up, before any verb runs, naming the variable and what it
accepts (an empty value is never read as "not said"). A new variable the CLI reads goes here, and
tests/test_walk5_run.py walks every row. (The entrypoint's own variables follow its contract:
docs/entrypoint.md, ``empty-variable``.)
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

# name -> what it accepts, as "<what>, or unset it for <the default>"
CLI_VARIABLES = {
    "NODEWEAVE_ENGINE": "podman or docker, or unset it for the default",
    "NODEWEAVE_SPEC": "a spec file, or unset it to find nodeweave.yaml here or above",
    "NODEWEAVE_IMAGE": "an image reference, or unset it for the spec's image",
    "NODEWEAVE_CACHE_DIR": "a folder, or unset it for $XDG_CACHE_HOME/nodeweave (~/.cache/nodeweave)",
    "NODEWEAVE_PLAN_RECORD": "a file to record the executed plan in, or unset it to record none",
    "NODEWEAVE_RICH_HELP": "on or off, or unset it for plain help in a pipe",
}


def empty_variable_problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The line refusing the first CLI variable of ``environ`` (this process's) that is set but empty (or only
    blanks); None: none is."""
    environ = os.environ if environ is None else environ
    for name, accepted in CLI_VARIABLES.items():
        if name in environ and not environ[name].strip():
            return f"{name} is set but empty: {accepted} (an empty value is never read as 'not said')"
    return None
