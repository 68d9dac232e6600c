"""Walk14b rows B1, B2, B3, B19, B10, B5, B17 (issue 43): fixed in fix16d."""

import pytest

from nodeweave.entrypoint.errors import UsageError as EntrypointUsage
from nodeweave.entrypoint.planning import shared_rules
from nodeweave.entrypoint.planning.contract import BY_KEY
from nodeweave.entrypoint.planning.settings import parse

NODE = {"MASTER_ADDR": "10.0.0.1", "NODE_RANK": "0", "NODEWEAVE_NNODES": "2"}


def _text(key, value):
    row = BY_KEY[key]
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ",".join(value)
    text = row.text(value) if row.text else None
    return text if text is not None else str(value)


def _refusal(env, argv):
    with pytest.raises(EntrypointUsage) as caught:
        parse([*argv, "--", "t.py"], dict(NODE, **env))
    return str(caught.value)


# every bad example of every shared rule, each switch it turns ON given as a flag, every other setting as its
# variable: the variables meet the rule the flags meet (a flag turning a switch OFF over the environment leaves
# the environment's variables be, by design: `nodeweave check` runs a recovery job's nodes with --recovery off)
SWITCH_ON = [(rule.check.__name__, bad) for rule in shared_rules.RULES for bad in rule.bad
             if any(bad.get(switch) is True for switch in shared_rules.SWITCHED)]


@pytest.mark.parametrize("name, bad", SWITCH_ON, ids=[f"{n}-{'-'.join(map(str, b.values()))}" for n, b in SWITCH_ON])
def test_a_variable_is_judged_as_its_flag_is_when_a_flag_turns_its_switch_on(name, bad):
    """B1, B2: NODEWEAVE_SPARES=5000 (and the two restart counts out of range, and the brake above the budget)
    was taken beside --recovery on, refused as a flag: a flag turning a switch on dropped the variables its
    switch governs from every rule."""
    argv, env = [], {}
    for key, value in bad.items():
        if key in shared_rules.SWITCHED and value is True:
            argv += [BY_KEY[key].flag, "on"]
        else:
            env[BY_KEY[key].variable] = _text(key, value)
    offender = next(p.key for p in shared_rules.problems(bad, set(bad), shared_rules.Naming(str)))
    message = _refusal(env, argv)
    named = BY_KEY[offender].flag if BY_KEY[offender].flag in argv else BY_KEY[offender].variable
    assert message.startswith(f"{named}: ") and "; accepted: " in message, message


@pytest.mark.parametrize("env, argv, names", [
    ({"NODEWEAVE_SPARES": "5000"}, ["--recovery", "on"], "NODEWEAVE_SPARES: 5000 is out of range"),
    ({"NODEWEAVE_NO_PROGRESS_RESTARTS": "9"}, ["--recovery", "on", "--recovery-max-restarts", "2"],
     "NODEWEAVE_NO_PROGRESS_RESTARTS: 9 is above --recovery-max-restarts 2"),
])
def test_the_walkers_recovery_variables_beside_recovery_on_are_refused(env, argv, names):
    """B1, B2: the walker's own commands."""
    message = _refusal(dict(env, NODEWEAVE_CHECKPOINT_DIR="ck", NODEWEAVE_SPARES=env.get("NODEWEAVE_SPARES", "1")),
                       argv)
    assert message.startswith(names), message


# the exchange's three ways off (shared_rules.switch_off), each as a variable and as a flag; every setting the
# exchange governs (shared_rules.SWITCHED["exchange"]) given as a flag or, under a variable's way off, a variable
EXCHANGE_OFF = [({"NODEWEAVE_EXCHANGE": "off"}, []), ({"NODEWEAVE_WAIT_TIMEOUT": "0"}, []),
                ({}, ["--exchange", "off"]), ({}, ["--wait-timeout", "0"]), ({}, ["--no-wait"])]
GOVERNED = {"exchange_port": "30000", "exchange_allow": "nccl", "exchange_bind": "route", "straggler_fault": "5",
            "metrics": "on", "metrics_port": "9500"}


