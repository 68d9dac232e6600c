"""fix15e (issue 43; walk13b rows B9, B12, B18, B4, B11, B14): the entrypoint's parser, its launcher options, its
hostfile match and its check-in lines.

B18: an option's value taken from the next word was whatever that word was: ``--checkpoint-dir $CKPT -- train.py``
with CKPT unset planned a checkpoint folder named ``--``. Now, as argparse does, the separator and this parser's own
options are never a value, for every option of the parser (``contract.SETTINGS``).
"""

from __future__ import annotations

import pytest

from nodeweave.entrypoint.errors import UsageError
from nodeweave.entrypoint.planning import settings as settings_module
from nodeweave.entrypoint.planning.contract import SETTINGS


VALUE_OPTIONS = [row.flag for row in SETTINGS]


@pytest.mark.parametrize("flag", VALUE_OPTIONS)
@pytest.mark.parametrize("after", ["--", "--explain", "--nnodes", "--help", "--node"])
def test_no_option_takes_the_separator_or_another_option_as_its_value(flag, after):
    """B18: `--OPTION -- train.py` (an empty $VAR before the separator) and `--OPTION --explain` are refused, exit 2,
    naming the option and the word it would have taken, for every option of the entrypoint's parser."""
    argv = [flag, after, "train.py"] if after != "--" else [flag, "--", "train.py"]
    with pytest.raises(UsageError) as caught:
        settings_module.parse(argv, {})
    message = str(caught.value)
    assert message.startswith(f"{flag} expected a value, got ")
    assert (after if after != "--" else "separator '--'") in message
    assert caught.value.exit_code == 2


def test_a_value_that_starts_with_a_dash_is_still_a_value():
    """B18: only the separator and this parser's own options are refused: a launcher option is still a value, and
    the `=` form gives even '--' on purpose."""
    parsed = settings_module.parse(["--launcher-options", "--tee 3", "--", "train.py"], {})
    assert parsed.get("launcher_options")
    assert parsed.command == ("train.py",)


@pytest.mark.parametrize("argv", [["--status", "--", "train.py", "--lr", "1"], ["--status", "train.py"],
                                  ["--status", "--stacks", "--", "train.py"], ["--status", "--all", "train.py"]])
def test_status_with_a_command_is_refused_as_doing_nothing(argv):
    """B12: a command given with --status was ignored without a word; it is refused, exit 2, as --json without
    --explain and --all without --status are (``settings.idle_problems``, the one table of settings that do
    nothing)."""
    with pytest.raises(UsageError) as caught:
        settings_module.parse(argv, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "50500"})
    assert str(caught.value).startswith("--status takes no command")
    assert "train.py" in str(caught.value) and caught.value.exit_code == 2


def test_status_alone_is_still_taken():
    """B12: --status without a command parses as before."""
    parsed = settings_module.parse(["--status", "--all"], {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "50500"})
    assert parsed.status and parsed.command == ()


from cli_run import in_a_folder_with_train_py  # noqa: E402
from port_standins import PortStandIn  # noqa: E402

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)


def _other_case():
    import socket

    name = socket.gethostname()
    if name.swapcase() == name:
        pytest.skip("this host's name has no letters to write in another case")
    return name.swapcase()


def _hostfile(tmp_path, me):
    (tmp_path / "hosts").write_text(f"other slots=1\n{me} slots=1\n")
    return {"NODEWEAVE_HOSTFILE": "hosts"}


def _batch(tmp_path, me):
    (tmp_path / "batch-hosts").write_text(f"other\n{me}\n")
    return {"BATCH_TASK_INDEX": "1", "BATCH_TASK_COUNT": "2", "BATCH_HOSTS_FILE": "batch-hosts"}


def _slurm_hostname(tmp_path, me):
    return {"SLURM_JOB_ID": "5", "SLURM_JOB_NODELIST": f"other,{me}", "SLURM_NNODES": "2"}


def _slurmd_nodename(tmp_path, me):
    return {"SLURM_JOB_ID": "5", "SLURM_JOB_NODELIST": f"other,{me.lower()}", "SLURM_NNODES": "2",
            "SLURMD_NODENAME": me.upper()}


@pytest.mark.parametrize("listing", [_hostfile, _batch, _slurm_hostname, _slurmd_nodename],
                         ids=["hostfile", "BATCH_HOSTS_FILE", "SLURM_JOB_NODELIST", "SLURMD_NODENAME"])
