"""The ninth walk, part A, rows A1..A12 (issue 43, /work/wt/walk9a-report.md): each row's class, one test per class,
each failing on the code before its fix; each test's docstring starts with the rows it covers."""

from __future__ import annotations

import re

import pytest

from cli_run import in_process as run_cli, leaves, one_line
from nodeweave.errors import EXIT_USAGE, UsageError
from team_folder import make_team

LEAVES = leaves()
BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def long_flags(command) -> "set[str]":
    return {name for p in command.params if p.param_type_name == "option" for name in p.opts}


# -- A2: --json with another -o is refused on every verb that takes both, bench too --------------------------------

FORMAT_VERBS = [words for words, command in LEAVES if {"--json", "--output"} <= long_flags(command)]


def test_the_walk_finds_bench_among_the_verbs_with_json_and_output():
    assert ["bench"] in FORMAT_VERBS and len(FORMAT_VERBS) >= 15


@pytest.mark.parametrize("words", FORMAT_VERBS, ids=" ".join)
@pytest.mark.parametrize("other", ["yaml", "wide"])
def test_json_with_another_output_is_refused_on_every_verb(capsys, team, words, other):
    """A2: `--json -o yaml` said two things; bench took the JSON and dropped -o silently."""
    needed = {"runs compare": ["a", "b"]}.get(" ".join(words), [])  # its required arguments, never read
    dry = ["--dry-run"] if "--dry-run" in long_flags(dict((" ".join(w), c) for w, c in LEAVES)[" ".join(words)]) else []
    code, out, err = run_cli(capsys, *words, "--json", "-o", other, *dry, *needed)
    assert code == EXIT_USAGE, (out, err)
    assert f"--json is -o json, and -o {other} asks for {other}: give one of them" in one_line(err)


# -- A9: a file inside a run folder given as --spec is named as the run's record, by every verb that reads a spec ---

SPEC_VERBS = [words for words, command in LEAVES if "--spec" in long_flags(command) and words[0] not in ("init",)]


def test_the_walk_finds_the_verbs_that_read_a_spec():
    assert {"validate", "up", "run", "render"} <= {words[0] for words in SPEC_VERBS}


@pytest.mark.parametrize("beside", [True, False], ids=["in-runs-beside-the-spec", "copied-elsewhere"])
def test_a_run_folders_spec_is_its_record_not_a_spec(capsys, tmp_path, monkeypatch, beside):
    """A9: `validate --spec runs/<id>/spec.yaml` said valid, and up and run then wrote inside the run folder."""
    from nodeweave.spec import load_spec

    base = tmp_path / "proj"
    run = base / ("runs" if beside else "saved") / "20261130T100000Z-sp"
    run.mkdir(parents=True)
    (base / "nodeweave.yaml").write_text(BASE)
    (run / "spec.yaml").write_text(BASE)
    (run / "run.json").write_text('{"job": "sp"}\n')
    monkeypatch.chdir(base)
    with pytest.raises(UsageError) as caught:
        load_spec(run.relative_to(base) / "spec.yaml")
    said = str(caught.value)
    assert "a run's record" in said and "20261130T100000Z-sp" in said and "copy this file out" in said
    assert "(--spec nodeweave.yaml)" in said
    assert load_spec(base / "nodeweave.yaml").name == "j"  # the spec beside it is read as ever


@pytest.mark.parametrize("words", SPEC_VERBS, ids=" ".join)
def test_every_verb_refuses_a_run_folders_spec(capsys, tmp_path, monkeypatch, words):
    """A9: every verb that reads --spec names a run folder's spec.yaml as the run's record, exit 2."""
    run = tmp_path / "runs" / "20261130T100000Z-sp"
    run.mkdir(parents=True)
    (tmp_path / "nodeweave.yaml").write_text(BASE)
    (tmp_path / "t.py").write_text("print(1)\n")
    (run / "spec.yaml").write_text(BASE)
    (run / "run.json").write_text('{"job": "sp"}\n')
    monkeypatch.chdir(tmp_path)
    command = dict((" ".join(w), c) for w, c in LEAVES)[" ".join(words)]
    dry = ["--dry-run"] if "--dry-run" in long_flags(command) else []
    needed = {"runs compare": ["a", "b"], "run": ["--", "t.py"], "exec": ["--", "ls"]}.get(" ".join(words), [])
    code, out, err = run_cli(capsys, *words, "--spec", "runs/20261130T100000Z-sp/spec.yaml", *dry, *needed)
    assert code == EXIT_USAGE, (out, err)
    assert "is a run's record" in err, err


