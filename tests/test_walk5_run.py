"""walk5's findings in run, logs, runs, dashboard, top, bench, validate and the spec's env (issue 43,
/work/wt/walk5-report.md), each fixed as a class and walked here over every member this file could find, from
the CLI's own registries where there is one. Each test fails on the code before these fixes. No container is
started, nothing is probed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line

SRC = Path(__file__).resolve().parents[1] / "src" / "nodeweave"
SPEC = "name: proj\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    for name in list(__import__("os").environ):
        if name.startswith("NODEWEAVE_"):
            monkeypatch.delenv(name)
    return tmp_path


# -- W14: every NODEWEAVE_* variable the CLI reads, set but empty, is refused the same way ---------------------

# Named in the sources outside the entrypoint but never read by the `nodeweave` command on this machine.
NOT_READ_BY_THE_CLI = {
    "NODEWEAVE_JOB_TOKEN_HOST": "set in the compose file for the nodes",
    "NODEWEAVE_MODE": "set in the pods for the entrypoint",
    "NODEWEAVE_RUN_ANNOUNCE": "written by run --detach for its own child",
    "NODEWEAVE_SYNC_BIND": "read by the sync agent on a node",
}


def test_every_variable_the_cli_names_is_in_its_registry():
    """A new `X_ENV = "NODEWEAVE_..."` outside the entrypoint joins CLI_VARIABLES (or says why it is not read)."""
    from nodeweave.cli.habits.variables import CLI_VARIABLES

    named = set()
    for path in SRC.rglob("*.py"):
        if "entrypoint" not in path.relative_to(SRC).parts:
            named.update(re.findall(r'^[A-Z_]+ = "(NODEWEAVE_[A-Z_]+)"', path.read_text(), re.M))
    assert named - set(CLI_VARIABLES) - set(NOT_READ_BY_THE_CLI) == set()
    assert {"NODEWEAVE_IMAGE", "NODEWEAVE_ENGINE", "NODEWEAVE_SPEC", "NODEWEAVE_CACHE_DIR"} <= set(CLI_VARIABLES)


@pytest.mark.parametrize("argv", [("up", "--dry-run"), ("run", "--dry-run"), ("validate",)])
def test_a_cli_variable_set_but_empty_is_refused_naming_it(capsys, job_folder, monkeypatch, argv):
    from nodeweave.cli.habits.variables import CLI_VARIABLES

    for variable, accepted in CLI_VARIABLES.items():
        monkeypatch.setenv(variable, " ")
        code, out, err = run_cli(capsys, *argv)
        line = one_line(err)
        assert code == EXIT_USAGE and f"{variable} is set but empty: {accepted}" in line and not out, line
        monkeypatch.delenv(variable)
