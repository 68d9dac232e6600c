"""The tests that run every node of a job here hold on any machine: a VM with NICs of its own, or a container with a
network namespace of its own (only virtual interfaces), where the entrypoint refuses a loopback master (issue 43:
a clean container's CI failed 59 process tests on that refusal alone). They start their nodes through
benchmarks/one_machine.py, which says what one machine running every node needs."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from one_machine import LOOPBACK, master_address, one_machine_env, own_address

TESTS = Path(__file__).resolve().parent
CONTAINER_MARKERS = ("/run/.containerenv", "/.dockerenv")


def test_the_allow_is_added_to_what_a_node_allows_already():
    assert one_machine_env()["NODEWEAVE_EXCHANGE_ALLOW"] == "address"
    assert one_machine_env({"NODEWEAVE_EXCHANGE_ALLOW": "nccl", "X": "1"}) == {
        "NODEWEAVE_EXCHANGE_ALLOW": "nccl,address", "X": "1"}
    assert one_machine_env({"NODEWEAVE_EXCHANGE_ALLOW": "address,torch"})["NODEWEAVE_EXCHANGE_ALLOW"] == "address,torch"


def test_with_the_exchange_off_the_allow_is_left_out_and_the_master_is_this_machines_own_address():
    """The entrypoint refuses NODEWEAVE_EXCHANGE_ALLOW with the exchange off (it does nothing then)."""
    off = {"NODEWEAVE_EXCHANGE": "off"}
    assert one_machine_env(off) == off
    assert master_address(off) == own_address() and master_address({}) == LOOPBACK


# The nodes' run inside a network namespace of its own: lo brought up (SIOCSIFFLAGS, no `ip` needed), then two
# entrypoints through tests/test_exchange_processes.py's start_nodes, as the process tests start theirs.
IN_NAMESPACE = """
import fcntl, json, socket, struct, sys
from pathlib import Path
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sh", fcntl.ioctl(sock, 0x8913, struct.pack("16sh", b"lo", 0)))[1]
fcntl.ioctl(sock, 0x8914, struct.pack("16sh", b"lo", flags | 1))
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from test_exchange_processes import finish, start_nodes
procs = start_nodes(Path(sys.argv[3]), 2, ["sh", "-c", "echo $NODE_RANK"])
print(json.dumps([(code, out, err[-2000:]) for code, out, err in finish(procs)]))
"""


def _own_namespace_allowed():
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-nm", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not any(os.path.exists(m) for m in CONTAINER_MARKERS),
                    reason="not in a container (no /run/.containerenv or /.dockerenv): the entrypoint refuses a "
                           "loopback master only in one")
@pytest.mark.skipif(not _own_namespace_allowed(), reason="no `unshare -nm` here (root or user namespaces)")
def test_the_process_tests_nodes_check_in_from_a_network_namespace_of_their_own(tmp_path):
    """Two entrypoints as the process tests start them, in a new network namespace (lo only; sysfs mounted again
    so /sys/class/net lists it): what a CI runner that is a container of its own gives them."""
    out = subprocess.run(["unshare", "-nm", "sh", "-c", 'mount -t sysfs sysfs /sys && exec "$@"', "sh",
                          sys.executable, "-c", IN_NAMESPACE, str(TESTS), str(TESTS.parent / "benchmarks"),
                          str(tmp_path)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(TESTS.parent / "src")})
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.splitlines()[-1])
    assert [(code, stdout.strip()) for code, stdout, _ in results] == [(0, "0"), (0, "1")], results
    assert all("check-in: 2 node(s) agree" in err for _, _, err in results), results
