"""``nodeweave runs ls|show|compare`` over run folders laid out as ``nodeweave run`` writes them.

The folders are made with the run engine's own ``RunFolder`` and hold run.json/sweep.json with
the keys ``cluster.job.record`` and ``cluster.runplan.RunSession`` write; node logs are plain text, as the
runner tees them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nodeweave.cli import main
from nodeweave.cluster.runfolder import RunFolder
from nodeweave.errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USAGE

SPEC = "name: nwruns\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def run_json(folder: RunFolder, env: dict, code: int, seconds: float) -> None:
    nodes = [{"node": f"node-{i}", "index": i, "reached_as": f"podman:nwruns-{i}", "exit_code": code,
              "started_s": 0.1, "ended_s": seconds, "log": f"node-{i}.log",
              "sync": {"commit": "0123456789abcdef0123", "digest": "d"}} for i in range(2)]
    folder.write_json("run.json", {"schema": "nodeweave.runfolder/1", "run_id": folder.run_id, "job": "nwruns",
                                   "command": ["train.py", "--steps", "5"], "env": env, "target": "podman",
                                   "started": "2026-11-26T10:00:00Z", "ended": "2026-11-26T10:01:00Z",
                                   "seconds": seconds, "exit_code": code, "summary": "ok", "nodes": nodes})


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEWEAVE_SPEC", raising=False)
    # the tables' width follows COLUMNS where it is set (xdist's workers set 80): the assertions read
    # whole rows, so give them the width a terminal of 160 columns would
    monkeypatch.setenv("COLUMNS", "160")
    runs = tmp_path / "runs"
    single = RunFolder.create(runs, "nwruns", SPEC)
    run_json(single, {}, 0, 12.5)
    for i, rate in enumerate((100.0, 110.0)):
        single.log_path(f"node-{i}").write_text(f"step 1 samples/s 50\nstep 5 samples/s {rate}\n")
    sweep = RunFolder.create(runs, "nwruns", SPEC, suffix="-sweep")
    rows = []
    for number, (value, rates) in enumerate((("8", (200.0, 220.0)), ("16", (300.0, 280.0))), start=1):
        point = RunFolder.create(sweep.path, "nwruns", SPEC, suffix=f"-{number:02d}-NCCL_MAX_NCHANNELS={value}")
        run_json(point, {"NCCL_MAX_NCHANNELS": value}, 0 if number == 1 else 1, 20.0)
        for i, rate in enumerate(rates):
            point.log_path(f"node-{i}").write_text(f"samples/s {rate}\n")
        rows.append({"point": {"NCCL_MAX_NCHANNELS": value}, "exit_code": 0, "folder": point.run_id})
    sweep.write_json("sweep.json", {"metric": "samples/s ([0-9.]+)", "command": ["train.py"], "points": rows})
    return {"single": single.run_id, "sweep": sweep.run_id}


def nodeweave(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ls_lists_runs_and_sweeps_oldest_first(project, capsys):
    code, out, err = nodeweave(capsys, "runs", "ls", "-o", "json")
    assert code == EXIT_OK, err
    rows = json.loads(out)
    assert [r["kind"] for r in rows] == ["run", "sweep"]
    assert rows[0]["state"] == "ok" and rows[0]["seconds"] == 12.5 and rows[0]["nodes"] == 2
    assert rows[1]["state"] == "2 point(s), 1 failed" and rows[1]["seconds"] == 40.0
    code, out, _ = nodeweave(capsys, "runs", "ls", "-o", "yaml")
    assert yaml.safe_load(out) == rows
    code, out, _ = nodeweave(capsys, "runs", "ls")
    assert project["single"] in out and project["sweep"] in out


def test_show_a_run_per_node(project, capsys):
    code, out, err = nodeweave(capsys, "runs", "show", project["single"], "-o", "json")
    assert code == EXIT_OK, err
    shown = json.loads(out)
    assert [n["last_line"] for n in shown["nodes"]] == ["step 5 samples/s 100.0", "step 5 samples/s 110.0"]
    code, out, _ = nodeweave(capsys, "runs", "show", "last")  # the sweep: its points, with its own metric
    # the point 16 failed (exit 1): its 290 is not ranked, so the best is 8's 210 (walk5 W21)
    assert "NCCL_MAX_NCHANNELS=16" in out and "210 (best)" in out and "290 (best)" not in out and "█" in out


def test_compare_lines_up_runs_and_sweep_points_per_node(project, capsys):
    code, out, err = nodeweave(capsys, "runs", "compare", project["single"], project["sweep"], "--metric",
                               r"samples/s ([0-9.]+)", "-o", "json")
    assert code == EXIT_OK, err
    data = json.loads(out)
    assert [r["mean"] for r in data["runs"]] == [105.0, 210.0, 290.0]
    assert data["runs"][0]["per_node"] == [100.0, 110.0]
    assert data["best"].endswith("NCCL_MAX_NCHANNELS=8")  # 16's 290 is a failed run's: not ranked (walk5 W21)
    assert data["leaders"] == [data["best"]]
    code, out, _ = nodeweave(capsys, "runs", "compare", project["single"], project["sweep"], "--lower-is-better")
    assert f"{project['single']}" in out and "105 (best)" in out


def test_chart_files_need_the_plot_extra_or_say_so(project, capsys, tmp_path):
    import importlib.util

    has_matplotlib = importlib.util.find_spec("matplotlib") is not None
    code, out, err = nodeweave(capsys, "runs", "compare", project["sweep"], "--chart", str(tmp_path / "c.svg"))
    if has_matplotlib:
        assert code == EXIT_OK and (tmp_path / "c.svg").read_text().startswith("<?xml")
    else:
        assert code == EXIT_ENVIRONMENT and "pip install 'nodeweave[plot]'" in err
    code, _, err = nodeweave(capsys, "runs", "compare", project["sweep"], "--chart", str(tmp_path / "c.txt"))
    assert code == EXIT_USAGE and ".png or .svg" in err


def test_an_unknown_run_is_one_line_naming_what_exists(project, capsys):
    code, _, err = nodeweave(capsys, "runs", "show", "nope")
    assert code == EXIT_USAGE and "no run 'nope'" in err and project["sweep"] in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = nodeweave(capsys, "runs", "ls", "-o", "xml")
    assert code == EXIT_USAGE and "--output 'xml' is not accepted" in err


def test_show_a_recovered_run_names_each_generation_its_fault_and_the_work_it_threw_away(project, capsys):
    """run.json's ``recovery`` is node 0's recovery.json (docs/recovery.md): every generation that ended,
    the node left out, the time to relaunch, the checkpoint resumed and the training time after it lost."""
    folder = RunFolder.create(Path("runs"), "nwruns", SPEC, suffix="-recovered")  # the fixture's folder
    run_json(folder, {}, 0, 300.0)
    data = json.loads(folder.path.joinpath("run.json").read_text())
    data["recovery"] = {"generations": 3, "restarts": 2, "decision": "done", "members": [0, 2], "spares": [],
                        "history": [
                            {"generation": 0, "node": 1, "cause": "crash", "why": "node 1: its launcher failed "
                             "(exit 1)", "recover_s": 1.52, "resumed_step": 1200, "work_lost_s": 14.2,
                             "resume_from": "/ckpt/step-1200"},
                            {"generation": 1, "node": None, "cause": "stall", "why": "stalled", "recover_s": 3.1,
                             "resumed_step": None, "work_lost_s": None, "resume_from": None}]}
    folder.write_json("run.json", data)
    code, out, err = nodeweave(capsys, "runs", "show", folder.run_id)
    assert code == EXIT_OK, err
    text = " ".join(out.split())  # a long line wraps at the terminal's width
    assert "recovery: 3 generation(s), 2 restart(s), done; training nodes [0, 2], spares []" in text, out
    assert ("generation 0 ended: node 1: its launcher failed (exit 1); left out node 1; relaunched in 1.52 s; "
            "resumed from step 1200, 14.2 s of training after that checkpoint lost") in text, out
    assert ("generation 1 ended: stalled; left out node -; relaunched in 3.1 s; no checkpoint: started again from "
            "the beginning") in text, out


def test_show_prints_what_node_0_recorded_each_restart_resumed_from_and_the_folders_it_could_not_judge(
        project, capsys):
    """run.json's recovery is made from node 0's book by recovery_summary, as `nodeweave run` makes it: the
    checkpoint each restart resumed from and ``checkpoint_unjudged`` (folders in a layout the checkpoint finder
    does not know, never handed out) reach `runs show`. Before, the summary dropped both."""
    from nodeweave.cluster.job import recovery_summary

    unjudged = [f"/ckpt/snapshots-{i}: checkpoint-like files (opt-state.pt) in a layout nodeweave does not know: "
                "never handed out" for i in range(7)]
    book = {"generation": 1, "restarts": 1, "decision": "done", "members": [0, 1], "spares": [],
            "checkpoint_unjudged": unjudged, "history": [
                {"generation": 0, "node": 1, "cause": "crash", "why": "node 1: its launcher failed (exit 1)",
                 "at": 1000.0, "recover_s": 2.5, "resume_from": "/ckpt/step-300", "resumed_step": 300,
                 "work_lost_s": 9.5}]}
    folder = RunFolder.create(Path("runs"), "nwruns", SPEC, suffix="-unjudged")
    run_json(folder, {}, 0, 60.0)
    data = json.loads(folder.path.joinpath("run.json").read_text())
    data["recovery"] = recovery_summary(book)
    folder.write_json("run.json", data)
    code, out, err = nodeweave(capsys, "runs", "show", folder.run_id)
    assert code == EXIT_OK, err
    text = " ".join(out.split())
    assert ("generation 0 ended: node 1: its launcher failed (exit 1); left out node 1; relaunched in 2.5 s; "
            "resumed from step 300, 9.5 s of training after that checkpoint lost") in text, out
    assert f"checkpoint not judged, never handed out: {unjudged[0]}" in text, out
    assert f"checkpoint not judged, never handed out: {unjudged[4]}" in text and unjudged[5] not in text, out
    assert "and 2 more folder(s) not judged (checkpoint_unjudged in the run's recovery.json)" in text, out
    code, out, err = nodeweave(capsys, "runs", "show", folder.run_id, "-o", "json")
    assert json.loads(out)["recovery"]["checkpoint_unjudged"] == unjudged


def test_show_and_compare_split_a_runs_wall_time_into_its_goodput_buckets(project, capsys):
    """goodput.json is node 0's timeline (docs/observability.md), copied into the run folder by `nodeweave run`:
    runs show accounts it per generation and for the run, runs compare puts the productive fraction beside."""
    folder = RunFolder.create(Path("runs"), "nwruns", SPEC, suffix="-goodput")
    run_json(folder, {}, 0, 100.0)
    folder.write_json("goodput.json", {"schema": "nodeweave.goodput/1", "launched": 1000.0, "ended": 1100.0,
                                       "generations": [
                                           {"generation": 0, "first": 1010.0, "last": 1040.0,
                                            "steps": [[1011.0, 1], [1030.0, 50], [1040.0, 70]],
                                            "fault": {"at": 1045.0, "resumed_step": 50}},
                                           {"generation": 1, "first": 1055.0, "last": 1095.0, "resumed_step": 50,
                                            "ended": 1100.0}]})
    code, out, err = nodeweave(capsys, "runs", "show", folder.run_id, "-o", "json")
    assert code == EXIT_OK, err
    accounted = json.loads(out)["goodput"]
    assert accounted["buckets"] == {"training": 60.0, "startup": 10.0, "recovery": 15.0, "redone": 10.0,
                                    "stalled": 0.0, "idle": 5.0}
    assert accounted["productive"] == 0.6
    code, out, err = nodeweave(capsys, "runs", "show", folder.run_id)
    text = " ".join(out.split())
    assert ("goodput: 60.0% of 100 s productive; training 60 s, start-up 10 s, recovery 15 s, work redone 10 s, "
            "idle 5 s") in text, out
    assert "generation 0: training 20 s, start-up 10 s, work redone 10 s" in text, out
    code, out, err = nodeweave(capsys, "runs", "compare", project["single"], folder.run_id, "-o", "json")
    assert [(r["goodput"] or {}).get("productive") for r in json.loads(out)["runs"]] == [None, 0.6]
    code, out, err = nodeweave(capsys, "runs", "compare", project["single"], folder.run_id)
    assert "60.0%" in out, out
