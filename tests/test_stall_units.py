"""The stall watch's parts without a launcher: the rank probe and its record, real faulthandler dumps
classified and grouped, the stall and straggler judgements on views."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from nodeweave.entrypoint.stall import judge, stacks
from nodeweave.entrypoint.stall.ranks import RankFolder
from nodeweave.entrypoint.stall.rankhook import nodeweave_rankprobe as probe
from nodeweave.entrypoint.stall.setup import HOOK
from nodeweave.entrypoint.stall.watcher import StallWatch

SLEEPER = textwrap.dedent("""\
    import os, sys, time
    def load_batch():
        time.sleep(60)
    print("ready", flush=True)
    load_batch()
    """)


def start_rank(tmp_path, script, rank=3, extra_env=None):
    (tmp_path / "loader.py").write_text(script)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": HOOK, "NODEWEAVE_RANKWATCH_DIR": str(tmp_path),
           "RANK": str(rank), "LOCAL_RANK": "0", **(extra_env or {})}
    proc = subprocess.Popen([sys.executable, str(tmp_path / "loader.py")], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_a_sleeping_rank_is_seen_and_its_stack_read_without_stopping_it(tmp_path):
    proc = start_rank(tmp_path, SLEEPER)
    try:
        folder = RankFolder(str(tmp_path), node=1, host="h", pod="p")
        deadline = time.monotonic() + 10
        view = folder.sample()
        while view[0]["state"] != "S" and time.monotonic() < deadline:  # from print() to sleep()
            time.sleep(0.05)
            view = folder.sample()
        assert [(v["rank"], v["pid"], v["seq"], v["inside"]) for v in view] == [(3, proc.pid, 0, False)]
        assert view[0]["state"] == "S"
        described = [stacks.describe_rank(v, t) for v, t in zip(view, folder.stacks(view).values())]
        assert described[0]["label"] == "line 3 (call not resolved) (loader.py:3)", described  # not asked where
        described = StallWatch(folder, 60, 0, lambda line: None).stacks(view)
        assert described[0]["label"] == "time.sleep (loader.py:3)", described
        assert [f[2] for f in described[0]["frames"]] == ["load_batch", "<module>"]
        assert proc.poll() is None  # dumping a stack does not stop the rank
    finally:
        proc.kill()
        proc.wait()


def test_a_stopped_rank_is_not_signalled_and_says_so(tmp_path):
    proc = start_rank(tmp_path, SLEEPER)
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(0.2)
        folder = RankFolder(str(tmp_path), node=0, host="h", pod="p")
        view = folder.sample()
        assert view[0]["state"] == "T"
        assert folder.stacks(view)[3].startswith("stopped (stopped, e.g. SIGSTOP)")
    finally:
        proc.kill()
        proc.wait()


def test_a_launcher_process_without_local_rank_starts_no_probe_and_the_hidden_sitecustomize_still_runs(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['IMAGE_SITECUSTOMIZE'] = 'ran'\n")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": f"{HOOK}:{other}", "NODEWEAVE_RANKWATCH_DIR": str(tmp_path),
           "RANK": "0"}
    out = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('IMAGE_SITECUSTOMIZE'))"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ran" and out.stderr == ""
    assert not list(tmp_path.glob("rank-*"))


def test_the_probe_counts_outermost_collectives_and_a_torn_record_reads_as_none(tmp_path):
    p = probe.Probe(str(tmp_path / "rank-0.bin"), 0, 0)

    def inner():
        return "inner"

    def outer():
        return wrapped_inner()
    wrapped_inner = probe.wrap(p, "all_gather", inner)
    wrapped_outer = probe.wrap(p, "all_gather_object", outer)
    assert wrapped_outer() == "inner"
    record = probe.read(bytes(p.map[:256]))
    assert record["seq"] == 1 and record["name"] == "all_gather_object" and record["entered"] == 0.0
    data = bytearray(p.map[:256])
    data[4] = 1  # gen odd: a writer is half way
    assert probe.read(bytes(data)) is None


def view(rank, seq, since, node=0, state="S", name="all_reduce", inside=True):
    return {"rank": rank, "node": node, "host": f"h{node}", "pod": f"h{node}", "seq": seq, "since_s": since,
            "state": state, "name": name, "inside": inside, "pid": 100 + rank, "outside_s": 0.0}


def test_a_rank_behind_while_nobody_moves_is_a_stall_and_equal_counts_are_not():
    found = judge.find_stall([view(0, 9, 31.0), view(1, 8, 45.0, node=1, inside=False), view(2, 9, 30.5, node=1)])
    assert [v["rank"] for v in found["culprits"]] == [1] and found["seq"] == 9 and found["for_s"] == 30.5
    assert found["collective"] == "all_reduce"
    assert judge.find_stall([view(0, 9, 300.0, inside=False), view(1, 9, 300.0, node=1, inside=False)]) is None


def test_a_rank_that_exited_behind_the_others_is_the_culprit():
    found = judge.find_stall([view(0, 13, 20.0), view(1, 12, 25.0, node=1, state="gone")])
    assert [v["rank"] for v in found["culprits"]] == [1] and found["for_s"] == 20.0


def test_a_straggler_is_named_after_consistent_windows_and_a_single_long_save_is_not():
    tracker = judge.Stragglers(window_s=10, confirm=3)
    outside = {0: 0.0, 1: 0.0, 2: 0.0}
    named = []
    for beat in range(20):
        now = beat * 2.0
        for rank in outside:
            outside[rank] += 0.2 * 10 * (1.3 if rank == 2 else 1.0)  # 10 collectives per beat
            if rank == 0 and beat == 8:
                outside[rank] += 30.0  # one long save
        tracker.feed(now, [dict(view(r, 2 + 10 * beat, 0.1), outside_s=outside[r]) for r in outside])
        named = tracker.evaluate(now)
    assert [n["rank"] for n in named] == [2]
    assert abs(named[0]["gap"] - 0.3) < 0.01


def test_stack_classes_group_identical_stacks_and_the_largest_class_comes_first(tmp_path):
    dump = textwrap.dedent("""\
        Thread 0x00007f0000000002 (most recent call first):
          File "/usr/lib/python3.11/threading.py", line 320 in wait

        Current thread 0x00007f0000000001 (most recent call first):
          File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2501 in all_reduce
          File "/workspace/nodeweave_rankprobe.py", line 103 in nodeweave_collective
          File "/workspace/train.py", line 88 in step
          File "/workspace/train.py", line 120 in <module>
        """)
    ranks = [{"rank": r, "thread": 0x7f0000000001, "inside": True, "name": "all_reduce"} for r in range(15)]
    described = [stacks.describe_rank(r, dump) for r in ranks]
    described.append({"rank": 15, "label": "time.sleep (loader.py:41)", "frames": [["/w/loader.py", 41, "load"]]})
    classes = stacks.group(described)
    lines = stacks.render(classes)
    assert lines[0] == "  15 ranks (0, 1, 2, 3, 4, 5, ... 14): in all_reduce (train.py:88)"
    assert "  1 rank (15): time.sleep (loader.py:41)" in lines
    assert not any("nodeweave_rankprobe" in line for line in lines)


def test_a_command_launcher_is_watched_only_when_its_command_starts_ranks():
    from nodeweave.entrypoint.stall.local import starts_ranks

    assert starts_ranks(["torchrun", "--standalone", "train.py"], {})
    assert starts_ranks(["/usr/bin/python3", "-m", "torch.distributed.run", "train.py"], {})
    assert starts_ranks(["accelerate", "launch", "train.py"], {})
    assert starts_ranks(["python", "train.py"], {"RANK": "0", "LOCAL_RANK": "0"})
    assert not starts_ranks(["python", "train.py"], {"RANK": "0"})
    assert not starts_ranks(["sh", "-c", "torchrun x"], {})
    assert not starts_ranks(["python", "-m"], {})


def test_a_node_that_sees_only_its_own_ranks_names_a_wait_when_all_are_inside_the_same_collective():
    def view(rank, seq, since, inside=True, state="S"):
        return {"rank": rank, "node": 0, "seq": seq, "since_s": since, "inside": inside, "state": state,
                "name": "all_reduce", "fr_enqueued": -1}

    found = judge.find_wait([view(0, 8, 12.0), view(1, 8, 11.0)])
    assert found["where"] == "all_reduce #8" and found["culprits"] == [] and found["for_s"] == 11.0
    assert judge.find_wait([view(0, 8, 12.0), view(1, 8, 11.0, inside=False)]) is None  # one is outside: not a wait
    assert judge.find_wait([view(0, 8, 12.0), view(1, 7, 11.0)]) is None  # counts differ: find_stall's case
    assert judge.find_wait([view(0, 8, 12.0), view(1, 8, 11.0, state="gone")]) is None


def test_the_flight_recorders_counts_decide_when_the_python_counts_are_equal():
    def view(rank, seq, fr, since=30.0):
        return {"rank": rank, "node": rank, "seq": seq, "since_s": since, "inside": False, "state": "S",
                "name": "init_process_group", "fr_enqueued": fr}

    found = judge.find_stall([view(0, 1, 12), view(1, 1, 11)])
    assert [v["rank"] for v in found["culprits"]] == [1]
    assert found["where"].startswith("a collective issued from C++ (flight recorder seq 12")
    assert judge.find_stall([view(0, 1, 12), view(1, 1, -1)]) is None  # one rank's recorder unread: Python counts


def test_a_rank_behind_only_in_a_flight_recorder_count_read_before_its_last_move_is_not_a_stall():
    """A job's end on a loaded machine (clean-container CI): rank 1 finished every Python collective and exited
    (or is exiting: its flight thread stopped reading); its recorder count is the one read before its last
    barrier, below rank 0's. That count is stale, not the rank behind: a false STALL there started a whole
    recovery generation. A live rank whose thread read the count after its last move is behind for real."""
    def view(rank, seq, fr, state="S", since=9.0, polled=0.5):
        return {"rank": rank, "node": rank, "seq": seq, "since_s": since, "inside": False, "state": state,
                "name": "barrier", "fr_enqueued": fr, "polled_s": polled}

    assert judge.find_stall([view(0, 33, 29), view(1, 33, 28, state="gone", polled=9.5)]) is None
    assert judge.find_stall([view(0, 33, 29), view(1, 33, 28, polled=9.5)]) is None  # exiting: thread stopped
    assert judge.find_stall([view(0, 33, 29), view(1, 33, 28)])["culprits"][0]["rank"] == 1  # read since: a stall
    behind = judge.find_stall([view(0, 33, 29), view(1, 32, 28, state="gone")])  # a Python collective behind
    assert [v["rank"] for v in behind["culprits"]] == [1]


def test_the_rank_record_keeps_when_the_flight_thread_last_read_the_recorder(tmp_path):
    p = probe.Probe(str(tmp_path / "rank-0.bin"), 0, 0)
    assert probe.read(bytes(p.map[:probe.LAYOUT.size]))["polled"] == 0.0
    p.recorded(5, 5)
    first = probe.read(bytes(p.map[:probe.LAYOUT.size]))
    assert first["polled"] > 0 and first["changed"] == first["polled"] and first["fr_enqueued"] == 5
    time.sleep(0.05)
    p.recorded(5, 5)  # nothing moved: the read's time is kept, the rank's last move is not
    again = probe.read(bytes(p.map[:probe.LAYOUT.size]))
    assert again["polled"] > first["polled"] and again["changed"] == first["changed"]
    [seen] = RankFolder(str(tmp_path), node=0, host="h", pod="p").sample(now=again["polled"] + 3.0)
    assert seen["polled_s"] == 3.0 and seen["since_s"] > seen["polled_s"] and not judge.stale_record(seen)


def test_the_flight_summary_names_the_last_collective_entered_and_completed():
    import json

    from nodeweave.entrypoint.stall import flight

    def entry(i, seq, done, group=("0", "default_pg")):
        return {"record_id": i, "time_created_ns": i, "collective_seq_id": seq, "profiling_name": "nccl:all_reduce",
                "input_sizes": [[1048576]], "input_dtypes": ["Float"], "retired": done, "state": "scheduled",
                "process_group": list(group), "is_p2p": False}

    dump = json.dumps({"recorders": {"nccl": {"entries": [entry(0, 5, True), entry(1, 6, False)]}}})
    assert flight.summary(dump) == ("entered seq 6 nccl:all_reduce [[1048576]] Float (not completed, scheduled); "
                                    "completed seq 5 nccl:all_reduce [[1048576]] Float")
    assert flight.summary("{}") == "flight recorder: unreadable dump"
    described = [{"rank": 0, "flight": "a"}, {"rank": 2, "flight": "a"}, {"rank": 1, "flight": "b"}]
    assert flight.lines(described) == ["    ranks 0, 2: a", "    rank 1: b"]


TWO_CALLS = textwrap.dedent("""\
    import os, sys, time
    def load_batch():
        started = time.time(); time.sleep(3600)
    print("ready", flush=True)
    load_batch()
    """)


def test_the_class_names_the_call_that_is_executing_not_the_first_call_on_its_line(tmp_path):
    """``started = time.time(); time.sleep(3600)``: the rank sleeps, so the class is time.sleep (the frame's
    position says which call runs), not time.time, the first call on the line."""
    proc = start_rank(tmp_path, TWO_CALLS)
    try:
        folder = RankFolder(str(tmp_path), node=1, host="h", pod="p")
        deadline = time.monotonic() + 10
        view = folder.sample()
        while view[0]["state"] != "S" and time.monotonic() < deadline:
            time.sleep(0.05)
            view = folder.sample()
        time.sleep(0.3)
        described = StallWatch(folder, 60, 0, lambda line: None).stacks(view)
        assert described[0]["label"] == "time.sleep (loader.py:3)", described
    finally:
        proc.kill()
        proc.wait()


def test_a_call_whose_position_is_not_known_is_said_to_be_unresolved_not_guessed(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import time\nstarted = time.time(); time.sleep(3600)\n")
    frames = [(str(script), 2, "<module>")]
    assert stacks.classify(frames) == "line 2 (call not resolved) (job.py:2)"
    where = [[[str(script), 2, "<module>", 2, 2, 23, 39, True]]]
    assert stacks.classify(frames, where=where) == "time.sleep (job.py:2)"
    saver = tmp_path / "save.py"  # a rank inside torch.save's own frames: the stack says which call it is in
    saver.write_text("import io, torch\ntorch.save(torch.zeros(9), io.BytesIO())\n")
    inside = [("/v/lib/python3.11/site-packages/torch/serialization.py", 900, "save"), (str(saver), 2, "<module>")]
    assert stacks.classify(inside) == "torch.save (save.py:2)"
    assert stacks.classify([(inside[0][0], 1, "wrapper"), inside[1]]) == "line 2 (call not resolved) (save.py:2)"


def test_a_dump_that_caught_a_busy_rank_on_its_loop_line_is_outvoted_by_the_ranks_own_looks(tmp_path):
    """``while time.time() < until: torch.save(...)``: the dump is one instant and now and then lands on the
    loop's line; the class is where most looks saw the rank (the CI failure of the 45 s checkpoint test)."""
    script = tmp_path / "save.py"
    script.write_text("import io, time, torch\nuntil = time.time() + 45\nwhile time.time() < until:\n"
                      "    torch.save(torch.zeros(9), io.BytesIO())\n")
    dump = textwrap.dedent(f"""\
        Current thread 0x00007f0000000001 (most recent call first):
          File "{script}", line 3 in <module>
        """)
    lib = "/opt/venv/lib/python3.11/site-packages/torch/serialization.py"
    saving = [[lib, 650, "_save", 650, 650, 4, 30, True], [lib, 900, "save", 900, 900, 8, 40, True],
              [str(script), 4, "<module>", 4, 4, 4, 44, True]]
    looping = [[str(script), 3, "<module>", 3, 3, 6, 17, True]]
    rank = {"rank": 0, "thread": 0x7f0000000001, "inside": False, "name": ""}
    described = stacks.describe_rank(rank, dump, where=[saving, looping, saving, saving])
    assert described["label"] == "torch.save (save.py:4)", described
    assert described["frames"][-1] == [str(script), 4, "<module>"] and len(described["frames"]) == 3
    tie = stacks.describe_rank(rank, dump, where=[saving])  # one look against the dump: the dump stands
    assert tie["label"] == "line 3 (call not resolved) (save.py:3)", tie
    inside = dict(rank, inside=True, name="barrier")  # inside a collective the dump is the answer
    assert stacks.describe_rank(inside, dump, where=[saving] * 5)["label"] == "in barrier (save.py:3)"


