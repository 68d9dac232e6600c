"""Stragglers from NCCL's flight recorder durations (``TORCH_NCCL_ENABLE_TIMING``): every NCCL collective,
DDP's reducer's from C++ included, turned into the device wait the judge reads.

The recorder JSON here has the shape torch 2.11 writes (``_dump_nccl_trace_json(True, False)``, copied
from a dump on 2x H100, NCCL 2.28.9): the rank's real probe record, the flight thread's real read and
the node's real sampling carry it to the real judge; only the recorder's contents are made up."""

import json

from nodeweave.entrypoint.stall import judge, setup
from nodeweave.entrypoint.stall.ranks import RankFolder
from nodeweave.entrypoint.stall.rankhook import nodeweave_flight as flight
from nodeweave.entrypoint.stall.rankhook import nodeweave_rankprobe as rankprobe


def entry(seq, state="completed", duration_ms=None, name="nccl:all_reduce", group="0", created_ns=0):
    """One entry as torch writes it; ``duration_ms`` only on a retired one, as torch does."""
    done = state == "completed"
    e = {"collective_seq_id": seq, "input_dtypes": ["Float"], "input_sizes": [[1048576]], "is_p2p": False,
         "op_id": seq, "output_dtypes": ["Float"], "output_sizes": [[1048576]], "p2p_seq_id": 0, "pg_id": 0,
         "process_group": [group, "default_pg" if group == "0" else "tp"], "profiling_name": name,
         "record_id": seq - 1, "retired": done, "state": state, "thread_id": "139739611328832",
         "thread_name": "python3", "time_created_ns": created_ns,
         "time_discovered_completed_ns": created_ns + 1000 if done else None,
         "time_discovered_started_ns": created_ns + 500 if state != "scheduled" else None, "timeout_ms": 600000}
    if done and duration_ms is not None:
        e["duration_ms"] = duration_ms
    return e


def dump(entries):
    return {"comm_lib_version": "2.28.9", "entries": entries[-2000:], "nccl_comm_state": {}, "pg_config": {},
            "pg_status": {"0": {"last_enqueued_collective": len(entries), "last_completed_collective": len(entries)}},
            "version": "2.10"}


def test_completed_collectives_are_read_once_and_running_ones_wait_for_a_later_read():
    entries = [entry(1, duration_ms=150.0), entry(2, duration_ms=2.0), entry(3, state="started"),
               entry(4, state="scheduled")]
    assert flight.completed_durations(dump(entries), -1) == (2, 0.152, 2, False)
    entries[2] = entry(3, duration_ms=4.0)  # done by the next read; 4 still queued
    assert flight.completed_durations(dump(entries), 2) == (3, 0.004, 1, False)
    assert flight.completed_durations(dump(entries), 3) == (3, 0.0, 0, False)


def test_other_groups_point_to_point_and_gloo_entries_are_left_out():
    entries = [entry(1, duration_ms=1.0), entry(2, duration_ms=50.0, group="1"), entry(3, duration_ms=50.0,
               name="gloo:all_reduce"), dict(entry(4, duration_ms=50.0, name="nccl:send"), is_p2p=True)]
    assert flight.completed_durations(dump(entries), 0) == (1, 0.001, 1, False)


def test_collectives_the_ring_dropped_between_reads_start_a_new_span_and_faster_reads(tmp_path):
    probe = rankprobe.Probe(str(tmp_path / "rank-0.bin"), 0, 0)
    ring = [entry(seq, duration_ms=100.0) for seq in range(1, 2001)]
    flight._durations(probe, lambda *_: json.dumps(dump(ring)).encode(), 0.0)  # the first read: a start only
    ring = [entry(seq, duration_ms=100.0) for seq in range(2001, 2101)]
    flight._durations(probe, lambda *_: json.dumps(dump(ring)).encode(), 10.0)
    assert (probe.fr_seen, probe.fr_timed, probe.fr_span) == (2100, 100, 10.0)
    ring = [entry(seq, duration_ms=100.0) for seq in range(2201, 4201)]  # 2101..2200 dropped from the ring
    flight._durations(probe, lambda *_: json.dumps(dump(ring)).encode(), 20.0)
    assert (probe.fr_seen, probe.fr_timed, probe.fr_span) == (4200, 100, 10.0)  # nothing added: a new start
    assert probe.durations_s == flight.DURATIONS_S / 2
    assert flight.completed_durations(dump(ring), 2100)[3] and not flight.completed_durations(dump(ring), 2200)[3]