# -- A4: a file an option writes is named as what it holds: a spec .yaml/.yml, bench's numbers .json -----------------

def written_kinds():
    from nodeweave.cli.habits.replace import SUFFIXES

    argv = {"spec": ["init", "--dry-run", "--script", "t.py", "--out"], "bench": ["bench", "--dry-run", "--json-out"],
            "chart": ["bench", "--dry-run", "--plot"]}
    return [(kind, argv[kind], name) for kind in SUFFIXES
            for name in ("main.py", "a.json" if kind != "bench" else "a.yaml", "noending")]


def test_the_walk_finds_every_kind_with_a_name_of_its_own():
    assert {"spec", "bench", "chart"} <= {kind for kind, _, _ in written_kinds()}


@pytest.mark.parametrize("kind, argv, name", written_kinds(), ids=lambda v: v if isinstance(v, str) else None)
def test_a_written_file_named_as_another_format_is_refused(capsys, tmp_path, monkeypatch, kind, argv, name):
    """A4: `init --out main.py` wrote YAML into main.py (and `--out a.json` into a .json); validate then read it."""
    from nodeweave.cli.habits.replace import SUFFIXES

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("print(1)\n")
    code, out, err = run_cli(capsys, *argv, name)
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    assert name in line and "accepted: a file name ending in " + " or ".join(SUFFIXES[kind][1]) in line
    assert not (tmp_path / name).exists()


def test_a_spec_named_py_points_at_script(capsys, tmp_path, monkeypatch):
    """A4: the likely slip, --out for --script, is named."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("print(1)\n")
    code, _, err = run_cli(capsys, "init", "--out", "main.py", "--script", "a.py")
    assert code == EXIT_USAGE and "(--script names the training script)" in one_line(err)
    assert run_cli(capsys, "init", "--out", "job.yml", "--script", "a.py")[0] == 0


# -- A6: an unpinned requirement is told the pinned form that fits it, by validate and by init's note alike ---------

FORMS = [("git+https://github.com/x/y@v1#egg=y", "y @ git+https://github.com/x/y@<commit>"),
         ("https://files.example.com/y-1.0-py3-none-any.whl", "y @ https://files.example.com/y-1.0-py3-none-any.whl"),
         ("./wheels/y-1.0-py3-none-any.whl", "write y==1.0 and give the wheel's folder to the build"),
         ("torch>=2", "pin it (name==version)"),
         # replay10 A6: the editable forms were "an option a pinned image cannot take; change that line", no form
         ("-e git+https://github.com/x/y@v1#egg=y", "editable install, which an image cannot keep: write it as "
          "y @ git+https://github.com/x/y@<commit>"),
         ("--editable=git+https://github.com/x/y@v1#egg=y", "write it as y @ git+https://github.com/x/y@<commit>"),
         ("-e ./libs/y", "editable install of a local folder, which an image cannot keep: copy the folder into the "
          "workspace")]


@pytest.mark.parametrize("line, form", FORMS, ids=[line for line, _ in FORMS])
def test_init_and_validate_name_the_pinned_form_that_fits(capsys, tmp_path, monkeypatch, line, form):
    """A6: init told a git or wheel line "pin it (name==version)", a form it cannot take; validate named no form."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("print(1)\n")
    (tmp_path / "requirements.txt").write_text(line + "\n")
    code, _, err = run_cli(capsys, "init", "--dry-run", "--script", "t.py")
    assert code == 0
    note = next(text for text in err.splitlines() if "left out of image.requirements" in text)
    assert form in note, note
    if form != "pin it (name==version)":
        assert "pin it (name==version)" not in note
    (tmp_path / "s.yaml").write_text(BASE.replace("image: {variant: cpu}",
                                                  "image: {variant: cpu, requirements: requirements.txt}"))
    code, _, err = run_cli(capsys, "validate", "--spec", "s.yaml")
    assert code == EXIT_USAGE and form in one_line(err)


# -- A11: bench's default result goes in runs/ beside the spec, as every verb's runs, wherever it is typed ----------

