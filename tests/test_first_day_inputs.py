"""The first-day walk's rows about inputs and flags (issue 43; the walk: shared/walks/first-day.md).

Each test replays one row as a new user typed it, through the real command line, and checks what a
user expects: the flag they typed named (not a line of a file never written), the verb's own help,
the exact command to run next, a dry run that writes nothing, contradicting flags refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cli_run
import pytest

from nodeweave.cli import main
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SPEC = """name: nwfirst
image: {variant: cpu}
nodes: 2
gpus_per_node: 1
launcher: {script: train.py}
"""
SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home_beside(tmp_path))
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    return tmp_path


def call(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def files(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("verb", [["stop", "--dry-run"], ["up", "--dry-run"], ["down", "--dry-run"],
                                  ["exec", "--dry-run", "--", "true"]])
def test_s8_a_dry_run_does_not_move_the_old_state_file(project, capsys, verb):
    legacy = project / ".nodeweave" / "cluster.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps({"nwfirst": {"target": "local", "engine": "podman"}, "other": {"target": "local"}}))
    before = files(project)
    code, _, err = call(capsys, *verb)
    assert files(project) == before, err


@pytest.mark.parametrize("spec_name", ["b.yaml", "my spec.yaml"])
def test_s9_rendered_files_name_their_spec_and_the_command_that_renders_them(project, capsys, spec_name):
    (project / spec_name).write_text(SPEC)
    assert call(capsys, "render", "all", "--spec", spec_name)[0] == 0
    flag = "--spec 'my spec.yaml'" if " " in spec_name else f"--spec {spec_name}"
    heads = {path: text.decode().splitlines()[:4] for path, text in files(project).items()
             if path.startswith(("compose/", "images/", "manifests/")) and path.endswith((".yaml", "Dockerfile"))}
    naming = 0
    for path, head in heads.items():
        comments = "\n".join(line for line in head if line.startswith("#"))
        assert "nodeweave.yaml" not in comments and "make render" not in comments, (path, comments)
        assert "`nodeweave render " not in comments or flag in comments, (path, comments)
        naming += spec_name in comments
    assert naming > 10, heads
    assert flag in (project / "images" / "docker-bake.json").read_text()
    json.loads((project / "images" / "docker-bake.json").read_text())
    assert call(capsys, "render", "all", "--check", "--spec", spec_name)[0] == 0


@pytest.mark.parametrize("spec_name,expected", [
    ("a.yaml", "`nodeweave render all --prune --spec a.yaml`"),
    ("my spec.yaml", "`nodeweave render all --prune --spec 'my spec.yaml'`"),
    ("nodeweave.yaml", "`nodeweave render all --prune`"),
])
def test_s10_a_stale_check_names_the_exact_command_and_no_makefile_it_lacks(project, capsys, spec_name, expected):
    (project / spec_name).write_text(SPEC)
    code, _, err = call(capsys, "render", "all", "--check", "--spec", spec_name) if spec_name != "nodeweave.yaml" \
        else call(capsys, "render", "all", "--check")
    assert code == 4 and expected in err and "make render" not in err, err


def test_s10_make_render_only_beside_a_makefile_that_has_it(project, capsys):
    (project / "Makefile").write_text("render:\n\tnodeweave render all --prune\n")
    code, _, err = call(capsys, "render", "all", "--check")
    assert code == 4 and "`make render` (or `nodeweave render all --prune`)" in err, err


def test_s14_a_damaged_state_file_offers_no_flags_that_do_not_work(project, capsys):
    state = project / ".nodeweave" / "nwfirst" / "cluster.json"
    state.parent.mkdir(parents=True)
    state.write_text("{garbage")
    code, _, err = call(capsys, "stop", "-t", "local", "--dry-run")
    assert code == 2 and "remove the file" in err and "give the cluster's flags" not in err, err


@pytest.mark.parametrize("argv,wanted,unwanted", [
    (["run", "--dryrun", "--", "x.py"], "(did you mean --dry-run?)", "go after `--`"),  # row 20: `--` was used
    (["run", "--dry_run", "--", "x.py"], "(did you mean --dry-run?)", "go after `--`"),
    (["run", "--dryrun", "x.py"], "go after `--`", None),  # no `--`: the hint about it stays
    (["exec", "nvidia-smi", "-L"], "nodeweave exec [OPTIONS] -- nvidia-smi -L", "train.py"),  # row 21
    (["run", "--dry-run=true", "--", "x"], "`nodeweave run --help`", "`nodeweave --help`"),  # row 37
    (["doctor", "--spec"], "`nodeweave doctor --help`", "`nodeweave --help`"),
    (["status", "-o"], "`nodeweave status --help`", "`nodeweave --help`"),
    (["validate", "s3.yaml"], "(did you mean --spec s3.yaml?)", None),  # row 51
])
def test_rows_20_21_37_51_a_mistake_is_answered_with_the_verbs_own_words(project, capsys, argv, wanted, unwanted):
    code, _, err = call(capsys, *argv)
    assert code == 2 and wanted in err, err
    assert unwanted is None or unwanted not in err, err


@pytest.mark.parametrize("argv,named", [
    # --out a new file: the project's own spec exists, which a dry run refuses as the real run does (walk5 W81)
    (["init", "--name", "Bad_Name", "--out", "new.yaml", "--dry-run"], "--name 'Bad_Name'"),
    (["init", "--launcher", "foo", "--out", "new.yaml", "--dry-run"], "--launcher 'foo'"),
])
def test_row_26_init_names_the_flag_not_a_line_of_a_file_never_written(project, capsys, argv, named):
    code, _, err = call(capsys, *argv)
    assert code == 2 and err.startswith(f"nodeweave: error: {named}:") and "nodeweave.yaml:" not in err, err


def test_row_27_a_missing_spec_says_where_it_came_from_and_what_to_do(project, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NODEWEAVE_SPEC", "/nonexistent")
    code, _, err = call(capsys, "validate")
    assert code == 2 and "$NODEWEAVE_SPEC" in err, err
    monkeypatch.setenv("NODEWEAVE_SPEC", str(project))
    code, _, err = call(capsys, "validate")
    assert code == 2 and "$NODEWEAVE_SPEC" in err and "nodeweave.yaml" in err, err
    monkeypatch.delenv("NODEWEAVE_SPEC")
    empty = tmp_path.parent / f"{tmp_path.name}-elsewhere"  # no nodeweave.yaml here or above
    empty.mkdir()
    (empty / "a.yaml").write_text(SPEC)
    monkeypatch.chdir(empty)
    code, _, err = call(capsys, "validate")
    assert code == 2 and "`nodeweave init`" in err and "--spec a.yaml" in err, err


@pytest.mark.parametrize("given,why", [("/etc/passwd", "not a folder"), ("/nonexistnt", "does not exist")])
@pytest.mark.parametrize("verb", [["runs", "ls"], ["runs", "show", "last"]])
def test_row_29_a_runs_dir_that_is_no_folder_is_refused(project, capsys, given, why, verb):
    code, out, err = call(capsys, *verb, "--runs-dir", given)
    assert code == 2 and f"--runs-dir {given}: {why}" in err and out == "", err


def test_row_30_a_bad_target_in_state_is_named_as_the_files(project, capsys):
    state = project / ".nodeweave" / "nwfirst" / "cluster.json"
    state.parent.mkdir(parents=True)
    state.write_text('{"target": "marsnet"}')
    code, _, err = call(capsys, "stop", "--dry-run")
    assert code == 2 and str(state) in err and "field target is 'marsnet'" in err and "--target" not in err, err


def test_row_48_a_users_own_dockerignore_is_left_alone(project, capsys):
    mine = b".git\nbig-data/\n"
    (project / ".dockerignore").write_bytes(mine)
    code, out, err = call(capsys, "render", "all")
    assert code == 0, err
    assert (project / ".dockerignore").read_bytes() == mine
    assert "images/nodeweave.dockerignore" in err and "merge" in err
    assert "!entrypoint/nodeweave-entrypoint.pyz" in (project / "images" / "nodeweave.dockerignore").read_text()
    assert call(capsys, "render", "all", "--check")[0] == 0  # and it stays up to date, not stale forever
    code, _, _ = call(capsys, "render", "all", "--force")
    assert code == 0 and (project / ".dockerignore").read_bytes() != mine  # --force replaces it, as it says


def test_row_51_help_flags_and_the_spec_from_stdin(project):
    def run(*argv, stdin=None):
        return cli_run.run([*cli_run.NODEWEAVE, *argv], input=stdin, cwd=project, timeout=120, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin"})
    for argv in (["-h"], ["render", "-h"], ["help"], ["help", "runs", "show"]):
        done = run(*argv)
        assert done.returncode == 0 and done.stdout.startswith("Usage: nodeweave"), (argv, done.stderr)
    assert "nodeweave runs show" in run("help", "runs", "show").stdout
    done = run("validate", "--spec", "-", stdin=SPEC)
    assert done.returncode == 0 and done.stdout.startswith("<stdin>: valid: nwfirst"), done.stderr


@pytest.mark.parametrize("argv,message", [
    (["up", "--hold", "--run", "--dry-run"], "--hold and --run contradict each other"),
    (["up", "--run", "--hold", "--dry-run"], "--hold and --run contradict each other"),
    (["run", "-e", "A=1", "--sweep", "A=2,3", "--dry-run", "--", "x.py"], "A is both set (-e A=1) and swept"),
    (["run", "--metric", "loss ([0-9.]+)", "--dry-run", "--", "x.py"], "--metric ranks the points of a --sweep"),
    (["run", "--lower-is-better", "--dry-run", "--", "x.py"], "--lower-is-better does nothing without --metric"),
    (["run", "--sweep", "A=1,1", "--dry-run", "--", "x.py"], "gives A=1 twice"),
    (["render", "--check", "--force"], "--check writes nothing, so --force would do nothing"),
    (["render", "--check", "--prune"], "--check writes nothing, so --prune would do nothing"),
])
def test_row_52_contradicting_and_no_op_flags_are_refused(project, capsys, argv, message):
    code, out, err = call(capsys, *argv)
    assert code == 2 and message in err and out == "", err


def test_row_55_a_bench_that_measured_nothing_writes_no_results_file(project):
    pytest.importorskip("torch")
    done = cli_run.run([*cli_run.NODEWEAVE, "bench", "--backend", "gloo", "--nproc", "2",
                           "--sizes", "4K", "--iters", "1", "--warmup", "1", "--timeout", "0.01"],
                          cwd=project, timeout=300,
                          env={"PYTHONPATH": str(SRC), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
                               "HOME": home_beside(project)})
    assert done.returncode != 0, done.stderr
    assert "was not written" in done.stderr, done.stderr
    assert not (project / "nodeweave-bench.json").exists() and not (project / "runs").exists()


def test_row_58_a_dry_run_after_the_dashes_is_named_before_anything_runs(project, capsys):
    code, _, err = call(capsys, "run", "--", "train.py", "--lr", "1e-3", "--dry-run")
    first = err.splitlines()[0]
    assert code == 2 and "error: --dry-run comes after `--`" in first and "nothing is started" in first, err
    assert "nodeweave run --dry-run -- train.py --lr 1e-3" in first
