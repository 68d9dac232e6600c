"""The eighth walk, part A, rows A1..A10 (issue 43): each row's class, one test per class, each failing on the code
before it."""

from __future__ import annotations

import os

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A8: a --url that urllib cannot even split is the user's typo (exit 2, one line), never a traceback ----------

@pytest.mark.parametrize("verb", [("top", "--once"), ("dashboard", "--port", "0")])
@pytest.mark.parametrize("url, said", [("http://[::1", "closing ]"), ("http://[fd00::1:9464", "closing ]"),
                                       ("http://[zz]:9464", "not an IPv6 address"), ("http://x]:1", "no opening ["),
                                       ("http://a b:9464", "no spaces"), ("http://a\tb:9464", "no spaces")])
def test_a_url_that_cannot_be_split_is_one_line(capsys, team, verb, url, said):
    code, _, err = run_cli(capsys, *verb, "--url", url)
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "--url" in line and said in line and "http://[fd00::1]:9464" in line


# -- A9: --bind takes an address as a URL writes it ([::1]) and says where a pasted port goes ---------------------

def test_bind_takes_the_bracketed_ipv6_form():
    from nodeweave.cli.dashboard import bind_address

    assert bind_address("[::1]") == "::1"
    assert bind_address("::1") == "::1"
    assert bind_address("127.0.0.1") == "127.0.0.1"
    assert bind_address("localhost") == "localhost"


@pytest.mark.parametrize("bind, said", [("[::1]:8080", "--bind [::1] --port 8080"),
                                        ("127.0.0.1:8080", "--bind 127.0.0.1 --port 8080"),
                                        ("[zz]", "not an IPv6 address in brackets"),
                                        ("[::1", "not an IPv6 address in brackets")])
def test_bind_slips_are_named(capsys, team, bind, said):
    code, _, err = run_cli(capsys, "dashboard", "--url", "http://127.0.0.1:9", "--bind", bind)
    assert code == EXIT_USAGE
    assert said in one_line(err)


# -- A1: a path a Slurm step mounts never holds pyxis'/apptainer's separators (',' between mounts, ':' in one) ------

@pytest.mark.parametrize("folder", ["co,mma", "co:lon"])
@pytest.mark.parametrize("runtime", ["pyxis", "apptainer"])
def test_a_slurm_step_refuses_a_folder_with_a_mount_separator(capsys, tmp_path, monkeypatch, folder, runtime):
    (tmp_path / folder).mkdir()
    team = make_team(tmp_path / folder, monkeypatch)
    with open(team / "nodeweave.yaml", "a") as spec:
        spec.write(f"slurm: {{runtime: {runtime}}}\n")
    code, out, err = run_cli(capsys, "run", "-t", "slurm", "--dry-run")
    assert code == EXIT_USAGE, out
    line = one_line(err)
    assert str(team) in line and folder[2] in line and "--container-mounts" in line and "--bind" in line


def test_a_remote_dir_with_a_mount_separator_is_refused(capsys, team):
    code, out, err = run_cli(capsys, "run", "-t", "slurm", "--remote-dir", "/shared/a,b", "--dry-run")
    assert code == EXIT_USAGE, out
    assert "/shared/a,b" in one_line(err)
    code, out, _ = run_cli(capsys, "run", "-t", "slurm", "--remote-dir", "/shared/ab", "--dry-run")
    assert code == 0 and "--container-mounts=/shared/ab:/workspace" in out