def test_bench_writes_its_default_result_in_the_specs_runs(capsys, team, monkeypatch):
    """A11: from a subfolder of the project, bench wrote src/runs/nodeweave-bench.json (which sync then sent)."""
    (team / "src").mkdir()
    monkeypatch.chdir(team / "src")
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--sizes", "1K", "--ops", "all_reduce")
    assert code == 0, err
    assert re.search(rf"{team}/runs/\d{{8}}T\d{{6}}Z-bench\.json", out) and "src/runs" not in out  # walk10 A27
    assert not (team / "src" / "runs").exists()


# -- A12: every option of seconds reads 300, 2.5, 30s, 5m, 1h30m, as logs --since does: one reader ------------------

def seconds_options():
    """(verb words, flag, marked) for every float option whose help speaks of seconds."""
    from nodeweave.cli.habits.coercion import SECONDS_MARK

    found = []
    for words, command in LEAVES:
        for param in command.params:
            info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
            if "second" in (getattr(param, "help", "") or "").lower() and param.param_type_name == "option" and \
                    getattr(getattr(param, "type_descriptor", None), "annotation", None) in (float, "float"):
                found.append((words, max(param.opts, key=len), bool(getattr(info, SECONDS_MARK, False))))
    return found


SECONDS = seconds_options()


def test_the_walk_finds_every_option_of_seconds():
    flags = {(" ".join(words), flag) for words, flag, _ in SECONDS}
    assert {("exec", "--timeout"), ("stop", "--grace"), ("up", "--timeout"), ("bench", "--timeout"),
            ("check", "--timeout"), ("check", "--seconds"), ("top", "--interval")} <= flags


@pytest.mark.parametrize("words, flag, marked", SECONDS, ids=[f"{' '.join(w)} {f}" for w, f, _ in SECONDS])
def test_every_option_of_seconds_takes_a_duration(capsys, team, words, flag, marked):
    """A12: `exec --timeout 5s` (and six more) was "not a number", the unit kubectl and logs --since take."""
    assert marked, f"{' '.join(words)} {flag} reads seconds but not through seconds_option"
    tail = ["--", "ls"] if words[0] in ("exec", "run") else []
    dry = ["--dry-run"] if "--dry-run" in long_flags(dict((" ".join(w), c) for w, c in LEAVES)[" ".join(words)]) \
        else []  # top and dashboard: the job is not up, said at once
    code, out, err = run_cli(capsys, *words, flag, "5x", *dry, *tail)
    assert code == EXIT_USAGE and f"{flag} '5x' is not accepted: a number of seconds (300, 2.5), or one with a unit" in \
        one_line(err)
    code, out, err = run_cli(capsys, *words, flag, "2m", *dry, *tail)
    assert flag not in err, err  # read (as 120), whatever the verb then says about the cluster


@pytest.mark.parametrize("text, value", [("300", 300), ("2.5", 2.5), ("30s", 30), ("5m", 300), ("1h30m", 5400),
                                         ("1.5m", 90), ("5x", None), ("", None), ("-1", None), ("1d", None)])
def test_the_one_duration_reader(text, value):
    """A12: one reader for every option of seconds and logs --since."""
    from nodeweave.quantities import seconds

    assert seconds(text) == value


def test_logs_since_takes_plain_seconds_too():
    """A12: `logs --since 300` was refused ("a number and a unit"), the form every other time option took."""
    from nodeweave.cluster.logs import log_window

    assert log_window(None, "300") == ("--since", "300s")
    assert log_window(None, "1h30m") == ("--since", "1h30m")


# -- A1, A10: other tools' verbs and options are answered with nodeweave's spelling ---------------------------------

@pytest.mark.parametrize("verb", ["completion", "version", "apply", "ps", "get", "delete"])
def test_another_tools_verb_is_answered_with_nodeweaves_spelling(capsys, team, verb):
    """A1: `nodeweave completion bash` was "no such command" with nothing leading to the completion recipe (the one
    table of other tools' verbs, ``othertools.HABITS``, walked whole by test_walk9_fix9a3)."""
    from nodeweave.cli.habits.othertools import HABITS

    code, _, err = run_cli(capsys, verb, "bash")
    said = HABITS["nodeweave"][verb]
    assert code == EXIT_USAGE and f"no such command '{verb}': nodeweave's word for it: {said}" in one_line(err)


