"""The eleventh walk's replay, rows C10 and C11 (fix11r2), fixed as classes (its R1-R5, C1 and C14 were fixed
by fix11r too: those fixes and their tests, tests/test_replay11_fix11r.py, are the ones kept).

Each test fails on the code before its fix. No container is started: the engines are stood in for.
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


@pytest.mark.parametrize("argv, verb", [(("run", "--", "nosuch.py"), "run"), (("run", "--", "sub/nosuch.py"), "run"),
                                        (("up", "--run"), "up")])
def test_c10_a_script_missing_from_the_mounted_workspace_is_refused_before_any_node_starts(capsys, team,
                                                                                            monkeypatch, argv, verb, engine_answers):
    """C10: on the local target the workspace folder is mounted at workspace.path, over whatever the image holds,
    so a script missing there fails on every node: `run -- nosuch.py` noted it ("unless the image holds it"),
    started both nodes and left a failed run folder. The real verb refuses it (exit 2, nothing started); its dry
    run says the real one would end with exit 2. up --run (the spec's script) alike."""
    import nodeweave.cluster.onbackend as onbackend

    if verb == "up":
        (team / "nodeweave.yaml").write_text((team / "nodeweave.yaml").read_text().replace("train.py", "nosuch.py"))
    monkeypatch.setattr(onbackend, "require_up", lambda *a, **k: None)
    monkeypatch.setattr(onbackend, "refuse_busy", lambda *a, **k: None)
    code, out, err = run_cli(capsys, *argv[:1], "--dry-run", *argv[1:])
    # up reads nothing on nodes: certain, the real exit; run's, with nothing up, a note (walk17a A8-A10)
    assert code == (2 if verb == "up" else 0) and f"the real {verb} would end with exit 2: " in out, out
    assert "unless the image" not in out, out
    if verb == "run":
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and "every node would fail with 'No such file'; nothing was started" in err, err
        assert not (team / "runs").exists() or not any((team / "runs").iterdir())


def test_c11_a_node_0_killed_before_its_end_leaves_a_goodput_record_runs_show_accounts(tmp_path, monkeypatch):
    """C11: a run ended by `nodeweave stop --grace 0` (node 0's entrypoint SIGKILLed, no close) read "goodput: - of
    0 s productive; training 0 s" after 30 s of training: the periodic copy of node 0's timeline carried no time of
    its own ("saved", which runs show accounts to for a record never ended), so the account ended at the launch."""
    import json

    from nodeweave.entrypoint.metrics.live import RECORD, Live
    from nodeweave.runs.goodput import lines, run_goodput

    class Settings(dict):
        env = {"TMPDIR": str(tmp_path)}

    live = Live(Settings(), print, launched=1000.0)
    live.folders = [str(tmp_path)]
    live.timeline["generations"].append({"generation": 0, "first": 1002.0, "last": 1030.0, "ended": None,
                                         "fault": None, "stalls": [], "steps": []})
    live.save(now=1031.0)  # the 5-s save; the process is then killed: no close()
    kept = json.loads((tmp_path / RECORD).read_text())
    assert kept["ended"] is None and kept["saved"] == 1031.0

    class Entry:
        path = tmp_path

    said = lines(run_goodput(Entry()))
    assert said and "of 31 s productive" in said[0] and "training 0 s" not in said[0], said
