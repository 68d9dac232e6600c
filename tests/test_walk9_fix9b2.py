"""Walk 9, part B, rows B12..B23 (issue 43), each fixed as a class:

- every port the entrypoint reads is refused in one line naming 1..65535 and a port as the example, at both ends
  of the range (B16);
- a script for another interpreter (a `#!` naming a shell or another program, and no Python) is refused by what
  it holds, whatever its name: `shell.py` as `shell.sh` (B18);
- a start beside a live recorded run of another id is refused (B17 judged: the same id is another node of the run);
- a run id the node never had, to any `--node` action that takes one, is an error naming it and the node's runs (B15);
- every setting the check-in exchange alone reads (its bind address and the straggler fault among them) is refused
  with the exchange off, by the one table `shared_rules.SWITCHED`; compose renders none with it off (B19);
- node 0's metrics listeners listen where its exchange does (`NODEWEAVE_EXCHANGE_BIND=route`), and on loopback (B20);
- the step rate is measured up to now, so it comes down to 0 when the step lines stop (B22);
- every verb that reads node 0 by `--url` names it where no spec is found (B13);
- a stop signal after the launcher ended (a node waiting for node 0's next generation) ends the node, 128+N (B23);
- `--explain` names every start refusal of this machine by the start's own check, the checkpoint folder's live claim too (B14).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import pytest

from nodeweave.entrypoint.nodeinfo import OPTIONS as NODE_OPTIONS
from nodeweave.entrypoint.planning.contract import SETTINGS, read_port
from cli_run import in_a_folder_with_train_py

TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)

# every port variable: the settings read as ports, and the master port (read by the topology, from its row)
PORT_VARIABLES = sorted({s.variable for s in SETTINGS if s.read is read_port}
                        | {s.variable for s in SETTINGS if s.key == "master_port"})
PORT_OPTIONS = [(verb, option) for verb, options in NODE_OPTIONS.items() for option, read in options.items()
                if read is read_port]


@pytest.mark.parametrize("value", ["0", "70000"])
@pytest.mark.parametrize("name", PORT_VARIABLES)
def test_a_port_variable_out_of_range_names_the_range(entrypoint, name, value):
    """B16: a port of 0 was "a whole number of 1 or more (e.g. 2)", 70000 "must be 1..65535": one line, both ends."""
    env = dict(TWO_NODES, **{name: value})
    if name != "NODEWEAVE_MASTER_PORT":
        env["NODEWEAVE_MASTER_PORT"] = "29400"  # no clash with the port under test
    code, out, err = entrypoint(["--explain", "--", "train.py"], env)
    assert code == 2
    assert f"must be 1..65535, got {value} (from {name}" in err
    assert "accepted: a port number from 1 to 65535 in plain decimal digits (e.g. " in err  # its own: replay10 B16


@pytest.mark.parametrize("value", ["0", "70000"])
@pytest.mark.parametrize("verb,option", PORT_OPTIONS)
def test_a_port_option_out_of_range_names_the_range(entrypoint, verb, option, value):
    """B16: `--node live --port 0` said "1 or more (e.g. 2)"; every port option says the range and a port."""
    code, out, err = entrypoint(["--node", verb, option, value], {})
    assert code == 2
    assert f"must be 1..65535, got {value}" in err and "(e.g. 9464, the metrics port's default;" in err


@pytest.mark.parametrize("name", ["shell.py", "shell.sh", "shell"])
@pytest.mark.parametrize("head", ["#!/bin/bash", "#!/bin/sh", "#!/usr/bin/env bash", "#!/usr/bin/perl"])
def test_a_script_for_another_interpreter_is_refused_whatever_its_name(entrypoint, name, head):
    """B18: `shell.py` holding a bash script was planned as `torchrun shell.py` (exit 0) while the same bytes as
    `shell.sh` were refused: the script is judged by what it holds."""
    with open(name, "w") as handle:
        handle.write(f"{head}\necho hi\n")
    code, out, err = entrypoint(["--explain", "--", name], {})
    assert code == 2
    assert f"script {name!r} is a script for another interpreter ({head})" in err


@pytest.mark.parametrize("head", ["#!/usr/bin/env -S uv run --script", "#!/usr/bin/env python3", ""])
def test_a_python_file_under_any_shebang_is_run(entrypoint, head):
    """B18: a .py that is Python, whatever program its `#!` names, is still planned."""
    with open("tool.py", "w") as handle:
        handle.write(f"{head}\nprint('hi')\n")
    code, out, err = entrypoint(["--explain", "--", "tool.py"], {})
    assert code == 0, err


class _Settings:
    def __init__(self, env, run_id):
        self.env, self._run_id = env, run_id

    def get(self, key):
        return self._run_id if key == "run_id" else None


@pytest.mark.parametrize("live_id", ["r1"], ids=["other-id"])
def test_a_start_beside_a_live_run_is_refused_whatever_its_id(tmp_path, live_id):
    """A start beside a live run of another id is refused (exit 6). B17 (a second start of a live run's own id) is
    judged, not changed: nodes of one run that share a $TMPDIR (bare hosts that are one machine) start with the
    same id, and refusing it stopped their later nodes (test_up_plans' LAN seed)."""
    import subprocess
    import sys

    from nodeweave.entrypoint.errors import EXIT_BUSY, EntrypointError
    from nodeweave.entrypoint.running.runstate import proc_stat, refuse_second_run, run_dir, write_json

    env = {"TMPDIR": str(tmp_path)}
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record = {"schema": "nodeweave.run/1", "run_id": live_id, "pid": sleeper.pid,
                  "starttime": proc_stat(sleeper.pid)[3], "started": 0, "state": "launched", "command": ["train.py"]}
        path = tmp_path / "nodeweave" / "runs" / live_id / "run.json"
        write_json(str(path), record)
        with pytest.raises(EntrypointError) as refused:
            refuse_second_run(_Settings(env, "r3"))
        assert refused.value.exit_code == EXIT_BUSY
        assert f"run {live_id} is still in progress on this node (pid {sleeper.pid}" in str(refused.value)
        assert run_dir(env, live_id) == str(path.parent)
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("argv", [["report", "nosuch"], ["stop", "--run", "nosuch"]], ids=["report", "stop"])
@pytest.mark.parametrize("has", [[], ["r1", "r2"]], ids=["no-runs", "two-runs"])
def test_a_run_id_the_node_never_had_is_an_error(entrypoint, tmp_path, argv, has):
    """B15: `--node report foo` and `--node stop --run foo` (a typo) answered "run": null / "stopped": [], exit 0,
    as for a run that ended: every action given a run id names the unknown id and the node's runs, exit 1."""
    import json

    for name in has:
        (tmp_path / "nodeweave" / "runs" / name).mkdir(parents=True)
    code, out, err = entrypoint(["--node", *argv], {"TMPDIR": str(tmp_path)})
    assert code == 1
    error = json.loads(out)["error"]
    assert error.startswith("no run 'nosuch' on this node")
    assert error.endswith("its runs: r1, r2" if has else "it has none")


def test_a_run_that_ended_is_no_error(entrypoint, tmp_path):
    """B15: a run this node had, now ended, is stopped as nothing to stop and reported, exit 0."""
    (tmp_path / "nodeweave" / "runs" / "r1").mkdir(parents=True)
    assert entrypoint(["--node", "stop", "--run", "r1"], {"TMPDIR": str(tmp_path)})[0] == 0
    assert entrypoint(["--node", "report", "r1"], {"TMPDIR": str(tmp_path)})[0] == 0


# a value other than "not set" for each setting the check-in exchange alone reads (shared_rules.SWITCHED)
EXCHANGE_ONLY = {"exchange_port": "30000", "exchange_allow": "nccl", "exchange_bind": "route", "straggler_fault": "3",
                 "metrics": "on", "metrics_port": "9999"}


def test_every_setting_the_exchange_alone_reads_has_a_value_here():
    """B19: the table below is the product's; a new member is tried too."""
    from nodeweave.entrypoint.planning.shared_rules import SWITCHED

    assert set(SWITCHED["exchange"]) == set(EXCHANGE_ONLY)


@pytest.mark.parametrize("by_flag", [False, True], ids=["variable", "flag"])
@pytest.mark.parametrize("key", sorted(EXCHANGE_ONLY))
def test_a_setting_the_exchange_alone_reads_is_refused_with_it_off(entrypoint, key, by_flag):
    """B19: --straggler-fault 3 and NODEWEAVE_EXCHANGE_BIND=route with NODEWEAVE_EXCHANGE=off passed with no word
    (no straggler fault ever came), while --exchange-port and NODEWEAVE_METRICS_PORT were refused: every setting
    the exchange alone reads is refused with it off, by the one table."""
    row = next(s for s in SETTINGS if s.key == key)
    env = dict(TWO_NODES, NODEWEAVE_EXCHANGE="off")
    argv = ["--explain"]
    if by_flag:
        argv += [f"{row.flag}={EXCHANGE_ONLY[key]}"]
    else:
        env[row.variable] = EXCHANGE_ONLY[key]
    code, out, err = entrypoint([*argv, "--", "train.py"], env)
    assert code == 2
    assert "does nothing with NODEWEAVE_EXCHANGE off (read only while it is on)" in err
    assert (row.flag if by_flag else row.variable) in err


def test_compose_with_the_exchange_off_renders_no_exchange_setting(tmp_path):
    """B19: compose/node.yaml set NODEWEAVE_EXCHANGE_BIND=route whatever launcher.exchange said; with the exchange
    off that is refused on the node, so it is rendered only with the exchange on."""
    import yaml

    from nodeweave.spec import load_spec
    from nodeweave.targets.compose import render_files

    spec_file = tmp_path / "nodeweave.yaml"
    for exchange, bound in ((True, True), (False, False)):
        spec_file.write_text("name: job\nnodes: 2\nimage:\n  variant: cpu\nlauncher:\n  script: train.py\n"
                             f"  exchange: {'true' if exchange else 'false'}\n")
        service = next(iter(yaml.safe_load(render_files(load_spec(spec_file))["compose/node.yaml"])["services"]
                            .values()))
        env = service["environment"]
        names = set(env) if isinstance(env, dict) else {item.split("=", 1)[0] for item in env}
        assert ("NODEWEAVE_EXCHANGE_BIND" in names) is bound


def _free_port():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(address, port):
    import socket

    try:
        socket.create_connection((address, port), timeout=2).close()
        return True
    except OSError:
        return False


def test_node_0s_metrics_listen_where_its_exchange_does(tmp_path):
    """B20: with NODEWEAVE_EXCHANGE_BIND=route (compose/node.yaml on a host network) the exchange listened on the
    training address only, while /metrics and /status.json answered on every address of the host (the docker
    bridge's too): node 0's listeners all listen where its exchange does, and on loopback for `--node live`."""
    import socket

    from nodeweave.entrypoint.metrics.live import Live
    from nodeweave.entrypoint.running import capture

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.123", 9))  # no packet is sent: the route's source address
        address = probe.getsockname()[0]
    except OSError:
        pytest.skip("no route off this machine")
    finally:
        probe.close()
    port = _free_port()

    class Settings:
        env = {"TMPDIR": str(tmp_path)}

        def get(self, key, default=None):
            return {"metrics": True, "metrics_port": port}.get(key, default)

    class Watch:
        hub = type("Hub", (), {"own_fp": {"job": "j"}, "bind": address})()
        stall = None

    listeners = list(capture.OUTPUT_LISTENERS)
    live = Live(Settings(), lambda line: None)
    try:
        live._watching(Watch())
        assert _answers(address, port) and _answers("127.0.0.1", port)
        assert not _answers("127.0.0.2", port)  # another address of this host: a wildcard listener answered it
    finally:
        for server in [live.server, *getattr(live, "servers", [])]:
            if server is not None:
                server.shutdown()
                server.server_close()
        capture.OUTPUT_LISTENERS[:] = listeners


@pytest.mark.parametrize("quiet_s, most", [(0.5, 2.5), (24.0, 0.5), (31.0, 0.0), (600.0, 0.0)])
def test_the_step_rate_comes_down_when_the_step_lines_stop(tmp_path, monkeypatch, quiet_s, most):
    """B22: 24 s after the last step line nodeweave_steps_per_second (and /status.json, top) still said 1.99, the
    rate between the last lines: it is measured to now, so it falls to 0 within the 30 s window."""
    from nodeweave.entrypoint.metrics import live as live_module
    from nodeweave.entrypoint.metrics.live import Live

    class Settings:
        env = {"TMPDIR": str(tmp_path)}

        def get(self, key, default=None):
            return {"metrics": False}.get(key, default)

    live = Live(Settings(), lambda line: None)
    t0 = 1000.0
    live.generation = {"ended": None, "fault": None, "steps": [[t0 + i / 2, i] for i in range(0, 61)]}  # 2 a second
    last = t0 + 30.0
    monkeypatch.setattr(live_module.time, "time", lambda: last + quiet_s)
    rate = live.step_rate()
    assert rate is not None and rate <= most
    if quiet_s < 1:
        assert rate > 1.5  # a job that steps reads its rate


def _verbs_with_url():
    from cli_run import leaves

    return [words for words, command in leaves()
            if any("--url" in getattr(param, "opts", ()) for param in getattr(command, "params", ()))]


@pytest.mark.parametrize("words", _verbs_with_url(), ids=" ".join)
def test_a_verb_that_reads_node_0_by_url_names_url_where_no_spec_is(tmp_path, words):
    """B13: `nodeweave top` (and `dashboard`) in a folder with no spec, beside a job started as processes, named
    only `nodeweave init` and --spec: every verb that takes --url names it as the way to watch such a job."""
    from cli_run import nodeweave

    done = nodeweave(*words, *(["--once"] if words == ["top"] else []), cwd=str(tmp_path), timeout=60)
    assert done.returncode == 2, done.stderr
    assert "no nodeweave.yaml in" in done.stderr
    assert f"nodeweave {' '.join(words)} --url http://NODE0:9464" in done.stderr


def test_the_url_hint_covers_top_and_dashboard():
    """B13: the product's verbs with --url, found by their options: top and dashboard today."""
    assert {" ".join(words) for words in _verbs_with_url()} >= {"top", "dashboard"}


WAITER = """
import sys, time
from nodeweave.entrypoint.running.supervise import run_supervised
code = run_supervised("/bin/true", ["true"], dict(__import__("os").environ))
print("launched", code, flush=True)
time.sleep(60)  # what a node does next: wait for node 0's next generation, hear the others back
print("woke", flush=True)
"""


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_node_whose_launcher_ended_stops_on_a_stop_signal(tmp_path, signame):
    """B23: a training node waiting for node 0 to come back ignored SIGTERM, SIGINT and SIGHUP (the handler that
    forwarded them to its launcher stayed after the launcher ended); only SIGKILL ended it. Every stop signal
    ends a node with no launcher running, 128+N, said in one line."""
    import signal
    import subprocess
    import sys
    import time

    from cli_run import checkout_env

    child = subprocess.Popen([sys.executable, "-c", WAITER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=checkout_env(), start_new_session=True)
    try:
        assert child.stdout.readline().startswith("launched 0")
        time.sleep(0.3)
        child.send_signal(getattr(signal, signame))
        code = child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    number = int(getattr(signal, signame))
    assert code == 128 + number
    assert f"stopped by {signame} with no launcher running (exit {128 + number})" in child.stderr.read()


def test_explain_names_a_checkpoint_folder_another_job_holds_now(entrypoint, tmp_path):
    """B14: --explain of node 0 over a checkpoint_dir another job's node 0 claims now said "none complete yet",
    exit 0, while the start refused at once (exit 3): the plan names the live claim as the start-refused-here
    warning, as it names a master port held (each start refusal of this machine, by the start's own check)."""
    import json
    import socket
    import subprocess
    import sys

    (tmp_path / "shared").mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "shared" / ".nodeweave-claim").write_text(json.dumps(
            {"job": "w9r", "run": None, "host": socket.gethostname(), "pid": sleeper.pid, "since": 0}))
        env = dict(TWO_NODES, NODEWEAVE_JOB_ID="other", NODEWEAVE_RECOVERY="on", NODEWEAVE_SPARES="1",
                   NODEWEAVE_CHECKPOINT_DIR="shared", NODEWEAVE_MASTER_PORT="31640")
        code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert code == 0, err
    said = [str(w) for w in json.loads(out)["warnings"]]
    assert any("checkpoint_dir shared is in use by another job now: job 'w9r'" in w
               and "a start here stops with exit 3" in w for w in said), said
