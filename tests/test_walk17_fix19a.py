"""walk17b B14, B11: what a node is in the job (a member of the running generation, a spare, a late spare, a node
left out) is node 0's one decision, and every view and every decision reads it."""

import json
import os
import signal
import time

import pytest

from job_records import job_record
from recovery_harness import finish, start, wait_for_step

pytest.importorskip("torch")


def test_a_non_members_loss_and_return_never_end_the_generation(tmp_path):
    """The spare's entrypoint stopped (SIGSTOP) past the heartbeat's 10 s, then woken: node 0 counts it gone, and
    when it checks in again it is a spare again. Before, its check-in was turned away and its closed link read
    as a member's loss in the same wake-up: generation 0 ended, a restart spent, "its entrypoint was killed"."""
    nodes = start(tmp_path, ["--steps", "110", "--interval", "0.2", "--save-every", "5"], spares=1)
    try:
        wait_for_step(nodes[0], 3)
        os.kill(nodes[2].proc.pid, signal.SIGSTOP)
        time.sleep(13)
        os.kill(nodes[2].proc.pid, signal.SIGCONT)
    finally:
        codes = finish(nodes)
    assert codes == [0, 0, 0], [node.text() for node in nodes]
    record = json.loads(job_record(tmp_path / "n0").read_text())
    assert (record["generation"], record["restarts"], record["history"]) == (0, 0, []), record
    hub = nodes[0].text()
    assert "(spare) is gone: no heartbeat for 10s (node or network gone); one spare fewer, training goes on" in hub, hub
    assert "generation 0 ended" not in hub and "killed" not in hub, hub
    assert "joined the job as a spare" in hub, hub
    assert nodes[2].text().count("generation 0: this node is a spare") == 2, nodes[2].text()
