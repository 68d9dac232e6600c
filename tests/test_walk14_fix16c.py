"""walk14a rows fixed by fix16c (issue 43): each test fails on the code before its fix."""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli, one_line
from team_folder import fake_engines, make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


def _record_told_engine(team, engine: str):
    """The record `up --engine ENGINE` writes: the engine it was told, and what it made on it."""
    folder = team / ".nodeweave" / "team"
    folder.mkdir(parents=True, exist_ok=True)
    made = {"job": "team", "target": "local", "project": "team-1234abcd", "where": f"{engine} on this machine",
            "engine": engine, "engine_host": None}
    (folder / "cluster.json").write_text(json.dumps({"target": "local", "engine": engine, "made": made}))


# every verb that reaches a local cluster, with the words that keep it from changing anything
REACHING_VERBS = [["status"], ["exec", "--dry-run", "--", "true"], ["logs", "--tail", "1"], ["down", "--dry-run"],
                  ["up", "--hold", "--dry-run"], ["run", "--dry-run"], ["sync", "--dry-run"], ["top", "--once"]]


@pytest.mark.parametrize("argv", REACHING_VERBS, ids=lambda a: a[0])
def test_a9_a_bad_engine_variable_is_refused_where_up_remembered_an_engine(capsys, team, monkeypatch, argv):
    """A9: NODEWEAVE_ENGINE=bogus was refused where nothing was up, yet passed over silently (exit 0) by every
    verb in a folder whose `up --engine podman` remembered podman: the variable is --engine, refused everywhere."""
    from nodeweave.errors import EXIT_USAGE

    fake_engines(team, monkeypatch, "podman")
    _record_told_engine(team, "podman")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "bogus")
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert "NODEWEAVE_ENGINE 'bogus' is not accepted: podman or docker" in one_line(err)


@pytest.mark.parametrize("dry", [["--dry-run"], []])
def test_a9_up_named_another_engine_by_the_variable_is_refused_against_the_record(capsys, team, monkeypatch, dry):
    """A9: `NODEWEAVE_ENGINE=docker nodeweave up --hold` beside a job `up --engine podman` made said "already up
    ... nothing recreated" on podman, while `up --engine docker` is refused against the record: refused alike."""
    from nodeweave.errors import EXIT_ENVIRONMENT

    fake_engines(team, monkeypatch, "podman")
    _record_told_engine(team, "podman")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "docker")
    code, out, err = run_cli(capsys, "up", "--hold", *dry)
    assert code == EXIT_ENVIRONMENT, (out, err)
    line = one_line(err)
    assert "records team up on podman" in line and "would start it on docker" in line
    assert not (team / ".nodeweave" / "team" / "job-token").exists()


def test_a9_a_verb_told_the_engine_by_the_variable_uses_it_over_the_remembered_one(capsys, team, monkeypatch):
    """A9: `NODEWEAVE_ENGINE=docker nodeweave down --dry-run` beside a job `up --engine podman` made planned
    podman's commands, as if the variable were not set: it is --engine, so docker is what the verb asks, and
    (walk17a A4) docker is not where the record says the job is: refused, naming the variable and the record."""
    fake_engines(team, monkeypatch, "docker")
    _record_told_engine(team, "podman")
    monkeypatch.setenv("NODEWEAVE_ENGINE", "docker")
    code, out, err = run_cli(capsys, "down", "--dry-run")
    assert code == 3 and "podman-compose" not in out, (code, out, err)
    assert "NODEWEAVE_ENGINE=docker in this environment asks for docker" in " ".join(err.split())


class _Console:
    def __init__(self):
        self.lines = []

    def print(self, text, **_):
        self.lines.append(text)


class _Backend:
    def __init__(self, host_port=None):
        from types import SimpleNamespace

        self.spec = SimpleNamespace(metrics=SimpleNamespace(host_port=host_port))

    def metrics_url(self):
        return "http://127.0.0.1:37167/metrics"