def test_a_host_list_names_this_node_in_any_case(entrypoint, tmp_path, listing):
    """B4: host names compare case-insensitively (RFC 4343) wherever a list of hosts is searched for this node
    (``hostport.names_this_node``): `VM` on a hostfile line is host `vm`, at rank 1 here, not "not listed"."""
    env = listing(tmp_path, _other_case())
    code, out, err = entrypoint(["--explain", "--master-port", "39500", "--", "train.py"], env)
    assert code == 0, err
    assert any(line.split()[:3] == ["node", "rank", "1"] for line in out.splitlines()), out


def test_a_hostfile_naming_one_host_in_two_cases_lists_it_twice(entrypoint, tmp_path):
    """B4: `vm` and `VM` on two lines are one host named twice, refused as a host listed twice is."""
    (tmp_path / "hosts").write_text("vm slots=1\nVM slots=1\n")
    code, out, err = entrypoint(["--explain", "--node-rank", "0", "--master-port", "39500", "--", "train.py"],
                                {"NODEWEAVE_HOSTFILE": "hosts"})
    assert code == 2 and "VM is listed twice (line 1 too)" in err, err


@pytest.mark.parametrize("needed,most", [(1, 2), (1, 1), (2, 2), (2, 4), (3, 8)])
def test_node_0s_gather_line_says_what_happens(needed, most):
    """B14: node 0 of an elastic 1:2 job logged `waiting for 0 more node(s)`, then started. The gather's line
    (``session.waiting_line``, every first gather and recovery's) never counts 0 more: when node 0 alone makes the
    minimum it says it starts and who may join; an elastic count says the minimum and the most."""
    from nodeweave.entrypoint.checkin.session import waiting_line

    line = waiting_line(needed, most, 54501, 600)
    assert "0 more" not in line
    if needed == 1:
        assert line.startswith("check-in: the minimum 1 node is in (node 0)") and "starting" in line
    else:
        assert f"waiting for {needed - 1} more node(s) on port 54501" in line
    assert (f"up to {most} nodes may join" in line) == (most > needed)


def _torchrun_env():
    import os
    import shutil
    import sys

    bin_dir = os.path.dirname(sys.executable)
    if not shutil.which("torchrun", path=bin_dir):
        pytest.skip("torchrun is not installed beside this Python")
    return {"PATH": bin_dir}


def _value_options():
    """torchrun's options that take a value, from its installed parser, less those nodeweave passes itself."""
    run = pytest.importorskip("torch.distributed.run")
    from nodeweave.entrypoint.planning import launcher_options

    taken = list(launcher_options.ALWAYS["torchrun"]) + list(launcher_options.NEVER["torchrun"]) + ["--rdzv-conf"]
    found = []
    for action in run.get_args_parser()._actions:
        longs = [name for name in action.option_strings if name.startswith("--")]
        if longs and action.nargs != 0 and launcher_options.clash("torchrun", longs[0], taken) is None:
            found.append(longs[0])
    return found


def test_the_parser_read_from_torchs_source_takes_values_as_torchrun_does():
    """B9: the parser built from the installed torchrun's source (``launcher_parser``) takes a value for exactly
    the options torchrun's own parser does."""
    from nodeweave.entrypoint.planning import launcher_parser

    run = pytest.importorskip("torch.distributed.run")
    path = launcher_parser.source_of("torchrun", _torchrun_env())
    assert path and path.endswith("torch/distributed/run.py")
    ours = launcher_parser.parser_from_source(path, "get_args_parser", "torch/distributed/run.py")
    theirs = {name: action.nargs == 0 for action in run.get_args_parser()._actions for name in action.option_strings
              if name not in ("-h", "--help")}
    mine = {name: action.nargs == 0 for action in ours._actions for name in action.option_strings}
    assert mine == theirs


@pytest.mark.parametrize("option", _value_options() if __import__("importlib").util.find_spec("torch") else [])
def test_every_torchrun_option_left_without_its_value_is_refused(option):
    """B9: an option whose value was left out (`NODEWEAVE_LAUNCHER_OPTIONS=--log-dir`, `--tee`, `--redirects`)
    would take the script as its value: refused, exit 2, naming it and the script, for every torchrun option that
    takes a value (its installed parser's own list); given its value, it is taken."""
    from nodeweave.entrypoint.planning.launcher_parser import judge

    env = _torchrun_env()
    with pytest.raises(UsageError) as caught:
        judge("torchrun", [option], env, "NODEWEAVE_LAUNCHER_OPTIONS", ("train.py",))
    assert f"{option} needs a value and none is given: it would take 'train.py'" in str(caught.value)
    assert caught.value.exit_code == 2
    judge("torchrun", [option, "3"], env, "NODEWEAVE_LAUNCHER_OPTIONS", ("train.py",))


