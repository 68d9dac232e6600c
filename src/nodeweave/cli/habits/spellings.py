"""Old spellings still understood for one release, each with a note saying the new one.

Why: a short flag means one thing across every verb (``-t`` is ``--target``; ``-o`` is kept for
``-o json|yaml|wide``), and every verb picks nodes with ``--node`` (``nodeweave.cli.habits.nodes``),
so the verbs that spelled these otherwise lost those spellings. Scripts written for the old
spelling keep working, and say what to change: ``note_renamed`` is the one line they print.
``bench -o PATH`` (the old ``--json-out``) is not among them any more: ``-o`` selects an output
format on every verb, so ``bench -o json`` prints JSON and never writes a file named ``json``.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import typer

# verb -> {old short flag: (new long flag, since)}
RENAMED: Dict[str, Dict[str, Tuple[str, str]]] = {}
NODE_NOTE = "every verb picks nodes with --node"


def note_renamed(old: str, new: str, why: str = NODE_NOTE) -> None:
    """The one-line note an old spelling prints: what to type now, and when the old one goes."""
    typer.echo(f"nodeweave: note: `{old}` is now `{new}` ({why}); the old spelling goes in the next release",
               err=True)


def upgrade(argv: List[str]) -> List[str]:
    """``argv`` with every old spelling before ``--`` replaced by the new one, a note on stderr for each."""
    if not argv or argv[0] not in (*RENAMED, "sync"):
        return list(argv)
    verb, renamed = argv[0], RENAMED.get(argv[0], {})
    out = [verb]
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "--":
            return out + argv[i:]
        if verb == "sync" and out[-1] == "-t" and ":" in arg:  # sync -t KIND:NAME: the old --to
            note_renamed(f"sync -t {arg}", f"sync --node {arg}", "-t is --target in every verb, " + NODE_NOTE)
            out[-1] = "--node"
        elif arg in renamed:
            new, why = renamed[arg]
            note_renamed(f"{verb} {arg}", f"{verb} {new}", why)
            arg = new
        out.append(arg)
    return out
