"""Walk 12, part B, rows B5-B19 of walk12b-report.md given to fix12b1 (issue 43), each fixed as a class:

- every setting's NODEWEAVE_* variable set but empty is refused as its flag's empty value is (B7);

Each test fails on the code before its fix.
"""

from __future__ import annotations

import cli_run
import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)

TWO_NODES = {"NNODES": "3", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_RECOVERY": "on"}


def _empty_settings():
    """Every setting whose flag's empty value is refused (not a topology row, not a word list): the settings'
    own table."""
    from nodeweave.entrypoint.planning.contract import SETTINGS

    return [row.variable for row in SETTINGS
            if not row.topology and not getattr(row.read, "words", False)]


@pytest.mark.parametrize("variable", _empty_settings())
@pytest.mark.parametrize("value", ["", " "])
def test_b7_a_settings_variable_set_but_empty_is_refused_as_its_flag_is(entrypoint, variable, value):
    """B7: `-e NODEWEAVE_CHECKPOINT_DIR=$CKPT` with CKPT unset planned and started a recovering job whose every
    generation began from step 0, behind one warning; `--checkpoint-dir ''` is refused. Every setting's variable
    set but empty (or blank) is refused so, exit 2 naming it (a word list's empty value stays its "none")."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=dict(TWO_NODES, **{variable: value}))
    line = cli_run.one_line(err)
    assert code == 2 and f"{variable} is set but empty" in line and "unset it for its default" in line, (code, err)


@pytest.mark.parametrize("variable", ["NODEWEAVE_LAUNCHER_OPTIONS", "NODEWEAVE_SETUP", "NODEWEAVE_PROFILE_OPTIONS"])
def test_b7_a_word_lists_empty_variable_stays_its_none(entrypoint, variable):
    """B7: a word list's empty value is its explicit "none", as its flag's is."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=dict(TWO_NODES, **{variable: ""}))
    assert code == 0, err


@pytest.mark.parametrize("key, given, stop", [
    ("recovery_max_restarts", None, "restart budget spent"),
    ("recovery_max_restarts", "--recovery-max-restarts", "restart budget spent"),
    ("recovery_max_restarts", "NODEWEAVE_RECOVERY_MAX_RESTARTS", "restart budget spent"),
    ("no_progress_restarts", None, "no checkpoint yet"),
    ("no_progress_restarts", "--no-progress-restarts", "no checkpoint yet"),
    ("no_progress_restarts", "NODEWEAVE_NO_PROGRESS_RESTARTS", "no checkpoint yet"),
])
def test_b19_a_brakes_verdict_names_the_setting_as_this_node_got_it(key, given, stop):
    """B19: the restart budget's end said `(recovery.max_restarts)`, a spec field, to a node started with flags and
    no spec; each brake's verdict names where this node got its value, then every way to set it (the settings'
    own row: flag, variable, the spec's field), as the --explain rows credit theirs."""
    from types import SimpleNamespace

    from nodeweave.entrypoint.planning.contract import BY_KEY
    from nodeweave.entrypoint.planning.settings import parse
    from nodeweave.entrypoint.recovery.decide import after_fault, first
    from nodeweave.entrypoint.recovery.setup import Config

    row = BY_KEY[key]
    argv, env = ["--recovery", "on", "--nnodes", "2"], {}
    if key == "recovery_max_restarts":
        env["NODEWEAVE_NO_PROGRESS_RESTARTS"] = "0"
    if given and given.startswith("--"):
        argv += [given, "2"]
    elif given:
        env[given] = "2"
    settings = parse(argv + ["--", "train.py"], env)
    limits = Config(settings, SimpleNamespace(nnodes_min=2, nnodes_max=2)).limits
    book = first({0, 1, 2}, limits)
    for _ in range(8):
        book = after_fault(book, None, "the job stalled", {0, 1, 2}, None, limits)
        if book.ended:
            break
    source = {None: "default", row.flag: f"flag {row.flag}"}.get(given, given)
    said = f"{source}; set with {row.flag} / {row.variable}, the spec's {row.spec})"
    assert stop in book.ended and said in book.ended, book.ended
