"""``nodeweave check`` on a real 4-node local cluster (podman, the cpu image, gloo), healthy and broken.

The nodes hold (``nodeweave up --hold``); every check runs the worker through
each node's entrypoint. Faults are made from the host, one at a time, and
undone after: a token-bucket qdisc on one node's veth, a quarter of the
CPUs (``podman update --cpus``) on another, a 1 MiB /dev/shm on a third.
Each must be named exactly (that node, that cause, nothing else); the
healthy cluster must pass every time (``NODEWEAVE_CHECK_HEALTHY_RUNS``,
default 3; the evidence in docs/check.md is 10).
"""

from __future__ import annotations

import json
import os

import pytest

from check_faults import limit_cpus, shrink_shm, throttle_link, undo
from cluster_harness import nodeweave, workdir

pytestmark = [pytest.mark.engine, pytest.mark.slow]
NAME = "nwchk"
HEALTHY_RUNS = int(os.environ.get("NODEWEAVE_CHECK_HEALTHY_RUNS", "3"))


@pytest.fixture(scope="module")
def four(engine, cpu_image, tmp_path_factory):
    if engine.kind != "podman":
        pytest.skip("the local cluster tests drive podman-compose")
    spec_path = workdir(tmp_path_factory.mktemp("check"), NAME, 4)
    nodeweave(spec_path, "down", timeout=300)
    try:
        out = nodeweave(spec_path, "up", "--hold", "--image", cpu_image, "--timeout", "240", check=0, timeout=500)
        assert "4 node(s) up in hold mode" in out.stdout, out.stdout
        yield spec_path
    finally:
        nodeweave(spec_path, "down", timeout=300)


def check(spec_path, expect=None) -> dict:
    out = nodeweave(spec_path, "check", "--json", timeout=400)
    assert out.stdout.strip(), f"no JSON; exit {out.returncode}\n{out.stderr}"
    report = json.loads(out.stdout)
    if expect is not None:
        assert out.returncode == expect, f"exit {out.returncode}, not {expect}:\n{out.stderr}"
    return report


def named(report) -> set:
    return {f["subject"] for f in report["findings"]}


def test_healthy_cluster_passes_every_time(four):
    for attempt in range(HEALTHY_RUNS):
        report = check(four)
        assert report["healthy"] and report["exit_code"] == 0, (attempt, report["findings"])
        document = report["check"]
        assert document["world"] == 4 and document["backend"] == "gloo"
        assert len(document["rounds"]) == 2 and all(len(r) == 2 for r in document["rounds"])
        assert document["allreduce"]["correct"]
        assert len({n["facts"]["cpus_effective"] for n in document["nodes"]}) == 1, document["nodes"]
    text = (next((four.parent / "runs").glob(f"*-{NAME}-check")) / "check.txt").read_text()
    assert "healthy: nothing named" in text and "from \\ to" in text


def test_throttled_link_names_that_node(four):
    restore = throttle_link(f"{NAME}-1")
    try:
        report = check(four, expect=5)
    finally:
        undo(restore)
    assert named(report) == {"node-1"}, report["findings"]
    finding = report["findings"][0]
    assert finding["metric"] == "link_gbps" and "traffic into it" in finding["text"], finding


def test_quarter_of_the_cpus_names_that_node(four):
    restore = limit_cpus(f"{NAME}-2", 0.5)
    try:
        report = check(four, expect=5)
    finally:
        undo(restore)
    assert named(report) == {"node-2"}, report["findings"]
    metrics = {f["metric"] for f in report["findings"]}
    assert "cpus_effective" in metrics, report["findings"]
    assert metrics <= {"cpus_effective", "cpu_gflops"}, report["findings"]


def test_tiny_shm_names_that_node(four):
    restore = shrink_shm(f"{NAME}-3")
    try:
        report = check(four, expect=5)
    finally:
        undo(restore)
    assert named(report) == {"node-3"}, report["findings"]
    assert [f["metric"] for f in report["findings"]] == ["shm_bytes"], report["findings"]
    assert "1 MiB" in report["findings"][0]["text"]


def test_a_node_container_reads_the_kernel_log_only_as_the_host_allows(four):
    """The Xid reader in a node as podman starts it (no CAP_SYSLOG, no /dev/kmsg): with the host's
    kernel.dmesg_restrict at 1 the node says it cannot read the log and why, never "no events"."""
    import subprocess
    from pathlib import Path

    probe = ("import json; from nodeweave.entrypoint.detection.xid import node_xids; "
             "print(json.dumps(node_xids(None)))")
    out = subprocess.run(["podman", "exec", f"{NAME}-0", "python3", "-c", probe], capture_output=True, text=True,
                         timeout=60)
    xid = json.loads(out.stdout)
    if Path("/proc/sys/kernel/dmesg_restrict").read_text().strip() == "1":
        assert not xid["readable"] and xid["source"] is None, xid
        assert any("Operation not permitted" in e for e in xid["errors"]), xid
    else:  # an unrestricted host lets dmesg read it
        assert xid["readable"] and xid["source"] in ("/dev/kmsg", "dmesg"), xid
