"""Recovery on real launchers and gloo: two training nodes (plus spares) as real entrypoints on loopback, each with
its own TMPDIR, running tests/e2e/workspace/resumable.py, which saves ``step-N.pt`` every 5 steps and resumes
from NODEWEAVE_RESUME_FROM. Each test asserts the left-out node, the generations, the resumed step and every
node's exit code. Bounds are generous (a loaded 2-core machine)."""

import json
import re

import pytest

from job_records import job_record
from recovery_harness import again, done, finish, resumed, start, steps, wait_for_step

pytest.importorskip("torch")
RUN = ["--steps", "30", "--interval", "0.2", "--save-every", "5"]


def book(tmp_path, node=0):
    return json.loads(job_record(tmp_path / f"n{node}").read_text())


def texts(nodes):
    return [node.text() for node in nodes]


@pytest.mark.parametrize("fault", ["kill", "exit"])
def test_a_killed_rank_is_left_out_a_spare_takes_its_place_and_training_resumes(tmp_path, fault):
    nodes = start(tmp_path, RUN + ["--fault", fault, "--fault-node", "1", "--fault-step", "12", "--half-written"],
                  spares=1)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert (record["decision"], record["generation"], record["restarts"]) == ("done", 1, 1)
    assert record["members"] == [0, 2] and record["left_out"] == {"1": 1}
    assert [(h["node"], h["cause"]) for h in record["history"]] == [(1, "crash")]
    [fault] = record["history"]  # what `nodeweave runs show` prints: the checkpoint resumed, the work after it lost
    assert (fault["resumed_step"], fault["resume_from"]) == (10, str(tmp_path / "checkpoints" / "step-10.pt"))
    assert 0 <= fault["work_lost_s"] < 30, fault  # steps 11-12 at 0.2 s, and the rank's start-up on a loaded machine
    assert resumed(nodes) == [(1, str(tmp_path / "checkpoints" / "step-10.pt"), 10)]  # not the cut-off step-1010
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]  # 10 steps restored + 20 after: nothing lost
    assert [s for s in steps(nodes[0]) if s[0] == 1][0] == (1, 11, 2)
    assert "generation 1: this node is LEFT OUT of the job: node 1: its launcher failed" in nodes[1].text()
    assert "recovery: the job finished after 1 recovery(ies)" in nodes[0].text()
    assert "(spare) is gone" not in nodes[0].text()  # it closed to check in for generation 1, as nodes do


def test_the_node_whose_rank_died_is_left_out_though_node_0s_rank_failed_first_seeing_it_go(tmp_path):
    """Node 1's torchrun looks at its ranks every 1.5 s (``--monitor-interval``), so node 0's rank, which only saw
    the peer go ("Connection reset by peer"), fails first: node 0 must not blame itself."""
    late = {1: {"NODEWEAVE_LAUNCHER_OPTIONS": "--monitor-interval 1.5"}}
    nodes = start(tmp_path, RUN + ["--fault", "kill", "--fault-node", "1", "--fault-step", "12"], spares=1,
                  per_node=late)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert [(h["node"], h["cause"]) for h in record["history"]] == [(1, "crash")], record["history"]
    assert record["members"] == [0, 2] and record["left_out"] == {"1": 1}
    # Node 0 either listened (its rank's failure came first) or heard node 1 first (on a loaded machine its
    # own torchrun can take longer than node 1's 1.5 s to notice): never "node 0: its launcher failed".
    assert "this node's ranks failed after a peer went away" in nodes[0].text() or \
        re.search(r"node 1 \(\S+\) failed: torchrun exited 1", nodes[0].text()), nodes[0].text()
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]


