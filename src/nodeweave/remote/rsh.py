"""rsync's remote shell for ``kubectl exec`` / ``oc exec``.

rsync runs ``<rsh> [-l USER] HOST rsync --server ...``. kubectl parses flags
anywhere on its command line, so the pod and a ``--`` must come before
rsync's arguments. Invoked as ``python -m nodeweave.remote.rsh KUBECTL-ARGV ::``
followed by what rsync appends; it execs ``KUBECTL-ARGV HOST -- COMMAND...``.
"""

from __future__ import annotations

import os
import sys

from nodeweave.remote.kube import RSH_MARK


def rewrite(argv: "list[str]") -> "list[str]":
    """``[*prefix, '::', ('-l', user)?, host, *command]`` to ``[*prefix, host, '--', *command]``."""
    if RSH_MARK not in argv:
        raise ValueError(f"nodeweave.remote.rsh: expected {RSH_MARK!r} after the exec argv")
    cut = argv.index(RSH_MARK)
    prefix, rest = argv[:cut], argv[cut + 1:]
    if rest[:1] == ["-l"]:  # a user has no meaning for a pod
        rest = rest[2:]
    if len(rest) < 2 or not prefix:
        raise ValueError("nodeweave.remote.rsh: expected a pod name and a command after "
                         f"{RSH_MARK!r}, got {rest!r}")
    return [*prefix, rest[0], "--", *rest[1:]]


def main() -> None:
    try:
        argv = rewrite(sys.argv[1:])
    except ValueError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
    try:
        os.execvp(argv[0], argv)
    except OSError as err:
        print(f"nodeweave.remote.rsh: cannot run {argv[0]}: {err}", file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    main()
