"""The eleventh walk, part A (issue 43, /work/wt/walk11a-report.md), rows fixed by fix11a: each row's class, one test
per class, each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import json

import pytest

import cli_run
from cli_run import in_process as run_cli, one_line
from team_folder import make_job_folder


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- A7: every field of a run's records (heat.json, goodput.json, recovery.json), items of its lists too, of the
# wrong type is named and not drawn, never a traceback nor served raw ------------------------------------------------

WHOLE = {  # what node 0 writes, one item per list: each damage below breaks one field of it
    "goodput.json": {"launched": 1.0, "ended": 11.0, "saved": 11.0, "generations": [
        {"generation": 0, "began": 1.0, "ended": 11.0, "first": 2.0, "last": 11.0, "resumed_step": None,
         "fault": {"at": 11.0, "why": "exit 1", "work_lost_s": 1.0, "resumed_step": 3},
         "stalls": [[5.0, 6.0], [9.0, None]], "steps": [[2.0, 1], [11.0, 10]]}]},
    "heat.json": {"schema": "nodeweave.heat/1", "span_s": 10.0, "max_cells": 64, "columns": [
        {"began": 1.0, "ended": 11.0, "generation": 0, "median_ms": 12.5, "ranks": 2, "ranks_seen": 2,
         "cells": {"0/0": 1.0, "1/1": 1.2}, "floor": 0.9}]},
    "recovery.json": {"generations": 2, "restarts": 1, "history": [{"generation": 0, "why": "exit 1"}]},
}
BAD_CELLS = [[1.0], {"x": 1.0}, {"0/0": "NaN"}, {"0/0": float("nan")}, {"0/0": True}]


def damaged_fields():
    """(record, path of the field, bad value): every field of :data:`RUN_RECORDS`'s shapes, nested ones too."""
    from nodeweave.runs import history

    rows = []

    def walk(record, path, kind):
        if isinstance(kind, dict):
            rows.append((record, path, "x"))
            for key, inner in kind.items():
                walk(record, path + (key,), inner)
        elif isinstance(kind, list):
            rows.append((record, path, "x"))
            rows.append((record, path, [1]))  # an item that is not a mapping
            for key, inner in kind[0].items():
                walk(record, path + (0, key), inner)
        elif isinstance(kind, history._RatiosOf):
            rows.extend((record, path, bad) for bad in BAD_CELLS)
        elif isinstance(kind, history._PairsOf):
            rows.extend((record, path, bad) for bad in ("x", [["x", 1]], [[1.0]]))
        else:
            rows.append((record, path, "x"))
            if kind in (history._NUMBERS, float):
                rows.append((record, path, float("nan")))

    for record, fields in history.RUN_RECORDS.items():
        for key, kind in fields.items():
            walk(record, (key,), kind)
    return [row for row in rows if len(row[1]) > 0]


def _set(document, path, value):
    document = json.loads(json.dumps(document))
    at = document
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return document


def _run_folder(root):
    folder = root / "runs" / "20261129T120000Z-proj"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"job": "proj", "ended": "2026-11-29T12:00:00Z"}))
    return folder


def test_whole_records_are_read_without_a_problem(capsys, job_folder):
    """A7: the shapes the check below breaks are what node 0 writes (no problem is said of them)."""
    from nodeweave.runs.history import record_problems

    folder = _run_folder(job_folder)
    for record, document in WHOLE.items():
        (folder / record).write_text(json.dumps(document))
    assert record_problems(folder) == []
    code, out, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0 and "not shown" not in out and "goodput:" in out, out + err