def test_without_a_spare_a_fixed_job_ends_on_every_node_naming_the_node_and_why(tmp_path):
    nodes = start(tmp_path, RUN + ["--fault", "exit", "--fault-node", "1", "--fault-step", "6"])
    codes = finish(nodes)
    assert codes == [8, 8], texts(nodes)
    for node in nodes:
        # the launcher's end, then the worker's own exit and the line before it (walk16b B15)
        assert re.search(r"recovery: the job ends: node 1: its launcher failed \(torchrun exited 1: rank 1 exited 1 "
                         r"\(last line before it: [^\n]*\)\); no spare takes its place and the job needs 2 node\(s\), "
                         r"1 left \(every node exits 8\)", node.text()), node.text()
    assert "recovery: generation 0 ended: node 1" in nodes[0].text(), nodes[0].text()
    assert "starting generation" not in nodes[0].text(), nodes[0].text()  # walk10 B14: none starts



def test_a_node_started_again_on_a_bare_host_after_its_job_gave_up_starts_the_job_anew(tmp_path):
    """The same command started again where no container engine restarts it (a bare host: these processes) is a
    new launch, not a restart: it says the book it found is of an ended launch and starts anew (walk18b B10, B11:
    every later job of the same id and port was skipped). A container's restart still is not one
    (tests/test_walk18_fix21a.py)."""
    nodes = start(tmp_path, RUN + ["--fault", "exit", "--fault-node", "1", "--fault-step", "6"])
    assert finish(nodes) == [8, 8], texts(nodes)
    back = [again(node) for node in nodes]
    assert finish(back) == [8, 8], texts(back)
    for node in back:
        assert "this start is a new launch, not a restart (no container" in node.text(), node.text()
        assert "already ended" not in node.text() and "check-in" in node.text(), node.text()


def test_an_elastic_job_goes_on_with_fewer_nodes(tmp_path):
    nodes = start(tmp_path, RUN + ["--fault", "exit", "--fault-node", "1", "--fault-step", "12"], nodes=2,
                  env={"NODEWEAVE_NNODES": "1:2"})
    codes = finish(nodes)
    assert codes == [0, 0], texts(nodes)
    record = book(tmp_path)
    assert (record["generation"], record["members"]) == (1, [0])
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]
    assert {s[2] for s in steps(nodes[0]) if s[0] == 1} == {1}


def test_a_stalled_rank_is_left_out_at_stall_timeout_and_its_spare_takes_over(tmp_path):
    env = {"NODEWEAVE_STALL_WARN": "3", "NODEWEAVE_STALL_TIMEOUT": "8"}
    nodes = start(tmp_path, RUN + ["--fault", "stop", "--fault-node", "1", "--fault-step", "12"], spares=1, env=env)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert [(h["node"], h["cause"]) for h in record["history"]] == [(1, "stall")]
    assert record["members"] == [0, 2]
    assert resumed(nodes) == [(1, str(tmp_path / "checkpoints" / "step-10.pt"), 10)]
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]


def test_a_stalled_ranks_node_slow_to_gather_its_stacks_keeps_beating_and_is_left_out_as_stalled_not_lost(tmp_path):
    """Node 0 asks node 1 for its ranks' stacks while node 1's rank is stopped, and node 1 takes 15 s to gather
    them (tests/held_entrypoint.py), longer than the heartbeat's 10 s: its heartbeat must go on meanwhile.
    Answered on the heartbeat's own thread (before e3fe90a), node 0 heard nothing from node 1 for 10 s and
    counted it lost before stall_timeout: cause "lost", not "stall"."""
    import sys
    from pathlib import Path

    from held_entrypoint import HOLD_VARIABLE

    entry = [sys.executable, str(Path(__file__).resolve().parent / "held_entrypoint.py")]
    env = {"NODEWEAVE_STALL_WARN": "3", "NODEWEAVE_STALL_TIMEOUT": "20"}  # the window for a loss: ask -> timeout
    nodes = start(tmp_path, RUN + ["--fault", "stop", "--fault-node", "1", "--fault-step", "12"], spares=1, env=env,
                  per_node={1: {HOLD_VARIABLE: "15"}}, entry=entry)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert [(h["node"], h["cause"]) for h in record["history"]] == [(1, "stall")], record["history"]
    assert record["members"] == [0, 2] and record["left_out"] == {"1": 1}, record
    assert "no heartbeat" not in nodes[0].text(), nodes[0].text()
    assert "1 rank (1): no answer from node 1 within 6s" in nodes[0].text(), nodes[0].text()  # the gather was held
    assert "generation 1: this node is LEFT OUT of the job: node 1: the job stalled" in nodes[1].text()
    for node in nodes:  # no thread of an entrypoint died: the spare's watch hearing the stall, the late answer
        assert "Exception in thread" not in node.text(), node.text()
    assert resumed(nodes) == [(1, str(tmp_path / "checkpoints" / "step-10.pt"), 10)]
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]


