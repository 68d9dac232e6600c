"""Goodput accounted with no change to the script, checked against a workload that knows its own steps.

Two training nodes and a spare (tests/recovery_harness.py: real entrypoints on loopback, recovery on) run
tests/e2e/workspace/resumable.py, which prints ``RECOVERY-STEP gen=G step=S world=W t=T`` after every step and
saves a checkpoint every 5 steps; node 1's rank kills itself at step 17 of generation 0, and generation 1
resumes from step 15. The ground truth comes from the workload's own lines: the time of every step the final
model kept (each step's last execution) and of the executions the restart threw away. Node 0's timeline
(``goodput.json``), accounted by ``metrics/goodput.py`` with the step numbers read through
``metrics.step_pattern``, must agree within 3 percentage points of the wall time (a loaded 2-core machine;
docs/benchmarks.md has the podman figures).
"""

import json
import re
import statistics
import time

import pytest

from job_records import job_record
from nodeweave.entrypoint.metrics.goodput import account
from recovery_harness import finish, start

pytest.importorskip("torch")
STEPS, INTERVAL = 45, 0.3
RUN = ["--steps", str(STEPS), "--interval", str(INTERVAL), "--save-every", "5",
       "--fault", "kill", "--fault-node", "1", "--fault-step", "17"]
PATTERN = r"RECOVERY-STEP gen=\d+ step=(?P<step>\d+)"


def truth(text):
    """(seconds of kept steps, seconds of executions redone) from the workload's own step lines."""
    runs = {}
    for gen, step, t in re.findall(r"RECOVERY-STEP gen=(\d+) step=(\d+) world=\d+ t=([\d.]+)", text):
        runs.setdefault(int(gen), []).append((int(step), float(t)))
    durations = [b[1] - a[1] for lines in runs.values() for a, b in zip(lines, lines[1:])]
    typical = statistics.median(durations)
    executions = []  # (gen, step, seconds)
    for gen, lines in sorted(runs.items()):
        executions.append((gen, lines[0][0], typical))  # a generation's first step: its start is the start-up's
        executions += [(gen, b[0], b[1] - a[1]) for a, b in zip(lines, lines[1:])]
    last = {}
    for gen, step, seconds in executions:
        last[step] = (gen, seconds)
    kept = sum(seconds for _, seconds in last.values())
    redone = sum(seconds for gen, step, seconds in executions if last[step][0] != gen)
    fault = re.search(r"RECOVERY-FAULT kill node=1 gen=0 step=17 t=([\d.]+)", text)
    return kept, redone, runs, fault


def test_the_accounted_goodput_matches_the_steps_the_workload_kept(tmp_path):
    began = time.time()
    nodes = start(tmp_path, RUN, spares=1, env={"NODEWEAVE_STEP_PATTERN": PATTERN, "NODEWEAVE_STALL_WARN": "60",
                                                 "NODEWEAVE_METRICS": "off"})
    codes = finish(nodes)
    assert codes == [0, 0, 0], [n.text() for n in nodes]
    timeline = json.loads(job_record(tmp_path / "n0", "goodput.json").read_text())
    assert timeline["launched"] >= began and timeline["ended"] is not None
    assert [g["generation"] for g in timeline["generations"]] == [0, 1]
    assert timeline["generations"][0]["fault"]["resumed_step"] == 15
    assert timeline["generations"][1]["resumed_step"] == 15
    accounted = account(timeline)
    wall = accounted["wall_s"]
    out = "\n".join(n.text("out") for n in nodes)
    kept, redone, runs, fault = truth(out)
    assert max(s for s, _ in runs[1]) == STEPS and fault, out
    buckets = accounted["buckets"]
    report = f"accounted {buckets} of {wall} s; truth: kept {kept:.2f} s, redone {redone:.2f} s"
    print(report)
    assert abs(buckets["training"] - kept) / wall < 0.03, report
    assert abs(accounted["productive"] - kept / wall) < 0.03, report
    # the redone bucket runs from the checkpoint's step to the fault as node 0 heard it: the partial step and the
    # heartbeat's news of the crash come on top of the steps thrown away
    assert redone - 0.02 * wall <= buckets["redone"] <= redone + INTERVAL + 3.0, report
    assert buckets["startup"] > 0 and buckets["recovery"] > 0, report
    assert abs(sum(buckets.values()) - wall) < 0.05, report
