"""Walk 4 (issue 43), the entrypoint's side: each finding fixed as a class and walked here.

- a flag or variable that does nothing given the others is refused in one line naming both, exit 2 (F3-F5, F7,
  F35): ``--all``/``--stacks`` without ``--status``, ``--explain`` with ``--status``, ``--json`` without
  ``--explain``, ``--status`` with the exchange off, ``--wait-timeout`` with ``--no-wait``, profiler options
  without a profiler, straggler faults with the stall watch off (the last also a shared rule with the spec);
- every enumerated value's refusal names the bad value and the list ``--help`` shows (F6: ``--node``);
- ``--explain`` shows what the node does on a fault, each value with its source, in text and JSON (F2, F24);
- the spec and the entrypoint say the same of a 0 that switches off more than its own setting (F23);
- every ``nodeweave-entrypoint`` line of the docs that names a command runs as written (F27).

Each test fails on the main before these fixes. No container is started.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from nodeweave.entrypoint.nodeinfo import ACTIONS
from nodeweave.entrypoint.planning.contract import SETTINGS
from nodeweave.entrypoint.planning.settings import usage
from nodeweave.spec import parse_spec
from cli_run import entrypoint_in_process

REPO = Path(__file__).resolve().parents[1]
TWO_NODES = {"NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}
RECOVERY = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_MASTER_ADDR": "rec-0", "NODEWEAVE_RECOVERY": "on"}


@pytest.fixture
def entrypoint(tmp_path, monkeypatch, capsys):
    """``nodeweave-entrypoint ARGV`` in this process, in a folder holding train.py, with only ``env`` set:
    (exit code, stdout, stderr)."""
    (tmp_path / "train.py").write_text("print('hi')\n")
    os.symlink(REPO / "tests", tmp_path / "tests")  # the docs' --sysroot tests/fixtures/... lines
    os.symlink(REPO / "examples", tmp_path / "examples")  # the docs' `# make demo` line runs examples/train.py
    return entrypoint_in_process(tmp_path, monkeypatch, capsys)


IDLE = [
    (["--all", "--explain", "--", "train.py"], TWO_NODES, ("--all", "--status")),
    (["--stacks"], {}, ("--stacks", "--status")),
    (["--explain", "--no-wait", "--status", "--", "train.py"], TWO_NODES, ("--explain", "--status")),
    (["--status", "--nnodes", "2", "--master-addr", "127.0.0.1", "--exchange", "off"], {}, ("--status", "--exchange")),
    (["--status", "--no-wait"], TWO_NODES, ("--status", "--no-wait")),
    (["--status"], dict(TWO_NODES, NODEWEAVE_WAIT_TIMEOUT="0"), ("--status", "wait timeout 0")),
    (["--json", "--", "train.py"], TWO_NODES, ("--json", "--explain")),
    (["--no-wait", "--wait-timeout", "30", "--explain", "--", "train.py"], TWO_NODES, ("--wait-timeout", "--no-wait")),
    (["--explain", "--", "train.py"], dict(TWO_NODES, NODEWEAVE_PROFILE_OPTIONS="--stats"),
     ("NODEWEAVE_PROFILE_OPTIONS", "NODEWEAVE_PROFILE ")),
    (["--straggler-fault", "3", "--stall-warn", "0", "--explain", "--", "train.py"], TWO_NODES,
     ("--straggler-fault", "--stall-warn")),
    (["--explain", "--", "train.py"], dict(RECOVERY, NODEWEAVE_NODE_RANK="0", NODEWEAVE_STRAGGLER_IS_FAULT="on",
                                           NODEWEAVE_STALL_WARN="0"),
     ("NODEWEAVE_STRAGGLER_IS_FAULT", "NODEWEAVE_STALL_WARN")),
    (["--explain", "--", "train.py"], dict(RECOVERY, NODEWEAVE_NODE_RANK="0", NODEWEAVE_WAIT_TIMEOUT="0"),
     ("NODEWEAVE_WAIT_TIMEOUT", "NODEWEAVE_RECOVERY")),  # 0 switches the exchange off, as --exchange off does
]


@pytest.mark.parametrize("argv, env, names", IDLE, ids=[" ".join(a[:3]) for a, _, _ in IDLE])
def test_a_flag_that_does_nothing_given_the_others_is_refused_naming_both(entrypoint, argv, env, names):
    code, out, err = entrypoint(argv, env)
    assert code == 2, (argv, code, out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, (name, err)
    assert "accepted:" in err


def test_what_is_read_together_is_still_accepted(entrypoint):
    """The pairs that do something stay accepted: --explain --json, --explain --no-wait, and a container's
    NODEWEAVE_WAIT_TIMEOUT beside doctor's --no-wait (the environment's value is not the user's flag)."""
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], TWO_NODES)
    assert code == 0 and json.loads(out)["launch"], err
    code, out, err = entrypoint(["--no-wait", "--explain", "--", "train.py"], dict(TWO_NODES, NODEWEAVE_WAIT_TIMEOUT="30"))
    assert code == 0, err
    from nodeweave.entrypoint.planning.settings import parse

    assert parse(["--status", "--all", "--stacks"], {}).all_rows