@pytest.mark.parametrize("host_port", [None, 9464])
@pytest.mark.parametrize("training", [False, True])
def test_a10_the_metrics_line_says_it_answers_only_while_a_run_is_in_progress(training, host_port):
    """A10: `up --hold` and `status` (both print it: _say_metrics) gave node 0's metrics URL while the nodes held,
    where nothing answers until `nodeweave run` starts a run: holding nodes are told so; training ones are not."""
    from nodeweave.cli.cluster import _say_metrics

    out = _Console()
    _say_metrics(_Backend(host_port), out, training=training)
    (line,) = out.lines
    assert line.startswith("metrics: http://127.0.0.1:37167/metrics")
    assert ("only while a run is in progress" in line and "`nodeweave run` starts one" in line) is (not training)


class _FakeNode:
    """A node whose entrypoint answers --node live (nothing on the metrics port) and --node status (``mode``)."""
    name = "node-0"

    def __init__(self, tmp_path, mode, runs):
        self.live = json.dumps({"schema": "x", "live": None, "error": "nothing answers at "
                                "http://127.0.0.1:9464/status.json ([Errno 111] Connection refused): not node 0, "
                                "no job running, or its metrics off"})
        self.status = json.dumps({"schema": "x", "mode": mode, "runs": runs})
        self.tmp_path = tmp_path

    def entrypoint_argv(self, words):
        text = self.live if words[:2] == ["--node", "live"] else self.status
        path = self.tmp_path / f"answer-{words[1]}.json"
        path.write_text(text)
        return ["cat", str(path)]


def test_a10_top_on_holding_nodes_says_no_run_is_in_progress(tmp_path):
    """A10: `top --once` (and the dashboard, the same ask_live) on nodes that hold said "nothing answers at
    http://127.0.0.1:9464/status.json ...", node 0's own address, while the plain answer was that no run is in
    progress: said so, with `nodeweave run`; a node with a run keeps the node's own words."""
    from nodeweave.cluster.top import ask_live

    live, why = ask_live(_FakeNode(tmp_path, "hold", []))
    assert live is None
    assert why.startswith("node-0: the nodes hold: no run in progress (`nodeweave run` starts one)"), why
    assert "127.0.0.1:9464" not in why
    live, why = ask_live(_FakeNode(tmp_path, "hold", [{"run_id": "r1"}]))
    assert "nothing answers at" in why


def _plan(node_rank, procs, role):
    return {"topology": {"node_rank": {"value": node_rank}, "nproc_per_node": {"value": procs}, "elastic": False},
            "role": role}


@pytest.mark.parametrize("role, first", [
    (None, 2),  # a plan without a role (an older entrypoint)
    ({"kind": "training node", "identity": 1, "rank": 1, "why": "", "generation": None}, 2),  # every plan now
    ({"kind": "training node", "identity": 1, "rank": 0, "why": "", "generation": 3}, None),  # a generation's
])
def test_a5_a_static_runs_plans_number_torchruns_local_ranks(tmp_path, role, first):
    """A5: with `launcher.options: [--tee, "3"]` (torchrun marks [default0]:) `logs --rank 1` still said "no plan of
    this run says which global rank each is": every plan carries a role now (generation null), read as recovery's."""
    from nodeweave.cluster.logs import first_ranks

    (tmp_path / "node-1.plan.json").write_text(json.dumps(_plan(1, 2, role)))
    assert first_ranks(tmp_path).get("node-1") == first


def test_a5_rank_on_logs_no_line_marks_says_the_default_launch_marks_none():
    """A5: `logs --rank 1` on the default torchrun job was told "the launcher marks them: torchrun's [rankN]: ...",
    as if it did: it says nodeweave's torchrun launch marks none and what in the spec makes it mark them."""
    from nodeweave.cluster.logview import LogView

    view = LogView("1", True)
    view.feed("node-0", "step 1 samples/s 101")
    line = view.rank_problem()
    assert "nodeweave's torchrun launch marks none unless the spec's launcher.options has --tee 3" in line, line
    assert "accepted: --node I" in line


