"""The scrape's families from a job's live state: the per-rank series at scale, read without redoing the stall
watch's work (benchmarks/metrics_scale.py measures the cost; these check what it must keep)."""

import shutil
import subprocess
import time

import pytest

from nodeweave.entrypoint.metrics import collect, exposition
from nodeweave.entrypoint.metrics.live import Live
from nodeweave.entrypoint.stall.judge import WINDOW_S, Stragglers


class Settings:
    def __init__(self, folder):
        self.env, self.values = {"TMPDIR": str(folder)}, {"metrics": False}

    def get(self, key, default=None):
        return self.values.get(key, default)


class Peer:
    def __init__(self, rank, now):
        self.fp = {"rank": rank, "hostname": f"gpu{rank}", "job": "t"}
        self.done, self.last_heard, self.role, self.ranks = None, now - 1.0, "member", None


class Stall:
    def __init__(self, views, stragglers):
        self.last_views, self.verdicts, self.stragglers = views, {"stall": None, "stragglers": []}, stragglers
        self.clock = time.monotonic


class Watch:
    def __init__(self, nodes, ranks, stragglers=None):
        now = time.monotonic()
        self.clock, self.node_gpus = time.monotonic, None
        self.hub = type("Hub", (), {})()
        self.hub.own_fp = {"rank": 0, "hostname": "gpu0", "job": "t", "master_port": 29500}
        self.hub.peers = [Peer(r, now) for r in range(1, nodes)]
        views = [{"node": n, "rank": n * ranks + i, "host": f"gpu{n}", "seq": 100 + i, "inside_s": 1.25 + i,
                  "outside_s": 4.0, "state": "S", "since_s": 0.1, "fr_enqueued": -1} for n in range(nodes)
                 for i in range(ranks)]
        self.stall = Stall(views, stragglers)

    def fault(self):  # what node 0's watch answers (``stall/surface.HubReading``)
        return None

    def over(self):
        return False


def live_of(tmp_path, watch):
    live = Live(Settings(tmp_path), lambda line: None, job=("t", 29500))
    live.watch = watch  # as watching() would, without the recorder thread and the server
    live.generation = {"generation": 0, "began": time.time(), "first": None, "last": None, "ended": None,
                       "fault": None, "stalls": [], "steps": []}
    live.timeline["generations"].append(live.generation)
    live.timeline["job"] = "t"
    return live


def test_label_texts_render_as_the_labels_dicts_they_were_made_from():
    labels = [{"job_name": "j", "node": "0", "rank": str(r), "host": 'h"\\x'} for r in range(3)]
    values = [1, 0.5, float("nan")]
    as_dicts = exposition.render([("nodeweave_x", "gauge", "x", list(zip(labels, values)))])
    as_texts = exposition.render([("nodeweave_x", "gauge", "x",
                                   [(exposition.label_text(d), v) for d, v in zip(labels, values)])])
    assert as_texts == as_dicts
    assert 'host="h\\"\\\\x"' in as_texts


@pytest.mark.parametrize("value, text", [(-0.0, "0"), (3.0, "3"), (1e15, "1000000000000000.0"), (1e16, "1e+16"),
                                         (float("inf"), "+Inf"), (float("-inf"), "-Inf"), (float("nan"), "NaN"),
                                         (0.1, "0.1"), (True, "1"), (7, "7"), (-2.5e-7, "-2.5e-07")])
def test_numbers_are_written_as_prometheus_reads_them(value, text):
    assert exposition.number(value) == text


