"""Output formats, one habit on every verb that prints data.

Every verb with ``-o table|wide|json|yaml`` also takes ``--json`` (README: "`--json` is `-o json`") and
prints the very same bytes for both; ``--json -o yaml`` is refused, not silently JSON; ``-o yaml`` is the
same data; JSON types do not flip with the spec's spelling; a table sent to a pipe is whole even where the
shell exports COLUMNS (bash does); ``-o wide`` shows more than the table where there is more to show.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cli_run
import pytest
import typer.main
import yaml

from nodeweave.cli import app, main
from nodeweave.cli.habits.lazy import LazyVerbs, every_command

SPEC = "name: demo\nnodes: 2\ngpus_per_node: 1\nimage: {variant: cpu}\nlauncher: {type: torchrun, script: train.py}\n"
RUN = {"run_id": "20260101T000000Z-demo", "job": "demo", "started": "2026-01-01T00:00:00Z", "seconds": 3.5,
       "command": ["train.py"], "summary": "every node exited 0",
       "nodes": [{"node": "node-0", "exit_code": 0, "log": "node-0.log"}, {"node": "node-1", "exit_code": 0,
                                                                          "log": "node-1.log"}]}


def walk(command, path=""):
    yield path, command
    below = every_command(command) if isinstance(command, LazyVerbs) else getattr(command, "commands", {})
    for name, sub in sorted(below.items()):
        yield from walk(sub, f"{path} {name}".strip())


LEAVES = {p: c for p, c in walk(typer.main.get_command(app)) if not hasattr(c, "commands")}


def flags(command):
    return {flag for p in command.params for flag in getattr(p, "opts", ())}


DATA_VERBS = sorted(p for p, c in LEAVES.items() if {"-o", "--json"} & flags(c) and not getattr(c, "hidden", False))

# each data verb as a new user runs it here (no engine needed: a dry run, or what reads local files)
SAMPLES = {
    "validate": ["validate"], "image variants": ["image", "variants"], "runs ls": ["runs", "ls"],
    "runs show": ["runs", "show", "last"], "render": ["render", "all", "--dry-run", "--out", "out"],
    "up": ["up", "--dry-run"], "down": ["down", "--dry-run"], "run": ["run", "--dry-run"],
    "exec": ["exec", "--dry-run", "--", "hostname"], "stop": ["stop", "--dry-run"], "shell": ["shell", "--dry-run"],
    "check": ["check", "--dry-run"],
    "image build": ["image", "build", "--dry-run"],
}
# data verbs that need a machine, a cluster or a second run to print anything
NO_SAMPLE = {"bench", "doctor", "hosts probe", "status", "runs compare", "sync", "top"}  # sync's dry run asks its targets; top reads a live node 0 (test_walk6_cli serves one)


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    run = tmp_path / "runs" / RUN["run_id"]
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(RUN))
    for node in ("node-0", "node-1"):
        (run / f"{node}.log").write_text("step 1 samples/s 10.0\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no engine: dry runs plan, nothing is reached
    monkeypatch.setenv("COLUMNS", "40")  # exported by the shell; stdout here is no terminal
    return tmp_path


def _call(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def _with(argv, *extra):
    at = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:at], *extra, *argv[at:]]


def test_every_data_verb_takes_both_spellings():
    for path in DATA_VERBS:
        assert {"-o", "--json"} <= flags(LEAVES[path]), f"`nodeweave {path}` lacks {({'-o', '--json'} - flags(LEAVES[path]))}"
    assert set(DATA_VERBS) <= set(SAMPLES) | NO_SAMPLE, set(DATA_VERBS) - set(SAMPLES) - NO_SAMPLE


@pytest.mark.parametrize("path", sorted(SAMPLES))
def test_json_is_o_json_and_yaml_the_same_data(path, folder, capsys):
    argv = SAMPLES[path]
    if path == "image build":
        repo = Path(__file__).resolve().parents[1]
        argv = [*argv, "--spec", str(repo / "nodeweave.yaml"), "--context", str(repo)]
    code, by_o, err = _call(_with(argv, "-o", "json"), capsys)
    assert code == 0, err
    code, by_flag, err = _call(_with(argv, "--json"), capsys)
    assert code == 0 and by_flag == by_o, f"`{path} --json` and `-o json` differ"
    code, as_yaml, err = _call(_with(argv, "-o", "yaml"), capsys)
    assert code == 0 and yaml.safe_load(as_yaml) == json.loads(by_o)
    code, _, err = _call(_with(argv, "--json", "-o", "yaml"), capsys)
    assert code == 2 and "--json is -o json" in err, (code, err)


def test_validate_json_types_do_not_flip_with_the_spelling(folder, capsys):
    seen = []
    for nodes, gpus in (("2", "8"), ("2", "auto"), ('"2:4"', "8"), ("3", "auto")):
        (folder / "nodeweave.yaml").write_text(SPEC.replace("nodes: 2", f"nodes: {nodes}")
                                               .replace("gpus_per_node: 1", f"gpus_per_node: {gpus}"))
        code, out, err = _call(["validate", "-o", "json"], capsys)
        assert code == 0, err
        data = json.loads(out)
        seen.append({key: type(value).__name__ for key, value in data.items() if value is not None})
    assert all(s == seen[0] for s in seen if set(s) == set(seen[0])), seen
    assert seen[0]["nodes"] == "int" and seen[0]["processes_per_node"] == "int"


@pytest.mark.parametrize("argv, whole", [(["image", "variants"], "NCCL"), (["runs", "ls"], RUN["run_id"]),
                                         (["runs", "show", "last"], "step 1 samples/s 10.0")])
def test_a_piped_table_is_whole_under_an_exported_columns(argv, whole, folder, capsys):
    code, out, err = _call(argv, capsys)
    assert code == 0, err
    assert "…" not in out and whole in out, out


@pytest.mark.parametrize("argv", [["image", "variants"], ["runs", "ls"]])
def test_wide_shows_more_than_the_table(argv, folder, capsys):
    _, table, _ = _call([*argv, "-o", "table"], capsys)
    _, wide, _ = _call([*argv, "-o", "wide"], capsys)
    assert wide != table and len(wide) > len(table)


# ---- value completion for every fixed choice -----------------------------------------------------

import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

LISTED = re.compile(r"^\\?\[?([a-z0-9][a-z0-9.-]*)\]?(?: \| [a-z0-9][a-z0-9.-]*| \([^)]*\) \| [a-z0-9.-]+)+"
                    r"|^([a-z0-9][a-z0-9-]*)(?:, [a-z0-9][a-z0-9-]*)*,? or [a-z0-9][a-z0-9-]*\b")


def _offered(param):
    complete = getattr(param, "_custom_shell_complete", None)
    for cell in getattr(complete, "__closure__", None) or ():
        found = getattr(cell.cell_contents, "choices", None)
        if found:
            return set(found)
    return set()


def _listed(text):
    """The values a help text opens with: 'auto | nccl | gloo', 'torchrun, deepspeed, accelerate or command'."""
    head = re.split(r"[:;(]", text or "", maxsplit=1)[0] if "|" not in (text or "") else (text or "").split(";")[0]
    match = LISTED.match(head.strip())
    if not match:
        return set()
    words = re.findall(r"[a-z0-9][a-z0-9.-]*", re.sub(r"\([^)]*\)", "", match.group(0)))
    return {w for w in words if w not in ("or",)}


def test_every_option_that_lists_its_values_completes_them():
    missing = []
    for path, command in LEAVES.items():
        for param in command.params:
            listed = _listed(getattr(param, "help", ""))
            if len(listed) >= 2 and not getattr(param, "is_flag", False) and not listed <= _offered(param):
                missing.append(f"{path} {param.opts[0] if getattr(param, 'opts', None) else param.name}: "
                               f"{sorted(listed - _offered(param))}")
    assert missing == []


def _complete(words, cword, cwd):
    env = {**os.environ, "_NODEWEAVE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    return cli_run.run([*cli_run.NODEWEAVE],
                          env=env, cwd=cwd, timeout=60).stdout.split()


@pytest.mark.parametrize("words, wanted", [
    ("nodeweave image build ", {"cpu"}), ("nodeweave init --launcher ", {"deepspeed", "command"}),
    ("nodeweave sync --method ", {"stream", "rsync", "tar"}), ("nodeweave bench --backend ", {"nccl", "gloo"}),
    ("nodeweave bench --dtype ", {"bfloat16"}), ("nodeweave run --node ", {"0", "1", "node-1"}),
    ("nodeweave shell --node ", {"node-0"}), ("nodeweave exec --node n", {"node-0", "node-1"}),
])
def test_values_complete_in_the_shell(words, wanted, tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    offered = set(_complete(words, len(words.split()) - (0 if words.endswith(" ") else 1), tmp_path))
    assert wanted <= offered, offered


# ---- runs compare compares -------------------------------------------------------------------------

def _second_run(folder):
    other = dict(RUN, run_id="20260102T000000Z-demo", started="2026-01-02T00:00:00Z", ended="2026-01-02T00:01:00Z",
                 exit_code=0)  # ended ok, so ranked (RUN records no end: not ranked, walk5 W21)
    run = folder / "runs" / other["run_id"]
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps(other))
    for node in ("node-0", "node-1"):
        (run / f"{node}.log").write_text("step 1 samples/s 12.0\n")
    return other["run_id"]


@pytest.mark.parametrize("argv, words", [
    (["runs", "compare", RUN["run_id"]], "compare needs two or more runs"),
    (["runs", "compare", "last", "last"], "is given 2 times"),
    (["runs", "compare", RUN["run_id"], "SECOND", "--chart", "c.txt", "--metric", "x"], ".png or .svg"),
    (["runs", "compare", RUN["run_id"], "SECOND", "--chart", "no/such/dir/c.png", "--metric", "x"], "does not exist"),
])
def test_runs_compare_refuses_what_compares_nothing(argv, words, folder, capsys):
    second = _second_run(folder)
    code, out, err = _call([second if a == "SECOND" else a for a in argv], capsys)
    assert code == 2 and words in err and out == "", (code, out, err)


def test_runs_compare_says_when_the_metric_is_missing_or_matches_nothing(folder, capsys):
    second = _second_run(folder)
    code, out, err = _call(["runs", "compare", RUN["run_id"], second], capsys)
    assert code == 0 and "--metric REGEX" in err
    code, out, err = _call(["runs", "compare", RUN["run_id"], second, "--metric", "tokens/s ([0-9.]+)"], capsys)
    assert code == 0 and "matches no line" in err
    code, out, err = _call(["runs", "compare", RUN["run_id"], second, "--metric", "samples/s ([0-9.]+)"], capsys)
    assert code == 0 and "matches no line" not in err and "(best)" in out


@pytest.mark.skipif(__import__("shutil").which("podman") is None, reason="status asks podman for the containers")
def test_status_wide_shows_more_than_the_table():
    """`status` with nothing up is one line now (walk6 W4), so the table is drawn here from an answering node's
    row as `status` builds it: -o wide adds the processes per node and keeps a down node's reason whole."""
    from types import SimpleNamespace

    from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

    from nodeweave.cluster.status import status_table

    backend = SimpleNamespace(spec=SimpleNamespace(name="team"), where="podman on this machine")
    reason = "the container exited (137): " + "x" * 80
    rows = [{"node": "node-0", "reached_as": "podman:team-0", "platform": None, "up": True, "error": None,
             "mode": "hold", "rank": 0, "role": None, "procs": 8, "plan_hash": "ab12", "plan_errors": [], "run": None,
             "now": None, "gpu": None, "recovery": None, "asked": True},
            {"node": "node-1", "reached_as": "podman:team-1", "platform": None, "up": False, "error": reason,
             "mode": None, "rank": None, "role": None, "procs": None, "plan_hash": None, "plan_errors": [],
             "run": None, "now": None, "gpu": None, "recovery": None, "asked": True}]

    def drawn(wide):
        console = Console(width=400, record=True, force_terminal=False)
        console.print(status_table(backend, rows, wide=wide))
        return console.export_text()

    table, wide = drawn(False), drawn(True)
    assert "processes" in wide and "processes" not in table
    assert "x" * 80 in wide and "x" * 80 not in table
