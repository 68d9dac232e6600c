"""No default that acts on more than the user asked for (issue 34, item 2), replayed through the real CLI.

Each class of the issue's cases is walked over every verb, not only the case it was found on: an
empty or blank option value (``--node "$UNSET"``, ``--out ''``), an empty item of a node list,
``-o`` as anything but an output format, a spec integer not written in plain digits, and a
variable nodeweave sets, under every spelling and wherever a variable is taken.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import cli_run
from cli_run import leaves
import pytest

from nodeweave.cli import app, main
from nodeweave.cli.habits.coercion import plain_runtime_param
from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.spec import parse_spec
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SPEC = """name: nwsafe
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""


def nodeweave(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The real program, from this checkout's sources, with no engine on PATH."""
    return cli_run.nodeweave(*args, cwd=cwd, timeout=120, env={**cli_run.CLEAN, "HOME": home_beside(cwd), **env})


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return tmp_path


def valued_options():
    """(verb words, flag) for every option that takes a text or path value."""
    found = []
    for words, command in leaves():
        for param in command.params:
            if param.param_type_name != "option" or getattr(param, "is_flag", False) or getattr(param, "count", False):
                continue
            converter = plain_runtime_param(param)
            if getattr(getattr(converter, "click_type", None), "label", "") in ("text", "path"):
                found.append((words, max(param.opts, key=len)))
    return found


VALUED = valued_options()


def test_the_walk_finds_the_issues_options():
    pairs = {(" ".join(words), flag) for words, flag in VALUED}
    assert {("stop", "--node"), ("exec", "--node"), ("render", "--out"), ("shell", "--node"),
            ("hosts probe", "--node"), ("bench", "--json-out")} <= pairs
    assert len(pairs) > 60


@pytest.mark.parametrize("words, flag", VALUED, ids=[f"{' '.join(w)} {f}" for w, f in VALUED])
@pytest.mark.parametrize("blank", ["", " "], ids=["empty", "blank"])
def test_an_empty_value_is_refused_on_every_option(project, capsys, words, flag, blank):
    """``--node "$UNSET"`` is not every node and ``--out ''`` is not here: exit 2, naming the flag and the value."""
    code = main([*words, f"{flag}={blank}"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert flag in err and f"{blank!r} is empty" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("verb", [["stop"], ["logs"], ["status"], ["shell"], ["exec", "--", "true"],
                                  ["run", "--dry-run"], ["sync", "--dry-run"], ["hosts", "probe"], ["check"]])
@pytest.mark.parametrize("given", [",", "0,,1", " , "])
def test_an_empty_item_of_a_node_list_is_refused(project, capsys, verb, given):
    cut = verb.index("--") if "--" in verb else len(verb)
    code = main([*verb[:cut], "--node", given, *verb[cut:]])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert f"--node {given!r} holds an empty item" in err


def test_stop_with_an_unset_variable_is_refused_before_any_node_is_asked(project):
    done = nodeweave(project, "stop", "--node", os.environ.get("NW_SURELY_UNSET_VARIABLE", ""))
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "--node" in done.stderr and "'' is empty" in done.stderr


def test_render_with_an_empty_out_writes_nothing_here(project):
    done = nodeweave(project, "render", "all", "--out", "")
    assert done.returncode == EXIT_USAGE, done.stderr
    assert sorted(p.name for p in project.iterdir()) == ["nodeweave.yaml"]


# -- -o is an output format everywhere -------------------------------------------------


def test_o_is_the_output_format_on_every_verb_that_has_it():
    for words, command in leaves():
        for param in command.params:
            if "-o" in param.opts:
                assert "--output" in param.opts, f"nodeweave {' '.join(words)}: -o is {param.opts}"


def test_bench_o_json_never_writes_a_file_named_json(project):
    done = nodeweave(project, "bench", "-o", "xml")
    assert done.returncode == EXIT_USAGE and "--output 'xml' is not accepted" in done.stderr, done.stderr
    assert "--json-out" not in done.stderr
    assert not (project / "xml").exists() and not (project / "json").exists()


def test_bench_json_out_is_long_form_only():
    from nodeweave.cli.habits.spellings import RENAMED, upgrade

    assert upgrade(["bench", "-o", "json"]) == ["bench", "-o", "json"]
    assert "bench" not in RENAMED


# -- YAML integers --------------------------------------------------------------------

INT_FIELDS = [
    "nodes: {}", "gpus_per_node: {}", "launcher: {{script: t.py, master_port: {}}}",
    "launcher: {{script: t.py, max_restarts: {}}}", "launcher: {{script: t.py, wait_timeout: {}}}",
    "launcher: {{script: t.py, exchange_port: {}}}", "launcher: {{script: t.py, stall_warn: {}}}",
    "launcher: {{script: t.py, stall_timeout: {}}}", "kubernetes: {{grace_period: {}}}",
    "resources: {{devices: {{example.com/fpga: {}}}}}", "kubernetes: {{topology_spread: [{{topology_key: zone, max_skew: {}}}]}}",
]
NOT_PLAIN = [("010", "8"), ("0x10", "16"), ("8_0", "80"), ("+5", "5"), ("0o7", "7"), ("0b11", "3")]


def spec_with(line: str) -> str:
    lines = {"name": "name: job", "image": "image: {variant: cpu}", "launcher": "launcher: {script: t.py}"}
    lines[line.split(":", 1)[0]] = line
    return "\n".join(lines.values()) + "\n"


@pytest.mark.parametrize("field", INT_FIELDS)
@pytest.mark.parametrize("written, read", NOT_PLAIN)
def test_a_yaml_integer_not_in_plain_digits_is_refused_in_every_int_field(field, written, read):
    source = spec_with(field.format(written))
    try:
        parse_spec(source, "s.yaml")
    except UsageError as err:
        message = str(err)
    else:
        pytest.fail(f"accepted {written} in {field}")
    assert repr(written) in message and "plain" in message and read in message, message


def test_base_60_where_an_int_is_expected_names_the_number():
    with pytest.raises(UsageError, match=r"'1:30' is not a plain decimal integer \(YAML reads it as 90\)"):
        parse_spec(spec_with("launcher: {script: t.py, master_port: 1:30}"), "s.yaml")
    with pytest.raises(UsageError, match="YAML reads it as 90"):
        parse_spec(spec_with("gpus_per_node: 1:30"), "s.yaml")


def test_plain_integers_and_the_elastic_range_still_load():
    assert parse_spec(spec_with("nodes: 10"), "s.yaml").nodes.min == 10
    assert str(parse_spec(spec_with("nodes: 2:4"), "s.yaml").nodes) == "2:4"
    assert parse_spec(spec_with("launcher: {script: t.py, max_restarts: 0}"), "s.yaml").launcher.max_restarts == 0


def test_the_cli_names_the_value_to_write(project):
    (project / "nodeweave.yaml").write_text(SPEC.replace("nodes: 2", "nodes: 010"))
    done = nodeweave(project, "validate")
    assert done.returncode == EXIT_USAGE
    assert "nodeweave.yaml:3: nodes: '010' is not a plain decimal integer (YAML reads it as 8)" in done.stderr
    assert "write nodes: 8 or nodes: 10" in done.stderr


# -- reserved variables, every spelling, everywhere -----------------------------------

RESERVED = ["NODEWEAVE_NNODES", "NODEWEAVE_NODE_RANK", "NODEWEAVE_MASTER_ADDR", "NODEWEAVE_MASTER_PORT",
            "NODEWEAVE_MODE", "NODEWEAVE_LAUNCHER", "NNODES", "NODE_RANK", "MASTER_ADDR", "PET_NNODES",
            "PET_NODE_RANK", "PET_MASTER_ADDR"]
WHERE = [["run", "--dry-run", "-e"], ["exec", "--dry-run", "-e"], ["run", "--dry-run", "--sweep"],
         ["bench", "--sweep"]]


@pytest.mark.parametrize("name", RESERVED)
@pytest.mark.parametrize("where", WHERE, ids=[" ".join(w) for w in WHERE])
def test_a_reserved_variable_is_refused_wherever_a_variable_is_taken(project, capsys, name, where):
    argv = [*where, f"{name}=4,5" if where[-1] == "--sweep" else f"{name}=4"]
    if where[0] == "exec":
        argv += ["--", "true"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert name in err and "by nodeweave" in err, err


@pytest.mark.parametrize("name", RESERVED)
def test_a_reserved_variable_is_refused_in_the_spec(name):
    with pytest.raises(UsageError, match=f"env.{name}: {name} .*by nodeweave"):
        parse_spec(spec_with(f"env: {{{name}: '4'}}"), "s.yaml")


def test_the_users_own_variables_still_pass(project, capsys):
    assert parse_spec(spec_with("env: {NODEWEAVE_JOB_TOKEN_FILE: /workspace/t, NCCL_DEBUG: INFO}"), "s.yaml").env
    code = main(["run", "--dry-run", "-e", "NCCL_DEBUG=INFO", "-e", "NODEWEAVE_JOB_TOKEN_FILE=/workspace/t"])
    assert code == 0, capsys.readouterr().err