@pytest.mark.parametrize("record, path, bad", damaged_fields(), ids=lambda v: repr(v)[:40])
def test_a_field_of_the_wrong_type_in_a_runs_record_is_named_and_not_drawn(capsys, job_folder, record, path, bad):
    """A7, A8: a heat.json column's cells a list, ``began`` text, a ratio NaN or true, a key not node/rank, goodput.json's
    generation fields, recovery.json's history: ``runs show`` and ``dashboard --run`` say `not shown: <file>: field
    <where>` and draw nothing of it (a traceback, or served raw, before)."""
    from nodeweave.cli.dashboard import _finished_run
    from nodeweave.cluster import dashboard
    from nodeweave.runs.history import record_problems

    folder = _run_folder(job_folder)
    for name, document in WHOLE.items():
        (folder / name).write_text(json.dumps(document))
    (folder / record).write_text(json.dumps(_set(WHOLE[record], path, bad)))
    where = ".".join(str(p) for p in path).replace(".0.", "[0].").replace(".0", "[0]")
    problems = record_problems(folder)
    assert len(problems) == 1 and problems[0].startswith(f"{record}: field {where}"), (where, problems)
    code, out, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0 and f"not shown: {record}: field" in out, out + err
    path_, data, timeline, book, heat = _finished_run("last", None, None)
    state = dashboard.run_state(path_, data, timeline, book, heat, problems)
    assert state["problems"] == problems


# -- A2: a docs line that says it is what a make target runs is that target's command, word for word, and runs ----

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def make_claims():
    """(file, line number, command, target) of every line of README.md and docs/*.md ending in ``# make TARGET``."""
    import re

    rows = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = re.match(r"^(?!make )(\S.*?)\s+#\s*make ([a-z-]+)\b", line)
            if found:
                rows.append((path.name, number, found.group(1), found.group(2)))
    return rows


def _target_text(target: str) -> str:
    """What ``make TARGET`` runs: its recipe and the scripts the recipe names, continuations joined, the
    scripts' ``"$bin/"`` (the venv's bin) dropped."""
    import re

    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    text = recipe
    for script in re.findall(r"(examples/\S+\.sh|\.ci/\S+\.sh)", recipe):
        text += (ROOT / script).read_text()
    text = re.sub(r'"\$bin/([^"]+)"', r"\1", text.replace("\\\n", " "))
    return re.sub(r"\s+", " ", text)


def test_the_docs_name_the_make_target_lines():
    """A2: the check below has lines to check (the entrypoint's first example is one)."""
    assert any(name == "entrypoint.md" for name, _, _, _ in make_claims())


@pytest.mark.parametrize("name, number, command, target", make_claims())
def test_a_docs_line_said_to_be_what_make_runs_is_its_command_and_runs(name, number, command, target):
    """A2: docs/entrypoint.md's `... -- train.py   # make demo` was not what make demo runs (`-- examples/train.py`):
    pasted in a checkout, it exited 2 (no train.py there). Every such line is the target's command as written,
    and an entrypoint line of them explains from the checkout's root with exit 0."""
    import shlex

    assert command in _target_text(target), f"{name}:{number}: {command!r} is not what make {target} runs"
    words = shlex.split(command)
    if words[0] == "nodeweave-entrypoint" and "--explain" in words:
        done = cli_run.run([*cli_run.ENTRYPOINT, *words[1:]], cwd=ROOT, timeout=60)
        assert done.returncode == 0, done.stderr[-800:]


# -- A3: where `up` starts nothing in a mode (Backend.holds False), status shows no mode and no "up --run" job ------

@pytest.mark.parametrize("held", [True, False])
def test_status_shows_no_run_mode_job_where_up_holds_nothing(monkeypatch, held):
    """A3: on bare hosts (`up --engine none`: "bare hosts: nothing held"), status said every node was in mode run
    running "the spec's job (up --run: its main process)" and `-o json` "mode": "run", before any run: where the
    target's ``up`` holds nothing (``Backend.holds`` False) the mode is None and the run column "-"."""
    from types import SimpleNamespace

    from nodeweave.cluster import status
    from nodeweave.cluster.status import RUN_MODE_JOB, _since

    answer = SimpleNamespace(up=True, data={"mode": "run", "runs": [], "plan": {"node_rank": 0}}, error=None)
    monkeypatch.setattr(status, "ask_status", lambda node, command, **kw: answer)
    node = SimpleNamespace(index=0, name="node-0", remote=SimpleNamespace(label="ssh:localhost"))
    backend = SimpleNamespace(holds=held, states=lambda nodes: {})
    rows = status.gather(backend, [node], ["train.py"])
    assert rows[0]["mode"] == ("run" if held else None)
    assert (_since(rows[0]["run"], None, rows[0]["mode"]) == RUN_MODE_JOB) is held


