"""A stand-in for ``ssh`` whose hosts are folders on this machine: the bare-hosts path without sshd.

Put on PATH as ``ssh`` by the tests (a two-line wrapper). It reads what
nodeweave's ssh remote writes, ``ssh [-o OPTION]... [-t] [-n] DEST -- COMMAND``,
and runs COMMAND with bash as a remote sshd would run it through the account's
shell: in the host's home folder ``$STANDIN_SSH_ROOT/<host>/`` (made on first
use), with ``HOME`` pointing there and the host's own variables added from
``$STANDIN_SSH_ROOT/hosts.json`` (``{"host": {"VAR": "value"}}``, e.g.
``NODEWEAVE_SYSROOT`` naming a captured sysfs tree, so each host shows its own
GPUs). stdin and the exit code pass through. Any other form is refused (exit
255, ssh's own failure), so a wrong call fails the test instead of passing. A
host named in ``$STANDIN_SSH_DOWN`` (comma list) does not answer (255).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def refuse(argv, why: str) -> None:
    print(f"ssh (stand-in): {why}: ssh {' '.join(argv)}", file=sys.stderr)
    sys.exit(255)


def parse(argv):
    """(destination, command text) of ``ssh [-o OPT]... [-t] [-n] DEST -- COMMAND``."""
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        if argv[i] == "-o" and i + 1 < len(argv):
            i += 2
        elif argv[i] in ("-t", "-n", "-T"):
            i += 1
        else:
            refuse(argv, f"option {argv[i]}")
    if i >= len(argv):
        refuse(argv, "no destination")
    dest, rest = argv[i], argv[i + 1:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if not rest:
        refuse(argv, "no command (an interactive login is not stood in for)")
    return dest, " ".join(rest)


def main(argv) -> None:
    dest, command = parse(argv)
    host = dest.rpartition("@")[2]
    if host in os.environ.get("STANDIN_SSH_DOWN", "").split(","):
        print(f"ssh: connect to host {host} port 22: No route to host", file=sys.stderr)
        sys.exit(255)
    root = Path(os.environ["STANDIN_SSH_ROOT"])
    home = root / host
    home.mkdir(parents=True, exist_ok=True)
    table = root / "hosts.json"
    own = json.loads(table.read_text()).get(host, {}) if table.is_file() else {}
    env = {**os.environ, "HOME": str(home), **own}
    sys.exit(subprocess.call(["bash", "-c", command], cwd=home, env=env))


if __name__ == "__main__":
    main(sys.argv[1:])
