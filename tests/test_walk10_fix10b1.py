"""Walk 10, part B, rows B1..B9 (issue 43), each fixed as a class:

- a folder's name is normalised as the kernel reads it (``//etc`` is ``/etc``) before any rule judges it: the
  system folders, /proc, /sys, /dev, the per-container folders, on the spec's side and the entrypoint's (B4, B6);
- the checkpoint scan passes over, named, a link this node may not follow, instead of ending in a traceback (B5).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import json
import os

import pytest

from cli_run import in_a_folder_with_train_py
from nodeweave.entrypoint import systemfolders
from nodeweave.errors import UsageError
from nodeweave.spec import parse_spec

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)
TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
RECOVERY = dict(TWO_NODES, NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1")
BASE = "name: j\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"

# every folder the table refuses, spelled with the two leading slashes POSIX's normpath keeps
REFUSED = sorted(systemfolders.SYSTEM) + [folder + "/x" for folder in sorted(systemfolders.FILLED)]


@pytest.mark.parametrize("folder", REFUSED)
def test_two_leading_slashes_are_one_to_every_folder_rule(folder):
    """B4, B6: `//etc` (and `//proc/1`, `//dev/shm/ck`) passed every rule `/etc` is refused by."""
    assert systemfolders.path_problem(folder) is not None
    assert systemfolders.path_problem("/" + folder) == systemfolders.path_problem(folder)


@pytest.mark.parametrize("folder", systemfolders.PER_CONTAINER)
def test_two_leading_slashes_are_one_to_the_per_container_rule(folder):
    """B4: `//tmp/ck`, `//run/ck`, `//var/tmp/ck` got no per-container warning."""
    assert systemfolders.per_container("/" + folder + "/ck") == folder


@pytest.mark.parametrize("folder, said", [("//etc", "/etc is a system folder"), ("//proc/1", "/proc/1 is inside /proc"),
                                          ("//dev/shm/ck", "/dev/shm/ck is inside /dev")])
def test_the_entrypoint_refuses_a_doubled_slash_checkpoint_dir(entrypoint, folder, said):
    """B4, B5: NODEWEAVE_CHECKPOINT_DIR=//etc was taken (exit 0), //proc/1 ended --explain in a traceback."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(RECOVERY, NODEWEAVE_CHECKPOINT_DIR=folder))
    assert code == 2, err
    assert f"NODEWEAVE_CHECKPOINT_DIR: {said}" in err and "Traceback" not in err


@pytest.mark.parametrize("folder, said", [("//etc", "/etc is a system folder"), ("//proc/1", "/proc/1 is inside /proc"),
                                          ("//dev/shm/ck", "/dev/shm/ck is inside /dev")])
def test_the_spec_refuses_a_doubled_slash_checkpoint_dir(folder, said):
    """B6: `checkpoint_dir: "//etc"` was valid, with only a note that it is on no mount of the spec."""
    with pytest.raises(UsageError) as caught:
        parse_spec(BASE + f'recovery: {{enabled: true, spares: 1, checkpoint_dir: "{folder}"}}\n', "s.yaml")
    assert f"recovery.checkpoint_dir: {said}" in str(caught.value)


def test_the_spec_refuses_a_doubled_slash_volume_path():
    """B6: the mounts' paths are judged by the same rule (a volume at //etc would hide the image's /etc)."""
    with pytest.raises(UsageError) as caught:
        parse_spec(BASE + "volumes: [{name: v, path: //etc, host_path: /data}]\n", "s.yaml")
    assert "/etc" in str(caught.value)


def test_the_checkpoint_scan_passes_over_a_link_it_may_not_follow(tmp_path, monkeypatch):
    """B5: a link realpath may not resolve (/proc/1/cwd: Permission denied) ended the scan, and --explain and node 0,
    in a traceback; it is passed over, named, and every other save still judged."""
    from nodeweave.entrypoint.recovery import checkpoints

    (tmp_path / "locked").symlink_to("/somewhere")
    real = os.path.realpath

    def realpath(path, *args, **kwargs):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(checkpoints.os.path, "realpath", realpath)
    result = checkpoints.scan(str(tmp_path))
    assert [(os.path.basename(path), why) for path, why in result.stepless] == [("locked", checkpoints.UNFOLLOWED)]
    assert checkpoints.already_saved(str(tmp_path)) is None


