"""Where a target's sync listeners listen (sync/node/addresses.py), with real sockets on this machine.

A relay hop's listener and a resident agent listen on the address the job's
peers use (the route toward the master, else the default route), not on
every address: a connection to any other address of the node is refused.
NODEWEAVE_SYNC_BIND overrides it (``any``, an address, a network); a bad
value is refused naming the variable, the value and what is accepted.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from nodeweave.sync.node.addresses import _source_toward, listen_address, local_addresses
from nodeweave.sync.node.peer import Listener


def reaches(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=2).close()
        return True
    except ConnectionRefusedError:
        return False


def arrives(listener: Listener, address: str) -> bool:
    """Whether a connection to ``address`` at the listener's port reaches this listener (pending in its queue).

    Asked of the listener itself, not by the connect's outcome: under xdist another test may hold the same
    port number on another address, and a connect there would succeed without reaching this listener.
    """
    import select

    try:
        probe = socket.create_connection((address, listener.port), timeout=2)
    except ConnectionRefusedError:
        return False
    try:
        readable, _, _ = select.select([listener.sock], [], [], 1.0)
        if readable:
            listener.sock.accept()[0].close()
        return bool(readable)
    finally:
        probe.close()


def route_address() -> str:
    address = _source_toward("192.0.2.1")
    if not address or address.startswith("127."):
        pytest.skip("this machine has no default route with an address of its own")
    return address


def others(address: str) -> "list[str]":
    """The node's other addresses a stranger could dial: loopback and every other interface's."""
    return ["127.0.0.1"] + [a for a in local_addresses() if a != address and ":" not in a]


def test_by_default_a_listener_takes_the_routes_address_only():
    address = route_address()
    listener = Listener(env={})
    try:
        assert listener.address == address and listener.info()["addrs"] == [address]
        assert "the default route" in listener.info()["bind"]
        assert arrives(listener, address)
        for other in others(address):
            assert not arrives(listener, other), other  # refused: nothing of the node listens there
    finally:
        listener.close()


def test_the_master_variable_picks_the_route_toward_it_and_loopback_falls_back_to_every_address():
    address = route_address()
    assert listen_address({"MASTER_ADDR": address})[0] == address
    chosen, why = listen_address({"NODEWEAVE_MASTER_ADDR": "127.0.0.1", "MASTER_ADDR": address})
    assert chosen is None and "NODEWEAVE_MASTER_ADDR" in why and "127.0.0.1" in why


def test_an_explicit_address_is_the_one_listened_on():
    listener = Listener(env={"NODEWEAVE_SYNC_BIND": "127.0.0.2"})
    try:
        assert listener.info()["addrs"] == ["127.0.0.2"] and "NODEWEAVE_SYNC_BIND" in listener.why
        assert arrives(listener, "127.0.0.2") and not arrives(listener, "127.0.0.1")
    finally:
        listener.close()


def test_a_network_picks_the_nodes_own_address_inside_it():
    address = route_address()
    network = ".".join(address.split(".")[:3]) + ".0/24"
    listener = Listener(env={"NODEWEAVE_SYNC_BIND": network, "MASTER_ADDR": "127.0.0.1"})
    try:
        assert listener.address == address and arrives(listener, address)
        for other in others(address):
            assert not arrives(listener, other), other
    finally:
        listener.close()


def test_any_listens_everywhere():
    listener = Listener(env={"NODEWEAVE_SYNC_BIND": "any"})
    try:
        assert listener.address is None
        assert arrives(listener, "127.0.0.1") and arrives(listener, "127.0.0.3")
    finally:
        listener.close()


@pytest.mark.parametrize("setting, says", [
    ("eth0", "is not an address or a network"),
    ("10.254.254.254", "no address of this node"),
    ("10.254.0.0/16", "no address of this node"),
    ("10.0.0.0/40", "is not an address or a network"),
])
def test_a_bad_setting_is_named_with_what_is_accepted(setting, says):
    with pytest.raises(ValueError) as caught:
        Listener(env={"NODEWEAVE_SYNC_BIND": setting})
    text = str(caught.value)
    assert f"NODEWEAVE_SYNC_BIND={setting!r}" in text and says in text and "accepted: route (default), any" in text


def test_a_resident_agent_listens_on_the_same_one_address(tmp_path):
    """The resident outlives its exec, so it is started as a sync would start it, then stopped by its pid."""
    program = ("import json; from nodeweave.sync.node.agent import session; "
               "from nodeweave.sync.node.resident import ensure; print(json.dumps(ensure('p1', 30, session)))")
    env = {**os.environ, "TMPDIR": str(tmp_path), "NODEWEAVE_SYNC_BIND": "127.0.0.2"}
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    state = json.loads((tmp_path / f"nodeweave-sync-{os.getuid()}" / "resident.json").read_text())
    try:
        assert info["addrs"] == ["127.0.0.2"]
        assert reaches("127.0.0.2", info["port"]) and not reaches("127.0.0.1", info["port"])
    finally:
        os.kill(int(state["pid"]), signal.SIGTERM)
        time.sleep(0.1)