@pytest.mark.parametrize("asked", [[0], [1], [2], [0, 2]])
def test_a12_nodes_doctor_did_not_ask_are_not_called_missing_from_a_check_in(asked):
    """A12: `doctor --cluster --node 1` on holding nodes (no check-in runs: each node's --explain is read) reported
    `error cluster-missing: did not check in before the deadline: node 0`, exit 1; nothing waited for a check-in.
    The ranks not read are a warning that names them as not asked, and the verdict still starts."""
    from nodeweave.doctor.cluster import from_fingerprints
    from test_exchange_verdict import fp

    plans = [(f"podman:trainer-{r}", {"fingerprint": fp(r, nnodes="3")}) for r in asked]
    view = from_fingerprints(plans)
    codes = {(f.severity, f.code) for f in view.findings}
    assert ("error", "cluster-missing") not in codes and ("warning", "cluster-not-asked") in codes, codes
    assert view.verdict["decision"] == "start"
    said = next(f for f in view.findings if f.code == "cluster-not-asked").message
    assert all(f"node {r}" in said for r in range(3) if r not in asked), said


class _GrownBackend:
    """A local cluster up with ``made`` node containers, its spec now asking for ``wanted``."""
    holds = True
    compose_file = "compose.yaml"
    where = "podman on this machine"
    renamed = ()

    def __init__(self, made, wanted):
        from pathlib import Path
        from types import SimpleNamespace

        self.made, self.spec_path = made, Path("/p/nodeweave.yaml")
        self.spec = SimpleNamespace(containers=wanted, name="walk", launcher=SimpleNamespace(mode="run"))
        self.state = SimpleNamespace(shown=lambda path: ".nodeweave/walk/compose.yaml")

    def made_count(self):
        return self.made


def _nodes(count):
    from types import SimpleNamespace

    return [SimpleNamespace(index=i, name=f"node-{i}") for i in range(count)]


@pytest.mark.parametrize("verb", ["exec", "logs", "read logs of", "run", "sync", "check", "stop", "shell"])
def test_a14_verbs_on_a_grown_spec_say_the_count_changed_not_not_up(verb):
    """A14: `nodes: 2` -> `3` while two nodes hold: exec and logs said "walk is not up ...: node-2 (missing)" of a
    cluster that is up; the node past the made ones was never made: the count and `nodeweave up --hold` are said."""
    from nodeweave.cluster.onbackend import down_line

    line = down_line(_GrownBackend(2, 3), _nodes(3), verb, down={2: "missing"})
    assert "is not up" not in line and "missing" not in line, line
    assert "nodeweave.yaml now asks for 3 node container(s) and walk is up with 2" in line
    assert "`nodeweave up --hold` applies it" in line
    # a made node that is down is still said as down
    assert "is not up" in down_line(_GrownBackend(2, 3), _nodes(3), verb, down={1: "exited (1)", 2: "missing"})


@pytest.mark.parametrize("made, wanted", [(2, 3), (3, 2)])
def test_a14_status_of_a_changed_count_says_it_and_no_last_output_of_a_never_made_node(made, wanted):
    """A14: status named node-2 of a grown spec "down (missing)" with `logs --container --node 2` to read its last
    output, which never was: status says the spec's count against up's, with no such hint (a shrunk spec too)."""
    from nodeweave.cluster.onbackend import count_changed
    from nodeweave.cluster.status import problems

    backend = _GrownBackend(made, wanted)
    rows = [{"node": f"node-{i}", "up": i < made, "platform": "running" if i < made else "missing", "error": None,
             "plan_errors": [], "plan_hash": "a", "run": None} for i in range(wanted)]
    found = problems(rows, backend.spec, backend.made_count())
    # the count is said as a note, as run and exec say it; nothing failed, so no problem (walk15 A18, fix17b)
    assert f"now asks for {wanted} node container(s) and walk is up with {made}" in count_changed(backend)
    assert not found, found


def _run_folder(tmp_path, gens, note=None):
    folder = tmp_path / "runs" / "20261201T045425Z-walk"
    folder.mkdir(parents=True)
    (folder / "goodput.json").write_text(json.dumps({
        "schema": "nodeweave.goodput/1", "launched": 100.0, "ended": 127.77, "saved": 127.8, "job": "walk",
        "run_id": folder.name, "step_pattern": False, "generations": gens}))
    (folder / "node-0.log").write_text("step 0 samples/s 100\n" + (f"nodeweave-entrypoint: {note}\n" if note else "")
                                       + "step 1 samples/s 101\n")
    return folder


