"""Walk 8, part B, rows B1..B17 (issue 43): each row fixed as a class and walked here from the contract's own
registries where there is one, so a new row of the same kind is covered without editing this file.

- every number the entrypoint reads refuses a value below its bound naming that bound and what is accepted (B1);
- every number the entrypoint reads refuses white space at an end instead of stripping it (B2);
- the processes-per-node refusal names every word it takes, and torchrun's own words are read or explained (B6);
- Slurm's two rank sources, SLURM_NODEID and SLURMD_NODENAME's place in the node list, are weighed together (B3);
- every rank variable of the sources' table that is set but empty is named so in the refusal (B4);
- a malformed Slurm node list, or one naming a host twice, is refused naming its variable and the form taken (B5);
- every DNS rule a page or the init template names for a value is the rule the code applies to it (B7);
- a script a Python launcher would run with python that is no Python file (a shell script, a binary, a notebook)
  is refused before the wait, as a folder is (B11);
- a command that starts with an interpreter, a shell or a launcher, not a script, is refused naming the fix (B12);
- the step pattern node 0 reads is a row of --explain's Faults section (text and JSON), and a step group that can
  match more than digits is warned, by the entrypoint and by `nodeweave validate` alike (B16);
- a hostfile line in another tool's form (MPICH's host:N, Open MPI's max_slots=N alone) is refused naming the line
  and the form read, never taken as a host named 'gpu01:8' or with its count dropped (B8);
- a master port another program listens on is named by node 0 before any launch (a refusal through its own
  check-in, so every node exits 3 at once, told why; recovery's first check-in alike), and by --explain (B13, B14);
- a node that checks in after the start with a rank already in the job is named a duplicate, on node 0 and on
  the node turned away, with the right scope (this node exits 3, the job goes on) and no `None` count (B15);
- the checkpoint row never says "now: X" of a save a fault would not resume from, and --json says what a fault
  resumes from apart from the newest save there (B9); saves behind a link leading out of the folder are not
  counted as the folder's own, by the saves-before line as by the scan (B10);
- every option `nodeweave-entrypoint --help` lists, and every variable it names, has its row in entrypoint.md's
  "Options and variables" table (B17).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nodeweave.entrypoint.planning.contract import SETTINGS
from nodeweave.entrypoint.planning.slurm import NODELISTS
from nodeweave.entrypoint.planning.sources import RANK_NAMES
from cli_run import in_a_folder_with_train_py
from free_ports import free_port_pair
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}
entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)

# Every whole-number setting (the contract's rows read by read_int) and every number a rank source claims.
NUMBER_ROWS = [row.variable for row in SETTINGS if getattr(row.read, "__qualname__", "").startswith("read_int")]
NUMBERS = NUMBER_ROWS + ["NODEWEAVE_NNODES", "NNODES", "NODE_RANK", "NODEWEAVE_NODE_RANK", "MASTER_PORT",
                         "NODEWEAVE_MASTER_PORT", "NODEWEAVE_NPROC_PER_NODE", "NODEWEAVE_METRICS_PORT",
                         "NODEWEAVE_EXCHANGE_PORT"]


def problems(entrypoint, env):
    """Exit code and every refusal ``--explain --json`` records, or the one error line it ended with."""
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    if not out:
        return code, [line for line in err.splitlines() if line.strip()]
    return code, [e["message"] for e in json.loads(out)["errors"]]


def test_the_number_rows_are_found():
    assert {"NODEWEAVE_SPARES", "NODEWEAVE_WAIT_TIMEOUT", "NODEWEAVE_MAX_RESTARTS"} <= set(NUMBER_ROWS)


@pytest.mark.parametrize("value", ["-2", "0"])
def test_a_node_count_below_one_names_the_bound_and_what_is_accepted(entrypoint, value):
    code, messages = problems(entrypoint, dict(TWO_NODES, NODEWEAVE_NNODES=value))
    assert code == 2 and messages, messages
    assert "1 or more" in messages[0] and f"'{value}'" in messages[0] and "accepted:" in messages[0], messages
    assert "≥ 0" not in messages[0], messages


@pytest.mark.parametrize("variable", NUMBER_ROWS)
def test_every_number_setting_below_its_bound_says_what_is_accepted(entrypoint, variable):
    code, messages = problems(entrypoint, dict(TWO_NODES, **{variable: "-3"}))
    assert code == 2 and messages, messages
    assert variable in messages[0] and "or more" in messages[0] and "accepted:" in messages[0], messages


@pytest.mark.parametrize("variable", NUMBERS)
@pytest.mark.parametrize("shape", ["{} ", " {}", "{}\n"])
def test_white_space_around_every_number_is_refused_never_stripped(entrypoint, variable, shape):
    value = {"NODE_RANK": "0", "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "NNODES": "2",
             "NODEWEAVE_NPROC_PER_NODE": "1"}.get(variable, "30001")
    code, messages = problems(entrypoint, dict(TWO_NODES, **{variable: shape.format(value)}))
    assert code in (2, 3) and messages, messages
    refusal = next((m for m in messages if "white space at an end" in m), None)
    assert refusal is not None and variable in refusal and f"'{value}'" in refusal, messages


@pytest.mark.parametrize("flag, value", [("--nnodes", "2"), ("--node-rank", "0"), ("--master-port", "30001"),
                                         ("--nproc-per-node", "1")])
def test_white_space_around_every_topology_flag_is_refused_never_stripped(entrypoint, flag, value):
    code, out, err = entrypoint(["--explain", "--json", f"{flag}={value} ", "--", "train.py"], TWO_NODES)
    messages = [e["message"] for e in json.loads(out)["errors"]] if out else [err]
    assert code == 2 and any(flag in m and "white space at an end" in m for m in messages), messages


@pytest.mark.parametrize("value", ["x", "cpu", "AUTO", " auto", "0"])
def test_processes_per_node_refusals_name_auto(entrypoint, value):
    code, messages = problems(entrypoint, dict(TWO_NODES, NODEWEAVE_NPROC_PER_NODE=value))
    assert code in (2, 3) and messages, messages
    assert "auto" in messages[0].split("accepted:")[1], messages


def test_torchruns_gpu_word_is_read_as_one_process_per_usable_gpu(entrypoint):
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"],
                                dict(TWO_NODES, PET_NPROC_PER_NODE="gpu"))
    plan = json.loads(out)
    assert code == 0 and not plan["errors"], plan["errors"]


UNPLACED = {"NODEWEAVE_NNODES": "4"}  # a count, and no rank: the refusal lists the rank sources
SLURM = {"SLURM_JOB_ID": "99", "SLURM_JOB_NODELIST": "gpu[01-04]", "SLURM_STEP_NODELIST": "gpu[01-04]",
         "SLURM_NNODES": "4"}


@pytest.mark.parametrize("variable", [name for name in RANK_NAMES if " " not in name])
def test_every_rank_variable_set_but_empty_is_named_so(entrypoint, variable):
    """A rank source's variable set but empty is read as unset and said; the refusal of the missing rank is bad
    input then, exit 2 (walk15b B1: the user set it, to nothing), as a setting's empty variable is (walk12b B7)."""
    code, messages = problems(entrypoint, dict(UNPLACED, **{variable: ""}))
    assert code == 2 and messages, (code, messages)
    assert f"{variable} is set but empty" in messages[-1], messages


