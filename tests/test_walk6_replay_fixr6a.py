"""Replay of walk 6 (issue 43), rows W16, W76, N6 and N7, each as a class.

W16: every refusal of a reserved variable ends with what to change instead, read from one table
(``reserved.instead``); a spec field it names must be a field the spec has (a test over the whole table).
"""

from __future__ import annotations

import json
import re

import pytest

from cli_run import in_process as run_cli
from nodeweave.entrypoint.planning.contract import SETTINGS
from nodeweave.entrypoint.planning.reserved import LAUNCHER_ENV, RESERVED_ENV, TORCHRUN_ENV, is_reserved
from nodeweave.entrypoint.planning.variables import KNOWN
from nodeweave.spec import parse_spec
from nodeweave.errors import UsageError

BASE = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
RESERVED = sorted({name for name in KNOWN if is_reserved(name)} | set(RESERVED_ENV) | set(TORCHRUN_ENV)
                  | set(LAUNCHER_ENV) | {row.variable for row in SETTINGS if row.variable})


def _field_exists(field: str) -> bool:
    """Whether ``field`` (dotted) is a key the spec reads: set to a placeholder, it is not an unknown key."""
    spec = {"name": "team", "image": {"variant": "cpu"}, "nodes": 2, "launcher": {"script": "train.py"}}
    *parents, leaf = field.split(".")
    where = spec
    for part in parents:
        where = where.setdefault(part, {})
    where[leaf] = 7
    try:
        parse_spec(json.dumps(spec))
    except UsageError as e:
        return "unknown key" not in str(e)
    return True


@pytest.mark.parametrize("name", RESERVED)
def test_every_refusal_names_a_field_that_exists(name):
    from nodeweave.entrypoint.planning.reserved import instead

    remedy = instead(name)
    assert "matching spec field" not in remedy
    fields = re.findall(r"set the spec's (.+?) instead", remedy)
    if not fields:
        assert remedy.startswith("no spec field sets"), (name, remedy)
    for found in fields:
        for field in found.split(" and "):
            assert _field_exists(field), (name, field)


def test_straggler_fault_says_what_the_spec_offers(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "nodeweave.yaml").write_text(BASE + "env: {NODEWEAVE_STRAGGLER_FAULT: '5'}\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "validate")
    assert code == 2 and "recovery.straggler_is_fault" in err and "matching spec field" not in err, err
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    code, out, err = run_cli(capsys, "run", "--dry-run", "-e", "NODEWEAVE_STRAGGLER_FAULT=5", "--", "train.py")
    assert code == 2 and "recovery.straggler_is_fault" in err and "matching spec field" not in err, err


# W76 and N6: the checkpoint folder is judged by one rule (``entrypoint.ownfolders.checkpoint_dir_problem``) in
# the spec (recovery.checkpoint_dir) and on a node (NODEWEAVE_CHECKPOINT_DIR), a link by where it leads, a file
# as a file.
def _workspace(tmp_path):
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / ".nodeweave").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "ckl").symlink_to(".nodeweave")
    (tmp_path / "ckr").symlink_to("runs")
    (tmp_path / "afile").write_text("not a folder\n")


JUDGED = [("train.py", "training script"), (".nodeweave", "nodeweave's own state"), ("runs", "run folders"),
          ("ckl", "a link to .nodeweave"), ("ckr", "a link to runs"), ("afile", "a file, not a folder")]


@pytest.mark.parametrize("folder,what", JUDGED)
def test_the_entrypoint_judges_the_checkpoint_folder_as_the_spec_does(tmp_path, folder, what):
    from cli_run import entrypoint

    _workspace(tmp_path)
    done = entrypoint("--explain", "--", "train.py", cwd=tmp_path,
                      env={"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2",
                           "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_RECOVERY": "on",
                           "NODEWEAVE_CHECKPOINT_DIR": folder})
    text = done.stdout + done.stderr
    assert done.returncode == 2 and "NODEWEAVE_CHECKPOINT_DIR" in text and what in text, text
    assert "not there yet" not in text