def test_completion_names_the_readmes_recipe_and_the_root_help_too(capsys, team):
    """A1: the recipe the README gives, on the refusal and in `nodeweave --help`."""
    from pathlib import Path

    recipe = 'eval "$(_NODEWEAVE_COMPLETE=source_bash nodeweave)"'
    assert recipe in (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert recipe in one_line(run_cli(capsys, "completion", "zsh")[2])
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "_NODEWEAVE_COMPLETE=source_bash" in out


def other_tools_options():
    from nodeweave.cli.habits.othertools import OPTIONS

    return [(words, typed, ours) for typed, (ours, _) in sorted(OPTIONS.items()) for words, command in LEAVES
            if ours in long_flags(command) and typed not in long_flags(command)]


def test_the_walk_finds_f_on_the_verbs_that_take_a_spec():
    cases = {(" ".join(words), typed) for words, typed, _ in other_tools_options()}
    assert {("status", "-f"), ("up", "--file"), ("validate", "-f"), ("status", "--context")} <= cases
    assert ("logs", "-f") not in cases  # logs -f follows, as kubectl logs -f


@pytest.mark.parametrize("words, typed, ours", other_tools_options(),
                         ids=[f"{' '.join(w)} {t}" for w, t, _ in other_tools_options()])
def test_another_tools_option_is_answered_with_nodeweaves_spelling(capsys, team, words, typed, ours):
    """A10: `status -f nodeweave.yaml` (kubectl apply -f, docker compose -f) was "no such option: -f", no more."""
    code, _, err = run_cli(capsys, *words, typed, "x.yaml")
    assert code == EXIT_USAGE
    line = one_line(err)
    said = "is not an option of" if words[0] in ("run", "exec") else "no such option:"  # their own wording
    assert f"{typed}{chr(39) if said[0] == 'i' else ''} {said} " in line or f"{said} {typed}" in line, line
    assert f"(did you mean {ours} x.yaml?" in line and line.count("did you mean") == 1, line


# -- A7: a file the nodes or the build read, linked in from outside the workspace or context, is named as such ------

@pytest.fixture
def linked(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "train.py").write_text("print(1)\n")
    (elsewhere / "requirements.txt").write_text("tqdm==4.66.1\n")
    (elsewhere / "src").mkdir()
    job = tmp_path / "job"
    job.mkdir()
    (job / "t.py").write_text("print(1)\n")
    (job / "train2.py").symlink_to(elsewhere / "train.py")
    (job / "inner.py").symlink_to("t.py")  # a link inside the workspace: what it leads to is there too
    (job / "requirements.txt").symlink_to(elsewhere / "requirements.txt")
    (job / "src").symlink_to(elsewhere / "src")
    monkeypatch.chdir(job)
    return job


@pytest.mark.parametrize("verb", [["validate"], ["run", "--dry-run"], ["up", "--dry-run"]])
def test_a_script_linked_out_of_the_workspace_is_noted(capsys, linked, verb):
    """A7: `launcher.script: train2.py`, a link to another project's file, read as present: no note. Every node
    would fail it, so validate refuses it and the dry runs say the real one would (issue 43 A16)."""
    (linked / "nodeweave.yaml").write_text(BASE.replace("t.py", "train2.py"))
    code, out, err = run_cli(capsys, *verb)
    # up reads nothing on nodes: its dry run ends with the real exit 2 too (walk17a A8-A10); run's, nothing up, notes
    assert code == (0 if verb[0] == "run" else 2), err
    assert "train2.py in the workspace" in out + err and "symbolic link out of it" in out + err
    (linked / "nodeweave.yaml").write_text(BASE.replace("t.py", "inner.py"))
    code, out, err = run_cli(capsys, *verb)
    assert code == 0 and "symbolic link" not in out + err


@pytest.mark.parametrize("field, line", [("image.requirements", "requirements: requirements.txt"),
                                         ("image.project.source", "project: {source: src}")])
def test_a_build_input_linked_out_of_the_context_is_refused(linked, field, line):
    """A7: the build context's requirements file or project source, a link out of it, which the build cannot follow."""
    from nodeweave.build.context import check_context_paths
    from nodeweave.spec import parse_spec

    spec = parse_spec(BASE.replace("image: {variant: cpu}", "image:\n  variant: cpu\n  " + line), "s.yaml",
                      base_dir=linked)
    with pytest.raises(UsageError) as caught:
        check_context_paths(linked, spec)
    assert field in str(caught.value) and "symbolic link out of it" in str(caught.value)


# -- A8: every verb that reaches pods says "the Kubernetes API cannot be reached" once, exit 3 ----------------------

KLOG = ('E1130 10:10:39.354137    1211 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API group '
        'list: Get \\"http://localhost:8080/api?timeout=32s\\": dial tcp 127.0.0.1:8080: connect: connection refused"')


@pytest.mark.parametrize("argv", [["hosts", "probe", "-n", "ml", "--node", "pod:llama-0"],
                                  ["doctor", "--cluster", "--node", "pod:llama-0"],
                                  ["sync", ".", "/workspace", "--node", "pod:llama-0"]],
                         ids=lambda argv: " ".join(argv[:2]))
def test_an_unreachable_kubernetes_api_is_one_line_exit_3_on_every_verb(capsys, team, monkeypatch, argv):
    """A8: hosts probe printed kubectl's klog lines and exit 1; doctor --cluster said "check the target runs a
    nodeweave image", exit 1; sync and status said the API cannot be reached, exit 3."""
    import os

    from nodeweave.errors import EXIT_ENVIRONMENT

    bin_dir = team / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text("#!/bin/sh\ncat >&2 <<'EOF'\n" + KLOG + "\n" + KLOG + "\nThe connection to the "
                       "server localhost:8080 was refused - did you specify the right host or port?\nEOF\nexit 1\n")
    kubectl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_ENVIRONMENT, (out, err)
    last = err.strip().splitlines()[-1]
    assert "the Kubernetes API cannot be reached" in last and "llama-0" in last, err
    assert "memcache.go" not in err and "nodeweave image" not in out + err


# -- A3: on CPU, sizes whose buffers cannot fit this machine's memory are refused before any launch ------------------

def test_bench_refuses_sizes_past_this_machines_memory_on_cpu(capsys, team):
    """A3: `bench --sizes 16G` for 2 gloo processes on a 23 GiB machine launched (and failed behind torchrun's
    traceback); the dry run accepted it too. (Walked as a dry run only: the code before the fix would launch the
    real one and fill this machine's memory; the real run meets the same function before any launch.)"""
    dry = ["--dry-run"]
    code, out, err = run_cli(capsys, "bench", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce", "--sizes",
                             "1K,1T", "--iters", "1", "--warmup", "0", *dry)
    assert code == EXIT_USAGE, (out, err)
    line = one_line([text for text in err.splitlines() if "error" in text][0])
    assert "--sizes: the largest size, 1.0 TiB, needs at least 4.0 TiB on CPU" in line and "available" in line


# -- A5: an offline build's wheelhouse is judged against what the image installs by name, before any layer ----------

def test_an_offline_plan_names_what_the_wheelhouse_lacks(capsys, team, monkeypatch):
    """A5: `image build --offline --wheelhouse W --dry-run` with only nodeweave's wheel in W planned the build; the
    pip layer, after the apt layers, would fail on torch, deepspeed, ... and the requirements' tqdm."""
    from nodeweave.resolve import resolve
    from nodeweave.spec import load_spec

    (team / "requirements.txt").write_text("tqdm==4.66.1\n")
    (team / "nodeweave.yaml").write_text((team / "nodeweave.yaml").read_text().replace(
        "  variant: cpu\n", "  variant: cpu\n  requirements: requirements.txt\n"))
    assert run_cli(capsys, "render", "all")[0] == 0
    house = team.parent / f"{team.name}-wheels"
    house.mkdir()
    (house / "nodeweave-0.1.0-py3-none-any.whl").write_bytes(b"x")
    argv = ["image", "build", "cpu", "--base", "registry.example/team/base:1", "--offline", "--wheelhouse", str(house), "--dry-run"]
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    pins = resolve(load_spec(team / "nodeweave.yaml"), "cpu").variant.pip_requirements
    assert "tqdm==4.66.1" in line and all(pin in line for pin in pins) and "pip download" in line, line
    for pin in [*pins, "tqdm==4.66.1"]:  # each pinned name at its version (a local label, +cpu, as pip reads it)
        name, _, version = pin.partition("==")
        (house / f"{name.replace('-', '_')}-{version}{'+cpu' if name == 'torch' else ''}-py3-none-any.whl"
         ).write_bytes(b"x")
    (house / "tqdm-4.66.1-py3-none-any.whl").unlink()
    (house / "tqdm-4.66.0-py3-none-any.whl").write_bytes(b"x")  # another version: still lacking
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE and "of tqdm==4.66.1 (" in one_line(err), err
    (house / "tqdm-4.66.1-py3-none-any.whl").write_bytes(b"x")
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
