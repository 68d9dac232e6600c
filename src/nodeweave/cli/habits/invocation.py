"""What this process was asked: the arguments of the call, and whether it is the ``nodeweave`` program.

Kept apart from ``nodeweave.cli`` so the verbs that read it (``render --check``'s memo, ``run --detach``, the
spec's finder) need not import the command line's root, which imports them.
"""

INVOKED: "list[str]" = []  # set by nodeweave.cli._main for each call
AS_PROGRAM: "list[bool]" = []  # set by nodeweave.cli.main() called as the program


def as_program() -> bool:
    """Whether this process is the ``nodeweave`` program (``main()`` without ``argv``), not a test or an embedding
    calling ``main(argv)``, which may have patched code in memory: ``render --check``'s memo is the program's only."""
    return bool(AS_PROGRAM)


def invoked_argv() -> "list[str]":
    """The arguments this call was given (after old spellings were upgraded): ``run --detach`` re-runs them."""
    return list(INVOKED)
