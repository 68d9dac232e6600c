"""walk16a rows fixed by fix18c (one meaning for each record and word): each test fails on the code before its fix."""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import SPEC, fake_engines, made_by_up, make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)




def _holding_rows(monkeypatch):
    """status's rows as two held nodes would answer."""
    from nodeweave.cluster import status

    def gather(backend, nodes, command, say=None):
        return [{"node": n.name, "reached_as": n.remote.label, "platform": "running", "up": True, "error": None,
                 "mode": "hold", "rank": n.index, "role": None, "procs": 1, "plan_hash": "abc", "plan_errors": [],
                 "run": None, "now": None, "gpu": None, "recovery": None, "asked": True} for n in nodes]

    monkeypatch.setattr(status, "gather", gather)


def _held_nodes_ignore_only_the_command(team, before: str, after: str) -> None:
    """The split READ_EACH_RUN states: an edit of its fields changes only each service's `command:` of the compose
    file up starts the nodes from, which a node held for runs never runs."""
    import yaml

    from nodeweave.cluster.backends.local import render_up_compose
    from nodeweave.cluster.identity import JobMark
    from nodeweave.spec import load_spec

    def made(text: str) -> tuple:
        path = team / "other.yaml"
        path.write_text(text)
        document = yaml.safe_load(render_up_compose(load_spec(path), team.resolve(), JobMark.of(team, "team")))
        commands = [service.pop("command") for service in document["services"].values()]
        path.unlink()
        return document, commands

    (then, old), (now, new) = made(before), made(after)
    assert then == now and old != new


ARGS = ("script: train.py", 'script: train.py\n  args: ["--steps", "1"]')
ENV = ("launcher:", 'env: {WALK_X: "hello"}\nlauncher:')


def test_class1_which_spec_a_note_or_a_run_folder_means(capsys, team, monkeypatch, tmp_path):
    """A12/A13: `launcher.args: []` -> `["--steps", "1"]` while the nodes held: run, exec and status said the nodes
    run as up made them and sent the user to recreate every node, while the run took the new args (run reads the
    script and args from the spec each time); the run folder's spec.yaml held the spec up saw, not the one the run
    was started from. The note names only what up bakes into the nodes; spec.yaml is the run's spec, and
    up-spec.yaml beside it is the one the nodes were made from, only where they miss a field of it."""
    from nodeweave.cli.check import job_context
    from nodeweave.cli.habits.clusteropts import open_cluster
    from nodeweave.cluster.options import ClusterOptions
    from nodeweave.cluster.onbackend import spec_changed

    fake_engines(team, monkeypatch, "podman")
    _holding_rows(monkeypatch)
    spec_path = team / "nodeweave.yaml"
    made_by_up(team, SPEC)
    args_only = SPEC.replace(*ARGS)
    spec_path.write_text(args_only)
    for argv in (["status"], ["exec", "--dry-run", "--", "true"], ["run", "--dry-run"]):
        code, out, err = run_cli(capsys, *argv)
        assert "changed since" not in err and "recreating every node" not in err, (argv, out, err)
    _, backend, _ = open_cluster(spec_path, ClusterOptions())
    assert spec_changed(backend) is None
    _held_nodes_ignore_only_the_command(team, SPEC, args_only.replace("train.py", "other.py"))
    context = job_context(backend.spec, spec_path, backend)
    assert context.spec_text == args_only and context.made_from is None

    both = args_only.replace(*ENV)  # a baked field too: said alone, and the run folder keeps both specs, named
    spec_path.write_text(both)
    code, out, err = run_cli(capsys, "status")
    line = one_line(err)
    assert 'env (unset) -> {"WALK_X": "hello"}' in line and "launcher.args" not in line, err
    _, backend, _ = open_cluster(spec_path, ClusterOptions())
    context = job_context(backend.spec, spec_path, backend)
    assert context.spec_text == both and context.made_from == SPEC
    from nodeweave.cluster.runfolder import UP_SPEC, RunFolder

    folder = RunFolder.create(tmp_path / "runs", "team", context.spec_text, made_from=context.made_from)
    assert (folder.path / "spec.yaml").read_text() == both and (folder.path / UP_SPEC).read_text() == SPEC