def test_the_governed_table_is_the_products():
    assert set(GOVERNED) == set(shared_rules.SWITCHED["exchange"])


@pytest.mark.parametrize("off_env, off_argv", EXCHANGE_OFF, ids=lambda v: "-".join(v) if isinstance(v, list) else
                         "-".join(f"{k}={x}" for k, x in v.items()))
@pytest.mark.parametrize("key", sorted(GOVERNED))
def test_a_setting_of_the_exchange_is_refused_whichever_way_the_exchange_is_off(off_env, off_argv, key):
    """B3: --straggler-fault 5 --no-wait and NODEWEAVE_WAIT_TIMEOUT=0 --straggler-fault 5 were taken (only the
    exchange's switch was weighed, not its other two ways off); the variable, under a variable's way off."""
    row = BY_KEY[key]
    value = GOVERNED[key]
    message = _refusal(off_env, off_argv + [row.flag, value])
    assert message.startswith(f"{row.flag}: ") and "does nothing with" in message, message
    if off_env:
        message = _refusal(dict(off_env, **{row.variable: value}), off_argv)
        assert message.startswith(f"{row.variable}: ") and "does nothing with" in message, message


def test_a_flag_turning_the_exchange_off_over_the_environment_shows_its_straggler_count_unused():
    """B3: with --exchange off over a container's NODEWEAVE_STRAGGLER_FAULT=5 (the environment's, left be as
    `nodeweave check`'s --recovery off leaves NODEWEAVE_SPARES), --explain's row promised a STRAGGLER FAULT after 5
    checks that nothing makes."""
    from nodeweave.entrypoint.faults import _stall_rows

    for argv in (["--exchange", "off"], ["--no-wait"], ["--wait-timeout", "0"]):
        settings = parse([*argv, "--", "t.py"], dict(NODE, NODEWEAVE_STRAGGLER_FAULT="5"))
        row = dict(_stall_rows(settings, False))["straggler_fault"]
        assert row["value"] == 0 and "NODEWEAVE_STRAGGLER_FAULT 5 not used" in row["source"], row
        assert row["meaning"].startswith("never: the check-in exchange is off"), row


entrypoint = pytest.fixture(__import__("cli_run").in_a_folder_with_train_py)

RECOVERING = {"NODEWEAVE_NNODES": "3", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_RECOVERY": "on",
              "NODEWEAVE_SPARES": "1", "NODEWEAVE_CHECKPOINT_DIR": "ck"}


@pytest.mark.parametrize("rank", ["0", "3"])  # node 0, and the spare
@pytest.mark.parametrize("name", ["NNODES", "PET_NNODES"])
@pytest.mark.parametrize("count, verdict", [("4", "agrees"), ("3", "taken"), ("7", "refused")])
def test_a_platform_count_beside_the_training_count_is_weighed_against_recovery_s_containers(entrypoint, rank, name,
                                                                                              count, verdict):
    """B19: NNODES=7 beside NODEWEAVE_NNODES=3 and 1 spare was overridden behind a warning (refused without
    recovery), NNODES=4 (every container, as the docs read NNODES under recovery) warned as overridden. A count
    read as every container (COUNTS_CONTAINERS) must be nodes + spares; a plain NNODES may also be the training
    count, which `nodeweave up`'s compose and hosts targets write beside NODEWEAVE_NNODES."""
    if name == "PET_NNODES" and verdict == "taken":
        verdict = "refused"  # torchrun's PET_* count is Kubeflow's numNodes: every container
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(RECOVERING, NODE_RANK=rank, **{name: count}))
    if verdict == "refused":
        assert code == 3 and f"node count sources disagree: {name}={count} but recovery's containers are 4" in out, out
    else:
        assert code == 0, out + err
        assert "overrides" not in out, out
        assert (f"{name}={count} agrees with recovery's containers, 4" in out) == (verdict == "agrees"), out


