"""walk3's findings on the CLI's files and state (issue 43, /work/wt/walk3-report.md rows F11-F33), each fixed as
a class and walked here: every member of the class this file could find, not only the walk's row. Each test
fails on the main before these fixes. No container is started, nothing is probed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
SCRIPT = "print('the training script')\n"


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def state(team: Path) -> Path:
    folder = team / ".nodeweave" / "team"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- F28, F29: a link, a folder or a pipe where nodeweave keeps a job's file is refused, never written through ----


def in_the_way(kind: str, path: Path, team: Path) -> None:
    if kind == "link to the script":
        path.symlink_to(os.path.relpath(team / "train.py", path.parent))
    elif kind == "dangling link":
        path.symlink_to(team / "made-by-the-write.py")
    elif kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)


KINDS = ["link to the script", "dangling link", "folder", "named pipe"]


def no_compose(team: Path, monkeypatch) -> None:
    """compose swapped for a script that starts nothing and leaves a mark: a test of a real up must never start
    containers, whatever the code under test does."""
    fake = team / "fake-compose"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {team / 'compose-was-run'}\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr("nodeweave.cluster.backends.local.compose_tool", lambda engine: [str(fake)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["compose.yaml", "job-token"])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "real"])
def test_up_refuses_a_state_file_that_is_not_its_own(capsys, team, monkeypatch, kind, name, dry_run):
    """The plan said "would write .nodeweave/team/compose.yaml (changed ...)" through a link to train.py; the
    real up refuses it the same way, before its file phase. The real up runs on this machine's engine, with
    compose itself swapped for a script that starts nothing and leaves a mark (the main before this fix went on
    to `compose up`: this test must never start containers, whatever the code does)."""
    if not dry_run:
        import shutil

        if shutil.which("podman") is None and shutil.which("docker") is None:
            pytest.skip("podman is not installed (.ci/setup-engine.sh installs it): the real up needs an engine "
                        "to get past its tool check (the writer's own test runs here)")
        no_compose(team, monkeypatch)
    in_the_way(kind, state(team) / name, team)
    code, out, err = run_cli(capsys, "up", "--hold", *(["--dry-run"] if dry_run else []))
    line = one_line(err)
    assert code == EXIT_USAGE and f".nodeweave/team/{name} is " in line and "move it away" in line, line
    assert "would write" not in out and not (team / "compose-was-run").exists()
    assert (team / "train.py").read_text() == SCRIPT and not (team / "made-by-the-write.py").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_the_file_phase_itself_never_writes_through_a_link(team, kind):
    """The writing function the real up runs (Execution.write_files), called directly: refused, the script kept."""
    from nodeweave.cluster.execute import write_files
    from nodeweave.errors import UsageError
    from nodeweave.plan import FilesPhase, PlannedFile

    for name, content in (("compose.yaml", b"services: {}\n"), ("job-token", None)):
        path = state(team) / name
        in_the_way(kind, path, team)
        phase = FilesPhase("the job's files", files=(PlannedFile(f".nodeweave/team/{name}", "x", content),))
        with pytest.raises(UsageError, match="move it away"):
            write_files(phase, team, print)
        assert (team / "train.py").read_text() == SCRIPT and not (team / "made-by-the-write.py").exists()
        assert path.is_symlink() or path.is_dir() or path.is_fifo()  # left as the user made it
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()


def test_the_token_writer_and_the_state_writer_refuse_a_link(team):
    from nodeweave.cluster import token
    from nodeweave.cluster.options import ClusterOptions, save_state
    from nodeweave.errors import UsageError

    in_the_way("link to the script", state(team) / "job-token", team)
    with pytest.raises(UsageError, match="symbolic link"):
        token.rotate(state(team) / "job-token")
    in_the_way("link to the script", state(team) / "cluster.json", team)
    with pytest.raises(UsageError, match="symbolic link"):
        save_state(team / "nodeweave.yaml", "team", ClusterOptions())
    assert (team / "train.py").read_text() == SCRIPT


@pytest.mark.parametrize("verb", [("status",), ("down", "--dry-run"), ("up", "--dry-run"), ("sync", "--dry-run")])
def test_a_cluster_json_that_is_a_link_is_refused_not_read_through(capsys, team, verb):
    in_the_way("link to the script", state(team) / "cluster.json", team)
    code, _, err = run_cli(capsys, *verb)
    line = one_line(err)
    assert code == EXIT_USAGE and "cluster.json: is a symbolic link" in line and "is not JSON" not in line, line


@pytest.mark.parametrize("link", [".nodeweave", ".nodeweave/team"])
def test_a_state_folder_that_is_a_link_is_refused(capsys, team, tmp_path_factory, link):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (team / link).parent.mkdir(parents=True, exist_ok=True)
    (team / link).symlink_to(elsewhere, target_is_directory=True)
    code, _, err = run_cli(capsys, "up", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and f"{link} is a symbolic link" in line, line
    assert list(elsewhere.iterdir()) == []


def test_a_gitignore_link_in_the_state_folder_is_not_written_through(team):
    from nodeweave.jobstate import keep_out_of_git

    (team / ".nodeweave").mkdir()
    (team / ".nodeweave" / ".gitignore").symlink_to(team / "made-by-the-write.py")
    keep_out_of_git(team / ".nodeweave")
    assert not (team / "made-by-the-write.py").exists()


def test_up_still_plans_its_own_files(capsys, team):
    state(team)
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")
    assert code == 0 and "would write .nodeweave/team/compose.yaml (new" in out, out + err


# -- F30: the default runs/ is judged as --runs-dir is, by every verb that reads or writes it --------------------


@pytest.mark.parametrize("kind", ["link to the script", "dangling link", "file", "named pipe"])
@pytest.mark.parametrize("argv", [("run", "--dry-run"), ("check", "--dry-run"), ("runs", "ls"), ("runs", "show", "x"),
                                  ("runs", "compare", "a", "b"), ("logs", "--run", "x"), ("dashboard", "--run", "x")])
def test_the_default_runs_folder_is_judged_like_runs_dir(capsys, team, kind, argv):
    runs = team / "runs"
    if kind == "file":
        runs.write_text("not a folder\n")
    else:
        in_the_way(kind, runs, team)
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and f"runs/ beside the spec ({runs}) is " in line and "--runs-dir DIR" in line, line


def test_a_runs_folder_that_is_a_link_to_a_folder_is_used(capsys, team, tmp_path_factory):
    """runs/ linked to a bigger disk is a habit, not a mistake."""
    disk = tmp_path_factory.mktemp("disk")
    (team / "runs").symlink_to(disk, target_is_directory=True)
    code, out, err = run_cli(capsys, "runs", "ls")
    assert code == 0 and "no runs" in out + err, out + err


# -- F11, F12: every field of cluster.json judged where it is read, naming the file: `made`, and a target whose
# -- required fields are missing (never a flag the user did not type) -----------------------------------------

STATES = [({"target": "hosts"}, "field target is 'hosts' with no hosts recorded"),
          ({"target": "ssh", "hosts": []}, "field target is 'hosts' with no hosts recorded"),
          ({"target": "local", "made": "x"}, 'field made is "x", not a mapping'),
          ({"target": "local", "made": ["team"]}, 'field made is ["team"], not a mapping'),
          ({"target": "local", "made": {"job": "team", "zzz": "1"}}, "field made has an unknown field 'zzz'"),
          ({"target": "local", "made": {"job": 5}}, "field made.job is 5, not text"),
          ({"target": "local", "made": {"job": "team", "project": 7}}, "field made.project is 7, not text"),
          ({"target": "local", "made": {"spec": "nodeweave.yaml"}}, "field made.job is missing"),
          ({"target": "local", "made": {"job": "team", "target": "moon"}}, "field made.target is 'moon'"),
          ({"target": "hosts", "hosts": ["gpu01", "gpu02"], "ssh_options": ["Port 22"]},
           "field ssh_options entry 'Port 22' is not accepted"),
          ({"target": "kubernetes", "kube_context": "a b"}, "field kube_context 'a b' is not accepted")]


@pytest.mark.parametrize("data, says", STATES, ids=[s for _, s in STATES])
@pytest.mark.parametrize("verb", [("status",), ("down", "--dry-run"), ("sync", "--dry-run"), ("up", "--dry-run"),
                                  ("run", "--dry-run")])
def test_every_cluster_json_field_is_judged_naming_the_file(capsys, team, data, says, verb):
    (state(team) / "cluster.json").write_text(json.dumps(data))
    code, _, err = run_cli(capsys, *verb)
    line = one_line(err)
    assert code == EXIT_USAGE and f"cluster.json: {says}" in line and "remove the file" in line, line
    assert "--host" not in line, line  # the file is named, not a flag nobody typed


def test_a_legacy_entry_with_a_bad_made_is_named_by_its_entry(capsys, team):
    (team / ".nodeweave").mkdir()
    (team / ".nodeweave" / "cluster.json").write_text(json.dumps({"team": {"target": "local", "made": "x"}}))
    code, _, err = run_cli(capsys, "status")
    line = one_line(err)
    assert code == EXIT_USAGE and 'field team.made is "x"' in line and "remove its entry 'team'" in line, line


def test_what_up_records_is_still_read(capsys, team):
    (state(team) / "cluster.json").write_text(json.dumps(
        {"target": "hosts", "hosts": ["gpu01", "gpu02"], "remote_dir": "/srv/job",
         "made": {"job": "team", "folder": "f", "owner": None, "spec": "nodeweave.yaml", "target": "hosts",
                  "namespace": None, "project": "team-1", "where": "2 hosts"}}))
    code, out, err = run_cli(capsys, "down", "--dry-run")
    assert code == 0 and "gpu01" in out + err, out + err


# -- F14, F16, F33: init's output names nothing of its own, says each note once on its own line, and says why it
# -- left the folder's requirements out -----------------------------------------------------------------------


@pytest.fixture
def empty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("argv, named", [(("--out", "train.py"), "training script"),
                                         (("--out", "job.py", "--script", "job.py"), "training script"),
                                         (("--out", "sub/../train.py"), "training script"),
                                         (("--out", "requirements.txt"), "requirements file")])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "real"])
def test_init_out_naming_a_file_the_new_spec_names_is_refused_before_it_exists(capsys, empty, argv, named, dry_run):
    (empty / "sub").mkdir()
    code, out, err = run_cli(capsys, "init", *argv, *(["--dry-run"] if dry_run else []))
    line = one_line(err)
    assert code == EXIT_USAGE and named in line and "--out" in line, line
    assert not out and sorted(p.name for p in empty.iterdir()) == ["sub"]


def test_init_says_each_note_once_on_its_own_line_and_one_summary(capsys, empty):
    code, _, err = run_cli(capsys, "init", "--script", "nope.py", "--out", "y.yaml")
    lines = err.splitlines()
    assert code == 0 and len(lines) == 2, err
    assert lines[0].startswith("nodeweave: note: nope.py is not in the workspace"), err
    assert lines[1].startswith("nodeweave: wrote y.yaml (") and "nope.py" not in lines[1], err


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "real"])
def test_init_says_why_it_left_the_requirements_out(capsys, empty, dry_run):
    (empty / "train.py").write_text(SCRIPT)
    (empty / "requirements.txt").write_text("numpy==1.26.4\nrequests\n")
    code, out, err = run_cli(capsys, "init", *(["--dry-run"] if dry_run else []))
    notes = [line for line in err.splitlines() if "note:" in line]
    assert code == 0 and len(notes) == 1, err
    assert "requirements.txt left out of image.requirements" in notes[0], notes
    assert "requirements.txt:2: 'requests' is not pinned" in notes[0] and "pin it" in notes[0], notes
    spec = out if dry_run else (empty / "nodeweave.yaml").read_text()
    assert "requirements:" not in spec


def test_init_with_every_line_pinned_takes_the_requirements_silently(capsys, empty):
    (empty / "train.py").write_text(SCRIPT)
    (empty / "requirements.txt").write_text("numpy==1.26.4\n")
    code, out, err = run_cli(capsys, "init", "--dry-run")
    assert code == 0 and "requirements: requirements.txt" in out and "note:" not in err, err


# -- F15: every init / hosts probe flag that does nothing without (or with) another is refused -----------------


@pytest.mark.parametrize("argv, says", [
    (("init", "--ssh-option", "StrictHostKeyChecking=no"), "--ssh-option StrictHostKeyChecking=no does nothing "
                                                           "without --host"),
    (("init", "--via", "podman"), "--via podman does nothing without --host"),
    (("init", "--host", "gpu01", "--sysroot", "/"), "--sysroot does nothing with --host"),
    (("init", "--host", "podman:t0", "--ssh-option", "A=b"), "--ssh-option A=b does nothing for podman hosts"),
    (("hosts", "probe", "--node", "gpu01", "--force"), "--force does nothing without --write-hostfile"),
    (("hosts", "probe", "--node", "gpu01", "--namespace", "ml"), "--namespace ml does nothing for ssh hosts"),
    (("hosts", "probe", "--node", "podman:t0", "--container", "c"), "--container c does nothing for podman hosts"),
    (("hosts", "probe", "--node", "podman:t0", "--ssh-option", "A=b"), "--ssh-option A=b does nothing for podman"),
])
def test_a_flag_that_does_nothing_without_another_is_refused(capsys, empty, argv, says):
    code, out, err = run_cli(capsys, *argv, *(["--dry-run"] if argv[0] == "init" else []))
    line = one_line(err)
    assert code == EXIT_USAGE and says in line, line
    assert not out and list(empty.iterdir()) == []


# -- F18, F20: no hint names a file only nodeweave's own checkout has (.ci/, "the repository", make targets) ----


def message_strings_naming_the_checkout() -> "list[str]":
    """Every string literal in nodeweave's sources that is not a docstring and names .ci/, "in the repository",
    or a make target: a pip user's folder has none of them."""
    import ast
    import re

    import nodeweave

    bad = re.compile(r"\.ci/|in the repository|wheelhouse\.sh|\bmake (install|test|demo|render|image|up|run|status|"
                     r"logs|down|sync)\b")
    # render's hint names `make render` only where a Makefile beside the spec has that target; no rendered file's
    # header names it (walk6, W25)
    allowed = {("cli/render.py", "`make render` (or ")}
    root = Path(nodeweave.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(node.body[0].value) for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and bad.search(node.value) and (rel, node.value) not in allowed:
                found.append(f"{rel}:{node.lineno}: {node.value[:100]!r}")
    return found


def test_no_message_names_a_file_only_the_checkout_has():
    assert message_strings_naming_the_checkout() == []


def test_offline_build_with_an_empty_wheelhouse_gives_the_pip_line_for_this_spec(capsys, team):
    (team / "requirements.txt").write_text("numpy==1.26.4\n")
    (team / "nodeweave.yaml").write_text(SPEC.replace("{variant: cpu}", "{variant: cpu, requirements: "
                                                      "requirements.txt, pip: ['rich==13.7.1']}"))
    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    capsys.readouterr()
    code, _, err = run_cli(capsys, "image", "build", "cpu", "--offline", "--dry-run")
    line = err.strip().splitlines()[-1]
    from nodeweave.catalogue import get_variant

    pins = " ".join(get_variant("cpu").pip_requirements)
    index = f"--extra-index-url {get_variant('cpu').torch_index_url}"  # the variant's torch (walk5 W22)
    assert code == EXIT_USAGE and f"`python -m pip download -d wheelhouse {index} {pins} rich==13.7.1 -r requirements.txt`" \
        in line and ".ci/" not in line, line


def test_an_empty_spec_points_at_init_not_the_repository(capsys, team):
    (team / "empty.yaml").write_text("")
    code, _, err = run_cli(capsys, "validate", "--spec", "empty.yaml")
    assert code == EXIT_USAGE and "`nodeweave init` writes a first one" in err and "repository" not in err, err


# -- F21: a verb's option typed before the verb, with no verb after it, says what is missing ------------------


@pytest.mark.parametrize("argv, example", [(("-o", "json"), "nodeweave -o json status"),
                                           (("-o",), "nodeweave -o json status"),
                                           (("--output", "yaml"), "nodeweave --output yaml status"),
                                           (("--json",), "nodeweave --json status"),
                                           (("--spec", "x.yaml"), "nodeweave --spec x.yaml status"),
                                           (("--spec",), "nodeweave --spec nodeweave.yaml status"),
                                           (("-o", "json", "--bogus"), "nodeweave -o json status")])
def test_a_verb_option_with_no_verb_after_it_says_so(capsys, argv, example):
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "no verb follows it" in line and f"`{example}`" in line, line
    assert "no such option" not in line and not out


def test_a_verb_option_before_help_shows_the_help(capsys):
    code, out, _ = run_cli(capsys, "-o", "json", "--help")
    assert code == 0 and "Usage: nodeweave" in out


def test_a_link_above_the_spec_folder_is_the_users_own(tmp_path, monkeypatch, capsys):
    """/home linked to /data/home: only what is below the spec's folder is judged."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "nodeweave.yaml").write_text(SPEC)
    (real / "train.py").write_text(SCRIPT)
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    monkeypatch.chdir(tmp_path / "linked")
    from nodeweave.jobstate import in_the_way

    assert in_the_way(tmp_path / "linked", tmp_path / "linked" / ".nodeweave" / "team" / "compose.yaml") == ""
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")
    assert code == 0 and "would write .nodeweave/team/compose.yaml" in out, err


@pytest.mark.parametrize("tree", ["openshift-upload", "openshift-build"])
def test_the_openshift_build_trees_are_never_filled_through_a_link(capsys, team, tree):
    """The upload tree is emptied and refilled (images/<variant>/Dockerfile written into it): through a link to
    the project it would write over the user's own Dockerfile."""
    (team / "nodeweave.yaml").write_text(SPEC + "kubernetes: {openshift: true, build: {}}\n")
    (state(team) / tree).symlink_to(team, target_is_directory=True)
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--target", "openshift", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and f".nodeweave/team/{tree} is a symbolic link" in line, line


# -- F32, F37: the same class on up and run: a flag that does nothing with another is refused ------------------


@pytest.mark.parametrize("argv, says", [
    (("up", "--no-wait", "--timeout", "10", "--dry-run"), "--timeout does nothing with --no-wait"),
    (("up", "--no-wait", "--timeout", "10"), "--timeout does nothing with --no-wait"),
    (("run", "--detach", "-q", "--dry-run"), "--quiet does nothing with --detach"),
    (("run", "--detach", "--quiet"), "--quiet does nothing with --detach"),
])
def test_up_and_run_refuse_a_flag_that_does_nothing_with_another(capsys, team, monkeypatch, argv, says):
    no_compose(team, monkeypatch)  # the real up of the main before this fix went on to start containers
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and says in line and not out, line
    assert not (team / ".nodeweave").exists() and not (team / "runs").exists()


def test_up_timeout_and_its_default_still_plan_the_wait(capsys, team):
    code, out, _ = run_cli(capsys, "up", "--hold", "--dry-run")
    assert code == 0 and "wait up to 300 s" in out, out
    code, out, _ = run_cli(capsys, "up", "--hold", "--timeout", "42", "--dry-run")
    assert code == 0 and "wait up to 42 s" in out, out
    code, out, _ = run_cli(capsys, "up", "--hold", "--no-wait", "--dry-run")
    assert code == 0 and "wait up to" not in out, out


# -- F17: sync refuses --namespace / --container for the job's own cluster when it has no pods, as -t local did --


@pytest.mark.parametrize("flag", [("--namespace", "x"), ("-n", "x"), ("--container", "c")])
@pytest.mark.parametrize("recorded", [None, {"target": "local"}, {"target": "hosts", "hosts": ["gpu01", "gpu02"],
                                                                  "remote_dir": "/srv/job"}])
def test_sync_refuses_pod_flags_for_a_cluster_without_pods(capsys, team, flag, recorded):
    if recorded is not None:
        (state(team) / "cluster.json").write_text(json.dumps(recorded))
    code, out, err = run_cli(capsys, "sync", *flag, "--dry-run")
    line = one_line(err)
    name = {"-n": "--namespace"}.get(flag[0], flag[0])
    assert code == EXIT_USAGE and f"{name} does nothing for target {(recorded or {}).get('target', 'local')}" in line, line


# -- F19, F25, F26: check's numbers: each refusal names its option and value; a fraction given as a percentage
# -- is noted ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, says", [(("--seconds", "-1"), "--seconds -1 is not accepted: a finite number more than 0"),
                                        (("--timeout", "0"), "--timeout 0 is not accepted: a finite number more than 0"),
                                        (("--repeats", "0"), "--repeats 0 is not accepted: 1 to 10 (")])