@pytest.mark.parametrize("installed", [True, False], ids=["torchrun's parser", "the stated rule"])
@pytest.mark.parametrize("options,stray", [(["zz9"], "zz9"), (["--log-dir", "logs", "extra"], "extra"),
                                          (["--tee=3", "extra"], "extra")])
def test_a_stray_word_in_the_launcher_options_is_refused(installed, options, stray):
    """B9: a word that is no option nor an option's value would become the script: refused by torchrun's parser
    where it is installed, and by the stated rule where it is not (PATH without torchrun)."""
    from nodeweave.entrypoint.planning.launcher_parser import judge

    env = _torchrun_env() if installed else {"PATH": "/nonexistent"}
    with pytest.raises(UsageError) as caught:
        judge("torchrun", options, env, "NODEWEAVE_LAUNCHER_OPTIONS", ("train.py",))
    assert f"{stray!r} is no torchrun option nor an option's value" in str(caught.value)
    assert ("own parser reads them" in str(caught.value)) == installed


def test_the_entrypoint_refuses_an_option_missing_its_value_in_explain(entrypoint):
    """B9: `NODEWEAVE_LAUNCHER_OPTIONS=--log-dir nodeweave-entrypoint --explain -- train.py` planned
    `--log-dir train.py`, rc 0; now exit 2 naming the option."""
    env = dict(_torchrun_env(), NODEWEAVE_LAUNCHER_OPTIONS="--log-dir")
    code, out, err = entrypoint(["--explain", "--nnodes", "1", "--master-port", "48500", "--", "train.py"], env)
    assert code == 2 and "--log-dir needs a value" in err, err


def test_a_word_lists_value_may_carry_another_programs_option_with_its_value():
    """B18: --launcher-options '--max-restarts=3' is torchrun's option with its value, taken; --checkpoint-dir
    --nnodes=2 is this parser's own option, refused."""
    parsed = settings_module.parse(["--launcher-options", "--max-restarts=3", "--", "train.py"], {})
    assert parsed.get("launcher_options")
    with pytest.raises(UsageError, match=r"^--checkpoint-dir expected a value, got '--nnodes=2'"):
        settings_module.parse(["--checkpoint-dir", "--nnodes=2", "train.py"], {})




@pytest.mark.parametrize("case", ["the exchange port as MASTER_PORT", "one below the master port",
                                  "the metrics port as NODEWEAVE_EXCHANGE_PORT"])
def test_status_at_a_wrong_port_says_what_answers_there_and_which_port_to_give(case):
    """B11: --status at a port copied from a log line dialled it + 1 (`Connection refused`) or waited out torchrun's
    store or node 0's metrics port; the refusal now says what answers at the port dialled and which MASTER_PORT
    (or NODEWEAVE_EXCHANGE_PORT) reaches the job's exchange (``session.wrong_port_hint``)."""
    from types import SimpleNamespace

    from free_ports import free_ports
    from nodeweave.entrypoint.checkin.session import wrong_port_hint

    base = free_ports(4)  # base: the job's master port (silent store), base + 1: its exchange, base + 3: metrics
    listeners = [PortStandIn(base, "store"), PortStandIn(base + 1, "exchange"), PortStandIn(base + 3, "metrics")]
    try:
        if case == "the exchange port as MASTER_PORT":
            master, dialled, source, there, give = base + 1, base + 2, "master port 50500 + 1", None, \
                f"MASTER_PORT={base + 1} is that exchange port itself: give the job's master port, MASTER_PORT={base}"
        elif case == "one below the master port":
            master, dialled, source, there, give = base - 1, base, "master port 50500 + 1", "torchrun's c10d store", \
                f"give MASTER_PORT={base}"
        else:
            master, dialled, source, there, give = base, base + 3, "NODEWEAVE_EXCHANGE_PORT", "metrics port", \
                "leave NODEWEAVE_EXCHANGE_PORT out: the exchange is the master port + 1"
        info = {"host": "127.0.0.1", "port": dialled, "port_source": source}
        topo = SimpleNamespace(master_port=SimpleNamespace(value=master), job_id="je")
        hint = wrong_port_hint(info, topo)
    finally:
        for listener in listeners:
            listener.close()
    assert f"node 0's check-in exchange answers at port {base + 1}" in hint, hint
    assert give in hint, hint
    assert (there is None and f"at port {dialled} answers" not in hint) or (there and there in hint), hint
