"""walk2's findings (issue 43, /work/wt/walk2-report.md), each fixed as a class and walked here: every member of
the class this file could find, not only the walk's row. Each test fails on the main before these fixes. No
container is started, nothing is probed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line


# -- D1: an output option replaces only a file of the kind it writes, whatever the flags say -----------------


@pytest.fixture
def team_folder(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("import numpy\n")
    (tmp_path / "requirements.txt").write_text("numpy==1.26.4\n")
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "photo.png").write_text("not a picture at all\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name, what", [("train.py", "training script"), ("requirements.txt", "requirements file"),
                                         ("notes.txt", "not a nodeweave spec")])
def test_init_force_never_replaces_a_file_that_is_not_a_spec(capsys, team_folder, name, what):
    before = (team_folder / name).read_text()
    code, _, err = run_cli(capsys, "init", "--out", name, "--force")
    line = one_line(err)
    assert code == EXIT_USAGE and what in line and name in line and "pass --force" not in line, line
    assert (team_folder / name).read_text() == before


def test_init_force_still_replaces_an_earlier_spec(capsys, team_folder):
    assert run_cli(capsys, "init")[0] == 0
    code, _, err = run_cli(capsys, "init")
    assert code == EXIT_USAGE and "--force" in one_line(err)  # a spec: --force is the remedy
    (team_folder / "nodeweave.yaml").write_text("name: mine\nimage: {variant: cpu}\nnodes: 1\n")  # hand-written
    assert run_cli(capsys, "init", "--force")[0] == 0
    assert "written by `nodeweave init`" in (team_folder / "nodeweave.yaml").read_text()


@pytest.mark.parametrize("argv, target", [
    (("runs", "compare", "a", "b", "--metric", "x", "--chart", "photo.png"), "photo.png"),
    (("hosts", "probe", "--node", "gpu01", "--write-hostfile", "notes.txt", "--force"), "notes.txt"),
    (("bench", "--json-out", "notes.json"), "notes.json"),
    (("bench", "--json-out", "r.json", "--plot", "photo.png"), "photo.png"),
])
def test_every_output_option_refuses_a_file_of_another_kind(capsys, team_folder, argv, target):
    """The siblings of init --out: runs compare --chart, hosts probe --write-hostfile, bench --json-out/--plot
    wrote over any file there (bench and compare without even a --force)."""
    (team_folder / "notes.json").write_text("not json, my notes\n")
    before = (team_folder / target).read_text()
    code, _, err = run_cli(capsys, *argv)
    if "matplotlib is not installed" in err:
        pytest.skip("--plot needs matplotlib here")
    line = one_line(err)
    assert code == EXIT_USAGE and target in line and "never replaces it" in line, line
    assert (team_folder / target).read_text() == before


def test_output_options_replace_their_own_kind(team_folder):
    from nodeweave.cli.habits.replace import refuse_foreign_file

    (team_folder / "h").write_text("gpu01 slots=8\n# a comment\ngpu02 slots=8\n")
    # walk8 A23: bench's own result (its schema) and charts matplotlib drew, not any JSON document or image
    (team_folder / "r.json").write_text(json.dumps({"schema": "nodeweave.bench/1", "runs": []}))
    (team_folder / "c.svg").write_text('<?xml version="1.0"?>\n<!-- Created with matplotlib (https://matplotlib.org/) '
                                       '-->\n<svg xmlns="http://www.w3.org/2000/svg"/>\n')
    (team_folder / "c.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16) + b"tEXtSoftware\x00Matplotlib version3.9")
    for name, kind in (("h", "hostfile"), ("r.json", "bench"), ("c.svg", "chart"), ("c.png", "chart"),
                       ("missing.yaml", "spec")):
        refuse_foreign_file(Path(name), "--x", kind)  # no refusal


# -- W2, W3, W5: a dry run notes what the real verb would meet, on every target; down with nothing up is exit 0 ----


SPEC = "name: proj\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def fake_kubectl(folder: Path, monkeypatch, script: str) -> None:
    """A kubectl on PATH that answers as ``script`` says: the real one's words, no cluster needed. ``kustomize``
    (offline: ``up`` builds its tree with it to name what it applies) is the real kubectl's, where there is one."""
    import shutil

    real = shutil.which("kubectl")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "kubectl"
    passed = f'[ "$1" = kustomize ] && exec {real} "$@"\n' if real else ""
    tool.write_text("#!/bin/sh\n" + passed + script)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