def test_a_node_slow_to_plan_its_generation_beats_meanwhile_and_is_not_counted_lost(tmp_path):
    """Node 1 takes 12 s to make generation 0's plan (tests/held_entrypoint.py; under load a late DNS answer for
    the master's name does that), longer than the heartbeat's 10 s. It beats meanwhile, so the job runs as one
    generation. Before, a worker began beating only once its launcher started: node 0 counted node 1 lost at
    10 s and the job went on without it (the full suite's e2e failure: 'no heartbeat for 10s' right after the
    check-in)."""
    import sys
    from pathlib import Path

    from held_entrypoint import PLAN_HOLD_VARIABLE

    entry = [sys.executable, str(Path(__file__).resolve().parent / "held_entrypoint.py")]
    nodes = start(tmp_path, RUN, spares=1, per_node={1: {PLAN_HOLD_VARIABLE: "12"}}, entry=entry)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert (record["generation"], record["history"], record["members"]) == (0, [], [0, 1]), record
    assert "no heartbeat" not in nodes[0].text(), nodes[0].text()
    assert done(nodes) == ["RECOVERY-DONE gen=0 step=30 state=30"]


def test_the_restart_budget_is_the_whole_jobs_and_ends_it_with_exit_8(tmp_path):
    bad = {rank: {"NODEWEAVE_TEST_NODE": "bad"} for rank in (1, 2, 3)}  # every node but node 0 crashes each time
    nodes = start(tmp_path, RUN + ["--fault", "exit", "--fault-node", "bad", "--fault-gen", "-1", "--fault-step", "7"],
                  spares=2, per_node=bad, env={"NODEWEAVE_RECOVERY_MAX_RESTARTS": "1"})
    codes = finish(nodes)
    assert codes == [8, 8, 8, 8], texts(nodes)
    record = book(tmp_path)
    assert (record["decision"], record["restarts"]) == ("stop", 2)
    assert [h["node"] for h in record["history"]] == [1, 2]
    for node in nodes:
        assert "recovery: the job ends: restart budget spent: 1 restart(s) (NODEWEAVE_RECOVERY_MAX_RESTARTS; set " \
               "with --recovery-max-restarts / NODEWEAVE_RECOVERY_MAX_RESTARTS, the spec's recovery.max_restarts); " \
               "the last fault: node 2: its launcher failed" in node.text(), node.text()
    assert "recovery: starting generation 1" in nodes[0].text(), nodes[0].text()  # walk10 B14: said once decided,
    assert "starting generation 2" not in nodes[0].text(), nodes[0].text()  # never for one that does not start


def test_restarts_without_a_newer_checkpoint_stop_the_job_with_exit_9(tmp_path):
    bad = {rank: {"NODEWEAVE_TEST_NODE": "bad"} for rank in (1, 2, 3)}
    nodes = start(tmp_path, RUN + ["--fault", "exit", "--fault-node", "bad", "--fault-gen", "-1", "--fault-step", "3"],
                  spares=2, per_node=bad, env={"NODEWEAVE_NO_PROGRESS_RESTARTS": "2"})
    codes = finish(nodes)
    assert codes == [9, 9, 9, 9], texts(nodes)
    for node in nodes:
        assert "recovery: the job ends: 2 restarts since the job started, no checkpoint yet in the checkpoint " \
               "folder " in node.text(), node.text()  # walk10 B17: the folder it looked in is named
        assert "(no-progress brake 2: NODEWEAVE_NO_PROGRESS_RESTARTS; set with --no-progress-restarts / " \
               "NODEWEAVE_NO_PROGRESS_RESTARTS, the spec's recovery.no_progress_restarts)" in node.text(), node.text()


