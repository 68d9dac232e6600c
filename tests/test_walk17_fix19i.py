"""walk17a rows of the run records fixed by fix19i: what `runs ls/show/compare`, a sweep's table and `run`'s last
line say of a run is what its record holds, whole and in one form. Each test fails on the code before its fix."""

from __future__ import annotations

import io
import json
import re

import pytest

from cli_run import in_process as nodeweave
from nodeweave.cluster.runfolder import RunFolder

SPEC = "name: nwr19\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def _run(runs, code: int, summary: str, lines=("step 1",), job="nwr19", parent=None, suffix=""):
    folder = RunFolder.create(parent or runs, job, SPEC, suffix=suffix)
    nodes = [{"node": f"node-{i}", "index": i, "exit_code": code, "started_s": 0.1, "ended_s": 3.0,
              "log": f"node-{i}.log"} for i in range(2)]
    folder.write_json("run.json", {"schema": "nodeweave.runfolder/1", "run_id": folder.run_id, "job": job,
                                   "command": ["train.py"], "env": {}, "target": "podman",
                                   "started": "2026-12-01T10:00:00Z", "ended": "2026-12-01T10:01:00Z",
                                   "seconds": 3.0, "exit_code": code, "summary": summary, "nodes": nodes})
    for i in range(2):
        folder.log_path(f"node-{i}").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    monkeypatch.setenv("COLUMNS", "400")
    return tmp_path / "runs"


# -- a record's text is shown whole (A7): a line cut, and cut unmarked, dropped the log path a stop line ends with --
def test_a_nodes_last_line_is_shown_whole_in_json_and_in_a_pipe(project, capsys):
    log = "/tmp/x/runs/20261201T154907Z-w17a-a/launcher-after-stop-node-1.log"
    line = ("nodeweave-entrypoint: stopped on SIGTERM: this node's launcher ended (torchrun exited 1 after SIGTERM; "
            "this node exits 143); the others are told to stop (a stop, not a failure); the launcher's output after "
            f"the signal (its traceback of it): {log}")
    assert len(line) > 200
    run = _run(project, 1, "node-0 exit 1", lines=("step 1", line))
    code, out, err = nodeweave(capsys, "runs", "show", run.run_id, "-o", "json")
    assert code == 1 or code == 0, err
    assert [n["last_line"] for n in json.loads(out)["nodes"]] == [line, line]
    code, out, err = nodeweave(capsys, "runs", "show", run.run_id)  # a pipe: the table's rows whole
    assert log in re.sub(r"[\s│|]", "", out), out


# -- a run's state is the record's word for how it ended (A17), never the code alone --------------------------------
def test_a_run_ended_by_ctrl_c_reads_interrupted_not_exit_130(project, capsys):
    _run(project, 130, "interrupted: node-0 exit 143 (SIGTERM: stopped), node-1 exit 143 (SIGTERM: stopped)")
    code, out, err = nodeweave(capsys, "runs", "ls", "-o", "json")
    assert code == 0, err
    assert [r["state"] for r in json.loads(out)] == ["interrupted (nodes exit 130)"]


# -- one number format for a metric in every table (A14) and a sweep is its job's (A15) ----------------------------
def test_a_sweeps_metric_reads_alike_in_its_table_and_in_runs_compare_and_the_sweep_has_its_job(project, capsys):
    from nodeweave.cluster.sweep import sweep_table
    from rich.console import Console

    rows = [{"point": {"OMP_NUM_THREADS": "1"}, "exit_code": 0, "seconds": 5.0, "metric": 22003.8,
             "per_node": [23618.7, 20388.8], "folder": "p1"},
            {"point": {"OMP_NUM_THREADS": "2"}, "exit_code": 0, "seconds": 5.0, "metric": 3600.8,
             "per_node": [3601.0, 3600.6], "folder": "p2"}]
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(sweep_table(rows, "samples/s ([0-9.]+)"))
    text = console.export_text()
    assert "22003.8 (best)" in text and "23618.7 20388.8" in text and "3600.8" in text, text
    assert not re.search(r"\de[+-]\d", text), text

    sweep = RunFolder.create(project, "nwr19", SPEC, suffix="-sweep")
    points = []
    for number, rate in enumerate((22003.8, 3600.8), start=1):
        point = _run(project, 0, "ok", lines=(f"samples/s {rate}",), parent=sweep.path, suffix=f"-{number:02d}-X={number}")
        points.append({"point": {"X": str(number)}, "exit_code": 0, "folder": point.run_id})
    sweep.write_json("sweep.json", {"metric": "samples/s ([0-9.]+)", "command": ["train.py"], "points": points})
    code, out, err = nodeweave(capsys, "runs", "ls", "-o", "json")
    assert code == 0, err + out
    assert [(r["kind"], r["job"]) for r in json.loads(out)] == [("sweep", "nwr19")]
    code, out, err = nodeweave(capsys, "runs", "compare", sweep.run_id, "--metric", "samples/s ([0-9.]+)")
    assert code == 0, err
    assert "22003.8" in out and not re.search(r"\de[+-]\d", out), out


# -- a failed run is said once, with its run folder (A22) -----------------------------------------------------------
def test_a_failed_run_is_said_once_with_its_folder(capsys):
    from rich.console import Console

    from nodeweave.cli.run import _finish
    from nodeweave.errors import NodeweaveError

    console = Console(width=200, record=True, file=io.StringIO())
    data = {"summary": "node-1 (podman:x-1) failed first, exit 1 after 4.0 s; stopped the others: node-0 exit 5",
            "folder": "/p/runs/20261201T000000Z-x", "exit_code": 1}
    with pytest.raises(NodeweaveError) as raised:
        _finish(data, "table", console)
    assert console.export_text() == ""  # nothing before the error repeats it
    assert str(raised.value) == data["summary"] + "; run folder /p/runs/20261201T000000Z-x"
    data["exit_code"] = 0
    _finish(data, "table", console)
    assert "run folder /p/runs/20261201T000000Z-x" in console.export_text()
