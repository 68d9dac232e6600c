"""Walk 5 (issue 43), the entrypoint's rows, each fixed as a class and walked here from the contract's own
registries where there is one (a new setting, option or word-list row is covered without editing this file):

- a single-valued flag given twice is refused naming both values, every row of ``contract.SETTINGS`` and each
  alias (W8);
- an empty item in every comma-list setting is refused, as a variable and as a flag (W40);
- every ``--node`` action's options are judged alike: empty, twice and bad values refused (W7);
- every refusal of a missing rank, node count or master names the variable that is set but empty (W6);
- the ports node 0 listens on are kept apart by the entrypoint wherever the spec keeps them, one node too (W30);
- a word-list setting's refusal shows an example of its own kind (W38);
- a variable named after a flag suggests that flag's variable (W39);
- ``--explain`` under recovery: a spare shows what it does, the heartbeat says what recovery does, the rank's
  source stays its identity's (W3, W4, W5);
- the stall report labels the flight recorder's ids apart from the watch's count (W45);
- a worker given a loopback master is warned, an IPv6 master is taken as an address (W47, W48).

Each test fails on the code before these fixes. No container is started.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodeweave.entrypoint.errors import UsageError
from nodeweave.entrypoint.nodeinfo import OPTIONS, check_arguments
from nodeweave.entrypoint.planning.contract import SETTINGS, list_text
from nodeweave.entrypoint.planning.settings import parse
from nodeweave.errors import NodeweaveError
from nodeweave.spec import parse_spec
from cli_run import in_a_folder_with_train_py

REPO = Path(__file__).resolve().parents[1]
TWO_NODES = {"NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}


entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)


def explained(entrypoint, env, *argv):
    """The ``--explain --json`` plan (its errors recorded, not raised)."""
    code, out, err = entrypoint(["--explain", "--json", *argv, "--", "train.py"], env)
    assert out, err
    return json.loads(out)


def refused(argv, env=None):
    with pytest.raises(UsageError) as caught:
        parse(argv, env or {})
    return str(caught.value)


@pytest.mark.parametrize("row", SETTINGS, ids=lambda row: row.key)
def test_every_single_valued_flag_given_twice_is_refused_naming_both_values(row):
    for first, second in [(row.flag, row.flag)] + [(alias, row.flag) for alias in row.aliases]:
        message = refused([f"{first}=one", second, "two", "--", "train.py"])
        assert "given twice" in message and "'one'" in message and "'two'" in message, message
        assert first in message and second in message, message


LIST_ROWS = [row for row in SETTINGS if row.text is list_text]
ITEMS = {"exchange_allow": ("nccl", "torch")}  # the items a list takes where any name will not do


def test_the_comma_list_rows_are_found():
    assert {row.key for row in LIST_ROWS} >= {"interfaces", "exclude_hcas", "exchange_allow"}


@pytest.mark.parametrize("row", LIST_ROWS, ids=lambda row: row.key)
@pytest.mark.parametrize("shape", ["{a},,{b}", "{a},", ",{a}", "{a}, ,{b}"])
def test_an_empty_item_of_every_comma_list_is_refused_as_variable_and_flag(row, shape):
    a, b = ITEMS.get(row.key, ("eth0", "lo"))
    text = shape.format(a=a, b=b)
    for argv, env, named in (([], {row.variable: text}, row.variable), ([row.flag, text], {}, row.flag)):
        message = refused([*argv, "--", "train.py"], env)
        assert "holds an empty item" in message and named in message and repr(text) in message, message
    assert parse([row.flag, f"{a},{b}", "--", "train.py"], {}).get(row.key) == [a, b]


GOOD = {"--run": "20261129T100000Z-team", "--grace": "5", "--port": "9464"}
BAD = {"--run": "../x", "--grace": "-1", "--port": "0"}


@pytest.mark.parametrize("action, name", [(a, n) for a, options in OPTIONS.items() for n in options])
def test_every_node_option_refuses_an_empty_a_repeated_and_a_bad_value(action, name):
    check_arguments([action, name, GOOD[name]])
    for args, said in (([name, ""], "empty value"), ([name, " "], "empty value"),
                       ([name, GOOD[name], name, GOOD[name]], "given twice"), ([name, BAD[name]], BAD[name]),
                       ([name], "needs a value")):
        with pytest.raises(UsageError) as caught:
            check_arguments([action, *args])
        assert said in str(caught.value) and name in str(caught.value), (args, str(caught.value))
    if name == "--grace":
        for bad in ("nan", "inf", "abc"):
            with pytest.raises(UsageError):
                check_arguments([action, name, bad])


# Each field a refusal says is missing, the variables that give it, and the rest of a two-node setting.
MISSING = {
    "master_addr": (["MASTER_ADDR", "NODEWEAVE_MASTER_ADDR", "PET_MASTER_ADDR"], {"NODE_RANK": "0", "NNODES": "2"}),
    "nnodes": (["NNODES", "NODEWEAVE_NNODES", "PET_NNODES"], {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1"}),
    "node_rank": (["NODE_RANK", "NODEWEAVE_NODE_RANK", "PET_NODE_RANK"], {"NNODES": "2", "MASTER_ADDR": "10.0.0.1"}),
}


@pytest.mark.parametrize("field, variable", [(f, v) for f, (names, _) in MISSING.items() for v in names])
def test_a_refusal_of_a_missing_value_names_its_variable_set_but_empty(entrypoint, field, variable):
    plan = explained(entrypoint, dict(MISSING[field][1], **{variable: ""}))
    messages = [e["message"] for e in plan["errors"]]
    assert messages and f"{variable} is set but empty" in messages[0], messages


PORTS = [  # (spec's launcher/metrics fields, the entrypoint's variables): the same clash
    ("launcher: {script: train.py}\nmetrics: {port: 29500}", {"NODEWEAVE_METRICS_PORT": "29500"}),
    ("launcher: {script: train.py}\nmetrics: {port: 29501}", {"NODEWEAVE_METRICS_PORT": "29501"}),
    ("launcher: {script: train.py, master_port: 30000}\nmetrics: {port: 30000}",
     {"NODEWEAVE_MASTER_PORT": "30000", "NODEWEAVE_METRICS_PORT": "30000"}),
    ("launcher: {script: train.py, exchange_port: 29500}", {"NODEWEAVE_EXCHANGE_PORT": "29500"}),
    ("launcher: {script: train.py, exchange_port: 31000}\nmetrics: {port: 31000}",
     {"NODEWEAVE_EXCHANGE_PORT": "31000", "NODEWEAVE_METRICS_PORT": "31000"}),
]


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("spec_text, variables", PORTS)
def test_the_entrypoint_keeps_node_0s_ports_apart_wherever_the_spec_does(entrypoint, nodes, spec_text, variables):
    with pytest.raises(NodeweaveError):
        parse_spec(f"name: j\nimage: {{variant: cpu}}\nnodes: {nodes}\n{spec_text}\n", "s.yaml")
    env = dict(variables, NODEWEAVE_NNODES=str(nodes), NODE_RANK="0", MASTER_ADDR="10.0.0.1")
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    plan = json.loads(out) if out else {"errors": [{"message": err}]}
    assert code != 0 or plan["errors"], plan.get("launch")
    assert "port" in (plan["errors"][0]["message"] if plan["errors"] else err), plan["errors"]


WORD_EXAMPLES = {"launcher_options": "--mixed_precision", "setup": "activate", "profile_options": "--trace"}


@pytest.mark.parametrize("row", [row for row in SETTINGS if row.key in WORD_EXAMPLES], ids=lambda row: row.key)
def test_a_word_list_refusal_shows_an_example_of_its_own_kind(row):
    assert {r.key for r in SETTINGS if getattr(r.read, "words", False)} == set(WORD_EXAMPLES)  # a new one: add it
    env = {row.variable: 'echo "x'}
    if row.key == "profile_options":
        env["NODEWEAVE_PROFILE"] = "nsys"
    message = refused(["--", "train.py"], env)
    others = [word for key, word in WORD_EXAMPLES.items() if key != row.key]
    assert WORD_EXAMPLES[row.key] in message and not any(word in message for word in others), message


def test_a_variable_named_after_a_flag_suggests_that_flags_variable():
    from nodeweave.entrypoint.planning.variables import unknown_lines

    named = [(row, "NODEWEAVE_" + row.flag.lstrip("-").replace("-", "_").upper()) for row in SETTINGS]
    named = [(row, name) for row, name in named if name != row.variable]
    assert named  # --rdzv-id reads NODEWEAVE_JOB_ID
    for row, name in named:
        (line,) = unknown_lines({name: "x"})
        assert f"did you mean {row.variable} ({row.flag})?" in line, line


RECOVERY = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_SPARES": "1"}


@pytest.mark.parametrize("identity", [0, 1, 2])
def test_under_recovery_explain_shows_what_each_role_runs(entrypoint, identity):
    env = dict(RECOVERY, POD_NAME=f"rec-{identity}")
    plan = explained(entrypoint, env)
    argv, topo = plan["launch"]["argv"], plan["topology"]
    assert argv[argv.index("--nnodes") + 1] == "2" and topo["world_size"] == 2, argv  # the training nodes
    assert {v["name"]: v["value"] for v in plan["env"]}["NNODES"] == "2"
    assert topo["platform"] == "hostname ordinal", topo["platform"]  # not "flags": recovery set those
    code, text, _ = entrypoint(["--explain", "--", "train.py"], env)
    heartbeat = next(line for line in text.splitlines() if line.strip().startswith("heartbeat"))
    assert "new generation" in heartbeat and "exit 5" not in heartbeat, heartbeat
    if identity == 2:
        assert plan["role"]["kind"] == "spare"
        assert "now    nothing: a spare waits" in text and "then   torchrun --nnodes 2" in text, text


def test_without_recovery_the_heartbeat_still_stops_every_node(entrypoint):
    code, text, _ = entrypoint(["--explain", "--", "train.py"], TWO_NODES)
    assert "heartbeat  on: a failure anywhere stops every node (exit 5)" in text, text


def test_the_stall_report_labels_the_flight_recorders_ids_apart_from_the_watchs_count():
    from nodeweave.entrypoint.stall import flight

    dump = json.dumps({"recorders": {"gloo": {"entries": [
        {"collective_seq_id": 10, "profiling_name": "gloo:all_reduce", "input_sizes": [[1]], "input_dtypes": ["Float"],
         "state": "completed", "time_created_ns": 1},
        {"collective_seq_id": 11, "profiling_name": "gloo:all_reduce", "input_sizes": [[1]], "input_dtypes": ["Float"],
         "state": "scheduled", "time_created_ns": 2}]}}})
    assert flight.summary(dump) == ("entered seq 11 gloo:all_reduce [[1]] Float (not completed, scheduled); "
                                    "completed seq 10 gloo:all_reduce [[1]] Float")
    sample = (REPO / "docs/stalls.md").read_text()
    assert "entered #" not in sample and "completed #" not in sample and "flight recorder #" not in sample
    assert "entered seq 11" in sample and "the #N above count" in sample


@pytest.mark.parametrize("master", ["localhost", "127.0.0.1", "::1"])
def test_a_worker_given_a_loopback_master_is_told(entrypoint, master):
    from nodeweave.entrypoint.detection.host import in_container
    from nodeweave.entrypoint.detection.sysfs import Root

    worker = explained(entrypoint, {"NODE_RANK": "1", "NNODES": "2", "MASTER_ADDR": master})
    said = [w for w in worker["warnings"] if "names this machine itself" in w] + \
        [e["message"] for e in worker["errors"] if "loopback" in e["message"]]
    assert said, (worker["warnings"], worker["errors"])
    if not in_container(Root("/"), os.environ):
        assert said[0].startswith(f"master address {master}") and "node 1 of 2" in said[0], said
    node0 = explained(entrypoint, {"NODE_RANK": "0", "NNODES": "2", "MASTER_ADDR": master})
    assert not [w for w in node0["warnings"] if "names this machine itself" in w]


def test_an_ipv6_master_is_an_address_not_a_name_waiting_for_dns(entrypoint):
    plan = explained(entrypoint, {"NODE_RANK": "1", "NNODES": "2", "MASTER_ADDR": "fd00::1"})
    assert "--local-addr" not in plan["launch"]["argv"], plan["launch"]["argv"]
    assert "IPv6 address" in plan["node"]["interface_reason"] and "DNS" not in plan["node"]["interface_reason"]
    bracketed = explained(entrypoint, {"NODE_RANK": "1", "NNODES": "2", "MASTER_ADDR": "[fd00::1]"})
    message = bracketed["errors"][0]["message"]
    assert "in brackets" in message and "(fd00::1)" in message and "holds a port" not in message, message


@pytest.mark.parametrize("launcher", ["torchrun", "deepspeed", "accelerate"])
def test_the_launcher_options_variable_obeys_the_spec_fields_rule(entrypoint, launcher):
    """Each option the spec's launcher.options refuses, the entrypoint's NODEWEAVE_LAUNCHER_OPTIONS refuses too
    (one table, launcher_options.py): an option of another launcher, and torchrun's own rendezvous switch."""
    from nodeweave.entrypoint.planning.launcher_options import NEVER

    foreign = {"torchrun": "--mixed_precision=bf16", "deepspeed": "--standalone",
               "accelerate": "--bind_cores_to_rank"}[launcher]
    for option in (foreign, *NEVER.get(launcher, ())):
        with pytest.raises(NodeweaveError):
            parse_spec(f"name: j\nimage: {{variant: cpu}}\nnodes: 2\nlauncher: {{script: train.py, type: {launcher}, "
                       f"options: ['{option}']}}\n", "s.yaml")
        env = dict(TWO_NODES, NODEWEAVE_LAUNCHER=launcher, NODEWEAVE_LAUNCHER_OPTIONS=option)
        errors = explained(entrypoint, env)["errors"]
        assert errors and option in errors[0]["message"], (option, errors)


@pytest.mark.parametrize("text, said", [("vm slots=1\nvm slots=1\n", "listed twice (line 1 too)"),
                                        ("# node 0\nvm\nother\nvm\n", "line 4: vm is listed twice (line 2 too)"),
                                        ("vm slots=0\nother slots=1\n", "(n: 1 or more)")])
def test_a_hostfile_that_names_a_host_twice_or_no_slots_is_refused_with_its_line(entrypoint, tmp_path, text, said):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(text)
    errors = explained(entrypoint, {"NODEWEAVE_HOSTFILE": str(hostfile)})["errors"]
    assert errors and said in errors[0]["message"] and str(hostfile) in errors[0]["message"], errors


def test_launcher_command_says_when_exec_would_not_find_the_program(entrypoint):
    def said(*command):
        code, out, err = entrypoint(["--explain", "--json", "--", *command], dict(TWO_NODES, NODEWEAVE_LAUNCHER="command"))
        return [w for w in json.loads(out)["warnings"] if w.startswith("launcher command execs")]

    assert "write ./train.py" in said("train.py", "--lr", "1")[0]  # a file here, not on PATH
    assert "not executable" in said("./train.py")[0]
    assert "not on PATH" in said("no-such-program-here")[0]
    assert said("true") == []