UNREACHABLE = ('echo "The connection to the server localhost:8080 was refused - did you specify the right host '
               'or port?" >&2\nexit 1\n')


@pytest.mark.skipif(__import__("shutil").which("kubectl") is None,
                    reason="kubectl is not installed (.ci/setup-tools.sh installs it): up and down build the tree they "
                           "apply with its kustomize, offline, which the stand-in hands to the real one")
@pytest.mark.parametrize("verb", ["up", "down"])
def test_a_kubernetes_dry_run_notes_an_unreachable_cluster(capsys, job_folder, monkeypatch, verb):
    fake_kubectl(job_folder, monkeypatch, UNREACHABLE)
    code, out, _ = run_cli(capsys, verb, "--target", "kubernetes", "--dry-run")
    assert code == 0 and f"the real {verb} would end with exit 3: kubectl cannot reach a Kubernetes cluster" in out


def test_down_with_nothing_up_says_so_on_kubernetes_and_slurm(capsys, job_folder, monkeypatch):
    fake_kubectl(job_folder, monkeypatch,
                 'case " $* " in *" get "*) exit 0;; esac\necho "unexpected: $*" >&2\nexit 9\n')
    code, out, err = run_cli(capsys, "down", "--target", "kubernetes", "--dry-run")
    assert code == 0 and "nothing to take down" in out and "kubectl delete" not in out, out + err
    assert not (job_folder / ".nodeweave").exists()  # a teardown of nothing writes nothing
    code, out, err = run_cli(capsys, "down", "--target", "slurm", "--dry-run")
    assert code == 0 and "no allocation is recorded" in out and "nothing to take down" in out, out + err


# -- W4: every verb without -o says why and where the data is, not "no such option" --------------------------

VERBS = ["init", "validate", "render", "image build", "image variants", "up", "run", "status", "logs", "exec", "shell",
         "stop", "down", "runs ls", "runs show", "runs compare", "check", "sync", "top", "dashboard", "doctor", "bench",
         "hosts probe"]


def test_every_verb_without_a_format_option_says_where_the_data_is(capsys):
    without = []
    for verb in VERBS:
        main([*verb.split(), "--help"])
        if "--output" not in capsys.readouterr().out:
            without.append(verb)
    assert without, "every verb takes -o: this test has nothing left to check"
    for verb in without:
        for argv in ([*verb.split(), "-o", "json"], ["-o", "json", *verb.split()], [*verb.split(), "--json"]):
            code, _, err = run_cli(capsys, *argv)
            line = one_line(err)
            assert code == EXIT_USAGE and f"{verb} takes no" in line and "-o json`" in line, (argv, line)


# -- U1, U2, U9: a bad value read from a file names the file, its field or line, never a flag nobody typed ---------


STATE_VALUES = [({"target": "hosts", "hosts": ["gpu01", ""]}, "field hosts entry ''"),
                ({"target": "hosts", "hosts": ["gpu01", "GPU01"]}, "field hosts entry gpu01 is given 2 times"),
                ({"target": "hosts", "hosts": ["gpu01", "gpu02"], "remote_dir": ""}, "field remote_dir ''"),
                ({"target": "hosts", "hosts": ["gpu01", "gpu02"], "remote_dir": "/etc"}, "field remote_dir '/etc'"),
                ({"target": "kubernetes", "namespace": ""}, "field namespace ''"),
                ({"target": "kubernetes", "namespace": "Bad_NS"}, "field namespace 'Bad_NS'"),
                ({"target": "local", "engine": "dokcer"}, "field engine is 'dokcer'"),
                ({"target": "kubernetes", "kube_cli": "kubecl"}, "field kube_cli is 'kubecl'"),
                ({"target": "kubernetes", "overlay": "/abs"}, "field overlay is '/abs'"),
                ({"target": "slurm", "slurm_job": "12a"}, "field slurm_job is '12a'")]


