"""The metrics room's pure parts: the exposition text, the step lines of real loggers, the goodput arithmetic."""

import re
import shutil
import subprocess

import pytest

from nodeweave.entrypoint.metrics import exposition, goodput, steps


def test_the_exposition_escapes_label_values_and_leaves_out_empty_families():
    text = exposition.render([
        ("nodeweave_x_total", "counter", "A count\nof things.", [({"host": 'a"b\\c', "node": "0"}, 3)]),
        ("nodeweave_empty", "gauge", "Nothing yet.", [({"node": "0"}, None)]),
        ("nodeweave_ratio", "gauge", "A fraction.", [({}, 0.25), ({"gpu": "1"}, float("nan"))]),
    ])
    assert text == ('# HELP nodeweave_x_total A count\\nof things.\n# TYPE nodeweave_x_total counter\n'
                    'nodeweave_x_total{host="a\\"b\\\\c",node="0"} 3\n'
                    '# HELP nodeweave_ratio A fraction.\n# TYPE nodeweave_ratio gauge\n'
                    'nodeweave_ratio 0.25\nnodeweave_ratio{gpu="1"} NaN\n')
    if shutil.which("promtool"):
        checked = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("family", [("bad-name", "gauge", "h", [({}, 1)]), ("ok", "histogramish", "h", [({}, 1)]),
                                    ("ok", "gauge", "h", [({"__x": "1"}, 1)])])
def test_a_bad_name_type_or_label_is_refused(family):
    with pytest.raises(ValueError):
        exposition.render([family])


# Lines as each logger prints them (copied from their output; the numbers are the step each line names).
REAL_LINES = [
    ("[titan] 2025-03-01 10:00:12,345 - root - INFO - step: 120  loss:  5.1234  memory: 31.20GiB(39.45%)  "
     "tps: 6,123  tflops: 180.12  mfu: 18.21%", ("torchtitan", 120)),
    ("[2024-05-02 11:22:33,444] [INFO] [logging.py:96:log_dist] [Rank 0] step=40, skipped=0, lr=[0.0001], "
     "mom=[(0.9, 0.999)]", ("deepspeed", 40)),
    (" [2024-05-02 11:22:33] iteration       30/     500 | consumed samples:         1920 | elapsed time per "
     "iteration (ms): 845.2 | learning rate: 1.500E-04 | global batch size:    64 | lm loss: 7.1E+00 |",
     ("megatron", 30)),
    ("Epoch 2:  45%|████▌     | 45/100 [00:05<00:06,  8.50it/s, v_num=0, train_loss=0.512]", ("lightning", 245)),
    (" 10%|█         | 50/500 [00:10<01:30,  4.97it/s]", ("tqdm", 50)),
    ("Saving model checkpoint to out/checkpoint-500", ("huggingface", 500)),
    ("model.safetensors:  45%|████▌     | 450M/1.00G [00:05<00:06, 90.0MB/s]", None),
    ("{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}", None),
    ("plain output without a step", None),
]


@pytest.mark.parametrize("line,expected", REAL_LINES)
def test_the_common_loggers_lines_give_their_step(line, expected):
    assert steps.find_step(line) == expected


def test_the_spec_pattern_wins_and_reads_a_named_group():
    pattern = steps.compile_pattern(r"RECOVERY-STEP gen=\d+ step=(?P<step>\d+)")
    assert steps.find_step("RECOVERY-STEP gen=1 step=17 world=2", pattern) == ("pattern", 17)
    with pytest.raises(ValueError, match="no group"):
        steps.compile_pattern(r"step=\d+")


@pytest.mark.parametrize("line, step", [
    ("RECOVERY-RESUME gen=1 from=checkpoints/step-10.pt step=10", "10"),  # node 0 come back: its first such line
    ("resuming from /ckpt/iter-0400/model.pt at iteration 400", "400"),
    ("saved /ckpt/step-100.pt", "100"),  # only a path names a step: that is what the line has
])
def test_the_note_that_no_step_line_was_read_suggests_a_pattern_for_the_lines_step_not_a_saves_name(line, step):
    """The note's pattern reads the line's own step word, not a save's file name in a path it also names (it
    suggested ``step\\-(?P<step>\\d+)``, which reads only resume lines' paths, for the e2e workload's)."""
    pattern = steps.pattern_for(line)
    assert re.search(pattern, line).group("step") == step, pattern
    if "RECOVERY" in line:  # and it reads the workload's step lines too
        assert re.search(pattern, "RECOVERY-STEP gen=1 step=11 world=2").group("step") == "11", pattern


