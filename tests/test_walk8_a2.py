"""The eighth walk, part A, rows A11 and later (issue 43): each row's class, one test per class, each failing on
the code before it."""

from __future__ import annotations

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A11, A12: a file an option names (--json-out, --plot, init --out, --write-hostfile, --chart) never lands in
# nodeweave's own state or a run folder ------------------------------------------------------------------------

def _state(team):
    (team / ".nodeweave" / "team").mkdir(parents=True)
    record = team / ".nodeweave" / "team" / "cluster.json"
    record.write_text('{"target": "local", "engine": "podman"}\n')
    run = team / "runs" / "20261130T010000Z-team"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}\n")
    return record, run / "run.json"


@pytest.mark.parametrize("argv", [
    ("bench", "--dry-run", "--json-out", "{record}"),
    ("bench", "--dry-run", "--json-out", ".nodeweave/rendered.json"),
    ("bench", "--dry-run", "--json-out", "{run}"),
    ("bench", "--dry-run", "--plot", ".nodeweave/team/busbw.png"),
    ("init", "--dry-run", "--out", ".nodeweave/x.yaml"),
    ("init", "--dry-run", "--out", "runs/x.yaml"),
    ("init", "--dry-run", "--out", "runs/20261130T010000Z-team/x.yaml"),
    ("hosts", "probe", "--node", "gpu01", "--dry-run", "--write-hostfile", ".nodeweave/hf"),
    ("runs", "compare", "last", "--chart", "{run_dir}/c.png"),
])
def test_an_output_file_never_lands_in_nodeweaves_own_state(capsys, team, argv):
    record, run = _state(team)
    before = record.read_bytes(), run.read_bytes()
    words = [w.format(record=record.relative_to(team), run=run.relative_to(team), run_dir=run.parent.relative_to(team))
             for w in argv]
    code, _, err = run_cli(capsys, *words)
    line = one_line(err)
    assert code == EXIT_USAGE, err
    assert "nodeweave's own state" in line or "run folder" in line or "run folders' store" in line, line
    assert (record.read_bytes(), run.read_bytes()) == before


def test_bench_default_in_runs_is_still_taken(capsys, team):
    _state(team)
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--json-out", "runs/mine.json")
    assert code == 0, err


# -- A13: a refusal's remedy is a whole command that, pasted as read, is not refused in turn ------------------------

def test_logs_since_with_run_names_a_command_that_is_taken(capsys, team):
    import re
    import shlex

    import json

    run = team / "runs" / "20261130T010000Z-team"
    run.mkdir(parents=True)
    (run / "node-0.log").write_text("step 1 loss 0.5\n")
    (run / "run.json").write_text(json.dumps({"job": "team", "run_id": run.name, "command": ["train.py"],
                                              "started": "2026-11-30T01:00:00Z", "seconds": 3, "exit_code": 0,
                                              "nodes": [{"node": 0, "exit_code": 0, "log": "node-0.log"}]}))
    code, _, err = run_cli(capsys, "logs", "--run", "last", "--since", "5m")
    line = one_line(err)
    assert code == EXIT_USAGE, err
    pasted = re.findall(r"`(nodeweave [^`]+)`", line)
    assert pasted, line
    code, _, err = run_cli(capsys, *shlex.split(pasted[-1])[1:])
    assert code != EXIT_USAGE, err  # nothing is up here: exit 3, the real answer, never a refusal of the hint


# -- A14: a make variable given empty is refused, as the CLI refuses an empty value ------------------------------

@pytest.mark.skipif(not __import__("shutil").which("make"), reason="needs make")
@pytest.mark.parametrize("target, given", [("image", "VARIANT="), ("sync", "SPEC="), ("install", "VENV="),
                                           ("cli", "PYTHON="), ("test", "TEST_WORKERS=")])
def test_a_make_variable_given_empty_is_refused(target, given):
    import subprocess

    from cli_run import REPO

    done = subprocess.run(["make", "-n", target, given], cwd=REPO, capture_output=True, text=True, timeout=60)
    name = given.rstrip("=")
    assert done.returncode == 2 and f"{name} is given empty" in done.stderr, done.stderr
    assert "nodeweave image build " not in done.stdout and "/bin/pip" not in done.stdout, done.stdout


