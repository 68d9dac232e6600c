"""The seventh walk, part A, rows A35-A37, A45-A50, A53, A54 (issue 43): one test per class, each failing on the
code before it."""

from __future__ import annotations

import os

import pytest

from nodeweave.errors import EXIT_ENVIRONMENT, EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A35: a localhost/ image this machine's store lacks: the local up refuses before starting anything ------------

FAKE_PODMAN = """#!/bin/sh
# podman's store, as `podman image inspect --format F REF` answers: only localhost/nodeweave/team:built is there
if [ "$1 $2" = "image inspect" ]; then
  [ "$5" = "localhost/nodeweave/team:built" ] && { echo '{}'; exit 0; }
  echo "Error: inspecting object: $5: image not known" >&2; exit 125
fi
exit 0
"""


def test_up_refuses_a_localhost_image_not_built_here(capsys, team, monkeypatch):
    bin_dir = team / "fakebin"
    bin_dir.mkdir()
    for tool, text in (("podman", FAKE_PODMAN), ("podman-compose", "#!/bin/sh\nexit 0\n")):
        (bin_dir / tool).write_text(text)
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    for extra in ([], ["--image", "localhost/nodeweave/team:v9"]):
        code, out, _ = run_cli(capsys, "up", "--hold", "--dry-run", *extra)
        assert code == 0 and "the real up would end with exit 3: image localhost/nodeweave/team:" in out
        assert "is not built here" in out
    code, out, _ = run_cli(capsys, "up", "--hold", "--dry-run", "--image", "localhost/nodeweave/team:built")
    assert code == 0 and "would end with exit 3" not in out
    code, _, err = run_cli(capsys, "up", "--hold")
    line = one_line(err)
    assert code == EXIT_ENVIRONMENT and "image localhost/nodeweave/team:cpu is not built here" in line
    assert "`nodeweave image build cpu` first" in line
    assert not (team / ".nodeweave" / "team").exists()


# -- A36: a folder nodeweave writes into is never inside runs/ beside a spec, the run folders' store --------------

@pytest.mark.parametrize("words", [["render", "all", "--dry-run", "--out", "runs"],
                                   ["render", "compose", "--out", "runs/rendered"],
                                   ["doctor", "--capture", "runs/cap"]])
def test_a_folder_nodeweave_writes_is_refused_inside_the_runs_store(capsys, team, words):
    code, out, err = run_cli(capsys, *words)
    assert code == EXIT_USAGE and "the run folders' store beside the spec" in one_line(err)
    assert not (team / "runs").exists()


def test_render_out_inside_the_specs_checkpoint_folder_is_refused(capsys, team):
    with open(team / "nodeweave.yaml", "a") as spec:
        spec.write("recovery: {enabled: true, checkpoint_dir: checkpoints}\n")
    code, _, err = run_cli(capsys, "render", "all", "--dry-run", "--out", "checkpoints/rendered")
    assert code == EXIT_USAGE and "the spec's recovery.checkpoint_dir (checkpoints)" in one_line(err)
    code, _, _ = run_cli(capsys, "render", "all", "--dry-run", "--out", "build")
    assert code == 0


def test_the_runs_dir_itself_stays_accepted(capsys, team):
    code, _, err = run_cli(capsys, "run", "--dry-run", "--runs-dir", "runs")
    assert "run folders' store" not in err


# -- A37 and A49: init says which spec the next verbs typed in its folder would read ------------------------------

