"""``nodeweave dashboard``: its arithmetic, its refusals, and the page in a real headless browser.

The browser tests start real simulated jobs (two entrypoints on loopback under torchrun: tests/stall_harness.py,
tests/recovery_harness.py), run ``nodeweave dashboard --url`` against node 0's metrics port as a user would, and
load the page in Debian's headless Chromium: with ``--dump-dom``, or held open and asked over the DevTools
protocol (tests/cdp.py) to watch one page follow a fault. The page draws what its own JavaScript fetched
(``/state.json``; the HTML the server sends holds no data). A screenshot of each state is kept in the test's
folder, or in ``$NODEWEAVE_DASHBOARD_SHOTS`` when set (docs/images/ holds the ones docs/observability.md shows).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import cli_run
import pytest

from cdp import Browser
from free_ports import free_port
from nodeweave.cluster.dashboard import History, heat_map, run_state, state
from nodeweave.entrypoint.metrics.heat import HeatSummary
from cli_run import home_beside  # noqa: E402 - a home beside the project (walk9 A27)

SRC = Path(__file__).resolve().parents[1] / "src"
CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (Debian: apt-get install chromium)")


# --- the arithmetic -----------------------------------------------------------------------------------------

def reading(now, ranks, generation=0):
    """``ranks``: (node, rank, collectives, seconds outside them[, straggler ratio: 1 unless given])."""
    return (now, {"now": now, "book": {"generation": generation},
                  "ranks": [{"node": n, "rank": r, "seq": seq, "outside_s": out,
                             "straggler_ratio": (ratio or [1.0])[0]} for n, r, seq, out, *ratio in ranks]})


def test_the_heat_map_marks_the_rank_the_straggler_column_finds_slower():
    """A cell is the rank's straggler ratio at the reading (the Ranks table's), in ms of the span's median own work
    per collective (walk18b B16: the span's own work alone disagreed with the table)."""
    readings = [reading(0, [(0, 0, 0, 0.0), (1, 1, 0, 0.0)]),
                reading(1, [(0, 0, 5, 1.0), (1, 1, 5, 1.5, 1.5)]),
                reading(2, [(0, 0, 10, 2.0), (1, 1, 10, 2.5)])]
    heat = heat_map(readings)
    assert heat["ranks"] == ["0/0", "1/1"] and len(heat["cells"]) == 2
    first = heat["cells"][0]
    assert first[0] == {"ms": 200.0, "ratio": 1.0} and first[1] == {"ms": 300.0, "ratio": 1.5}
    assert heat["cells"][1][1]["ratio"] == 1.0  # the next span: no longer slower
    assert heat["straggler_ratio"] == 1.1


def test_the_heat_map_never_spans_two_generations_and_skips_a_rank_that_made_no_collective():
    readings = [reading(0, [(0, 0, 50, 9.0), (1, 1, 50, 9.0)]),
                reading(1, [(0, 0, 2, 0.4), (1, 1, 2, 0.4)], generation=1),  # counts from 0 again
                reading(2, [(0, 0, 4, 0.8), (1, 1, 2, 0.9)], generation=1)]
    heat = heat_map(readings)
    assert heat["generations"] == [1] and heat["cells"][0][1] is None and heat["cells"][0][0]["ms"] == 200.0


def test_history_keeps_one_copy_of_a_picture_node_0_served_twice_and_says_when_it_is_silent():
    history = History()
    history.add({"now": 5.0}, at=10.0)
    history.add({"now": 5.0}, at=11.0)  # node 0's 2 s cache
    history.add(None, "127.0.0.1:9: connection refused", at=12.0)
    readings, asked = history.snapshot()
    assert [r[0] for r in readings] == [10.0]
    assert asked == {"answering": False, "why": "127.0.0.1:9: connection refused", "asked_at": 12.0}
    document = state(readings, asked, "http://127.0.0.1:9")
    assert document["answering"] is False and document["live"] == {"now": 5.0}
    json.dumps(state([(1.0, {"now": 1.0, "steps_per_s": float("nan")})], asked, "x"), allow_nan=False)


def test_a_finished_runs_folder_gives_the_same_document_with_its_generations_and_goodput(tmp_path):
    timeline = {"schema": "nodeweave.goodput/1", "launched": 100.0, "ended": 160.0, "job": "j", "generations": [
        {"generation": 0, "began": 100.0, "first": 105.0, "last": 120.0, "ended": None, "stalls": [], "steps": [],
         "fault": {"at": 121.0, "why": "lost"}, "resumed_step": None},
        {"generation": 1, "began": 125.0, "first": 130.0, "last": 158.0, "ended": 159.0, "stalls": [], "steps": [],
         "fault": None, "resumed_step": 10}]}
    data = {"job": "j", "exit_code": 0, "seconds": 60, "nodes": [{"node": "node-0", "exit_code": 0},
                                                                 {"node": "node-1", "exit_code": 137}]}
    document = run_state(tmp_path, data, timeline, {"generation": 1, "restarts": 1, "left_out": {"1": 1}})
    assert document["mode"] == "run" and document["live"]["goodput"]["wall_s"] == 60.0
    assert [n["state"] for n in document["live"]["nodes"]] == ["finished", "failed (exit 137)"]


# --- the command's refusals ---------------------------------------------------------------------------------

def cli(*args, cwd, timeout=60):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "HOME": home_beside(cwd), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "nodeweave.cli", "dashboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, words", [
    (["--port", "70000", "--url", "http://127.0.0.1:9"], "--port"),
    (["--run", "last", "--url", "http://127.0.0.1:9"], "--url does nothing with --run"),
    (["--runs-dir", ".", "--url", "http://127.0.0.1:9"], "--runs-dir does nothing without --run"),
    (["--bind", " ", "--url", "http://127.0.0.1:9"], "'--bind': ' ' is empty"),
    (["--run", "nosuchrun", "--runs-dir", "."], "no run 'nosuchrun'"),
    (["--bind", "256.1.1.1", "--url", "http://127.0.0.1:9"], "--bind 256.1.1.1 --port 0: cannot listen there"),
    (["--url", "127.0.0.1:9464"], "--url 127.0.0.1:9464: not an http(s) URL with a host"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("verb", ["top", "dashboard"])
def test_a_url_that_cannot_be_node_0s_port_is_bad_input_for_top_and_the_dashboard(tmp_path, verb):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "HOME": home_beside(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "nodeweave.cli", verb, "--url", "gpu01:9464"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "nodeweave: error: --url gpu01:9464: not an http(s) URL with a host; accepted: node 0's metrics port as a "
        "URL, e.g. http://127.0.0.1:9464 or http://[fd00::1]:9464"], done.stderr


def test_a_port_already_taken_is_refused_in_one_line_with_exit_2(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli("--port", str(port), "--url", "http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == 2 and f"--port {port}: cannot listen there" in done.stderr, done.stderr
    assert "--port 0 picks one" in done.stderr and len(done.stderr.strip().splitlines()) == 1


# --- the page in a real browser ---------------------------------------------------------------------------

def shots(tmp_path):
    folder = Path(os.environ.get("NODEWEAVE_DASHBOARD_SHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def browse(url, tmp_path, screenshot=None, budget_ms=4000):
    """The page's DOM once its JavaScript ran ``budget_ms`` of virtual time (fetches are waited for); with
    ``screenshot``, a PNG of it too."""
    base = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'chromium-profile'}", f"--virtual-time-budget={budget_ms}"]
    done = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "<body" in done.stdout, done.stderr[-2000:]
    if screenshot is not None:
        taken = subprocess.run(base + ["--window-size=1280,1500", f"--screenshot={screenshot}", url],
                               capture_output=True, text=True, timeout=120)
        assert taken.returncode == 0 and Path(screenshot).stat().st_size > 10_000, taken.stderr[-2000:]
    return done.stdout


def start_dashboard(tmp_path, metrics_port, interval=0.5):
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "HOME": home_beside(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "nodeweave.cli", "dashboard", "--url",
                             f"http://127.0.0.1:{metrics_port}", "--port", "0", "--interval", str(interval)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=cli_run.ctrl_c_reaches_it)
    line = proc.stdout.readline()
    found = re.search(r"dashboard at (http://127\.0\.0\.1:\d+/) ", line)
    assert found, line + proc.stderr.read() if proc.poll() is not None else line
    return proc, found.group(1)


def stop_dashboard(proc):
    proc.send_signal(signal.SIGINT)
    try:
        assert proc.wait(20) == 130, proc.stderr.read()  # Ctrl-C: 130, as every verb's (walk9 A17)
    finally:
        if proc.poll() is None:
            proc.kill()


def dashboard_state(url):
    with urllib.request.urlopen(url + "state.json", timeout=5) as answer:
        return json.loads(answer.read())


def wait_until(what, limit, pause=0.5):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(pause)
    return None


@needs_chromium
def test_the_page_shows_every_node_and_rank_of_a_running_job_and_marks_the_straggler(tmp_path):
    pytest.importorskip("torch")
    from stall_harness import start, stop

    metrics = free_port()
    nodes = start(tmp_path, "torchrun", ["--steps", "3000", "--interval", "0", "--work", "0.15", "--slow-rank", "1",
                                         "--slow-factor", "1.8"],
                  env={"NODEWEAVE_METRICS_PORT": str(metrics), "NODEWEAVE_STALL_WARN": "60"})
    proc = None
    try:
        proc, url = start_dashboard(tmp_path, metrics)

        def straggling():
            doc = dashboard_state(url)
            heat = doc["heat"]
            if heat["ranks"] != ["0/0", "1/1"] or len(heat["cells"]) < 3:
                return None
            return doc if all(c[1] and c[1]["ratio"] >= 1.1 for c in heat["cells"][-2:]) else None

        doc = wait_until(straggling, 240)
        assert doc, (dashboard_state(url), [n.text() for n in nodes])
        page = browse(url, tmp_path, shots(tmp_path) / "dashboard-running.png")
        assert re.search(r'<tr class="node state-running" data-node="0"', page), page
        assert re.search(r'<tr class="node state-running" data-node="1"', page), page
        assert 'data-rank="0/0"' in page and 'data-rank="1/1"' in page, page
        rows = dict(re.findall(r'<tr data-rank="(\d+/\d+)">(.*?)</tr>', page))  # the heat map's rows
        assert set(rows) == {"0/0", "1/1"}, page
        assert 'class="cell straggler"' in rows["1/1"] and 'class="cell straggler"' not in rows["0/0"], rows
        assert 'id="stall">moving' in page and "goodput " in page and "generation 0" in page, page
        polls = int(re.search(r'<body data-polls="(\d+)"', page).group(1))
        assert polls >= 2, page  # the page fetched /state.json again and drew it: it follows the job

        # Without --url the dashboard asks node 0 through the node's exec channel, as top does: the same readings
        from dataclasses import dataclass

        from nodeweave.cluster.base import Node
        from nodeweave.cluster.dashboard import poll
        from nodeweave.cluster.top import ask_live
        from nodeweave.remote.base import Remote

        @dataclass(frozen=True)
        class Here(Remote):  # a node that is this machine: its exec channel runs the command as it is
            def exec_argv(self, argv, stdin=True, tty=False):
                return list(argv)

        node_0 = Node(0, Here("here"), env=(("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}"),
                                            ("PYTHONPATH", str(SRC)), ("NODEWEAVE_METRICS_PORT", str(metrics))))
        history, done = History(), threading.Event()
        poll(history, lambda: ask_live(node_0), 0.5, done)
        through = wait_until(lambda: (lambda r: r if heat_map(r[0])["cells"] else None)(history.snapshot()), 60)
        done.set()
        assert through, history.snapshot()
        document = state(*through, node_0.name)
        assert [r["rank"] for r in document["live"]["ranks"]] == [0, 1] and document["answering"], document
        assert document["heat"]["ranks"] == ["0/0", "1/1"], document["heat"]

        # What node 0 keeps for the run's folder (heat.json beside goodput.json): the same straggler, after the job
        kept = tmp_path / "n0" / "nodeweave" / "jobs"  # the job's folder (runstate.job_dir)
        summary = wait_until(lambda: next((json.loads(p.read_text()) for p in kept.glob("*/heat.json")
                                           if len(json.loads(p.read_text())["columns"]) >= 2), None), 60)
        assert summary, kept
        assert all(c["cells"]["1/1"] >= 1.1 > c["cells"]["0/0"] for c in summary["columns"][1:]), summary
        shown = run_state(tmp_path, {"job": "j"}, None, None, summary)["heat"]
        assert shown["ranks"] == ["0/0", "1/1"] and len(shown["cells"]) == len(summary["columns"]), shown
    finally:
        if proc is not None:
            stop_dashboard(proc)
        stop(nodes)


@needs_chromium
def test_the_page_shows_a_fault_the_left_out_node_and_the_resumed_checkpoint_within_2_s(tmp_path):
    pytest.importorskip("torch")
    from recovery_harness import start, stop

    metrics = free_port()
    nodes = start(tmp_path, ["--steps", "400", "--interval", "0.2", "--save-every", "5", "--fault", "kill",
                             "--fault-node", "1", "--fault-step", "12"], spares=1,
                  env={"NODEWEAVE_METRICS_PORT": str(metrics), "NODEWEAVE_STALL_WARN": "60"})
    proc = browser = None
    try:
        proc, url = start_dashboard(tmp_path, metrics, interval=1.0)  # the default: node 0 read every second
        assert wait_until(lambda: (dashboard_state(url)["live"] or {}).get("nodes"), 240), dashboard_state(url)
        browser = Browser(CHROMIUM, tmp_path / "held-profile", url)  # one page, held open while the job goes on
        assert wait_until(lambda: browser.evaluate("document.querySelectorAll('tr.node').length") >= 2, 60)
        assert browser.evaluate("document.body.dataset.generation") == "0"
        browser.screenshot(shots(tmp_path) / "dashboard-starting.png")

        def node_0_says_generation_1():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/status.json", timeout=5) as answer:
                    live = json.loads(answer.read())
            except OSError:
                return None
            return time.monotonic() if (live.get("book") or {}).get("generation") == 1 else None

        seen_by_node_0 = wait_until(node_0_says_generation_1, 240, pause=0.05)
        assert seen_by_node_0, [n.text() for n in nodes]
        shown = wait_until(lambda: time.monotonic() if browser.evaluate("document.body.dataset.generation") == "1"
                           else None, 30, pause=0.05)
        assert shown, dashboard_state(url)
        print(f"generation 1: the open page showed it {shown - seen_by_node_0:.2f} s after node 0's /status.json did")
        assert shown - seen_by_node_0 <= 2.0, shown - seen_by_node_0  # the goal: within 2 s
        page = browser.evaluate("document.documentElement.outerHTML")
        assert re.search(r'class="bad fault-text">fault: node 1, \w+: ', page), page
        assert re.search(r'id="left-out">left out: node 1 \(', page), page
        assert "resumed from the checkpoint of step 10" in page, page
        assert re.search(r'data-node="2"', page), page  # the spare that took node 1's place
        assert 'id="members">training in generation 1: node 0, node 2<' in page, page
        time.sleep(4)  # generation 1 under way, for the picture
        browser.screenshot(shots(tmp_path) / "dashboard-recovered.png")
    finally:
        if browser is not None:
            browser.close()
        if proc is not None:
            stop_dashboard(proc)
        stop(nodes)


@needs_chromium
def test_a_finished_runs_folder_is_the_same_page(tmp_path):
    folder = tmp_path / "runs" / "20260101T000000Z-job"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"job": "job", "run_id": folder.name, "started": "x",
                                                 "ended": "y", "seconds": 60, "exit_code": 0, "command": ["t.py"],
                                                 "nodes": [{"node": "node-0", "exit_code": 0},
                                                           {"node": "node-1", "exit_code": 0}]}))
    (folder / "goodput.json").write_text(json.dumps({
        "schema": "nodeweave.goodput/1", "launched": 100.0, "ended": 160.0, "job": "job", "generations": [
            {"generation": 0, "began": 100.0, "first": 105.0, "last": 120.0, "ended": None, "stalls": [],
             "steps": [], "fault": {"at": 121.0, "why": "rank 1 exited 1"}, "resumed_step": None},
            {"generation": 1, "began": 125.0, "first": 130.0, "last": 158.0, "ended": 159.0, "stalls": [],
             "steps": [], "fault": None, "resumed_step": 10, "resume_from": "step-10.pt"}]}))
    (folder / "recovery.json").write_text(json.dumps({
        "generation": 1, "restarts": 1, "left_out": {"1": 1}, "why": {"1": "rank 1 exited 1"}, "spares": [],
        "history": [{"generation": 0, "node": 1, "cause": "crashed", "why": "rank 1 exited 1", "at": 121.0}]}))
    summary = HeatSummary(span_s=5)  # node 0's heat map as its recorder keeps it: rank 1/1 25% slower
    for t in range(105, 121):
        summary.feed(float(t), 0, [{"node": n, "rank": n, "seq": 10 * t, "outside_s": t * (1.25 if n else 1.0)}
                                   for n in (0, 1)])
    (folder / "heat.json").write_text(json.dumps(summary.document()))
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "HOME": home_beside(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "nodeweave.cli", "dashboard", "--run", "last", "--runs-dir",
                             str(tmp_path / "runs")], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=cli_run.ctrl_c_reaches_it)
    try:
        url = re.search(r"(http://127\.0\.0\.1:\d+/)", proc.stdout.readline()).group(1)
        page = browse(url, tmp_path, shots(tmp_path) / "dashboard-finished-run.png")
    finally:
        stop_dashboard(proc)
    assert "finished run 20260101T000000Z-job" in page and 'data-node="node-1"' in page, page
    assert 'id="goodput-figure">goodput 71.7%' in page, page  # (120-105) + (158-130) = 43 s of training in 60
    assert "fault: node 1, crashed: rank 1 exited 1" in page and "left out: node 1" in page, page
    rows = dict(re.findall(r'<tr data-rank="(\d+/\d+)">(.*?)</tr>', page))  # the heat map from heat.json
    assert set(rows) == {"0/0", "1/1"}, page
    assert rows["1/1"].count('class="cell straggler"') == 3 and "straggler" not in rows["0/0"], rows
    assert "3 spans of up to 5 s from the run's heat.json, 2 of 2 ranks" in page, page
