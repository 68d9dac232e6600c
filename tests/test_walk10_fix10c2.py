"""walk10c rows fixed by fix10c2 (issue 43): each test fails on the code before its fix."""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import fake_engines, make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def _record(team, **made):
    """A record of `up` as a real up writes it: what it was told and what it made."""
    folder = team / ".nodeweave" / "team"
    folder.mkdir(parents=True, exist_ok=True)
    told = {"target": made["target"]}
    (folder / "cluster.json").write_text(json.dumps({**told, "made": {"job": "team", **made}}))


@pytest.mark.parametrize("recorded, argv", [("docker", ["--engine", "podman"]), ("podman", ["--engine", "docker"]),
                                            ("docker", [])])
def test_c19_up_on_another_engine_than_the_recorded_one_is_refused(capsys, team, monkeypatch, recorded, argv):
    """C19: `up --engine podman` (or $NODEWEAVE_ENGINE) beside a job the record says is up on docker would write a
    new job token and start a second cluster: refused, exit 3, as up on another target is, dry run or not."""
    from nodeweave.errors import EXIT_ENVIRONMENT

    fake_engines(team, monkeypatch, "podman")
    other = "podman" if recorded == "docker" else "docker"
    if not argv:
        monkeypatch.setenv("NODEWEAVE_ENGINE", other)
    _record(team, target="local", project="team-1234abcd", where=f"{recorded} on this machine",
            engine=recorded, engine_host=None)
    token = team / ".nodeweave" / "team" / "job-token"
    for dry in (["--dry-run"], []):
        code, out, err = run_cli(capsys, "up", "--hold", *argv, *dry)
        line = one_line(err)
        assert code == EXIT_ENVIRONMENT, (out, err)
        assert f"records team up on {recorded}" in line and f"would start it on {other}" in line
        assert f"`nodeweave down --engine {recorded}`" in line
    assert not token.exists()


def test_c19_a_verb_naming_no_engine_follows_the_recorded_one(capsys, team, monkeypatch):
    """C19: with podman the default here, a job up on docker is looked at on docker by a verb that names none."""
    fake_engines(team, monkeypatch, "docker")
    monkeypatch.delenv("NODEWEAVE_ENGINE", raising=False)
    _record(team, target="local", project="team-1234abcd", where="docker on this machine", engine="docker")
    code, out, err = run_cli(capsys, "down", "--dry-run")
    assert "docker" in out + err and "podman-compose" not in out + err


@pytest.mark.parametrize("then, now", [("unix:///run/other/docker.sock", None),
                                       (None, "unix:///run/other/docker.sock")])
def test_c18_a_daemon_up_reached_through_docker_host_is_named_not_another_engine(capsys, team, monkeypatch,
                                                                                   then, now):
    """C18: a job brought up through $DOCKER_HOST, looked at from a shell without it (or the other way round):
    the message names the recorded DOCKER_HOST and how to set it again, never "use --engine podman"."""
    from nodeweave.errors import EXIT_ENVIRONMENT

    fake_engines(team, monkeypatch, "podman")  # docker's daemon does not answer here
    if now:
        monkeypatch.setenv("DOCKER_HOST", now)
    else:
        monkeypatch.delenv("DOCKER_HOST", raising=False)
    _record(team, target="local", project="team-1234abcd", where="docker on this machine", engine="docker",
            engine_host=then)
    code, _, err = run_cli(capsys, "status")
    line = one_line(err)
    assert code == EXIT_ENVIRONMENT, err
    assert "--engine podman" not in line
    assert (f"`export DOCKER_HOST={then}`" if then else "`unset DOCKER_HOST`") in line


def test_c18_up_records_the_engine_and_its_daemon(team, monkeypatch):
    """C18: what up records names the engine and the $DOCKER_HOST it reached the daemon through."""
    from nodeweave.cluster.backends.local import LocalCluster
    from nodeweave.cluster.onbackend import made
    from nodeweave.cluster.options import ClusterOptions
    from nodeweave.spec import load_spec

    monkeypatch.setenv("DOCKER_HOST", "unix:///run/x.sock")
    spec_path = team / "nodeweave.yaml"
    backend = LocalCluster(load_spec(spec_path), spec_path, ClusterOptions(target="local", engine="docker").checked())
    record = made(backend)
    assert record["engine"] == "docker" and record["engine_host"] == "unix:///run/x.sock"


