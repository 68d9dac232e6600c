"""Walk 9, part B, rows B1..B11 (issue 43), each fixed as a class:

- a plan with errors says its first error on stderr, text or JSON, beside its exit code (B6);
- every NODEWEAVE_* variable read by name with no settings row (the job's secret and its file among them) that is
  set but empty or blank is read as unset and said so, as every other one is (B10, B11);
- a node count set but empty, in any of its spellings, is refused where no other source gives a count, never read
  as a single node (B5);
- ``--status`` needs no node count and no rank of the shell that asks: node 0 is asked at the master address and
  the exchange port (B1, B2);
- ``--url`` says what answers there: node 0's metrics server at a wrong path is named so (B3), and a port whose
  next port greets as node 0's check-in exchange is named as the master port at once (B4).

Each test fails on the code before its fix. No container is started.
"""

from __future__ import annotations

import json
import threading

import pytest

from nodeweave.entrypoint.planning.contract import OTHER_VARIABLES
from cli_run import in_a_folder_with_train_py

TWO_NODES = {"NODEWEAVE_NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
entrypoint = pytest.fixture(in_a_folder_with_train_py, name="entrypoint")  # (exit code, stdout, stderr)


@pytest.mark.parametrize("json_form", [False, True])
@pytest.mark.parametrize("env", [
    {"NODEWEAVE_NNODES": "2", "NODE_RANK": "2", "MASTER_ADDR": "127.0.0.1"},  # a rank past the count: a plan error
    {"NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_EXCHANGE_PORT": "29500"},  # a port clash
], ids=["rank-past-count", "port-clash"])
def test_a_plan_with_errors_says_the_first_on_stderr(entrypoint, env, json_form):
    """B6: `--explain > plan.txt` ended 2 with nothing on the terminal: the error was only a line of the plan."""
    argv = ["--explain", *(["--json"] if json_form else []), "--", "train.py"]
    code, out, err = entrypoint(argv, dict(env, NODE_RANK=env.get("NODE_RANK", "0")))
    assert code != 0
    first = json.loads(out)["errors"][0]["message"] if json_form else \
        next(line for line in out.splitlines() if line.lstrip().startswith("x ")).lstrip()[2:]
    assert f"nodeweave-entrypoint: error: {first}" in err


@pytest.mark.parametrize("value", ["", " "], ids=["empty", "blank"])
@pytest.mark.parametrize("name", OTHER_VARIABLES)
def test_a_variable_read_by_name_set_but_empty_is_said(entrypoint, name, value):
    """B11, B10: NODEWEAVE_JOB_TOKEN= (an unset $SECRET) got no `set but empty` line, and a blank token was taken
    as the secret; every variable the entrypoint reads by name alone is read as unset and said so."""
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], dict(TWO_NODES, **{name: value}))
    assert code == 0, err
    plan = json.loads(out)
    assert f"{name} is set but empty, so it is read as unset" in [str(w) for w in plan["warnings"]]
    assert plan["exchange"]["token"].startswith("derived from job id")


def test_a_blank_token_beside_a_token_file_reads_the_file(entrypoint, tmp_path):
    """B10: a blank NODEWEAVE_JOB_TOKEN is unset, so the file the other nodes read is this node's secret too."""
    secret = tmp_path / "token"
    secret.write_text("abc\n")
    secret.chmod(0o600)
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"],
                                dict(TWO_NODES, NODEWEAVE_JOB_TOKEN=" ", NODEWEAVE_JOB_TOKEN_FILE=str(secret)))
    assert code == 0, err
    plan = json.loads(out)
    assert plan["exchange"]["token"].startswith("NODEWEAVE_JOB_TOKEN_FILE")
    assert not any("job-token-twice" in json.dumps(w) or "both set" in str(w) for w in plan["warnings"])


# every spelling of the node count a variable gives (docs/entrypoint.md's --nnodes row)
COUNT_VARIABLES = ["NODEWEAVE_NNODES", "NNODES", "PET_NNODES"]


