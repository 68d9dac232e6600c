"""walk15a rows fixed by fix17b (a job is what its own folder started): each test fails on the code before its fix."""

from __future__ import annotations

import json
import os

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import SPEC, fake_engines, made_by_up, make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "bob").mkdir()
    return make_team(tmp_path / "bob", monkeypatch)


def _alice(team):
    """A teammate's folder beside this one, holding a spec of the same job name."""
    alice = team.parent / "alice"
    alice.mkdir(exist_ok=True)
    (alice / "nodeweave.yaml").write_text(SPEC)
    (alice / "train.py").write_text("print('alice')\n")
    return alice


def _engine_answering_marks(team, monkeypatch, marks: "dict[str, dict]"):
    """podman whose `inspect` answers each container of ``marks`` with those labels (the others: no such one)."""
    fake_engines(team, monkeypatch, "podman")
    lines = "\n".join(f"{json.dumps(name)} {json.dumps(labels)}" for name, labels in marks.items())
    (team / "fakebin" / "marks.txt").write_text(lines + "\n")
    (team / "fakebin" / "podman").write_text(f"""#!/bin/sh
case "$*" in
  "version --format {{{{.Server.Version}}}}") echo 4.3.1 ;;
  inspect*) cat {team / 'fakebin' / 'marks.txt'} ;;
  *) exit 0 ;;
esac
""")


# every way of naming a node directly (no cluster of this folder between): sync's and doctor --cluster's
DIRECT = [["sync", "--node", "podman:team-0", "--dry-run"], ["sync", ".", "/workspace", "--node", "podman:team-0"],
          ["sync", "--compose-project", "team-0123abcd", "--dry-run"],
          ["doctor", "--cluster", "--node", "podman:team-0", "--dry-run"],
          ["sync", "--node", "ssh+podman:gpu01/team-0", "--dry-run"]]


@pytest.mark.parametrize("argv", DIRECT, ids=lambda a: "-".join(w.strip("-") for w in a[:3]))
def test_a20_a_node_named_directly_is_judged_by_its_folder_mark(capsys, team, monkeypatch, argv):
    """A20: `sync --node podman:train-0` in bob's folder replaced alice's train.py (her job's container, whose
    /workspace is her folder), where exec, logs, shell and stop refused that address: every verb that reaches a node
    directly reads its mark first, and another folder's is refused, exit 3, naming that folder."""
    from nodeweave.cluster.identity import JobMark
    from nodeweave.errors import EXIT_ENVIRONMENT

    alice = _alice(team)
    labels = JobMark.of(alice, "team").labels()
    _engine_answering_marks(team, monkeypatch, {"team-0": labels})
    (team / "fakebin" / "ssh").write_text('#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift; exec sh -c "$*"\n')
    (team / "fakebin" / "ssh").chmod(0o755)  # the host is this machine: its podman answers over "ssh"
    if "--compose-project" in argv:  # the project's containers, as the engine lists them
        from nodeweave.remote import discover, make_target

        monkeypatch.setattr(discover, "compose_targets", lambda *a, **k: [make_target("podman", "team-0")])
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_ENVIRONMENT, (out, err)
    line = one_line(err)
    assert f"was started by `nodeweave up` in {alice}" in line and "run the verb in" in line, line
    # this folder's own job's container, and one no `up` marked, are reached as before
    from nodeweave.cluster.identity import refuse_foreign_reached
    from nodeweave.remote import parse_target

    _engine_answering_marks(team, monkeypatch, {"team-0": JobMark.of(team, "team").labels(), "mine": {}})
    refuse_foreign_reached([parse_target("podman:team-0"), parse_target("podman:mine")], team / "nodeweave.yaml")


DESTROYING = [["down", "--dry-run"], ["stop", "--dry-run"], ["up", "--hold", "--dry-run"],
              ["sync", "--delete", "--dry-run"]]


