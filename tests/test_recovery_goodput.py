"""benchmarks/recovery_goodput.py's arithmetic on made-up timelines: recovery time, steps lost, goodput."""

import sys
from argparse import Namespace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import recovery_goodput as bench  # noqa: E402

ARGS = Namespace(minutes=1.0, fault_every=30.0, ckpt_every="10s", step_time=1.0, soak=False)


def step(t, n, gen=0):
    return (t, 0, f"[rank 0/4 gen {gen}] step {n} loss 0.1 t={t:.3f}")


def test_a_fault_is_timed_to_the_first_step_after_the_resume_and_counts_the_steps_redone():
    lines = [step(100 + s, s) for s in range(1, 21)]  # steps 1..20 at 101..120, one a second
    lines += [(125.0, 1, "nodeweave-entrypoint: generation 1: this node is LEFT OUT of the job: node 1: ..."),
              (130.0, 0, "[rank 0/4 gen 1] resumed from step 10 (/work/checkpoints/step-10)")]
    lines += [step(131 + k, 11 + k, gen=1) for k in range(29)]  # steps 11..39 at 131..159
    fault = {"kind": "kill -9 rank", "node": 1, "t": 120.5}
    result = bench.measure("nodeweave", ARGS, sorted(lines), [fault], started=100.0, ended=160.0)
    row = result["faults"][0]
    assert (row["recovered_s"], row["steps_lost"]) == (10.5, 10)
    assert row["left_out"].startswith("nodeweave-entrypoint: generation 1: this node is LEFT OUT")
    assert result["final_step"] == 39
    # 39 steps kept, a second each (step 11's first run after the resume counts as a typical step): 39 s of 60
    assert result["goodput"] == round(39 / 60, 3)


def test_a_job_that_never_resumes_is_not_recovered_and_its_goodput_counts_the_dead_time():
    lines = [step(100 + s, s) for s in range(1, 11)]
    result = bench.measure("none", ARGS, lines, [{"kind": "kill -9 rank", "node": 1, "t": 110.5}],
                           started=100.0, ended=200.0)
    assert result["faults"][0]["recovered_s"] is None and result["faults"][0]["steps_lost"] is None
    assert result["goodput"] == 0.1


def test_the_schedule_cycles_through_the_fault_kinds():
    args = Namespace(minutes=30.0, fault_every=300.0, soak=False)
    assert bench._schedule(args)[:6] == list(bench.FAULTS) + ["kill -9 rank"]


def test_a_soak_has_no_faults_and_lists_every_line_of_a_recovery():
    assert bench._schedule(Namespace(minutes=30.0, fault_every=300.0, soak=True)) == []
    args = Namespace(minutes=1.0, fault_every=30.0, ckpt_every="10s", step_time=1.0, soak=True)
    lines = [(101.0, 0, "[rank 0/4 gen 0] step 1 loss 0.5 t=101.0"),
             (150.0, 0, "nodeweave-entrypoint: recovery: generation 0 ended: node 1: its launcher failed"),
             (151.0, 1, "nodeweave-entrypoint: generation 1: this node is LEFT OUT of the job")]
    result = bench.measure("nodeweave", args, lines, [], started=100.0, ended=160.0)
    assert [line.split(": ", 1)[1] for line in result["spurious"]] == [text for _, _, text in lines[1:]]


def test_a_rank_is_told_from_its_launcher_by_the_words_before_the_script():
    from recovery_cluster import is_rank

    script = "resilient_train.py"
    assert is_rank("/usr/bin/python3 -u resilient_train.py --ckpt /tmp/nw-recovery-torchrun-x/n1", script)
    assert not is_rank("/usr/bin/python3 /usr/bin/torchrun --nnodes 4 resilient_train.py", script)
    assert not is_rank("python3 /work/nodeweave-entrypoint.pyz --launcher torchrun -- resilient_train.py", script)
    assert not is_rank("python3 -m torch.distributed.run resilient_train.py", script)


