"""``nodeweave top`` on a real simulated job: node 0's /status.json drawn, straight from its port and through the
entrypoint's ``--node live`` action (what the exec channel runs in node 0)."""

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest
from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

from nodeweave.cluster.top import ask_live, picture
from stall_harness import start, stop
from test_metrics_prometheus import free_port

pytest.importorskip("torch")
SRC = Path(__file__).resolve().parents[1] / "src"


def drawn(live):
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(picture(live))
    return console.file.getvalue()


def test_top_draws_every_node_and_rank_of_a_running_job(tmp_path):
    port = free_port()
    nodes = start(tmp_path, "torchrun", ["--steps", "2000", "--interval", "0.2"],
                  env={"NODEWEAVE_METRICS_PORT": str(port), "NODEWEAVE_STALL_WARN": "30"})
    try:
        deadline, live = time.monotonic() + 240, None
        while time.monotonic() < deadline:
            live, why = ask_live(url=f"http://127.0.0.1:{port}")
            if live and len(live["ranks"]) == 2 and all(r["seq"] for r in live["ranks"]):
                break
            time.sleep(1)
        assert live and len(live["ranks"]) == 2, (live, [n.text() for n in nodes])
        text = drawn(live)
        assert "job nodeweave  generation 0  restarts 0" in text and "moving" in text, text
        assert [n["node"] for n in live["nodes"]] == [0, 1] and "hub" in text and "member" in text, text
        assert "goodput" in text and "startup" in text, text
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NODEWEAVE_METRICS_PORT": str(port)}
        out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "live"], env=env,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        answer = json.loads(out.stdout)
        assert answer["live"]["schema"] == "nodeweave.live/1" and len(answer["live"]["nodes"]) == 2
        cli = cli_run.run([*cli_run.NODEWEAVE, "top", "--url", f"http://127.0.0.1:{port}",
                              "--once"], env=dict(env, COLUMNS="160"), timeout=120,
                             cwd=tmp_path)
        assert cli.returncode == 0 and "ranks" in cli.stdout and "heartbeat" in cli.stdout, cli.stdout + cli.stderr
    finally:
        stop(nodes)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NODEWEAVE_METRICS_PORT": str(port)}
    out = cli_run.run([*cli_run.ENTRYPOINT, "--node", "live"], env=env,
                         timeout=60)
    assert out.returncode == 1 and "nothing answers at http://127.0.0.1:" in json.loads(out.stdout)["error"]
