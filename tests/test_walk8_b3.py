"""The eighth walk, part B, rows B45 down (issue 43): each row's class, one test per class, each failing on the code
before it."""

from __future__ import annotations

import os
import sys

import pytest

import cli_run
from nodeweave.errors import EXIT_USAGE
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)


def _explain(folder, env, *args):
    """``nodeweave-entrypoint --explain ARGS -- train.py`` in ``folder`` (which holds train.py), node 0 of 2."""
    (folder / "train.py").write_text("print('step 1')\n")
    path = f"{os.path.dirname(sys.executable)}:{cli_run.CLEAN['PATH']}"
    return cli_run.entrypoint("--explain", *args, "--", "train.py", cwd=str(folder),
                              env={**cli_run.CLEAN, "PATH": path, "HOME": home_beside(folder), "NODE_RANK": "0",
                                   "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1", **env})


# -- B45 (the rest is fix8b2's d71d96a4): an unreadable hostfile names its variable and its form ------------------

def test_b45_a_hostfile_that_cannot_be_read_names_the_variable_and_the_form(tmp_path):
    run = _explain(tmp_path, {"NODEWEAVE_HOSTFILE": str(tmp_path / "nothere")})
    assert run.returncode == EXIT_USAGE
    line = next(line for line in (run.stdout + run.stderr).splitlines() if "nothere" in line)
    assert "NODEWEAVE_HOSTFILE" in line and "accepted: a readable file of '<host> [slots=N]' lines" in line

# -- B42: README's and the manual's exit tables of the entrypoint list the same codes, those errors.py holds ------

def _exit_rows(text, heading):
    """{code: meaning} of the table under ``heading`` ("126 / 127" counts as both)."""
    import re

    lines = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = {}
    for line in lines[start:end]:
        match = re.match(r"^\| ([0-9 /]+) \| (.*) \|$", line)
        if match:
            for code in match.group(1).split("/"):
                rows[int(code)] = match.group(2)
    return rows


def test_b42_both_exit_tables_list_every_code_the_entrypoint_has():
    from nodeweave.entrypoint.errors import EXIT_CODES

    readme = _exit_rows((cli_run.REPO / "README.md").read_text(), "## Exit codes of `nodeweave-entrypoint`")
    manual = _exit_rows((cli_run.REPO / "docs" / "entrypoint.md").read_text(), "## Exit codes\n")
    assert set(readme) == set(manual) == set(EXIT_CODES), (sorted(readme), sorted(manual), sorted(EXIT_CODES))
    for rows in (readme, manual, EXIT_CODES):
        assert "full disk" in rows[1] and "launcher's own" in rows[1], rows[1]


def test_b42_the_codes_the_tables_promise_for_output_are_what_happens(tmp_path):
    closed = cli_run.popen([*cli_run.ENTRYPOINT, "--help"], stdout=__import__("subprocess").PIPE,
                           stderr=__import__("subprocess").PIPE, env=dict(cli_run.CLEAN))
    closed.stdout.close()  # the reader went away before a word: `--help | head -0`
    assert closed.wait(timeout=60) == 141 and closed.stderr.read() == ""
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            run = cli_run.entrypoint("--help", stdout=full, stderr=__import__("subprocess").PIPE,
                                     env=dict(cli_run.CLEAN))
        assert run.returncode == 1 and "cannot write the output to stdout" in cli_run.one_line(run.stderr)


# -- B41: a hint after `--url` names what applies without a spec: node 0's variable and a forward ----------------

@pytest.mark.parametrize("verb", [("top", "--once"), ("dashboard", "--port", "0")])
def test_b41_nothing_at_a_url_names_node_zeros_metrics_variable_not_a_spec_verb(tmp_path, verb):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    run = cli_run.nodeweave(verb[0], "--url", f"http://127.0.0.1:{port}", *verb[1:], cwd=str(tmp_path),
                            env=dict(cli_run.CLEAN, HOME=home_beside(tmp_path)), timeout=120)
    assert run.returncode != 0
    line = next(line for line in run.stderr.splitlines() if "nothing listens there" in line)
    assert "NODEWEAVE_METRICS_PORT" in line and "port-forward" in line and "nodeweave status" not in line, line


def test_b41_node_live_names_the_variables_that_apply_in_the_node():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = cli_run.entrypoint("--node", "live", "--port", str(port), env=dict(cli_run.CLEAN))
    assert run.returncode == 1 and "NODEWEAVE_METRICS=off" in run.stdout + run.stderr