def test_a_process_tree_node_is_every_process_it_started_and_is_killed_and_restarted_whole(tmp_path):
    """recovery_processes.ProcessNodes on real processes: a node's members found by its environment mark, the
    orphan of a killed parent included; a kill takes them all; a restart runs the command again."""
    import time

    from recovery_processes import ProcessNodes

    nodes = ProcessNodes("nwrb-unit", tmp_path)
    nodes.up(None, tmp_path, 2)
    argv = ["sh", "-c", "sleep 60 & sleep 60 & wait"]
    started = {i: nodes.start(i, argv, {}) for i in range(2)}
    try:
        deadline = time.time() + 10
        while time.time() < deadline and len(nodes.processes(1)) < 3:
            time.sleep(0.05)
        assert len(nodes.processes(1)) == 3 and len(nodes.processes(0)) == 3
        started[1].proc.kill()  # its first process gone: the two below it are orphans, still the node's
        started[1].proc.wait(10)
        assert len([p for p in nodes.processes(1) if p[1] != "Z"]) == 2
        nodes.kill(1)
        time.sleep(0.2)
        assert [p for p in nodes.processes(1) if p[1] != "Z"] == [] and not nodes.alive(1)
        assert len(nodes.processes(0)) == 3  # the other node untouched
        nodes.restart(started[0])
        assert started[0].runs == 2 and nodes.alive(0)
    finally:
        nodes.down(2)


def test_the_truth_labels_kept_steps_redone_steps_a_stall_and_the_recoveries_from_the_workloads_lines():
    """goodput_truth.py, the ground truth node 0's accounting is compared with: steps one a second; a crash at
    120.5 after step 20 (resumed from step 10 at 131); a SIGSTOP at 160.2 after step 39, given up at 170
    (resumed from step 30 at 180)."""
    from goodput_truth import compare, truth

    lines = [step(100 + s, s) for s in range(1, 21)]  # steps 1..20 end at 101..120
    lines += [step(131 + k, 11 + k, gen=1) for k in range(29)]  # 11..39 end at 131..159
    lines += [(170.0, 0, "nodeweave-entrypoint: recovery: generation 1 ended: node 2: the job stalled")]
    lines += [step(181 + k, 31 + k, gen=2) for k in range(10)]  # 31..40 end at 181..190
    faults = [{"kind": "kill -9 rank", "node": 1, "t": 120.5}, {"kind": "SIGSTOP rank", "node": 2, "t": 160.2},
              {"kind": "bad node", "node": None, "t": 175.0}]  # hit no node: not a fault
    true = truth(sorted(lines), faults, launched=95.0, ended=195.0)
    # start-up 95->100; kept: 1..10 (100->110), 11..30 (130->150), 31..40 (180->190), the step in flight to 195
    assert true == {"training": 45.0, "startup": 5.0, "recovery": 19.5, "redone": 19.5, "stalled": 11.0,
                    "idle": 0.0}
    accounted = {"buckets": dict(true, training=48.0, idle=-3.0)}
    rows = compare(accounted, true, 100.0)
    assert rows[0] == ("training", 48.0, 45.0, 3.0) and rows[-1][0] == "productive"
    assert abs(rows[-1][3] - 3.0) < 1e-9


def test_the_truth_counts_a_step_that_ends_just_after_a_fault_as_work_in_flight_not_a_resume():
    """Seen on podman: the kill landed 0.5 s after the benchmark noted the fault, a step line came after it,
    and the truth ended the recovery there (0.2 s) and counted the rest of the run as training in flight."""
    from goodput_truth import truth

    lines = [step(100 + s, s) for s in range(1, 21)]  # steps 1..20 end at 101..120; the fault is noted at 118.5
    lines += [step(141 + k, 11 + k, gen=1) for k in range(10)]  # resumed from 10: 11..20 end at 141..150
    fault = {"kind": "bad node", "node": 2, "t": 118.5}  # its kill landed after step 20 began (119)
    true = truth(sorted(lines), [fault], launched=100.0, ended=160.0)
    # recovery 118.5 -> 140 (the resumed run's first step began); gen 0's steps 11..20 (110 -> 120) redone, less
    # what is recovery; training: 1..10, 11..20 again, the step in flight at the end
    assert (true["recovery"], true["redone"], true["training"], true["idle"]) == (21.5, 8.5, 30.0, 0.0)
    late = {"kind": "node 0 killed", "node": 0, "t": 149.8}  # after the last step began (149): none in flight
    true = truth(sorted(lines), [fault, late], launched=100.0, ended=160.0)
    assert true["training"] == 20.0 and true["recovery"] == 31.5