def test_the_batch_script_refuses_a_submit_folder_with_a_mount_separator(capsys, tmp_path, monkeypatch):
    import subprocess

    (tmp_path / "a,b").mkdir()
    team = make_team(tmp_path / "a,b", monkeypatch)
    code, _, _ = run_cli(capsys, "render", "slurm")
    assert code == 0
    env = {"PATH": "/usr/bin:/bin", "HOME": home_beside(tmp_path), "NODEWEAVE_RUNTIME": "pyxis", "SLURM_SUBMIT_DIR": str(team)}
    done = subprocess.run(["bash", "slurm/job.sbatch"], cwd=team, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_USAGE and "holds a ',' or ':'" in done.stderr, done.stderr
    fake = tmp_path / "bin"  # no container mount with the host runtime: the script goes on to srun (a stand-in)
    fake.mkdir()
    (fake / "srun").write_text("#!/bin/sh\necho srun reached\n")
    (fake / "srun").chmod(0o755)
    env.update(NODEWEAVE_RUNTIME="host", PATH=f"{fake}:/usr/bin:/bin")
    done = subprocess.run(["bash", "slurm/job.sbatch"], cwd=team, env=env, capture_output=True, text=True, timeout=60)
    assert "holds a ',' or ':'" not in done.stderr and "srun reached" in done.stdout, done.stderr


# -- A2: a record's value is said as the file spells it (null, missing), and another job's unread record names the
# -- way to that job, not the spec's own ------------------------------------------------------------------------------

@pytest.mark.parametrize("made, said", [({}, "field made.job is missing"), ({"job": None}, "field made.job is null"),
                                        ({"job": True}, "field made.job is true"),
                                        ({"job": "ren", "project": [1, None]}, "field made.project is [1, null]")])
def test_another_jobs_unread_record_is_said_in_json_with_its_own_remedy(capsys, team, made, said):
    import json

    (team / ".nodeweave" / "ren").mkdir(parents=True)
    (team / ".nodeweave" / "ren" / "cluster.json").write_text(json.dumps({"target": "local", "made": made}))
    _, _, err = run_cli(capsys, "status")
    line = [line for line in err.splitlines() if ".nodeweave/ren/cluster.json" in line]
    assert len(line) == 1 and said in line[0], err
    assert "None" not in line[0] and "True" not in line[0]
    assert "put `name: ren` back in nodeweave.yaml" in line[0] and "nodeweave down -t TARGET" not in line[0]


# -- A5: a store that never answered is no verdict on the image: only the engine's own line is said ------------------

def test_a_silent_docker_daemon_is_not_said_to_lack_the_image(capsys, team, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon at "
                                    "unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    code, out, err = run_cli(capsys, "up", "--dry-run", "--engine", "docker", "--hold")
    said = [line for line in (out + err).splitlines() if "would end" in line]
    assert said and "daemon does not answer" in said[0], out + err
    assert not any("not built here" in line for line in said), said


def test_an_absent_image_is_still_said_when_the_store_answered(capsys, team, tmp_path, monkeypatch):
    from nodeweave.cluster.pullable import absent_here

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text("#!/bin/sh\necho 'Error: No such image: localhost/x:y' >&2\nexit 1\n")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert "is not built here" in absent_here("localhost/x:y", "docker")


# -- A3: the image carries its folder's mark as up's containers do; another folder's build at the tag is said -------

FAKE_PODMAN_STORE = """#!/bin/sh
# podman, as `podman image inspect --format F REF` answers for an image another folder's build left at every tag
if [ "$1 $2" = "image inspect" ]; then
  echo '{"io.nodeweave.image.job": "team", "io.nodeweave.image.folder": "%s", "io.nodeweave.image.owner": "%s"}'; exit 0
fi
exec %s "$@"
"""


def _store_holding(team, folder: str, owner: str, monkeypatch) -> None:
    from nodeweave.cli import main

    assert main(["render", "all"]) == 0  # the build context the build reads (its entrypoint zipapp, Dockerfile)
    bin_dir = team / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    import shutil

    real = shutil.which("podman")
    if real is None:
        pytest.skip("the build's engine detection asks a real podman (its version) before the store")
    for tool, text in (("podman", FAKE_PODMAN_STORE % (folder, owner, real)), ("podman-compose", "#!/bin/sh\nexit 0\n")):
        (bin_dir / tool).write_text(text)
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")


def test_a_build_marks_its_folder_and_names_another_folders_image_at_its_tag(capsys, team, monkeypatch):
    from nodeweave.cluster.identity import JobMark

    other = team.parent / "b"  # a folder still here (a gone one's tag is replaced: tests/test_walk16_fix18b.py)
    other.mkdir()
    _store_holding(team, str(other), "0123456789ab", monkeypatch)
    code, out, err = run_cli(capsys, "image", "build", "--dry-run")  # refused without --force (walk16 A4)
    assert code == 2 and f"holds the image built from {other}" in err and "--force to replace it" in err, err
    code, out, err = run_cli(capsys, "image", "build", "--dry-run", "--force")
    assert code == 0, err
    assert f"--label io.nodeweave.image.owner={JobMark.of(team, 'team').owner}" in out
    assert f"--label io.nodeweave.image.folder={team.resolve()}" in out
    assert "--label io.nodeweave.owner=" not in out  # a container run from it by hand is no `up`'s (CI stop 50)
    assert f"now holds the image built from {other}" in out + err
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")  # refused: another folder's code (walk16 A4)
    assert code == 3 and f"was built from {other}, not this folder" in out + err, out + err


def test_this_folders_own_image_is_not_said(capsys, team, monkeypatch):
    from nodeweave.cluster.identity import JobMark

    _store_holding(team, str(team.resolve()), JobMark.of(team, "team").owner, monkeypatch)
    code, out, err = run_cli(capsys, "image", "build", "--dry-run")
    assert code == 0 and "now holds the image built from" not in out + err, out + err
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run")
    assert code == 0 and "was built from" not in out + err


# -- A4: doctor --cluster's dry run through a KIND:NAME says first that the node is not there, as sync's does -------

def test_doctor_cluster_dry_run_names_an_absent_container(capsys, team, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "podman").write_text('#!/bin/sh\n[ "$1" = exec ] && [ "$2" = trainer-0 ] && exit 0\n'
                                    'echo "Error: no container with name or ID \\"$2\\" found: no such container" >&2\n'
                                    'exit 125\n')
    (bin_dir / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    code, out, err = run_cli(capsys, "doctor", "--dry-run", "--cluster", "--node", "podman:trainer-1")
    assert code == 1  # the one dry-run rule (walk18a A5, A7): a refusal the dry run found ends it with the real exit
    said = [line for line in out.splitlines() if line.startswith("#")]
    assert "the real doctor --cluster would end with exit 1: podman:trainer-1:" in said[0], out
    assert "no such container" in said[0]
    code, out, err = run_cli(capsys, "doctor", "--dry-run", "--cluster", "--node", "podman:trainer-0")
    assert code == 0 and "would end" not in out + err, out + err


# -- A6: a missing script beside the file it most likely meant is named ("did you mean"), and init refuses it --------

@pytest.mark.parametrize("given", ["train", "trian.py"])
def test_init_refuses_a_script_near_a_file_that_is_there(capsys, tmp_path, monkeypatch, given):
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "init", "--script", given, "--out", "t.yaml")
    assert code == EXIT_USAGE and "did you mean train.py?" in one_line(err)
    assert not (tmp_path / "t.yaml").exists()
    code, _, err = run_cli(capsys, "init", "--script", given, "--out", "t.yaml", "--force")
    assert code == 0 and "did you mean train.py, which is there?" in err, err
    for argv in (["validate", "--spec", "t.yaml"], ["run", "--dry-run", "--spec", "t.yaml"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0 and "did you mean train.py, which is there?" in out + err, out + err


def test_a_script_with_nothing_close_is_only_noted(capsys, tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "init", "--script", "serve_model.py", "--out", "t.yaml")
    assert code == 0 and "did you mean" not in err and "is not in the workspace" in err


# -- A7: a count below 1 is the slip itself; the grow-the-cluster advice only for more nodes than it has ------------

@pytest.mark.parametrize("count", ["0", "-1"])
@pytest.mark.parametrize("target", [(), ("-t", "hosts", "--host", "gpu01", "--host", "gpu02", "--remote-dir", "/srv/j")])
def test_nodes_below_one_gets_no_grow_advice(capsys, team, count, target):
    code, _, err = run_cli(capsys, "run", "--dry-run", *target, f"--nodes={count}")
    line = one_line(err)
    assert code == EXIT_USAGE and f"--nodes {count} is not accepted: a count of nodes, 1 to 2" in line
    assert "raise" not in line and "list" not in line


def test_nodes_above_the_cluster_keeps_its_grow_advice(capsys, team):
    code, _, err = run_cli(capsys, "run", "--dry-run", "--nodes=3")
    assert code == EXIT_USAGE and "raise nodes in the spec to 3" in one_line(err)


# -- A10: every dry run of a verb that writes into a read-only folder refuses as its real run, naming the cause ------

READ_ONLY_VERBS = [("init", "--dry-run"), ("init", "--out", "other.yaml", "--dry-run"),
                   ("doctor", "--capture", "cap", "--dry-run"), ("up", "--dry-run"),
                   ("bench", "--dry-run", "--json-out", "b.json"),
                   ("hosts", "probe", "--node", "gpu01", "--write-hostfile", "hf", "--dry-run"),
                   ("render", "all", "--dry-run"), ("run", "--dry-run"),
                   ("image", "build", "cpu", "--dry-run")]  # walk10 A12: the default context, as --context is


def _in_a_read_only_folder(folder, *argv):
    """``nodeweave ARGV`` in ``folder`` bind-mounted read-only in a mount namespace of its own (root only)."""
    import shutil

    from cli_run import NODEWEAVE, run

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and unshare")
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && cd "$0" && exec "$@"'
    done = run(["unshare", "-m", "sh", "-c", script, str(folder), *NODEWEAVE, *argv])
    if done.returncode != 0 and "mount" in done.stderr and "nodeweave" not in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    return done


def test_a_check_that_writes_nothing_passes_in_a_read_only_folder(team, capsys):
    """walk10 A11: `render all --check` in a read-only checkout (CI's read-only source mount) was refused as a
    render would be, though --check writes nothing; an up-to-date tree is exit 0, a stale one 4."""
    assert run_cli(capsys, "render", "all")[0] == 0
    done = _in_a_read_only_folder(team, "render", "all", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("argv", READ_ONLY_VERBS, ids=[" ".join(a) for a in READ_ONLY_VERBS])
def test_a_dry_run_refuses_writing_into_a_read_only_folder(team, argv):
    done = _in_a_read_only_folder(team, *argv)
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    assert "read-only file system" in one_line(done.stderr)


def test_a_record_with_no_made_field_is_named_but_one_down_left_is_not(capsys, team):
    import json

    from nodeweave.cluster.options import ClusterOptions, save_state

    record = team / ".nodeweave" / "ren" / "cluster.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"target": "local", "engine": "podman"}))  # an older nodeweave's, or by hand
    for argv in (["status"], ["down", "--dry-run"], ["up", "--dry-run"]):
        _, _, err = run_cli(capsys, *argv)
        said = [line for line in err.splitlines() if ".nodeweave/ren/cluster.json" in line]
        assert len(said) == 1 and "whether job ren is still up cannot be told" in said[0], err
    save_state(team / "nodeweave.yaml", "ren", ClusterOptions(target="local"), made=None)  # what down leaves
    assert json.loads(record.read_text())["made"] is None
    _, _, err = run_cli(capsys, "status")
    assert ".nodeweave/ren/cluster.json" not in err, err
