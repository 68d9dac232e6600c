"""Old spellings still understood for one release, each with a note saying the new one.

Why: a short flag means one thing across every verb (``-t`` is ``--target``; ``-o`` is kept for
``-o json|yaml|wide``), so the verbs that used them otherwise lost them. Scripts written
for the old spelling keep working, and say what to change.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import typer

# verb -> {old short flag: (new long flag, since)}
RENAMED: Dict[str, Dict[str, Tuple[str, str]]] = {
    "sync": {"-t": ("--to", "-t is --target in every cluster verb")},
    "bench": {"-o": ("--json-out", "-o is kept for an output format")},
}


def upgrade(argv: List[str]) -> List[str]:
    """``argv`` with every old spelling before ``--`` replaced by the new one, a note on stderr for each."""
    if not argv or argv[0] not in RENAMED:
        return list(argv)
    verb, renamed = argv[0], RENAMED[argv[0]]
    out = [verb]
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "--":
            return out + argv[i:]
        if arg in renamed:
            new, why = renamed[arg]
            typer.echo(f"nodeweave: note: `{verb} {arg}` is now `{verb} {new}` ({why}); the old spelling goes in the "
                       "next release", err=True)
            arg = new
        out.append(arg)
    return out