def _run_folder(team, run_id: str) -> None:
    """A finished run's folder as `nodeweave run` leaves it."""
    import json

    folder = team / "runs" / run_id
    folder.mkdir(parents=True)
    (folder / "spec.yaml").write_text(SPEC)
    (folder / "node-0.log").write_text("step 1/1\n")
    stamp = f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T{run_id[9:11]}:{run_id[11:13]}:{run_id[13:15]}.000Z"
    (folder / "run.json").write_text(json.dumps({
        "schema": "nodeweave.runfolder/1", "run_id": run_id, "job": "team", "command": ["train.py"], "env": {},
        "profile": None, "target": "podman on this machine", "workspace": {}, "started": stamp, "ended": stamp,
        "seconds": 1.0, "exit_code": 0, "summary": "every node exited 0",
        "nodes": [{"node": "node-0", "index": 0, "exit_code": 0, "log": "node-0.log"}]}))


def test_class2_last_run_is_the_newest_by_start_for_every_reader(capsys, team, monkeypatch):
    """A19: after `down`, a file restored in an older run folder made status's hint say "the last run (<older>) is
    kept in runs/: `nodeweave runs show last` shows how it ended", while `runs show last` showed the newer one: the
    hint followed the folders' modification time. "last" is the newest run by start for every reader."""
    import os
    import time

    from nodeweave.errors import EXIT_ENVIRONMENT
    from nodeweave.runs.history import find_run

    fake_engines(team, monkeypatch, "podman")
    older, newer = "20261201T122232Z-team", "20261201T122712Z-team"
    _run_folder(team, older)
    _run_folder(team, newer)
    later = time.time() + 60
    for path in (team / "runs" / older, team / "runs" / older / "node-0.log"):
        os.utime(path, (later, later))  # a note added to the older run
    assert find_run(team / "runs", "last", "team").run_id == newer
    for argv in (["status"], ["logs"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == EXIT_ENVIRONMENT and f"the last run ({newer})" in one_line(err), (argv, out, err)


DIRECT_DEST_LEFT_OUT = [["sync", "--node", "ssh:gpu01", "--dry-run"], ["sync", "--node", "ssh:gpu01", "."],
                        ["sync", "--node", "podman:team-0", "--dry-run"],
                        ["sync", "--compose-project", "team-0123abcd", "--dry-run"]]


@pytest.mark.parametrize("argv", DIRECT_DEST_LEFT_OUT, ids=lambda a: "-".join(w.strip("-.") for w in a[1:]))
def test_class3_a_target_flag_is_never_dropped_for_a_defaulted_positional(capsys, team, monkeypatch, argv):
    """A23: with the local cluster up had made recorded (taken down since), `sync --node ssh:gpu01` with DEST left
    out dropped the flag without a word and answered for the recorded cluster: "nothing to send: target local: the
    nodes mount ..." (exit 0), or "team is not up" (exit 3), while with DEST typed it planned ssh:gpu01. Targets
    named on the command line are the targets whether or not DEST is typed: DEST then the spec's workspace.path, or
    for ssh hosts a refusal naming the DEST missing."""
    from nodeweave.errors import EXIT_USAGE

    fake_engines(team, monkeypatch, "podman")
    made_by_up(team, SPEC)
    code, out, err = run_cli(capsys, *argv)
    said = out + err
    assert "target local" not in said and "team is not up" not in said, (argv, out, err)
    if argv[2].startswith("ssh:"):
        assert code == EXIT_USAGE and "DEST is missing for ssh target(s) ssh:gpu01" in one_line(err), (out, err)
    else:
        # a named container the engine says it lacks ends the dry run with the real sync's exit 1 (one dry-run rule)
        missing = argv[1] == "--node" and "has no container named" in out
        assert code == (1 if missing else 0) and f"{argv[2] if argv[1] == '--node' else 'team'}" in out \
            and "/workspace" in out, (out, err)
