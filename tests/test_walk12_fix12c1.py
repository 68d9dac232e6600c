"""walk12c's rows C7, C13, C12, C1, C18, C15, C14, C16 (issue 43, /work/wt/walk12c-report.md), each fixed as a
class and walked here over the product's own table where one exists. Each test fails on the code before its fix. No
container is started.
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli
from team_folder import make_job_folder


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    return make_job_folder(tmp_path, monkeypatch)


# -- C7: up on nodes already up recreated them without a word ------------------------------------------------------

def _nodes_up(monkeypatch, unchanged: bool):
    import nodeweave.cli.habits.clusteropts as clusteropts
    import nodeweave.cluster.onbackend as onbackend
    from nodeweave.cluster.backends.local import LocalCluster

    monkeypatch.setattr(clusteropts, "first_refusal", lambda backend: None)
    monkeypatch.setattr(onbackend, "up_over", lambda backend: (None, backend.nodes(dry_run=True)))
    monkeypatch.setattr(LocalCluster, "up_unchanged", lambda self, nodes, mode, image: unchanged)


@pytest.mark.parametrize("flags", [[], ["--force-recreate"]])
def test_up_on_nodes_up_as_it_would_start_them_leaves_them_or_says_what_is_lost(capsys, job_folder, monkeypatch,
                                                                              flags):
    """C7: a second `up --hold` on a cluster up with the same plan printed a first up's lines and recreated both
    containers (`compose up -d --force-recreate`) without a word: what `sync` put outside the mounts was gone. Now
    nodes up as this up would start them are left running (compose's habit), said, and --force-recreate recreates
    them, saying what is lost."""
    _nodes_up(monkeypatch, unchanged=True)
    code, out, err = run_cli(capsys, "up", "--hold", "--dry-run", *flags)
    assert code == 0, err
    if flags:
        assert "--force-recreate" in out and "up recreates 2 node(s) up now" in out and "is lost" in out, out
        assert "up -d --force-recreate" in out, out
    else:
        assert "is already up (2 node(s)), as this up would start it" in out, out
        assert "nothing recreated" in out and "up -d" not in out and "job-token" not in out, out


def test_up_that_recreates_nodes_up_says_what_they_lose(capsys, job_folder, monkeypatch):
    """C7: where the plan changed (another mode, image or compose file), up still recreates the nodes, now with a
    warning naming them and what a recreated node loses."""
    _nodes_up(monkeypatch, unchanged=False)
    code, out, err = run_cli(capsys, "up", "--run", "--dry-run")
    assert code == 0, err
    assert "warning: up recreates 2 node(s) up now" in out and "nodeweave sync" in out, out
    assert "up -d --force-recreate" in out, out


@pytest.mark.parametrize("argv", [["--target", "kubernetes"]])
def test_force_recreate_is_refused_where_up_never_leaves_a_node(capsys, job_folder, argv):
    """C7: --force-recreate asks what only the local target tells apart; elsewhere it does nothing: refused, exit 2."""
    code, out, err = run_cli(capsys, "up", "--dry-run", "--force-recreate", *argv)
    assert code == 2, (out, err)
    assert "--force-recreate does nothing for target kubernetes" in err, err


# -- C13: a refusal offered to remove the nodes, killing the run in progress without a word ------------------------

RUN_LINE = "run 20261130T214222Z-proj is in progress on node-0, node-1 since 21:42:24 UTC"


@pytest.mark.parametrize("member", ["moved", "gone", "unmarked"])
def test_a_refusal_that_offers_removing_the_nodes_says_the_run_it_kills(tmp_path, member):
    """C13: in a moved folder every verb said `... or remove them (podman rm -f proj-0 proj-1), then nodeweave up
    here` while sweep point 2 ran there, not saying that it kills the run; read-only `logs` refused though the run
    folders moved with the folder. Every refusal of foreign_owner that offers removing the job's objects (a moved
    folder, a folder gone, objects with no mark) now names the run in progress first, and a moved folder's names
    the verbs that read its runs/ here."""
    from nodeweave.cluster.identity import FoundMark, JobMark, foreign_owner
    from nodeweave.errors import EnvironmentProblem

    here = tmp_path / "moved"
    (here / "runs").mkdir(parents=True)
    mine = JobMark.of(here, "proj")
    if member == "moved":  # the record names the old folder as this one's
        (here / ".nodeweave" / "proj").mkdir(parents=True)
        old = JobMark.of(tmp_path / "old", "proj")
        (here / ".nodeweave" / "proj" / "cluster.json").write_text(
            '{"made": {"owner": "%s"}}' % old.owner)
        found = {"proj-0": FoundMark(old.owner, old.folder, "proj")}
    elif member == "gone":
        found = {"proj-0": FoundMark("0" * 12, str(tmp_path / "elsewhere"), "proj")}
    else:
        found = {"proj-0": None}
    asked = []
    with pytest.raises(EnvironmentProblem) as raised:
        foreign_owner(mine, found, "container", "`podman rm -f {names}`",
                      busy=lambda: asked.append(1) or RUN_LINE)
    said = str(raised.value)
    assert asked and f"once it ended ({RUN_LINE}, and removing them kills it), remove" in said, said
    assert said.index(RUN_LINE) < said.index("podman rm -f"), said
    if member == "moved":
        assert "`nodeweave logs --run last`" in said, said


# -- C14: status's exit-1 line named no next step -------------------------------------------------------------------

def _row(node, up, platform=None, run=None):
    return {"node": node, "up": up, "platform": platform, "error": None, "run": run, "plan_errors": [],
            "plan_hash": "abc" if up else None}


@pytest.mark.parametrize("rows, hint", [
    ([_row("node-0", True), _row("node-1", False, "exited (137)")], "`nodeweave logs --container --node 1` shows its"),
    ([_row("node-0", True, run={"run_id": "r"}), _row("node-1", False, "exited (137)")],
     "`nodeweave stop` the run on the others"),
    ([_row("node-0", True), _row("node-1", False, "exited (1)"), _row("node-2", False, "missing")],
     "`nodeweave logs --container --node 1,2` shows their"),
])
def test_status_says_what_to_do_about_a_node_down(rows, hint):
    """C14: `podman kill` of node-1 made `status` end with `nodeweave: error: down: node-1`, the only verb naming no
    next step; now the line names the node with the platform's word, the log to read first (up recreates it and
    loses it) and what starts it."""
    from nodeweave.cluster.status import problems

    said = "; ".join(problems(rows))
    assert not said.startswith("down: "), said
    assert "(exited (" in said and hint in said and "`nodeweave up" in said and "starts it" in said, said


# -- C16: with nothing up, `logs` said "no logs to show" while runs/ held every run's node logs ---------------------

@pytest.mark.parametrize("verb, command", [(verb, command) for verb, (command, _) in
                                           __import__("nodeweave.cluster.onbackend", fromlist=["READ_HERE"])
                                           .READ_HERE.items()])
def test_a_verb_refused_with_nothing_up_names_the_runs_kept_here(job_folder, verb, command):
    """C16: after `down`, `nodeweave logs --tail 1` said `... no logs to show; \\`nodeweave up\\` starts it` (exit 3)
    though runs/ held the last run's node logs, which `up` would not show either; every verb whose answer runs/
    still gives (onbackend.READ_HERE) now names it in the not-up line, where a run of the job is kept."""
    from nodeweave.cluster.base import Node
    from nodeweave.cluster.onbackend import down_line, no_nodes_line

    class Spec:
        name = "proj"
        launcher = type("L", (), {"mode": "run"})

    class Backend:
        spec, where, spec_dir, renamed, dormant, holds = Spec, "podman on this machine", job_folder, (), None, True
        made_count = staticmethod(lambda: None)  # walk14 A14: the count up made, not known to this stand-in

    node = Node(0, type("R", (), {"name": "proj-0", "label": "podman:proj-0"})())
    assert "runs/" not in down_line(Backend, [node], verb, {0: "missing"})  # no run kept: nothing to name
    run = job_folder / "runs" / "20261130T214222Z-proj"
    run.mkdir(parents=True)
    (run / "node-0.log").write_text("done\n")
    for said in (down_line(Backend, [node], verb, {0: "missing"}), no_nodes_line(Backend, verb)):
        assert f"the last run ({run.name}) is kept in runs/: `nodeweave {command}`" in said, said


# -- C15: Ctrl-C before a plan's first step exited 130 with no word -------------------------------------------------

@pytest.mark.parametrize("module, verb", [("nodeweave.cli.cluster", ["down"]), ("nodeweave.cli.cluster", ["up"]),
                                          ("nodeweave.cli.sync", ["sync", "data", "/tmp/data"]),
                                          ("nodeweave.cli.execute", ["exec", "--", "true"]),
                                          ("nodeweave.cli.cluster", ["stop"])])
def test_ctrl_c_while_a_verb_plans_says_nothing_was_done(capsys, job_folder, monkeypatch, module, verb):
    """C15: `nodeweave down` (and `sync`, `exec`) interrupted by Ctrl-C while it still planned printed nothing and
    exited 130, the containers still up or DEST absent; `run` says what its Ctrl-C did. Now every verb whose plan
    execute runs (cli.BEFORE_FIRST_STEP) says it stopped before its first step and what that leaves (nothing); once
    a step began, the step says its own line, and this one is not added."""
    import importlib

    import nodeweave.cli as cli
    from nodeweave.cluster import execute

    def interrupt(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module(module), "find_spec", interrupt)
    monkeypatch.setattr(execute, "BEGUN", [])
    assert verb[0] in cli.BEFORE_FIRST_STEP
    code, out, err = run_cli(capsys, *verb)
    assert code == 130, (out, err)
    assert (f"nodeweave: interrupted: {verb[0]} stopped while it was still planning, before its first step: "
            f"{cli.BEFORE_FIRST_STEP[verb[0]]}") in err, err
    execute.BEGUN.append(verb[0])  # a step began: its own line is the one said
    code, out, err = run_cli(capsys, *verb)
    assert code == 130 and "still planning" not in err, (out, err)


@pytest.mark.parametrize("verb", sorted(__import__("nodeweave.cli", fromlist=["BEFORE_FIRST_STEP"]).BEFORE_FIRST_STEP))
def test_every_planned_verb_has_an_early_interrupt_line(verb):
    """C15: the line for each verb of the table, and none for a verb whose plan execute does not run."""
    from nodeweave.cli import interrupted_early

    assert interrupted_early(verb.split(), False).startswith(f"interrupted: {verb} stopped while it was still planning")
    assert interrupted_early(verb.split(), True) == ""
    assert interrupted_early(["logs"], False) == ""


# -- C1, C18: a clean run's last line was torchrun's exit-barrier trace ----------------------------------------------

class _Watch:
    """A heartbeat stand-in that records the entrypoint's own lines (``log``) and how the launcher ended."""

    def __init__(self):
        self.logged = []

    def note(self, line):
        self.logged.append(line)

    def launch_with(self, stop, stop_signalled=None):
        pass

    def silent_since_verdict(self):
        return None

    def say_launcher_failed(self, how):
        pass

    def finish(self, code, how, tail, **rest):
        return None