@pytest.mark.parametrize("state, field", STATE_VALUES, ids=[f for _, f in STATE_VALUES])
@pytest.mark.parametrize("verb", [("status",), ("down", "--dry-run"), ("sync", "--dry-run")])
def test_a_bad_value_in_cluster_json_names_the_file_and_field(capsys, job_folder, state, field, verb):
    (job_folder / ".nodeweave" / "proj").mkdir(parents=True)
    (job_folder / ".nodeweave" / "proj" / "cluster.json").write_text(json.dumps(state))
    code, _, err = run_cli(capsys, *verb)
    line = one_line(err)
    assert code == EXIT_USAGE and "cluster.json: " + field in line and "remove the file" in line, line
    assert not line.startswith("nodeweave: error: --"), line


def test_a_bad_entry_of_the_old_single_state_file_is_removed_alone(capsys, job_folder):
    (job_folder / ".nodeweave").mkdir()
    (job_folder / ".nodeweave" / "cluster.json").write_text(json.dumps(
        {"proj": {"target": "kubernetes", "namespace": ""}, "other": {"target": "local"}}))
    code, _, err = run_cli(capsys, "status")
    line = one_line(err)
    assert code == EXIT_USAGE and "field proj.namespace ''" in line and "remove its entry 'proj'" in line, line


@pytest.mark.parametrize("lines, says", [("gpu01\ngpu01\n", "line 2: host 'gpu01' is listed already on line 1"),
                                         ("gpu01\n# spare\nGPU01 slots=8\n", "line 3: host 'GPU01' is listed already"),
                                         ("gpu01\nbad;host\n", "line 2: host 'bad;host' is not accepted")])
@pytest.mark.parametrize("verb", [("up", "--dry-run"), ("status",), ("down", "--dry-run")])
def test_a_bad_hosts_file_names_the_file_and_line(capsys, job_folder, lines, says, verb):
    (job_folder / "h.txt").write_text(lines)
    code, _, err = run_cli(capsys, *verb, "-t", "hosts", "--hosts-file", "h.txt", "--remote-dir", "/srv/job")
    line = one_line(err)
    assert code == EXIT_USAGE and f"hosts file h.txt, {says}" in line and "--host " not in line, line


# -- U3, M2, M3: a set-but-empty variable is said, never silently read as unset; an empty flag or program refused --

import os  # noqa: E402
import subprocess  # noqa: E402

import cli_run  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"
CPU_ONLY = Path(__file__).parent / "fixtures" / "synthetic" / "cpu-only"


def entrypoint(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    (cwd / "train.py").write_text("")
    full = {"PATH": os.environ["PATH"], **env}
    return cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(CPU_ONLY), "--explain", "--no-wait", *args],
                       env=full, cwd=cwd, timeout=60)


def read_variables():
    """Every variable the plan reads: each setting's, and each rank source's (the sources' own table)."""
    from nodeweave.entrypoint.planning.contract import SETTINGS

    plain = ["NODE_RANK", "NNODES", "MASTER_ADDR", "MASTER_PORT", "PET_NNODES", "PET_MASTER_PORT"]
    return plain + [row.variable for row in SETTINGS]


@pytest.mark.parametrize("name", read_variables())
def test_every_variable_the_plan_reads_set_but_empty_is_said(tmp_path, name):
    out = entrypoint(tmp_path, {name: ""}, "--json", "--", "train.py")
    said = f"{name} is set but empty"
    if out.returncode == 0:
        assert any(said in w for w in json.loads(out.stdout)["warnings"]), out.stdout[-1500:]
    else:  # refused for another reason: the refusal itself must not hide it
        assert said in out.stdout + out.stderr, out.stdout[-1500:] + out.stderr