FINDING = {"culprits": [{"rank": 1, "node": 1, "host": "vm", "state": "T", "seq": 11, "inside": False,
                         "since_s": 9.0, "name": "all_reduce", "pid": 7}],
           "waiting": [{"rank": 0}], "for_s": 9.0, "where": "all_reduce #12"}


class _Folder:
    def __init__(self, path):
        self.path, self.node = path, 0


class _Hub:
    recovery = False

    def __init__(self):
        self.said = []

    def broadcast_report(self, lines):
        self.said += lines


@pytest.mark.parametrize("run_id", [None, "20261130T135000Z-walk"], ids=["no-run-id", "run-id"])
def test_the_stall_report_names_where_this_job_keeps_the_dumps(tmp_path, monkeypatch, run_id):
    """B2: a job started without `nodeweave run` was told its whole dumps are `flight/rank-<N>.json in each node's
    run folder`, which it has none of; the report (and `--status --stacks`' lines) name the folder the dumps are in."""
    from nodeweave.entrypoint.stall import watcher

    ranks = tmp_path / "t0" / "nodeweave" / "ranks" / "nodeweave-31800" / "node-0"
    run_dir = str(tmp_path / "t0" / "nodeweave" / "runs" / run_id) if run_id else None
    logged = []
    watch = watcher.StallWatch(_Folder(str(ranks)), 8, 20, logged.append, run_dir=run_dir)
    described = [{"rank": r, "flight": f"entered seq {r}"} for r in range(6)]  # more classes than are shown
    monkeypatch.setattr(watch, "_gather", lambda hub, own: described)
    monkeypatch.setattr(watcher, "group", lambda described: [])  # the stacks are not what is tested here
    hub = _Hub()
    watch._report(hub, [], FINDING)
    text = "\n".join(hub.said)
    assert not [line for line in logged if "failed" in line], logged
    if run_id:
        assert f"flight/rank-<N>.json in each node's $TMPDIR/nodeweave/runs/{run_id}/" in text, text
        assert f"node 0's: {run_dir}/flight" in text
    else:
        assert "rank-<N>.flight.json in each node's $TMPDIR/nodeweave/ranks/nodeweave-31800/node-<i>/" in text, text
        assert f"node 0's: {ranks}" in text and "run folder)" not in text.replace("no run folder", "")
    assert "each rank's dump: flight/rank-<N>.json)" not in text


def test_node_stop_stops_this_nodes_entrypoints_only(tmp_path):
    """B9: two nodes of one run on one machine, each with its own TMPDIR (as `nodeweave run` starts them): node 1's
    `--node stop --run ID` SIGKILLed node 0's entrypoint too, found by its command line alone; only an entrypoint
    whose $TMPDIR/nodeweave is this node's is this node's to stop."""
    import subprocess
    import sys
    import time

    import cli_run

    mine, theirs = tmp_path / "r1", tmp_path / "r0"
    mine.mkdir()
    theirs.mkdir()
    program = tmp_path / "nodeweave-entrypoint"  # a stand-in entrypoint, named as one is (walk12b B6)
    program.write_text("import time; time.sleep(60)\n")
    sleeper = [sys.executable, str(program), "--mode", "run", "--run-id", "20261130T135000Z-w"]
    base = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    own = subprocess.Popen(sleeper, env=dict(base, TMPDIR=str(mine)))
    other = subprocess.Popen(sleeper, env=dict(base, TMPDIR=str(theirs)))
    try:
        time.sleep(0.5)
        out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "stop", "--run", "20261130T135000Z-w", "--grace", "2"],
                          env=cli_run.checkout_env(TMPDIR=str(mine)), cwd=tmp_path, timeout=60)
        report = json.loads(out.stdout)
        assert [r["processes"] for r in report["stopped"]] == [1], report
        assert own.wait(timeout=60) != 0
        assert other.poll() is None, "node 0's entrypoint (another TMPDIR) was stopped by node 1's --node stop"
    finally:
        for proc in (own, other):
            proc.kill()
            proc.wait()


