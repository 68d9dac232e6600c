"""The run engine without a container engine: "nodes" that are processes on this machine.

Each node is reached by running the command here (a transport as direct as
it gets), with its own TMPDIR, rank and working folder through ``env`` and
``cd``, as a bare host over ssh gets them; its entrypoint is the real one
(``--launcher command``), so records, stops and exit codes are real. The
container and ssh paths are the engine tests' (tests/e2e/test_cluster_*.py).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

from nodeweave.cluster.base import Node
from nodeweave.cluster.job import JobContext, record, run_job
from nodeweave.cluster.runfolder import RunFolder
from nodeweave.cluster.runner import Runner, RunRequest, launch_argv
from nodeweave.remote.base import Remote

FIX = Path(__file__).parent / "fixtures" / "synthetic" / "cpu-only"
BIN = str(Path(sys.executable).parent)


@dataclass(frozen=True)
class Here(Remote):
    """This machine: the argv runs as it is."""

    kind = "here"

    def exec_argv(self, argv, stdin=True, tty=False):
        return list(argv)


def nodes(tmp_path, count=2):
    found = []
    for i in range(count):
        home = tmp_path / f"node{i}"
        home.mkdir()
        env = (("PATH", f"{BIN}:{os.environ['PATH']}"), ("TMPDIR", str(home)), ("NODEWEAVE_SYSROOT", str(FIX)),
               ("NODEWEAVE_LAUNCHER", "command"), ("NODE_RANK", str(i)), ("NNODES", str(count)),
               ("MASTER_ADDR", "127.0.0.1"), ("NODEWEAVE_WAIT_TIMEOUT", "0"))
        found.append(Node(i, Here(f"node{i}"), env=env, workdir=str(home)))
    return found


def job(tmp_path, command, grace=3.0, interrupt_after=None):
    folder = RunFolder.create(tmp_path / "runs", "job", "name: job\n")
    request = RunRequest(run_id=folder.run_id, command=command, grace=grace)
    context = JobContext(job="job", spec_text="name: job\n", workspace=tmp_path, target="here")
    console = Console(file=io.StringIO(), width=200, color_system=None)
    the_nodes = nodes(tmp_path)
    if interrupt_after is None:
        return (run_job(the_nodes, request, launch_argv(the_nodes, request), folder, context, console),
                console.file.getvalue(), folder)
    runner = Runner(the_nodes, request, launch_argv(the_nodes, request), folder, console)
    threading.Timer(interrupt_after, runner.interrupt).start()  # what Ctrl-C's handler calls
    runner.run()
    return record(folder, runner, request, context, the_nodes), console.file.getvalue(), folder


def sh(script):
    return ["sh", "-c", script]


def test_every_node_runs_through_its_entrypoint_and_the_folder_records_it(tmp_path):
    data, out, folder = job(tmp_path, sh('echo "hello from $NODE_RANK of $NNODES"'))
    assert data["exit_code"] == 0 and data["summary"].startswith("every node exit 0")
    assert "[node-0] hello from 0 of 2" in out and "[node-1] hello from 1 of 2" in out
    assert (folder.path / "node-1.log").read_text().splitlines()[-1] == "hello from 1 of 2"
    record = json.loads((folder.path / "run.json").read_text())
    assert record["ended"] and [n["exit_code"] for n in record["nodes"]] == [0, 0]
    assert record["nodes"][1]["exported"]["NODE_RANK"] == "1"
    assert json.loads((folder.path / "node-1.plan.json").read_text())["launch"]["launcher"] == "command"


def test_the_first_failure_stops_the_others_within_the_grace(tmp_path):
    started = time.monotonic()
    data, out, _ = job(tmp_path, sh('if [ "$NODE_RANK" = 1 ]; then echo broken; exit 3; fi; exec sleep 60'))
    took = time.monotonic() - started
    assert data["exit_code"] == 1 and took < 15, (took, out)
    assert data["summary"].startswith("node-1 (here:node1) failed first, exit 3") and "last line: broken" in data["summary"]
    node0 = data["nodes"][0]
    assert node0["exit_code"] == 143 and node0["stop"]["stopped"][0]["processes"] >= 1, node0
    assert "ended with exit 3: stopping the other nodes" in out


def test_an_interrupt_stops_every_node_and_is_130(tmp_path):
    started = time.monotonic()
    data, out, _ = job(tmp_path, sh("exec sleep 60"), interrupt_after=1.0)
    assert data["exit_code"] == 130 and time.monotonic() - started < 15
    assert [n["exit_code"] for n in data["nodes"]] == [143, 143]
    assert "interrupted: stopping every node" in out


def test_a_node_whose_process_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    script = 'trap "" TERM; if [ "$NODE_RANK" = 1 ]; then exit 4; fi; while :; do sleep 0.1; done'
    data, _, _ = job(tmp_path, sh(script), grace=1.0)
    node0 = data["nodes"][0]
    assert node0["exit_code"] == 137 and node0["stop"]["stopped"][0]["killed"], node0
    assert shlex.join(node0["argv"]).startswith("sh -c")


def test_the_stall_reports_a_node_kept_reach_the_run_folder(tmp_path):
    """What the stall watch appends to the node's runs/<id>/stalls.txt (docs/stalls.md) comes back as the
    run folder's stalls.txt; here the command writes it where the watch would."""
    script = ('if [ "$NODE_RANK" = 0 ]; then printf "STALL: rank 1 waited for\\n" '
              '> "$(echo "$TMPDIR"/nodeweave/runs/*)/stalls.txt"; fi')
    data, _, folder = job(tmp_path, sh(script))
    assert data["exit_code"] == 0, data
    assert (folder.path / "stalls.txt").read_text() == "STALL: rank 1 waited for\n"