def _supervised(script):
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import json, sys\n"
        "sys.path.insert(0, %r)\n"
        "from test_walk12_fix12c1 import _Watch\n"
        "from nodeweave.entrypoint.running.supervise import run_supervised\n"
        "watch = _Watch()\n"
        "rc = run_supervised('/bin/sh', ['sh', '-c', %r], {'PATH': '/bin:/usr/bin'}, watch=watch)\n"
        "print('RESULT ' + json.dumps([rc, watch.logged]), file=sys.stderr)\n"
    ) % (str(Path(__file__).parent), script)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=150)
    return json.loads(out.stderr.split("RESULT ", 1)[1])


@pytest.mark.parametrize("index", range(len(__import__("nodeweave.entrypoint.running.symptoms", fromlist=["x"])
                                            .CLEAN_END_NOISE)))
@pytest.mark.parametrize("exit_code", [0, 1])
def test_a_launchers_teardown_noise_after_a_clean_end_is_said_for_what_it_is(index, exit_code):
    """C1, C18: 1 clean run in 4 (exit 0 on both nodes) ended node-1's log with torchrun's `Error waiting on exit
    barrier` C++ trace and `DistNetworkError: Failed to recv, got 0 bytes`, which `runs show` gave as its last line
    beside exit 0. Each known teardown message (symptoms.CLEAN_END_NOISE) after a launcher that exited 0 is now
    followed by the entrypoint's line saying what it is, the log's last line; after a failure nothing is added."""
    from nodeweave.entrypoint.running.symptoms import CLEAN_END_NOISE

    pattern, what = CLEAN_END_NOISE[index]
    script = (f"echo '[rank 1/2 node 1] done: ok'; echo 'E1130 api.py:1008] {pattern.pattern}. Elapsed: 0.13' >&2; "
              f"echo 'torch.distributed.DistNetworkError: Failed to recv, got 0 bytes.' >&2; exit {exit_code}")
    rc, logged = _supervised(script)
    assert rc == exit_code
    assert logged == ([what] if exit_code == 0 else []), logged
    if exit_code == 0:
        assert "harmless" in what and "exited 0" in what


