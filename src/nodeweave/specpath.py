"""The spec's folder, and whether a spec path is a stream with none: one answer for every verb (walk5 W76).

Why a module of its own, with nothing but the standard library: every site that needs the folder (the loader,
the backends, the job's state, sync, render's memo before it loads anything) imports it, and ``render --check``'s
fast path must not load the spec package to learn where the spec sits.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

STDIN = "-"
# A descriptor named as a path: what it is, not where it points, is the spec (`<(envsubst < x)`, `3< x`).
_DESCRIPTOR = re.compile(r"^/(dev/(stdin|fd/\d+)|proc/(self|thread-self|\d+)/fd/\d+)$")


def is_stdin(path: "str | Path") -> bool:
    return str(path) == STDIN


def is_stream(path: "str | Path") -> bool:
    """Whether the spec has no folder of its own: ``-``, a descriptor (``/dev/stdin``, ``/dev/fd/N``,
    ``/proc/self/fd/N``, what ``<(...)`` passes), or anything there that is not a file or a folder (a named
    pipe, a device). A path that is not there yet is a file to be (``init`` writes it)."""
    if is_stdin(path) or _DESCRIPTOR.match(os.path.abspath(str(path))):
        return True
    return os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path))


def spec_folder(path: "str | Path") -> Path:
    """The spec's folder: where its relative paths (workspace.host_path, image.requirements, an overlay) are read
    from and where nodeweave keeps the job's state (.nodeweave/, runs/, rendered files). A file's own folder, where
    it is named: a spec that is a link to a team's shared spec (``proj/nodeweave.yaml -> ../shared/spec.yaml``)
    belongs to the project it is linked into, as a compose file or a git path does (walk6 W58); for a stream
    (:func:`is_stream`) the current folder, as ``--spec -`` reads it (walk5 W76). The one way every verb computes
    it: a site of its own said "/tmp" for ``--spec /tmp/pipe`` and wrote under /dev/fd."""
    if is_stream(path):
        return Path.cwd()
    return Path(os.path.abspath(path)).parent.resolve()


def host_folder(host_path: str, spec_dir: "str | Path") -> Path:
    """A host path of the spec (``workspace.host_path``, ``cache.host_path``, a volume's) on this machine, as every
    reader takes it: ``~`` and ``~/...`` this user's home, an absolute one as it is, a relative one from the spec's
    folder (walk18a A25: sync's default SRC read ``~/lan-llm`` as a folder named ``~`` beside the spec, while
    validate and up expanded it). Not resolved: each reader resolves links as it needs."""
    return Path(spec_dir) / os.path.expanduser(host_path)