def test_init_below_another_spec_is_refused_without_force(capsys, team, monkeypatch):
    (team / "src").mkdir()
    (team / "src" / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(team / "src")
    for extra in ([], ["--dry-run"]):
        code, _, err = run_cli(capsys, "init", *extra)
        line = one_line(err)
        assert code == EXIT_USAGE and "../nodeweave.yaml (job team) already covers" in line and "--force" in line
    assert not (team / "src" / "nodeweave.yaml").exists()
    code, _, _ = run_cli(capsys, "init", "--force")
    assert code == 0 and (team / "src" / "nodeweave.yaml").is_file()
    assert "name: team" in (team / "nodeweave.yaml").read_text()


def test_init_hint_acts_on_the_written_spec_when_a_variable_names_another(capsys, team, monkeypatch, tmp_path_factory):
    other = tmp_path_factory.mktemp("init2")
    (other / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(other)
    monkeypatch.setenv("NODEWEAVE_SPEC", str(team / "nodeweave.yaml"))
    code, _, err = run_cli(capsys, "init")
    last = err.strip().splitlines()[-1]
    assert code == 0 and "next: nodeweave validate --spec nodeweave.yaml" in last
    assert f"$NODEWEAVE_SPEC names {team / 'nodeweave.yaml'}" in last


# -- A45: the sbatch script submitted from another folder ends at once, before any srun ---------------------------

def test_sbatch_from_another_folder_ends_before_srun(capsys, team, tmp_path_factory):
    import subprocess

    code, _, _ = run_cli(capsys, "render", "slurm")
    assert code == 0
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "srun").write_text("#!/bin/sh\necho srun-ran\n")
    (bin_dir / "srun").chmod(0o755)
    home = tmp_path_factory.mktemp("home")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "NODEWEAVE_RUNTIME": "host"}
    away = subprocess.run(["bash", str(team / "slurm" / "job.sbatch")], env=env, cwd=home, capture_output=True,
                          text=True, timeout=30)
    assert away.returncode == 2 and "srun-ran" not in away.stdout
    assert "train.py is not in the workspace" in away.stderr and "sbatch from there" in away.stderr
    here = subprocess.run(["bash", str(team / "slurm" / "job.sbatch")], env=env, cwd=team, capture_output=True,
                          text=True, timeout=30)
    assert here.returncode == 0 and "srun-ran" in here.stdout


# -- A46: a new root .dockerignore is said when the folder builds an image of its own -----------------------------

def test_render_notes_a_new_dockerignore_beside_the_users_dockerfile(capsys, team):
    code, _, err = run_cli(capsys, "render", "images", "--dry-run")
    assert code == 0 and "every docker/podman build in this folder" not in err
    (team / "Dockerfile").write_text("FROM python:3.11\nCOPY . /app\n")
    code, _, err = run_cli(capsys, "render", "images", "--dry-run")
    assert code == 0 and "would write" in err and "your Dockerfile too" in err
    code, _, err = run_cli(capsys, "render", "images")
    assert code == 0 and f"wrote {team / '.dockerignore'}" in err and "your Dockerfile too" in err
    code, _, err = run_cli(capsys, "render", "images")  # once: written, it is no longer new
    assert code == 0 and "your Dockerfile too" not in err


# -- A47: runs ls --job that matches nothing says so among the runs there; a --job no job can have is refused ------

def _run(team, run_id, job):
    import json

    run = team / "runs" / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": run_id, "job": job, "started": "2026-11-30T01:00:00Z",
                                              "ended": "2026-11-30T01:05:00Z", "exit_code": 0, "nodes": []}))


def test_runs_ls_job_matching_nothing_names_the_jobs_there(capsys, team):
    _run(team, "20261130T010000Z-team", "team")
    _run(team, "20261130T020000Z-other", "other")
    code, _, err = run_cli(capsys, "runs", "ls", "--job", "nosuch")
    assert code == 0 and "no run of job nosuch among the 2 under" in err and "(their jobs: team, other)" in err
    assert "`nodeweave run` makes them" not in err
    for bad in ("TEAM", "team_1"):
        code, _, err = run_cli(capsys, "runs", "ls", "--job", bad)
        assert code == EXIT_USAGE and f"--job {bad!r} is not accepted" in one_line(err)
    code, out, _ = run_cli(capsys, "runs", "ls", "--job", "team", "-o", "json")
    assert code == 0 and '"20261130T010000Z-team"' in out and "other" not in out


# -- A48: env.NODEWEAVE_JOB_TOKEN_FILE replaces up's token on every target: it must be on a mount of the spec -------

