"""Which container engine a verb uses: one rule for every verb (image build, up, status, run, sync, ...).

Why one module: ``image build`` and the cluster verbs once chose differently (docker first for builds,
podman first for ``up``; $NODEWEAVE_ENGINE read by builds only), so on a machine with both the image
went into docker and ``up`` ran podman without it. Stdlib only: the cluster verbs import it at start-up.
"""

from __future__ import annotations

import os
import shutil

from nodeweave.errors import UsageError

ENGINES = ("docker", "podman")
ENGINE_VARIABLE = "NODEWEAVE_ENGINE"
ORDER = ("podman", "docker")  # the default on every verb: podman (this project's engine) first, then docker
# the variable that points each engine's client at another daemon or machine: part of where a cluster is, so ``up``
# records it and a later verb without it is told to set it again (walk10 C18)
HOST_VARIABLES = {"docker": "DOCKER_HOST", "podman": "CONTAINER_HOST"}


def engine_host(engine: str) -> "str | None":
    """Where ``engine``'s client is pointed by its variable ($DOCKER_HOST, $CONTAINER_HOST); None: its default."""
    return os.environ.get(HOST_VARIABLES.get(engine, "")) or None


def engine_said(preferred: "str | None" = None) -> "str | None":
    """The engine the user named: ``--engine`` (``preferred``), else $NODEWEAVE_ENGINE; None: neither.

    One rule for every verb (image build, up, status, run, sync, ...): a value that is no engine is exit 2
    naming where it came from.
    """
    if not preferred and ENGINE_VARIABLE in os.environ and not os.environ[ENGINE_VARIABLE].strip():
        raise UsageError(f"{ENGINE_VARIABLE} is set but empty: podman or docker, or unset it for the default (an "
                         "empty value is never read as 'not said')")
    choice = preferred or os.environ.get(ENGINE_VARIABLE) or None
    if choice is not None and choice not in ENGINES:
        source = "--engine" if preferred else ENGINE_VARIABLE
        raise UsageError(f"{source} {choice!r} is not accepted: podman or docker (the engines nodeweave drives)")
    return choice


def installed_engine(preferred: "str | None" = None) -> "str | None":
    """The engine a verb runs without asking it: the one named, else the first of ``ORDER`` installed."""
    return engine_said(preferred) or next((kind for kind in ORDER if shutil.which(kind)), None)
