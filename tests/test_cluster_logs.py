"""``nodeweave logs`` on a run folder: every node's lines prefixed, followed until run.json says it ended."""

from __future__ import annotations

import io
import json
import threading
import time

from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

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
    # line by line in turn, so the same line from every node meets (and collapses) in the view
    assert lines == ["[node-0] a", "[node-1] c", "[node-0] b", "[node-1] last line without newline"]
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


def test_each_line_shows_its_rank_a_rank_filter_keeps_its_own_and_repeats_collapse_into_one(tmp_path):
    """Ranks as the launchers mark them: torchrun's [rank3]: template, PyTorch's own [rank1]: on a warning,
    DeepSpeed's log_dist [Rank 0]; the same line from every rank is printed once, with the count."""
    (tmp_path / "node-0.log").write_text("nodeweave-entrypoint: node 0 of 2\n[rank0]:loss 1.0\n[rank1]:loss 1.0\n"
                                         "[rank0]:epoch done\n[rank0]:epoch done\n"
                                         "[2024-05-02 11:22:33,444] [INFO] [logging.py:96:log_dist] [Rank 0] step=40\n")
    (tmp_path / "node-1.log").write_text("nodeweave-entrypoint: node 1 of 2\n[rank2]:loss 1.0\n[rank3]:loss 1.0\n"
                                         "[rank2]:[W init.cpp:1] a warning\n")
    (tmp_path / "run.json").write_text(json.dumps({"ended": "2026-01-01T00:00:00Z"}))
    console = _console()
    run_logs(tmp_path, [], follow=False, console=console)
    lines = [" ".join(line.split()) for line in console.file.getvalue().splitlines()]
    assert "[x4 node-0,node-1 r0-3] loss 1.0" in lines, lines
    assert lines.count("[node-0 r0] epoch done") == 2, lines  # a rank's own repeat is never hidden
    assert "[node-0 r0] [2024-05-02 11:22:33,444] [INFO] [logging.py:96:log_dist] step=40" in lines, lines
    assert "[node-1 r2] [W init.cpp:1] a warning" in lines, lines
    assert "[node-0] nodeweave-entrypoint: node 0 of 2" in lines and "[node-1] nodeweave-entrypoint: node 1 of 2" in lines
    console = _console()
    run_logs(tmp_path, [], follow=False, console=console, rank=2)
    assert [" ".join(line.split()) for line in console.file.getvalue().splitlines()] == [
        "[node-1 r2] loss 1.0", "[node-1 r2] [W init.cpp:1] a warning"]


def test_a_new_generation_is_marked_once_and_its_lines_follow_in_the_same_streams(tmp_path):
    ended = "nodeweave-entrypoint: recovery: generation 0 ended: node 1: its launcher failed; starting generation 1"
    (tmp_path / "node-0.log").write_text(f"[rank0]:step 9\n{ended}\n[rank0]:step 6\n")
    (tmp_path / "node-2.log").write_text(f"[rank1]:step 9\n{ended}\n[rank1]:step 6\n")
    (tmp_path / "run.json").write_text(json.dumps({"ended": "2026-01-01T00:00:00Z"}))
    console = _console()
    run_logs(tmp_path, [], follow=False, console=console)
    lines = [" ".join(line.split()) for line in console.file.getvalue().splitlines()]
    assert lines == ["[x2 node-0,node-2 r0-1] step 9", "── generation 1 ──", f"[node-0] {ended}", f"[node-2] {ended}",
                     "[x2 node-0,node-2 r0-1] step 6"], lines  # a line no rank marks is its node's: never merged


def test_a_line_no_launcher_marked_stays_its_nodes_and_the_prefix_is_one_space_whatever_came_before(tmp_path):
    """The Slurm loops' `[node-1] sleeping` (a one-rank node's output, unmarked) was merged into
    `[x2 node-0,node-1] sleeping`, and every later prefix padded to the widest so far: a grep for
    `[node-1] text` found nothing."""
    (tmp_path / "node-0.log").write_text("[rank0]:loss 1\nsleeping\n")
    (tmp_path / "node-1.log").write_text("[rank1]:loss 1\nsleeping\n")
    (tmp_path / "run.json").write_text(json.dumps({"ended": "2026-01-01T00:00:00Z"}))
    console = _console()
    run_logs(tmp_path, [], follow=False, console=console)
    lines = console.file.getvalue().splitlines()
    assert lines == ["[x2 node-0,node-1 r0-1] loss 1", "[node-0] sleeping", "[node-1] sleeping"], lines


def test_without_collapse_every_ranks_line_stays():
    from nodeweave.cluster.logview import LogView, split_rank

    assert split_rank("[default3]:hello") == ("local 3", "hello")
    assert split_rank("plain") == (None, "plain")
    view = LogView(collapse=False)
    rows = view.feed("node-0", "[rank0]:x") + view.feed("node-0", "[rank1]:x")
    assert [(prefix, text) for _, prefix, text in rows] == [("node-0 r0", "x"), ("node-0 r1", "x")]
