"""Walk 9, part B, rows B24..B29 (issue 43), each fixed as a class:

- a query (``--explain``, ``--status`` or one of their switches typed alone, or no training command) never speaks
  for the node in the job: its refusal is local and never reaches node 0's check-in (B25);
- one hold per node: a second is refused (exit 6) while hold.json names a live hold, and a hold removes only its
  own record (B29; the rule B17 holds runs to as well: a second start over a live record of the same kind is
  refused, and a record is removed only by the process it names);
- `-0` is no plain number wherever a whole number is read (entrypoint and spec: one rule), and a port's refusal
  names 1..65535 (B27);
- node 0 of any job, one node too, hosts the rendezvous: a MASTER_ADDR that is not this machine and a busy master
  port are refused and warned for a single node as for many (B24);
- every port node 0 listens on (master, exchange, metrics) is judged alike: below 1024 is noted, and a clash with
  the metrics port's default names the port that was typed (B28);
- `nodeweave top` says when node 0 stops answering and stops, as the dashboard's page says it, and writes a frame
  per redraw to a file or pipe (B26).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeweave.entrypoint.checkin import refusal, wire
from nodeweave.entrypoint.errors import EntrypointError
from nodeweave.entrypoint.planning.settings import FLAGS, parse
from cli_run import in_a_folder_with_train_py

entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)
NODE_1 = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "1", "NODEWEAVE_MASTER_ADDR": "127.0.0.1",
          "NODEWEAVE_MASTER_PORT": "31820", "NODEWEAVE_JOB_ID": "q"}
QUERY_ALONE = [flag for flag, (key, _) in FLAGS.items() if key in refusal.QUERY_SWITCHES and key not in
               ("explain", "status")]  # the switches that only shape a query: refused typed alone


def _refused(argv, env):
    try:
        parse(argv, env)
    except EntrypointError as err:
        return err
    raise AssertionError(f"{argv} was not refused")


@pytest.fixture
def told(monkeypatch):
    """Every connection tell_node_0 would make to node 0's exchange, recorded instead of made."""
    calls = []

    def connect(host, port, timeout):
        calls.append((host, port))
        raise wire.ExchangeError("not here")

    monkeypatch.setattr(wire, "connect", connect)
    monkeypatch.setattr(refusal, "_where", lambda settings: ("127.0.0.1", 31821, "q", 31820, "vm", 1))
    return calls


@pytest.mark.parametrize("argv", [[flag] for flag in QUERY_ALONE] + [[flag, "--", "train.py"] for flag in QUERY_ALONE],
                         ids=lambda argv: " ".join(argv))
def test_a_query_refused_is_never_told_to_node_0(told, argv):
    """B25: `--json` (meant `--explain --json`) in node 1's shell told node 0, which refused the whole job."""
    err = _refused(argv, NODE_1)
    assert err.settings is not None
    assert refusal.tell_node_0(err.settings, err, lambda line: None, budget_s=0.5) is False
    assert told == []


def test_a_start_refused_is_still_told_to_node_0(told):
    """B25 (the rule kept): a start (a training command, no query switch) refused on its own tells node 0."""
    err = _refused(["train.py"], dict(NODE_1, NODEWEAVE_PROFILE_OPTIONS="--x"))
    refusal.tell_node_0(err.settings, err, lambda line: None, budget_s=0.5)
    assert told


# --- B29: one hold per node; a hold's record is never overwritten nor removed by another ---------------------

def _hold(tmp_path, timeout=None):
    import os
    import subprocess

    from cli_run import ENTRYPOINT, popen

    env = {k: v for k, v in os.environ.items() if not k.startswith(("NODEWEAVE_", "SLURM_", "OMPI_", "PMI"))}
    env.update(TMPDIR=str(tmp_path))
    return popen([*ENTRYPOINT, "--mode", "hold", "--", "train.py"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True)


def _wait_for(path, seconds=30.0):
    import time

    end = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < end, f"{path} never written"
        time.sleep(0.1)


def test_a_second_hold_is_refused_and_the_live_record_kept(tmp_path):
    """B29: a second hold on a node that holds started without a word and, when it ended, removed hold.json:
    `nodeweave status` then read the node that still held as idle."""
    import json
    import signal

    (tmp_path / "train.py").write_text("print('hi')\n")
    record = tmp_path / "nodeweave" / "hold.json"
    first = _hold(tmp_path)
    try:
        _wait_for(record)
        before = json.loads(record.read_text())
        assert before["pid"] == first.pid
        second = _hold(tmp_path)
        try:
            out, err = second.communicate(timeout=60)
        finally:
            if second.poll() is None:
                second.send_signal(signal.SIGTERM)
                second.communicate(timeout=30)
        assert second.returncode == 6, err
        assert f"a hold is still in progress on this node (pid {first.pid}" in err
        assert "Traceback" not in err
        assert json.loads(record.read_text()) == before
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)
    assert first.returncode == 0
    assert not record.exists()  # the hold removes its own record