def test_every_enumerated_value_refusal_names_the_value_and_the_list_help_shows(entrypoint):
    help_text = usage()
    node_line = next(line for line in help_text.splitlines() if line.strip().startswith("--node ACTION"))
    for action in ACTIONS:
        assert action in node_line, (action, node_line)
    for argv, bad in ((["--node", "bogus"], "'bogus'"), (["--node", ""], "''"), (["--node", "stop", "--rn", "x"],
                      "'--rn'"), (["--node", "live", "--port", "x"], "'x'"), (["--node", "report", "../../etc"],
                                                                          "'../../etc'")):
        code, out, err = entrypoint(argv)
        assert code == 2 and "Traceback" not in err and err.count("\n") == 1, (argv, code, err)
        assert bad in err, (argv, err)
    code, _, err = entrypoint(["--node", "bogus"])
    for action in ACTIONS:
        assert action in err, (action, err)
    # the flags with a closed list of values: the refusal names the value and every word --help lists
    for row in SETTINGS:
        listed = re.match(r"^(\w+(?: \(default\))?(?: \| \w+(?: \(default\))?)+)", row.help)
        if not listed:
            continue
        words = [w.replace(" (default)", "") for w in listed.group(1).split(" | ")]
        code, _, err = entrypoint([row.flag, "bogus", "--explain", "--", "train.py"], TWO_NODES)
        assert code == 2 and "'bogus'" in err, (row.flag, err)
        for word in words:
            assert word in err.split("accepted:", 1)[1], (row.flag, word, err)
        assert f"{row.flag} VALUE" in help_text


def test_explain_shows_what_the_node_does_on_a_fault_with_each_source(entrypoint):
    env = dict(RECOVERY, NODEWEAVE_SPARES="1", NODEWEAVE_CHECKPOINT_DIR="checkpoints")
    argv = ["--node-rank", "0", "--stall-timeout", "900", "--metrics-port", "9999", "--explain"]
    code, out, err = entrypoint(argv + ["--json", "--", "train.py"], env)
    assert code == 0, err
    faults = json.loads(out)["faults"]
    assert faults["recovery"]["value"] == "on" and faults["recovery"]["source"] == "NODEWEAVE_RECOVERY"
    assert faults["spares"]["value"] == 1 and faults["spares"]["source"] == "NODEWEAVE_SPARES"
    assert faults["checkpoint_dir"]["value"] == "checkpoints" and "not there yet" in faults["checkpoint_dir"]["meaning"]
    assert faults["recovery_max_restarts"] == {"value": 5, "source": "default",
                                               "meaning": "restarts of the whole job before exit 8"}
    assert faults["no_progress_restarts"]["value"] == 3 and faults["warm_start"]["value"] == "on"
    assert faults["stall_timeout"]["value"] == 900 and faults["stall_timeout"]["source"] == "flag --stall-timeout"
    meaning = faults["stall_timeout"]["meaning"]  # under recovery no exit 7 is promised (walk15b B12)
    assert "a fault for recovery" in meaning and "next generation starts" in meaning and "not exit 7" in meaning
    assert faults["stall_warn"]["value"] == 60 and faults["metrics"]["value"] == "on"
    assert faults["metrics_port"]["value"] == 9999 and faults["metrics_port"]["source"] == "flag --metrics-port"
    os.mkdir("checkpoints")
    code, text, err = entrypoint(argv + ["--", "train.py"], env)
    assert code == 0, err
    section = text.split("\nFaults\n", 1)[1].split("\n\n", 1)[0]
    for key in faults:
        assert re.search(rf"^  {key} +\S", section, re.M), (key, section)
    assert "none complete in" in section and "<- NODEWEAVE_CHECKPOINT_DIR" in section
    # recovery off: the section says a fault ends the job, and shows no recovery rows
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], TWO_NODES)
    faults = json.loads(out)["faults"]
    assert faults["recovery"]["value"] == "off" and "heartbeat stops every node" in faults["recovery"]["meaning"]
    assert "spares" not in faults and faults["stall_timeout"]["value"] == 600
    code, out, err = entrypoint(["--exchange", "off", "--explain", "--json", "--", "train.py"], TWO_NODES)
    assert "this node's launcher only" in json.loads(out)["faults"]["recovery"]["meaning"], out


