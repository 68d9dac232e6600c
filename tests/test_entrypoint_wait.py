"""A worker waits for the master's port: real listeners on 127.0.0.1."""

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from free_ports import free_port

from nodeweave.entrypoint.errors import EXIT_UNREACHABLE, EntrypointError
from nodeweave.entrypoint.running.wait import wait_for

FIX = Path(__file__).parent / "fixtures" / "synthetic"
SRC = Path(__file__).resolve().parents[1] / "src"
SCRIPT = Path(sys.executable).parent / "nodeweave-entrypoint"
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "nodeweave.entrypoint"]


def listen_later(port, delay):
    ready = threading.Event()

    def serve():
        time.sleep(delay)
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", port))
        srv.listen()
        ready.set()
        srv.settimeout(30)
        try:
            conn, _ = srv.accept()
            conn.close()
        except OSError:
            pass
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return ready


def test_wait_returns_once_a_late_listener_opens():
    port = free_port()
    listen_later(port, 1.2)
    waited = wait_for("127.0.0.1", port, 20, log=lambda t: None, first_delay=0.1)
    assert 1.0 <= waited < 15


def test_wait_deadline_names_host_and_port():
    port = free_port()
    start = time.monotonic()
    with pytest.raises(EntrypointError) as err:
        wait_for("127.0.0.1", port, 1, log=lambda t: None, first_delay=0.1)
    assert err.value.exit_code == EXIT_UNREACHABLE
    assert f"master 127.0.0.1:{port} not reachable after 1s" in str(err.value)
    assert time.monotonic() - start < 5


def test_wait_for_a_name_that_does_not_resolve():
    with pytest.raises(EntrypointError) as err:
        wait_for("nodeweave-no-such-master.invalid", 29500, 1, log=lambda t: None, first_delay=0.1)
    assert "nodeweave-no-such-master.invalid:29500" in str(err.value) and "does not resolve" in str(err.value)


def run_worker(port, timeout):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NODEWEAVE_WAIT_TIMEOUT": str(timeout)}
    return subprocess.run(
        [*ENTRY, "--sysroot", str(FIX / "cpu-only"), "--launcher", "command", "--nnodes", "2", "--node-rank", "1",
         "--master-addr", "127.0.0.1", "--master-port", str(port), "--", "sh", "-c", "echo started"],
        env=env, capture_output=True, text=True, timeout=60)


def test_worker_entrypoint_waits_then_execs():
    port = free_port()
    listen_later(port, 1.5)
    start = time.monotonic()
    out = run_worker(port, 30)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "started\n" and time.monotonic() - start >= 1.4
    assert f"waiting for master 127.0.0.1:{port}" in out.stderr and "accepts connections after" in out.stderr


def test_worker_entrypoint_gives_up_with_exit_4():
    port = free_port()
    out = run_worker(port, 2)
    assert out.returncode == EXIT_UNREACHABLE
    assert f"master 127.0.0.1:{port} not reachable after 2s" in out.stderr
    assert "started" not in out.stdout and "Traceback" not in out.stderr


def test_master_does_not_wait():
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NODEWEAVE_WAIT_TIMEOUT": "1"}
    out = subprocess.run(
        [*ENTRY, "--sysroot", str(FIX / "cpu-only"), "--launcher", "command", "--nnodes", "2", "--node-rank", "0",
         "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--", "true"],
        env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "waiting" not in out.stderr
