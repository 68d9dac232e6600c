"""fix16b: rows of the fourteenth walk (issue 43), walk14a's A8, A16, A11, A3, A13, A17, A15, A19."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_run import in_process as run_cli
from nodeweave.errors import EXIT_USAGE
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def _folder_as_script(team):
    (team / "train.py").unlink()
    (team / "train.py").mkdir()


def _shell_script(team):
    (team / "train.sh").write_text("#!/bin/bash\necho hi\n")
    _set_script(team, "script: train.sh")


def _program(team):
    _set_script(team, "script: nvidia-smi")


def _bare_under_command(team):
    _set_script(team, "type: command\n  script: train.py")


def _link_out(team):
    outside = team.parent / f"{team.name}-outside.py"
    outside.write_text("print(1)\n")
    (team / "train.py").unlink()
    os.symlink(outside, team / "train.py")


def _set_script(team, line):
    spec = (team / "nodeweave.yaml").read_text()
    if line.startswith("type: command"):
        spec = spec.replace("type: torchrun\n  script: train.py", line)
    else:
        spec = spec.replace("script: train.py", line)
    (team / "nodeweave.yaml").write_text(spec)
    return spec


# every member of the class: a script nodeweave's own judge (cli.run.script_refusal) knows every node refuses at
# its start whatever the image holds
MEMBERS = {"folder": (_folder_as_script, "is a folder, not a file"),
           "shell-script": (_shell_script, "is a script for another interpreter (#!/bin/bash)"),
           "program": (_program, "launcher.script 'nvidia-smi' is a program"),
           "bare-under-command": (_bare_under_command, "every node would exit 127"),
           "link-out": (_link_out, "is a symbolic link out of it")}


@pytest.mark.parametrize("member", sorted(MEMBERS))
def test_a8_a16_what_every_node_refuses_is_refused_by_validate_and_the_starting_verbs(capsys, team, member):
    """A8, A16: a script nodeweave says every node would refuse at its start was a note, then `valid` and exit 0
    (validate), or started on every node (run, up). Now validate refuses it (exit 2, no `valid`, -o json
    valid: false), and run's and up's dry runs say the real one would end with exit 2 (up's dry run ends so)."""
    make, said = MEMBERS[member]
    make(team)
    code, out, err = run_cli(capsys, "validate")
    assert code == EXIT_USAGE and "valid:" not in out and said in " ".join(err.split()), (out, err)
    assert "Traceback" not in err
    code, out, _ = run_cli(capsys, "validate", "-o", "json")
    assert code == EXIT_USAGE and '"valid": false' in out
    code, out, err = run_cli(capsys, "run", "--dry-run")
    assert code == 0 and "the real run would end with exit 2:" in out + err and said in " ".join((out + err).split())
    code, out, err = run_cli(capsys, "up", "--dry-run")  # nothing on nodes to read: certain, the real exit (walk17a)
    assert code == 2 and "the real up would end with exit 2:" in out + err, (out, err)


def test_a8_a_script_typed_after_dashes_is_judged_by_the_same_rule(capsys, team):
    """A8: `run -- train.sh` (a bash script under torchrun) was noted and then started on every node."""
    (team / "train.sh").write_text("#!/bin/bash\necho hi\n")
    code, out, err = run_cli(capsys, "run", "--dry-run", "--", "train.sh")
    assert code == 0 and "the real run would end with exit 2: train.sh is a script for another interpreter" in out


def test_a16_init_writes_no_spec_validate_refuses(capsys, tmp_path, monkeypatch):
    """A16: init wrote a spec whose script, train.py, is a folder (exit 0); its next step, validate, refuses it."""
    (tmp_path / "train.py").mkdir()
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "init")
    assert code == EXIT_USAGE and "is a folder, not a file" in err and "nothing was written" in err, err
    assert not (tmp_path / "nodeweave.yaml").exists()


def test_a8_a_python_script_is_still_valid(capsys, team):
    """A8: the rule takes nothing else: a plain Python script is valid, exit 0."""
    code, out, _ = run_cli(capsys, "validate")
    assert code == 0 and "valid:" in out


@pytest.mark.parametrize("words", [["image", "push"], ["image", "rm", "cpu"], ["image", "rmi", "cpu"],
                                   ["image", "prune"], ["image", "delete", "cpu"], ["rmi", "x"]])
def test_a19_the_docker_image_verbs_are_answered_with_nodeweaves_word(capsys, team, words):
    """A19: `image push` and `image rm` were "no such command" with nothing more, while `image ls` was answered:
    each of docker/podman image's verbs now gets nodeweave's word (othertools.HABITS), one line, exit 2."""
    from cli_run import one_line
    from nodeweave.cli.habits.othertools import HABITS

    code, _, err = run_cli(capsys, *words)
    said = one_line(err)
    group = "image" if words[0] == "image" else "nodeweave"
    verb = words[1] if group == "image" else words[0]
    assert code == EXIT_USAGE and f"nodeweave's word for it: {HABITS[group][verb]}" in said, said
    assert ("--push" in said) if verb == "push" else ("podman rmi localhost/nodeweave/<job>:<variant>" in said)


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["real", "dry-run"])
def test_a17_init_writes_no_spec_under_a_name_render_refuses(capsys, tmp_path, monkeypatch, dry_run):
    """A17: `init --out $'\\xff.yaml'` wrote the spec and named `render all --spec` as its next step, which refuses a
    spec whose name is not UTF-8; init now refuses that name by render's own rule (render.spec_name_problem)."""
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"\xff.yaml")
    code, _, err = run_cli(capsys, "init", "--out", name, *dry_run)
    assert code == EXIT_USAGE and "the file's name is not UTF-8 text" in err and "--out" in err, err
    assert os.listdir(tmp_path) == ["train.py"]