@pytest.fixture
def running_exchange():
    """Node 0's real hub of job 'trainer' with one node checked in, serving on loopback."""
    from loopback_hub import serving_hub

    yield from serving_hub()


@pytest.mark.parametrize("given", [{}, {"NODEWEAVE_MASTER_PORT": "31700"}], ids=["default-port", "other-port"])
def test_a_refused_token_names_where_this_nodes_token_came_from(entrypoint, running_exchange, given):
    """B1: `--status --exchange-port P` of a job on master port P-1 was refused `without this job's token`, never
    saying the token is derived from the job id and the (default) master port; the refusal names both and the
    settings that fix it. `doctor --cluster` and a worker's check-in share the wording (exchange.token_refusal)."""
    env = dict(given, NODEWEAVE_MASTER_ADDR="127.0.0.1", NODEWEAVE_JOB_ID="trainer",
               NODEWEAVE_EXCHANGE_PORT=str(running_exchange.port))
    if not given:  # the job's port is 29500: ask as the job's node 1 would not, with another job secret
        env["NODEWEAVE_JOB_TOKEN"] = "not-the-jobs"
    code, out, err = entrypoint(["--status"], env)
    assert code == 3, err
    assert "without this job's token; this node's token is " in err, err
    source = "NODEWEAVE_JOB_TOKEN" if not given else "derived from job id 'trainer' and master port 31700"
    assert source in err and "--master-port" in err and "NODEWEAVE_JOB_ID" in err


def test_the_doctor_names_the_token_source_of_a_refusal(running_exchange):
    """B1: `nodeweave doctor --cluster` inside a node reads the same refusal, the same way."""
    from nodeweave.doctor.cluster import survey_here

    env = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "1", "NODEWEAVE_MASTER_ADDR": "127.0.0.1",
           "NODEWEAVE_MASTER_PORT": "31700", "NODEWEAVE_JOB_ID": "trainer",
           "NODEWEAVE_EXCHANGE_PORT": str(running_exchange.port), "PATH": os.environ.get("PATH", "")}
    view = survey_here(env)
    text = " ".join(f.message for f in view.findings)
    assert "master port 31700" in text and "--master-port" in text, text


# every verb that reads one run folder by id, prefix, path or last (history.find_run)
RUN_READERS = [["runs", "show"], ["runs", "compare", "last"], ["dashboard", "--run"], ["logs", "--run"]]


@pytest.mark.parametrize("kind", ["node-records", "plain", "runs-folder"])
@pytest.mark.parametrize("reader", RUN_READERS, ids=lambda r: " ".join(r))
def test_a_folder_that_is_no_run_is_answered_about_that_folder(tmp_path, monkeypatch, capsys, reader, kind):
    """B7: `runs show /abs/t0/nodeweave` (node 0's own records of a job started without `nodeweave run`) said
    `no runs under ./runs yet ... so there is no run '/abs/t0/nodeweave'`; the answer is about the folder given."""
    from cli_run import in_process

    folder = tmp_path / "t0" / "nodeweave"
    folder.mkdir(parents=True)
    if kind == "node-records":
        (folder / "jobs" / "j-29500").mkdir(parents=True)  # each job's records in its folder (left11a B8)
        (folder / "jobs" / "j-29500" / "goodput.json").write_text('{"generations": []}\n')
    elif kind == "runs-folder":
        run = folder / "20261130T135000Z-j"
        run.mkdir()
        (run / "run.json").write_text(json.dumps({"run_id": run.name, "job": "j"}) + "\n")
    monkeypatch.chdir(tmp_path)
    argv = [*reader, str(folder)] if reader[-1] != "last" else [*reader[:2], str(folder), "last"]
    code, out, err = in_process(capsys, *argv)
    assert code == 2, (out, err)
    assert "no runs under" not in err and f"{folder} is a" in err, err
    said = {"node-records": "node's own folder ($TMPDIR/nodeweave: the records of jobs/j-29500)",
            "plain": "not a run folder", "runs-folder": "a folder of 1 run(s), not one run"}[kind]
    assert said in err, err