# -- C12: the published metrics port moved with every up, and nothing said where ------------------------------------

@pytest.mark.parametrize("extra, published", [("", "127.0.0.1::9464"),
                                              ("metrics:\n  host_port: 19464\n", "127.0.0.1:19464:9464")])
def test_the_local_nodes_metrics_port_can_be_pinned(job_folder, extra, published):
    """C12: a Prometheus static_configs target (`podman port proj-0 9464`) broke at the next up, which published
    node 0's /metrics on another engine-picked port; metrics.host_port now fixes it (compose/local.yaml)."""
    from nodeweave.spec import load_spec
    from nodeweave.targets.compose.local import metrics_port
    from nodeweave.resolve import resolve

    spec_file = job_folder / "nodeweave.yaml"
    spec_file.write_text(spec_file.read_text() + extra)
    spec = load_spec(spec_file)
    assert metrics_port(resolve(spec, spec.image.variant)) == [published]


def test_a_pinned_metrics_port_with_metrics_off_is_refused(capsys, job_folder):
    """C12: metrics.host_port with metrics.enabled false would publish nothing: refused naming the field."""
    spec_file = job_folder / "nodeweave.yaml"
    spec_file.write_text(spec_file.read_text() + "metrics:\n  enabled: false\n  host_port: 19464\n")
    code, out, err = run_cli(capsys, "validate")
    assert code == 2 and "metrics.host_port: 19464 does nothing with metrics.enabled false" in err, (out, err)


