"""One parser per kind of value (issue 43's leftovers): every verb that takes a kind of value reads it one way.

The tables are built from the CLI's own registry of commands (``cli_run.leaves``), so an option added tomorrow
is covered without being listed here.
"""

from __future__ import annotations

import typing

import pytest

from cli_run import entrypoint, in_process as run_cli, leaves, one_line

SPEC = """name: nwvalues
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _dry(command) -> "list[str]":
    return ["--dry-run"] if any("--dry-run" in getattr(p, "opts", ()) for p in command.params) else []


def _number_kind(param):
    """int or float for a numeric option (``Optional[...]`` and ``List[...]`` unwrapped), else None."""
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    for _ in range(2):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if args:
            annotation = args[0]
    return annotation if annotation in (int, float) else None


def numeric_options():
    for words, command in leaves():
        for param in command.params:
            kind = _number_kind(param)
            if param.param_type_name == "option" and kind is not None:
                flag = next(o for o in param.opts if o.startswith("--"))
                yield words, command, flag, kind


NOT_FINITE = ("nan", "NaN", "inf", "-inf", "1e999", "-1e999")


def non_finite_cases():
    for words, command, flag, kind in numeric_options():
        for value in NOT_FINITE if kind is float else ("nan", "1e999"):
            yield pytest.param([*words, *_dry(command), flag, value], flag, value,
                               id=f"{' '.join(words)} {flag} {value}")


def test_the_walk_finds_the_numeric_options_a_user_types():
    found = {(" ".join(words), flag) for words, _, flag, _ in numeric_options()}
    assert {("top", "--interval"), ("stop", "--grace"), ("exec", "--timeout"), ("check", "--timeout"),
            ("bench", "--timeout"), ("up", "--timeout"), ("sync", "--jobs")} <= found, found


@pytest.mark.parametrize("argv,flag,value", list(non_finite_cases()))
def test_a_number_that_is_not_finite_is_refused_naming_option_value_and_range(project, capsys, argv, flag, value):
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and out == "", (code, out, err)
    assert f"{flag} {value!r} is not accepted: a " in line, line  # "a finite number[, RANGE]" / "a whole number"


@pytest.mark.parametrize("argv,shown", [(["stop", "--dry-run", "--grace", "-0"], "--grace 0"),
                                        (["exec", "--dry-run", "--timeout", "-0", "--", "true"], None)])
def test_minus_zero_is_zero(project, capsys, argv, shown):
    code, out, err = run_cli(capsys, *argv)
    if shown is None:  # exec's range starts at 0.1: -0 is refused as 0, never as "-0"
        assert code == 2 and "--timeout 0 is not accepted: 0.1 or more" in one_line(err), err
    else:
        assert code == 0 and shown in out and "--grace -0" not in out, (code, out, err)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "x"])
def test_the_entrypoints_stop_grace_refuses_what_is_not_seconds(value):
    done = entrypoint("--node", "stop", "--grace", value)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    line = one_line(done.stderr)
    assert f"--grace {value!r} is not accepted: a finite number of seconds, 0 or more" in line, line


# --- --sweep: one reading for every verb that takes one ------------------------------------------------------

def sweep_verbs():
    """Every verb with a --sweep option, and what must follow it on a dry run."""
    for words, command in leaves():
        if any("--sweep" in getattr(p, "opts", ()) for p in command.params):
            takes_command = any(p.name == "command" for p in command.params)
            yield words, [*_dry(command)], ["--", "train.py"] if takes_command else []


SWEEPS = [
    ("X= a,b", "write X=a,b"),
    ("X=a ,b", "write X=a,b"),
    ("X=a,,b", "no empty value"),
    ("X=", "no empty value"),
    ("X=a,a", "gives X=a twice"),
    ("1X=a", "VAR=VALUE"),
    ("NCCL_ALGO", "VAR=VALUE"),
]


def test_every_verb_with_a_sweep_is_found():
    assert {" ".join(words) for words, _, _ in sweep_verbs()} >= {"run", "bench"}


@pytest.mark.parametrize("text,says", SWEEPS, ids=[t for t, _ in SWEEPS])
def test_a_sweep_value_is_read_one_way_by_every_verb(project, capsys, text, says):
    refusals = {}
    for words, dry, tail in sweep_verbs():
        code, out, err = run_cli(capsys, *words, *dry, "--sweep", text, *tail)
        assert code == 2, (words, code, out, err)
        refusals[" ".join(words)] = one_line(err)
    assert len(set(refusals.values())) == 1, refusals  # one wording
    assert says in next(iter(refusals.values())), refusals


def test_a_sweep_variable_given_twice_is_refused_alike(project, capsys):
    refusals = set()
    for words, dry, tail in sweep_verbs():
        code, out, err = run_cli(capsys, *words, *dry, "--sweep", "X=1", "--sweep", "X=2", *tail)
        assert code == 2, (words, out, err)
        refusals.add(one_line(err))
    assert len(refusals) == 1 and "X twice" in refusals.pop()


def test_a_good_sweep_reaches_every_point_as_written(project, capsys):
    for words, dry, tail in sweep_verbs():
        code, out, err = run_cli(capsys, *words, *dry, "--sweep", "NCCL_ALGO=Ring,Tree", *tail)
        assert code == 0, (words, err)
        assert "NCCL_ALGO=Ring" in out and "NCCL_ALGO=Tree" in out, (words, out)