@pytest.mark.parametrize("value", ["", " "], ids=["empty", "blank"])
@pytest.mark.parametrize("name", COUNT_VARIABLES)
def test_an_empty_node_count_is_never_a_single_node(entrypoint, name, value):
    """B5: node 0 of a 2-node job whose $NNODES was unset trained alone as `node 0 of 1` while node 1 waited."""
    env = {name: value, "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_MASTER_ADDR": "127.0.0.1"}
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"], env)
    assert code == 2  # bad input: the count was set, to nothing (walk15b B1)
    message = json.loads(out)["errors"][0]["message"]
    assert f"{name} is set but empty" in message and "never read as a single node" in message


def test_an_empty_node_count_beside_another_count_is_a_warning(entrypoint):
    """B5: the refusal is for a count no source gives; another spelling's count stands, the empty one warned."""
    code, out, err = entrypoint(["--explain", "--json", "--", "train.py"],
                                {"NODEWEAVE_NNODES": "", "NNODES": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"})
    assert code == 0, err
    assert str(json.loads(out)["topology"]["nnodes"]["value"]) == "2"


@pytest.fixture
def running_exchange():
    """Node 0's real hub of job 'trainer' with one node checked in, serving on loopback."""
    from loopback_hub import serving_hub

    yield from serving_hub()


@pytest.mark.parametrize("shell", [
    {},  # an operator's shell: no count and no rank (B1)
    {"NODEWEAVE_NNODES": "2"},  # the count, no rank (B2: a node's rank was asked for)
    {"NODE_RANK": "1"},  # a rank, no count ("the node count is unknown")
], ids=["neither", "count-only", "rank-only"])
def test_status_asks_node_0_from_any_shell(entrypoint, running_exchange, shell):
    """B1, B2: `--status` with the master and port of a live job refused `single node`, or asked for a rank."""
    env = dict(shell, NODEWEAVE_MASTER_ADDR="127.0.0.1", NODEWEAVE_MASTER_PORT="29500", NODEWEAVE_JOB_ID="trainer",
               NODEWEAVE_EXCHANGE_PORT=str(running_exchange.port))
    code, out, err = entrypoint(["--status"], env)
    assert code == 0, err
    assert sorted(n["fp"]["rank"] for n in json.loads(out)["nodes"]) == [0, 1]


def test_status_without_a_master_names_it(entrypoint):
    """B1: with nothing set, the line names what to set (node 0's address), not `single node`."""
    code, out, err = entrypoint(["--status"], {})
    assert code != 0
    assert "MASTER_ADDR" in err and "single node" not in err


@pytest.fixture
def metrics_port():
    """Node 0's own metrics server (metrics/server.py) on a free loopback port."""
    from nodeweave.entrypoint.metrics.server import serve
    from free_ports import free_port

    port = free_port()
    server = serve(port, None, bind="127.0.0.1")
    yield port
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["/foo", "/foo/", "/status", "/metrics.txt"])
def test_url_at_a_wrong_path_of_node_0s_metrics_port_says_the_path(metrics_port, path):
    """B3: `top --url http://HOST:METRICS/foo` said `not node 0's metrics port` of node 0's metrics port."""
    from nodeweave.cluster.top import ask_live

    live, why = ask_live(url=f"http://127.0.0.1:{metrics_port}{path}")
    assert live is None
    assert "node 0's metrics port answers there, but not at that path" in why and "not node 0's" not in why


def test_url_of_another_http_server_is_still_not_node_0s(tmp_path):
    """B3: a 404 from a server that is not node 0's metrics server keeps its line."""
    import http.server
    from nodeweave.cluster.top import ask_live

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        live, why = ask_live(url=f"http://127.0.0.1:{server.server_address[1]}/nope")
    finally:
        server.shutdown()
        server.server_close()
    assert live is None and "not node 0's metrics port" in why


def test_url_of_the_master_port_is_named_at_once():
    """B4: the master port (torchrun's store: takes the connection, never answers HTTP) cost 20 s and a generic
    line, while the exchange on the next port was known at once."""
    import socket
    import time

    from nodeweave.cluster.top import ask_live
    from free_ports import free_port_pair

    port = free_port_pair()
    store, exchange = socket.socket(), socket.socket()
    held = []

    def greet():
        while True:
            try:
                conn, _ = exchange.accept()
            except OSError:
                return
            held.append(conn)
            conn.sendall(b'{"t":"challenge","nonce":"ab","job":"w9b"}\n')

    for sock, at in ((store, port), (exchange, port + 1)):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", at))
        sock.listen(8)
    threading.Thread(target=greet, daemon=True).start()
    try:
        started = time.monotonic()
        live, why = ask_live(url=f"http://127.0.0.1:{port}")
        took = time.monotonic() - started
    finally:
        for sock in [store, exchange, *held]:
            sock.close()
    assert live is None and took < 10, (took, why)
    assert f"{port} is the job's master port" in why and "job w9b" in why and str(port + 1) in why


@pytest.mark.parametrize("recovery", [True, False])
def test_a_node_that_loses_node_0_says_what_it_does_next(recovery):
    """B8: under recovery a node that lost node 0 itself said `node 0 decides the next generation` of the node that
    had just died; it says it waits up to wait_timeout for node 0 to come back. Without recovery: exit 5 as before."""
    import time

    from loopback_hub import Cluster, Launcher
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    log, launcher = [], Launcher()
    link = LinkWatch(cluster.channels[1], log.append, recovery=recovery, hub_wait_s=42)
    link.start(launcher.stop)
    try:
        cluster.hub.close()  # node 0's entrypoint killed: its exchange closes without a word
        assert launcher.stopped.wait(20), log
        time.sleep(0.2)
    finally:
        link.close()
        cluster.close()
    said = next(line for line in log if line.startswith("node 0 (") and " failed: " in line)
    if recovery:
        assert "waiting up to 42s (wait_timeout) for node 0 to come back" in said and "node 0 decides" not in said
    else:
        assert "(exit 5: another node failed)" in said


@pytest.mark.parametrize("first", [
    "[rank 0/2 gen 2] resumed from step 160 (ckpt/step-160.pt)",  # examples/resilient_train.py after a fault
    "training for 400 steps from step 0",
    "warmup steps: 100",
    "starting at iteration 1200",
])
def test_one_line_naming_a_step_is_not_judged_unread(tmp_path, first):
    """B7: node 0 that came back said `no step line was read ... set metrics.step_pattern` of its resume line, the
    project's own example whose next line, a step line, was read."""
    import live_status
    from nodeweave.entrypoint.metrics import collect

    said = []
    state = live_status.live(str(tmp_path), lines=())
    state.log = said.append
    state.output(1, (first + "\n").encode())
    assert collect.status(state)["step_note"] is None and said == []
    state.output(1, b"[rank 0/2 gen 2] step 161 loss 0.0713\n")
    assert collect.status(state)["step"][:2] == ["plain", 161] and collect.status(state)["step_note"] is None
    assert said == []


TRACEBACK = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>', "KeyboardInterrupt",
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1096 got signal: 2"]


@pytest.mark.parametrize("who", [0, 1], ids=["node-0-stopped", "node-1-stopped"])
def test_a_node_sent_ctrl_c_is_said_stopped_not_failed(who):
    """B9: a Ctrl-C in node 0's terminal left node 0 no line of its own and told node 1 `node 0 failed: torchrun
    exited 1 after SIGINT` with 20 relayed traceback lines; either node's stop is now said as a stop."""
    import time

    from loopback_hub import started_watches

    cluster, hub_watch, links, launchers, logs = started_watches(1)
    try:
        stopped, other = (hub_watch, 1) if who == 0 else (links[1], 0)
        stopped.finish(130, "torchrun exited 1 after SIGINT", TRACEBACK, stopped="SIGINT")
        assert launchers[other].stopped.wait(20), logs
        time.sleep(0.3)
    finally:
        for link in links.values():
            link.close()
        hub_watch.close()
        cluster.close()
    assert any(line.startswith("stopped on SIGINT (Ctrl-C): this node's launcher ended") for line in logs[who]), logs
    said = next(line for line in logs[other] if f"node {who}" in line and "stopping this node's launcher" in line)
    assert " was stopped (SIGINT, Ctrl-C): " in said and " failed: " not in said, said
    assert not any("KeyboardInterrupt" in line or "SignalException" in line for line in logs[other]), logs[other]
