"""The entrypoint's rank-0 self-check, without an engine (test_faults.py has the two-container case)."""

import os
import socket
import subprocess
import sys

from free_ports import free_port_pair


def _start_as_rank_0_of(master_addr, master_port, cwd):
    (cwd / "train.py").write_text("")  # the training script is there (the entrypoint checks that first)
    return subprocess.run([sys.executable, "-m", "nodeweave.entrypoint", "--launcher", "torchrun", "--nnodes", "2",
                           "--node-rank", "0", "--master-addr", master_addr, "--master-port", str(master_port),
                           "--", "train.py"], capture_output=True, text=True, timeout=60, cwd=cwd,
                          env=dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}"))
    # the venv's launcher on PATH, as a node has it: without, the start check stops at 127 first (walk7 B11)


def test_entrypoint_refuses_rank_0_when_master_is_another_host(tmp_path):
    """Two nodes claiming rank 0: the one MASTER_ADDR does not name stops before the launcher hangs.
    192.0.2.1 (TEST-NET-1) is not on this machine; nothing is sent to it. The port is a free one of this
    test's (free_ports.py), not the default 29500 another test or job on the machine may hold."""
    out = _start_as_rank_0_of("192.0.2.1", free_port_pair(), tmp_path)
    assert out.returncode == 3, out.stderr
    assert "rank 0" in out.stderr and "192.0.2.1" in out.stderr and "not an address of this node" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_rank_0_refusal_comes_before_node_0_listens(tmp_path):
    """The wrong rank 0 refuses without opening the check-in exchange (master port + 1): with that port
    held by someone else the answer is still the rank-0 refusal (exit 3), not 'cannot open the check-in
    exchange' (exit 4), which would send the user after the port instead of the duplicate rank."""
    port = free_port_pair()
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("", port + 1))
        held.listen()
        out = _start_as_rank_0_of("192.0.2.1", port, tmp_path)
    assert out.returncode == 3, out.stderr
    assert "not an address of this node" in out.stderr and "check-in exchange" not in out.stderr, out.stderr
