"""Walk 12, part B, rows B5-B19 of walk12b-report.md given to fix12b1 (issue 43), each fixed as a class:

- every setting's NODEWEAVE_* variable set but empty is refused as its flag's empty value is (B7);
- each recovery brake's verdict names where this node got its value and every way to set it (B19);
- a node waiting a generation out says it runs no launcher; a relayed tail is named as the failed node's (B17);
- a waiting node stopped on purpose says nothing after its exit; node 0 counts it `stopped` (B18);
- one refusal line for every check-in path: a node turned away hears the job goes on (B11);
- a process is an entrypoint of run ID by its program and its own --run-id; "no run" names a live one's
  TMPDIR elsewhere (B6);
- a second start of a live node 0 is named at once, whichever of its ports it meets first (B12);
- every reader of node 0's metrics port named a node 0 still gathering and --status (B13; fix13a serves while it
  gathers, so none says it now);
- a stop of node 0 holding no training slot is relayed as a training node 0's: Ctrl-C ends the job (B5).

Each test fails on the code before its fix.
"""

from __future__ import annotations

import cli_run
import pytest

from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)

TWO_NODES = {"NNODES": "3", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_RECOVERY": "on"}


def _empty_settings():
    """Every setting whose flag's empty value is refused (not a topology row, not a word list): the settings'
    own table."""
    from nodeweave.entrypoint.planning.contract import SETTINGS

    return [row.variable for row in SETTINGS
            if not row.topology and not getattr(row.read, "words", False)]


@pytest.mark.parametrize("variable", _empty_settings())
@pytest.mark.parametrize("value", ["", " "])
def test_b7_a_settings_variable_set_but_empty_is_refused_as_its_flag_is(entrypoint, variable, value):
    """B7: `-e NODEWEAVE_CHECKPOINT_DIR=$CKPT` with CKPT unset planned and started a recovering job whose every
    generation began from step 0, behind one warning; `--checkpoint-dir ''` is refused. Every setting's variable
    set but empty (or blank) is refused so, exit 2 naming it (a word list's empty value stays its "none")."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=dict(TWO_NODES, **{variable: value}))
    line = cli_run.one_line(err)
    assert code == 2 and f"{variable} is set but empty" in line and "unset it for its default" in line, (code, err)


@pytest.mark.parametrize("variable", ["NODEWEAVE_LAUNCHER_OPTIONS", "NODEWEAVE_SETUP", "NODEWEAVE_PROFILE_OPTIONS"])
def test_b7_a_word_lists_empty_variable_stays_its_none(entrypoint, variable):
    """B7: a word list's empty value is its explicit "none", as its flag's is."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], env=dict(TWO_NODES, **{variable: ""}))
    assert code == 0, err


@pytest.mark.parametrize("key, given, stop", [
    ("recovery_max_restarts", None, "restart budget spent"),
    ("recovery_max_restarts", "--recovery-max-restarts", "restart budget spent"),
    ("recovery_max_restarts", "NODEWEAVE_RECOVERY_MAX_RESTARTS", "restart budget spent"),
    ("no_progress_restarts", None, "no checkpoint yet"),
    ("no_progress_restarts", "--no-progress-restarts", "no checkpoint yet"),
    ("no_progress_restarts", "NODEWEAVE_NO_PROGRESS_RESTARTS", "no checkpoint yet"),
])
def test_b19_a_brakes_verdict_names_the_setting_as_this_node_got_it(key, given, stop):
    """B19: the restart budget's end said `(recovery.max_restarts)`, a spec field, to a node started with flags and
    no spec; each brake's verdict names where this node got its value, then every way to set it (the settings'
    own row: flag, variable, the spec's field), as the --explain rows credit theirs."""
    from types import SimpleNamespace

    from nodeweave.entrypoint.planning.contract import BY_KEY
    from nodeweave.entrypoint.planning.settings import parse
    from nodeweave.entrypoint.recovery.decide import after_fault, first
    from nodeweave.entrypoint.recovery.setup import Config

    row = BY_KEY[key]
    argv, env = ["--recovery", "on", "--nnodes", "2"], {}
    if key == "recovery_max_restarts":
        env["NODEWEAVE_NO_PROGRESS_RESTARTS"] = "0"
    if given and given.startswith("--"):
        argv += [given, "2"]
    elif given:
        env[given] = "2"
    settings = parse(argv + ["--", "train.py"], env)
    limits = Config(settings, SimpleNamespace(nnodes_min=2, nnodes_max=2)).limits
    book = first({0, 1, 2}, limits)
    for _ in range(8):
        book = after_fault(book, None, "the job stalled", {0, 1, 2}, None, limits)
        if book.ended:
            break
    source = {None: "default", row.flag: f"flag {row.flag}"}.get(given, given)
    said = f"{source}; set with {row.flag} / {row.variable}, the spec's {row.spec})"
    assert stop in book.ended and said in book.ended, book.ended


# -- B17, B18: a node waiting a generation out (a spare, one left out) runs no launcher, and its own stop is its own -

def _waiting_cluster(recovery=True):
    """Node 0's hub, node 1 training, node 2 waiting the generation out (``sit_out`` in a thread, as a spare or a
    left-out node does): cluster, hub watch, links, launchers, logs, the waiting thread."""
    import threading

    from loopback_hub import Cluster, Launcher

    from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch

    cluster = Cluster(2)
    assert cluster.decide()["decision"] == "start"
    logs = {rank: [] for rank in range(3)}
    hub_watch = HubWatch(cluster.hub, logs[0].append)
    links = {rank: LinkWatch(cluster.channels[rank], logs[rank].append, recovery=recovery) for rank in (1, 2)}
    launchers = {rank: Launcher() for rank in range(2)}
    hub_watch.start(launchers[0].stop)
    links[1].start(launchers[1].stop)
    waiting = threading.Thread(target=links[2].sit_out, daemon=True)
    waiting.start()
    return cluster, hub_watch, links, launchers, logs, waiting


@pytest.mark.parametrize("recovery", [True, False])
def test_b17_a_waiting_node_says_it_runs_no_launcher_and_whose_output_it_relays(recovery):
    """B17: a spare (nothing launched) said "stopping this node's launcher for recovery" and printed node 0's
    traceback under "its last output:", as if its own. A waiting node says it runs no launcher; every node names
    whose last output it relays."""
    import time

    cluster, hub_watch, links, launchers, logs, waiting = _waiting_cluster(recovery)
    try:
        links[1].finish(1, "torchrun exited 1", ["Traceback (most recent call last):", "RuntimeError: boom"])
        deadline = time.monotonic() + 10
        while links[2].failure is None and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting.join(10)
        said = "\n".join(logs[2])
        assert "stopping this node's launcher" not in said and "this node runs no launcher" in said, said
        label = links[2].failure[0]
        assert f"{label}'s last output:" in said and "its last output" not in said, said
        if recovery:
            assert "node 0 decides the next generation" in said, said
        assert any(line == f"{label}'s last output:" for line in logs[0]), logs[0]  # node 0 names it too
    finally:
        cluster.close()


def test_b18_a_waiting_node_stopped_on_purpose_says_nothing_after_its_exit_and_is_counted_stopped():
    """B18: a left-out node stopped by SIGTERM while it waited printed, after its own exit line, "node 0 ...
    failed: its exchange closed without a word" (its own closing of the connection), and node 0's --status counted
    it `failed`. Its own closing says nothing; node 0's --status and /metrics count it `stopped`."""
    import time

    from nodeweave.entrypoint.checkin.summary import nodes_summary
    from nodeweave.entrypoint.metrics.collect import _peer_state

    cluster, hub_watch, links, launchers, logs, waiting = _waiting_cluster()
    try:
        time.sleep(0.3)
        links[2]._say_stopped_waiting(143)  # what sit_out does on SystemExit from the stop signal's handler
        links[2].channel.close()            # ... and the process exits, closing its connection
        time.sleep(1.5)
        assert not any("failed" in line for line in logs[2]), logs[2]
        deadline = time.monotonic() + 5
        peer = next(p for p in cluster.hub.peers if p.fp.get("rank") == 2)
        while peer.done is None and time.monotonic() < deadline:
            time.sleep(0.05)
        status = cluster.hub.status()
        node = next(n for n in status["nodes"] if (n.get("fp") or {}).get("rank") == 2)
        assert node["state"].startswith("stopped: stopped by SIGTERM"), node["state"]
        counts = nodes_summary(status["nodes"], None)["states"]
        assert counts.get("stopped") == 1 and "failed" not in counts, counts
        assert _peer_state(peer) == "stopped"
    finally:
        cluster.close()


# -- B11: a node turned away hears that it, not the job, was refused, on every check-in path --------------------

@pytest.mark.parametrize("recovery", ["off", "on"])
def test_b11_a_node_started_twice_hears_it_alone_was_turned_away(tmp_path, recovery):
    """B11: a second start of node 1 under recovery ended `error: check-in refused the job: duplicate (...) (table
    above; the same on every node)` below a lone "  node" header, while the job went on. Every check-in path
    (plain, recovery's node) ends with the one refusal line, which for a node turned away says the job goes on."""
    from recovery_harness import start_twice

    again, out, first, outs = start_twice(tmp_path, "b11", env={"NODEWEAVE_EXCHANGE_ALLOW": "address",
                                                                 "NODEWEAVE_RECOVERY": recovery})
    lines = out.splitlines()
    assert again.returncode == 3 and [proc.returncode for proc in first] == [0, 0], (out, outs)
    last = lines[-1]
    assert "node 0 turned this node away: duplicate" in last and "the job goes on" in last, out
    assert "refused the job" not in out and "the same on every node" not in out, out
    assert not any(line.rstrip().endswith(": node") or line.strip() == "node" for line in lines), out


# -- B6: a process is an entrypoint of run ID by its program and its own --run-id, not by the words anywhere ------

def _env(tmp):
    import os

    return {"PATH": os.environ["PATH"], "PYTHONPATH": str(cli_run.SRC), "TMPDIR": str(tmp)}


@pytest.mark.parametrize("action", ["report", "stop"])
def test_b6_a_wrapper_given_run_id_is_no_entrypoint_of_that_run(tmp_path, action):
    """B6: `--node report hf1` beside a wrapper script started `./start.sh ... --run-id hf1` (its TMPDIR the
    asker's) answered an all-null report, exit 0, a profile_dir that does not exist; `--node stop --run hf1` would
    have stopped the script. Every action given a run id (the one rule, ``runstate.unrecorded_runs``) now counts
    only an entrypoint's own --run-id: the answer is "no run", exit 1, and the script runs on."""
    import json

    wrapper = tmp_path / "start.sh"
    wrapper.write_text("sleep 60\n")
    proc = cli_run.popen(["/bin/sh", str(wrapper), "hf", "0", "--run-id", "hf1"], env=_env(tmp_path))
    try:
        import time

        time.sleep(0.3)
        args = ["report", "hf1"] if action == "report" else ["stop", "--run", "hf1", "--grace", "1"]
        out = cli_run.run([*cli_run.ENTRYPOINT, "--node", *args], env=_env(tmp_path))
        answer = json.loads(out.stdout)
        assert out.returncode == 1 and answer["error"].startswith("no run 'hf1' on this node"), out.stdout
        assert proc.poll() is None  # the script was not stopped
    finally:
        proc.kill()
        proc.wait()


def test_b6_no_run_names_the_tmpdir_of_a_live_entrypoint_of_that_id(tmp_path):
    """B6: asked from a shell without the run's TMPDIR, the answer names where the live entrypoint keeps it."""
    import json
    import sys
    import time

    other = tmp_path / "elsewhere"
    other.mkdir()
    sleeper = tmp_path / "nodeweave-entrypoint"
    sleeper.write_text("import time; time.sleep(60)\n")
    proc = cli_run.popen([sys.executable, str(sleeper), "--run-id", "hf1", "--", "train.py"], env=_env(other))
    try:
        time.sleep(0.5)
        out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "report", "hf1"], env=_env(tmp_path))
        error = json.loads(out.stdout)["error"]
        assert out.returncode == 1 and f"runs on this machine with TMPDIR={other}" in error, error
    finally:
        proc.kill()
        proc.wait()