def test_the_targets_that_hold_nothing_say_so():
    """A3: the rule above reads ``Backend.holds``: False for Slurm's allocation (and bare hosts with --engine none,
    ``HostsBackend``'s ``holds = self.engine != "none"``)."""
    from nodeweave.cluster.backends.slurm import SlurmCluster

    assert SlurmCluster.holds is False


# -- A4: the heat maps (heat.json's and the live page's) count a rank's collectives as top does: DDP's too ----------

def _ddp_view(node, rank, t):
    """A rank of a gloo DDP job at ``t`` s: 10 collectives a second issued by DDP's reducer (the flight recorder's
    count), 2 Python calls at the start (``seq``), 0.1 s of own work per collective (its time outside Python
    collectives grows with the wall clock: the reducer's are not Python calls)."""
    return {"node": node, "rank": rank, "seq": 2, "fr_enqueued": 2 + 10 * t, "fr_completed": 2 + 10 * t,
            "outside_s": float(t), "inside_s": 0.5}


def _finished_heat(times):
    from nodeweave.entrypoint.metrics.heat import HeatSummary

    summary = HeatSummary(span_s=10)
    for t in times:
        summary.feed(1000.0 + t, 0, [_ddp_view(n, n, t) for n in range(2)])
    return [(c["median_ms"], len(c["cells"])) for c in summary.columns]


def _live_heat(times):
    from nodeweave.cluster.dashboard import heat_map
    from nodeweave.entrypoint.metrics.rankcounts import collectives, recorded

    readings = []
    for t in times:
        views = [_ddp_view(n, n, t) for n in range(2)]
        ranks = [dict(v, collectives=collectives(v, recorded(views)), straggler_ratio=1.0) for v in views]
        readings.append((1000.0 + t, {"now": 1000.0 + t, "ranks": ranks}))
    drawn = heat_map(readings)
    return [(max(cell["ms"] for cell in column if cell), len(column)) for column in drawn["cells"]]


@pytest.mark.parametrize("heat", [_finished_heat, _live_heat], ids=["heat.json", "live page"])
def test_a_ddp_jobs_heat_map_has_a_column_per_span_at_its_own_work(heat):
    """A4: a gloo DDP run of 150 s left heat.json 2 columns (its first and last spans, where its Python calls were)
    at 5 s and 51 s of own work per collective: the heat maps counted ``seq`` alone, not the collectives DDP's
    reducer issues (top's and the rates' count). Now a column per span, each at 100 ms per collective."""
    columns = heat(range(0, 151, 5))
    assert len(columns) >= 14, columns
    assert all(abs(ms - 100.0) < 1.0 and ranks == 2 for ms, ranks in columns), columns


# -- A1: a list field of the spec given one value is refused saying it is a YAML list, and how to write it --------

LIST_FIELDS = [  # (the field's path, the one value given, the list the refusal writes)
    ("slurm.nodelist", "gpu[01-04]", '["gpu[01-04]"]'),
    ("slurm.nodelist", "gpu01,gpu[03-04]", '["gpu01", "gpu[03-04]"]'),
    ("hosts", "a,b", '["a", "b"]'),
    ("launcher.args", "--lr 3e-4", '["--lr", "3e-4"]'),
    ("launcher.options", "--tee", '["--tee"]'),
    ("image.apt", "curl", '["curl"]'),
    ("security.cap_add", "SYS_PTRACE", '["SYS_PTRACE"]'),
]