def test_lines_are_cut_at_newlines_and_a_bars_carriage_returns():
    splitter = steps.LineSplitter()
    assert splitter.feed(b" 1%|| 1/100 [00:01<01:39, 1.00it/s]\r 2%|| 2/1") == [" 1%|| 1/100 [00:01<01:39, 1.00it/s]"]
    assert splitter.feed(b"00 [00:02<01:38, 1.00it/s]\n") == [" 2%|| 2/100 [00:02<01:38, 1.00it/s]"]


def test_goodput_splits_a_run_with_one_fault_into_its_buckets():
    timeline = {"launched": 100.0, "ended": 200.0, "generations": [
        {"generation": 0, "began": 102.0, "first": 110.0, "stalls": [[130.0, 140.0]],
         "steps": [[111.0, 1], [120.0, 10], [150.0, 20]], "fault": {"at": 160.0, "resumed_step": 10}},
        {"generation": 1, "began": 165.0, "first": 170.0, "resumed_step": 10, "stalls": [],
         "steps": [[171.0, 11]], "ended": 195.0, "fault": None},
    ]}
    result = goodput.account(timeline)
    # start-up 100->110; gen 0 active 110->160 (50 s): stalled 10, redone from step 10's line (120) to the fault
    # less the stall: 30 (a stall is not work, and was counted in both), training 110->120: 10; recovery 160->170;
    # gen 1: 170->195 training 25; idle 195->200.
    assert result["buckets"] == {"training": 35.0, "startup": 10.0, "recovery": 10.0, "redone": 30.0,
                                 "stalled": 10.0, "idle": 5.0}
    assert result["wall_s"] == 100.0 and result["productive"] == 0.35
    assert [g["buckets"]["training"] for g in result["generations"]] == [10.0, 25.0]


def test_without_step_lines_the_checkpoints_age_is_the_work_redone_and_without_a_checkpoint_all_of_it():
    timeline = {"launched": 0.0, "ended": 100.0, "generations": [
        {"generation": 0, "first": 10.0, "fault": {"at": 50.0, "work_lost_s": 15.0, "resume_from": "/c/step-5"}},
        {"generation": 1, "first": 60.0, "resumed_step": 5, "ended": 100.0},
    ]}
    assert goodput.account(timeline)["buckets"]["redone"] == 15.0
    timeline["generations"][0]["fault"] = {"at": 50.0}
    timeline["generations"][1]["resumed_step"] = None
    assert goodput.account(timeline)["buckets"]["redone"] == 40.0


def test_without_step_lines_the_checkpoints_age_counts_to_the_last_progress_not_to_when_the_fault_was_heard():
    timeline = {"launched": 0.0, "ended": 100.0, "generations": [
        {"generation": 0, "first": 10.0, "last": 40.0,  # the checkpoint written at 35, the crash heard at 50
         "fault": {"at": 50.0, "work_lost_s": 15.0, "resume_from": "/c/step-5"}},
        {"generation": 1, "first": 60.0, "resumed_step": 5, "ended": 100.0},
    ]}
    result = goodput.account(timeline)
    # gen 0: 10->40 active, redone 35->40; recovery 40->60 (the 10 s the crash took to be heard included)
    assert result["buckets"] == {"training": 65.0, "startup": 10.0, "recovery": 20.0, "redone": 5.0,
                                 "stalled": 0.0, "idle": 0.0}


def test_a_running_job_is_accounted_up_to_now():
    timeline = {"launched": 0.0, "ended": None, "generations": [{"generation": 0, "first": 5.0}]}
    assert goodput.account(timeline, now=25.0)["buckets"]["training"] == 20.0
    assert goodput.account({"launched": None})["productive"] is None