@pytest.mark.parametrize("argv", DESTROYING, ids=lambda a: a[0])
def test_a22_a_leftover_spec_variable_is_refused_by_the_verbs_that_end_a_job(capsys, team, monkeypatch, argv):
    """A22: `export NODEWEAVE_SPEC=<alice's spec>` left in a shell, `nodeweave down` typed in bob's folder (its own
    spec beside it) took alice's job down under a note on stderr: a verb that stops, removes or recreates refuses,
    exit 2, naming the variable."""
    from nodeweave.errors import EXIT_USAGE

    alice = _alice(team)
    fake_engines(team, monkeypatch, "podman")
    monkeypatch.setenv("NODEWEAVE_SPEC", str(alice / "nodeweave.yaml"))
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    line = one_line(err)
    assert "$NODEWEAVE_SPEC names" in line and "give --spec" in line and "or unset NODEWEAVE_SPEC" in line, line
    code, out, err = run_cli(capsys, *argv, "--spec", str(alice / "nodeweave.yaml"))  # typed: that job, meant
    assert code != EXIT_USAGE or "$NODEWEAVE_SPEC" not in err, (out, err)


@pytest.mark.parametrize("name", ["team", "other-job"])
def test_a7_render_out_into_another_projects_folder_is_refused_whatever_its_job(capsys, team, monkeypatch, name):
    """A7: in bob's folder, `render compose --out ../alice` replaced alice's render when her spec had bob's job name
    (two teammates' copies of one spec), and was refused only when it named another job: a folder that holds its own
    spec is another project, whatever its name; --force still takes it over."""
    from nodeweave.errors import EXIT_USAGE

    alice = _alice(team)
    (alice / "nodeweave.yaml").write_text(SPEC.replace("name: team", f"name: {name}").replace("nodes: 2", "nodes: 3"))
    monkeypatch.chdir(alice)
    assert run_cli(capsys, "render", "compose")[0] == 0
    before = (alice / "compose" / "local.yaml").read_bytes()
    monkeypatch.chdir(team)
    code, out, err = run_cli(capsys, "render", "compose", "--out", "../alice")
    assert code == EXIT_USAGE, (out, err)
    assert f"{alice} is another project's folder (it holds its own spec, nodeweave.yaml, name: {name})" in \
        one_line(err)
    assert (alice / "compose" / "local.yaml").read_bytes() == before
    assert run_cli(capsys, "render", "compose", "--out", "../alice", "--force")[0] == 0


@pytest.mark.parametrize("dry", [[], ["--dry-run"]])
def test_a16_down_after_a_rename_writes_nothing_for_a_name_nothing_is_up_under(capsys, team, monkeypatch, dry):
    """A16: the spec renamed (`team` -> `team3`) while up, `down` took the old job down and then wrote
    .nodeweave/team3/compose.yaml and ran a compose down for a job that never had a container: the new name's half
    says "nothing to take down" and writes nothing, as a down with nothing up does."""
    from nodeweave.cluster.identity import JobMark

    fake_engines(team, monkeypatch, "podman")
    (team / "fakebin" / "podman").write_text("""#!/bin/sh
case "$*" in
  "version --format {{.Server.Version}}") echo 4.3.1 ;;
  version*|--version*) echo "podman version 4.3.1" ;;
  inspect*) for n in 1 2 3 4; do echo "Error: no such container" >&2; done; exit 125 ;;
  *) exit 0 ;;
esac
""")  # neither name has a container: the old job's half is taken down as recorded, the new one's has none
    mark = JobMark.of(team, "team")
    folder = team / ".nodeweave" / "team"
    folder.mkdir(parents=True)
    made = {"job": "team", "folder": mark.folder, "owner": mark.owner, "spec": "nodeweave.yaml", "target": "local",
            "where": "podman on this machine", "project": mark.project, "engine": "podman", "engine_host": None}
    (folder / "cluster.json").write_text(json.dumps({"target": "local", "engine": "podman", "made": made}))
    (team / "nodeweave.yaml").write_text(SPEC.replace("name: team", "name: team3"))
    code, out, err = run_cli(capsys, "down", *dry)
    said = " ".join((out + err).split())
    assert code == 0, (out, err)
    assert "which nodeweave.yaml no longer names" in said and "nothing to take down" in said, said
    assert not (team / ".nodeweave" / "team3").exists(), said
    assert "team3 is down" not in said




