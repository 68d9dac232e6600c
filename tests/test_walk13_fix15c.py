"""fix15c (issue 43; walk13a rows A22, A23, A20, A16, A4, A9; walk13b row B5): each row's class, one test per class,
each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, leaves, one_line
from nodeweave.errors import EXIT_USAGE
from team_folder import make_team

LEAVES = leaves()


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A22: every number the CLI reads is ASCII digits, one predicate (contract.digits), refused with what to type ------

def number_options():
    """(verb words, flag, annotation) of every option of a number, int or float, of every verb: the product's own
    table of its options."""
    found = []
    for words, command in LEAVES:
        for param in command.params:
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if param.param_type_name == "option" and annotation in (int, float) and not getattr(param, "is_flag", 0):
                found.append((words, max(param.opts, key=len), annotation))
    return found


NUMBERS = number_options()


def test_the_walk_finds_the_number_options():
    flags = {(" ".join(words), flag) for words, flag, _ in NUMBERS}
    assert {("up", "--timeout"), ("bench", "--iters"), ("run", "--nodes")} <= flags


@pytest.mark.parametrize("words, flag, annotation", NUMBERS, ids=[f"{' '.join(w)} {f}" for w, f, _ in NUMBERS])
def test_every_number_option_refuses_another_scripts_digits(capsys, team, words, flag, annotation):
    """A22: ``init --nodes ٣`` wrote nodes: 3, ``up --timeout ٣٠`` waited 30 s (Python's int() reads them), while the
    spec and the entrypoint refuse them: refused in one line, exit 2, naming the number to type."""
    code, out, err = run_cli(capsys, *words, flag, "\u0663")
    line = one_line(err)
    assert code == EXIT_USAGE and flag in line and "type 3 for \u0663" in line, line


STRING_READERS = [  # the options read as text and then as a number: node selectors, sizes, a size's factor, seconds
    (["exec", "--dry-run", "--node", "\u0661", "--", "true"], "type 1 for \u0661"),
    (["exec", "--dry-run", "--node", "\u0660-\u0661", "--", "true"], "type 0-1 for \u0660-\u0661"),
    (["logs", "--node", "\u0661"], "type 1 for \u0661"),
    (["bench", "--dry-run", "--sizes", "\u0661K"], "type 1K for \u0661K"),
    (["bench", "--dry-run", "--sizes", "1K:1M:\u0664"], "type 4 for \u0664"),
    (["up", "--dry-run", "--timeout", "\u0663m"], "type 3m for \u0663m"),
    (["logs", "--since", "\u0663m"], "type 3m for \u0663m"),
    (["init", "--nodes", "\u0663", "--dry-run"], "type 3 for \u0663"),
    (["hosts", "probe", "--node", "\u0661"], None),
]


@pytest.mark.parametrize("argv, said", STRING_READERS, ids=[" ".join(a) for a, _ in STRING_READERS])
def test_every_reader_of_a_number_in_text_refuses_another_scripts_digits(capsys, team, argv, said):
    """A22: ``exec --node ١`` picked node 1 and ``bench --sizes ١K`` planned '١K' into every node, which refuses it."""
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code != 0 and "Traceback" not in err, err
    if said:
        assert code == EXIT_USAGE and said in line, line


@pytest.mark.parametrize("text", ["\u0663", "\u0663\u0660", "\uff13", "\u0967"])
def test_the_one_predicate_of_digits(text):
    """A22: str.isdigit() and re's \\d take these; the one predicate does not, and names the ASCII spelling."""
    from nodeweave.entrypoint.planning.contract import ascii_spelling, digits
    from nodeweave.quantities import seconds

    assert text.isdigit() and not digits(text) and ascii_spelling(text).isascii()
    assert seconds(text) is None and seconds(text + "s") is None
    assert digits("30") and ascii_spelling("30") is None


# -- A23: what bench's dry run says it writes is what its run writes, and the run's line says what the file holds ------

@pytest.mark.parametrize("explicit", [True, False], ids=["--json-out", "default"])
def test_bench_says_truthfully_what_a_launch_that_measured_nothing_leaves(capsys, team, monkeypatch, explicit):
    """A23: the dry run promised `would write X (every number, when a launch measured any)`, and a --json-out run
    whose one launch failed wrote X, saying only `wrote X`: the plan says the file is written whatever happens
    (with --json-out), and the run's last line that it holds no measurement."""
    from nodeweave.bench import runner

    out_file = team / "bn.json"
    where = ["--json-out", str(out_file)] if explicit else []
    argv = ["bench", "--sizes", "1K", "--ops", "all_reduce", "--iters", "1", "--warmup", "1", *where]
    code, out, err = run_cli(capsys, *argv, "--dry-run")
    planned = [line for line in out.splitlines() if line.startswith("# would write")]
    assert code == 0 and len(planned) == 1, out
    assert ("exit codes and output" in planned[0]) is explicit, planned[0]
    monkeypatch.setattr(runner, "run_matrix", lambda config, points, **kw: [
        runner.RunResult("baseline", {}, 2, None, "error: processes per node ...", ["true"])])
    code, out, err = run_cli(capsys, *argv)
    assert code != 0
    if explicit:
        assert out_file.is_file() and "".join(f"wrote {out_file}: no measurement in it".split()) in "".join(
            (out + err).split()), out + err  # a narrow terminal wraps the path anywhere
    else:
        assert "was not written" in err and not list((team / "runs").glob("*-bench.json")), err


# -- A16, B5: what a run id names that is no run folder is said whatever else runs/ holds, on every verb that reads one -

RUN_READERS = [["runs", "show", "{id}"], ["logs", "--run", "{id}"], ["runs", "compare", "{id}", "last"],
               ["dashboard", "--run", "{id}"]]


def _read(capsys, team, words, wanted):
    return run_cli(capsys, *[w.format(id=wanted) for w in words])


@pytest.mark.parametrize("words", RUN_READERS, ids=[" ".join(w) for w in RUN_READERS])
@pytest.mark.parametrize("other_run", [False, True], ids=["alone", "beside-a-run"])
def test_a_bench_result_is_named_whatever_else_runs_holds(capsys, team, words, other_run):
    """A16: with only bench results in runs/, `runs show <time>-bench.json` was "no runs under runs/ yet", the
    file right there; with any run folder beside it, the bench-result line docs/cluster.md promises."""
    runs = team / "runs"
    runs.mkdir(exist_ok=True)
    (runs / "20261201T014059Z-bench.json").write_text('{"schema": "nodeweave.bench/1"}\n')
    if other_run:
        (runs / "x").mkdir()
        (runs / "x" / "run.json").write_text("{")
    code, out, err = _read(capsys, team, words, "20261201T014059Z-bench.json")
    assert code == EXIT_USAGE and "is a `nodeweave bench` result" in one_line(err), err


@pytest.mark.parametrize("words", RUN_READERS, ids=[" ".join(w) for w in RUN_READERS])
def test_a_nodes_own_record_of_a_run_id_is_named(capsys, team, monkeypatch, tmp_path, words):
    """B5: `runs show myrun1` of an entrypoint started by hand with --run-id myrun1 was "no runs ... yet", while
    $TMPDIR/nodeweave/runs/myrun1 is its record: named, with what reads it; an id recorded nowhere here says where a
    node records one."""
    tmp = tmp_path / "nodetmp"
    (tmp / "nodeweave" / "runs" / "myrun1").mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(tmp))
    code, out, err = _read(capsys, team, words, "myrun1")
    line = one_line(err)
    assert code == EXIT_USAGE and str(tmp / "nodeweave" / "runs" / "myrun1") in line and \
        "nodeweave-entrypoint --node report myrun1" in line, line
    code, out, err = _read(capsys, team, words, "other1")
    assert code == EXIT_USAGE and "nodeweave-entrypoint --node report ID" in one_line(err), err