def test_slurm_nodeid_beside_another_nodes_name_is_refused_as_a_disagreement(entrypoint):
    code, messages = problems(entrypoint, dict(SLURM, SLURM_NODEID="2", SLURMD_NODENAME="gpu02"))
    assert code == 3 and "disagree" in messages[0] and "SLURMD_NODENAME=gpu02" in messages[0], messages
    code, messages = problems(entrypoint, dict(SLURM, SLURM_NODEID="1", SLURMD_NODENAME="gpu02"))
    assert code == 0 and not messages, messages
    code, messages = problems(entrypoint, dict(SLURM, SLURM_NODEID="1", SLURMD_NODENAME="gpu09"))
    assert code == 3 and "SLURM_NODEID=1 was carried" in messages[0], messages


@pytest.mark.parametrize("variable", NODELISTS)
@pytest.mark.parametrize("value, problem", [("gpu[04-01]", "descending range"), ("gpu[01-04", "unbalanced"),
                                            ("gpu[01-03,02]", "names gpu02 twice")])
def test_a_bad_slurm_node_list_names_its_variable_and_the_form_taken(entrypoint, variable, value, problem):
    env = {k: v for k, v in SLURM.items() if k not in NODELISTS}
    code, messages = problems(entrypoint, dict(env, SLURM_NODEID="1", **{variable: value}))
    assert code == 2 and messages, messages
    assert messages[0].startswith(f"{variable}={value!r}") and problem in messages[0], messages
    assert "accepted: Slurm's hostlist form" in messages[0], messages


DOCS = Path(__file__).resolve().parents[1] / "docs"
DNS_ROW = re.compile(r"^\| `(--[a-z-]+)` \| `(NODEWEAVE_[A-Z_]+)`[^|]*\|[^|]*?(DNS-\d+ (?:label|subdomain))", re.M)