class Rank:
    """One rank: its real probe record in its node's folder, a recorder ring as DDP's reducer fills it."""

    def __init__(self, tmp_path, rank):
        folder = tmp_path / f"node-{rank}"
        folder.mkdir()
        self.probe = rankprobe.Probe(str(folder / f"rank-{rank}.bin"), rank, 0)
        self.probe.enter(b"init_process_group")  # the only Python-issued collective: DDP's come from C++
        self.probe.leave()
        self.folder = RankFolder(str(folder), node=rank, host=f"h{rank}", pod=f"h{rank}")
        self.entries = []

    def step(self, waits_ms, at_s):
        """One DDP step: one all-reduce per gradient bucket, each with this rank's device duration."""
        for wait in waits_ms:
            self.entries.append(entry(len(self.entries) + 1, duration_ms=wait + 1.5, created_ns=int(at_s * 1e9)))

    def read(self, now):
        """The flight thread's read, with one more bucket still running on the device."""
        running = entry(len(self.entries) + 1, state="started")
        text = json.dumps(dump(self.entries + [running])).encode()
        flight._durations(self.probe, lambda collectives, only_active: text, now)


def run_ddp(tmp_path, rank_waits, seconds=60.0, step_s=0.2, beat_s=3.3):
    """Two ranks in lockstep for ``seconds``; ``rank_waits(rank, step)`` gives the step's bucket waits (ms).
    The recorder is read every DURATIONS_S, node 0 judges every beat; returns what it named, and when."""
    ranks = [Rank(tmp_path, r) for r in (0, 1)]
    stragglers, named_at = judge.Stragglers(), None
    t, step, next_read, next_beat, named = 0.0, 0, 0.0, beat_s, []
    while t < seconds:
        for r in ranks:
            r.step(rank_waits(r.probe.rank, step), t)
        step, t = step + 1, t + step_s
        if t >= next_read:
            for r in ranks:
                r.read(t)
            next_read += flight.DURATIONS_S
        if t >= next_beat:
            views = [v for r in ranks for v in r.folder.sample(now=t)]
            assert all(v["seq"] == 1 and v["device_timed"] == 0 for v in views)  # durations alone
            stragglers.feed(t, views)
            said = stragglers.evaluate(t)
            if said and named_at is None:
                named, named_at = said, t
            next_beat += beat_s
    return named, named_at


def test_a_ddp_job_whose_rank_1_is_slow_on_the_gpu_is_named_from_durations_alone(tmp_path):
    # rank 1 queues 150 ms more kernel time per step: rank 0's first bucket waits that long for it
    named, at = run_ddp(tmp_path, lambda rank, step: [150.0 if rank == 0 else 0.5, 0.5, 0.5, 0.5])
    assert [(n["rank"], n["node"], n["device"]) for n in named] == [(1, 1, True)], named
    assert named[0]["gap"] > 1.0 and at <= 60, (named, at)


def test_a_healthy_ddp_job_names_nobody(tmp_path):
    named, _ = run_ddp(tmp_path, lambda rank, step: [0.5 + (step + rank) % 3, 0.5, 0.5, 1.0 * (step % 2)],
                       seconds=120.0)
    assert named == []


def test_a_python_call_timed_both_by_events_and_by_the_recorder_counts_once():
    # 10 collectives over 2 s of host time; 1.5 s of device wait seen by both the events and the recorder
    a = (0.0, 5, 0.0, 0.0, 0.0, 0, 0.0, 0, 0.0)
    b = (2.0, 15, 0.1, 1.9, 1.5, 10, 1.5, 10, 2.0)
    assert abs(judge.own_work(a, b) - 0.05) < 1e-9


def test_timing_is_switched_on_for_gpu_ranks_only_and_a_users_value_is_kept(tmp_path):
    on = setup.device_timing(setup.flight_recorder({}, str(tmp_path)), gpus=2)
    assert on["TORCH_NCCL_ENABLE_TIMING"] == "1"
    assert "TORCH_NCCL_ENABLE_TIMING" not in setup.device_timing(setup.flight_recorder({}, str(tmp_path)), gpus=0)
    off = setup.device_timing(setup.flight_recorder({"TORCH_NCCL_ENABLE_TIMING": "0"}, str(tmp_path)), gpus=2)
    assert off["TORCH_NCCL_ENABLE_TIMING"] == "0"
    no_recorder = setup.device_timing(setup.flight_recorder({"TORCH_FR_BUFFER_SIZE": "0"}, str(tmp_path)), gpus=2)
    assert "TORCH_NCCL_ENABLE_TIMING" not in no_recorder  # nothing would read the durations


def test_with_the_users_timing_off_the_rank_never_reads_the_recorder_for_durations(tmp_path):
    assert [flight.timing_on({"TORCH_NCCL_ENABLE_TIMING": v}) for v in ("0", "1", "", "true")] == [
        False, True, False, True]

    class Probe:
        folder, rank = str(tmp_path), 0

    probe = Probe()
    flight.start(probe, {"TORCH_FR_BUFFER_SIZE": "2000", "TORCH_NCCL_ENABLE_TIMING": "0"})
    assert probe.recorder_on and probe.timing_on is False  # the thread counts collectives, reads no durations