# -- B12: a second start of a live node 0 is named at once, whichever of its ports it meets first ------------------

def test_b12_a_second_start_of_a_live_node_0_under_recovery_is_named_at_once(tmp_path):
    """B12: under recovery a second start of node 0 (its TMPDIR the first's, so it finds the recovery record) met
    the taken master port first, said "its own launcher of before may hold it" and waited 60 s before naming the
    second start. The live exchange answers from the first second: the one refusal (``exchange.second_node_0``)
    is said at once, exit 3."""
    import os
    import sys
    import time

    from cli_run import ENTRYPOINT, home_beside, popen
    from free_ports import free_port_pair

    (tmp_path / "sl.py").write_text("import time\nprint('rank up', flush=True)\ntime.sleep(60)\n")
    port = free_port_pair()
    base = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": home_beside(tmp_path),
            "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": "b12",
            "NODEWEAVE_WAIT_TIMEOUT": "60", "NODEWEAVE_MASTER_PORT": str(port), "NODEWEAVE_METRICS": "off",
            "NODEWEAVE_EXCHANGE_ALLOW": "address", "NODEWEAVE_RECOVERY": "on"}

    def node(rank, name):
        (tmp_path / name).mkdir(exist_ok=True)
        return popen([*ENTRYPOINT, "--", "sl.py"], cwd=tmp_path, stdout=-1, stderr=-2,
                     env=dict(base, NODE_RANK=str(rank), TMPDIR=str(tmp_path / name)))

    first = [node(rank, f"t{rank}") for rank in range(2)]
    try:
        import socket

        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not list((tmp_path / "t0").rglob("recovery.json")):
            time.sleep(0.2)
        while time.monotonic() < deadline:  # torchrun's store holds the master port: the launcher is up
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        started = time.monotonic()
        again = node(0, "t0")
        out = again.communicate(timeout=90)[0]
        took = time.monotonic() - started
    finally:
        for proc in first:
            proc.kill()
            proc.communicate(timeout=60)
    assert again.returncode == 3 and "this is a second start of node 0" in out, out
    assert "its own launcher of before" not in out and took < 30, (took, out)


