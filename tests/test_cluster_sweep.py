"""Sweeps (points, labels, the metric read from logs, the table) and run folders (names, latest)."""

from __future__ import annotations

import io
import json
import re

import pytest
from nodeweave.usertext import console as Console  # nodeweave's own: reads no markup (replay10 R1)

from nodeweave.cluster.runfolder import RunFolder, latest_run
from nodeweave.cluster.sweep import (compile_metric, parse_sweeps, point_label, point_metric, read_metric,
                                     sweep_points, sweep_table)
from nodeweave.errors import UsageError

# What examples/train.py prints (one rank's lines; a node's log holds every rank's).
LOG = """nodeweave-entrypoint: node 0 of 2, 1 process(es) each, master nwc-0:29500; run torchrun
[rank 0/2 node 0] host nwc-0 backend gloo device cpu
[rank 0/2 node 0] step 10/20 loss 0.4127 samples/s 8531.2
[rank 0/2 node 0] step 20/20 loss 0.1032 samples/s 9012.5
[rank 0/2 node 0] done: world_size=2 backend=gloo final_loss=0.1032 ok
"""


def test_sweeps_multiply_first_option_slowest():
    sweeps = parse_sweeps(["NCCL_MAX_NCHANNELS=8,16", "RCCL_THREADS_PER_BLOCK=256,512"])
    assert sweep_points(sweeps) == [
        {"NCCL_MAX_NCHANNELS": "8", "RCCL_THREADS_PER_BLOCK": "256"},
        {"NCCL_MAX_NCHANNELS": "8", "RCCL_THREADS_PER_BLOCK": "512"},
        {"NCCL_MAX_NCHANNELS": "16", "RCCL_THREADS_PER_BLOCK": "256"},
        {"NCCL_MAX_NCHANNELS": "16", "RCCL_THREADS_PER_BLOCK": "512"},
    ]
    assert point_label({"NCCL_ALGO": "Ring", "X": "a b/c"}) == "NCCL_ALGO-Ring_X-a_b_c"


def test_every_points_run_id_is_one_the_entrypoint_accepts():
    """Seed 001's channel x thread sweep: the run id goes to every node's entrypoint as --run-id."""
    from nodeweave.entrypoint.planning.contract import read_run_id

    job = "j" * 63
    for point in ({"NCCL_MAX_NCHANNELS": "28", "RCCL_THREADS_PER_BLOCK": "256"}, {"V": "x" * 300, "W": "1.5e-3"}):
        run_id = f"20261126T210721Z-{job}-01-{point_label(point, job)}-2"
        assert read_run_id(run_id, "run id", "--run-id") == run_id


@pytest.mark.parametrize("bad, message", [
    ("NCCL_MAX_NCHANNELS", "VAR=VALUE"),
    ("1X=2", "VAR=VALUE"),
    ("X=", "no empty value"),
    ("X=1,,2", "no empty value"),
])
def test_bad_sweeps_are_named(bad, message):
    with pytest.raises(UsageError, match=message):
        parse_sweeps([bad])


def test_a_variable_swept_twice_is_refused():
    with pytest.raises(UsageError, match="twice"):
        parse_sweeps(["X=1", "X=2"])


def test_the_metric_is_the_last_match_of_each_node_averaged(tmp_path):
    pattern = compile_metric(r"samples/s ([0-9.]+)")
    (tmp_path / "node-0.log").write_text(LOG)
    (tmp_path / "node-1.log").write_text(LOG.replace("9012.5", "8987.5"))
    assert read_metric(pattern, tmp_path / "node-0.log") == 9012.5
    assert point_metric(pattern, tmp_path, 3) == (9000.0, [9012.5, 8987.5, None])
    with pytest.raises(UsageError, match="no group for the number"):  # it could never read a number: refused
        compile_metric(r"final_loss=\d+\.\d+")
    assert read_metric(compile_metric(r"final_loss=(\d+\.\d+)"), tmp_path / "node-0.log") == 0.1032
    with pytest.raises(UsageError, match="not a regular expression"):
        compile_metric("samples/s ([0-9.]+")


def test_the_sweep_table_marks_the_best_point():
    rows = [{"point": {"N": "8"}, "exit_code": 0, "seconds": 10.0, "metric": 9000.0, "per_node": [9000.0],
             "folder": "a"},
            {"point": {"N": "16"}, "exit_code": 0, "seconds": 9.0, "metric": 9500.0, "per_node": [9500.0],
             "folder": "b"},
            {"point": {"N": "32"}, "exit_code": 1, "seconds": 2.0, "metric": None, "per_node": [None], "folder": "c"}]
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(sweep_table(rows, "samples/s ([0-9.]+)"))
    text = console.file.getvalue()
    assert re.search(r"16 .*ok .*9500 \(best\)", text) and "exit 1" in text and "9000 (best)" not in text
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(sweep_table(rows, "loss", lower_is_better=True))
    assert "9000 (best)" in console.file.getvalue()


def test_run_folders_are_utc_time_and_job_unique_per_second(tmp_path):
    first = RunFolder.create(tmp_path / "runs", "job", "name: job\n")
    second = RunFolder.create(tmp_path / "runs", "job", "name: job\n")
    assert re.match(r"^\d{8}T\d{6}Z-job$", first.run_id) and (first.path / "spec.yaml").read_text() == "name: job\n"
    assert second.run_id != first.run_id and second.run_id.startswith(first.run_id[:16])
    second.write_json("run.json", {"ended": None})
    assert latest_run(tmp_path / "runs", "job") == second.path
    assert latest_run(tmp_path / "runs", "other") is None
    assert json.loads((second.path / "run.json").read_text()) == {"ended": None}
