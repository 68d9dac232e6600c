"""The seventh walk, part A (issue 43): each row's class, one test per class, each failing on the code before it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import REPO, in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A5: a file nodeweave writes at a path a variable names follows the --out rule -------------------------------

@pytest.mark.parametrize("victim", ["train.py", "nodeweave.yaml", "notes.json"])
def test_plan_record_never_replaces_a_users_file(capsys, team, monkeypatch, victim):
    (team / "notes.json").write_text('{"mine": 1}\n')
    before = (team / victim).read_bytes()
    monkeypatch.setenv("NODEWEAVE_PLAN_RECORD", str(team / victim))
    code, _, err = run_cli(capsys, "sync", ".", "/workspace", "--node", "podman:foo")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "NODEWEAVE_PLAN_RECORD" in line and "never replaces it" in line
    assert (team / victim).read_bytes() == before


def test_plan_record_refuses_a_link_and_replaces_its_own_earlier_record(capsys, team, monkeypatch):
    os.symlink("train.py", team / "plan.json")
    monkeypatch.setenv("NODEWEAVE_PLAN_RECORD", "plan.json")
    code, _, err = run_cli(capsys, "status")
    assert code == EXIT_USAGE and "symbolic link" in one_line(err)
    (team / "plan.json").unlink()
    (team / "plan.json").write_text(json.dumps({"verb": "up", "where": "x", "notes": [], "phases": []}))
    from nodeweave.cli.habits.variables import plan_record_problem

    assert plan_record_problem({"NODEWEAVE_PLAN_RECORD": str(team / "plan.json")}) is None
    assert plan_record_problem({"NODEWEAVE_PLAN_RECORD": str(team / "new.json")}) is None


# -- A2: SRC that is, or lies in, nodeweave's own state is refused (the hold-back rule is relative to SRC) -------

@pytest.mark.parametrize("src", [".nodeweave/team", ".nodeweave", "runs/20261130T010000Z-team"])
def test_sync_refuses_a_source_inside_nodeweaves_state(capsys, team, src):
    (team / ".nodeweave" / "team").mkdir(parents=True)
    (team / ".nodeweave" / "team" / "job-token").write_text("secret\n")
    (team / "runs" / "20261130T010000Z-team").mkdir(parents=True)
    code, out, err = run_cli(capsys, "sync", src, "/workspace/x", "--node", "podman:foo", "--dry-run", "-o", "json")
    assert code == EXIT_USAGE and out == ""
    line = one_line(err)
    assert f"SRC '{src}' is not accepted" in line


def test_sync_refuses_the_state_folder_given_as_dot(capsys, team, monkeypatch):
    (team / ".nodeweave" / "team").mkdir(parents=True)
    (team / ".nodeweave" / "team" / "job-token").write_text("secret\n")
    monkeypatch.chdir(team / ".nodeweave" / "team")
    code, _, err = run_cli(capsys, "sync", ".", "/workspace/x", "--node", "podman:foo", "--dry-run")
    assert code == EXIT_USAGE and "nodeweave's own state" in one_line(err)


# -- A13: a secret-looking env value (or setup assignment) is noted: it is rendered in clear into committed files -

def test_validate_notes_a_literal_secret_in_env_and_setup(capsys, team):
    (team / "sec.yaml").write_text(
        "name: team\nimage: {variant: cpu}\nnodes: 2\n"
        "launcher: {script: train.py, setup: ['export HF_TOKEN=hf_abc; echo hi', 'export PATH=/x:$PATH']}\n"
        "env: {WANDB_API_KEY: 0123456789abcdef, LR: '0.1', DB_PASSWORD: '', TOKENIZERS_PARALLELISM: 'false',\n"
        "      HF_TOKEN_PATH: /run/secrets/hf/token}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "sec.yaml", "-o", "json")
    assert code == 0
    notes = [n for n in json.loads(out)["notes"] if "looks like a secret" in n]
    assert [n.split(" looks")[0] for n in notes] == ["env.WANDB_API_KEY", "launcher.setup line 1 (HF_TOKEN=...)"]
    assert all("written in clear" in n and "0123456789abcdef" not in n for n in notes)


# -- A4: every spec field that names the Kubernetes Service is a DNS-1035 label (starts with a letter) -----------

@pytest.mark.parametrize("spec, field", [
    ("name: 7b-llm\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n", "name"),
    ("name: '123'\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n", "name"),
    ("name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\nkubernetes: {service: 70b-sft}\n",
     "kubernetes.service"),
])
def test_a_service_name_starting_with_a_digit_is_refused(capsys, team, spec, field):
    (team / "sn.yaml").write_text(spec)
    code, _, err = run_cli(capsys, "validate", "--spec", "sn.yaml")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert f" {field}: got " in line and "DNS-1035" in line and "starting with a letter" in line


def test_a_name_with_a_digit_after_its_first_letter_stays_valid(capsys, team):
    (team / "sn.yaml").write_text("name: llm-7b\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n")
    assert run_cli(capsys, "validate", "--spec", "sn.yaml")[0] == 0


# -- A1: every kustomization a user applies by hand says where the pods' script comes from -----------------------

def _kustomizations(spec):
    from nodeweave.targets.jobset import render_files as jobset_files
    from nodeweave.targets.kubernetes import render_files

    files = {**render_files(spec), **jobset_files(spec)}
    return {path: text for path, text in files.items() if path.endswith("kustomization.yaml")}


def test_every_applied_kustomization_says_the_claim_must_hold_the_code(team):
    from nodeweave.spec import load_spec

    found = _kustomizations(load_spec(team / "nodeweave.yaml"))
    assert {"manifests/base/kustomization.yaml", "manifests/job/kustomization.yaml",
            "manifests/overlays/openshift/kustomization.yaml"} <= set(found)
    for path, text in found.items():
        head = " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))
        assert "train.py from /workspace" in head and "nodeweave sync" in head and "image.project" in head, path


def test_a_held_spec_says_sync_then_run_and_a_baked_script_says_nothing(team):
    from nodeweave.spec import load_spec

    (team / "held.yaml").write_text((team / "nodeweave.yaml").read_text().replace(
        "  script: train.py\n", "  script: train.py\n  mode: hold\n"))
    for text in _kustomizations(load_spec(team / "held.yaml")).values():
        assert "The pods hold" in text and "`nodeweave run` starts train.py" in text
    (team / "image.yaml").write_text((team / "nodeweave.yaml").read_text().replace(
        "  script: train.py\n", "  script: /opt/tool/train.py\n"))
    for text in _kustomizations(load_spec(team / "image.yaml")).values():
        assert "The pods" not in text


# -- A3: an engine on PATH that cannot start the nodes (no daemon, no compose tool) is exit 3 before any write ---

FAKE_DOCKER = """#!/bin/sh
case "$*" in
  "version --format {{.Server.Version}}") [ -n "$NO_DAEMON" ] && { echo "Cannot connect to the Docker daemon at \
unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1; }; echo 27.0.3 ;;
  "compose version") echo "docker: unknown command: docker compose" >&2; exit 1 ;;
  inspect*) echo "Error: No such object" >&2; exit 1 ;;
  *) echo "Usage:  docker [OPTIONS] COMMAND [ARG...]" >&2; exit 125 ;;