def test_a_hold_removes_only_its_own_record(tmp_path, monkeypatch):
    """B29: the record a hold removes as it ends is its own, never one another process wrote since."""
    import json
    import os
    import signal

    from nodeweave.entrypoint import hold as hold_module

    (tmp_path / "train.py").write_text("print('hi')\n")
    record = tmp_path / "nodeweave" / "hold.json"
    other = {"pid": 1, "starttime": 0, "started": 0, "schema": "nodeweave.hold/1"}
    written = hold_module.write_json

    def write_then_replaced(path, data):
        written(path, data)
        written(path, other)  # another process's record over this hold's (a hold older than this rule)

    monkeypatch.setattr(hold_module, "write_json", write_then_replaced)
    monkeypatch.setattr(signal, "sigwait", lambda signals: signal.SIGTERM)
    monkeypatch.setattr(signal, "pthread_sigmask", lambda how, signals: set())
    monkeypatch.chdir(tmp_path)
    from nodeweave.entrypoint.planning.settings import parse

    env = {"TMPDIR": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    assert hold_module.hold(parse(["--mode", "hold", "--", "train.py"], env), lambda line: None) == 0
    assert json.loads(record.read_text()) == other


# --- B27: `-0` is no plain number, wherever a whole number is read; a port's refusal names 1..65535 ------------

def _whole_number_rows():
    from nodeweave.entrypoint.planning.contract import SETTINGS, read_number_text, read_port

    return [row for row in SETTINGS if row.variable and (row.read in (read_port, read_number_text)
                                                          or row.read.__qualname__.startswith("read_int"))]


@pytest.mark.parametrize("row", _whole_number_rows(), ids=lambda row: row.variable)
def test_minus_zero_is_refused_naming_plain_digits(entrypoint, row):
    """B27: NODEWEAVE_NODE_RANK=-0 was node rank 0, SPARES/STALL_WARN/WAIT_TIMEOUT -0 were 0, while 05, +5 and
    1_000 are refused: `-0` is refused the same way everywhere, naming plain digits."""
    env = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_MASTER_ADDR": "127.0.0.1"}
    env[row.variable] = "-0"
    code, out, err = entrypoint(["--explain", "--", "train.py"], env)
    assert code == 2, err
    assert "'-0'" in err and "plain decimal digits" in err and "Traceback" not in err


@pytest.mark.parametrize("variable", ["NODEWEAVE_MASTER_PORT", "NODEWEAVE_METRICS_PORT", "NODEWEAVE_EXCHANGE_PORT"])
@pytest.mark.parametrize("value", ["-0", "0", "70000"])
def test_a_port_refusal_names_1_to_65535(entrypoint, variable, value):
    """B27: NODEWEAVE_MASTER_PORT=-0 got "accepted: 1 or more (e.g. 2)": a port's refusal says 1..65535."""
    env = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_MASTER_ADDR": "127.0.0.1", variable: value}
    code, out, err = entrypoint(["--explain", "--", "train.py"], env)
    assert code == 2, err
    assert "1..65535" in err and "1 or more" not in err


def test_the_spec_refuses_minus_zero_too():
    """B27: the spec's plain-number rule and the entrypoint's are one: `-0` is no plain number in either."""
    from nodeweave.entrypoint.planning.contract import plain_int
    from nodeweave.spec.nodes import _PLAIN_INT

    for text in ("-0", "05", "+5", "1_000", "-00"):
        assert not plain_int(text) and not _PLAIN_INT.match(text), text
    for text in ("0", "5", "-2", "29500"):
        assert plain_int(text) and _PLAIN_INT.match(text), text


# --- B24: node 0 of any job, one node too, hosts the rendezvous: its own checks run for a single node ---------

@pytest.fixture()
def busy_port():
    """A master port another program listens on (another single-node job's store)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    yield listener.getsockname()[1]
    listener.close()


def _one_node(member, busy_port):
    import os
    import sys

    env = {"NODEWEAVE_NNODES": "1", "NODEWEAVE_NODE_RANK": "0", "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin"}
    if member == "master-elsewhere":  # a cluster's MASTER_ADDR left in the shell (TEST-NET-1: never this machine)
        return dict(env, NODEWEAVE_MASTER_ADDR="192.0.2.123"), "not an address of this node"
    return dict(env, NODEWEAVE_MASTER_PORT=str(busy_port)), "is in use on this node"


@pytest.mark.parametrize("member", ["master-elsewhere", "master-port-busy"])
def test_a_single_node_start_refuses_what_node_0_of_many_would(entrypoint, busy_port, member):
    """B24: one node with a cluster's MASTER_ADDR ran torchrun, which hung on it with 160 lines of C++ frames,
    while two nodes were refused at once: a single node's start is refused the same way, exit 3."""
    env, said = _one_node(member, busy_port)
    code, out, err = entrypoint(["--", "train.py"], env)
    assert code == 3 and said in err and "Traceback" not in err, err


@pytest.mark.parametrize("member", ["master-elsewhere", "master-port-busy"])
def test_explain_on_a_single_node_warns_what_its_start_refuses(entrypoint, busy_port, member):
    """B24: `--explain` on one node with a cluster's MASTER_ADDR said `this node is the master`, no warning."""
    import json

    env, said = _one_node(member, busy_port)
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    assert code == 0 and [w for w in json.loads(out)["warnings"] if said in w], json.loads(out)["warnings"]


# --- B28: every port node 0 listens on is judged alike: a clash names the port typed, below 1024 is noted --------

TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_MASTER_ADDR": "127.0.0.1"}


def _node_0_ports():
    from nodeweave.entrypoint.planning.contract import BY_KEY
    from nodeweave.entrypoint.planning.shared_rules import NODE_0_PORTS

    return [(key, BY_KEY[key].variable, BY_KEY[key].spec) for key, _, _ in NODE_0_PORTS]


@pytest.mark.parametrize("key,variable,field", _node_0_ports(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_port_node_0_listens_on_below_1024_is_noted(entrypoint, team, capsys, monkeypatch, key, variable,
                                                          field):
    """B28: NODEWEAVE_METRICS_PORT=80 was noted as below 1024; NODEWEAVE_MASTER_PORT=22 and
    NODEWEAVE_EXCHANGE_PORT=22 (ports node 0 binds as well) went without a word, in the plan and in validate."""
    from cli_run import in_process as run_cli

    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(TWO_NODES, **{variable: "22"}))
    assert code == 0 and f"{variable}: 22 is below 1024" in out + err, out + err
    section, _, name = field.partition(".")
    (team / "p.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py"
                                 + (f", {name}: 22}}\n" if section == "launcher" else "}\n" + f"{section}: {{{name}: 22}}\n"))
    from cli_run import home_beside

    monkeypatch.setenv("HOME", home_beside(team))  # the entrypoint's HOME was the folder: a spec in a home is refused
    code, out, err = run_cli(capsys, "validate", "--spec", "p.yaml")
    assert code == 0 and f"{field}: 22 is below 1024" in out + err, out + err


@pytest.mark.parametrize("variable,value,named", [
    ("NODEWEAVE_EXCHANGE_PORT", "9464", "another exchange port (--exchange-port, NODEWEAVE_EXCHANGE_PORT)"),
    ("NODEWEAVE_MASTER_PORT", "9464", "another master port (--master-port, NODEWEAVE_MASTER_PORT)"),
    ("NODEWEAVE_MASTER_PORT", "9463", "another master port (--master-port, NODEWEAVE_MASTER_PORT; the exchange's"),
])
def test_a_port_clash_with_the_metrics_default_names_the_port_typed(entrypoint, variable, value, named):
    """B28: NODEWEAVE_EXCHANGE_PORT=9464 was answered `metrics port 9464 (from default) is ...; accepted: a metrics
    port other than ...`: the fix offered was to the value the user did not type."""
    code, out, err = entrypoint(["--explain", "--", "train.py"], dict(TWO_NODES, **{variable: value}))
    assert code == 2 and named in err and "metrics port 9464 (from default)" not in err, err


def test_validate_names_the_exchange_port_set_against_the_metrics_default(team, capsys):
    """B28 (the spec's side of the rule): launcher.exchange_port 9464 was offered `or another master_port`."""
    from cli_run import in_process as run_cli

    (team / "x.yaml").write_text("name: team\nimage: {variant: cpu}\nnodes: 2\n"
                                 "launcher: {script: train.py, exchange_port: 9464}\n")
    code, out, err = run_cli(capsys, "validate", "--spec", "x.yaml")
    assert code == 2 and "another launcher.exchange_port" in out + err and "another master_port" not in out + err


@pytest.fixture
def team(tmp_path, monkeypatch):
    from team_folder import make_team

    return make_team(tmp_path, monkeypatch)


# --- B26: top says when node 0 stops answering, stops, and writes frames to a file ----------------------------

@pytest.fixture
def node_0_that_ends():
    """node 0's metrics port answering /status.json three times, then gone (the job ended: its port closed)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import live_status

    served = []

    class Node0(BaseHTTPRequestHandler):
        def do_GET(self):
            served.append(self.path)
            body = json.dumps(live_status.document()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)
            if len(served) == 3:
                threading.Thread(target=lambda: (server.shutdown(), server.server_close()), daemon=True).start()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Node0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.server_close()


def test_top_says_node_0_stopped_answering_and_stops(capsys, monkeypatch, tmp_path, node_0_that_ends):
    """B26: after the job ended top redrew its last picture (`moving`) for as long as it ran, never a word, never
    an end; written to a file it wrote nothing at all. Now: a frame per redraw to a file, a line saying since when
    node 0 has not answered, and an end (exit 1) naming it."""
    from cli_run import in_process as run_cli
    from nodeweave.cli import top

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(top, "GIVE_UP_S", 1.0)
    code, out, err = run_cli(capsys, "top", "--url", node_0_that_ends, "--interval", "0.2")
    assert code == 1, err
    assert "node 0 has not answered since" in err and "the job ended or node 0 is down" in err
    assert "node 0 not answering since" in out  # the frames written while it waited said it too
    assert out.count("node 0 not answering since") < out.count("\n")  # frames, not one line
