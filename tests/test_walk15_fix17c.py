"""walk15a A11, A12, A13, A19, A26, A27, A28: what a run's end, `runs` and `status` say.

One test per class; each fails on the code before its fix. No container is started: the run engine's nodes are
processes on this machine (test_cluster_runner's), the status rows are what nodes answer.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

from test_cluster_runner import job, sh

PEER_STOPPED = ("nodeweave-entrypoint: node 1 (train-1) failed: torchrun exited 1; stopping this node's launcher "
                "(exit 5: another node failed)")
BANNER = "=" * 60
USAGE = "train.py: error: argument --lr: invalid float value: 'abc'"


def test_a11_the_node_named_failed_first_goes_by_what_its_exit_means(tmp_path):
    """A11: node-0 ended first with 5 (its entrypoint stopped it: another node failed) and was named "failed
    first"; node-1, whose own launcher failed a moment later, was stopped from here and named as stopped."""
    script = (f'if [ "$NODE_RANK" = 0 ]; then echo "{PEER_STOPPED}"; exit 5; fi; '
              f'sleep 1; echo "usage: train.py [-h] [--lr LR]"; echo "{USAGE}"; exit 1')
    data, out, _ = job(tmp_path, sh(script))
    assert data["summary"].startswith("node-1 (here:node1) failed first, exit 1"), data["summary"]
    assert "stopped the others: node-0 exit 5" in data["summary"], data["summary"]
    assert "its entrypoint stopped it because another node failed" in out, out


def test_a12_a_nodes_last_line_is_the_scripts_error_never_a_banner_rule(tmp_path):
    """A12: run's error, `runs show`, `exec` and `status` showed a node's last line verbatim: torchrun's banner rule
    (`====`), or a peer's output quoted in its own; argparse's `error:` line, the script's own word, in none."""
    from collections import deque
    from types import SimpleNamespace

    from nodeweave.cli import runs
    from nodeweave.cluster import base
    from nodeweave.cluster.runner import failure_line

    log = ["usage: train.py [-h] [--lr LR]", USAGE, "torch...ChildFailedError:", BANNER, "train.py FAILED",
           "  exitcode  : 2 (pid: 356)", BANNER, PEER_STOPPED, "nodeweave-entrypoint: node 1 (train-1)'s last output:",
           f"nodeweave-entrypoint:   | {BANNER}"]
    assert failure_line(deque(log)) == f"the cause: {USAGE}"
    from nodeweave.entrypoint.running.symptoms import last_said, script_error

    assert script_error("\n".join(log))["line"] == USAGE  # the job's own error under recovery too
    assert last_said("\n".join(log[2:])) == PEER_STOPPED and last_said("\n".join(log[:2] + [BANNER])) == USAGE
    path = tmp_path / "node-0.log"
    path.write_text("\n".join(log[2:7]) + "\n")
    assert runs._last_line(path) == "exitcode  : 2 (pid: 356)"  # runs show's column
    said = tmp_path / "said.txt"
    said.write_text(f"{USAGE}\n{BANNER}\n")
    node = SimpleNamespace(entrypoint_argv=lambda argv: ["sh", "-c", f"cat {said} >&2; exit 1"])
    assert base.ask_status(node, []).error == USAGE  # status's word on a node that cannot answer