def test_the_scrape_reads_the_straggler_ratio_the_stall_watch_found_and_does_not_judge_again(tmp_path):
    class Judged(Stragglers):
        def per_collective(self, now):
            self.asked = getattr(self, "asked", 0) + 1
            return super().per_collective(now)

    judged = Judged()
    watch = Watch(2, 2, judged)
    views = watch.stall.last_views
    for beat in range(int(WINDOW_S) + 2):  # a full window; rank 3 does 20% more own work per collective
        judged.feed(float(beat), [dict(v, seq=v["seq"] + 10 * beat,
                                       outside_s=v["outside_s"] + beat * (1.2 if v["rank"] == 3 else 1.0))
                                  for v in views])
        judged.evaluate(float(beat))
    asked = judged.asked
    text = exposition.render(collect.families(live_of(tmp_path, watch)))
    assert judged.asked == asked  # the beat's evaluation is read, not redone for every scrape
    ratios = {line.split('rank="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
              for line in text.splitlines() if line.startswith("nodeweave_rank_straggler_ratio{")}
    assert ratios["3"] == pytest.approx(1.2)
    assert ratios["0"] == ratios["1"] == ratios["2"] == 1
    judged.reset()  # a stall: no pace to compare
    assert "nodeweave_rank_straggler_ratio{" not in exposition.render(collect.families(live_of(tmp_path, watch)))


def test_a_new_generation_labels_every_rank_anew(tmp_path):
    live = live_of(tmp_path, Watch(2, 2))
    assert 'rank="3"' in exposition.render(collect.families(live))
    live.generation["generation"] = 1
    text = exposition.render(collect.families(live))
    series = [line for line in text.splitlines() if line.startswith("nodeweave_rank_collectives_total{")]
    assert len(series) == 4 and all('generation="1"' in line for line in series)


def test_the_per_rank_series_at_scale_pass_promtool_and_carry_every_rank(tmp_path):
    live = live_of(tmp_path, Watch(64, 8))
    text = exposition.render(collect.families(live))
    per_rank = [line for line in text.splitlines() if line.startswith("nodeweave_rank_collectives_total{")]
    assert len(per_rank) == 512
    assert 'nodeweave_rank_collective_seconds_total{generation="0",host="gpu63",job_name="t",node="63",' \
           'rank="511"} 8.25' in text
    if shutil.which("promtool"):
        checked = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_recorder_keeps_the_per_rank_heat_map_beside_the_goodput_timeline(tmp_path):
    import json
    from pathlib import Path

    from nodeweave.entrypoint.metrics import heat
    from nodeweave.entrypoint.running.runstate import job_dir

    watch = Watch(2, 1)
    live = live_of(tmp_path, watch)
    start = time.time()
    for beat in range(0, 25):
        watch.stall.last_views = [dict(v, seq=10 * beat, outside_s=beat * (1.3 if v["rank"] == 1 else 1.0))
                                  for v in watch.stall.last_views]
        live.tick(now=start + beat)
    live.save(start + 25)
    kept = json.loads((Path(job_dir(live.env, "t", 29500)) / heat.RECORD).read_text())
    assert kept["schema"] == heat.SCHEMA and len(kept["columns"]) == 2
    assert kept["columns"][0]["cells"] == {"1/1": 1.3, "0/0": 1.0}


def test_a_family_written_at_once_matches_number_written_line_by_line():
    """family_lines' shortcuts (repr inline, a shared value formatted once, Columns) write what number() does."""
    labels = [{"job_name": "j", "rank": str(r)} for r in range(12)]
    texts = [exposition.label_text(d) for d in labels]
    mixes = [
        [0.5, 3.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e15, 1e16, 2.5e-7, 10, None, 1e-10],
        [1.0] * 11 + [0.25],  # mostly one shared value: formatted once
        [float("nan")] * 6 + [0.0] * 6,
        [10 ** 15, 1e15] * 6,  # equal as keys, not as texts
        [True, False, 3, 0.5, None, 2] * 2,
        [7, 0, -3, None] * 3,
        [None] * 12,
    ]
    for values in mixes:
        by_number = [f"nodeweave_x{t} {exposition.number(v)}" for t, v in zip(texts, values) if v is not None]
        assert exposition.family_lines("nodeweave_x", list(zip(texts, values)), None) == by_number
        assert exposition.family_lines("nodeweave_x", exposition.Columns(texts, values), None) == by_number
        as_dicts = exposition.render([("nodeweave_x", "gauge", "x", list(zip(labels, values)))])
        as_columns = exposition.render([("nodeweave_x", "gauge", "x", exposition.Columns(texts, values))])
        assert as_dicts == as_columns == ("# HELP nodeweave_x x\n# TYPE nodeweave_x gauge\n" + "\n".join(by_number)
                                          + "\n" if by_number else "")
    assert exposition.render([("nodeweave_x", "gauge", "x", exposition.Columns([], []))]) == ""
