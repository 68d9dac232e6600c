"""The tenth walk, part A, rows A1, A2, A4..A9 (issue 43, /work/wt/walk10a-report.md): each row's class, one test per
class, each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, leaves, one_line
from nodeweave.errors import EXIT_USAGE
from team_folder import make_team

LEAVES = leaves()
COMMANDS = {" ".join(words): command for words, command in LEAVES}


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def long_flags(command) -> "set[str]":
    return {name for p in command.params if p.param_type_name == "option" for name in p.opts}


# -- A2: --json with an -o the user typed, -o table too, is refused on every verb that takes both ------------------

FORMAT_VERBS = [words for words, command in LEAVES if {"--json", "--output"} <= long_flags(command)]
NEEDED = {"runs compare": ["a", "b"]}  # required arguments, never read


def _dry(words) -> "list[str]":
    return ["--dry-run"] if "--dry-run" in long_flags(COMMANDS[" ".join(words)]) else []


def test_the_walk_finds_validate_and_bench_among_the_verbs_with_json_and_output():
    assert ["validate"] in FORMAT_VERBS and ["bench"] in FORMAT_VERBS and len(FORMAT_VERBS) >= 15


@pytest.mark.parametrize("words", FORMAT_VERBS, ids=" ".join)
@pytest.mark.parametrize("spelling", [["-o", "table"], ["--output=table"], ["before"]], ids=["-o", "--output=", "before"])
def test_json_with_a_typed_table_is_refused_on_every_verb(capsys, team, words, spelling):
    """A2: `validate --json -o table` (and `nodeweave -o table validate --json`) printed JSON and dropped the -o the
    user typed; only the default -o gives way to --json."""
    needed = NEEDED.get(" ".join(words), [])
    if spelling == ["before"]:
        argv = ["-o", "table", *words, "--json", *_dry(words), *needed]
    else:
        argv = [*words, "--json", *spelling, *_dry(words), *needed]
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert "--json is -o json, and -o table asks for table: give one of them" in one_line(err)


def test_json_alone_and_with_o_json_still_print_json(capsys, team):
    """A2: the default -o table gives way to --json, and -o json agrees with it."""
    import json

    for extra in ([], ["-o", "json"]):
        code, out, err = run_cli(capsys, "validate", "--json", *extra)
        assert code == 0, err
        assert json.loads(out)["name"] == "team"


# -- A1: an empty argument's hint offers "leave it off for its default" only where it has one --------------------

ARGUMENTS = [(words, param) for words, command in LEAVES for param in command.params
             if param.param_type_name == "argument"]


def _has_default(param) -> bool:
    """As each argument's declaration and help say it (the product's own words, read independently here)."""
    return not param.required and (param.default is not None or "default" in (param.help or "").lower())


def test_the_walk_finds_arguments_with_and_without_a_default():
    named = {(" ".join(words), param.name): _has_default(param) for words, param in ARGUMENTS}
    assert named[("runs compare", "runs")] is False and named[("exec", "command")] is False
    assert named[("runs show", "run")] is True and named[("render", "target")] is True


@pytest.mark.parametrize("words,param", ARGUMENTS, ids=[f"{' '.join(w)}-{p.name}" for w, p in ARGUMENTS])
def test_an_empty_argument_is_told_what_leaving_it_off_does(capsys, team, words, param):
    """A1: `runs compare "$E" last` said "give RUNS, or leave it off for its default", and leaving it off is "missing
    argument 'runs'": only an argument with a default is offered it; a deprecated one is left off for what replaced
    it; one without a default says what it takes."""
    code, out, err = run_cli(capsys, *words, "")
    line = one_line(err)
    assert code == EXIT_USAGE and "'' is empty" in line, (out, err)
    if _has_default(param):
        assert "or leave it off for its default" in line
    else:
        assert "for its default" not in line
        if param.hidden:
            assert "or leave it off (deprecated:" in line
        else:
            assert "it has no default" in line


def test_runs_compare_empty_says_what_it_takes(capsys, team):
    """A1: the walker's own line: what RUNS takes, and where the ids are listed."""
    code, _, err = run_cli(capsys, "runs", "compare", "", "last")
    line = one_line(err)
    assert code == EXIT_USAGE
    assert "give RUNS (run or sweep ids (`nodeweave runs ls` names them;" in line and "it has no default" in line


# -- A4: `-` is a stream only for --spec; every other path option or argument refuses it --------------------------


def _path_params():
    from pathlib import Path
    from typing import get_args, get_origin

    found = []
    for words, command in LEAVES:
        for param in command.params:
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if get_origin(annotation) is list:
                (annotation,) = get_args(annotation)
            if annotation is Path and "--spec" not in param.opts:
                found.append((words, param))
    return found


