"""The ``nodeweave`` program's first lines: Ctrl-C while the command line loads exits 130, quietly.

Why a module of its own: loading the command line (typer, click, the habits) takes the first
~90 ms of every call, before ``nodeweave.cli.main`` and click's own Ctrl-C handling exist, so a
Ctrl-C then printed a KeyboardInterrupt traceback. The console script starts here (pyproject's
``[project.scripts]``): this module imports nothing at its top, so the script is inside ``main``
within microseconds, and ``main`` loads the command line inside a guard. Once the command has
returned, a Ctrl-C ends the process as the signal does (no KeyboardInterrupt left to print).
"""

import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    # While the command line loads, a Ctrl-C ends the process at once: raised as KeyboardInterrupt it can
    # land in code that cannot pass it on (importlib's module-lock callbacks), which prints "Exception
    # ignored" with a traceback, and loading has nothing to clean up. The C module ``_signal`` sets the
    # handler: the public ``signal`` module imports ``enum`` first (~5 ms), itself a window for the same.
    import _signal

    try:
        loading = _signal.signal(_signal.SIGINT, _interrupted_while_loading)
    except ValueError:  # not the main thread (embedded): nothing of ours to guard
        loading = None
    try:
        from nodeweave.cli import main as cli_main
    finally:
        if loading is not None:
            _signal.signal(_signal.SIGINT, loading)
    try:
        code = cli_main()
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    _default_interrupt()
    return code


def _interrupted_while_loading(signum, frame) -> None:
    import os

    os._exit(EXIT_INTERRUPTED)


def _default_interrupt() -> None:
    """From here to the process's end, SIGINT does what it does to any program: end it, silently."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    except ValueError:  # not the main thread (embedded): nothing of ours to guard
        pass


if __name__ == "__main__":
    sys.exit(main())