def test_a_healthy_run_never_recovers(tmp_path):
    nodes = start(tmp_path, ["--steps", "40", "--interval", "0.1", "--save-every", "10"], spares=1,
                  env={"NODEWEAVE_STALL_WARN": "3", "NODEWEAVE_STALL_TIMEOUT": "8"})
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert (record["decision"], record["generation"], record["restarts"], record["history"]) == ("done", 0, 0, [])
    assert done(nodes) == ["RECOVERY-DONE gen=0 step=40 state=40"]
    assert "this node was not needed" in nodes[2].text()


def test_a_lost_node_is_left_out_and_its_spare_takes_over(tmp_path):
    import signal

    nodes = start(tmp_path, RUN, spares=1)
    wait_for_step(nodes[0], 12)
    nodes[1].proc.send_signal(signal.SIGKILL)  # the entrypoint itself: the node is gone
    codes = finish(nodes)
    assert codes == [0, -9, 0], texts(nodes)
    record = book(tmp_path)
    assert [(h["node"], h["cause"]) for h in record["history"]] == [(1, "lost")]
    assert record["members"] == [0, 2]
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]
    assert "check in again" not in nodes[0].text()  # the job ends at once: node 0 waits for no node lost before


def test_node_0s_crashing_rank_hands_its_training_slot_to_a_spare_and_node_0_stays_the_hub(tmp_path):
    nodes = start(tmp_path, RUN + ["--fault", "exit", "--fault-node", "0", "--fault-step", "12"], spares=1)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert record["members"] == [2, 1] and [(h["node"], h["cause"]) for h in record["history"]] == [(0, "crash")]
    assert "generation 1: this node is LEFT OUT of the job: node 0: its launcher failed" in nodes[0].text()
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]
    assert nodes[2].first("RECOVERY-RESUME gen=1") is not None  # the spare holds training rank 0 now


def test_node_0_lost_and_restarted_the_others_wait_and_training_resumes_from_the_checkpoint(tmp_path):
    import signal

    from recovery_harness import again

    nodes = start(tmp_path, RUN, spares=0)
    wait_for_step(nodes[0], 12)
    nodes[0].proc.send_signal(signal.SIGKILL)  # node 0's entrypoint: the hub is gone
    assert nodes[0].wait(30) == -9
    nodes[0] = again(nodes[0])  # as its container's restart policy would
    codes = finish(nodes)
    assert codes == [0, 0], texts(nodes)
    assert "recovery: node 0 came back; the other nodes ask for generation 1" in nodes[0].text(), nodes[0].text()
    [(generation, path, step)] = resumed(nodes)  # the kill lands at step 12 or, on a loaded machine, a little later
    assert generation == 1 and step in (10, 15) and path == str(tmp_path / "checkpoints" / f"step-{step}.pt")
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=30 state=30"]