# -- A15: a broad re-include that sweeps in nodeweave's state or the job's saves is said, an explicit one is not ---

@pytest.mark.parametrize("how", ["-x", "ignore-file"])
def test_a_broad_reinclude_of_state_is_said_in_the_plan(capsys, team, how):
    _state(team)
    words = ("sync", ".", "/workspace", "--node", "podman:x", "--dry-run")
    if how == "-x":
        words += ("-x", "!*")
    else:
        (team / ".nodeweaveignore").write_text("!*\n")
    code, out, err = run_cli(capsys, *words)
    first = next(line for line in out.splitlines() if line.startswith("# push"))  # the plan's head line
    assert "sent although nodeweave's own state" in first and ".nodeweave/" in first and "runs/" in first, out + err
    (team / ".nodeweaveignore").unlink(missing_ok=True)
    code, out, err = run_cli(capsys, *words[:6], "-x", "!runs/")
    first = next(line for line in out.splitlines() if line.startswith("# push"))  # the plan's head line
    assert "sent although" not in first, first


# -- A16: an empty user before '@' (an unset variable) is refused wherever a host is named ------------------------

@pytest.mark.parametrize("argv", [
    ("up", "-t", "hosts", "--host", "@gpu01", "--host", "gpu02", "--remote-dir", "/srv/j", "--dry-run"),
    ("exec", "-t", "hosts", "--host", "@gpu01", "--remote-dir", "/srv/j", "--dry-run", "--", "ls"),
    ("up", "-t", "hosts", "--hosts-file", "hu.txt", "--remote-dir", "/srv/j", "--dry-run"),
    ("hosts", "probe", "--node", "@gpu01", "--dry-run"),
    ("init", "--host", "@gpu01", "--out", "ih.yaml", "--dry-run"),
    ("sync", ".", "/srv/j", "--node", "ssh+docker:@gpu01/team-node", "--dry-run"),
])
def test_an_empty_user_before_the_host_is_refused(capsys, team, argv):
    (team / "hu.txt").write_text("@gpu01\n@gpu02\n")
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "'@gpu01'" in line and "the user before '@' is not empty" in line, line
    assert "ssh" not in out, out


# -- A17: a sweep's points are counted before one is built; more than --max-points is refused ---------------------

def test_a_sweep_larger_than_meant_is_refused_at_once(capsys, team):
    import time

    values = ",".join(str(n) for n in range(1, 501))
    started = time.monotonic()
    code, out, err = run_cli(capsys, "run", "--dry-run", "--sweep", f"A={values}", "--sweep", f"B={values}")
    line = one_line(err)
    # replay8 N2: the --max-points it offered planned for minutes; past the ceiling none is offered, even if given
    assert code == EXIT_USAGE and "250,000 points" in line and "at most 4,096 points" in line, line
    assert "--max-points 250000" not in line
    assert time.monotonic() - started < 20 and not out
    code, _, err = run_cli(capsys, "run", "--dry-run", "--sweep", f"A={values}", "--sweep", f"B={values}",
                           "--max-points", "250000")
    assert code == EXIT_USAGE and "at most 4,096 points" in one_line(err)
    code, _, err = run_cli(capsys, "bench", "--dry-run", "--sweep", f"A={values}")
    assert code == EXIT_USAGE and "500 points" in one_line(err) and "--max-points 500" in one_line(err)


def test_max_points_lets_a_large_sweep_run_and_does_nothing_alone(capsys, team):
    values = ",".join(str(n) for n in range(1, 51))
    code, out, err = run_cli(capsys, "run", "--dry-run", "--sweep", f"A={values}", "--sweep", f"B={values}",
                             "--max-points", "2500")
    assert code == 0 and "2500 run(s)" in out, err
    code, _, err = run_cli(capsys, "run", "--dry-run", "--max-points", "9")
    assert code == EXIT_USAGE and "does nothing without --sweep" in one_line(err)


# -- A18: a value starting with '=' (a doubled '=') and a one-point sweep are noted -------------------------------

@pytest.mark.parametrize("argv, said", [
    (("run", "--dry-run", "--sweep", "A==1,2"), "A's value '=1' starts with '='"),
    (("run", "--dry-run", "-e", "A==1"), "A's value '=1' starts with '='"),
    (("exec", "--dry-run", "-e", "A==1", "--", "ls"), "A's value '=1' starts with '='"),
    (("run", "--dry-run", "--sweep", "A=1"), "--sweep A=1 is one point"),
])
def test_a_doubled_equals_and_a_one_point_sweep_are_noted(capsys, team, argv, said):
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and said in out + err, out + err