PATH_PARAMS = _path_params()


def test_the_walk_finds_the_path_options_that_write():
    named = {(" ".join(words), param.name) for words, param in PATH_PARAMS}
    assert {("render", "out"), ("hosts probe", "write_hostfile"), ("init", "path"), ("bench", "json_path"),
            ("doctor", "capture"), ("run", "runs_dir"), ("sync", "src"), ("hosts probe", "hosts_file")} <= named


@pytest.mark.parametrize("words,param", PATH_PARAMS, ids=[f"{' '.join(w)}-{p.name}" for w, p in PATH_PARAMS])
def test_a_dash_for_a_path_is_refused(capsys, team, words, param):
    """A4: `render entrypoint --out -` made and filled a folder named `-` (`--spec -` is stdin, so `-` read as
    stdout); every path option and argument but --spec refuses `-`, naming ./- for a file or folder of that name."""
    given = ["-"] if param.param_type_name == "argument" else [max(param.opts, key=len), "-"]
    code, out, err = run_cli(capsys, *words, *given, *NEEDED.get(" ".join(words), []))
    line = one_line(err)
    assert code == EXIT_USAGE, (out, err)
    assert "'-' is standard input or output only for --spec" in line and "./-" in line, line
    assert not (team / "-").exists()


def test_spec_dash_still_reads_stdin_and_dot_slash_dash_is_a_folder(capsys, team, monkeypatch):
    """A4: `--spec -` reads the spec from stdin as ever; `render --out ./-` is the folder named - the user asked for."""
    import io

    from nodeweave.spec import loader

    monkeypatch.setattr(loader, "_read_from_streams", {})
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO((team / "nodeweave.yaml").read_bytes())))
    code, out, err = run_cli(capsys, "validate", "--spec", "-")
    assert code == 0, err
    code, out, err = run_cli(capsys, "render", "entrypoint", "--out", "./-", "--dry-run")
    assert code == 0, err


# -- A6: a leading UTF-8 byte-order mark is skipped in every text file nodeweave reads, as YAML skips it in a spec ---

BOM = b"\xef\xbb\xbf"


def test_bounded_read_text_skips_a_leading_byte_order_mark_only(tmp_path):
    """A6: the one reader of a user's text file (``bounded.read_text``) skips the mark Notepad writes, once."""
    from nodeweave.entrypoint import bounded

    (tmp_path / "f").write_bytes(BOM + b"gpu01\n" + BOM + b"x\n")
    assert bounded.read_text(tmp_path / "f", bounded.TEXT_CAP, "a file") == "gpu01\n\ufeffx\n"


HOSTS_FILE_VERBS = [("hosts", "probe", "--dry-run"), ("sync", "--dry-run", ".", "/srv/job"),
                    ("up", "-t", "hosts", "--remote-dir", "/srv/job", "--dry-run"),
                    ("down", "-t", "hosts", "--remote-dir", "/srv/job", "--dry-run")]


@pytest.mark.parametrize("words", HOSTS_FILE_VERBS, ids=lambda words: words[0])
def test_a_hosts_file_with_a_byte_order_mark_reads_its_first_host(capsys, team, words):
    """A6: `printf '\\xef\\xbb\\xbfgpu01\\ngpu02\\n' > hf` (Notepad's "UTF-8 with BOM") was refused as host '\\ufeffgpu01';
    every verb that reads a hosts file reads gpu01."""
    (team / "hf").write_bytes(BOM + b"gpu01\ngpu02\n")
    code, out, err = run_cli(capsys, *words, "--hosts-file", "hf")
    assert "ufeff" not in out + err and "\ufeff" not in out + err, err
    assert code == 0, err
    assert "gpu01" in out + err


def test_a_requirements_file_with_a_byte_order_mark_is_read(capsys, team):
    """A6: image.requirements saved with a BOM: its first line was '\\ufeffnumpy==1.26.0', "not pinned"."""
    (team / "req.txt").write_bytes(BOM + b"numpy==1.26.0\n")
    spec = (team / "nodeweave.yaml").read_text().replace("  variant: cpu\n", "  variant: cpu\n  requirements: req.txt\n")
    (team / "nodeweave.yaml").write_text(spec)
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, err


def test_an_ignore_file_with_a_byte_order_mark_ignores_its_first_pattern(tmp_path):
    """A6: a .nodeweaveignore saved with a BOM: its first pattern was '\\ufeffdata/', which matched nothing, so data/
    was sent without a word."""
    from nodeweave.sync.filters import IGNORE_FILE, build_filter

    (tmp_path / IGNORE_FILE).write_bytes(BOM + b"data/\n")
    rule = build_filter(tmp_path, use_gitignore=False).match("data", True)
    assert rule is not None and rule.action == "-", rule