def test_the_dns_rows_are_found():
    assert {flag for flag, _, _ in DNS_ROW.findall((DOCS / "entrypoint.md").read_text())} >= {"--service",
                                                                                             "--cluster-domain"}


@pytest.mark.parametrize("flag, variable, rule", DNS_ROW.findall((DOCS / "entrypoint.md").read_text()))
def test_every_dns_rule_the_options_table_names_is_the_one_applied(entrypoint, flag, variable, rule):
    code, messages = problems(entrypoint, dict(TWO_NODES, **{variable: "9Bad_name"}))
    assert code == 2 and messages and variable in messages[0], messages
    assert f"not a {rule}" in messages[0], (rule, messages)


def test_the_init_templates_name_comment_names_the_specs_rule():
    from nodeweave.cli.init import TEMPLATE
    from nodeweave.spec.rules import JOB_NAME

    said = re.search(r"^name: \{name\}  # (DNS-\d+ label)", TEMPLATE, re.M)
    assert said and JOB_NAME.accepted.startswith("a " + said.group(1)), said


SCRIPTS = {"train.sh": b"#!/bin/bash\npython train.py\n", "run.sh": b"python train.py\n",
           "binfile": b"\x7fELF\x02\x01\x01" + bytes(64), "notebook.ipynb": b'{"cells": []}\n',
           "job.pl": b"#!/usr/bin/perl\nprint 1;\n"}
PYTHON_FILES = {"ok.py": b"#!/usr/bin/env python3\nprint(1)\n", "plain": b"print(1)\n",
                "uv.py": b"#!/usr/bin/env -S uv run --script\nprint(1)\n"}


@pytest.mark.parametrize("launcher", ["torchrun", "deepspeed", "accelerate"])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_script_that_is_no_python_file_is_refused_before_the_wait(entrypoint, tmp_path, launcher, name):
    (tmp_path / name).write_bytes(SCRIPTS[name])
    code, out, err = entrypoint(["--", f"./{name}"], dict(TWO_NODES, NODEWEAVE_LAUNCHER=launcher))
    assert code == 2 and "which launcher" in err and "NODEWEAVE_LAUNCHER=command" in err, err
    assert "check-in" not in err, err


@pytest.mark.parametrize("name", sorted(PYTHON_FILES))
def test_a_python_file_and_the_command_launcher_are_left_alone(entrypoint, tmp_path, name):
    (tmp_path / name).write_bytes(PYTHON_FILES[name])
    code, out, err = entrypoint(["--explain", "--json", "--", name], TWO_NODES)
    assert code == 0 and not json.loads(out)["errors"], out
    (tmp_path / "train.sh").write_bytes(SCRIPTS["train.sh"])
    code, out, err = entrypoint(["--explain", "--json", "--", "./train.sh"], dict(TWO_NODES, NODEWEAVE_LAUNCHER="command"))
    assert code == 0 and not json.loads(out)["errors"], out


@pytest.mark.parametrize("first", ["python", "python3", "/usr/bin/python3.11", "bash", "sh", "env", "torchrun"])
def test_a_command_that_starts_with_a_program_is_refused_naming_the_fix(entrypoint, first):
    code, out, err = entrypoint(["--explain", "--json", "--", first, "train.py", "--lr", "1"], TWO_NODES)
    messages = [e["message"] for e in json.loads(out)["errors"]]
    assert code == 2 and messages and f"starts with {first!r}" in messages[0], messages
    assert "not in the working directory" not in messages[0], messages
    fix = "NODEWEAVE_LAUNCHER=command" if first in ("bash", "sh") else "-- train.py --lr 1"
    assert fix in messages[0], messages


def options_table():
    text = (DOCS / "entrypoint.md").read_text()
    start = text.index("| flag | variable | meaning |")
    return text[start:text.index("\n\n", start)]


def test_every_option_and_variable_of_the_help_has_its_row_in_the_table(entrypoint):
    code, out, err = entrypoint(["--help"])
    helped = out + err
    options = re.findall(r"^\s+(--[a-z][a-z-]*)", helped, re.M)
    variables = set(re.findall(r"\[(NODEWEAVE_[A-Z_]+)\]", helped))
    assert len(options) > 40 and len(variables) > 30, helped
    rows = [line.split("|")[1:3] for line in options_table().splitlines()[2:]]
    flags_column = " ".join(flag for flag, _ in rows)
    variables_column = " ".join(variable for _, variable in rows)
    assert [o for o in options if f"`{o}`" not in flags_column and f"`{o} " not in flags_column] == []
    assert sorted(v for v in variables if f"`{v}`" not in variables_column) == []