@pytest.mark.parametrize("argv", [["logs", "--timestamps"], ["logs", "-F"], ["status", "-w"], ["status", "--watch"],
                                  ["down", "-v"], ["down", "--volumes"], ["runs", "ls", "-q"], ["runs", "ls", "--quiet"],
                                  ["logs", "--previous"]])
def test_c14_daily_docker_kubectl_tail_spellings_name_nodeweaves_word(capsys, team, argv):
    """C14: another tool's daily spelling refused with nodeweave's word for it (the table othertools reads), exit
    2, as -f FILE and --context already were."""
    from nodeweave.cli.habits.othertools import ELSEWHERE, OPTIONS
    from nodeweave.errors import EXIT_USAGE

    typed = argv[-1]
    assert typed in OPTIONS or (argv[-2], typed) in ELSEWHERE
    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE, err
    said = OPTIONS[typed][0] if typed in OPTIONS else ELSEWHERE[(argv[-2], typed)]
    assert f"no such option: {typed} (" in line and said in line


@pytest.mark.parametrize("argv, meant", [(["logs", "-n", "5"], "--tail 5"), (["exec", "-n", "1", "--", "hostname"],
                                                                             "--node 1"),
                                         (["status", "-n", "2"], "--node 2")])
def test_c13_a_count_given_to_n_names_what_n_is_and_the_option_meant(capsys, team, argv, meant):
    """C13: `logs -n 5` (tail's count) and `exec -n 1` (pdsh's node) on a local job: the refusal says -n is
    --namespace and names the command's own option for the count, exit 2; a namespace-like value keeps the plain
    idle-flag refusal."""
    from nodeweave.errors import EXIT_USAGE

    code, _, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == EXIT_USAGE and "-n is --namespace" in line and f"did you mean {meant}?" in line, err
    code, _, err = run_cli(capsys, "logs", "-n", "ml")
    assert code == EXIT_USAGE and "--namespace does nothing for target local" in one_line(err)


@pytest.mark.parametrize("ups, said", [((True, False), "1 of 2 node(s) down; plans agree among the 1 up"),
                                       ((False, False), "2 of 2 node(s) down"),
                                       ((True, True), "plans agree")])
def test_c24_status_title_counts_the_nodes_down_before_the_plans(tmp_path, ups, said):
    """C24: a node killed: the title said "plans agree" above a node with no plan; it now says how many are down
    first, and whose plans agree."""
    from test_cluster_status import render, row

    rows = [row(f"node-{i}", "abc" if up else None, up=up) for i, up in enumerate(ups)]
    text = " ".join(render(rows, tmp_path).split())
    assert f"; {said} " in text, text


def test_c17_make_cli_installs_what_the_loop_targets_start_nodes_with():
    """C17: `make cli` ("what the loop targets need") installed no podman-compose, so `make up` and the demo's
    local cluster failed after a 2-minute image build: the cli venv takes the [local] extra, which holds it, and
    demo.sh checks for it before building."""
    import re
    import tomllib

    from cli_run import REPO

    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("$(CLI): pyproject.toml", 1)[1].split("\n\n", 1)[0]
    extras = re.search(r"pip install -q -e '?\.\[([a-z,]+)\]'?", recipe)
    assert extras, recipe
    optional = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(dep.startswith("podman-compose") for extra in extras.group(1).split(",") for dep in optional[extra])
    for loop in ("up", "down", "run", "status"):
        target = re.search(rf"^{loop}: ([^#\n]*)", makefile, re.M)
        assert target and "cli" in target.group(1).split(), loop
    demo = (REPO / "examples" / "demo.sh").read_text()
    assert demo.index("podman-compose") < demo.index("image build")


@pytest.mark.parametrize("verb, remedy", [("up", "`nodeweave down` takes it down"),
                                          ("down", "`nodeweave down` again takes the rest down"),
                                          ("sync", "`nodeweave sync` again finishes it")])
def test_c15_c20_a_verb_interrupted_says_where_it_stopped_and_what_works(capsys, tmp_path, verb, remedy):
    """C15, C20: Ctrl-C while up starts the containers (or down removes them) ended with 130 and not one line; the
    one executor now says at which step the verb stopped and what is left, for every phase whose verb says nothing
    of its own (run, check, exec keep their words), and the interruption still ends the verb."""
    from nodeweave.cluster.execute import SAYS_ITS_OWN, Execution, execute
    from nodeweave.plan import CommandsPhase, Plan

    class Interrupted(Execution):
        def run_steps(self, phase):
            raise KeyboardInterrupt

    plan = Plan(verb, "podman on this machine", (CommandsPhase(what="files"), CommandsPhase(what="start 2 nodes")))
    with pytest.raises(KeyboardInterrupt):
        execute(plan, Interrupted(tmp_path, say=lambda line: None))
    line = one_line(capsys.readouterr().err)
    assert f"nodeweave: interrupted: {verb} stopped at step 1 of 2 (files)" in line and remedy in line
    assert "run" in SAYS_ITS_OWN and "exec" in SAYS_ITS_OWN


