"""The ``nodeweave`` program's first lines: Ctrl-C while the command line loads exits 130, quietly; a dependency
missing from this Python (the wheel installed with ``--no-deps``) is one line and exit 3, not a traceback.

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
        try:
            from nodeweave.cli import main as cli_main
        finally:
            if loading is not None:
                _signal.signal(_signal.SIGINT, loading)
        try:
            code = cli_main()
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
    except ModuleNotFoundError as err:  # walk13 A26: the wheel installed --no-deps, an offline box
        said = missing_dependency(err, loaded="cli_main" in locals())
        if said is None:
            raise
        sys.stderr.write(f"nodeweave: error: {said}\n")
        code = EXIT_ENVIRONMENT
    _default_interrupt()
    return code


EXIT_ENVIRONMENT = 3  # nodeweave.errors' "the machine lacks something needed" (not imported: it may be what is missing)

# The modules of pyproject's [project] dependencies, each with its distribution (tests/test_walk13_fix14a.py holds
# the two lists equal): a verb that imports one late (jinja2 at render, python_on_whales at up) meets it missing there.
DEPENDENCY_MODULES = {"jinja2": "jinja2", "yaml": "PyYAML", "typer": "typer", "rich": "rich",
                      "python_on_whales": "python-on-whales"}


def missing_dependency(err: ModuleNotFoundError, loaded: bool = True) -> "str | None":
    """The line for a module of nodeweave's dependencies missing from this Python (a dependency's own dependency
    too, while the command line loads), naming the distribution, this Python and the fix; None: no such module (a
    bug of nodeweave's, left to its traceback)."""
    name = (err.name or "").split(".")[0]
    if not name or name == "nodeweave" or name in getattr(sys, "stdlib_module_names", ()):
        return None
    dist = DEPENDENCY_MODULES.get(name)
    if dist is None and loaded:
        return None
    fix = "install nodeweave with its dependencies (the wheel without --no-deps, or `make cli` in a checkout)"
    if dist is None:
        return (f"the command line needs the module {name} (a dependency of its dependencies), which this Python "
                f"lacks ({sys.prefix}): {fix}")
    wanted = _requirement(dist)
    return (f"the command line needs {dist}, which this Python lacks ({sys.prefix}): {fix}, or "
            f"{sys.executable} -m pip install '{wanted}'")


def _requirement(dist: str) -> str:
    """pyproject's requirement of ``dist`` as the installed nodeweave declares it (``typer>=0.29,<0.30``), else
    the name alone."""
    import re

    def key(text: str) -> str:
        return re.sub(r"[-_.]+", "-", text).lower()

    try:
        from importlib.metadata import requires

        declared = requires("nodeweave") or []
    except Exception:  # no metadata (a source checkout on PYTHONPATH): the name says enough
        declared = []
    for requirement in declared:
        spelled = re.split(r"[<>=!~;\[ (]", requirement, maxsplit=1)[0]
        if key(spelled) == key(dist) and "extra ==" not in requirement:
            return requirement.split(";")[0].strip()
    return dist


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