def test_the_step_pattern_is_a_row_of_the_plan_with_its_source(entrypoint):
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], TWO_NODES)
    row = json.loads(out)["faults"]["step_pattern"]
    assert row["source"] == "default" and "loggers" in row["meaning"], row
    given = dict(TWO_NODES, NODEWEAVE_STEP_PATTERN=r"iter=(?P<step>\d+)")
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], given)
    row = json.loads(out)["faults"]["step_pattern"]
    assert row == {"value": r"iter=(?P<step>\d+)", "source": "NODEWEAVE_STEP_PATTERN", "meaning": row["meaning"]}
    code, out, err = entrypoint(["--explain", "--", "train.py"], given)
    assert "step_pattern" in out and r"iter=(?P<step>\d+)" in out, out
    assert "can match more than digits" not in out + err


@pytest.mark.parametrize("pattern, body", [(r"step (?P<step>\w+)", r"\w+"), (r"it (.+) loss", ".+"),
                                           (r"s=(\S+)", r"\S+"), (r"s=([^ ]+)", "[^ ]+")])
def test_a_step_group_that_matches_more_than_digits_is_warned(entrypoint, pattern, body):
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"],
                                dict(TWO_NODES, NODEWEAVE_STEP_PATTERN=pattern))
    warned = [w for w in json.loads(out)["warnings"] if "can match more than digits" in w]
    assert code == 0 and len(warned) == 1 and f"'{body}'" in warned[0], json.loads(out)["warnings"]


def test_validate_warns_of_the_same_step_group(tmp_path):
    from cli_run import nodeweave

    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "nodeweave.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\n"
                                             "launcher: {script: train.py}\n"
                                             "metrics: {step_pattern: 'step (?P<step>\\w+)'}\n")
    done = nodeweave("validate", cwd=tmp_path)
    assert "metrics.step_pattern: its step group" in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("lines, said", [
    ("gpu01:8\nvm:8\n", "line 1: 'gpu01:8' is the host:N form"),
    ("gpu01 max_slots=8\nvm max_slots=8\n", "line 1: max_slots is not read"),
    ("gpu01 slots=2\nvm max_slots=4\n", "line 2: max_slots is not read"),
])
def test_a_hostfile_line_in_another_tools_form_is_refused_naming_it(entrypoint, tmp_path, lines, said):
    (tmp_path / "hosts").write_text(lines)
    code, messages = problems(entrypoint, {"NODEWEAVE_HOSTFILE": str(tmp_path / "hosts")})
    assert code == 2 and said in messages[0] and "slots=" in messages[0].split("accepted:")[1], messages


@pytest.mark.parametrize("lines", ["gpu01 slots=2 max_slots=8\nvm slots=2\n", "fd00::1\nvm\n"])
def test_open_mpis_bound_beside_slots_and_an_ipv6_host_are_read(entrypoint, tmp_path, lines):
    (tmp_path / "hosts").write_text(lines)
    code, messages = problems(entrypoint, {"NODEWEAVE_HOSTFILE": str(tmp_path / "hosts"), "NODE_RANK": "1"})
    assert not any("hostfile" in m for m in messages), messages




@pytest.fixture()
def busy_master_port():
    """A master port another program listens on (a leftover store, another job)."""
    import socket

    port = free_port_pair()
    listener = socket.socket()
    listener.bind(("127.0.0.1", port))
    listener.listen()
    yield port
    listener.close()


@pytest.mark.parametrize("recovery", [False, True])
def test_a_busy_master_port_refuses_the_job_on_every_node_at_once(tmp_path, busy_master_port, recovery):
    import os
    import sys
    import time

    from cli_run import ENTRYPOINT, popen

    (tmp_path / "train.py").write_text("print('never started')\n")
    nodes = 3 if recovery else 2
    base = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": home_beside(tmp_path),
            "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": "b13",
            "NODEWEAVE_WAIT_TIMEOUT": "30", "NODEWEAVE_MASTER_PORT": str(busy_master_port),
            "NODEWEAVE_METRICS": "off"}
    if recovery:
        (tmp_path / "ck").mkdir()
        base.update(NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR="ck")
    started = time.monotonic()
    procs = []
    for rank in range(nodes):
        (tmp_path / f"tmp{rank}").mkdir()
        procs.append(popen([*ENTRYPOINT, "--", "train.py"], cwd=tmp_path, stdout=-1, stderr=-2,
                           env=dict(base, NODE_RANK=str(rank), TMPDIR=str(tmp_path / f"tmp{rank}"))))
    outputs = [proc.communicate(timeout=60)[0] for proc in procs]
    assert time.monotonic() - started < 20, outputs  # not the 30 s deadline
    for rank, (proc, out) in enumerate(zip(procs, outputs)):
        assert proc.returncode == 3, (rank, out)
        assert f"master port {busy_master_port}" in out and "is in use on this node (node 0)" in out, (rank, out)
        assert "Traceback" not in out and "EADDRINUSE" not in out and "missing" not in out, (rank, out)