def test_a_min_max_count_under_recovery_is_explained_as_recovery_runs_it(entrypoint):
    """``NODEWEAVE_NNODES=2:4`` under recovery is ``nodes: 4`` with ``recovery.min_nodes: 2``: generation 0 is a
    fixed job of 4 (not torchrun's elastic 2:4), and recovery goes on with as few as 2."""
    env = dict(TWO_NODES, NODEWEAVE_NNODES="2:4", NODEWEAVE_RECOVERY="on")
    del env["NNODES"]
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    assert code == 0, err
    plan = json.loads(out)
    argv = plan["launch"]["argv"]
    assert argv[argv.index("--nnodes") + 1] == "4" and "c10d" not in argv, argv
    nodes = plan["faults"]["nodes"]
    assert nodes["value"] == "2:4" and nodes["source"] == "NODEWEAVE_NNODES"
    assert "4 training nodes start" in nodes["meaning"] and "as few as 2" in nodes["meaning"]


def test_a_zero_that_switches_off_more_than_its_own_setting_is_said_on_both_sides(entrypoint, capsys):
    spec = parse_spec("name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py, stall_warn: 0}\n", "s.yaml")
    said = [note for note in spec.notes if note.startswith("launcher.stall_warn")]
    assert said and "launcher.stall_timeout" in said[0] and "600" in said[0], spec.notes
    with_timeout = parse_spec("name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py, stall_warn: 0, "
                              "stall_timeout: 0}\n", "s.yaml")
    assert not [note for note in with_timeout.notes if "stall" in note]  # 0 and 0: said outright, nothing to add
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], dict(TWO_NODES, NODEWEAVE_STALL_WARN="0"))
    plan = json.loads(out)
    assert code == 0, err
    assert any(w.startswith("NODEWEAVE_STALL_WARN: 0 switches") and "600" in w for w in plan["warnings"]), plan["warnings"]
    assert plan["faults"]["stall_timeout"]["meaning"].startswith("not applied")
    # the spec's refusal of the same pair under recovery, as the entrypoint's
    from nodeweave.errors import UsageError

    with pytest.raises(UsageError, match="recovery.straggler_is_fault.*launcher.stall_warn"):
        parse_spec("name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py, stall_warn: 0}\n"
                   "recovery: {enabled: true, straggler_is_fault: true}\n", "s.yaml")


def doc_entrypoint_lines():
    """(file, line, text) of every ``nodeweave-entrypoint`` line in a code block or span of the README and docs
    that names a command (after ``--``) and only explains: a line a reader pastes to look at a node."""
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        block, held = False, ""
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip().startswith("```"):
                block, held = not block, ""
                continue
            if block and line.rstrip().endswith("\\"):
                held += line.rstrip()[:-1] + " "
                continue
            pieces = [held + line] if block else re.findall(r"`([^`\n]+)`", line)
            held = ""
            for piece in pieces:
                text = piece.split("  #")[0].strip()
                text = text[2:] if text.startswith("$ ") else text
                if "nodeweave-entrypoint" in text and "--explain" in text and " -- " in text:
                    found.append((doc.name, number, text))
    return found


DOC_LINES = doc_entrypoint_lines()


def test_the_docs_show_entrypoint_lines():
    assert len(DOC_LINES) >= 3, DOC_LINES


@pytest.mark.parametrize("doc, number, text", DOC_LINES, ids=[f"{d}:{n}" for d, n, _ in DOC_LINES])
def test_every_doc_entrypoint_line_runs_as_written(entrypoint, doc, number, text):
    words = shlex.split(text)
    env = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "nodeweave-entrypoint", text
    code, out, err = entrypoint(words[1:], env)
    assert code == 0, f"{doc}:{number}: `{text}` exits {code}: {err or out[-400:]}"