def test_check_refusals_name_the_option_and_value(capsys, team, argv, says):
    code, _, err = run_cli(capsys, "check", *argv, "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and says in line and "more than one sample" not in line, line


def test_check_threshold_below_one_is_noted_as_a_percentage(capsys, team):
    code, out, err = run_cli(capsys, "check", "--threshold", "0.25", "--dry-run")
    assert code == 0 and "--threshold 0.25 is 0.25%, not 25%" in err, err
    code, out, err = run_cli(capsys, "check", "--threshold", "25", "--dry-run")
    assert code == 0 and "--threshold" not in err, err


# -- F13: dashboard --url with nothing listening says so before serving, as top does, in words --------------------


def test_dashboard_and_top_say_nothing_listens_at_the_url(capsys, team):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    for verb in (("dashboard", "--url", url), ("top", "--url", url, "--once")):  # top's first probe, said alike
        code, _, err = run_cli(capsys, *verb)
        assert code == 1 and "nothing listens there (connection refused)" in err and "Errno" not in err, err


# -- F36: the refusal of a node count set by hand names the flag made for it ------------------------------------


@pytest.mark.parametrize("argv", [("-e", "NNODES=1"), ("--sweep", "NNODES=1,2", "--metric", "x ([0-9]+)"),
                                  ("-e", "PET_NNODES=1")])
def test_a_node_count_set_by_hand_points_at_run_nodes(capsys, team, argv):
    code, _, err = run_cli(capsys, "run", *argv, "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and "this run's own flag sets it: `nodeweave run --nodes 1`" in line, line


@pytest.mark.parametrize("sweep, fixed", [("A=1, 2", "A=1,2"), ("A=1 ,2", "A=1,2"), ("A= 1", "A=1")])
def test_a_sweep_value_with_a_space_around_it_is_refused_with_the_spelling(capsys, team, sweep, fixed):
    """F8: `A=1, 2` ran point 2 with A=' 2'."""
    code, _, err = run_cli(capsys, "run", "--sweep", sweep, "--metric", "x ([0-9]+)", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and "starts or ends with a space" in line and line.endswith(fixed), line


@pytest.mark.parametrize("argv, target", [(("--target", "slurm"), "slurm"),
                                          (("-t", "hosts", "--host", "a", "--host", "b", "--engine", "none",
                                            "--remote-dir", "/srv/job"), "hosts")])
def test_up_hold_where_nothing_holds_is_refused(capsys, team, argv, target):
    """F31: up --target slurm --hold and up --target slurm planned byte for byte the same."""
    code, out, err = run_cli(capsys, "up", *argv, "--hold", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and f"--hold does nothing for target {target}" in line and not out, line
    code, out, err = run_cli(capsys, "up", *argv, "--dry-run")
    assert code == 0, err