def test_node_0_stopped_under_recovery_says_what_the_others_do(monkeypatch):
    """B3: Ctrl-C on node 0 of a job under recovery said `the others are told to stop (a stop, not a failure)`,
    and the others said `node 0 decides the next generation`, while they waited up to wait_timeout for a node 0
    that would not come back; both lines say that wait, and node 0's how to end the job now. (Since left11a B3 a
    Ctrl-C ends the job on every node, tests/test_left11a.py: the wait is an eviction's SIGTERM's.)"""
    import time

    from loopback_hub import Cluster, Launcher
    from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    logs = {0: [], 1: []}
    hub_watch = HubWatch(cluster.hub, logs[0].append, recovery=True, hub_wait_s=123)
    link = LinkWatch(cluster.channels[1], logs[1].append, recovery=True, hub_wait_s=123)
    launchers = {0: Launcher(), 1: Launcher()}
    hub_watch.start(launchers[0].stop)
    link.start(launchers[1].stop)
    try:
        hub_watch.finish(143, "torchrun exited 1 after SIGTERM", [], stopped="SIGTERM")
        deadline = time.monotonic() + 20
        while not any("stopping this node's launcher" in line for line in logs[1]) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        link.close()
        cluster.close()
    said = " ".join(logs[0])
    assert "stopped on SIGTERM" in said and "the others are told to stop" not in said, said
    assert "the others wait up to 123s (wait_timeout) for node 0 to come back" in said, said
    heard = " ".join(logs[1])
    assert "was stopped" in heard and "waiting up to 123s (wait_timeout) for node 0 to come back" in heard, heard


def test_a_worker_stopped_under_recovery_says_node_0_decides():
    """B3 (the same line on a worker): under recovery a worker's stop is a fault node 0 decides on, never a stop
    of every node."""
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch

    said = []
    LinkWatch(None, said.append, recovery=True)._say_stopped("SIGTERM", 143)
    assert "the others are told to stop" not in said[0] and "node 0 is told, and under recovery decides" in said[0]


@pytest.mark.parametrize("folder, own", [("//dev/shm/x", "/dev/shm"), ("//var/tmp/x", "/var/tmp"), ("//tmp/x", "/tmp"),
                                         ("//run/x", "/run")])
def test_two_leading_slashes_are_one_to_the_machines_own_folders(folder, own):
    """B4 (the hosts' side of the same rule): up's warning and slurm sync's refusal of a folder each machine
    clears (cluster.options.machine_own) read //dev/shm/x as /dev/shm/x."""
    from nodeweave.cluster.options import machine_own

    assert machine_own(folder) == own


@pytest.mark.parametrize("case", ["another-live-job", "ended", "stale", "this-launch", "came-back"])
def test_node_0_warns_of_another_live_jobs_records_in_its_folder(tmp_path, case):
    """B8: two jobs whose node 0s share a TMPDIR write the same goodput.json, heat.json, recovery.json and
    checkin.json, each over the other's (job B's finished record was gone 6 s after it ended); node 0 says so as
    it starts, naming the other job, before its first save."""
    import time

    from nodeweave.entrypoint.metrics import live

    now = time.time()
    kept = {"schema": "nodeweave.goodput/1", "job": "nodeweave", "launched": now - 60, "ended": None,
            "generations": []}
    if case == "ended":
        kept["ended"] = now - 1
    (tmp_path / live.RECORD).write_text(json.dumps(kept))
    if case == "stale":
        os.utime(tmp_path / live.RECORD, (now - 60, now - 60))
    launched = kept["launched"] if case == "this-launch" else now
    said = live.shared_records(str(tmp_path), launched, came_back=case == "came-back")
    if case == "another-live-job":
        assert said and "another job's node 0 is writing its records in" in said and "job 'nodeweave'" in said
        assert all(name in said for name in ("checkin.json", "recovery.json", "goodput.json", "heat.json"))
        assert "TMPDIR of their own" in said
    else:
        assert said is None
