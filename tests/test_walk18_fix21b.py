"""walk18b's rows B2, B3, B4, B7, B8, B13, B16: the job's views (/metrics, /status.json, --status, top, the
dashboard, goodput.json, the log) agreeing with each other and with what happened. One test per class; each
fails on the code before the change."""

import os
import re
import sys
import time

import pytest

import cli_run
from free_ports import free_port, free_port_pair
from test_metrics_collect import Watch, live_of
from test_walk13_fix13a import _end

# rank 1 fails a few seconds in; rank 0 waits for a file the test writes
FAILS_LATE = ("import os, sys, time\nprint('step 1 loss 0.5', flush=True)\n"
              "if os.environ.get('RANK') == '1':\n    time.sleep(8)\n    sys.exit(1)\n"
              "while not os.path.exists('go'):\n    time.sleep(0.2)\n")


def test_a_later_check_in_says_its_own_seconds_not_the_jobs_life(tmp_path):
    """B13 (class 4): recovery on, 2 nodes, no spare; node 1's rank fails 8 s in, the regather's check-in stops the
    job. Its verdict line said `(world size 2, 10.3s)`, the job's life up to then; it says that check-in's own
    seconds (node 1 is back at once)."""
    (tmp_path / "wait.py").write_text(FAILS_LATE)
    port, metrics = free_port_pair(), free_port()
    env = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin", "HOME": cli_run.home_beside(tmp_path),
           "NODEWEAVE_NNODES": "2", "MASTER_ADDR": "127.0.0.1", "NODEWEAVE_JOB_ID": "b13",
           "NODEWEAVE_WAIT_TIMEOUT": "120", "NODEWEAVE_MASTER_PORT": str(port),
           "NODEWEAVE_METRICS_PORT": str(metrics), "NODEWEAVE_STALL_WARN": "0", "OMP_NUM_THREADS": "1",
           "NODEWEAVE_RECOVERY": "on", "NODEWEAVE_CHECKPOINT_DIR": str(tmp_path / "ck")}
    procs = []
    for rank in range(2):
        (tmp_path / f"t{rank}").mkdir()
        procs.append(cli_run.popen([*cli_run.ENTRYPOINT, "--nproc-per-node", "1", "--", "wait.py"], cwd=tmp_path,
                                   stdout=-1, stderr=-2, env=dict(env, NODE_RANK=str(rank),
                                                                   TMPDIR=str(tmp_path / f"t{rank}"))))
    try:
        time.sleep(1)
        out = _end_after_stop(procs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    said = [float(s) for text in out for s in re.findall(r"check-in: \d node\(s\) agree \(world size 2, ([\d.]+)s",
                                                         text)]
    assert len(said) >= 3, out  # the first check-in on both nodes, the regather's on node 0 at least
    assert max(said) < 6, out  # none is the 8 s the job ran before its fault


def _end_after_stop(procs, timeout=150):
    out = []
    for proc in procs:
        try:
            out.append(proc.communicate(timeout=timeout)[0])
        except Exception:  # noqa: BLE001 - a node still up is killed, its output kept
            proc.kill()
            out.append(proc.communicate(timeout=30)[0])
    return out


def test_every_rank_list_is_in_rank_order(tmp_path):
    """B4 (class 5): ranks on nodes 0, 1, 4, 3 (spares took places) were listed in check-in order, `top` drawing
    ranks 0, 1, 3, 2; /status.json (what top and the dashboard draw) and --status list them by rank."""
    from nodeweave.entrypoint.metrics import collect
    from nodeweave.entrypoint.stall.watcher import StallWatch

    watch = Watch(1, 1)
    base = watch.stall.last_views[0]
    watch.stall.last_views = [dict(base, node=node, rank=rank) for node, rank in ((0, 0), (1, 1), (4, 3), (3, 2))]
    assert [r["rank"] for r in collect.status(live_of(tmp_path, watch))["ranks"]] == [0, 1, 2, 3]

    class Folder:
        def sample(self, now):
            return []

    hub = type("HubWatch", (), {"views": lambda self, own: list(watch.stall.last_views)})()
    stall = StallWatch(Folder(), 60, 0, lambda line: None)
    assert [r["rank"] for r in stall.status(hub)["ranks"]] == [0, 1, 2, 3]


def test_node_0_left_out_reads_as_waiting_and_its_steps_come_from_rank_0s_node(tmp_path):
    """B7, B8 (class 3): node 0 left out of generation 1, node 2 training as rank 0. Node 0's own row said `running`
    in /status.json, /metrics and --status (`running: 3`); its steps a second said 0 and its step was unknown on a job
    moving at 5 steps a second. Its row says `left out (waiting)` as any node sitting out; the step lines of node 2
    ride on node 2's beats (``StepTap``) to node 0's timeline."""
    from nodeweave.entrypoint.metrics import collect, exposition
    from nodeweave.entrypoint.metrics.steps import StepTap
    from nodeweave.entrypoint.news import hub_standing
    from nodeweave.entrypoint.stall.exchange import HubStall

    book = {"generation": 1, "members": [2, 1], "spares": [], "left_out": {"0": 1}}
    watch = Watch(3, 1)
    live = live_of(tmp_path, watch)
    live.book = lambda: book
    live.generation.update(generation=1, node_0_trains=False)
    rows = {n["node"]: n for n in collect.status(live)["nodes"]}
    assert (rows[0]["state"], rows[0]["role"]) == ("left out (waiting)", "hub, left out"), rows[0]
    ups = [line for line in exposition.render(collect.families(live)).splitlines()
           if line.startswith("nodeweave_node_up{") and 'node="0"' in line]
    assert len(ups) == 1 and 'state="left out (waiting)"' in ups[0], ups
    assert hub_standing(book, 0) == ("left out (waiting)", "hub, left out")  # --status' row and summary

    clock = [100.0]
    tap = StepTap(clock=lambda: clock[0])
    node_2 = watch.hub.peers[1]
    for step in range(1, 31):  # node 2 logs 5 steps a second; each beat carries its newest
        tap.output(1, f"step {step} loss 0.5\n".encode())
        clock[0] += 0.2
        if step % 5 == 0:
            HubStall.stall_message(None, node_2, {"t": "beat", **tap.extra()})
            node_2.step = (node_2.step[0], node_2.step[1], time.time() - (30 - step) * 0.2)
            live.tick()
    assert live.shown_step()[1] == 30 and live.step_note() is None
    assert live.step_rate() == pytest.approx(5, rel=0.25)
    assert [s[1] for s in live.generation["steps"]] == [5, 10, 15, 20, 25, 30]


def _recorder_dump(seq, name, done):
    import json

    entry = {"collective_seq_id": seq, "profiling_name": name, "time_created_ns": seq, "record_id": seq,
             "state": "completed" if done else "scheduled", "input_sizes": [[4]], "input_dtypes": ["Float"]}
    return json.dumps({"recorders": {"generic": {"entries": [entry]}}})


def test_one_stall_has_one_start_and_names_the_collective_the_recorders_wait_in(tmp_path):
    """B2 (class 1): rank 1 stopped; rank 0 waits in a C++-issued all_reduce (flight recorder seq 157), its last
    Python call broadcast #74. At one instant nodeweave_stall_seconds said 7.59 and the stalled bucket 9.72 (the
    gauge was the last evaluation's, a peer's view a beat old), and /status.json's stall said `broadcast`. A peer's
    durations are aged to now, the stall keeps one start (``began``), and its collective is the recorders'."""
    from nodeweave.entrypoint.metrics import collect, exposition
    from nodeweave.entrypoint.metrics.goodput import account
    from nodeweave.entrypoint.stall.exchange import HubStall
    from nodeweave.entrypoint.stall.watcher import StallWatch

    # a peer's view came 2 s ago: its durations are 2 s longer now
    clock = [50.0]
    peer = type("Peer", (), {"fp": {"rank": 1}, "done": None, "ranks": [{"rank": 1, "since_s": 10.0, "polled_s": 10.5}],
                             "ranks_at": 48.0})()
    hub = type("Hub", (), {"own_fp": {"rank": 0}, "peers": [peer]})()
    fake = type("HubStall", (), {"hub": hub, "clock": lambda self: clock[0]})()
    [own, theirs] = HubStall.views(fake, [{"rank": 0, "since_s": 1.0}])
    assert (own["since_s"], theirs["since_s"], theirs["polled_s"]) == (1.0, 12.0, 12.5)

    views = [{"node": 0, "rank": 0, "host": "h0", "seq": 74, "name": "broadcast", "inside": True, "since_s": 10.0,
              "state": "S", "fr_enqueued": 157, "polled_s": 0.5, "inside_s": 1.0, "outside_s": 9.0},
             {"node": 1, "rank": 1, "host": "h1", "seq": 74, "name": "broadcast", "inside": False, "since_s": 12.0,
              "state": "T", "fr_enqueued": 156, "polled_s": 12.5, "inside_s": 1.0, "outside_s": 9.0}]

    class Folder:
        path, owner = str(tmp_path), 0

        def sample(self, now):
            return [dict(views[0])]

        def ask(self, view):
            return []

        def collect(self, asked):
            return {0: _recorder_dump(157, "gloo:all_reduce", False)}, {}

        def stacks(self, view):
            return {}

    class HubWatch:
        recovery = False

        def views(self, own):
            return own + [dict(views[1])]

        def ask_stacks(self):
            return 1

        def answered_stacks(self, request, deadline):
            return {}

        def broadcast_report(self, lines):
            pass

    said = []
    stall = StallWatch(Folder(), 5, 0, said.append)
    watch = Watch(2, 1)
    watch.stall = stall
    stall.hub_tick(HubWatch())
    stall.reporting.join(30)
    stall.hub_tick(HubWatch())
    verdict = stall.verdicts["stall"]
    assert verdict["collective"] == "all_reduce", (verdict, said)
    assert verdict["where"].startswith("all_reduce issued from C++ (flight recorder seq 157"), verdict
    began = verdict["began"]
    assert time.time() - 10.5 < began < time.time() - 9.5

    live = live_of(tmp_path, watch)
    live.generation["began"] = began - 30
    live.tick(now=began + 2)  # the recorder sees the stall 2 s in
    later = began + 7
    gauge = [float(line.rsplit(" ", 1)[1]) for line in exposition.render(collect.families(live, now=later)).splitlines()
             if line.startswith("nodeweave_stall_seconds{")]
    stalled = account(live.snapshot(), later)["buckets"]["stalled"]
    assert gauge == [pytest.approx(7, abs=0.05)] and stalled == pytest.approx(7, abs=0.05), (gauge, stalled)
    assert collect.status(live, now=later)["verdicts"]["stall"]["for_s"] == pytest.approx(7, abs=0.05)
    assert stall.status(HubWatch())["stall"]["for_s"] == pytest.approx(time.time() - began, abs=0.5)


def test_every_ranks_rate_and_heat_cell_come_from_one_window_and_one_number(tmp_path):
    """B3, B16 (class 2): lockstep DDP ranks at 5 collectives a second. Node 0's own rank read fastest and a spare
    4 s into its generation 17x slower (its counts a beat late, its window its own); the heat map outlined a rank
    the Ranks table called 1.00x and painted the warming spare red. The rates compare every rank over one window
    (each count read between its readings), the heat map's cells are the Ranks table's straggler ratios."""
    from nodeweave.cluster.dashboard import heat_map

    base = time.monotonic() - 12  # the readings below are of the last 12 s

    def view(node, rank, t):
        return {"node": node, "rank": rank, "host": f"h{node}", "seq": 1, "fr_enqueued": -1, "state": "S",
                "since_s": 0.1, "inside_s": 0.0, "outside_s": 0.0, "collectives": 0, "at": base + t,
                "seq_at": t}

    watch = Watch(1, 1)
    live = live_of(tmp_path, watch)
    for tick in range(0, 13):  # node 0's recorder, once a second; node 2's beats every 2 s, from t=3
        views = [view(0, 0, tick)]
        if tick >= 4:
            beat = tick - tick % 2
            views.append(view(2, 1, beat - 0.5))
        for v in views:  # setup until t=2, then 5 collectives a second
            v["seq"] = max(1, int(5 * (v["seq_at"] - 2)))
        watch.stall.last_views = views
        live.tick(now=time.time())
    rates = live.rates()
    assert set(rates) == {(0, 0), (2, 1)}, rates
    assert rates[(0, 0)] == pytest.approx(5, rel=0.1) and rates[(2, 1)] == pytest.approx(5, rel=0.1), rates

    def reading(now, spare_ratio):  # rank 0 did 15% more own work this span; the stall watch found it 1.00x
        ranks = [{"node": 0, "rank": 0, "collectives": 10 * now, "outside_s": 1.15 * now, "straggler_ratio": 1.0},
                 {"node": 1, "rank": 1, "collectives": 10 * now, "outside_s": 1.0 * now, "straggler_ratio": 1.0},
                 {"node": 2, "rank": 2, "collectives": 10 * now, "outside_s": 2.0 * now,
                  "straggler_ratio": spare_ratio}]
        return (float(now), {"now": float(now), "ranks": ranks})

    drawn = heat_map([reading(1, None), reading(2, None), reading(3, 1.02)])
    assert [[cell and cell["ratio"] for cell in column] for column in drawn["cells"]] == [[1.0, 1.0, None],
                                                                                          [1.0, 1.0, 1.02]]