# -- B13: nothing at node 0's metrics port may be a node 0 still gathering: every reader of it says so ------------

def _closed_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("argv", [("nodeweave", "top", "--once"), ("nodeweave", "dashboard", "--port", "0"),
                                  ("entrypoint", "--node", "live")])
def test_b13_nothing_at_the_metrics_port_names_a_node_0_still_gathering(tmp_path, argv):
    """B13: `top` said "nothing listens there ...; is node 0 running" to a node 0 that was running, gathering for
    a node that never came (its /metrics started with the heartbeat, after the check-in); --status named the wait.
    fix12b1 named a node 0 still gathering in every reader's message; fix13a made node 0 serve from its first
    gather on, the check-in in its picture (tests/test_walk13_fix13a.py), so nothing at the port is no gathering
    node 0 any more and no reader (top, dashboard, --node live) says it may be."""
    from cli_run import home_beside

    port = _closed_port()
    if argv[0] == "nodeweave":
        run = cli_run.nodeweave(argv[1], "--url", f"http://127.0.0.1:{port}", *argv[2:], cwd=str(tmp_path),
                                env=dict(cli_run.CLEAN, HOME=home_beside(tmp_path)), timeout=120)
    else:
        run = cli_run.entrypoint(*argv[1:], "--port", str(port), env=dict(cli_run.CLEAN))
    said = run.stdout + run.stderr
    assert run.returncode != 0 and "nothing" in said, said
    assert "still gather" not in said and "end of its check-in" not in said, said


