"""Walk 6, W68: ``stall_warn: 0`` (spec or NODEWEAVE_STALL_WARN) names what the "see the job" side loses.

The rank series need the stall watch (docs/observability.md), so every place that says the watch is off (validate's
note, the entrypoint's note and its --explain row) names them too, from one sentence (``RANK_SERIES_OFF``). Fails
before the fix (only the stall report and stop were named).
"""

from __future__ import annotations

from cli_run import entrypoint, in_process as run_cli
from nodeweave.entrypoint.planning.shared_rules import RANK_SERIES_OFF

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py, stall_warn: 0}\n"


def test_validate_names_the_rank_series_it_switches_off(tmp_path, monkeypatch, capsys):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "validate")
    assert code == 0 and RANK_SERIES_OFF in err and "heat map" in RANK_SERIES_OFF, err


def test_the_entrypoints_plan_names_them_too(tmp_path):
    (tmp_path / "train.py").write_text("print('training')\n")
    done = entrypoint("--explain", "--", "train.py", cwd=tmp_path,
                      env={"PATH": "/usr/bin:/bin", "NODEWEAVE_STALL_WARN": "0", "NODE_RANK": "0", "NNODES": "2",
                           "MASTER_ADDR": "h0"})
    text = done.stdout + done.stderr
    assert done.returncode == 0 and text.count(RANK_SERIES_OFF) >= 2, text  # the row and the note