@pytest.mark.parametrize("refused_by", ["users-file", "nothing"])
def test_a13_the_kept_dockerignore_note_comes_only_with_what_was_written(capsys, team, refused_by):
    """A13: with a .dockerignore of the user's, a render refused for another file of theirs said nodeweave's rules
    "went to images/nodeweave.dockerignore", which was never written. Now the note comes with the plan ("would go
    to", dry run) or after the write ("went to"), never before a refusal."""
    (team / ".dockerignore").write_text("data/\n")
    if refused_by == "users-file":
        (team / "compose").mkdir()
        (team / "compose" / "local.yaml").write_text("services: {}\n")
    code, _, err = run_cli(capsys, "render", "all", "--dry-run")
    assert "nodeweave's rules would go to images/nodeweave.dockerignore" in " ".join(err.split())
    code, _, err = run_cli(capsys, "render", "all")
    written = (team / "images" / "nodeweave.dockerignore").is_file()
    assert written == (refused_by == "nothing") and code == (0 if written else EXIT_USAGE), err
    assert ("nodeweave's rules went to images/nodeweave.dockerignore" in " ".join(err.split())) == written, err


@pytest.mark.parametrize("out", ["../p2/nodeweave.yaml", "sub/nodeweave.yaml"])
def test_a3_init_names_the_job_after_the_folder_the_spec_is_written_in(capsys, tmp_path, monkeypatch, out):
    """A3: `init --out ../p2/nodeweave.yaml` named p2's job after the current folder (p1), while its script and
    requirements were judged from p2: two project folders then carried one job name. The name is now the spec's
    folder's, as the script and requirements are found there."""
    here = tmp_path / "p1"
    for folder in (here, here / "sub", tmp_path / "p2"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(here)
    code, _, err = run_cli(capsys, "init", "--out", out)
    assert code == 0, err
    written = (here / out).resolve()
    assert f"name: {written.parent.name}  #" in written.read_text()


@pytest.mark.parametrize("verb", [["init", "--out", "s.yaml"], ["validate", "--spec", "s.yaml"],
                                  ["run", "--dry-run", "--spec", "s.yaml"]])
@pytest.mark.parametrize("where", ["other-project", "/etc/hostname"])
def test_a11_an_absolute_script_of_this_machine_outside_the_workspace_is_noted(capsys, tmp_path, monkeypatch, verb,
                                                                               where):
    """A11: `init --script /tmp/other/train.py` (or /etc/hostname) wrote it under a comment saying "relative to
    workspace.path", and init, validate and run said nothing of a file the nodes do not have. Now each notes it
    (cli.run.host_path_note, the one judge of an absolute script), and the comment says it is the image's path."""
    here = tmp_path / "i"
    here.mkdir()
    (here / "a.py").write_text("print(1)\n")
    if where == "other-project":
        (tmp_path / "c").mkdir()
        where = str(tmp_path / "c" / "train.py")
        Path(where).write_text("print(1)\n")
    if not os.path.exists(where):
        pytest.skip(f"{where} is not on this machine")
    monkeypatch.chdir(here)
    if verb[0] != "init":
        assert run_cli(capsys, "init", "--script", where, "--out", "s.yaml")[0] == 0
    code, out, err = run_cli(capsys, *verb, *(["--script", where] if verb[0] == "init" else []))
    assert code == 0, err
    assert f"{where} is a path of this machine outside the workspace {here}" in " ".join((out + err).split())
    assert "relative to workspace.path (this folder" not in (here / "s.yaml").read_text()


@pytest.mark.parametrize("line, named", [
    ("--index-url https://pypi.corp.example/simple", "--index-url https://pypi.corp.example/simple (requirements.txt:1)"),
    ("-i https://pypi.corp.example/simple", "-i https://pypi.corp.example/simple (requirements.txt:1)"),
    ("--extra-index-url=https://pypi.corp.example/simple",
     "--extra-index-url https://pypi.corp.example/simple (requirements.txt:1)"),
    ("--find-links https://wheels.corp.example/", "--find-links https://wheels.corp.example/ (requirements.txt:1)"),
])
def test_a15_the_shell_index_note_names_the_index_the_spec_already_gives(capsys, team, monkeypatch, tmp_path_factory,
                                                                        line, named):
    """A15: with PIP_FIND_LINKS set in the shell, `image build --dry-run` advised adding `--index-url URL` to
    requirements.txt, which already named one the build's pip does use. The note now names the spec's own index
    options (build.spec_indexes, by pip's INDEX_OPTIONS) and gives no advice to add them."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))  # no pip.conf of this machine's user
    monkeypatch.setenv("PIP_FIND_LINKS", "/srv/wheels")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (team / "requirements.txt").write_text(f"{line}\nnumpy==2.4.6\n")
    spec = (team / "nodeweave.yaml").read_text().replace("  variant: cpu\n", "  variant: cpu\n  requirements: "
                                                           "requirements.txt\n")
    (team / "nodeweave.yaml").write_text(spec)
    rendered = run_cli(capsys, "render", "all")
    assert rendered[0] == 0, rendered
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run")
    said = " ".join((out + err).split())
    assert code == 0 and "index: this machine points pip/uv at another index (PIP_FIND_LINKS" in said, said
    assert f"its pip uses the index the spec names: {named}" in said, said
    assert "goes in requirements.txt as `--index-url URL`" not in said
