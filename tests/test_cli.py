"""The ``nodeweave`` command starts and answers --help."""

import subprocess
import sys

import cli_run
import pytest


def test_help_lists_commands():
    out = cli_run.run(
        [*cli_run.NODEWEAVE, "--help"]
    )
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout


def _nodeweave(*args):
    return cli_run.run([*cli_run.NODEWEAVE, *args])


def test_version_prints_the_package_version():
    from nodeweave import __version__

    out = _nodeweave("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"nodeweave {__version__}"


@pytest.mark.parametrize("args, needle", [
    (["--bogus"], "--bogus"),
    (["render", "--bogus"], "--bogus"),
    (["render", "all", "--spec"], "--spec"),
    (["no-such-command"], "no-such-command"),
    (["render", "everything"], "everything"),
])
def test_a_bad_command_line_is_one_line_and_exit_2(args, needle):
    """Whatever typer/click versions are installed: one line on stderr, exit 2, no traceback."""
    out = _nodeweave(*args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("nodeweave: error: ") and needle in lines[0]
    assert "--help" in lines[0] and "Traceback" not in out.stderr


def test_the_cli_does_not_import_click_itself():
    """click is typer's dependency, not nodeweave's: the CLI recognises its errors by shape."""
    import nodeweave.cli as cli

    source = open(cli.__file__).read()
    assert "import click" not in source