def test_a_dump_caught_on_the_calls_own_line_between_two_calls_shows_a_look_from_inside_the_call(tmp_path):
    """``torch.save(...)`` called again and again: the dump now and then catches the rank on that very line,
    but between two calls, with no frame of torch.save below it (the CI failure of the long-save process
    test). The line is the same; a look from inside the call says which call it is."""
    script = tmp_path / "save.py"
    script.write_text("import io, torch\nfor _ in range(10 ** 6):\n    torch.save(torch.zeros(9), io.BytesIO())\n")
    dump = textwrap.dedent(f"""\
        Current thread 0x00007f0000000001 (most recent call first):
          File "{script}", line 3 in <module>
        """)
    lib = "/opt/venv/lib/python3.11/site-packages/torch/serialization.py"
    saving = [[lib, 900, "save", 900, 900, 8, 40, True], [str(script), 3, "<module>", 3, 3, 4, 44, True]]
    between = [[str(script), 3, "<module>", 3, 3, 4, 44, True]]
    rank = {"rank": 0, "thread": 0x7f0000000001, "inside": False, "name": ""}
    described = stacks.describe_rank(rank, dump, where=[between, saving, between])
    assert described["label"] == "torch.save (save.py:3)", described
    assert described["frames"][0][0] == lib
    alone = stacks.describe_rank(rank, dump, where=[between])  # no look from inside: the dump as it is
    assert alone["frames"] == [[str(script), 3, "<module>"]], alone