# -- A23: an output option replaces only nodeweave's own earlier output, never a user's file of the same format ---

@pytest.mark.parametrize("argv, target, content", [
    (("bench", "--dry-run", "--json-out", "ds.json"), "ds.json",
     b'{"train_batch_size": 32, "zero_optimization": {"stage": 2}}\n'),
    (("bench", "--dry-run", "--json-out", "package.json"), "package.json", b'{"name": "x"}\n'),
    (("runs", "compare", "a", "b", "--metric", "x", "--chart", "photo.png"), "photo.png",
     b"\x89PNG\r\n\x1a\n" + bytes(64)),
    (("runs", "compare", "a", "b", "--metric", "x", "--chart", "logo.svg"), "logo.svg",
     b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>\n'),
])
def test_an_output_option_never_replaces_a_users_file_of_its_format(capsys, team, argv, target, content):
    (team / target).write_bytes(content)
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and target in line and "never replaces it" in line, line
    assert (team / target).read_bytes() == content


def test_bench_replaces_its_own_earlier_result(capsys, team):
    """With --force (replay11 A27: without it an earlier result is refused, as init's spec and hosts probe's
    hostfile are)."""
    (team / "b.json").write_text('{"schema": "nodeweave.bench/1", "sweep": [], "ranking": [], "runs": []}\n')
    code, _, err = run_cli(capsys, "bench", "--dry-run", "--json-out", "b.json", "--force")
    assert code == 0, err


# -- A27: a nodeweave.yaml that is there but no file (a link to nothing, a link to a folder) is this folder's spec,
# named, never passed over for a parent folder's spec whose job down/stop would end -------------------------------

@pytest.mark.parametrize("verb", [("validate",), ("down", "--dry-run"), ("stop", "--dry-run"), ("up", "--dry-run")])
@pytest.mark.parametrize("leads", ["../../shared-spec.yaml", "folder"])
def test_a_broken_spec_here_is_named_not_skipped_for_the_parents(capsys, team, monkeypatch, verb, leads):
    import os

    child = team / "child"
    child.mkdir()
    if leads == "folder":
        (team / "shared").mkdir()
        leads = str(team / "shared")
    os.symlink(leads, child / "nodeweave.yaml")
    monkeypatch.chdir(child)
    code, out, err = run_cli(capsys, *verb)
    line = one_line(err)
    assert code == EXIT_USAGE and "is a symbolic link to" in line and leads in line, line
    assert "team" not in out, out


# -- A28: a spec under a near name beside you is named when the verb takes a parent folder's spec ------------------

@pytest.mark.parametrize("near", ["nodeweave.yml", "Nodeweave.yaml"])
@pytest.mark.parametrize("verb", [("validate",), ("down", "--dry-run")])
def test_a_near_named_spec_here_is_named_when_the_parents_is_used(capsys, team, monkeypatch, near, verb):
    child = team / "child"
    child.mkdir()
    (child / near).write_text((team / "nodeweave.yaml").read_text().replace("name: team", "name: child"))
    monkeypatch.chdir(child)
    code, out, err = run_cli(capsys, *verb)
    assert code == 0 and f"./{near} is not read" in err and f"--spec {near}" in err, err


# -- A21: up's record that is JSON null or {} is named like any unusable record, never read as "nothing was up" ---

@pytest.mark.parametrize("content", ["null", "{}", " null\n"])
@pytest.mark.parametrize("verb", [("status",), ("down", "--dry-run")])
def test_an_empty_cluster_record_is_named(capsys, team, content, verb):
    (team / ".nodeweave" / "team").mkdir(parents=True)
    (team / ".nodeweave" / "team" / "cluster.json").write_text(content)
    code, out, err = run_cli(capsys, *verb)
    line = one_line(err)
    assert code == EXIT_USAGE and "cluster.json" in line and "records nothing" in line, line
    assert "nothing to take down" not in out


# -- A32: --runs-dir given a run folder itself is named as one, with the two commands meant ------------------------

@pytest.mark.parametrize("argv", [("runs", "ls"), ("runs", "show", "last"), ("run", "--dry-run"),
                                  ("logs", "--run", "last")])
def test_runs_dir_given_a_run_folder_is_named(capsys, team, argv):
    _, run = _state(team)
    code, _, err = run_cli(capsys, *argv, "--runs-dir", str(run.parent.relative_to(team)))
    line = one_line(err)
    assert code == EXIT_USAGE and "is a run folder" in line and "nodeweave runs show" in line, line
    assert "--runs-dir runs" in line


# -- A24: a NODEWEAVE_* variable nodeweave sets inside the containers, left exported here, is named ---------------

@pytest.mark.parametrize("name, value", [("NODEWEAVE_RESUME_FROM", "/old/ckpt_9.pt"), ("NODEWEAVE_RESTART_COUNT", "3"),
                                         ("NODEWEAVE_POD_INDEX", "3")])
def test_a_variable_nodeweave_sets_in_the_containers_is_named(capsys, team, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    code, _, err = run_cli(capsys, "validate")
    assert code == 0 and f"{name}={value} in this environment is read by" in err and "never taken from a shell" in err, err


# -- A29: a bare ~ (the shell's home, YAML's null) in any spec field is named, never read as the default ----------

@pytest.mark.parametrize("extra, field", [("workspace: {host_path: ~}\n", "workspace.host_path"),
                                          ("cache:\n  host_path: ~\n", "cache.host_path"),
                                          ("launcher:\n  script: ~\n", "launcher.script")])
def test_a_bare_tilde_in_the_spec_is_named(capsys, team, extra, field):
    spec = (team / "nodeweave.yaml").read_text()
    if extra.startswith("launcher"):
        spec = spec.replace("  script: train.py\n", "  script: ~\n")
    else:
        spec += extra
    (team / "nodeweave.yaml").write_text(spec)
    code, _, err = run_cli(capsys, "validate")
    assert code == EXIT_USAGE and f"{field}: ~ is YAML's null" in err, err


def test_an_explicit_null_is_still_the_default(capsys, team):
    (team / "nodeweave.yaml").write_text((team / "nodeweave.yaml").read_text() + "workspace: {host_path: null}\n")
    code, _, err = run_cli(capsys, "validate")
    assert code == 0, err


# -- A31: a secret-looking -e with its value written out is noted, and (left9) hidden: shown as *** ----------------

@pytest.mark.parametrize("argv", [("run", "--dry-run", "-e", "WANDB_API_KEY=0123456789abcdef", "--", "train.py"),
                                  ("exec", "--dry-run", "-e", "HF_TOKEN=hf_abcdefghijklmnop", "--", "ls")])
def test_a_secret_looking_env_is_noted(capsys, team, argv):
    code, out, err = run_cli(capsys, *argv)
    name, value = argv[3].split("=")
    assert code == 0 and f"-e {name}=***: the value goes to every node" in out + err, out + err
    assert value not in out + err  # tests/test_left9.py: never written out


def test_a_name_holding_token_as_part_of_a_word_is_not_noted(capsys, team):
    code, out, err = run_cli(capsys, "run", "--dry-run", "-e", "TOKENIZERS_PARALLELISM=false")
    assert code == 0 and "looks like a secret" not in out + err


# -- A26: a folder name of which nothing is kept gives a job name of its own, said in a note ----------------------

@pytest.mark.parametrize("folder", ["ü", "日本語", "__"])
def test_a_folder_name_init_cannot_keep_is_said_and_not_shared(capsys, tmp_path, monkeypatch, folder):
    names = []
    for parent in ("a", "b"):
        here = tmp_path / parent / folder
        here.mkdir(parents=True)
        (here / "train.py").write_text("print(1)\n")
        monkeypatch.chdir(here)
        code, out, err = run_cli(capsys, "init", "--dry-run")
        assert code == 0 and f"the folder's name {folder!r} keeps no letter" in err and "--name" in err, err
        names.append(next(line for line in out.splitlines() if line.startswith("name:")))
        assert "DNS-1035 label" in names[-1]
    assert names[0] != names[1], names  # two such folders never share one job's containers and image tag


# -- A25: a requirements line that pins no one version (1.26.*) or contradicts another line is refused -----------

@pytest.mark.parametrize("lines, said", [("numpy==1.26.*\n", "is not pinned to one version"),
                                         ("numpy==1.26.4\nNumPy==1.25.0\n", "contradicts line 1"),
                                         ("torch-audio==2.0.1\ntorch_audio==2.0.2\n", "contradicts line 1")])
def test_a_requirements_file_pins_one_version_per_package(capsys, team, lines, said):
    spec = (team / "nodeweave.yaml").read_text().replace("  variant: cpu\n", "  variant: cpu\n  requirements: r.txt\n")
    (team / "nodeweave.yaml").write_text(spec)
    (team / "r.txt").write_text(lines)
    code, _, err = run_cli(capsys, "validate")
    line = one_line(err)
    assert code == EXIT_USAGE and said in line and "r.txt:" in line, line


def test_the_same_pin_twice_is_still_taken(capsys, team):
    spec = (team / "nodeweave.yaml").read_text().replace("  variant: cpu\n", "  variant: cpu\n  requirements: r.txt\n")
    (team / "nodeweave.yaml").write_text(spec)
    (team / "r.txt").write_text("numpy==1.26.4\nnumpy==1.26.4\n")
    code, _, err = run_cli(capsys, "validate")
    assert code == 0, err


# -- A19: logs with nothing recorded as up (no Slurm allocation) answers "not up", as status does ----------------

def test_logs_with_no_allocation_answers_not_up(capsys, team):
    import json

    run = team / "runs" / "20261130T020000Z-team"
    run.mkdir(parents=True)
    (run / "node-0.log").write_text("step 1 loss 0.5\n")
    (run / "run.json").write_text(json.dumps({"job": "team", "run_id": run.name, "command": ["train.py"],
                                              "started": "2026-11-30T02:00:00Z", "seconds": 3, "exit_code": 0,
                                              "nodes": [{"node": 0, "exit_code": 0, "log": "node-0.log"}]}))
    status = run_cli(capsys, "status", "-t", "slurm")
    code, out, err = run_cli(capsys, "logs", "-t", "slurm")
    assert code == status[0] == 3, (out, err)
    assert "no Slurm allocation is recorded" in one_line(err) and "step 1" not in out


# -- A20: the compose file up sends to each host names the spec that made it --------------------------------------

def test_the_compose_up_sends_to_hosts_names_its_spec(capsys, team):
    (team / "lan.yaml").write_text((team / "nodeweave.yaml").read_text())
    code, out, err = run_cli(capsys, "up", "--spec", "lan.yaml", "-t", "hosts", "--host", "gpu01", "--host", "gpu02",
                             "--remote-dir", "/srv/j", "--dry-run")
    assert code == 0, err
    assert "cluster spec (lan.yaml)" in out and "render compose --spec lan.yaml" in out, out
    assert "cluster spec (nodeweave.yaml)" not in out


def test_a_home_workspace_on_bare_hosts_is_not_judged_by_this_machines_home(capsys, team):
    spec = (team / "nodeweave.yaml").read_text() + "workspace: {host_path: ~/lan-llm-walk8}\n"
    spec = spec.replace("  script: train.py\n", "  script: train.py\n  mode: run\n")  # up starts the script
    (team / "lan.yaml").write_text(spec)
    code, out, err = run_cli(capsys, "up", "--spec", "lan.yaml", "-t", "hosts", "--host", "gpu01", "--host", "gpu02",
                             "--remote-dir", "/srv/j", "--dry-run")
    assert code == 0, err
    assert "is not in the workspace" not in out + err, out + err


# -- A22: down's dry run on bare hosts names the hosts ssh cannot reach, as status and sync's dry run do ----------

@pytest.mark.skipif(not __import__("shutil").which("ssh"), reason="needs ssh")
def test_down_dry_run_names_hosts_ssh_cannot_reach(capsys, team):
    (team / "hosts.txt").write_text("nw-walk8-a.invalid\nnw-walk8-b.invalid\n")
    code, out, err = run_cli(capsys, "down", "--dry-run", "-t", "hosts", "--hosts-file", "hosts.txt",
                             "--remote-dir", "/srv/j")
    assert code == 0, err
    first = out.splitlines()[0]
    assert "the real down would fail there: ssh cannot reach nw-walk8-a.invalid, nw-walk8-b.invalid" in first, out
