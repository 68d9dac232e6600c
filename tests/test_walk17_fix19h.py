"""fix19h (walk17a rows 2, 6, 11, 20, 24, 26, 28, 30): one rule for each kind of value on every option and spec
field, and the output habits of the tools users know; one test per class."""

from __future__ import annotations

import subprocess

import cli_run


def nodeweave(folder, *args: str, env=None) -> "subprocess.CompletedProcess[str]":
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=folder, env=env, timeout=120, stdin=subprocess.DEVNULL)


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_number_ranges_are_said_in_numbers_a_user_types(tmp_path):
    """walk17a A6: a float option's range ended in ``1e+09``, Python's repr of its ceiling, and a refused
    ``2000000000`` was said as ``2e+09``: no one typed either."""
    for argv, said in ((["top", "--interval", "0.1"], "--interval 0.1 is not accepted: 0.2 to 1000000000"),
                       (["exec", "--timeout", "0", "--", "hostname"], "--timeout 0 is not accepted: 0.1 to 1000000000"),
                       (["dashboard", "--interval", "2000000000"],
                        "--interval 2000000000 is not accepted: 0.2 to 1000000000"),
                       (["run", "--grace", "-1", "--dry-run"], "--grace -1 is not accepted: 0 to 1000000000")):
        done = nodeweave(tmp_path, *argv)
        line = one_line(done.stderr)
        assert done.returncode == 2 and said in line and "e+09" not in line, (argv, done.stderr)