esac
"""


@pytest.mark.parametrize("no_daemon, said", [("1", "its daemon does not answer"),
                                             ("", "`docker compose` (v2) is missing")])
def test_docker_without_daemon_or_compose_is_exit_3_foretold_and_writes_nothing(capsys, team, monkeypatch,
                                                                                no_daemon, said):
    from nodeweave.errors import EXIT_ENVIRONMENT

    bin_dir = team / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("NO_DAEMON", no_daemon)
    code, out, _ = run_cli(capsys, "down", "--engine", "docker", "--dry-run")
    assert code == 0 and f"the real down would end with exit 3: " in out and said in out
    for verb in ("down", "up"):
        code, _, err = run_cli(capsys, verb, "--engine", "docker")
        assert code == EXIT_ENVIRONMENT and said in one_line(err)
    assert not (team / ".nodeweave").exists()


# -- A6: a target whose files name another target's files says so when --out lacks them ------------------------

def test_openshift_build_alone_names_the_manifests_it_builds_on(capsys, team):
    out = team / "ob"
    code, _, err = run_cli(capsys, "render", "openshift-build", "--out", str(out))
    assert code == 0
    notes = [line for line in err.splitlines() if "builds on" in line]
    assert len(notes) == 1 and "manifests/job/kustomization.yaml" in notes[0]
    assert f"`nodeweave render manifests --out {out}`" in notes[0]
    assert "Builds on ../../manifests/job" in (out / "openshift/job/kustomization.yaml").read_text()
    assert run_cli(capsys, "render", "manifests", "--out", str(out))[0] == 0
    code, _, err = run_cli(capsys, "render", "openshift-build", "--out", str(out))
    assert code == 0 and "builds on" not in err


def test_every_kustomize_resource_outside_a_target_is_declared_in_its_needs():
    """The class: a rendered kustomization naming ../../<another target's folder> lists that folder's
    kustomization.yaml in its target's ``needs``."""
    import posixpath

    import yaml

    from nodeweave.spec import load_spec
    from nodeweave.targets.registry import RENDERERS

    spec = load_spec(REPO / "tests/golden/manifests/specs/full.yaml")  # kubernetes.build: every target renders
    for name, row in RENDERERS.items():
        files = row(spec)
        for path, text in files.items():
            if not path.endswith("kustomization.yaml") or not isinstance(text, str):
                continue
            for resource in yaml.safe_load(text).get("resources", []):
                target = posixpath.normpath(posixpath.join(posixpath.dirname(path), resource))
                wanted = posixpath.join(target, "kustomization.yaml") if not target.endswith(".yaml") else target
                assert wanted in files or wanted in row.needs, (name, path, resource)