def test_node_0s_heat_map_reaches_the_run_folder_for_dashboard_run(tmp_path):
    """What node 0's recorder keeps as runs/<id>/heat.json (entrypoint/metrics/heat.py) comes back into the run
    folder, where `nodeweave dashboard --run` draws it; here the command writes it where the recorder would."""
    heat = '{"schema": "nodeweave.heat/1", "span_s": 10.0, "max_cells": 64, "columns": []}'
    script = (f"if [ \"$NODE_RANK\" = 0 ]; then printf '%s' '{heat}' "
              '> "$(echo "$TMPDIR"/nodeweave/runs/*)/heat.json"; fi')
    data, _, folder = job(tmp_path, sh(script))
    assert data["exit_code"] == 0, data
    assert json.loads((folder.path / "heat.json").read_text()) == json.loads(heat)


@pytest.mark.parametrize("colours", [None, "standard"])
def test_lines_are_shown_as_a_styled_print_showed_them(colours):
    """One write per batch, each node's prefix rendered once: the same text as printing each line (control
    codes such as a progress bar's carriage returns stripped, as rich's Text strips them)."""
    from nodeweave.cluster.runner import COLOURS
    from nodeweave.remote import make_target

    nodes = [Node(i, make_target("podman", f"n{i}")) for i in range(12)]
    console = Console(file=io.StringIO(), width=200, color_system=colours, force_terminal=bool(colours))
    request = RunRequest(run_id="r", command=["true"])
    runner = Runner(nodes, request, launch_argv(nodes, request), None, console)
    lines = [(nodes[11], "step 1\r step 2"), (nodes[0], "[bold]not markup[/]"), (nodes[3], "a\tb\t\tc é 中")]
    for node, line in lines:
        runner.lines.put((type("R", (), {"node": node, "tail": []})(), line, 0.0))
    while not runner.lines.empty():  # one call stops after its first line once its time passed (a loaded machine)
        runner._show(timeout=0.1)
    from rich.text import Text

    each = Console(file=io.StringIO(), width=200, color_system=colours, force_terminal=bool(colours))
    for node, line in lines:  # what a styled print per line gave
        each.print(Text(f"[{node.name}]".ljust(10), style=COLOURS[node.index % len(COLOURS)]) + Text(line),
                   highlight=False, soft_wrap=True)
    import re

    plain = re.compile(r"\x1b\[[0-9;]*m")  # rich splits a styled line at its tabs: the same on screen
    assert plain.sub("", console.file.getvalue()) == plain.sub("", each.file.getvalue())
    firsts = [line[:5] for text in (console, each) for line in text.file.getvalue().splitlines()]
    assert firsts[:3] == firsts[3:]  # each line opens in its node's colour (or none)
    assert ("\x1b[" in console.file.getvalue()) == bool(colours)
    if not colours:
        assert console.file.getvalue().splitlines()[0] == "[node-11] step 1 step 2"


def test_a_run_spawns_the_argv_its_plan_recorded_not_one_derived_again(tmp_path):
    """The plan is what runs (issue 41 item 5): the run session hands the runner each node's argv from the plan's
    ``run`` phase (its run-id placeholder filled with the folder's id), so an argv the plan holds is the one spawned, even
    where deriving it again from the request would give another (here node 1's planned argv is swapped)."""
    from dataclasses import replace as swap

    from nodeweave.cluster.execute import Execution, execute
    from nodeweave.cluster.runplan import RunSession, run_plan
    from nodeweave.plan import RUN_ID

    the_nodes = nodes(tmp_path)
    plan = run_plan("here", the_nodes, sh('echo "derived $NODE_RANK"'), [{}], {}, None, 3.0, False,
                    tmp_path / "runs", "job")
    (phase,) = plan.phases
    planned = phase.nodes[1]
    edited = swap(planned, argv=tuple(a.replace("derived", "planned") for a in planned.argv))
    plan = swap(plan, phases=(swap(phase, nodes=(phase.nodes[0], edited)),))
    context = JobContext(job="job", spec_text="name: job\n", workspace=tmp_path, target="here")
    console = Console(file=io.StringIO(), width=200, color_system=None)
    session = RunSession(the_nodes, tmp_path / "runs", context, console)
    execute(plan, Execution(tmp_path, lambda line: None, runs=session))
    (data,) = session.results
    folder = Path(data["folder"])
    assert (folder / "node-0.log").read_text().splitlines()[-1] == "derived 0"
    assert (folder / "node-1.log").read_text().splitlines()[-1] == "planned 1"
    run_id = json.loads((folder / "run.json").read_text())["run_id"]
    spawned = [n["argv"] for n in json.loads((folder / "run.json").read_text())["nodes"]]
    assert spawned == [[a.replace(RUN_ID, run_id) for a in n.argv] for n in (phase.nodes[0], edited)]
    assert all(RUN_ID not in " ".join(a) for a in spawned) and all(run_id in a for a in spawned)