def test_an_empty_rank_variable_is_named_in_the_rank_refusal(tmp_path):
    out = entrypoint(tmp_path, {"NODE_RANK": "", "NNODES": "2", "MASTER_ADDR": "10.0.0.1"}, "--", "train.py")
    assert out.returncode == 2 and "NODE_RANK is set but empty" in out.stdout + out.stderr, out.stdout + out.stderr


@pytest.mark.parametrize("args, says", [
    (("--recovery", "on", "--checkpoint-dir", "", "--", "train.py"), "--checkpoint-dir is given an empty value"),
    (("--interfaces", "", "--", "train.py"), "--interfaces is given an empty value"),
    (("--nnodes", "", "--", "train.py"), "--nnodes is given an empty value"),
    (("--launcher", "command", "--", ""), "the training command's program is empty"),
    (("--launcher", "command", "--", "", ""), "the training command's program is empty"),
])
def test_an_empty_flag_value_or_program_is_refused(tmp_path, args, says):
    out = entrypoint(tmp_path, {}, *args)
    assert out.returncode == EXIT_USAGE and says in out.stderr, out.stdout[-800:] + out.stderr


@pytest.mark.parametrize("flag", ["--launcher-options", "--setup", "--profile-options"])
def test_a_word_lists_empty_value_is_its_explicit_none(tmp_path, flag):
    """A word list's '' is "none", not a value missing: `nodeweave check` clears the spec's launcher options so."""
    out = entrypoint(tmp_path, {"NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"}, flag, "", "--",
                     "train.py")
    assert out.returncode == 0, out.stdout[-800:] + out.stderr


@pytest.mark.parametrize("variable, argv", [("NODEWEAVE_SPEC", ("validate",)), ("NODEWEAVE_ENGINE", ("status",)),
                                            ("NODEWEAVE_ENGINE", ("up", "--dry-run")),
                                            ("NODEWEAVE_ENGINE", ("sync", "--dry-run"))])
def test_the_cli_refuses_a_set_but_empty_variable_it_reads(capsys, job_folder, monkeypatch, variable, argv):
    monkeypatch.setenv(variable, "")
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and f"{variable} is set but empty" in line, line


# -- U8, U9: the reader's words come with what to do; init --nodes MIN:MAX is pointed at the spec --------------


@pytest.mark.parametrize("text, says", [
    (b"name: proj\n\timage: {variant: cpu}\n", "indent with spaces, not tabs"),
    (b"name: proj\n---\nname: other\n", "a spec is one YAML document: remove the `---`"),
    (b"name: proj\nlauncher: *script\n", "define the anchor (&name) before the alias"),
    (b"name: \xff\xfe proj\n", "<stdin>: not UTF-8 text"),
])
def test_a_spec_the_yaml_reader_refuses_gets_a_remedy_and_stdin_one_name(capsys, monkeypatch, text, says):
    import io

    from nodeweave.spec import loader

    monkeypatch.setattr(loader, "_read_from_streams", {})
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))
    code, _, err = run_cli(capsys, "validate", "--spec", "-")
    line = one_line(err)
    assert code == EXIT_USAGE and says in line and line.startswith("nodeweave: error: <stdin>"), line


@pytest.mark.parametrize("value, says", [("2:4", 'write nodes: "2:4" in the spec'), ("0", "1 to 2048"),
                                         ("many", "1 to 2048")])
def test_init_nodes_takes_a_count_and_points_a_range_at_the_spec(capsys, team_folder, value, says):
    code, _, err = run_cli(capsys, "init", "--nodes", value, "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and says in line and "not a valid integer" not in line, line


# -- U4, U6: no Python None in what is printed; a path option's refusal says what is accepted ---------------


def test_a_run_record_lacking_fields_shows_dashes_not_none(capsys, job_folder):
    folder = job_folder / "runs" / "20260101T000000Z-proj"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}")
    code, out, err = run_cli(capsys, "runs", "show", "last")
    assert code == 0 and "None" not in out + err and "- on - (started -, - s)" in out, out + err


