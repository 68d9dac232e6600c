"""Walk 7, part A, rows A14..A33 (but A28): each a class of failure, one test per class.

A31..A33: bytes that are not UTF-8 in an argument, a folder's name or a file the user owns are printed, hashed and
read one way (``nodeweave.usertext``, ``bounded.NotText``): never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from cli_run import nodeweave
from nodeweave.errors import EXIT_USAGE

SPEC = "name: team\nnodes: 2\nimage: {variant: cpu}\nlauncher:\n  type: torchrun\n  script: train.py\n"


def _project(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nodeweave.yaml").write_text(SPEC)
    (folder / "train.py").write_text("print('training')\n")
    return folder


def _strict(**extra):
    """The environment of a user whose locale's encoder is strict (en_US.UTF-8), not this machine's C.UTF-8."""
    return {**os.environ, "PYTHONIOENCODING": "utf-8:strict", **extra}


def _said(done) -> str:
    return done.stderr.decode("utf-8", "replace") if isinstance(done.stderr, bytes) else done.stderr


@pytest.mark.parametrize("argv", [["run", "--dry-run", "-o", "yaml", "--", "train.py", "\udcff"],
                                  ["exec", "--dry-run", "-o", "yaml", "-e", "A=\udcff", "--", "ls"],
                                  ["exec", "--dry-run", "-o", "yaml", "--", "\udcff"],
                                  ["run", "--dry-run", "--", "train.py", "\udcff"],
                                  ["exec", "--dry-run", "-o", "json", "--", "\udcff"]])
def test_a31_an_argument_that_is_not_utf8_is_printed_never_a_traceback(tmp_path, argv):
    _project(tmp_path)
    done = nodeweave(*argv, cwd=tmp_path, env=_strict(), text=False)
    assert done.returncode == 0, _said(done)
    assert b"Traceback" not in done.stderr
    if "yaml" in argv:
        plan = yaml.safe_load(done.stdout)  # the same escape -o json writes, read back as the same byte
        assert "\udcff" in json.dumps(plan, ensure_ascii=False) or "\\udcff" in json.dumps(plan)
    elif "json" not in argv:
        assert b"'\xff'" in done.stdout  # the plan's shell line names the very byte, pasted back it is the same


def test_a31_a_message_shows_the_byte_as_the_shell_writes_it(tmp_path):
    _project(tmp_path)
    done = nodeweave("exec", "--dry-run", "--node", "\udcff", "--", "ls", cwd=tmp_path, env=_strict(), text=False)
    said = _said(done)
    assert done.returncode == EXIT_USAGE and "Traceback" not in said
    assert "--node $'\\xff' names no node" in said and "udcff" not in said


@pytest.mark.parametrize("argv", [["status"], ["run", "--dry-run"], ["down", "--dry-run"], ["exec", "--dry-run", "--", "ls"],
                                  ["check", "--dry-run"], ["up", "--dry-run", "-t", "slurm"],
                                  ["up", "--dry-run", "-t", "kubernetes"], ["up", "--dry-run"],
                                  ["sync", ".", "/workspace", "--node", "podman:x", "--dry-run"], ["runs", "ls"]])
def test_a32_every_verb_answers_in_a_folder_whose_name_is_not_utf8(tmp_path, argv):
    folder = _project(tmp_path / os.fsdecode(b"d\xffir"))
    done = nodeweave(*argv, cwd=folder, env=_strict(PATH=os.environ["PATH"]), text=False)
    said = _said(done)
    assert "Traceback" not in said, said
    assert "udcff" not in said  # a path in a message: d$'\xff'ir, as the shell writes it
    if argv == ["up", "--dry-run"]:  # the local compose file mounts the folder by its absolute path: YAML is UTF-8
        assert done.returncode == EXIT_USAGE and "d$'\\xff'ir holds a byte that is not UTF-8" in said


def test_a32_the_job_mark_hashes_the_folders_bytes():
    from nodeweave.cluster.identity import JobMark

    mark = JobMark(os.fsdecode(b"/srv/d\xffir"), "team")
    assert len(mark.owner) == 12 and mark.labels()["io.nodeweave.folder"] == "/srv/d$'\\xff'ir"
    assert mark.owner != JobMark(os.fsdecode(b"/srv/d\xfeir"), "team").owner


@pytest.mark.parametrize("name,text", [(".dockerignore", b"# mine\ncaf\xe9\n"),
                                       ("hosts", b"gpu01\n# caf\xe9\n")])
def test_a33_a_file_of_yours_that_is_not_utf8_is_one_line(tmp_path, name, text):
    _project(tmp_path)
    assert nodeweave("render", "images", cwd=tmp_path).returncode == 0
    (tmp_path / name).write_bytes(text)
    argv = ["image", "build", "cpu", "--dry-run"] if name == ".dockerignore" else \
        ["sync", ".", "/srv/job", "--hosts-file", "hosts", "--dry-run"]
    done = nodeweave(*argv, cwd=tmp_path, env=_strict())
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{name}, line 2: byte 0xe9 is not UTF-8 text" in done.stderr and "save it as UTF-8" in done.stderr


def test_a33_a_hand_edited_dockerfile_in_latin1_is_compared_as_bytes(tmp_path):
    _project(tmp_path)
    assert nodeweave("render", "all", cwd=tmp_path).returncode == 0
    (tmp_path / "images" / "cpu" / "Dockerfile").write_bytes(b"caf\xe9 # Dockerfile by me\nFROM x\n")
    done = nodeweave("image", "build", "cpu", "--dry-run", cwd=tmp_path, env=_strict())
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_the_yaml_dumper_escapes_what_libyaml_refuses():
    from nodeweave.yamltext import dump_yaml

    text = dump_yaml({"argv": ["train.py", "\udcff", "3e-4"]}, sort_keys=False)
    assert yaml.safe_load(text) == {"argv": ["train.py", "\udcff", "3e-4"]} and "'3e-4'" in text


def _run_folder(project, stamp, log=None):
    folder = project / "runs" / f"{stamp}-team"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"id": f"{stamp}-team", "job": "team", "started": "2026-11-30T01:56:00Z",
                                                 "ended": "2026-11-30T01:57:00Z", "exit_code": 0, "nodes": []}))
    if log is not None:
        (folder / "node-0.log").write_text(log)
    return folder


@pytest.mark.parametrize("kind", ["link", "pipe"])
@pytest.mark.parametrize("argv", [["logs", "--run", "20261130T016"],
                                  ["runs", "compare", "20261130T016", "20261130T010", "--metric", "(SECRET)"]])
def test_a26_a_run_folders_log_that_is_a_link_or_a_pipe_is_refused_by_every_reader(tmp_path, kind, argv):
    project = _project(tmp_path / "team")
    (tmp_path / "shadow").write_text("SECRET:*:20228\n")
    linked = _run_folder(project, "20261130T016000Z")
    _run_folder(project, "20261130T010000Z", log="step 1 SECRET 3\n")
    if kind == "link":
        os.symlink(tmp_path / "shadow", linked / "node-0.log")
    else:
        os.mkfifo(linked / "node-0.log")
    done = nodeweave(*argv, cwd=project, timeout=60)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "SECRET:*" not in done.stdout
    what = "a symbolic link (to " if kind == "link" else "a named pipe"
    assert f"20261130T016000Z-team/node-0.log is {what}" in done.stderr and "not a file nodeweave wrote" in done.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root, as `sudo nodeweave` is")
def test_a29_root_writing_into_a_folder_another_user_owns_is_said_once(tmp_path):
    project = _project(tmp_path / "own")
    for path in [project, *project.iterdir()]:
        os.chown(path, 1001, 1001)
    done = nodeweave("render", "all", cwd=project)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "running as root in" in line]
    assert len(warnings) == 1 and f"{project}, which belongs to" in warnings[0] and "1001:1001" in warnings[0]
    os.chown(project, 0, 0)  # the folder root's own: nothing to say
    assert "running as root" not in nodeweave("render", "all", "--force", cwd=project).stderr


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_a14_render_out_into_another_jobs_render_is_refused(tmp_path, extra):
    team, other = _project(tmp_path / "team"), _project(tmp_path / "team2")
    (other / "nodeweave.yaml").write_text(SPEC.replace("name: team", "name: other-job"))
    assert nodeweave("render", "compose", cwd=other).returncode == 0
    before = (other / "compose" / "local.yaml").read_bytes()
    done = nodeweave("render", "compose", "--out", str(other), *extra, cwd=team)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"{other} is another project's folder (it holds its own spec, nodeweave.yaml, name: other-job)" in \
        " ".join(done.stderr.split()) and "--force" in done.stderr
    assert (other / "compose" / "local.yaml").read_bytes() == before
    renamed = SPEC.replace("name: team", "name: other-job-v2")  # in its own folder, a renamed job re-renders
    (other / "nodeweave.yaml").write_text(renamed)
    assert nodeweave("render", "compose", cwd=other).returncode == 0
    assert nodeweave("render", "compose", "--out", str(other), "--force", cwd=team).returncode == 0


def test_a15_one_rule_for_workspace_path_and_syncs_dest(tmp_path):
    project = _project(tmp_path)
    (project / "nodeweave.yaml").write_text(SPEC + 'workspace: {path: "/work space"}\n')
    done = nodeweave("validate", cwd=project)
    assert done.returncode == 0 and "workspace.path '/work space' is not accepted" in done.stderr
    assert "`nodeweave sync` sends to workspace.path by default" in done.stderr
    done = nodeweave("sync", "--dry-run", "--node", "podman:x", cwd=project)
    assert done.returncode == EXIT_USAGE and "DEST (workspace.path of " in done.stderr, done.stderr
    (project / "nodeweave.yaml").write_text(SPEC + "workspace: {path: /work_space}\n")
    assert "workspace.path" not in nodeweave("validate", cwd=project).stderr


@pytest.mark.parametrize("line,word", [("gpu01 gpu02", "'gpu02'"), ("gpu01\tgpu03", "'gpu03'"),
                                       ("gpu01 slots=abc", "'slots=abc'"), ("gpu01 slot=8", "'slot=8'"),
                                       ("gpu01 slots=0", "'slots=0'"), ("gpu01 slots=8 foo", "'foo'")])
@pytest.mark.parametrize("argv", [["sync", ".", "/srv/job", "--hosts-file", "hf", "--dry-run"],
                                  ["hosts", "probe", "--hosts-file", "hf", "--dry-run"],
                                  ["up", "-t", "hosts", "--hosts-file", "hf", "--remote-dir", "/srv/job", "--dry-run"]])
def test_a16_a_hosts_file_line_holds_one_host_and_slots_only(tmp_path, line, word, argv):
    project = _project(tmp_path)
    (project / "hf").write_text(line + "\n")
    done = nodeweave(*argv, cwd=project)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"hosts file hf, line 1: {word} after the host 'gpu01'" in done.stderr


def test_a16_deepspeed_slots_are_still_read():
    from nodeweave.remote.names import host_of_line

    assert host_of_line(["root@gpu01", "slots=8"], "hf, line 1") == "root@gpu01"


@pytest.mark.parametrize("made,argv", [({"target": "kubernetes", "namespace": "ml", "where": "namespace ml"},
                                        ["up", "-t", "local", "--dry-run"]),
                                       ({"target": "local", "project": "team-1234abcd", "where": "podman"},
                                        ["up", "-t", "kubernetes", "--dry-run"])])
def test_a17_up_on_another_target_than_the_recorded_one_is_refused(tmp_path, made, argv):
    from nodeweave.errors import EXIT_ENVIRONMENT

    project = _project(tmp_path)
    (project / ".nodeweave" / "team").mkdir(parents=True)
    record = {"target": made["target"], "made": {"job": "team", **made}}
    (project / ".nodeweave" / "team" / "cluster.json").write_text(json.dumps(record))
    done = nodeweave(*argv, cwd=project)
    assert done.returncode == EXIT_ENVIRONMENT, done.stderr
    assert f"records team up on {made['target']}" in done.stderr and "`nodeweave down` takes the recorded one" \
        in done.stderr


@pytest.mark.parametrize("flag", [["--base", "ubuntu:22.04"], ["--tag", "v1"], ["--build-arg", "A=1"],
                                  ["--wheelhouse", "."], ["--offline"], ["--network", "host"],
                                  ["--engine", "podman"], ["--no-cache"]])
def test_a18_a_local_build_flag_with_target_openshift_is_refused(tmp_path, flag):
    project = _project(tmp_path)
    done = nodeweave("image", "build", "cpu", "-t", "openshift", *flag, "--dry-run", cwd=project)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"{flag[0]} does nothing for -t openshift" in done.stderr


@pytest.mark.parametrize("argv,said", [(["--seconds", "1e9"], "--seconds 1000000000 is not accepted: less than --timeout 300"),
                                       (["--seconds", "5", "--timeout", "5"], "--seconds 5 is not accepted"),
                                       (["--repeats", "100000"], "--repeats 100000 is not accepted: 1 to 10")])
def test_a19_check_values_that_would_never_end_are_refused(tmp_path, argv, said):
    project = _project(tmp_path)
    done = nodeweave("check", "--dry-run", *argv, cwd=project)
    assert done.returncode == EXIT_USAGE and said in done.stderr, done.stderr
    assert nodeweave("check", "--dry-run", "--repeats", "10", "--seconds", "5", cwd=project).returncode == 0


def test_a20_a_target_whose_up_starts_nothing_says_what_it_waits_for(tmp_path):
    project = _project(tmp_path)
    done = nodeweave("up", "-t", "slurm", "--dry-run", cwd=project)
    last = done.stdout.strip().splitlines()[-1]
    assert "until the allocation is granted and each of its 2 node(s) answers an srun step" in last, done.stdout
    assert "node(s) run" not in last
    assert "until 2 node(s) run: podman:team-0" in nodeweave("up", "--dry-run", cwd=project).stdout


def test_a21_a_compose_project_with_nothing_up_is_exit_3_as_every_not_up(tmp_path):
    from nodeweave.errors import EXIT_ENVIRONMENT

    if not shutil.which("podman"):
        pytest.skip("podman is not installed (.ci/setup-engine.sh installs it): it is asked for the project's "
                    "containers")
    project = _project(tmp_path)
    argv = ["sync", ".", "/workspace", "--compose-project", "nwnoneupzz", "--engine", "podman"]
    done = nodeweave(*argv, "--dry-run", cwd=project, env={**os.environ})
    assert "the real sync would end with exit 3: compose project 'nwnoneupzz' has no running container" in \
        done.stderr + done.stdout, done.stderr
    done = nodeweave(*argv, cwd=project, env={**os.environ})
    assert done.returncode == EXIT_ENVIRONMENT and "nothing is up there" in done.stderr


@pytest.mark.parametrize("given,what", [("compose/local.yaml", "a file nodeweave rendered from a spec"),
                                        ("manifests/base/kustomization.yaml", "a file nodeweave rendered"),
                                        (".nodeweave/rendered.json", "nodeweave's own state")])
def test_a22_a_file_nodeweave_wrote_given_as_the_spec_is_named_as_what_it_is(tmp_path, given, what):
    project = _project(tmp_path)
    assert nodeweave("render", "compose", cwd=project).returncode == 0
    assert nodeweave("render", "manifests", cwd=project).returncode == 0
    done = nodeweave("validate", "--spec", given, cwd=project)
    assert done.returncode == EXIT_USAGE
    assert f"{given} is {what}" in done.stderr and "(--spec nodeweave.yaml)" in done.stderr, done.stderr
    assert "unknown key" not in done.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
@pytest.mark.parametrize("target", ["render", "image", "sync", "up", "run", "status", "logs", "down", "demo"])
def test_a23_every_make_recipe_passes_spec_as_one_word(tmp_path, target):
    import shlex
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    spec = str(tmp_path / "my proj ü" / "it's.yaml")
    done = subprocess.run(["make", "-n", target, f"SPEC={spec}"], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    recipe = [line for line in done.stdout.splitlines() if "nodeweave " in line or "demo.sh" in line][-1]
    words = shlex.split(recipe)
    assert spec in words, recipe


@pytest.mark.parametrize("script", ["./train.py", "only_here.py"])
def test_a24_a_script_typed_in_a_subfolder_runs_the_one_there(tmp_path, script):
    """A24, as walk10 C10 made it: the script typed in a subfolder is the one there (as the shell reads the path),
    given to the nodes from the workspace's root and said so; it was only noted, and the root's (or none) ran."""
    project = _project(tmp_path)
    (project / "sub").mkdir()
    shutil.copy(project / "train.py", project / "sub" / "train.py")
    (project / "sub" / "only_here.py").write_text("print(1)\n")
    done = nodeweave("run", "--dry-run", "--", script, cwd=project / "sub")
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    given = f"sub/{script.lstrip('./')}"
    assert f"{script} runs as {given}: read from where you typed it" in said and f"-- {given}" in said, said
    assert "runs as" not in nodeweave("run", "--dry-run", "--", "train.py", cwd=project).stdout


@pytest.mark.parametrize("flag", [["--method", "rsync"], ["--method", "tar"], ["--tar"]])
def test_a25_a_way_of_sending_with_check_is_refused_as_its_siblings(tmp_path, flag):
    project = _project(tmp_path)
    done = nodeweave("sync", ".", "/workspace", "--node", "podman:x", "--check", *flag, "--dry-run", cwd=project)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"{flag[0]} does nothing with --check (--check moves nothing" in done.stderr


def test_a25_the_exclude_note_under_check_speaks_of_the_comparison(tmp_path):
    project = _project(tmp_path)
    done = nodeweave("sync", ".", "/workspace", "--node", "podman:x", "--check", "-x", "*.py", "--dry-run",
                     cwd=project)
    assert "leaves out launcher.script train.py: --check does not compare it" in done.stdout + done.stderr


@pytest.mark.parametrize("word", ["GPU01", "gpu01.", "ssh:gpu01", "root@gpu01", "gpu01", "ssh+docker:gpu01/team-node"])
def test_a27_node_matches_a_host_as_up_compares_hosts(tmp_path, word):
    project = _project(tmp_path)
    (project / "hosts.txt").write_text("gpu01\ngpu02\n")
    done = nodeweave("exec", "-t", "hosts", "--hosts-file", "hosts.txt", "--remote-dir", "/srv/job", "--node", word,
                     "--dry-run", "--", "hostname", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "# node-0 (ssh+docker:gpu01/team-node)" in done.stdout and "node-1" not in done.stdout


@pytest.mark.parametrize("command", [["bash", "-c", "python train.py"], ["sh", "-c", "true"],
                                     ["/usr/bin/env", "python", "train.py"], ["ls"]])
def test_a30_a_program_after_dashes_under_a_python_launcher_gets_the_right_remedy(tmp_path, command):
    project = _project(tmp_path)
    done = nodeweave("run", "--dry-run", "--", *command, cwd=project)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"`{command[0]}` is a program, not a Python script: torchrun starts" in done.stderr
    assert "--launcher command" in done.stderr and "not in the workspace" not in done.stderr
    assert nodeweave("run", "--dry-run", "--launcher", "command", "--", *command, cwd=project).returncode == 0