@pytest.mark.parametrize("path, value, written", LIST_FIELDS, ids=[row[0] + ":" + row[1] for row in LIST_FIELDS])
def test_a_list_field_given_one_value_names_the_list_to_write(tmp_path, path, value, written):
    """A1: `slurm.nodelist: "gpu[01-04]"` (sbatch's spelling) was refused as "got 'gpu[01-04]'; accepted: a list of
    ... such as gpu[01-04]", never saying a YAML list was wanted; `"gpu01,gpu01"` likewise. Every list field read
    by the one rule (``Reader.sequence``) says "a YAML list" and writes the list out."""
    import yaml

    from nodeweave.errors import UsageError
    from nodeweave.spec.loader import load_spec

    document = {"name": "demo", "nodes": 2, "image": {"variant": "cpu"}, "launcher": {"script": "train.py"},
                "slurm": {}, "security": {}}
    *parents, key = path.split(".")
    at = document
    for part in parents:
        at = at.setdefault(part, {})
    at[key] = value
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(yaml.safe_dump(document))
    with pytest.raises(UsageError) as err:
        load_spec(spec)
    said = [line for line in str(err.value).splitlines() if f" {path}:" in line]
    assert len(said) == 1, str(err.value)
    assert f"{path}: got {value!r}; accepted: a YAML list of" in said[0] and f"write {key}: {written}" in said[0], said


# -- A6: a chart option without matplotlib is refused before anything is printed (runs compare --chart, bench --plot)

def _two_runs(root):
    for index, stamp in enumerate(("20261129T120000Z-proj", "20261129T130000Z-proj")):
        folder = root / "runs" / stamp
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps({"job": "proj", "ended": "2026-11-29T12:00:00Z", "exit_code": 0}))
        (folder / "node-0.log").write_text(f"loss {0.5 + index}\n")


CHART_OPTIONS = {  # every chart option (chart.WITHOUT's keys): the command that takes it
    "--chart": ["runs", "compare", "20261129T120000Z-proj", "20261129T130000Z-proj", "--metric", "loss ([0-9.]+)"],
    "--plot": ["bench", "--dry-run"],
}


def test_every_chart_option_is_walked():
    """A6: the table below covers every option chart.py's refusal knows."""
    from nodeweave.runs.chart import WITHOUT

    assert set(CHART_OPTIONS) == set(WITHOUT)


@pytest.mark.parametrize("flag", sorted(CHART_OPTIONS))
def test_a_chart_option_without_matplotlib_is_refused_before_anything_is_printed(capsys, job_folder, monkeypatch,
                                                                                flag):
    """A6: `runs compare ... --chart cmp.svg` without matplotlib printed the whole table and terminal chart on stdout,
    then refused the chart (a script read a complete-looking answer with exit 3): refused first, as a bad path is."""
    import importlib.util

    from nodeweave.errors import EXIT_ENVIRONMENT

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    _two_runs(job_folder)
    code, out, err = run_cli(capsys, *CHART_OPTIONS[flag], flag, "cmp.svg")
    assert code == EXIT_ENVIRONMENT and out == "", (code, out, err)
    assert f"{flag} cmp.svg: matplotlib is not installed; pip install 'nodeweave[plot]'" in err, err


# -- A16: the job token is chowned to the images' user (UID 1000) only where a container of that user reads it -----

@pytest.mark.parametrize("engine", ["none", "podman", "docker"])
def test_the_job_token_is_chowned_to_uid_1000_only_where_a_container_reads_it(tmp_path, engine):
    """A16: `up --target hosts --engine none` as root left the job's secret token owned by UID 1000, on that host an
    unrelated account, which could read it; with no container the job runs as the ssh user: the file stays theirs.
    One rule with status's mode (``Backend.holds``): a target that starts containers chowns, one that does not not."""
    from plan_parts import up_steps

    from nodeweave.cluster import ClusterOptions, open_backend
    from nodeweave.spec import parse_spec

    spec_path = tmp_path / "nodeweave.yaml"
    spec_path.write_text("name: job\nimage: {variant: cpu, registry: localhost/t}\nnodes: 2\n"
                         "launcher: {script: train.py}\n")
    options = ClusterOptions(target="hosts", hosts=("10.0.0.1", "10.0.0.2"), engine=engine, remote_dir="/srv/job")
    backend = open_backend(parse_spec(spec_path.read_text(), str(spec_path)), spec_path, options.checked())
    sends = [step for phase in up_steps(backend, "hold", None if engine == "none" else "localhost/t/job:cpu")
             for step in phase if step.what.startswith("send a new job token")]
    assert len(sends) == 2
    for step in sends:
        assert ("chown 0:0" in " ".join(step.argv)) is backend.holds is (engine != "none"), step.argv