# -- A7: the check's plan says the worker's --threshold is a fraction of the percent the flag takes ---------------

@pytest.mark.parametrize("given, percent, fraction", [(None, "25%", "0.25"), ("10", "10%", "0.1")])
def test_check_plan_names_the_workers_threshold_as_a_fraction(capsys, team, given, percent, fraction):
    words = ["check", "--dry-run", "-o", "json"] + (["--threshold", given] if given else [])
    code, out, _ = run_cli(capsys, *words)
    assert code == 0
    (phase,) = json.loads(out)["phases"]
    assert f"threshold {percent}, the worker's --threshold {fraction} as a fraction" in phase["what"]
    assert f"--threshold {fraction} " in " ".join(phase["nodes"][0]["argv"])


# -- A8: one reading of a host in every verb: host:port gets ssh's Port hint, a host named twice is refused ------

@pytest.mark.parametrize("words", [["hosts", "probe", "--node", "gpu01:2222", "--dry-run"],
                                   ["sync", ".", "/workspace", "--node", "gpu01:22", "--dry-run"]])
def test_a_bare_host_port_as_a_target_gets_the_port_hint(capsys, team, words):
    code, _, err = run_cli(capsys, *words)
    line = one_line(err)
    assert code == EXIT_USAGE and "--ssh-option Port=" in line and "ssh:gpu01" in line and "target kind" not in line


@pytest.mark.parametrize("words", [["hosts", "probe", "--node", "GPU01", "--node", "gpu01", "--dry-run"],
                                   ["sync", ".", "/w", "--node", "ssh:GPU01", "--node", "ssh:gpu01.", "--dry-run"]])
def test_one_host_named_twice_in_any_case_is_refused(capsys, team, words):
    code, _, err = run_cli(capsys, *words)
    assert code == EXIT_USAGE and "names the same host" in one_line(err)


# -- A9: every verb that reads run folders reads them beside its own --spec, where `run --spec` wrote them -------

def _run_beside(folder, run_id, job):
    run = folder / "runs" / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": run_id, "job": job, "started": "2026-11-30T01:00:00Z",
                                              "ended": "2026-11-30T01:05:00Z", "exit_code": 0, "nodes": []}))
    (run / "node-0.log").write_text("step 1 loss 0.5 samples/s 12.5\n")