def _answering_rows(monkeypatch, made: int):
    """status's rows as the nodes would answer: the made ones up, holding, one plan; the others never made."""
    from nodeweave.cluster import status

    def gather(backend, nodes, command, say=None):
        return [{"node": n.name, "reached_as": n.remote.label, "platform": "running" if n.index < made else "missing",
                 "up": n.index < made, "error": None, "mode": "hold", "rank": n.index, "role": None, "procs": 1,
                 "plan_hash": "abc", "plan_errors": [], "run": None, "now": None, "gpu": None, "recovery": None,
                 "asked": n.index < made} for n in nodes]

    monkeypatch.setattr(status, "gather", gather)


CHANGES = {"gpus_per_node": ("gpus_per_node: 1", "gpus_per_node: 2", "gpus_per_node 1 -> 2"),
           "env": ("launcher:", 'env: {WALK_X: "hello"}\nlauncher:', 'env (unset) -> {"WALK_X": "hello"}'),
           "image": ("variant: cpu", "variant: cpu\n  tag: v2", 'image.tag (unset) -> "v2"')}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_a17_every_field_the_held_nodes_do_not_see_is_said_as_nodes_is(capsys, team, monkeypatch, field):
    """A17: the spec edited while the nodes held (`gpus_per_node: 1` -> `2`, a new `env`): status said "plans agree",
    run and exec said nothing, the run ran with one process a node and no variable, and its run folder's spec.yaml
    recorded the new spec: every verb that reaches the nodes names the fields changed since up and the verb that
    applies them, and the run folder keeps the spec the nodes were made from."""
    from nodeweave.cli.habits.clusteropts import open_cluster
    from nodeweave.cluster.options import ClusterOptions
    from nodeweave.cluster.onbackend import ran_spec_text, spec_changed

    fake_engines(team, monkeypatch, "podman")
    made_by_up(team, SPEC)
    before, after, said = CHANGES[field]
    (team / "nodeweave.yaml").write_text(SPEC.replace(before, after))
    _answering_rows(monkeypatch, 2)
    code, out, err = run_cli(capsys, "status")
    line = one_line(err)
    assert code == 0 and "changed since `nodeweave up` made team's nodes" in line and said in line, (out, err)
    assert "`nodeweave up --hold` applies it" in line
    code, out, err = run_cli(capsys, "exec", "--dry-run", "--", "true")
    assert said in one_line(err), (out, err)
    _, backend, _ = open_cluster(team / "nodeweave.yaml", ClusterOptions())
    assert said in spec_changed(backend) and ran_spec_text(backend) == SPEC


def test_a18_status_of_a_grown_spec_calls_no_node_down(capsys, team, monkeypatch):
    """A18: `nodes: 2` -> `3` while two nodes held: status said "1 of 3 node(s) down", a row `node-2 down (missing)`,
    exit 1, where run and exec say the spec asks for a node `up` has not made: status says that, as a note, shows
    the nodes up made, and exits 0 (nothing failed)."""
    fake_engines(team, monkeypatch, "podman")
    made_by_up(team, SPEC)
    (team / "nodeweave.yaml").write_text(SPEC.replace("nodes: 2", "nodes: 3"))
    _answering_rows(monkeypatch, 2)
    code, out, err = run_cli(capsys, "status")
    assert code == 0, (out, err)
    assert "node-2" not in out and "down" not in out, out
    assert "now asks for 3 node container(s) and team is up with 2" in one_line(err), err
