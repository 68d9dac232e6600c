"""What the caller's environment changes in a plan, said in the plan.

Every step runs with this process's environment under the variables the plan gives it
(``nodeweave.steps``), so a variable left in the shell can change what runs: ``NODEWEAVE_IMAGE`` the image
every local node runs (the compose file reads ``${NODEWEAVE_IMAGE:-...}``), ``DOCKER_HOST`` or
``CONTAINER_HOST`` the engine the nodes start on, ``KUBECONFIG`` the cluster, ``SALLOC_*`` what Slurm
allocates. The plan gives what it controls explicitly (the image, the mode, the token, the compose
project) and names in a note each other variable that is set and read, so ``--dry-run`` is the very plan
the real run executes.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, List, Mapping, Optional, Tuple

IMAGE_VARIABLE = "NODEWEAVE_IMAGE"
SPEC_IMAGE = "the spec's image (image.registry, name and variant)"  # why a node runs the image the spec gives
_INTERPOLATED = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)")


def inherited_notes(names: Iterable[str], prefixes: Iterable[str] = (), environ: Optional[Mapping[str, str]] = None,
                    given: Iterable[str] = ()) -> List[str]:
    """One note per variable of ``environ`` (this process's) that is in ``names`` or starts with a prefix, and
    that the plan does not set itself (``given``)."""
    environ = os.environ if environ is None else environ
    prefixes, given = tuple(prefixes), set(given)
    found = sorted(k for k in environ if k not in given and (k in set(names) or (prefixes and k.startswith(prefixes))))
    return [f"{k}={environ[k]} from this environment is read by the steps below and changes what they do "
            f"(unset it to leave it out)" for k in found]


def interpolated(text: str) -> Tuple[str, ...]:
    """The variables a compose file reads from the environment of the command that starts it (``${NAME...}``)."""
    return tuple(sorted(set(_INTERPOLATED.findall(text))))


def image_choice(flag: Optional[str], spec_image: str, environ: Optional[Mapping[str, str]] = None,
                 why: str = SPEC_IMAGE) -> Tuple[str, str]:
    """(the image every node runs, the note saying why): ``--image``, else ``NODEWEAVE_IMAGE`` from this
    environment (which the compose file would read anyway), else the spec's (``why``: how the spec gives it, a
    whole clause)."""
    environ = os.environ if environ is None else environ
    inherited = environ.get(IMAGE_VARIABLE)
    if inherited and not flag:  # the one rule for image references, naming the variable
        from nodeweave.spec.rules import IMAGE_REFERENCE

        from nodeweave.errors import UsageError

        if not IMAGE_REFERENCE.check(inherited):
            raise UsageError(f"{IMAGE_VARIABLE}={inherited!r} from this environment is not an image reference: "
                             f"{IMAGE_REFERENCE.accepted} (unset it, or give --image)")
    if flag:
        over = f" (over {IMAGE_VARIABLE}={inherited} from this environment)" if inherited and inherited != flag else ""
        return flag, f"every node runs image {flag}: --image{over}"
    if inherited and inherited != spec_image:
        return inherited, (f"every node runs image {inherited}: {IMAGE_VARIABLE} from this environment overrides "
                           f"the spec's {spec_image} (unset it, or give --image)")
    return spec_image, f"every node runs image {spec_image}: {why}"
