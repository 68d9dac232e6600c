"""`validate -o json` (or yaml, or --json) on a refused spec: the error is on stdout as data too, with
"valid": false, and the exit stays 2 with the one line on stderr (the fresh walk: stdout was empty, so a
script reading it had nothing to parse). A valid spec says "valid": true."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SRC = Path(__file__).resolve().parents[1] / "src"


def _validate(folder, *args):
    return subprocess.run([sys.executable, "-m", "nodeweave.cli", "validate", *args], cwd=folder, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)


@pytest.mark.parametrize("flags, load", [(["-o", "json"], json.loads), (["--json"], json.loads),
                                         (["-o", "yaml"], yaml.safe_load)])
def test_a_refused_spec_is_data_on_stdout_and_one_line_on_stderr(tmp_path, flags, load):
    (tmp_path / "bad.yaml").write_text("name: Bad_Name\n")
    out = _validate(tmp_path, "--spec", "bad.yaml", *flags)
    assert out.returncode == 2, out.stderr
    data = load(out.stdout)
    assert data["valid"] is False and data["error"].startswith("bad.yaml:1: name: got 'Bad_Name'"), data
    assert data["errors"][0] == data["error"] and len(data["errors"]) == 3, data  # the name, image and launcher
    assert out.stderr.strip().splitlines() == [f"nodeweave: error: {e}" for e in data["errors"]], out.stderr


def test_a_valid_spec_says_so(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text("name: a\nimage: {variant: cpu}\nlauncher: {script: train.py}\n")
    out = _validate(tmp_path, "-o", "json")
    assert out.returncode == 0 and json.loads(out.stdout)["valid"] is True, out.stdout + out.stderr
