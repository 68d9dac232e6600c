"""The ``nodeweave`` command.

One typer app; each command group lives in its own module under
``nodeweave.cli`` and adds itself through ``register(app)``, so heavy
libraries are imported only by the command that needs them.
"""

from __future__ import annotations

import importlib
import sys

import typer

from nodeweave.errors import NodeweaveError

app = typer.Typer(
    name="nodeweave",
    help="Multi-node GPU training in containers from one cluster spec.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules, each with a ``register(app)`` function.
COMMAND_MODULES = [
    "bench",
    "doctor",
    "hosts",
    "image",
    "render",
    "sync",
    "variants",
]

for _name in COMMAND_MODULES:
    importlib.import_module(f"nodeweave.cli.{_name}").register(app)


def main(argv: "list[str] | None" = None) -> int:
    """Run the CLI; user errors print one message and exit with their code."""
    try:
        # with standalone_mode=False, a command's typer.Exit(code) comes back as the return value
        result = app(args=argv, standalone_mode=False)
    except NodeweaveError as err:
        typer.echo(f"nodeweave: error: {err}", err=True)
        return err.exit_code
    except typer.Exit as ex:
        return ex.exit_code
    except typer.Abort:
        typer.echo("nodeweave: aborted", err=True)
        return 130
    except Exception as err:  # click usage errors arrive here with standalone_mode=False
        import click

        # typer >= 0.22 vendors click as typer._click, whose errors are not click's
        vendored = getattr(getattr(typer, "_click", None), "exceptions", None)
        kinds = (click.ClickException,) + ((vendored.ClickException,) if vendored else ())
        if isinstance(err, kinds):
            err.show()
            return err.exit_code
        raise
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
