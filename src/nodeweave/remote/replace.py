"""Writing a file on a node from stdin, replaced whole by one rename.

Nodes often share the folder a verb writes into (an NFS home, a Lustre
workspace), and every node's write of the same file lands at once: written
in place (`cat > FILE`), one node reads another's truncated file (CI saw
`up -t hosts` refuse its own compose/node.yaml as the team's: no header yet)
and a token or a stamp can be read half-written. Each write goes to a name
beside the file that is unique per host (`uname -n`) and process, then one rename
replaces the file, so a reader sees the old file or the new one, never a part.
"""

from __future__ import annotations


def replace_from_stdin(folder: str, name: str, before_rename: str = "") -> str:
    """Shell text writing stdin to ``folder/name`` (shell words, e.g. ``"$1"``) by one rename; ``before_rename``:
    a command run on the temporary file ``"$t"`` first (a chown). A failed write leaves the old file and no
    temporary one, exit 1."""
    then = f"{before_rename} && " if before_rename else ""
    return (f't={folder}/.{name}.nw-$(uname -n 2>/dev/null)-$$ && {{ cat > "$t" && {then}mv -f -- "$t" {folder}/{name}; }} '
            f'|| {{ rm -f -- "$t"; exit 1; }}')