# -- A7: one reader of a hosts file for every verb: a host listed again, in any spelling, named by file and line ----


@pytest.mark.parametrize("words", HOSTS_FILE_VERBS, ids=lambda words: words[0])
@pytest.mark.parametrize("lines,again", [("gpu01\nGPU01\n", "'GPU01' is listed already on line 1 as 'gpu01'"),
                                         ("gpu01\n# spare\ngpu01.\n", "'gpu01.' is listed already on line 1 as"),
                                         ("me@gpu01\nyou@Gpu01\n", "'you@Gpu01' is listed already on line 1 as"),
                                         ("gpu01\ngpu01\n", "'gpu01' is listed already on line 1 (")],
                         ids=["case", "dot", "user", "same"])
def test_a_host_listed_again_is_named_by_file_and_line(capsys, team, words, lines, again):
    """A7: `hosts probe --hosts-file hf` with gpu01 and GPU01 said "--node 'ssh:GPU01' is not accepted", a flag never
    typed, and no file or line; the up/down reader said it by line. Every verb that reads a hosts file says it so."""
    (team / "hf").write_text(lines)
    code, out, err = run_cli(capsys, *words, "--hosts-file", "hf")
    line = one_line(err)
    assert code == EXIT_USAGE, (out, err)
    assert "hosts file hf, line " in line and again in line and "--node" not in line, line


def test_container_names_in_a_hosts_file_keep_their_case(capsys, team):
    """A7: the case of a host name is folded, never a container's (docker and podman names are case-sensitive)."""
    from nodeweave.remote.names import hosts_file_lines

    (team / "hf").write_text("Node\nnode\n")
    assert [host for _, host in hosts_file_lines(team / "hf", fold_case=False)] == ["Node", "node"]


# -- A8: MPICH's host:N in a hosts file is named as both things it may mean -------------------------------------


@pytest.mark.parametrize("words", HOSTS_FILE_VERBS, ids=lambda words: words[0])
@pytest.mark.parametrize("first,name", [("gpu01:8", "gpu01"), ("me@gpu01:8", "me@gpu01")])
def test_host_colon_count_in_a_hosts_file_names_slots_and_the_port(capsys, team, words, first, name):
    """A8: `gpu01:8` in an MPICH/Horovod hostfile got only "ssh takes the port apart, as --ssh-option Port=8": the
    user meant 8 slots. Every verb that reads a hosts file names DeepSpeed's slots form first, and the port too."""
    (team / "hf").write_text(f"{first}\ngpu02:8\n")
    code, out, err = run_cli(capsys, *words, "--hosts-file", "hf")
    line = one_line(err)
    assert code == EXIT_USAGE, (out, err)
    assert f"hosts file hf, line 1: host '{first}'" in line and "MPICH's host:N form" in line, line
    assert f"'{name} slots=8' (DeepSpeed's form) for 8 slots" in line and "--ssh-option Port=8" in line, line


# -- A9: a file nodeweave writes under any name is never named as another format -------------------------------

from nodeweave.cli.habits.replace import ANY_NAME, FORMAT_ENDINGS  # noqa: E402

# Every writer of an ANY_NAME kind, as the user names its file: (kind, how the command line is made).
ANY_NAME_WRITERS = [("hostfile", lambda name: (["hosts", "probe", "--node", "gpu01", "--write-hostfile", name,
                                                 "--dry-run"], {})),
                    ("hostfile", lambda name: (["hosts", "probe", "--node", "gpu01", "--hostfile", name,
                                                 "--dry-run"], {})),
                    ("plan", lambda name: (["validate"], {"NODEWEAVE_PLAN_RECORD": name}))]


def test_every_any_name_kind_has_a_writer_here():
    assert {kind for kind, _ in ANY_NAME_WRITERS} == set(ANY_NAME)