def test_a_crash_counts_from_the_last_progress_and_the_wind_down_after_the_last_step_is_idle():
    timeline = {"launched": 0.0, "ended": 60.0, "generations": [
        {"generation": 0, "first": 10.0, "last": 20.0, "steps": [[11.0, 1], [15.0, 5], [20.0, 10]],
         "fault": {"at": 28.0, "resumed_step": 5}},  # the crash was heard 8 s after the last step
        {"generation": 1, "first": 35.0, "last": 50.0, "resumed_step": 5, "ended": 60.0},
    ]}
    result = goodput.account(timeline)
    # gen 0: 10->20 active, redone 15->20; recovery 20->35; gen 1: 35->50 training; 50->60 wind-down: idle
    assert result["buckets"] == {"training": 20.0, "startup": 10.0, "recovery": 15.0, "redone": 5.0,
                                 "stalled": 0.0, "idle": 10.0}


def test_a_stall_that_lasted_to_the_fault_stays_stalled():
    timeline = {"launched": 0.0, "ended": 100.0, "generations": [
        {"generation": 0, "first": 10.0, "last": 30.0, "stalls": [[30.0, None]], "fault": {"at": 90.0}},
    ]}
    assert goodput.account(timeline)["buckets"]["stalled"] == 60.0


class _Settings:
    def __init__(self, tmp_path):
        self.env = {"TMPDIR": str(tmp_path)}

    def get(self, key, default=None):
        return {"metrics": False, "recovery": True}.get(key, default)


class _Watch:
    def __init__(self, job):
        self.hub = type("Hub", (), {"own_fp": {"job": job, "master_port": 29500}})()


def _node_0_came_back(tmp_path, kept, book_generation=2, job="j"):
    """A fresh node 0 process's Live watching its first generation, ``kept`` (a lost process's timeline) and
    the book of generation ``book_generation`` (node 0's loss in its history) in its state folder."""
    import json
    import threading
    import time

    from nodeweave.entrypoint.metrics.live import Live

    folder = tmp_path / "nodeweave" / "jobs" / f"{job}-29500"  # the job's folder (runstate.job_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "goodput.json").write_text(json.dumps(kept))
    (folder / "recovery.json").write_text(json.dumps({
        "generation": book_generation, "step": 80, "resume_from": "/ckpt/step-80",
        "history": [{"generation": book_generation - 1, "at": time.time() - 5, "why": "node 0 was lost and came "
                     "back", "node": None, "cause": "lost"}]}))
    live = Live(_Settings(tmp_path), lambda line: None)
    live.thread = threading.Thread(target=lambda: None)  # the recorder is not what this looks at
    live._watching(_Watch(job))
    return live.snapshot()


def _kept_timeline(**change):
    """A lost node 0's timeline: launched 200 s ago, generation 0 faulted (resumed from step 40), generation 1
    training from step 41 to 80 when node 0 was lost."""
    import time

    t = time.time() - 200
    return dict({"schema": goodput.SCHEMA, "launched": t, "ended": None, "job": "j", "run_id": None,
                 "generations": [
                     {"generation": 0, "began": t + 1, "first": t + 10, "last": t + 50, "ended": None, "stalls": [],
                      "steps": [[t + 40, 40], [t + 50, 50]], "fault": {"at": t + 52, "why": "node 1"},
                      "resumed_step": None},
                     {"generation": 1, "began": t + 55, "first": t + 60, "last": t + 100, "ended": None,
                      "stalls": [], "steps": [[t + 61, 41], [t + 100, 80]], "fault": None, "resumed_step": 40}]},
                **change)


def test_node_0_come_back_goes_on_with_the_runs_timeline_rather_than_starting_the_run_again(tmp_path):
    """Issue 44: node 0 killed and its container restarted made a fresh timeline, so the goodput of the run
    became the seconds since the restart (seen on the podman fault schedule, docs/benchmarks.md)."""
    kept = _kept_timeline()
    timeline = _node_0_came_back(tmp_path, kept)
    assert timeline["launched"] == kept["launched"]
    assert [g["generation"] for g in timeline["generations"]] == [0, 1, 2]
    assert timeline["generations"][1]["fault"]["why"] == "node 0 was lost and came back"
    assert timeline["generations"][2]["resumed_step"] == 80
    accounted = goodput.account(timeline, now=kept["launched"] + 200)
    # generation 0: 10->40 training, 40->50 redone (resumed from 40); generation 1: 60->100 training, then the
    # loss until now: recovery (no first collective yet)
    assert accounted["wall_s"] == 200.0
    assert accounted["buckets"]["training"] == 70.0 and accounted["buckets"]["redone"] == 10.0
    assert accounted["buckets"]["recovery"] == 110.0