NO_STEPS = [{"generation": 0, "began": 100.5, "ended": 127.77, "fault": None, "first": None, "last": None,
             "node_0_trains": True, "resume_from": None, "resumed_step": None, "stalls": [], "steps": []}]
NOTE = ("metrics: no step line was read: the last that looked like one, 'step 1 samples/s 101', matches no format "
        "nodeweave knows; set metrics.step_pattern (NODEWEAVE_STEP_PATTERN), e.g. 'step (?P<step>\\d+)'")


@pytest.mark.parametrize("note", [NOTE, None])
def test_a4_a_run_with_no_step_line_read_has_an_unknown_goodput_not_zero(tmp_path, note):
    """A4: a run that trained, printing `step N samples/s X` (no format nodeweave reads), showed `goodput: 0.0% of
    27.77 s productive; training 0 s` in runs show and `0.0%` in runs compare: nothing of training was seen, so the
    goodput is unknown, said with node 0's own note on its step lines (or the pattern to set)."""
    from nodeweave.runs.goodput import lines, run_goodput
    from nodeweave.runs.history import RunEntry

    folder = _run_folder(tmp_path, NO_STEPS, note)
    entry = RunEntry(folder, "run")
    accounted = run_goodput(entry)
    assert accounted["productive"] is None and accounted["unknown"].startswith("unknown")
    (line,) = lines(accounted)
    assert "0.0%" not in line and "training 0 s" not in line, line
    assert ("'step 1 samples/s 101', matches no format" in line) if note else ("set metrics.step_pattern" in line)


def test_a4_a_run_whose_steps_were_read_keeps_its_measured_goodput(tmp_path):
    """A4: the unknown goodput is only for a run node 0 saw nothing of training in: steps read keep the share."""
    from nodeweave.runs.goodput import lines, run_goodput
    from nodeweave.runs.history import RunEntry

    gens = [dict(NO_STEPS[0], first=105.0, last=127.0, steps=[[106.0, 0], [107.0, 1], [108.0, 2]])]
    accounted = run_goodput(RunEntry(_run_folder(tmp_path, gens), "run"))
    assert accounted["productive"] and "unknown" not in accounted
    assert lines(accounted)[0].startswith("goodput: ") and "% of" in lines(accounted)[0]


def _podman_tail_log(window):
    """What podman 4.3 prints for `logs [--tail N]` of a container whose last line was written in two pieces
    (a partial entry, then its end): the whole log is right, its --tail splits and glues lines."""
    if "--tail" in window:
        return "  heartbeat on (exit 5)holding: node 0 of 2\n\n"
    return "step 1 samples/s 101\n  heartbeat on (exit 5)\nholding: node 0 of 2\n"


def _tail_kinds():
    from nodeweave.remote import KINDS

    return sorted(kind for kind, cls in KINDS.items() if cls.tail_splits_lines)


@pytest.mark.parametrize("kind", _tail_kinds())
@pytest.mark.parametrize("tail", [1, 2, 3])
def test_a2_logs_tail_n_shows_each_nodes_last_n_whole_lines(tmp_path, kind, tail):
    """A2: `nodeweave logs --tail 1` on podman showed `[node-1] ` (an empty line standing for one) and `--tail 3`
    two lines glued into one: podman's --tail counts partial entries. Where the engine's tail splits lines (the
    remote kinds of KINDS with tail_splits_lines), nodeweave reads the whole log and keeps the last N lines."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from nodeweave.cluster.logs import container_logs

    asked = []

    class _Backend:
        def logs(self, node, follow, window):
            asked.append(window)
            path = tmp_path / f"{node.name}.log"
            path.write_text(_podman_tail_log(window))
            return ["cat", str(path)]

    assert _tail_kinds(), "no remote kind is marked: the table lost podman"
    node = SimpleNamespace(index=0, name="node-0", remote=SimpleNamespace(tail_splits_lines=True, kind=kind))
    out = io.StringIO()
    code = container_logs(_Backend(), [node], False, Console(file=out, width=200), window=("--tail", str(tail)))
    assert code == 0 and asked == [()]
    whole = ["step 1 samples/s 101", "  heartbeat on (exit 5)", "holding: node 0 of 2"]
    assert out.getvalue().splitlines() == [f"[node-0] {line}" for line in whole[-tail:]], out.getvalue()