# -- A20: an empty -e value (the shape an unset $VAR leaves) is noted on every verb that takes -e, through the one judge -

ENV_VERBS = [["run", "--dry-run", "-e", "{a}", "--", "train.py"], ["exec", "--dry-run", "-e", "{a}", "--", "env"]]


@pytest.mark.parametrize("words", ENV_VERBS, ids=[w[0] for w in ENV_VERBS])
@pytest.mark.parametrize("name", ["HF_TOKEN", "NCCL_DEBUG"])
def test_an_empty_env_value_is_noted(capsys, team, words, name):
    """A20: `-e HF_TOKEN=$HF_TOKEN` with the variable unset planned `env HF_TOKEN=` on every node, exit 0, no note,
    while `-e HF_TOKEN` alone and `--sweep A=` refuse the same mistake."""
    code, out, err = run_cli(capsys, *[w.format(a=f"{name}=") for w in words])
    said = " ".join((out + err).split())  # refused since walk17a A30, as `-e NAME` with NAME empty is
    assert code == 2 and f"--env {name}=: the value is empty (an unset ${name} in this shell?)" in said, said
    code, out, err = run_cli(capsys, *[w.format(a=f"{name}=x") for w in words])
    assert "empty on every node" not in out + err


# -- A4, A9: another tool's option typed on a verb that has no such option gets nodeweave's word (othertools.ELSEWHERE)

def _elsewhere():
    from nodeweave.cli.habits.othertools import ELSEWHERE

    found = []
    for (name, typed), said in sorted(ELSEWHERE.items()):
        words = next(words for words, command in LEAVES if command.name == name)
        found.append((words, typed, said))
    return found


ELSEWHERE_ROWS = _elsewhere()


def test_the_table_holds_the_walks_habits():
    """A4, A9: docker compose's `up -d/--detach/--build/--scale`, docker's `logs -t`, and a GPU spec's options typed
    to `init` are in the one table of other tools' options."""
    typed = {(" ".join(words), flag) for words, flag, _ in ELSEWHERE_ROWS}
    assert {("up", "-d"), ("up", "--detach"), ("up", "--build"), ("up", "--scale"), ("logs", "-t"),
            ("init", "--variant"), ("init", "--gpus"), ("init", "--gpus-per-node"), ("init", "--nproc-per-node"),
            ("init", "--image")} <= typed


@pytest.mark.parametrize("words, typed, said", ELSEWHERE_ROWS, ids=[f"{' '.join(w)} {t}" for w, t, _ in ELSEWHERE_ROWS])
def test_another_tools_option_gets_nodeweaves_word(capsys, team, words, typed, said):
    """A4, A9: `up -d`, `up --build`, `up --scale 4`, `init --variant cuda12` were a bare "no such option", and
    `logs -t` "requires an argument": each gets the table's line, exit 2."""
    code, out, err = run_cli(capsys, *words, typed)
    line = " ".join(one_line(err).split())
    assert code == EXIT_USAGE and " ".join(said.split()) in line, line
