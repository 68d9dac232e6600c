"""fix20b: the rows note18 left for the entrypoint and recovery, each as its class."""

import json

import cli_run


def _explain(folder, env, *args):
    """``--explain --json`` of a two-node job's node 0 in ``folder``."""
    (folder / "train.py").write_text("print('step: 1  loss: 1.0')\n")
    base = {"NODE_RANK": "0", "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "10.0.0.1"}
    return cli_run.entrypoint("--explain", "--json", *args, "--", "train.py", cwd=str(folder),
                              env={**cli_run.CLEAN, **base, **env})


def _setting(explained, key):
    """``key``'s value in ``--explain --json`` (faults; the wait is the exchange's deadline)."""
    if key == "wait_timeout":
        return explained["exchange"]["deadline_s"]
    for section in explained.values():
        if isinstance(section, dict) and isinstance(section.get(key), dict) and "value" in section[key]:
            return section[key]["value"]
    raise AssertionError(f"{key} not in {sorted(explained)}")


# -- 1: one rule for seconds: the spec's fields, the entrypoint's variables and flags, the CLI's options --

SECONDS = (("wait_timeout", "NODEWEAVE_WAIT_TIMEOUT", "--wait-timeout"),
           ("stall_warn", "NODEWEAVE_STALL_WARN", "--stall-warn"),
           ("stall_timeout", "NODEWEAVE_STALL_TIMEOUT", "--stall-timeout"))


def test_every_seconds_setting_reads_durations_through_one_reader(tmp_path):
    """note18 (fix19h left): ``launcher.stall_warn: 10m`` was taken while ``NODEWEAVE_STALL_WARN=10m`` (and
    ``--stall-warn 10m``) was refused as no whole number: each seconds variable and flag takes what the spec takes,
    and refuses the rest naming itself, the value and both spellings."""
    from nodeweave import quantities
    from nodeweave.entrypoint import durations
    from nodeweave.spec.nodes import Reader

    assert quantities.seconds is durations.seconds  # the CLI's options: the same reader
    assert "durations" in Reader.duration.__code__.co_names or "whole_seconds" in Reader.duration.__code__.co_names
    for key, variable, flag in SECONDS:
        extra = {"NODEWEAVE_STALL_TIMEOUT": "2h"} if key == "stall_warn" else {}
        for given, args in (({variable: "1h30m" if key != "stall_warn" else "10m"}, ()),
                            ({}, (flag, "1h30m" if key != "stall_warn" else "10m"))):
            done = _explain(tmp_path, {**extra, **given}, *args)
            assert done.returncode == 0, (key, done.stderr)
            said = _setting(json.loads(done.stdout), key)
            assert said == (600 if key == "stall_warn" else 5400), (key, done.stdout)
        refused = _explain(tmp_path, {**extra, variable: "1.5s"})
        line = cli_run.one_line(refused.stderr)
        assert refused.returncode == 2 and "got '1.5s' (from " + variable + ")" in line and \
            "a duration with a unit, s, m or h (30s, 10m, 1h30m)" in line, line
        beyond = _explain(tmp_path, {**({"NODEWEAVE_STALL_TIMEOUT": "0"} if extra else {}), variable: "200h"})
        line = cli_run.one_line(beyond.stderr)
        assert beyond.returncode == 2 and f"{variable}: 720000 seconds is out of range" in line, line
