"""Walk 6, W75: ``--run last`` where runs/ also holds another job's newer run (a folder with several specs, a
renamed job).

``last`` is the last run of the spec's job on every verb that takes it (``logs --run``, ``runs show``, ``runs
compare``, ``dashboard --run``: one ``find_run(..., job)``), as ``status``/``logs`` without ``--run`` already read
the job's own latest run; with no run of the job, one line names the other job's. An id still reads any run.
Fails before the fix (all took ``...-other`` without a word).
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE, UsageError
from nodeweave.runs.history import find_run

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def make_run(folder, run_id, job, line):
    run = folder / "runs" / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": run_id, "job": job, "started": "2026-11-29T10:00:00Z",
                                              "ended": "2026-11-29T10:05:00Z", "exit_code": 0, "nodes": []}))
    (run / "node-0.log").write_text(line + "\n")


@pytest.fixture
def hs(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('the training script')\n")
    make_run(tmp_path, "20261129T100000Z-team", "team", "team's own line")
    make_run(tmp_path, "20261129T150000Z-other", "other", "the other job's line")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_logs_and_runs_show_take_the_specs_jobs_last_run(hs, capsys):
    code, out, err = run_cli(capsys, "logs", "--run", "last")
    assert code == 0 and "20261129T100000Z-team" in out and "other" not in out, (out, err)
    code, out, err = run_cli(capsys, "runs", "show", "last", "-o", "json")
    assert code == 0 and json.loads(out)["run"] == "20261129T100000Z-team", out


def test_dashboard_and_compare_read_the_same_rule(hs):
    assert find_run(hs / "runs", "last", "team").run_id == "20261129T100000Z-team"
    assert find_run(hs / "runs", "last").run_id == "20261129T150000Z-other"  # no spec: the folder's newest
    assert find_run(hs / "runs", "20261129T150000Z-other", "team").run_id == "20261129T150000Z-other"


def test_no_run_of_the_job_names_the_other_jobs_in_one_line(hs, capsys):
    (hs / "nodeweave.yaml").write_text(SPEC.replace("team", "fresh"))
    code, out, err = run_cli(capsys, "logs", "--run", "last")
    line = one_line(err)
    assert code == EXIT_USAGE and "no run of job 'fresh'" in line and "20261129T150000Z-other" in line, line
    with pytest.raises(UsageError):
        find_run(hs / "runs", "last", "fresh")