# -- B5: a waiting node 0 (no training slot) stopped on purpose tells the others, as a training node 0 does --------

def test_b5_ctrl_c_on_a_node_0_without_a_training_slot_ends_the_job_on_every_node():
    """B5: under recovery node 0 left out of a generation still runs the hub; Ctrl-C there exited 130 without a
    word to the others, which said "node 0 ... failed: its exchange closed without a word ... killed" and waited
    wait_timeout (600 s) for it. The stop is relayed as a training node 0's is: Ctrl-C ends the job on every
    node (docs/recovery.md), each told it was a stop, not a failure."""
    import signal
    import threading
    import time

    from loopback_hub import Cluster, Launcher

    from nodeweave.entrypoint.checkin.heartbeat import HubWatch, LinkWatch

    cluster = Cluster(2)
    assert cluster.decide()["decision"] == "start"
    logs = {rank: [] for rank in range(3)}
    hub_watch = HubWatch(cluster.hub, logs[0].append, recovery=True, hear_back=True)
    links = {rank: LinkWatch(cluster.channels[rank], logs[rank].append, recovery=True) for rank in (1, 2)}
    launchers = {rank: Launcher() for rank in (1, 2)}
    for rank, link in links.items():
        link.start(launchers[rank].stop)

    def stop(signum, _frame):  # as supervise.stop_waiting: a stop with no launcher running
        raise SystemExit(128 + signal.SIGINT)

    before = signal.signal(signal.SIGUSR1, stop)
    timer = threading.Timer(1.0, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1))
    try:
        timer.start()
        with pytest.raises(SystemExit) as stopped:
            hub_watch.watch_only()
        assert stopped.value.code == 130
        for rank in (1, 2):
            assert launchers[rank].stopped.wait(10), logs[rank]
            deadline = time.monotonic() + 5
            while not links[rank].job_was_ended() and time.monotonic() < deadline:
                time.sleep(0.05)
            said = "\n".join(logs[rank])
            assert links[rank].job_was_ended() and "was stopped (SIGINT, Ctrl-C)" in said, said
            assert "ends the job on every node" in said and "closed without a word" not in said, said
        assert any("no launcher was running" in line and "ends the job on every node" in line for line in logs[0]), logs[0]
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, before)
        cluster.close()