@pytest.mark.parametrize("answer, url", [("127.0.0.1:36291\n", "http://127.0.0.1:36291/metrics"),
                                         ("0.0.0.0:36291\n", "http://127.0.0.1:36291/metrics"), ("", None)])
def test_up_and_status_say_where_node_0s_metrics_is_published(capsys, job_folder, monkeypatch, answer, url):
    """C12: nothing in up's output (nor status') said the new published port; both now print `metrics: URL`, read
    from `<engine> port <job>-0 <metrics.port>`."""
    import subprocess

    from nodeweave.cli.cluster import _say_metrics
    from nodeweave.cli.habits.clusteropts import console
    from nodeweave.cluster.backends.local import LocalCluster
    from nodeweave.cluster.options import ClusterOptions
    from nodeweave.spec import load_spec

    spec = load_spec(job_folder / "nodeweave.yaml")
    backend = LocalCluster(spec, job_folder / "nodeweave.yaml", ClusterOptions(engine="podman"))
    asked = []
    monkeypatch.setattr(subprocess, "run", lambda argv, **k: asked.append(argv) or subprocess.CompletedProcess(
        argv, 0 if answer else 125, answer, ""))
    assert backend.metrics_url() == url
    assert asked[-1][1:] == ["port", f"{spec.name}-0", str(spec.metrics.port)]
    _say_metrics(backend, console(stderr=True), training=True)
    err = capsys.readouterr().err
    assert (f"metrics: {url} (node 0's, on a port the engine picked" in err) if url else err == "", err