@pytest.mark.parametrize("change", [{"job": "another"}, {"run_id": "r2"}, {"launched": 4e9},
                                    {"schema": "other"}, {"generations": [{"generation": 5}]}])
def test_a_kept_timeline_of_another_job_run_or_a_later_generation_is_not_carried_on(tmp_path, change):
    timeline = _node_0_came_back(tmp_path, _kept_timeline(**change))
    assert timeline["launched"] > 1e9 and [g["generation"] for g in timeline["generations"]] == [2]


def test_with_step_lines_training_begins_at_the_first_step_not_at_the_set_up_collectives():
    """Seen on podman (docs/benchmarks.md): on a loaded machine DDP's set-up collectives came ~50 s before the
    first step, and that time was counted as training."""
    steps = [[30.0 + k, 1 + k] for k in range(20)]  # one step a second; the first ends at 30, so began at 29
    timeline = {"launched": 0.0, "ended": 60.0, "generations": [
        {"generation": 0, "first": 10.0, "last": 49.0, "steps": steps, "ended": 50.0}]}
    buckets = goodput.account(timeline)["buckets"]
    assert (buckets["startup"], buckets["training"], buckets["idle"]) == (29.0, 20.0, 11.0)
    timeline["generations"][0]["steps"] = [[30.0, 1], [49.0, 20]]  # no two a step apart: the step's length unknown
    assert goodput.account(timeline)["buckets"]["startup"] == 10.0


def test_a_generation_that_logged_no_step_in_a_run_that_logs_them_never_began_training():
    """Seen on podman: a rank killed during generation 0's DDP set-up, before its first step; its seconds from
    the first collective to the fault were counted as work redone, though no step was done."""
    steps = [[100.0 + k, 1 + k] for k in range(20)]
    timeline = {"launched": 0.0, "ended": 130.0, "generations": [
        {"generation": 0, "first": 20.0, "last": 45.0, "steps": [], "fault": {"at": 46.0}},
        {"generation": 1, "first": 80.0, "last": 119.0, "steps": steps, "ended": 120.0}]}
    buckets = goodput.account(timeline)["buckets"]
    # start-up to the fault at 46 (no step: no training began), recovery 46 -> 99 (the first step's start)
    assert (buckets["startup"], buckets["recovery"], buckets["redone"], buckets["training"]) == (46.0, 53.0, 0.0,
                                                                                                 20.0)
    timeline["generations"][0]["node_0_trains"] = False  # node 0 only watched: its output holds no step line
    assert goodput.account(timeline)["buckets"]["startup"] == 20.0


def test_a_stall_the_watch_still_reports_after_the_generations_fault_is_not_recorded_again(tmp_path):
    """Seen on podman: the stall verdict outlived the fault by a tick, and a second stall, open for ever, was
    added to the faulted generation."""
    import threading

    from nodeweave.entrypoint.metrics.live import Live

    stall = type("Stall", (), {"last_views": [], "verdicts": {"stall": {"for_s": 4.0}}})()
    failed = []
    watch = type("Watch", (), {"hub": type("Hub", (), {"own_fp": {"job": "j", "master_port": 29500}})(), "stall": stall,
                               "fault": lambda self: failed[0] if failed else None, "over": lambda self: False})()
    live = Live(_Settings(tmp_path), lambda line: None)
    live.thread = threading.Thread(target=lambda: None)
    live._watching(watch)
    live.tick(now=1000.0)
    failed.append((1010.0, "node 2: the job stalled"))
    live.tick(now=1011.0)
    live.tick(now=1012.0)  # the verdict is still there
    [gen] = live.snapshot()["generations"]
    assert gen["stalls"] == [[996.0, 1010.0]] and gen["fault"]["at"] == 1010.0


