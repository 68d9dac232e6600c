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
        gone = _status(nodes[0], tmp_path)
        os.kill(nodes[2].proc.pid, signal.SIGCONT)
        until = time.monotonic() + 30
        while "joined the job as a spare" not in nodes[0].text() and time.monotonic() < until:
            time.sleep(0.2)
        back = _status(nodes[0], tmp_path)
    finally:
        codes = finish(nodes)
    # counted gone while silent (lost, not failed: one spare fewer), one row again once back
    assert [(n["fp"]["rank"], n["state"].split(":")[0]) for n in gone["nodes"]][2] == (2, "lost"), gone["nodes"]
    assert [(n["fp"]["rank"], n["state"]) for n in back["nodes"]][1:] == [(1, "running"), (2, "spare (waiting)")], \
        back["nodes"]
    assert codes == [0, 0, 0], [node.text() for node in nodes]
    record = json.loads(job_record(tmp_path / "n0").read_text())
    assert (record["generation"], record["restarts"], record["history"]) == (0, 0, []), record
    hub = nodes[0].text()
    assert "(spare) is gone: no heartbeat for 10s (node or network gone); one spare fewer, training goes on" in hub, hub
    assert "generation 0 ended" not in hub and "killed" not in hub, hub
    assert "joined the job as a spare" in hub, hub
    assert nodes[2].text().count("generation 0: this node is a spare") == 2, nodes[2].text()


def _status(node, tmp_path):
    """``--status`` asked of the job ``node`` (node 0, started by ``recovery_harness.start``) runs."""
    import cli_run
    from recovery_harness import ENTRY

    argv, env, cwd = node.how
    port = argv[argv.index("--master-port") + 1]
    out = cli_run.run([*ENTRY, "--status", "--master-addr", "127.0.0.1", "--master-port", port], cwd=cwd,
                      env=dict(env, TMPDIR=str(tmp_path)), timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_late_spare_is_a_spare_waiting_in_every_view(tmp_path):
    """A spare up after the generation started (the deadline passed): its own log, --status's states and
    ``recovery.spares``, and node 0's kept book (what /metrics' role, ``spares_waiting`` and ``nodes_left_out``
    read) all say spare, waiting; before, /metrics and --status said ``left out (waiting)`` and its spares []."""
    import os
    import subprocess
    import sys

    import cli_run
    from free_ports import free_port_pair
    from recovery_harness import heard_until, held_lines, release, wait_up

    (tmp_path / "train.py").write_text("print('step 1', flush=True)\n" + held_lines(tmp_path))
    env = dict(cli_run.CLEAN, PATH=os.pathsep.join([os.path.dirname(sys.executable), cli_run.CLEAN["PATH"]]),
               NODEWEAVE_NNODES="2", NODEWEAVE_SPARES="1", NODEWEAVE_RECOVERY="on", MASTER_ADDR="127.0.0.1",
               NODEWEAVE_JOB_ID="late17", NODEWEAVE_WAIT_TIMEOUT="5", NODEWEAVE_MASTER_PORT=str(free_port_pair()),
               NODEWEAVE_METRICS="off")
    nodes = [cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=dict(env, NODE_RANK=str(i), TMPDIR=str(tmp_path / f"t{i}")))
             for i in (0, 1)]
    spare = None
    try:
        wait_up(tmp_path, 2, nodes)  # the generation started without the spare (the 5 s deadline passed)
        spare = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=dict(env, NODE_RANK="2", TMPDIR=str(tmp_path / "t2")))
        heard = heard_until(spare.stderr, "came after the generation started")
        asked = cli_run.run([*cli_run.ENTRYPOINT, "--status"], cwd=tmp_path, timeout=60,
                            env=dict(env, NODE_RANK="2", TMPDIR=str(tmp_path / "t3")))
        kept = json.loads(job_record(tmp_path / "t0").read_text())
    finally:
        release(tmp_path)
        said = [node.communicate(timeout=120)[0] for node in nodes]
        if spare is not None:
            spare.communicate(timeout=90)
    assert asked.returncode == 0, asked.stderr
    status = json.loads(asked.stdout)
    assert status["recovery"]["spares"] == [2] and status["recovery"]["left_out"] == [], status["recovery"]
    states = {(node.get("fp") or {}).get("rank"): node.get("state") for node in status["nodes"]}
    assert states[2] == "spare (waiting)", status["nodes"]
    assert kept["spares"] == [2] and kept["members"] == [0, 1], kept
    assert "a spare, it waits" in heard, heard
    assert [node.returncode for node in nodes] == [0, 0], said