@pytest.mark.parametrize("folder,what", JUDGED)
def test_the_spec_judges_a_link_by_where_it_leads(tmp_path, monkeypatch, capsys, folder, what):
    _workspace(tmp_path)
    (tmp_path / "nodeweave.yaml").write_text(BASE + f"recovery: {{enabled: true, checkpoint_dir: {folder}}}\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "validate")
    assert code == 2 and "recovery.checkpoint_dir" in err and what in err, err


def test_a_folder_of_saves_and_a_link_to_one_are_taken(tmp_path, monkeypatch, capsys):
    from cli_run import entrypoint

    _workspace(tmp_path)
    (tmp_path / "saves").mkdir()
    (tmp_path / "ckpt").symlink_to("saves")
    for folder in ("ckpt", "saves", "fresh"):
        (tmp_path / "nodeweave.yaml").write_text(BASE + f"recovery: {{enabled: true, checkpoint_dir: {folder}}}\n")
        monkeypatch.chdir(tmp_path)
        code, out, err = run_cli(capsys, "validate")
        assert code == 0, err
        done = entrypoint("--explain", "--", "train.py", cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2",
                               "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_RECOVERY": "on",
                               "NODEWEAVE_CHECKPOINT_DIR": folder})
        assert done.returncode == 0, done.stdout + done.stderr


# N7: a launcher option nodeweave passes itself, given in the command before the script, would win over the plan
# (the launcher takes the last one): refused by the entrypoint and by `nodeweave run`, from one table
# (``launcher_options.command_clash``, the table the spec's launcher.options are judged by).
OWN_IN_COMMAND = [("torchrun", ["--nproc-per-node", "2", "train.py"], "gpus_per_node"),
                  ("torchrun", ["--nnodes=3", "train.py"], "nodes"),
                  ("torchrun", ["--log-dir", "logs", "--master-addr", "h", "train.py"], "--master-addr"),
                  ("torchrun", ["--standalone", "train.py"], "--standalone"),
                  ("deepspeed", ["--num_gpus=2", "train.py"], "gpus_per_node"),
                  ("accelerate", ["--num_processes", "4", "train.py"], "gpus_per_node")]
NODE_ENV = {"PATH": "/usr/bin:/bin", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1"}


@pytest.mark.parametrize("launcher,command,named", OWN_IN_COMMAND)
def test_the_entrypoint_refuses_an_option_it_sets_itself(tmp_path, launcher, command, named):
    from cli_run import entrypoint

    (tmp_path / "train.py").write_text("print('training')\n")
    done = entrypoint("--launcher", launcher, "--explain", "--", *command, cwd=tmp_path, env=NODE_ENV)
    text = done.stdout + done.stderr
    assert done.returncode == 2 and "which nodeweave passes" in text and named in text, text


def test_run_refuses_it_and_names_its_own_flag(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "--nproc-per-node", "2", "train.py")
    assert code == 2 and "gpus_per_node" in err and "nodeweave run --nproc-per-node 2 -- train.py" in err, err


@pytest.mark.parametrize("command", [["train.py", "--nnodes", "3"], ["-m", "pkg.mod", "--nnodes", "3"],
                                     ["--log-dir", "logs", "train.py", "--master-addr", "x"]])
def test_the_scripts_own_arguments_are_its_own(command):
    from nodeweave.entrypoint.planning.launcher_options import command_clash

    assert command_clash("torchrun", command) is None


def test_every_label_nodeweave_sets_names_what_sets_it():
    """W16's sibling: kubernetes.labels/annotations refused as nodeweave's own name the field that sets each."""
    from nodeweave.spec.sections.kubernetes import OWN_ANNOTATIONS, OWN_KEY_SET_BY, OWN_LABELS

    assert set(OWN_KEY_SET_BY) == set(OWN_LABELS) | set(OWN_ANNOTATIONS)
    for key, set_by in OWN_KEY_SET_BY.items():
        field = set_by[len("the spec's "):] if set_by.startswith("the spec's ") else None
        assert field or set_by.startswith("nodeweave alone"), (key, set_by)
        assert field is None or _field_exists(field), (key, field)


def test_a_label_refusal_names_its_field():
    with pytest.raises(UsageError) as refused:
        parse_spec(BASE + "kubernetes: {pod_labels: {kueue.x-k8s.io/queue-name: q}}\n")
    assert "kubernetes.queue sets this one" in str(refused.value) and "matching" not in str(refused.value)


def test_a_typed_launcher_names_the_field_from_the_same_table(tmp_path, monkeypatch, capsys):
    """N7's sibling: `run -- torchrun --master_port 1234 train.py` names the spec field from launcher_options'
    table, in any spelling the launcher takes (torchrun's abbreviation --master-p), not a table of its own."""
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "torchrun", "--master-p", "1234", "train.py")
    assert code == 2 and "is the spec's launcher.master_port" in err, err