# -- A13: render --out into a sibling project is refused by the job its nodeweave.yaml names, record or none --------

@pytest.mark.parametrize("theirs", ["llama-pretrain", "proj"])
def test_render_into_a_sibling_projects_fresh_clone_is_refused_by_its_spec(capsys, tmp_path, monkeypatch, theirs):
    """A13: `render all --out ../sib`, where sib is a fresh clone of another project (its rendered files committed,
    its nodeweave.yaml naming job llama-pretrain, no .nodeweave/ since git ignores it), replaced 30 of its files with
    this job's, exit 0: the guard read only .nodeweave/rendered.json. A folder's nodeweave.yaml names the job its
    files are; the same job's folder still renders."""
    import shutil

    from nodeweave.errors import EXIT_USAGE

    spec = "image: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
    sib, own = tmp_path / "sib", tmp_path / "own"
    for folder, name in ((sib, theirs), (own, "proj")):
        folder.mkdir()
        (folder / "nodeweave.yaml").write_text(f"name: {name}\n{spec.replace('nodes: 2', 'nodes: 3')}"
                                               if folder is sib else f"name: {name}\n{spec}")
        (folder / "train.py").write_text("print('hi')\n")
    monkeypatch.chdir(sib)
    code, out, err = run_cli(capsys, "render", "all", "--out", ".")
    assert code == 0, err
    shutil.rmtree(sib / ".nodeweave")  # a clone: git ignores .nodeweave/
    before = (sib / "compose" / "node.yaml").read_text()
    monkeypatch.chdir(own)
    code, out, err = run_cli(capsys, "render", "all", "--out", str(sib))
    # the same job's name too: a folder with a spec of its own is another project (walk15 A7, fix17b)
    assert code == EXIT_USAGE and "is another project's folder (it holds its own spec, nodeweave.yaml, name: " \
        f"{theirs})" in one_line(err), err
    assert (sib / "compose" / "node.yaml").read_text() == before


# -- A14: a --spec named to a verb that only reads run folders is a spec, or refused as every verb refuses it -------

READER_VERBS = [("runs", "ls"), ("runs", "show", "last"), ("runs", "compare", "a", "b"), ("logs", "--run", "last"),
                ("dashboard", "--run", "last")]
BAD_SPECS = {"missing": (lambda tmp: tmp / "nodeweave.ymal", "spec file not found"),
             "empty": (lambda tmp: tmp / "empty.yaml", "the spec is empty"),
             "device": (lambda tmp: __import__("pathlib").Path("/dev/null"), "the spec is empty"),
             "invalid": (lambda tmp: tmp / "bad.yaml", "nme: unknown key")}


@pytest.mark.parametrize("verb", READER_VERBS, ids=" ".join)
@pytest.mark.parametrize("bad", sorted(BAD_SPECS))
def test_a_named_spec_that_is_none_is_refused_by_the_run_readers(capsys, job_folder, verb, bad):
    """A14: `runs ls --spec nodeweave.ymal` (a typo), `--spec /nonexist.yaml`, `/dev/null` or a spec holding `nme: x`
    listed runs/ beside it as empty (or "no runs under /runs"), exit 0, where every other verb refuses them: the runs
    verbs, `logs --run` and `dashboard --run` give the same refusal, exit 2."""
    from nodeweave.errors import EXIT_USAGE

    (job_folder / "empty.yaml").write_text("")
    (job_folder / "bad.yaml").write_text("nme: x\n")
    path, said = BAD_SPECS[bad]
    code, out, err = run_cli(capsys, *verb, "--spec", str(path(job_folder)))
    assert code == EXIT_USAGE and said in err and out == "", (code, out, err)


