"""Every node's GPUs in node 0's /metrics: each node reads its own (nvidia-smi, rocm-smi, AMD's sysfs) and its
beats carry the readings to node 0.

This machine has no GPU: a stand-in ``nvidia-smi`` on each node's PATH answers the query the entrypoint asks
(``--query-gpu=index,utilization.gpu,memory.used,memory.total,power.draw,pci.bus_id --format=csv,noheader,nounits``)
with that node's own figures, and the two simulated nodes (tests/stall_harness.py) are real entrypoints.
"""

import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from nodeweave.entrypoint.detection.gpu_use import parse_nvidia, parse_rocm
from nodeweave.entrypoint.metrics.gpus import Sampler
from stall_harness import start, stop
from test_metrics_prometheus import free_port

FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=index,utilization.gpu,memory.used,memory.total,power.draw,pci.bus_id*)
    echo "0, $FAKE_GPU_UTIL, 2048, 81559, 250.5, 00000000:3B:00.0"
    echo "1, 5, 1024, 81559, 80.25, 00000000:5E:00.0" ;;
  *) echo "unexpected query: $*" >&2; exit 9 ;;
esac
"""


def test_the_vendor_tools_answers_are_read_in_base_units():
    assert parse_nvidia("0, 37, 2048, 81559, 250.5\n1, [N/A], 1, 2, [N/A]\n") == [
        {"index": 0, "util_ratio": 0.37, "mem_used_bytes": 2048 * 2**20, "mem_total_bytes": 81559 * 2**20,
         "power_watts": 250.5},
        {"index": 1, "util_ratio": None, "mem_used_bytes": 2**20, "mem_total_bytes": 2 * 2**20, "power_watts": None}]
    rocm = ('{"card0": {"GPU use (%)": "12", "VRAM Total Memory (B)": "68702699520", '
            '"VRAM Total Used Memory (B)": "1048576", "Average Graphics Package Power (W)": "95.0"}}')
    assert parse_rocm(rocm) == [{"index": 0, "util_ratio": 0.12, "mem_used_bytes": 1048576.0,
                                 "mem_total_bytes": 68702699520.0, "power_watts": 95.0}]


XID_79 = "3,2051,{us},-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"


def test_each_nvidia_gpu_counts_its_xid_events_from_the_kernel_log_as_they_come(tmp_path):
    kmsg = tmp_path / "kmsg"  # a capture of /dev/kmsg, one record a line: the follower reads what is appended
    kmsg.write_text(XID_79.format(us=1_000_000))  # before the sampler: not this job's
    answer = "0, 37, 2048, 81559, 250.5, 00000000:3B:00.0\n1, 5, 1024, 81559, 80.25, 00000000:5E:00.0\n"
    assert parse_nvidia(answer)[0]["pci"] == "00000000:3B:00.0"
    sampler = Sampler(read=lambda: ("nvidia-smi", parse_nvidia(answer)), kmsg=str(kmsg))
    sampler.sample()
    assert [(g["xid_errors"], g["xid_last"]) for g in sampler.latest[1]] == [(0, None), (0, None)]
    with kmsg.open("a") as log:
        log.write(XID_79.format(us=9_000_000) + "6,2052,9100000,-;usb 1-1: new device\n" +
                  XID_79.format(us=9_200_000).replace(": 79,", ": 63,"))
    sampler.sample()
    assert [(g["xid_errors"], g["xid_last"]) for g in sampler.latest[1]] == [(2, 63), (0, None)]


def test_a_node_that_may_not_read_the_kernel_log_shows_no_xid_count_rather_than_a_zero(tmp_path):
    answer = "0, 37, 2048, 81559, 250.5, 00000000:3B:00.0\n"
    sampler = Sampler(read=lambda: ("nvidia-smi", parse_nvidia(answer)), kmsg=str(tmp_path / "absent"))
    sampler.sample()
    assert "xid_errors" not in sampler.latest[1][0] and "No such file" in sampler.xids.error


def kmsg_readable():
    try:
        os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
        return True
    except OSError:
        return False


def test_node_0_serves_every_nodes_gpus_as_their_beats_carry_them(tmp_path):
    pytest.importorskip("torch")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "nvidia-smi").write_text(FAKE_SMI)
    (tools / "nvidia-smi").chmod(0o755)
    port = free_port()
    path = f"{tools}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    nodes = start(tmp_path, "torchrun", ["--steps", "2000", "--interval", "0.2"],
                  env={"NODEWEAVE_METRICS_PORT": str(port), "NODEWEAVE_STALL_WARN": "30", "PATH": path},
                  per_node={0: {"FAKE_GPU_UTIL": "37"}, 1: {"FAKE_GPU_UTIL": "73"}})
    try:
        deadline, rows = time.monotonic() + 240, []
        while time.monotonic() < deadline:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                body = ""
            rows = [line for line in body.splitlines() if line.startswith("nodeweave_gpu_utilization_ratio{")]
            if len(rows) == 4:
                break
            time.sleep(1)
        assert len(rows) == 4, (rows, [n.text() for n in nodes])
        assert any('gpu="0"' in r and 'node="0"' in r and r.endswith(" 0.37") for r in rows), rows
        assert any('gpu="0"' in r and 'node="1"' in r and r.endswith(" 0.73") for r in rows), rows
        assert all('source="nvidia-smi"' in r for r in rows), rows
        assert 'nodeweave_gpu_power_watts{gpu="1",job_name="nodeweave",node="1",source="nvidia-smi"} 80.25' in body
        xids = [line for line in body.splitlines() if line.startswith("nodeweave_gpu_xid_errors_total{")]
        if kmsg_readable():  # as the nodes may (CAP_SYSLOG, or kernel.dmesg_restrict = 0): a count each
            assert len(xids) == 4 and 'nodeweave_gpu_xid_errors_total{gpu="1",job_name="nodeweave",node="1"} 0' in xids
        else:
            assert xids == [], xids
        from test_top import drawn  # what `nodeweave top` draws of them

        from nodeweave.cluster.top import ask_live

        live, why = ask_live(url=f"http://127.0.0.1:{port}")
        text = " ".join(drawn(live).split())
        assert "GPUs" in text and "│ 1 │ 0 │ 73% │ 2.0/80 GiB │ 250 W │" in text and "│ 0 │ 0 │ 37% │ 2.0/80 GiB │ 250 W │" in text, text
    finally:
        stop(nodes)
