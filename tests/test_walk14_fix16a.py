"""walk14a rows A7, A18, A1, A6, A20 (fix16a): each test's docstring opens with the rows it covers."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _nodes(count, argv):
    return [SimpleNamespace(index=i, name=f"node-{i}", remote=SimpleNamespace(label=f"fake:node-{i}"),
                            argv=argv) for i in range(count)]


# The "exec client" each member spawns: a local sh that writes its own process group and session (/proc's fields
# 5 and 6), then waits as a remote command's client does.
RECORD = 'read -r s </proc/$$/stat; set -- ${s##*) }; echo "$3 $4" >"$0.tmp" && mv "$0.tmp" "$0"; exec sleep 30'


def _exec_member(tmp_path, record):
    import threading

    from nodeweave.cluster import logs

    nodes = _nodes(1, lambda command, env: ["sh", "-c", RECORD, str(record)])
    threading.Thread(target=logs.exec_everywhere, args=(nodes, ["sleep", "30"], None), kwargs={"timeout": 6},
                     daemon=True).start()


def _runner_member(runner_class):
    def start(tmp_path, record):
        from rich.console import Console

        from nodeweave.cluster.runner import RunRequest

        folder = SimpleNamespace(log_path=lambda name: tmp_path / f"{name}.log")
        runner = runner_class(_nodes(1, None), RunRequest("r", ["x"]), [["sh", "-c", RECORD, str(record)]], folder,
                              Console(file=open(os.devnull, "w")))
        runner.start()
        return runner
    return start


def _runner():
    from nodeweave.cluster.runner import Runner

    return Runner


def _step_runner():
    from nodeweave.cluster.backends.slurm.step import StepRunner

    return StepRunner


# Every verb that starts a command on the nodes and watches it in the foreground: exec (its clients), run and check
# (the Runner), a Slurm job's run (one srun step).
MEMBERS = {"exec": _exec_member, "run/check": lambda tmp, rec: _runner_member(_runner())(tmp, rec),
           "slurm step": lambda tmp, rec: _runner_member(_step_runner())(tmp, rec)}


@pytest.mark.parametrize("verb", sorted(MEMBERS))
def test_a7_exec_clients_do_not_share_the_terminals_process_group(tmp_path, verb):
    """A7: a terminal's Ctrl-C goes to its whole foreground process group; an exec client (podman exec, kubectl
    exec, ssh, srun) in nodeweave's group died of it while the command it started kept running on the node, and
    exec read that as "2 of 2 node(s) failed: exit 1". Every verb's client runs in a session of its own, so the
    Ctrl-C reaches nodeweave alone, which ends the command on the nodes."""
    record = tmp_path / "ids"
    MEMBERS[verb](tmp_path, record)
    deadline = time.monotonic() + 10
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    group, session = (int(word) for word in record.read_text().split())
    try:
        assert group != os.getpgid(0) and session != os.getsid(0)
    finally:
        os.killpg(group, signal.SIGKILL) if group != os.getpgid(0) else None


# --- A18: down while a run is in progress ----------------------------------------------------------------------
from test_walk10_fix10c1 import _calls, cluster  # noqa: E402,F401  (the fake podman whose nodes hold a run)

BUSY_ARGV = {"run": ["run"], "up": ["up", "--hold"], "check": ["check"], "down": ["down"]}


def _busy_verbs():
    from nodeweave.cluster.onbackend import BUSY_CONSEQUENCE

    return sorted(BUSY_CONSEQUENCE)


@pytest.mark.parametrize("verb", ["down", *[v for v in _busy_verbs() if v != "down"]])
def test_a18_every_verb_that_would_kill_or_refuse_a_run_in_progress_is_refused_and_its_dry_run_says_so(
        capsys, cluster, monkeypatch, tmp_path, verb):
    """A18: `down` with a run in progress removed the nodes (the run SIGKILLed, exit 137, recorded as a failure),
    while `up` in the same state is refused; its dry run said nothing of the run. Every verb of the one rule
    (onbackend.BUSY_CONSEQUENCE: down among them) is refused, exit 3, naming the run and `nodeweave stop`, nothing
    taken down or started; its dry run says the real one would end with exit 3, and ends so."""
    from cli_run import in_process as run_cli, one_line

    assert "down" in _busy_verbs()
    monkeypatch.setenv("FAKE_RUN", "20261130T000000Z-proj")
    code, out, err = run_cli(capsys, *BUSY_ARGV[verb])
    line = one_line(err)
    assert code == 3, out + err
    assert "run 20261130T000000Z-proj is in progress on node-0, node-1" in line and "`nodeweave stop`" in line, line
    assert not any("compose" in " ".join(c) for c in _calls(cluster)), _calls(cluster)
    code, out, err = run_cli(capsys, *BUSY_ARGV[verb], "--dry-run")
    assert code == 3, out + err  # certain from what the dry run read: the real exit (walk17a A8-A10)
    assert f"the real {verb} would end with exit 3: run 20261130T000000Z-proj is in progress" in out + err, out + err


# --- A1: the node paths of the files the run folder keeps -------------------------------------------------------
# The node lines that name the launcher's output after a stop (entrypoint: supervise's stop line, the heartbeat's and
# the stall watch's "its output from here on"), each as a node prints it.
AFTER_STOP_LINES = {
    "stop line": "nodeweave-entrypoint: stopped on SIGTERM: this node's launcher ended (torchrun exited 1 after "
                 "SIGTERM; this node exits 143); the launcher's "
                 "output after the signal (its traceback of it): {path}",
    "heartbeat": "nodeweave-entrypoint: node 0 (job-0) was stopped (SIGTERM): stopping this node's launcher (exit 5); "
                 "its output from here on: {path}",
    "stall watch": "nodeweave-entrypoint: stall: stopping the launcher; its output from here on: {path}",
}


@pytest.mark.parametrize("said", sorted(AFTER_STOP_LINES))
def test_a1_a_nodes_path_of_a_kept_file_is_shown_and_logged_as_the_run_folders_copy(tmp_path, said):
    """A1: `run` interrupted showed each node's `launcher-after-stop-node-N.log` by its path inside the container
    (/tmp/nodeweave/runs/ID/...), which is not on this machine; the record copies the file into the run folder
    here. Shown and logged as that copy's path, by the same rule that copies it (runfolder.KEPT_NAME)."""
    import io
    import re

    from rich.console import Console

    from nodeweave.cluster.runfolder import KEPT_NAME, RunFolder
    from nodeweave.cluster.runner import Runner, RunRequest

    inside = "/tmp/nodeweave/runs/20261201T000000Z-proj/launcher-after-stop-node-1.log"
    assert re.fullmatch(KEPT_NAME, inside.rsplit("/", 1)[1])
    line = AFTER_STOP_LINES[said].format(path=inside)
    folder = RunFolder(tmp_path / "runs" / "20261201T000000Z-proj", "20261201T000000Z-proj")
    folder.path.mkdir(parents=True)
    node = SimpleNamespace(index=1, name="node-1", remote=SimpleNamespace(label="fake:node-1"), group=None)
    shown = io.StringIO()
    runner = Runner([node], RunRequest("20261201T000000Z-proj", ["x"]), [["printf", "%s\\n", line]], folder,
                    Console(file=shown, width=400))
    from nodeweave.cluster import job

    assert "kept_here = folder.path" in __import__("inspect").getsource(job.run_job)  # run's runner is told
    runner.kept_here = folder.path
    runner.start()
    deadline = time.monotonic() + 10
    while runner.runs[0].proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    runner._show(timeout=1)
    runner.runs[0].log.close()
    here = str(folder.path / "launcher-after-stop-node-1.log")
    logged = (folder.path / "node-1.log").read_text()
    assert here in shown.getvalue() and inside not in shown.getvalue(), shown.getvalue()
    assert here in logged and inside not in logged, logged