def test_runs_verbs_and_dashboard_read_beside_the_given_spec(capsys, tmp_path, monkeypatch):
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "lan.yaml").write_text("name: lan-llm\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n")
    _run_beside(examples, "20261130T010000Z-lan-llm", "lan-llm")
    _run_beside(examples, "20261130T020000Z-lan-llm", "lan-llm")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    spec = ["--spec", "examples/lan.yaml"]
    code, out, err = run_cli(capsys, "runs", "ls", *spec, "-o", "json")
    assert code == 0 and len(json.loads(out)) == 2, err
    code, out, err = run_cli(capsys, "runs", "show", "last", *spec, "-o", "json")
    assert code == 0 and json.loads(out)["run"] == "20261130T020000Z-lan-llm", err
    code, out, err = run_cli(capsys, "runs", "compare", "20261130T010000Z", "20261130T020000Z", *spec, "-o", "json")
    assert code == 0, err
    from nodeweave.cli.dashboard import _finished_run

    folder = _finished_run("last", None, Path("examples/lan.yaml"))[0]
    assert folder == examples / "runs" / "20261130T020000Z-lan-llm"


# -- A10: an absolute script path of this machine inside the workspace folder is written relative, or noted ------

def test_init_writes_an_absolute_script_inside_this_folder_relative(capsys, tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "init", "--script", str(tmp_path / "train.py"), "--out", "abs.yaml")
    assert code == 0, err
    assert "  script: train.py  #" in (tmp_path / "abs.yaml").read_text()
    assert "this machine's path" in err


def test_validate_and_run_note_a_host_path_as_launcher_script(capsys, team):
    (team / "abs.yaml").write_text(f"name: team\nimage: {{variant: cpu}}\nnodes: 2\n"
                                   f"launcher: {{script: {team / 'train.py'}}}\n")
    code, out, _ = run_cli(capsys, "validate", "--spec", "abs.yaml", "-o", "json")
    notes = [n for n in json.loads(out)["notes"] if "this machine's path" in n]
    assert code == 0 and len(notes) == 1 and "give train.py" in notes[0] and "/workspace/train.py" in notes[0]
    code, out, err = run_cli(capsys, "run", "--dry-run", "--spec", "abs.yaml")
    assert "this machine's path" in out + err


# -- A11: every verb that reads .nodeweave/<job>/ refuses a link on the way before it reads the record ------------

@pytest.mark.parametrize("words", [["status"], ["run", "--dry-run"], ["logs"], ["stop", "--dry-run"],
                                   ["down", "--dry-run"]])
def test_a_linked_job_state_folder_is_refused_by_every_reader(capsys, team, tmp_path_factory, words):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "cluster.json").write_text('{"target": "kubernetes", "namespace": "ml"}')
    (team / ".nodeweave").mkdir()
    os.symlink(elsewhere, team / ".nodeweave" / "team")
    code, _, err = run_cli(capsys, *words)
    line = one_line(err)
    assert code == EXIT_USAGE and ".nodeweave/team is a symbolic link" in line and "kubectl" not in line


# -- A12: sync takes the hosts target's --host, --hosts-file and --remote-dir with -t hosts, as every cluster verb --

@pytest.mark.parametrize("hosts", [["--host", "gpu01", "--host", "gpu02"], ["--hosts-file", "hosts.txt"]])
def test_sync_to_the_hosts_target_takes_the_remedy_its_hint_names(capsys, team, hosts):
    (team / "hosts.txt").write_text("gpu01\ngpu02\n")
    code, out, err = run_cli(capsys, "sync", "--dry-run", "-t", "hosts", *hosts, "--remote-dir", "/srv/job",
                             "-o", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert [n["node"] for n in plan["phases"][0]["nodes"]] == ["ssh:gpu01", "ssh:gpu02"], plan


def test_sync_host_without_the_hosts_target_names_the_way(capsys, team):
    code, _, err = run_cli(capsys, "sync", ".", "/w", "--host", "gpu01", "--dry-run")
    assert code == EXIT_USAGE and "give -t hosts too" in one_line(err)


def test_the_detached_runs_announce_file_never_replaces_an_existing_one(capsys, team, monkeypatch):
    before = (team / "train.py").read_bytes()
    monkeypatch.setenv("NODEWEAVE_RUN_ANNOUNCE", str(team / "train.py"))
    code, _, err = run_cli(capsys, "run", "--dry-run")
    assert code == EXIT_USAGE and "NODEWEAVE_RUN_ANNOUNCE" in one_line(err)
    assert (team / "train.py").read_bytes() == before
