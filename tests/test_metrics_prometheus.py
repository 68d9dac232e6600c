"""Node 0's /metrics on a real simulated job: promtool reads the output, a real Prometheus scrapes it.

Two real entrypoints on loopback (tests/stall_harness.py) run the e2e all-reduce under torchrun with the stall
watch on; node 0 serves /metrics on a free port. ``promtool check metrics`` (Debian's ``prometheus`` package)
judges the text it serves; then a Prometheus server of the same package, started here on a loopback port with
a throwaway config and storage folder, scrapes node 0 and its HTTP API answers for every rank's collectives.
"""

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from stall_harness import start, stop
from free_ports import free_port

pytest.importorskip("torch")
PROMTOOL, PROMETHEUS = shutil.which("promtool"), shutil.which("prometheus")
needs_prometheus = pytest.mark.skipif(not (PROMTOOL and PROMETHEUS),
                                      reason="promtool/prometheus not installed (Debian: apt-get install prometheus)")


def get(url, timeout=3.0):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.read().decode()


def wait_for(what, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            found = what()
        except OSError as err:
            LAST["error"] = repr(err)
            found = None
        if found:
            return found
        time.sleep(0.5)
    return None


LAST = {}


def scraped(port):
    """Node 0's /metrics once both nodes' ranks show collectives."""
    body = LAST["body"] = get(f"http://127.0.0.1:{port}/metrics")
    rows = [line for line in body.splitlines() if line.startswith("nodeweave_rank_collectives_total{")]
    return body if len(rows) == 2 and all(not line.endswith(" 0") for line in rows) else None


@needs_prometheus
def test_a_real_prometheus_scrapes_node_0_and_promtool_accepts_what_it_serves(tmp_path):
    port = free_port()
    nodes = start(tmp_path, "torchrun", ["--steps", "2000", "--interval", "0.2"],
                  env={"NODEWEAVE_METRICS_PORT": str(port), "NODEWEAVE_STALL_WARN": "30"})
    prometheus = None
    try:
        body = wait_for(lambda: scraped(port), 240)
        assert body, (LAST, [n.text() for n in nodes])
        checked = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr + body
        assert "# TYPE nodeweave_rank_collectives_total counter" in body
        assert 'nodeweave_node_heartbeat_age_seconds{host=' in body and 'node="1"' in body
        assert 'nodeweave_time_seconds{bucket="training"' in body

        web = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                          "scrape_configs:\n"
                          f"  - job_name: nodeweave\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n")
        prometheus = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                       f"--web.listen-address=127.0.0.1:{web}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        def ranks():
            query = urllib.parse.quote("nodeweave_rank_collectives_total > 0")
            answer = json.loads(get(f"http://127.0.0.1:{web}/api/v1/query?query={query}"))
            result = answer["data"]["result"] if answer.get("status") == "success" else []
            return result if len(result) == 2 else None

        result = wait_for(ranks, 60)
        assert result, prometheus.poll()
        assert sorted(r["metric"]["node"] for r in result) == ["0", "1"]
        assert all(r["metric"]["job"] == "nodeweave" and r["metric"]["generation"] == "0" for r in result)
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(20)
        stop(nodes)
