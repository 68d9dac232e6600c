"""fix20a (rows left by note17/note18 on the cluster command line): one test per class."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import cli_run

SRC = Path(__file__).resolve().parent.parent / "src" / "nodeweave"


def nodeweave(folder, *args: str, env=None) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=folder, env=env, timeout=120, stdin=subprocess.DEVNULL)


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_every_refused_number_is_said_as_typed(tmp_path):
    """note18 (fix19h): ``check --seconds 1500000 --timeout 1000000`` was refused as ``--seconds 1.5e+06 ... less
    than --timeout 1e+06`` (``:g``), where every click range says plain numbers: every refusal goes through
    ``quantities.plain_number``, and no refusal in src formats its number with ``:g``."""
    for argv, said in ((["check", "--seconds", "1500000", "--timeout", "1000000"],
                        "--seconds 1500000 is not accepted: less than --timeout 1000000"),
                       (["bench", "--timeout", "-2000000", "--dry-run"], "--timeout -2000000 is not accepted")):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and said in line and "e+0" not in line, (argv, done.stderr)
    refusals = [f"{path.relative_to(SRC)}: {text.strip()}" for path in SRC.rglob("*.py")
                for text in path.read_text().splitlines() if "not accepted" in text and re.search(r":g\}", text)]
    assert not refusals, refusals


def test_a_title_in_a_pipe_starts_at_column_0(tmp_path):
    """note18 (fix19h): in a pipe a table's rows end where their text does, but a centred title (``image
    variants``, ``doctor``'s, ``bench``'s) kept the spaces that centre it; every Table's title and caption start at
    column 0 off a terminal, and stay centred in one."""
    import io

    from rich.console import Console

    from nodeweave.tables import Table

    table = Table(title="a centred title", caption="a centred caption")
    table.add_column("a column that is wider than its title")
    table.add_row("x")
    for terminal in (False, True):
        out = io.StringIO()
        Console(file=out, force_terminal=terminal, width=100, color_system=None).print(table)
        lines = out.getvalue().splitlines()
        assert (lines[0].startswith("a centred title") and lines[-1].startswith("a centred caption")) is not terminal, \
            lines
    done = nodeweave(tmp_path, "image", "variants")
    assert done.returncode == 0 and done.stdout.startswith("nodeweave image variants"), done.stdout[:200]