def nccl_views(beat, waits, host_s=0.2, collectives=10):
    """Views at a beat of ranks whose collectives return at once (NCCL): the same host time per collective
    on every rank, and ``waits[rank]`` s of device time per collective waiting for the others."""
    views = []
    for rank, wait in waits.items():
        n = beat * collectives
        views.append(dict(view(rank, 2 + n, 0.1, node=rank), inside_s=0.00002 * n, outside_s=host_s * n,
                          device_wait_s=wait * n, device_timed=n))
    return views


def test_under_nccl_the_rank_the_others_wait_for_on_the_device_is_named_and_a_healthy_run_is_not():
    tracker, healthy = judge.Stragglers(window_s=10, confirm=3), judge.Stragglers(window_s=10, confirm=3)
    for beat in range(20):
        tracker.feed(beat * 2.0, nccl_views(beat, {0: 0.15, 1: 0.001}))
        named = tracker.evaluate(beat * 2.0)
        healthy.feed(beat * 2.0, nccl_views(beat, {0: 0.002 + 0.001 * (beat % 2), 1: 0.002}))
        assert healthy.evaluate(beat * 2.0) == []
    assert [(n["rank"], n["node"], n["device"]) for n in named] == [(1, 1, True)], named
    assert abs(named[0]["per_s"] - 0.199) < 0.002 and abs(named[0]["ref_s"] - 0.05) < 0.002, named
    old = judge.Stragglers(window_s=10, confirm=3)  # host time outside collectives alone (the gloo rule) is blind
    for beat in range(20):
        old.feed(beat * 2.0, [dict(v, device_timed=0) for v in nccl_views(beat, {0: 0.15, 1: 0.001})])
        assert old.evaluate(beat * 2.0) == []


