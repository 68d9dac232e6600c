"""Walk 10, part B, rows B10..B23 but B18 (issue 43), each fixed as a class:

- a checkpoint folder inside one of the system's trees (/etc/ssh, /usr/lib/x) is refused by the one table the CLI's
  own folders are judged by (``systemfolders.SYSTEM_TREES``), on the spec's side and the entrypoint's (B21, B22).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import pytest

from cli_run import in_a_folder_with_train_py
from nodeweave.entrypoint import systemfolders
from nodeweave.errors import UsageError
from nodeweave.spec import parse_spec

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)
TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
RECOVERY = dict(TWO_NODES, NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1")
BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"

# a folder inside each of the system's trees, but the kernel's and nodeweave's (refused before, as FILLED)
INSIDE_TREES = [tree + "/ck" for tree in sorted(systemfolders.SYSTEM_TREES)]


@pytest.mark.parametrize("folder", INSIDE_TREES)
def test_a_folder_inside_a_system_tree_is_no_checkpoint_folder(folder):
    """B21, B22: `/etc/ssh`, `/usr/lib/x`, `/boot/ck` were taken as checkpoint folders while `--runs-dir` refused
    them; the plain value's rule (spec and entrypoint alike) refuses them by the same table."""
    problem = systemfolders.path_problem(folder)
    assert problem is not None and "inside" in problem
    assert systemfolders.path_problem("/" + folder.replace("/", "/./", 1)) == problem  # spelled //x/./y too


def test_the_cli_and_the_checkpoint_folder_share_one_table_of_system_trees():
    """B21: one rule, one table: the CLI's own folders (failures.own_folder_problem) read the entrypoint's."""
    from nodeweave import systemdirs

    assert systemdirs.SYSTEM_TREES is systemfolders.SYSTEM_TREES


@pytest.mark.parametrize("folder, said", [("/etc/ssh", "/etc/ssh is inside /etc"),
                                          ("/usr/./lib/x", "/usr/lib/x is inside /usr/lib"),
                                          ("/boot/ck", "/boot/ck is inside /boot")])
def test_the_entrypoint_refuses_a_checkpoint_dir_inside_a_system_tree(entrypoint, folder, said):
    """B21: NODEWEAVE_CHECKPOINT_DIR=/etc/ssh was taken (exit 0): the script would save into /etc/ssh."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(RECOVERY, NODEWEAVE_CHECKPOINT_DIR=folder))
    assert code == 2, err
    assert f"NODEWEAVE_CHECKPOINT_DIR: {said}" in err and "Traceback" not in err


@pytest.mark.parametrize("folder, said", [("/etc/ssh", "/etc/ssh is inside /etc"),
                                          ("/usr/lib/x", "/usr/lib/x is inside /usr/lib")])
def test_the_spec_refuses_a_checkpoint_dir_inside_a_system_tree(folder, said):
    """B22: `checkpoint_dir: /etc/ssh` was valid without even a note."""
    with pytest.raises(UsageError) as caught:
        parse_spec(BASE + f'recovery: {{enabled: true, spares: 1, checkpoint_dir: "{folder}"}}\n', "s.yaml")
    assert f"recovery.checkpoint_dir: {said}" in str(caught.value)


ELASTIC = {"NODEWEAVE_NNODES": "1:2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}


@pytest.mark.parametrize("extra, warned", [({}, True), ({"NODEWEAVE_MAX_RESTARTS": "3"}, False),
                                           ({"NODEWEAVE_LAUNCHER_OPTIONS": "--max-restarts 2"}, False)],
                         ids=["no-restarts", "max-restarts", "launcher-option"])
def test_an_elastic_plan_without_restarts_says_a_lost_node_ends_it(tmp_path, monkeypatch, extra, warned):
    """B20: NODEWEAVE_NNODES 1:2 without a restart count was explained as `the heartbeat stops every node (exit 5)`
    with no warning, while torchrun ended the job (exit 1) at the first lost node: the Faults row and a warning
    (`elastic-no-restarts`) say what happens, and what lets it go on with fewer nodes."""
    from nodeweave.entrypoint import make_plan
    from nodeweave.entrypoint.faults import fault_rows

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print(1)\n")
    plan = make_plan(["--", "train.py"], dict(ELASTIC, **extra))
    codes = [warning.code for warning in plan.warnings]
    assert ("elastic-no-restarts" in codes) is warned
    row = plan.faults["recovery"]["meaning"] if getattr(plan, "faults", None) else None
    meaning = row or fault_rows(_settings(dict(ELASTIC, **extra)), plan)["recovery"]["meaning"]
    assert "exit 5" not in meaning and "rendezvous" in meaning
    assert ("a lost node ends the job" in meaning) is warned


def _settings(env):
    from nodeweave.entrypoint import parse

    return parse(["--", "train.py"], env)