# --- A6: exec's exit code ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("codes, expected", [
    ([7], 7),  # one node (--node 1): its code, as ssh / docker exec / kubectl exec pass it on
    ([7, 7], 7),  # every node ending alike
    ([1, 1, 1], 1), ([2, 2], 2),  # grep's no-match and error told apart
    ([127], 127),  # a missing command
    ([-9, -9], 137),  # clients killed by a signal: as a shell says it
    ([0, 7], 1), ([3, 4], 1),  # nodes that disagree
])
def test_a6_exec_exits_with_the_commands_own_code_when_every_node_ended_alike(codes, expected):
    """A6: `exec --node 1 -- sh -c 'exit 7'` exited 1 ("1 of 1 node(s) failed: node-1 exit 7"), so a script could not
    tell grep's 1 from its 2, or a missing command's 127, on one node or all. The command's own code where every
    node ended with the same one, 1 where they differ (exec --help says which)."""
    from nodeweave.cli.execute import EXEC_HELP, _report
    from nodeweave.cluster.logs import NodeResult
    from nodeweave.errors import NodeweaveError

    nodes = _nodes(len(codes), None)
    results = [NodeResult(node, code, 0.1) for node, code in zip(nodes, codes)]
    with pytest.raises(NodeweaveError) as raised:
        _report(["sh", "-c", "exit"], results, "text", None)
    assert raised.value.exit_code == expected, str(raised.value)
    assert "own code when every node ended with the same one" in " ".join(EXEC_HELP.split())


# --- A20: two ups (or an up and a down) of one job at once ------------------------------------------------------
HOLDER = """
import sys, time
from pathlib import Path
from nodeweave.jobstate import hold_job
hold_job(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
print("held", flush=True)
time.sleep(60)
"""


def _changes_the_job():
    from nodeweave.jobstate import CHANGES_THE_JOB

    return list(CHANGES_THE_JOB)


@pytest.mark.parametrize("verb", _changes_the_job())
def test_a20_a_second_verb_that_changes_the_job_is_refused_while_one_is_changing_it(
        capsys, cluster, monkeypatch, tmp_path, verb):
    """A20: `nodeweave up --hold` in two terminals of one folder both rewrote the job's token and recreated the
    nodes under each other, without a word. While one `up` or `down` of the job runs (jobstate.CHANGES_THE_JOB),
    another is refused, exit 3, naming the first's verb and pid; nothing is started; once the first ended (its
    lock dies with it) the next goes on."""
    from cli_run import in_process as run_cli, one_line

    assert set(_changes_the_job()) == {"up", "down"}
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), "proj", "up"], stdout=subprocess.PIPE,
                              env=env, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        argv = {"up": ["up", "--hold"], "down": ["down"]}[verb]
        code, out, err = run_cli(capsys, *argv)
        line = one_line(err)
        assert code == 3, out + err
        assert f"`nodeweave up` (pid {holder.pid}" in line and "is changing job proj" in line, line
        assert f"kill {holder.pid}" in line, line
        assert not any("compose" in " ".join(c) for c in _calls(cluster)), _calls(cluster)
        code, out, err = run_cli(capsys, *argv, "--dry-run")  # a dry run changes nothing: up's is not refused;
        # down's is, as the real one (walk18a A14: a down beside an up's lock said "nothing to take down", exit 0)
        assert code == (3 if verb == "down" else 0), out + err
    finally:
        holder.kill()
        holder.wait()
