"""--explain's "last start" is this job's own: /tmp is shared by every job on a machine, and a fresh clone's
demo showed another engineer's check-in record as its own last start (issue 43's bare-machine walk)."""

import json
import os

import cli_run
import pytest
from one_machine import one_machine_env


def explain(tmp_path, job):
    env = one_machine_env({"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path)})
    (tmp_path / "train.py").write_text("print(1)\n")
    out = cli_run.run([*cli_run.ENTRYPOINT, "--explain", "--nnodes", "2", "--node-rank", "0", "--master-addr",
                       "127.0.0.1", "--rdzv-id", job, "--", str(tmp_path / "train.py")], env=env, timeout=60,
                      cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


@pytest.mark.parametrize("recorded, shown", [("jobA", True), ("another-job", False), (None, False)])
def test_the_last_start_shown_is_only_this_jobs(tmp_path, recorded, shown):
    folder = tmp_path / "nodeweave" / "jobs" / "jobA-29500"  # the job's folder (runstate.job_dir; walk10 B8)
    folder.mkdir(parents=True)
    fingerprint = {"job": recorded} if recorded else {}
    (folder / "checkin.json").write_text(json.dumps(
        {"verdict": {"decision": "start", "problems": []}, "fingerprint": fingerprint, "at": 1}))
    text = explain(tmp_path, "jobA")
    assert ("last start" in text) is shown, text


def test_a_record_that_is_not_an_object_is_no_last_start(tmp_path):
    folder = tmp_path / "nodeweave" / "jobs" / "jobA-29500"
    folder.mkdir(parents=True)
    (folder / "checkin.json").write_text("[1, 2]")
    assert "last start" not in explain(tmp_path, "jobA")