def test_node_0_back_after_a_node_was_lost_for_good_takes_the_book_on_and_does_not_wait_for_the_lost_node(tmp_path):
    """Node 1 is lost (never comes back), its spare takes over; then node 0 is lost and restarted. Node 0 takes
    the job's book on from the nodes that kept it (restarts, node 1 left out) and relaunches with the nodes
    there, rather than waiting the check-in deadline for node 1 as a fresh job would (the 30-minute goodput
    benchmark's node-0 fault: refused, every node exit 3, after 120 s)."""
    import signal
    import time

    from recovery_harness import again

    deadline = 240  # the check-in deadline a fresh job would wait out (a restart took 99 s at load 20, no DNS)
    nodes = start(tmp_path, ["--steps", "60", "--interval", "0.2", "--save-every", "5"], spares=1,
                  env={"NODEWEAVE_WAIT_TIMEOUT": str(deadline)})
    wait_for_step(nodes[0], 12)
    nodes[1].proc.send_signal(signal.SIGKILL)  # node 1 is gone for good
    until = time.monotonic() + 120
    while not any(gen == 1 and step >= 22 for gen, step, _ in steps(nodes[0])):
        assert time.monotonic() < until, nodes[0].text()
        time.sleep(0.2)
    nodes[0].proc.send_signal(signal.SIGKILL)
    assert nodes[0].wait(30) == -9
    back = time.monotonic()
    nodes[0] = again(nodes[0])
    codes = finish(nodes)
    assert codes == [0, -9, 0], texts(nodes)
    first = nodes[0].first("RECOVERY-STEP gen=2", "out") or nodes[2].first("RECOVERY-STEP gen=2", "out")
    # not the deadline waited out for node 1: three quarters of it leaves a loaded machine's restarts room
    assert first is not None and first - back < deadline * 3 / 4, nodes[0].text()
    assert "going on from the book they kept (2 restart(s) with this one)" in nodes[0].text(), nodes[0].text()
    # it waits for the nodes of the generation it lost (node 2), not for all three as a fresh job would
    assert "node 0 is back: waiting up to 10s for node(s) 2, those of the generation it lost" in nodes[0].text()
    record = book(tmp_path)
    assert (record["decision"], record["generation"], record["restarts"]) == ("done", 2, 2), record
    assert record["members"] == [0, 2] and record["left_out"] == {"1": 1}, record
    assert [(h["node"], h["cause"]) for h in record["history"]] == [(1, "lost"), (None, "lost")], record
    assert done(nodes) == ["RECOVERY-DONE gen=2 step=60 state=60"]


def test_a_lasting_straggler_is_a_fault_its_node_is_left_out_and_a_spare_takes_over(tmp_path):
    env = {"NODEWEAVE_STALL_WARN": "60", "NODEWEAVE_STALL_TIMEOUT": "0", "NODEWEAVE_STRAGGLER_IS_FAULT": "on",
           "NODEWEAVE_STRAGGLER_FAULT": "2"}  # named 2 checks in a row (~7 s after it is first named)
    nodes = start(tmp_path, ["--steps", "400", "--interval", "0.03", "--save-every", "10", "--slow-node", "1",
                             "--slow-s", "0.25"], spares=1, env=env)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert (record["decision"], record["generation"], record["members"]) == ("done", 1, [0, 2])
    [fault] = record["history"]
    assert (fault["node"], fault["cause"]) == (1, "straggler") and fault["gap"] > 1, fault
    assert "a lasting straggler (rank(s) 1 named a straggler 2 checks in a row" in fault["why"]
    assert "STRAGGLER FAULT: node 1" in nodes[0].text() and "handed to recovery" in nodes[0].text()
    assert "generation 1: this node is LEFT OUT of the job: node 1: a lasting straggler" in nodes[1].text()
    assert done(nodes) == ["RECOVERY-DONE gen=1 step=400 state=400"]


def test_each_generation_after_the_first_starts_from_a_launcher_held_ready(tmp_path):
    """Warm start (running/warm.py) with real torchrun: node 1's rank is killed in generation 0 and the spare's in
    generation 1. Generation 1 runs on node 0's held launcher and the spare's (held while it waited), generation 2
    on node 0's and on node 1's, held while it sat out generation 1; each stop reached the launcher it became, and
    training resumed each time from the newest checkpoint."""
    import sys
    from pathlib import Path

    from held_entrypoint import WARM_AFTER_VARIABLE

    entry = [sys.executable, str(Path(__file__).resolve().parent / "held_entrypoint.py")]
    run = ["--steps", "70", "--interval", "0.2", "--save-every", "5", "--faults", "kill:1:0:25,kill:2:1:50"]
    nodes = start(tmp_path, run, spares=1, env={WARM_AFTER_VARIABLE: "0.5"}, entry=entry)
    codes = finish(nodes)
    assert codes == [0, 0, 0], texts(nodes)
    record = book(tmp_path)
    assert [(h["node"], h["cause"]) for h in record["history"]] == [(1, "crash"), (2, "crash")], record["history"]
    assert (record["generation"], record["members"]) == (2, [0, 1]), record
    # "its imports done" as a rule; "still importing" only when a loaded machine took longer than a generation
    taken = [len(re.findall(r"warm start: torchrun held ready for \d+s \((?:its imports done|still importing)\) "
                            r"takes this launch", node.text())) for node in nodes]
    assert taken == [2, 1, 1], texts(nodes)
    assert "starting it cold" not in "".join(texts(nodes))
    assert [step for _, _, step in resumed(nodes)] == [20, 45]  # each kill came before its step's save
    assert done(nodes) == ["RECOVERY-DONE gen=2 step=70 state=70"]


