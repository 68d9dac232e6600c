"""The ``nodeweave`` command.

One typer app; each command group lives in its own module under
``nodeweave.cli`` and adds itself through ``register(app)``. Heavy libraries
(python-on-whales, the renderers' jinja2) are imported inside the command
that needs them, so ``--help`` and the other commands stay quick.
"""

from __future__ import annotations

import os
import sys

import typer

from nodeweave import __version__
from nodeweave.cli.habits.base import NodeweaveTyper
from nodeweave.errors import EXIT_USAGE, NodeweaveError

app = NodeweaveTyper(
    name="nodeweave",
    help="Multi-node GPU training in containers from one cluster spec.",
    no_args_is_help=True,
    add_completion=False,
)

# Command modules, each with a ``register(app)`` function.
from nodeweave.cli import (bench, check, cluster, doctor, execute, hosts, image, init, render, run,  # noqa: E402
                           runs, sync, variants)

COMMAND_MODULES = (init, bench, check, cluster, doctor, render, run, execute, runs, sync, hosts, image, variants)
for _module in COMMAND_MODULES:
    _module.register(app)


# `eval "$(_NODEWEAVE_COMPLETE=source_bash nodeweave)"` (source_zsh, source_fish): shell completion.
COMPLETE_VAR = "_NODEWEAVE_COMPLETE"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"nodeweave {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="print the version and exit"
    ),
) -> None:
    """Multi-node GPU training in containers from one cluster spec."""


def _click_error_line(err: Exception) -> "tuple[str, int] | None":
    """One line for a command-line parsing error, or None when ``err`` is not one.

    typer raises click's exceptions, or (typer >= 0.22) those of its vendored
    copy; both carry ``format_message()`` and ``exit_code``, so they are
    recognised by shape and click itself is never imported (nodeweave does not
    depend on it directly).
    """
    format_message = getattr(err, "format_message", None)
    exit_code = getattr(err, "exit_code", None)
    if not callable(format_message) or not isinstance(exit_code, int):
        return None
    message = " ".join(str(format_message()).split()).rstrip(".")
    ctx = getattr(err, "ctx", None)
    command = getattr(ctx, "command_path", None) or "nodeweave"
    if not message:  # no arguments at all: click has printed the help already
        return "", exit_code
    if exit_code == EXIT_USAGE:
        message = f"{message[:1].lower()}{message[1:]}; `{command} --help` lists what is accepted"
    return f"nodeweave: error: {message}", exit_code


_INVOKED: "list[str]" = []


def invoked_argv() -> "list[str]":
    """The arguments this call was given (after old spellings were upgraded): ``run --detach`` re-runs them."""
    return list(_INVOKED)


def main(argv: "list[str] | None" = None) -> int:
    """Run the CLI; user errors print one message and exit with their code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if COMPLETE_VAR in os.environ:  # the shell asks for completions: click's own mechanism, typer's shells
        from typer._completion_classes import completion_init

        completion_init()
    if argv[:1] in (["sync"], ["bench"]):
        from nodeweave.cli.habits.spellings import upgrade

        argv = upgrade(argv)
    if argv[:1] == ["bench"]:
        from nodeweave.cli.bench import upgrade_old_spelling

        argv = ["bench", *upgrade_old_spelling(argv[1:])]
    _INVOKED[:] = argv
    try:
        # with standalone_mode=False, a command's typer.Exit(code) comes back as the return value
        result = app(args=argv, prog_name="nodeweave", standalone_mode=False)
    except NodeweaveError as err:
        typer.echo(f"nodeweave: error: {err}", err=True)
        return err.exit_code
    except typer.Exit as ex:
        return ex.exit_code
    except OSError as err:  # a tool or path no verb checked first: still one line, never a traceback
        from nodeweave.failures import from_os_error

        problem = from_os_error(err)
        typer.echo(f"nodeweave: error: {problem}", err=True)
        return problem.exit_code
    except typer.Abort:
        typer.echo("nodeweave: aborted", err=True)
        return 130
    except Exception as err:  # click's usage errors arrive here with standalone_mode=False
        line = _click_error_line(err)
        if line is None:
            raise
        if line[0]:
            typer.echo(line[0], err=True)
        return line[1]
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