def test_doctor_capture_to_a_device_says_what_is_accepted(capsys, job_folder):
    code, _, err = run_cli(capsys, "doctor", "--capture", "/dev/null")
    line = one_line(err)
    assert code == EXIT_USAGE and "accepted: a folder" in line, line


# -- M7: every --metric (run's sweep, runs compare) refuses a pattern that could never read a number ----------


@pytest.mark.parametrize("argv", [("run", "--sweep", "NCCL_ALGO=Ring,Tree", "--metric", "samples/s [0-9.]+",
                                   "--dry-run"),
                                  ("runs", "compare", "a", "b", "--metric", "loss [0-9.]+")])
def test_every_metric_option_refuses_a_pattern_with_words_and_no_group(capsys, job_folder, argv):
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "has no group for the number" in line, line


def test_a_metric_without_words_or_with_a_group_is_still_read():
    from nodeweave.cluster.sweep import compile_metric

    for text in ("samples/s ([0-9.]+)", r"[0-9.]+$", r"\d+\.\d+", "loss=([0-9.e-]+)"):
        assert compile_metric(text) is not None


# -- M1: a script the workspace lacks is noted wherever the spec's script is judged: validate, init, up, run -------


@pytest.mark.parametrize("argv", [("validate",), ("init", "--script", "nothere.py", "--dry-run", "--out", "new.yaml"),
                                  ("up", "--dry-run"), ("run", "--dry-run")])
def test_a_script_the_workspace_lacks_is_noted_by_every_verb_that_judges_the_spec(capsys, job_folder, argv):
    (job_folder / "nodeweave.yaml").write_text(SPEC.replace("train.py", "nothere.py"))
    code, out, err = run_cli(capsys, *argv)
    # up reads nothing on the nodes: its certain refusal ends its dry run with the real exit (walk17a A8-A10)
    assert code == (2 if argv[0] == "up" else 0) and "nothere.py is not in the workspace" in out + err, out + err
    notes = [line for line in (out + err).splitlines() if "is not in the workspace" in line]
    said = (f"note: nothere.py is not in the workspace {job_folder.resolve()} (the nodes see it at /workspace): the "
            "run would fail with 'No such file' unless the image holds it")
    if argv[0] in ("up", "run"):  # the local target mounts this folder: certain to fail, refused (replay11 C10)
        said = (f"the real {argv[0]} would end with exit 2: nothere.py is not in the workspace "
                f"{job_folder.resolve()}, which every node sees at /workspace (mounted there, over whatever the image "
                "holds): every node would fail with 'No such file'")
    # once: on stderr, or (a dry run) as the plan's own note, which its -o json carries too (walk5 W15)
    assert notes == [f"# {said}" if "--dry-run" in argv and argv[0] != "init" else f"nodeweave: {said}"], out + err


def test_the_missing_script_note_is_judged_and_printed_in_one_place():
    """Four verbs judged the script and echoed the note each its own way (run, up, validate, init): now each calls
    ``cli.run.script_note``, the one judge, directly (run, up, validate: the note goes in their -o json document
    too, walk5 W15) or through ``note_script`` (init, which has no document)."""
    import ast

    cli = Path(__file__).resolve().parents[1] / "src" / "nodeweave" / "cli"
    callers = {}
    for path in sorted(cli.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for func in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for call in (n for n in ast.walk(func) if isinstance(n, ast.Call)):
                name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
                if name in ("script_note", "note_script"):
                    callers.setdefault(name, set()).add(f"{path.relative_to(cli)}:{func.name}")
    assert callers["script_note"] == {"run.py:note_script", "run.py:run_command", "cluster.py:up_command",
                                      "init.py:validate", "run.py:script_refusal"}, callers  # replay11 C10, issue 43 A8
    assert {where.split(":")[0] for where in callers["note_script"]} == {"init.py"}, callers