# -- A5: logs --rank reads every rank mark the product knows, nodeweave's own example's `[rank 1/2 node 1]` too ------

def _example_tag():
    """The tag examples/train.py prints before each line, as its source writes it."""
    import re

    source = (ROOT / "examples" / "train.py").read_text()
    return re.search(r'tag = f"(\[rank \{rank\}/\{world\} node \{node\}\])"', source).group(1)


RANK_MARKS = ["[rank{rank}]: ", "[Rank {rank}] ", "[rank {rank}] ", "EXAMPLE "]


@pytest.mark.parametrize("mark", RANK_MARKS)
def test_logs_rank_keeps_the_lines_of_every_rank_mark(capsys, job_folder, mark):
    """A5: `logs --rank 1` over a run of the shipped examples/train.py (`[rank 1/2 node 1] step 240/300 ...`) said "no
    line of these logs is marked with a rank": the script's own `[rank N]` / `[rank N/W ...]` is a rank mark too,
    as the step reader's ``plain`` logger reads it."""
    folder = job_folder / "runs" / "20261129T120000Z-proj"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"job": "proj", "ended": "2026-11-29T12:00:00Z"}))
    form = _example_tag() + " " if mark == "EXAMPLE " else mark
    for node in range(2):
        (folder / f"node-{node}.log").write_text(
            form.format(rank=node, world=2, node=node) + f"step 240/300 loss 0.{node}1 on rank {node}\n")
    code, out, err = run_cli(capsys, "logs", "--run", "last", "--rank", "1")
    assert code == 0 and "loss 0.11 on rank 1" in out and "on rank 0" not in out, (code, out, err)


# -- A11: a run `nodeweave stop` ended is accounted as training up to the stop, no fault, no work redone -----------

@pytest.mark.parametrize("fault_before_stop_s, redone", [(2.0, False), (600.0, True)])
def test_a_stopped_runs_goodput_has_no_fault_at_the_stop(capsys, job_folder, fault_before_stop_s, redone):
    """A11: a run ended by `nodeweave stop` after 144 s of training read `goodput: 0.0% ... work redone 143.95 s`:
    node 0 recorded the stop as a fault of generation 0. Its readers (`runs show`, `runs compare`, `dashboard
    --run`) end that generation at the stop instead; a fault long before the stop stays one."""
    import calendar
    import time

    from nodeweave.cli.dashboard import _finished_run
    from nodeweave.cluster import dashboard

    stop = calendar.timegm(time.strptime("2026-11-29T12:03:00Z", "%Y-%m-%dT%H:%M:%SZ"))
    launched, fault = stop - 1000.0, stop - fault_before_stop_s
    folder = _run_folder(job_folder)
    (folder / "stopped.json").write_text(json.dumps({"by": "nodeweave stop", "at": "2026-11-29T12:03:00Z",
                                                     "grace": 10.0}))
    steps = [[launched + 20 + t, 20 * (t + 1)] for t in range(0, int(fault - launched - 21), 1)]
    (folder / "goodput.json").write_text(json.dumps({
        "launched": launched, "ended": stop, "step_pattern": False, "generations": [
            {"generation": 0, "began": launched, "ended": None, "first": launched + 20, "last": fault - 1,
             "fault": {"at": fault, "why": "node 1 (vm)"}, "stalls": [], "steps": steps}]}))
    code, out, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0 and ("work redone" in out) is redone, out + err
    path, data, timeline, book, heat = _finished_run("last", None, None)
    buckets = dashboard.run_state(path, data, timeline, book, heat)["live"]["goodput"]["buckets"]
    assert (buckets["redone"] > 0) is redone, buckets


# -- A12: a bench result (or any file) in runs/ named to a run reader is said to be what it is ---------------------