@pytest.mark.parametrize("kind,make", ANY_NAME_WRITERS, ids=["write-hostfile", "hostfile", "plan-record"])
@pytest.mark.parametrize("ending", sorted(FORMAT_ENDINGS))
def test_a_file_of_any_name_is_never_named_as_another_format(capsys, team, monkeypatch, kind, make, ending):
    """A9: `hosts probe --write-hostfile ds_config.json` (run.py, spec.yaml) would write `host slots=N` lines under a
    name that says JSON, Python, a spec; every writer of a kind that takes any name refuses another format's ending
    (its own, a plan record's .json, is taken)."""
    argv, env = make(f"out{ending}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, err = run_cli(capsys, *argv)
    if ending in ANY_NAME[kind][1]:
        assert "says" not in err, err
        return
    line = err.strip().splitlines()[-1]
    assert code == EXIT_USAGE, (out, err)
    assert f"out{ending}" in line and f"a name ending in {ending} says {FORMAT_ENDINGS[ending]}" in line, line
    assert f"e.g. {ANY_NAME[kind][2]}" in line
    assert not (team / f"out{ending}").exists()


@pytest.mark.parametrize("name", ["hostfile", "hosts.txt", "ds_hosts"])
def test_a_hostfile_by_a_name_of_no_format_is_planned(capsys, team, name):
    """A9: the names a hostfile has (`hostfile`, `hosts.txt`) are taken as ever."""
    code, out, err = run_cli(capsys, "hosts", "probe", "--node", "gpu01", "--write-hostfile", name, "--dry-run")
    assert code == 0 and f"would write {name}" in out + err, err


# -- A5: bench's sizes as the launch measures them, said before any launch; two measured as one refused -------------


@pytest.mark.parametrize("sizes,dtype,nranks,measured", [([3, 5], "float32", 2, None), ([1024, 1025], "float32", 2, None),
                                                         ([1, 2, 4, 8, 16], "float32", 2, None),
                                                         ([3], "float32", 2, [8]), ([1000, 2048], "bfloat16", 3, [996, 2046]),
                                                         ([1024, 2048], "float32", 2, [1024, 2048])])
def test_measured_sizes_name_what_changes_and_refuse_what_repeats(sizes, dtype, nranks, measured):
    """A5: the one rounding rule (options.measured_bytes), said for each size it changes, and two sizes measured as
    one refused as the duplicate they become."""
    from nodeweave.bench.options import measured_sizes
    from nodeweave.errors import UsageError

    if measured is None:
        with pytest.raises(UsageError) as caught:
            measured_sizes(sizes, dtype, nranks, "X")
        assert "measured as" in str(caught.value) and "times" in str(caught.value), caught.value
        return
    got, note = measured_sizes(sizes, dtype, nranks, "X")
    assert got == measured
    assert ("is measured as" in note) == (got != sizes), note


def test_the_worker_measures_by_the_one_rule():
    """A5: the worker's buffers are the sizes the driver announced."""
    torch = pytest.importorskip("torch")
    from nodeweave.bench.options import measured_bytes
    from nodeweave.bench.worker import Collective

    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        for nbytes, nranks in ((3, 1), (1001, 1), (1000, 1)):
            coll = Collective(op, nbytes, torch.float32, torch.device("cpu"), 0, nranks)
            assert coll.nbytes == measured_bytes(nbytes, 4, nranks) and coll.count * 4 == coll.nbytes


@pytest.fixture
def alone(team, monkeypatch):
    from nodeweave.bench.runner import TOPOLOGY_VARS

    for name in TOPOLOGY_VARS:
        monkeypatch.delenv(name, raising=False)
    return team


@pytest.mark.parametrize("sizes,said", [("3,5", "--sizes 3,5: 3B and 5B are both measured as 8B"),
                                        ("1K,1025", "--sizes 1K,1025: 1K and 1025B are both measured as 1K"),
                                        ("1:16", "--sizes 1:16: 1B, 2B, 4B and 8B are all measured as 8B")])
@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_bench_refuses_sizes_measured_as_one_before_any_launch(capsys, alone, monkeypatch, sizes, said, dry):
    """A5: `bench --sizes 3,5` ran and measured 8 B twice, and the dry run said nothing; both refuse now, exit 2,
    before any launch (a launch here would fail the test: none is started)."""
    from nodeweave.bench import runner

    monkeypatch.setattr(runner, "launch", lambda *a, **k: pytest.fail("a launch started"))
    code, out, err = run_cli(capsys, "bench", "--sizes", sizes, "--nproc", "2", "--backend", "gloo", "--iters", "1",
                             "--warmup", "0", *(["--dry-run"] if dry else []))
    line = one_line(err)
    assert code == EXIT_USAGE and said in line and "multiple of 8B" in line, line


def test_bench_dry_run_says_a_size_it_changes(capsys, alone):
    """A5: `--sizes 3` is measured as 8 B over 2 ranks of float32: the dry run says so."""
    code, out, err = run_cli(capsys, "bench", "--sizes", "3,1K", "--nproc", "2", "--backend", "gloo", "--dry-run")
    assert code == 0, err
    assert "note: --sizes 3,1K: 3B is measured as 8B: each of the 2 rank(s)" in err, err