@pytest.mark.parametrize("state", ["ENDED", "STUCK"])
def test_c21_logs_reads_a_node_that_ended_and_never_sends_to_up_first(state):
    """C21: a killed node (exited (137)) kept its container's log, yet `logs` refused naming `nodeweave up`, which
    would recreate it and lose that log: every node whose process ended or crash-loops is read, with a note; a node
    with no log at all (never made) is left out, named; with no log anywhere the refusal stays (exit 3)."""
    from types import SimpleNamespace

    from nodeweave.cluster.base import NodeState, PlatformState
    from nodeweave.cluster.onbackend import with_logs
    from nodeweave.errors import EnvironmentProblem

    def node(i):
        return SimpleNamespace(index=i, name=f"node-{i}", remote=SimpleNamespace(label=f"podman:team-{i}"))

    nodes = [node(0), node(1), node(2)]
    words = {0: PlatformState(getattr(NodeState, state), "exited (137)"),
             1: PlatformState(NodeState.RUNNING, "running"), 2: PlatformState(NodeState.ABSENT, "missing")}
    backend = SimpleNamespace(states=lambda ns: {n.index: words[n.index] for n in ns}, target="local")
    readable, notes = with_logs(backend, nodes)
    assert [n.name for n in readable] == ["node-0", "node-1"]
    assert "node-0 is not running (exited (137)): its last log follows" in notes[0] and "read it first" in notes[0]
    assert "node-2 has no log (missing)" in notes[1]
    backend = SimpleNamespace(states=lambda ns: {n.index: PlatformState(NodeState.ABSENT, "missing") for n in ns},
                              target="local", spec=SimpleNamespace(name="team"), where="podman", renamed=(),
                              holds=True, made_count=lambda: None)
    with pytest.raises(EnvironmentProblem):
        with_logs(backend, nodes)


@pytest.mark.parametrize("mode, runs, refused", [("run", [], True), ("hold", [], False), ("run", [{"run_id": "r"}],
                                                                                                False)])
def test_c16_stop_on_nodes_running_the_spec_job_says_what_ends_it(monkeypatch, mode, runs, refused):
    """C16: with `up --run` training, `stop` answered "no run" (exit 0) and status "run in progress -": stop is
    refused, exit 3, naming `nodeweave down`; status names the spec's job as what runs."""
    from types import SimpleNamespace

    import nodeweave.cluster.base as base
    from nodeweave.cli.cluster import refuse_run_mode
    from nodeweave.cluster.status import RUN_MODE_JOB, _since
    from nodeweave.errors import EXIT_ENVIRONMENT, NodeweaveError

    answer = SimpleNamespace(up=True, data={"mode": mode, "hold": mode == "hold", "runs": runs})
    monkeypatch.setattr(base, "ask_status", lambda node, command, timeout=60: answer)
    backend = SimpleNamespace(holds=True)
    spec = SimpleNamespace(launcher=SimpleNamespace(script="train.py", args=[]))
    nodes = [SimpleNamespace(name="node-0")]
    if refused:
        with pytest.raises(NodeweaveError) as err:
            refuse_run_mode(backend, spec, nodes, "stop")
        assert err.value.exit_code == EXIT_ENVIRONMENT and "`nodeweave down` ends the job" in str(err.value)
    else:
        refuse_run_mode(backend, spec, nodes, "stop")
    assert (_since(None, None, mode) == RUN_MODE_JOB) is (mode == "run")


def test_c22_the_detach_line_names_what_ends_a_sweep():
    """C22: a detached sweep said "end it: nodeweave stop", which ends only the point running (recorded failed) while
    the sweep starts its next one: the line names `kill PID`, the detached process's Ctrl-C, which ends the sweep."""
    from nodeweave.cli.habits.detach import detached_line

    line = detached_line("20261130T141902Z-team-sweep", 4242)
    assert "kill 4242" in line and "a sweep starts no further point" in line
    # since left11b `nodeweave stop` ends a sweep too (tests/test_left11b.py), and the line names it again
    assert "end it: nodeweave stop" in line