def test_a_straggler_named_in_n_checks_in_a_row_is_handed_to_the_recovery_engine_once(tmp_path):
    from nodeweave.entrypoint.stall.local import LocalWatch

    class Peers(LocalWatch):
        beat = 0

        def peer_views(self):
            self.beat += 1
            return nccl_views(self.beat, {0: 0.15, 1: 0.001})

    said, faults = [], []
    peers = Peers(said.append, "test", other_nodes=True)
    now = [0.0]
    watch = StallWatch(RankFolder(str(tmp_path), node=0, host="h0", pod="h0"), 60, 0, said.append,
                       run_dir=str(tmp_path / "run"), clock=lambda: now[0], fault_checks=4)
    watch.stragglers = judge.Stragglers(window_s=10, confirm=3)
    peers.on_straggler_fault = lambda watch, fault: faults.append(fault) or True
    for beat in range(30):
        now[0] = beat * 2.0
        watch.hub_tick(peers)
    assert [(f["node"], f["ranks"], f["checks"]) for f in faults] == [(1, [1], 4)], faults
    lines = [line for line in said if line.startswith("STRAGGLER")]
    assert lines[0].startswith("STRAGGLER: node 1 (host h1): all its ranks are"), lines
    assert lines[1].startswith("STRAGGLER: rank 1 (node 1, host h1) is 29") and "wait for it on the GPU" in lines[1]
    assert lines[2] == ("STRAGGLER FAULT: node 1 (host h1): rank 1 named a straggler 4 checks in a row "
                        f"({faults[0]['gap'] * 100:.0f}% slower); handed to recovery"), lines
    assert len(lines) == 3
    assert "STRAGGLER FAULT: node 1" in (tmp_path / "run" / "stalls.txt").read_text()