def test_a_busy_master_port_with_the_exchange_off_is_node_0s_own_refusal(entrypoint, busy_master_port):
    import os
    import sys

    env = dict(TWO_NODES, MASTER_ADDR="127.0.0.1", NODEWEAVE_MASTER_PORT=str(busy_master_port),
               NODEWEAVE_EXCHANGE="off", PATH=f"{os.path.dirname(sys.executable)}:/usr/bin:/bin")
    code, out, err = entrypoint(["--", "train.py"], env)
    assert code == 3 and f"master port {busy_master_port}" in err and "Traceback" not in err, err


def test_explain_on_node_0_warns_of_a_busy_master_port(entrypoint, busy_master_port, monkeypatch):
    import os
    import sys

    env = dict(TWO_NODES, MASTER_ADDR="127.0.0.1", NODEWEAVE_MASTER_PORT=str(busy_master_port),
               PATH=f"{os.path.dirname(sys.executable)}:/usr/bin:/bin")
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    warned = [w for w in json.loads(out)["warnings"] if "is in use on this node" in w]
    assert code == 0 and len(warned) == 1 and str(busy_master_port) in warned[0], json.loads(out)["warnings"]
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], dict(env, NODE_RANK="1"))
    assert not [w for w in json.loads(out)["warnings"] if "is in use on this node" in w]


def test_a_node_started_twice_is_turned_away_as_a_duplicate_and_the_job_goes_on(tmp_path):
    from recovery_harness import held_lines, start_twice

    script = ("import time, torch.distributed as dist\ndist.init_process_group('gloo')\n" + held_lines(tmp_path)
              + "for step in range(3):\n    time.sleep(0.2)\n    print(f'step {step} loss 0.1', flush=True)\n"
              "dist.destroy_process_group()\n")
    again, out, first, (node_0, node_1) = start_twice(tmp_path, "b15", script=script)
    assert again.returncode == 3 and "None" not in out and "every node exits" not in out, out
    assert "node rank 1 claimed twice" in out and "the job goes on" in out, out
    assert first[0].returncode == 0 and first[1].returncode == 0, (node_0, node_1)
    assert "turned away: node rank 1 claimed twice" in node_0, node_0


RECOVERY = dict(TWO_NODES, NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1")


def checkpoint_row(entrypoint, folder):
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"],
                                dict(RECOVERY, NODEWEAVE_CHECKPOINT_DIR=folder))
    return json.loads(out)["faults"]["checkpoint_dir"]


def test_the_checkpoint_row_never_says_now_of_a_save_no_fault_resumes_from(entrypoint, tmp_path):
    import torch

    (tmp_path / "ck").mkdir()
    for step in (100, 200, 300):
        torch.save({"step": step}, tmp_path / "ck" / f"ckpt_{step}.pt")
    row = checkpoint_row(entrypoint, "ck")
    assert row["scan"]["before_job"] is not None and row["scan"]["resume_from"] is None, row["scan"]
    assert "now: nothing this job saved yet" in row["meaning"], row["meaning"]
    assert "now: " + str(tmp_path / "ck" / "ckpt_300.pt") not in row["meaning"], row["meaning"]


def test_saves_behind_a_link_leading_out_are_not_the_folders_own(entrypoint, tmp_path):
    import torch

    (tmp_path / "other").mkdir()
    for step in (100, 200):
        torch.save({"step": step}, tmp_path / "other" / f"ckpt_{step}.pt")
    (tmp_path / "nested" / "ck2").mkdir(parents=True)
    (tmp_path / "nested" / "ck2" / "abs").symlink_to(tmp_path / "other")
    row = checkpoint_row(entrypoint, "nested")
    assert row["scan"]["before_job"] is None and "already holds" not in row["meaning"], row
    assert "a link leading out of the checkpoint folder" in row["meaning"], row["meaning"]
    from nodeweave.entrypoint.recovery.checkpoints import already_saved

    assert already_saved(tmp_path / "nested") is None
