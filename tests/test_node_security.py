"""A node's own security settings: the exchange's bind address, the derived-token warning, the readiness probe.

NODEWEAVE_EXCHANGE_BIND=route: on a host network the exchange listens on the training address only.

Real plans of this machine and real sockets: with ``route`` node 0's exchange
takes the address its route toward the master uses (here the master is this
machine's own non-loopback address), so a connection to another of the
host's addresses (loopback, a bridge) is refused, where the default ``any``
takes them all.
"""

from __future__ import annotations

import socket

import cli_run
import pytest
from one_machine import one_machine_env

from nodeweave.entrypoint import make_plan
from nodeweave.entrypoint.checkin.exchange import Hub
from nodeweave.entrypoint.planning.exchange_plan import bind_address


def _own_address():
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.123", 9))  # no packet is sent; the kernel picks the route's source address
        return probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()


def _plan(address, bind=None):
    env = one_machine_env({"NODEWEAVE_EXCHANGE_BIND": bind} if bind else {})
    return make_plan(["--nnodes", "2", "--node-rank", "0", "--master-addr", address, "--", "t.py"], env)


def _reachable(address, port):
    try:
        socket.create_connection((address, port), timeout=2).close()
        return True
    except OSError:
        return False


def test_route_binds_node_0s_exchange_to_the_masters_address_only():
    address = _own_address()
    if address is None or address.startswith("127."):
        pytest.skip("this machine has no non-loopback IPv4 address to bind to")
    plan = _plan(address, "route")
    assert plan.exchange["bind"] == address
    hub = Hub(0, b"k" * 32, {"job": "j"}, lambda *a: None, bind=address)
    try:
        port = hub.sock.getsockname()[1]
        assert _reachable(address, port)
        assert not _reachable("127.0.0.1", port)  # the host's other addresses are not listened on
    finally:
        hub.sock.close()
    open_hub = Hub(0, b"k" * 32, {"job": "j"}, lambda *a: None)
    try:
        assert _reachable("127.0.0.1", open_hub.sock.getsockname()[1])  # the default: every address
    finally:
        open_hub.sock.close()


def test_any_loopback_or_an_unknown_route_listens_everywhere():
    assert _plan("127.0.0.1", "route").exchange["bind"] == "every address"  # Debian's 127.0.1.1 <hostname>
    address = _own_address() or "10.0.0.1"
    assert _plan(address).exchange["bind"] == "every address"
    plan = _plan(address, "route")
    plan.node.local_ipv4 = None
    assert bind_address(plan, _settings("route")) is None


def _settings(bind):
    from nodeweave.entrypoint import parse

    return parse(["--exchange-bind", bind, "--", "t.py"], {})


def test_a_bad_value_is_one_line_naming_the_variable():
    from nodeweave.entrypoint import EntrypointError, parse

    with pytest.raises(EntrypointError, match="NODEWEAVE_EXCHANGE_BIND"):
        parse(["--", "t.py"], {"NODEWEAVE_EXCHANGE_BIND": "eth0"}).get("exchange_bind")


def test_a_live_multi_node_plan_without_a_secret_warns_in_explain_and_doctor(tmp_path):
    """derived-job-token: where nodeweave did not bring the nodes up (no token file), --explain and doctor say so."""
    from nodeweave.doctor import diagnose

    argv = ["--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1", "--", "t.py"]
    plan = make_plan(argv, one_machine_env())
    assert [w.code for w in plan.warnings if w.code == "derived-job-token"] == ["derived-job-token"]
    assert plan.exchange["token"].startswith("derived from job id")
    secret = tmp_path / "job-token"
    secret.write_text("from-nodeweave-up\n")
    with_file = make_plan(argv, one_machine_env({"NODEWEAVE_JOB_TOKEN_FILE": str(secret)}))
    assert "derived-job-token" not in [w.code for w in with_file.warnings]
    assert with_file.exchange["token"] == f"NODEWEAVE_JOB_TOKEN_FILE ({secret})"
    assert "derived-job-token" not in [w.code for w in make_plan(argv[2:] and ["--", "t.py"], {}).warnings]  # 1 node
    env = one_machine_env({"NODEWEAVE_NNODES": "2", "NODEWEAVE_NODE_RANK": "0", "NODEWEAVE_MASTER_ADDR": "127.0.0.1"})
    codes = [(f.severity, f.code) for f in diagnose(env=env).findings]
    assert ("warning", "derived-job-token") in codes
    assert "derived-job-token" not in [f.code for f in diagnose(env={**env, "NODEWEAVE_JOB_TOKEN_FILE": str(secret)}
                                                                 ).findings]


def _ready(tmp_path, mode=None):
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), **({"NODEWEAVE_MODE": mode} if mode else {})}
    src = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "src")
    out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "ready"], env={**env, "PYTHONPATH": src})
    import json

    return out.returncode, json.loads(out.stdout)


def test_the_readiness_probe_says_holds_or_runs_and_not_ready_while_a_holding_node_plans(tmp_path):
    """``--node ready``, the pods' readinessProbe: no network, its own records only."""
    import os
    import subprocess

    from nodeweave.entrypoint.running.runstate import HOLD_SCHEMA, proc_stat, write_json

    assert _ready(tmp_path) == (0, {"ready": True, "runs": [], "schema": "nodeweave.node/1", "state": "runs"})
    code, answer = _ready(tmp_path, "hold")
    assert code == 1 and answer["state"].startswith("planning")
    holder = subprocess.Popen(["sleep", "30"])
    try:
        write_json(os.path.join(tmp_path, "nodeweave", "hold.json"),
                   {"schema": HOLD_SCHEMA, "pid": holder.pid, "starttime": proc_stat(holder.pid)[3]})
        assert _ready(tmp_path, "hold")[0] == 0 and _ready(tmp_path, "hold")[1]["state"] == "holds"
    finally:
        holder.kill()
        holder.wait()
    assert _ready(tmp_path, "hold")[0] == 1  # the holding process is gone: its record no longer counts