def test_the_fault_checks_come_from_the_setting_else_from_the_recovery_engines_switch():
    from nodeweave.entrypoint.stall.setup import FAULT_CHECKS, fault_checks

    assert fault_checks({}) == 0
    assert fault_checks({"straggler_fault": 4}) == 4
    assert fault_checks({"straggler_is_fault": True}) == FAULT_CHECKS
    assert fault_checks({"straggler_is_fault": True, "straggler_fault": 2}) == 2
    assert fault_checks({"straggler_is_fault": False}) == 0


def test_node_0s_stall_report_is_gathered_off_the_heartbeats_thread_and_the_stop_waits_for_it(tmp_path):
    """Issue 41: hub_tick runs on node 0's heartbeat thread, and its stack gather (this node's ranks, then up to
    GATHER_S for the others) held that thread ~9.5 s against the 10 s a node waits before counting node 0 lost.
    The tick now returns at once; the report still comes, and the stop at stall_timeout only after it."""
    import threading
    import time

    from nodeweave.entrypoint.stall.local import LocalWatch

    class Peers(LocalWatch):
        def peer_views(self):
            return [view(1, 8, 45.0, node=1, inside=False), view(2, 9, 30.5, node=1)]

        def stop_all(self, label, how, code, node=None):
            stops.append((label, code, len([line for line in said if line.startswith("STALL")])))

    said, stops = [], []
    peers = Peers(said.append, "test", other_nodes=True)
    watch = StallWatch(RankFolder(str(tmp_path), node=0, host="h0", pod="h0"), 3, 20, said.append,
                       run_dir=str(tmp_path / "run"))
    release = threading.Event()
    watch.view = lambda: [view(0, 9, 31.0)]
    watch.stacks = lambda own: [{"rank": 0, "label": "in all_reduce", "frames": [], "waited": release.wait(3)}]
    started = time.monotonic()
    watch.hub_tick(peers)
    assert time.monotonic() - started < 1.0, "the tick waited for the stacks on the heartbeat's thread"
    assert watch.report_in_flight() and stops == []
    watch.hub_tick(peers)  # past stall_timeout (31 s >= 20 s): the stop waits for the report in flight
    assert stops == [] and watch.report_in_flight()
    release.set()
    watch.reporting.join(10)
    assert any(line.startswith("STALL") for line in said), said
    watch.hub_tick(peers)
    assert stops and stops[0][1] == 7 and stops[0][2] >= 1, stops  # stopped after the report was printed