def test_the_work_redone_before_a_stall_that_ended_the_generation_leaves_the_stall_out():
    """Seen on podman: a rank SIGSTOPped 10 s after the checkpoint's step, given up 20 s later: the 20 s were
    counted both as stalled and as work redone, and taken from training."""
    steps = [[10.0 + k, 1 + k] for k in range(41)]  # steps 1..41 end at 10..50; the checkpoint holds step 31
    timeline = {"launched": 0.0, "ended": 80.0, "generations": [
        {"generation": 0, "first": 9.0, "last": 50.0, "steps": steps, "stalls": [[50.0, None]],
         "fault": {"at": 70.0, "resumed_step": 31}}]}
    buckets = goodput.account(timeline)["buckets"]
    assert (buckets["training"], buckets["redone"], buckets["stalled"]) == (31.0, 10.0, 20.0)


def test_the_runs_wall_time_begins_when_node_0s_entrypoint_started_not_after_the_check_in(tmp_path, monkeypatch):
    """The timeline began at node 0's first HubWatch, after every node had checked in: the check-in's wait
    (minutes on a cluster whose pods start one by one) was in no bucket, the wall time too short."""
    import time

    from nodeweave.entrypoint import checkin, metrics
    from nodeweave.entrypoint.metrics import live

    monkeypatch.setattr(checkin, "HUB_WATCHES", [])
    monkeypatch.setattr(checkin, "LINK_WATCHES", [])
    monkeypatch.setattr(live, "LIVE", None)
    monkeypatch.setattr(live.Live, "_start", lambda self: None)  # no recorder thread, no server
    monkeypatch.setattr(metrics, "ARMED", [])
    before = time.time()
    metrics.arm(_Settings(tmp_path), lambda line: None)
    armed = time.time()  # however long arm took on a loaded machine
    time.sleep(0.3)  # the check-in
    metrics.hub_watch(_Watch("j"))
    assert before <= live.LIVE.snapshot()["launched"] <= armed


def test_a_run_told_its_step_pattern_that_logged_no_step_yet_never_trained():
    """Seen on podman under a load of 25 on 2 cores: three generations killed during their set-up, not one step;
    their seconds from the first collective to the fault were counted as work redone."""
    timeline = {"launched": 0.0, "ended": 100.0, "step_pattern": True, "generations": [
        {"generation": 0, "first": 20.0, "last": 45.0, "steps": [], "fault": {"at": 46.0}},
        {"generation": 1, "first": 70.0, "last": 90.0, "steps": [], "ended": 95.0}]}
    buckets = goodput.account(timeline)["buckets"]
    assert (buckets["startup"], buckets["recovery"], buckets["redone"], buckets["training"]) == (46.0, 49.0, 0.0,
                                                                                                 0.0)
    timeline["step_pattern"] = False  # nothing says the training logs steps: its collectives are all there is
    assert goodput.account(timeline)["buckets"]["training"] == 20.0


def test_the_timeline_is_saved_the_moment_training_begins_not_only_every_few_seconds(tmp_path):
    """Walk12 A11 under load: `stop --grace 0` SIGKILLs node 0 soon after its first steps; the timeline it left
    was its last 5-second save, from before training began, so the run read "training 0 s"."""
    import json
    import os
    import threading

    from nodeweave.entrypoint.metrics.live import RECORD, Live

    stall = type("Stall", (), {"last_views": [], "verdicts": {}})()
    watch = type("Watch", (), {"hub": type("Hub", (), {"own_fp": {"job": "j", "master_port": 29500}})(), "stall": stall,
                               "fault": lambda self: None, "over": lambda self: False})()
    live = Live(_Settings(tmp_path), lambda line: None)
    live.thread = threading.Thread(target=lambda: None)
    live._watching(watch)
    live.tick(now=1000.0)  # saved: nothing trained yet
    saved = os.path.join(live.folders[0], RECORD)
    assert json.loads(open(saved).read())["generations"][-1]["first"] is None
    live.generation["steps"].append([1001.0, 1])
    live.tick(now=1001.5)  # a second after the last save, well inside its 5 s
    assert json.loads(open(saved).read())["generations"][-1]["first"] == 1001.0