def test_a13_the_run_folders_nodeweave_makes_carry_their_own_gitignore(tmp_path):
    """A13: `.nodeweave/` was kept out of git, `runs/` (every node's log, plan, record) was not."""
    data, _, folder = job(tmp_path, sh("true"))
    ignore = folder.path.parent / ".gitignore"
    assert ignore.read_text().splitlines()[-1] == "*"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    listed = subprocess.run(["git", "-C", str(tmp_path), "status", "--short", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert not any(line.startswith("?? runs/") for line in listed.splitlines()), listed
    mine = tmp_path / "mine"
    mine.mkdir()
    from nodeweave.cluster.runfolder import RunFolder

    RunFolder.create(mine, "job", "name: job\n")  # a folder that was there: the user's, left as it is
    assert not (mine / ".gitignore").exists()


def test_a19_a_table_in_a_narrow_terminal_keeps_one_line_per_row():
    """A19: at 80 columns `runs ls` folded its columns to one character a line (`t/r/a/i/n`), and a stopped run's
    state took some 60 lines; `status` wrapped `up (runnin/g)`. Every table verb draws nodeweave's Table."""
    import re

    from nodeweave.tables import Table
    from nodeweave.usertext import console

    table = Table(title="runs")
    for column in ("run", "job", "started", "state", "seconds", "nodes", "command"):
        table.add_column(column, no_wrap=column in ("run", "started"), overflow="fold")
    state = "stopped by nodeweave stop at 08:43:24 UTC (nodes exit 137)"
    for i in range(8):
        table.add_row(f"20261201T08433{i}Z-train", "train", "2026-12-01T08:43:32.719Z", state, "14.501", "2",
                      "train.py --steps 100000")
    for width in (80, 120):
        out = console(file=io.StringIO(), width=width, color_system=None)
        out.print(table)
        lines = out.file.getvalue().splitlines()
        assert len([line for line in lines if line.startswith("│")]) == 8, (width, lines)  # a line a row
        assert all(len(line) <= width for line in lines)
        assert "train " in lines[4] and "…" in lines[4]  # short cells whole, long ones cut
    out = console(file=io.StringIO(), width=300, color_system=None)
    out.print(table)
    assert state in out.file.getvalue() and "20261201T084330Z-train" in out.file.getvalue()  # room: all whole
    src = Path(__file__).resolve().parents[1] / "src" / "nodeweave"
    drawn = [p for p in src.rglob("*.py") if re.search(r"from rich\.table import Table\b", p.read_text())]
    assert not drawn, drawn  # every table verb draws nodeweave.tables.Table


def _row(node, up=True, run=None, recovery=None, role=None, rank=None):
    return {"node": node, "reached_as": f"podman:rec-{node[-1]}", "platform": None if up else "exited (137)",
            "up": up, "error": None, "mode": "hold", "rank": rank, "role": role, "procs": 1, "plan_hash": "f793a3c",
            "plan_errors": [], "run": run, "now": 0.0, "gpu": None, "recovery": recovery, "asked": up}


def test_a26_a27_status_under_recovery_speaks_of_the_generation_under_way():
    """A26: with node-1 killed and generation 1 training on node 0 and the spare node 2, status told the user to
    `nodeweave stop` the healthy run and `up` again; A27: the spare's rank column still read `spare (2)`."""
    from types import SimpleNamespace

    from nodeweave.cluster.status import problems, rank_text

    book = {"generation": 1, "role": "member", "decision": "start", "members": [0, 2], "spares": [],
            "left_out": [1]}
    run = {"run_id": "20261201T085140Z-rec", "started": 0.0}
    rows = [_row("node-0", run=run, recovery=book, rank=0,
                 role={"kind": "training node", "identity": 0, "rank": 0}),
            _row("node-1", up=False),
            _row("node-2", run=run, recovery=book, rank=2, role={"kind": "spare", "identity": 2, "rank": None})]
    spec = SimpleNamespace(launcher=SimpleNamespace(mode="hold"))
    said = problems(rows, spec)
    assert len(said) == 1 and "recovery left it out" in said[0] and "node-0, node-2" in said[0], said
    assert "`nodeweave stop`" not in said[0], said
    assert [rank_text(r) for r in (rows[0], rows[2])] == ["0", "1"]
    ended = dict(book, decision="done")  # the job ended: the hold's roles are what the nodes are now
    assert rank_text(dict(rows[2], recovery=ended)) == "spare (2)"
    assert "`nodeweave stop` the run" in problems([dict(r, recovery=None) for r in rows], spec)[0]


def test_a28_a_run_that_recovered_and_ended_ok_does_not_open_with_failed(tmp_path):
    """A28: `nodeweave: failed: node-1 exit 137 (SIGKILL: killed); recovered 1 time(s)`, exit 0."""
    from test_cluster_runner import Console, RunRequest, Runner, launch_argv, nodes
    from nodeweave.cluster.runfolder import RunFolder

    folder = RunFolder.create(tmp_path / "runs", "job", "name: job\n")
    request = RunRequest(run_id=folder.run_id, command=sh('[ "$NODE_RANK" = 0 ] || exit 137'), grace=3.0,
                         recovery=True)
    the_nodes = nodes(tmp_path)
    runner = Runner(the_nodes, request, launch_argv(the_nodes, request), folder,
                    Console(file=io.StringIO(), width=200, color_system=None)).run()
    assert runner.exit_code == 0
    assert runner.summary().startswith("ok: the job ended well on node-0"), runner.summary()
    assert "node-1 exit 137 (SIGKILL: killed)" in runner.summary()