def test_a_spec_token_file_no_mount_holds_is_refused_and_a_mounted_one_noted(capsys, team):
    spec = (team / "nodeweave.yaml").read_text()
    (team / "tk.yaml").write_text(spec + "env: {NODEWEAVE_JOB_TOKEN_FILE: /secrets/token}\n")
    for words in (["validate"], ["up", "--dry-run"], ["render", "compose", "--dry-run"]):
        code, _, err = run_cli(capsys, *words, "--spec", "tk.yaml")
        line = one_line(err)
        assert code == EXIT_USAGE and "env.NODEWEAVE_JOB_TOKEN_FILE: '/secrets/token' is on no mount" in line
    (team / "sec").mkdir()
    (team / "tk.yaml").write_text(spec + "env: {NODEWEAVE_JOB_TOKEN_FILE: /secrets/token}\nvolumes:\n"
                                  f"  - {{name: secrets, host_path: {team / 'sec'}, path: /secrets, read_only: true}}\n")
    code, _, err = run_cli(capsys, "validate", "--spec", "tk.yaml")
    assert code == 0 and "in place of the fresh one `nodeweave up` hands out" in err
    code, out, _ = run_cli(capsys, "up", "--spec", "tk.yaml", "--dry-run")  # the local up writes no token of its own
    assert (code == 0 or "is not built here" in out) and "job-token" not in out
    code, _, _ = run_cli(capsys, "render", "slurm")  # the header's advice says whose path it is for
    assert code == 0 and "for this plain-sbatch path" in (team / "slurm" / "job.sbatch").read_text()


# -- A50: --ssh-option is judged by ssh itself, and may not turn off what nodeweave sets ----------------------------

@pytest.mark.parametrize("option, said", [("BatchMode=no", "batch mode"), ("ConnectTimeout=0", "bounded time"),
                                          ("ServerAliveInterval=x", "noticed"),
                                          ("foo=bar", "ssh refuses it (Bad configuration option: foo)"),
                                          ("Port=abc", "ssh refuses it")])
def test_an_ssh_option_ssh_refuses_or_that_undoes_nodeweaves_is_refused(capsys, team, option, said):
    import shutil

    if option in ("foo=bar", "Port=abc") and shutil.which("ssh") is None:
        pytest.skip("ssh -G judges these: no ssh on this machine")
    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, out, err = run_cli(capsys, "exec", "-t", "hosts", "--hosts-file", "hosts.txt", "--remote-dir", "/srv/job",
                             "--ssh-option", option, "--dry-run", "--", "ls")
    assert code == EXIT_USAGE and out == "" and said in one_line(err) and f"--ssh-option {option}" in err


def test_a_longer_timeout_is_taken_and_wins(capsys, team):
    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, out, _ = run_cli(capsys, "exec", "-t", "hosts", "--hosts-file", "hosts.txt", "--remote-dir", "/srv/job",
                           "--ssh-option", "ConnectTimeout=30", "--dry-run", "--", "ls")
    assert code == 0 and "ssh -o ConnectTimeout=30 -o BatchMode=yes" in out


# -- A53: the completion variable in click's documented order is taken, and any other value named in one line ------

@pytest.mark.parametrize("value, first", [("bash_source", "_nodeweave_completion()"), ("zsh_source", "#compdef nodeweave"),
                                          ("fish_source", "complete --command nodeweave"),
                                          ("source_bash", "_nodeweave_completion()")])
def test_completion_source_in_either_order(team, value, first):
    from cli_run import nodeweave

    done = nodeweave(env={**os.environ, "_NODEWEAVE_COMPLETE": value})
    assert done.returncode == 0 and first in done.stdout, done.stderr


def test_an_unknown_completion_instruction_names_what_is_accepted(team):
    from cli_run import nodeweave

    done = nodeweave(env={**os.environ, "_NODEWEAVE_COMPLETE": "source"})
    line = one_line(done.stderr)
    assert done.returncode == EXIT_USAGE and "_NODEWEAVE_COMPLETE='source' is not accepted" in line
    assert "bash_source" in line