@pytest.mark.parametrize("answer, said", [
    ({"phase": "gathering", "waiting": {"expected": 4, "checked_in": 1, "regather": False},
      "nodes": [{"own": True, "fp": {"faults": {"stall_warn": 60}}}]},
     "no stacks: no rank runs yet (node 0 is gathering: 1 of 4 nodes in)"),
    ({"phase": "gathering", "waiting": {"expected": 3, "checked_in": 2, "regather": True}},
     "no stacks: no rank runs yet (node 0 is regathering after a fault: 2 of 3 nodes in)"),
    ({"phase": "running", "nodes": [{"own": True, "fp": {"faults": {"stall_warn": 0}}}]},
     "no stacks: the stall watch is off for this job (stall_warn 0)"),
    ({"phase": "running", "nodes": [{"own": True, "fp": {"faults": {"stall_warn": 60}}}]},
     "no stacks: node 0 watches no ranks"),
    ({"phase": "running", "ranks": {"ranks": []}, "nodes": [{"own": True, "fp": {"faults": {"stall_warn": 60}}}]},
     "no stacks: no rank has reported"),
])
def test_no_stacks_says_the_reason_node_0_s_answer_gives(answer, said):
    """B17: `--status --stacks` said "the stall watch is off for this job" for every empty answer, of a job whose
    watch was on (stall_warn 60) and whose node 0 was still gathering."""
    from nodeweave.entrypoint.checkin import session

    assert hasattr(session, "no_stacks"), "the reason is read off the answer"
    assert session.no_stacks(answer).startswith(said)


@pytest.mark.parametrize("argv", [["--master-addr", "127.0.0.1", "--node", "status"], ["--node=status", "--explain"],
                                  ["--explain", "--node", "status"], ["--explain", "--node=status"]])
def test_node_after_another_option_is_refused_as_first_argument_only(entrypoint, argv):
    """B5: `--node status` after another option was "unknown option '--node' (did you mean --nnodes?)": a real,
    documented option, read only as the first argument, is named so (every option read in one place only is:
    settings.FIRST_ONLY), never unknown."""
    if argv[0].startswith("--node="):
        argv = argv[::-1]
    code, out, err = entrypoint(argv)
    assert code == 2 and "--node must be the first argument" in err and "unknown option" not in err, err


def test_node_equals_action_first_is_node_action(entrypoint, tmp_path):
    """B5: `--node=ready` as the first argument, as every other option takes `--opt=value`."""
    code, out, err = entrypoint(["--node=ready"], {"TMPDIR": str(tmp_path)})
    assert code in (0, 1) and '"schema": "nodeweave.node/1"' in out, out + err


STATUS_UNREAD = [("--node-rank", "4"), ("--launcher", "deepspeed"), ("--metrics-port", "9500"),
                 ("--spares", "7"), ("--stall-warn", "30"), ("--interfaces", "eth0"), ("--nproc-per-node", "2")]


def test_the_unread_flags_are_outside_the_products_table():
    from nodeweave.entrypoint.planning.contract import BY_FLAG
    from nodeweave.entrypoint.planning.settings import STATUS_READS

    assert not {BY_FLAG[flag].key for flag, _ in STATUS_UNREAD} & set(STATUS_READS)


@pytest.mark.parametrize("flag, value", STATUS_UNREAD)
def test_a_flag_status_does_not_read_is_refused_beside_it(flag, value):
    """B10: `--status --nnodes 9 --node-rank 4` (and --launcher, --metrics-port) answered with the rank dropped
    without a word; `--status --spares 7 --recovery on` planned recovery for a query (exit 3). Every flag outside
    settings.STATUS_READS (where node 0's exchange is, which job) is refused, naming it."""
    argv = ["--status", "--master-addr", "10.0.0.1", flag, value]
    if flag == "--spares":
        argv += ["--recovery", "on"]
    with pytest.raises(EntrypointUsage) as caught:
        parse(argv, {})
    message = str(caught.value)
    assert "does nothing with --status" in message and message.split(" ")[0] in (flag, "--recovery"), message


def test_status_still_takes_what_it_reads():
    """B10: the flags --status reads stay accepted."""
    settings = parse(["--status", "--master-addr", "10.0.0.1", "--master-port", "31800", "--exchange-port",
                      "31801", "--rdzv-id", "job1", "--nnodes", "9"], {})
    assert settings.status