@pytest.mark.parametrize("verb", [("runs", "show"), ("runs", "compare", "last"), ("logs", "--run"),
                                  ("dashboard", "--run")], ids=" ".join)
@pytest.mark.parametrize("name", ["20261129T130000Z-bench.json", "20261129T130000Z-bench"])
def test_a_bench_result_in_runs_is_named_as_one_by_the_run_readers(capsys, job_folder, verb, name):
    """A12: `runs show <time>-bench.json`, the file `nodeweave bench` had just written into runs/, was answered "no
    run ... under runs" as if it were not there: every reader of a run says it is a bench result, not a run."""
    from nodeweave.errors import EXIT_USAGE

    _run_folder(job_folder)
    (job_folder / "runs" / "20261129T130000Z-bench.json").write_text(json.dumps({"schema": "nodeweave.bench/1"}))
    code, out, err = run_cli(capsys, *verb, name)
    assert code == EXIT_USAGE and "20261129T130000Z-bench.json is a `nodeweave bench` result" in err, err


# -- A9: top --url / dashboard --url given a nodeweave dashboard's URL name it, and the source it reads -------------

@pytest.mark.parametrize("path", ["", "/", "/state.json", "/status.json"])
def test_a_dashboards_url_given_as_url_names_the_dashboard_and_its_source(path):
    """A9: `top --url http://127.0.0.1:18090` (the URL `dashboard` printed) said "HTTP 404 ...: not node 0's metrics
    port", and its /state.json "not a nodeweave status answer: schema 'nodeweave.dashboard/1'": both name it as
    nodeweave's dashboard and give the URL it reads (top's and the dashboard's --url: one reader, ask_live)."""
    from nodeweave.cluster import dashboard
    from nodeweave.cluster.top import ask_live

    source = "http://127.0.0.1:19465"
    server = dashboard.serve(lambda: {"schema": dashboard.SCHEMA, "mode": "live", "source": source}, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}{path}"
        live, why = ask_live(url=url, timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert live is None and "that is a nodeweave dashboard" in why and f"give --url {source}" in why, why


# -- A10: runs ls gives a script the runs' ids alone (-o name), and the other tools' spellings lead there ----------

@pytest.mark.parametrize("typed", ["-q", "--quiet", "--no-headers"])
def test_runs_ls_names_the_ids_alone_and_the_habits_lead_there(capsys, job_folder, typed):
    """A10: `runs ls -o name` was refused; `-q` was told "`runs ls -o json` gives the runs' ids", which gives whole
    records; `--no-headers` had no hint. `-o name` prints each id alone, one a line, and each habit names it."""
    _two_runs(job_folder)
    code, out, err = run_cli(capsys, "runs", "ls", "-o", "name")
    assert code == 0 and out.split() == ["20261129T120000Z-proj", "20261129T130000Z-proj"], (out, err)
    code, out, err = run_cli(capsys, "runs", "ls", typed)
    assert code != 0 and "`nodeweave runs ls -o name` prints the runs' ids alone" in err, err


# -- A15: hosts probe with no host named names the hosts `up` recorded here ---------------------------------------

def test_hosts_probe_with_no_host_names_the_hosts_up_recorded(capsys, job_folder):
    """A15: `hosts probe` where `up --target hosts` recorded two hosts said only "no hosts: name them with --node",
    while status, exec and top reach them untold: the refusal names the recorded hosts (and ssh options) as a
    command to paste."""
    from nodeweave.cluster import ClusterOptions
    from nodeweave.cluster.options import save_state
    from nodeweave.errors import EXIT_USAGE
    from nodeweave.spec import load_spec

    spec = job_folder / "nodeweave.yaml"
    save_state(spec, load_spec(spec).name, ClusterOptions(target="hosts", hosts=("gpu1", "gpu2"), engine="none",
                                                          ssh_options=("Port=2222",)))
    code, out, err = run_cli(capsys, "hosts", "probe")
    assert code == EXIT_USAGE and "hosts probe --node gpu1 --node gpu2 --ssh-option Port=2222" in err, err
