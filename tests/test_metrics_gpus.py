"""Every node's GPUs in node 0's /metrics: each node reads its own (nvidia-smi, rocm-smi, AMD's sysfs) and its
beats carry the readings to node 0.

This machine has no GPU: a stand-in ``nvidia-smi`` on each node's PATH answers the query the entrypoint asks
(``--query-gpu=index,utilization.gpu,memory.used,memory.total,power.draw --format=csv,noheader,nounits``)
with that node's own figures, and the two simulated nodes (tests/stall_harness.py) are real entrypoints.
"""

import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from nodeweave.entrypoint.metrics.gpus import parse_nvidia, parse_rocm
from stall_harness import start, stop
from test_metrics_prometheus import free_port

FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=index,utilization.gpu,memory.used,memory.total,power.draw*)
    echo "0, $FAKE_GPU_UTIL, 2048, 81559, 250.5"
    echo "1, 5, 1024, 81559, 80.25" ;;
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
        from test_top import drawn  # what `nodeweave top` draws of them

        from nodeweave.cluster.top import ask_live

        live, why = ask_live(url=f"http://127.0.0.1:{port}")
        text = " ".join(drawn(live).split())
        assert "GPUs" in text and "│ 1 │ 0 │ 73% │ 2.0/80 GiB │ 250 W │" in text and "│ 0 │ 0 │ 37% │ 2.0/80 GiB │ 250 W │" in text, text
    finally:
        stop(nodes)
