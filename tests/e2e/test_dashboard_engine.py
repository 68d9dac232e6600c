"""``nodeweave dashboard`` and ``nodeweave top`` on a job ``nodeweave up`` runs in real podman containers.

tests/test_dashboard.py drives the page from jobs of entrypoints on loopback, read through ``--url`` or an
exec channel that is this machine; here nothing stands in: ``nodeweave up --run`` starts two training
containers and a spare (recovery on, tests/e2e/workspace/resumable.py saving a checkpoint every 5 steps),
``nodeweave dashboard`` and ``nodeweave top`` find node 0 as every verb does and ask it through the engine's
exec channel (``podman exec ... nodeweave-entrypoint --node live``), and Debian's headless Chromium holds the
page open (tests/cdp.py) while ``podman kill`` takes node 1's container away: the page shows generation 1,
the fault on node 1 and node 1 left out. A screenshot of each state is kept in the test's folder (or
``$NODEWEAVE_DASHBOARD_SHOTS``). Generation 0 holds at its last step (resumable.py ``--hold``) until the kill,
so however long the browser's pictures take on a loaded machine, there is a generation 0 to end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from cdp import Browser
from cluster_harness import nodeweave, start, wait_until
from e2e_harness import prepare_workdir

pytestmark = pytest.mark.engine

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
NAME = "e2e-dash"
SPEC = f"""name: {NAME}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: 2
gpus_per_node: 1
launcher: {{script: resumable.py, args: ["--steps", "400", "--interval", "0.3", "--save-every", "5",
           "--fault-node", "none", "--hold", "0:399"], wait_timeout: 120, stall_warn: 3, stall_timeout: 8}}
env: {{OMP_NUM_THREADS: "1"}}
cache: {{host_path: ./cache}}
recovery: {{enabled: true, spares: 1, checkpoint_dir: checkpoints}}
"""


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("NODEWEAVE_DASHBOARD_SHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _state(url: str) -> dict:
    with urllib.request.urlopen(url + "state.json", timeout=10) as answer:
        return json.loads(answer.read())


def _stepping(url: str):
    """The dashboard's document once node 0 shows all three nodes and both ranks past their first collectives."""
    live = _state(url).get("live") or {}
    ranks = [r for r in live.get("ranks") or [] if (r.get("seq") or 0) > 0]
    return live if len(live.get("nodes") or []) == 3 and len(ranks) == 2 else None


def test_the_dashboard_and_top_read_a_podman_job_and_show_a_killed_container_as_the_next_generation(
        engine, cpu_image, tmp_path):
    if engine.kind != "podman":
        pytest.skip("the local cluster is podman-compose's")
    if CHROMIUM is None:
        pytest.skip("Chromium not installed (Debian: apt-get install chromium)")
    spec_path = prepare_workdir(tmp_path, SPEC)
    (tmp_path / "checkpoints").mkdir(mode=0o777)
    (tmp_path / "checkpoints").chmod(0o777)  # the image's uid 1000 saves there
    nodeweave(spec_path, "down", timeout=300)  # leftovers of an interrupted run
    dashboard = browser = None
    try:
        nodeweave(spec_path, "up", "--run", "--image", cpu_image, "--timeout", "180", check=0, timeout=400)
        # the dashboard asks node 0 before it serves and says "no live picture" while its metrics are not up yet
        wait_until(lambda: nodeweave(spec_path, "top", "--once", timeout=120).returncode == 0,
                   "node 0's picture (top --once)", timeout=180, every=2)
        dashboard = start(spec_path, "dashboard", "--port", "0", "--interval", "1")
        line = dashboard.stdout.readline()
        found = re.search(r"dashboard at (http://127\.0\.0\.1:\d+/) ", line)
        assert found, line + (dashboard.stdout.read() if dashboard.poll() is not None else "")
        url = found.group(1)
        live = wait_until(lambda: _stepping(url), "node 0's picture through podman exec: 3 nodes, 2 ranks moving",
                          timeout=240, every=1)
        assert (live.get("book") or {}).get("generation", 0) == 0, live

        browser = Browser(CHROMIUM, tmp_path / "profile", url)
        wait_until(lambda: browser.evaluate("document.querySelectorAll('tr.node').length") == 3, "the page's nodes",
                   timeout=60)
        assert browser.evaluate("document.body.dataset.generation") == "0"
        browser.screenshot(_shots(tmp_path) / "dashboard-engine-running.png")

        top = nodeweave(spec_path, "top", "--once", check=0, timeout=120).stdout
        assert re.search(r"generation\s*0", top) and all(f"{NAME}-{i}" in top for i in range(3)), top

        subprocess.run([engine.kind, "kill", f"{NAME}-1"], capture_output=True, timeout=60, check=True)
        killed = time.monotonic()
        (tmp_path / "release-0-399").touch()  # generation 0 held at its last step until the kill, if it got there
        wait_until(lambda: browser.evaluate("document.body.dataset.generation") == "1",
                   "the page at generation 1 after node 1's container was killed", timeout=180, every=0.5)
        print(f"the page showed generation 1 {time.monotonic() - killed:.1f} s after `podman kill`")
        page = browser.evaluate("document.documentElement.outerHTML")
        assert re.search(r'class="bad fault-text">fault: node 1, \w+: ', page), page
        assert re.search(r'id="left-out">left out: node 1 \(', page), page
        assert 'id="members">training in generation 1: node 0, node 2<' in page, page
        browser.screenshot(_shots(tmp_path) / "dashboard-engine-recovered.png")
    finally:
        if browser is not None:
            browser.close()
        if dashboard is not None:
            os.killpg(dashboard.pid, signal.SIGINT)
            try:
                dashboard.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(dashboard.pid, signal.SIGKILL)
        nodeweave(spec_path, "down", timeout=300)
