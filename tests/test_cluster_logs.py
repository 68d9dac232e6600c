"""``nodeweave logs`` on a run folder: every node's lines prefixed, followed until run.json says it ended."""

from __future__ import annotations

import io
import json
import threading
import time

from rich.console import Console

from nodeweave.cluster.logs import run_logs


def _console():
    return Console(file=io.StringIO(), width=200, color_system=None)


def test_the_nodes_lines_come_prefixed_and_filtered(tmp_path):
    (tmp_path / "node-0.log").write_text("a\nb\n")
    (tmp_path / "node-1.log").write_text("c\nlast line without newline")
    (tmp_path / "run.json").write_text(json.dumps({"ended": "2026-01-01T00:00:00Z"}))
    console = _console()
    run_logs(tmp_path, [], follow=False, console=console)
    lines = console.file.getvalue().splitlines()
    assert lines == ["[node-0] a", "[node-0] b", "[node-1] c", "[node-1] last line without newline"]
    console = _console()
    run_logs(tmp_path, [1], follow=False, console=console)
    assert all(line.startswith("[node-1]") for line in console.file.getvalue().splitlines())


def test_follow_prints_what_arrives_and_stops_when_the_run_ends(tmp_path):
    (tmp_path / "node-0.log").write_text("first\n")
    (tmp_path / "run.json").write_text(json.dumps({"ended": None}))

    def the_run():
        time.sleep(0.5)
        with open(tmp_path / "node-0.log", "a") as log:
            log.write("second\n")
        time.sleep(0.5)
        (tmp_path / "run.json").write_text(json.dumps({"ended": "2026-01-01T00:00:01Z"}))

    writer = threading.Thread(target=the_run)
    writer.start()
    console = _console()
    started = time.monotonic()
    run_logs(tmp_path, [], follow=True, console=console, poll=0.05)
    writer.join()
    assert console.file.getvalue().splitlines() == ["[node-0] first", "[node-0] second"]
    assert 0.9 < time.monotonic() - started < 5
