"""Walk 6, W70: ``bench --plot`` judged as ``runs compare --chart`` is, and --dtype's usual short names.

``--plot train.py`` was first told to install matplotlib; one rule (``runs.chart.check_chart_path``) now refuses a
chart name that is not .png/.svg for both flags before anything else. ``--dtype fp16``/``bf16`` are taken as
float16/bfloat16. Fails before the fix.
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE


@pytest.fixture
def here(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_plot_refuses_a_name_that_is_no_chart_first(here, capsys):
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--plot", "train.py")
    line = one_line(err)
    assert code == EXIT_USAGE and line.endswith("--plot train.py: accepted: a file name ending in .png or .svg"), line
    assert (here / "train.py").read_text() == "print('training')\n"


@pytest.mark.parametrize("short, name", [("fp16", "float16"), ("bf16", "bfloat16"), ("fp32", "float32")])
def test_dtype_takes_the_short_names(here, capsys, short, name):
    code, out, err = run_cli(capsys, "bench", "--dry-run", "--dtype", short)
    assert code == 0 and f"--dtype {name}" in out + err, out + err
