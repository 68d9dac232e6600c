"""``nodeweave exec -- CMD`` on two real podman containers: prefixed output, every exit code collected."""

from __future__ import annotations

import json
import sys

import cli_run
import pytest
from marked_nodes import marked_nodes, two_node_spec

pytestmark = pytest.mark.engine

SPEC = two_node_spec("nwexec")


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """Two containers named as the spec's local nodes (nwexec-0, nwexec-1), carrying the mark this folder's
    ``up`` puts on its containers (exec acts only on those), removed afterwards."""
    folder = tmp_path_factory.mktemp("exec")
    (folder / "nodeweave.yaml").write_text(SPEC)
    with marked_nodes(folder, "nwexec"):
        yield folder


def nodeweave(folder, *args):
    return cli_run.run([*cli_run.NODEWEAVE, *args], cwd=folder, timeout=120)


def test_every_node_runs_it_and_lines_are_prefixed(nodes):
    done = nodeweave(nodes, "exec", "--engine", "podman", "--", "hostname")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("[node-0]") and line.endswith("nwexec-0") for line in lines), done.stdout
    assert any(line.startswith("[node-1]") and line.endswith("nwexec-1") for line in lines), done.stdout
    assert "2 node(s): all exit 0" in done.stdout


def test_every_exit_code_is_collected_and_failures_named(nodes):
    script = 'echo "on $(hostname)"; [ "$(hostname)" = nwexec-0 ] || exit 7'
    done = nodeweave(nodes, "exec", "--engine", "podman", "--json", "--", "sh", "-c", script)
    assert done.returncode == 1
    codes = {n["node"]: n["exit_code"] for n in json.loads(done.stdout)["nodes"]}
    assert codes == {"node-0": 0, "node-1": 7}
    assert "1 of 2 node(s) failed: node-1 exit 7 (on nwexec-1)" in done.stderr


def test_options_after_the_dashes_reach_the_command(nodes):
    done = nodeweave(nodes, "exec", "--engine", "podman", "--node", "1", "-e", "GREETING=hi", "--",
                     "sh", "-c", 'echo "$GREETING --dry-run"')
    assert done.returncode == 0, done.stderr
    assert "[node-1]" in done.stdout and "hi --dry-run" in done.stdout and "[node-0]" not in done.stdout


def test_a_timeout_kills_and_names_the_slow_node(nodes):
    done = nodeweave(nodes, "exec", "--engine", "podman", "--timeout", "3", "--", "sh", "-c",
                     '[ "$(hostname)" = nwexec-0 ] || sleep 60')
    assert done.returncode == 124  # timeout(1)'s exit (left11b, walk10 C4)
    assert "1 of 2 node(s) timed out: ended on node-1" in done.stderr and "node-0" not in done.stderr, done.stderr