@pytest.mark.parametrize("nodes, spares", [(2, 1), (3, 0)], ids=["two-and-a-spare", "three"])
def test_the_same_error_on_every_node_is_the_jobs_own_and_ends_it_naming_the_error(tmp_path, nodes, spares):
    """Issue 41: every rank failed its first save with the same PermissionError (a workspace the image's user
    cannot write); recovery left node 1 out, then node 0's slot, took the spare, and ended with exit 9 "3 restarts
    since the job started, no checkpoint yet", never naming the error. The same exception from the script on
    every node is the job's own: it ends at once with exit 10, the error and the ranks' last lines named on every
    node, no node left out, no spare taken, no restart spent."""
    from nodeweave.entrypoint.errors import EXIT_JOB_ERROR

    run = ["--steps", "30", "--interval", "0.2", "--save-every", "5", "--fault", "raise", "--fault-node", "*",
           "--fault-step", "6"]
    started = start(tmp_path, run, nodes=nodes, spares=spares)
    codes = finish(started)
    assert codes == [EXIT_JOB_ERROR] * (nodes + spares), texts(started)
    record = book(tmp_path)
    assert (record["decision"], record["code"], record["generation"], record["restarts"]) == \
        ("stop", EXIT_JOB_ERROR, 0, 0), record
    assert record["left_out"] == {} and record["members"] == list(range(nodes)), record
    assert record["error"]["line"].startswith("PermissionError: [Errno 13] Permission denied: "), record["error"]
    assert len(record["error"]["nodes"]) >= 2, record["error"]
    for node in started:
        text = node.text()
        assert "recovery: the job ends: the job's own error, the same on node(s) " in text, text
        assert "PermissionError: [Errno 13] Permission denied" in text and "  | " in text, text
        assert "LEFT OUT" not in text and "no checkpoint yet" not in text, text
    assert [h["cause"] for h in record["history"]] == ["script"], record["history"]


def test_the_same_error_on_a_one_node_job_and_on_the_spare_that_replaced_it_is_the_jobs_own(tmp_path):
    """Issue 41's job's own error on a job of one training node and a spare: no two members raise at once, so
    node 0 was left out, the spare raised the same PermissionError, was left out too, and the job ended with
    exit 8 naming no error. The spare's raise is the job's own: exit 10 naming the error, no further node left out."""
    from nodeweave.entrypoint.errors import EXIT_JOB_ERROR

    run = ["--steps", "30", "--interval", "0.2", "--save-every", "5", "--fault", "raise", "--fault-node", "*",
           "--fault-gen", "-1", "--fault-step", "6"]  # every generation: the spare raises it too
    started = start(tmp_path, run, nodes=1, spares=1)
    codes = finish(started)
    assert codes == [EXIT_JOB_ERROR] * 2, texts(started)
    record = book(tmp_path)
    assert (record["decision"], record["code"], record["generation"], record["restarts"]) == \
        ("stop", EXIT_JOB_ERROR, 1, 1), record
    assert record["left_out"] == {"0": 1} and record["members"] == [1], record
    assert record["error"]["line"].startswith("PermissionError: [Errno 13] Permission denied: "), record["error"]
    assert record["error"]["nodes"] == [1, 0], record["error"]
    assert [h["cause"] for h in record["history"]] == ["crash", "script"], record["history"]
    for node in started:
        text = node.text()
        assert "recovery: the job ends: the job's own error, the same on node(s) 1, 0" in text, text
        assert "PermissionError: [Errno 13] Permission denied" in text, text