def test_the_device_timer_finds_the_collectives_tensor_wherever_torch_takes_it():
    from nodeweave.entrypoint.stall.rankhook import nodeweave_device as device

    class Tensor:
        is_cuda = False

    t, u = Tensor(), Tensor()
    assert device.first_tensor((t,), {}) is t  # all_reduce(t)
    assert device.first_tensor(([u, t], t), {}) is u  # all_gather(list, t): the list's first
    assert device.first_tensor(([], t), {}) is t
    assert device.first_tensor((), {"tensor": t}) is t
    assert device.first_tensor((None,), {"output_tensor": u, "tensor": t}) is t  # torch's order of names
    assert device.first_tensor((), {"tensor_list": [u]}) is u
    assert device.first_tensor(("x", 3), {"async_op": True}) is None
    assert device.timer_for((t,), {}) is None  # a CPU tensor: no device timer


def test_the_record_names_the_ranks_pid_and_the_hook_keeps_counting_across_calls(tmp_path):
    record = probe.Probe(str(tmp_path / "rank-0.bin"), 0, 0)
    wrapped = probe.wrap(record, "all_reduce", lambda tensor: tensor)
    for i in range(3):
        assert wrapped(i) == i
    data = probe.read(bytes(record.map[:probe.LAYOUT.size]))
    assert data["pid"] == os.getpid() and data["seq"] == 3 and data["name"] == "all_reduce"
    assert data["inside_s"] >= 0 and data["outside_s"] >= 0
