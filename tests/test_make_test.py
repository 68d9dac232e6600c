"""`make test` (the README's second command) fails when pytest collects no test.

pytest exits 5 when nothing was collected (a PYTEST_ARGS ``-k`` that matches no test, a path that moved):
a run that tested nothing must not read as a pass. The target is run for real, on a venv folder whose
``bin/python`` runs this interpreter (``install``'s files are there, so make installs nothing), collecting
this one file only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = "tests/test_make_test.py"


def _make_test(tmp_path, pytest_args):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # a link would lose the real venv's packages
    python.chmod(0o755)
    (venv / "bin" / "nodeweave").touch()  # newer than pyproject.toml: `install` is done
    (venv / "checkov" / "bin").mkdir(parents=True)
    (venv / "checkov" / "bin" / "checkov").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MAKE"))} | {"PYTHONPATH": str(REPO / "src")}
    return subprocess.run(["make", "test", f"VENV={venv}", "TEST_WORKERS=0",
                           f"PYTEST_ARGS={HERE} -p no:cacheprovider {pytest_args}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_make_test_fails_and_says_so_when_pytest_collects_no_test(tmp_path):
    out = _make_test(tmp_path, "-k no_test_is_named_like_this")
    assert out.returncode != 0, out.stdout[-2000:]
    assert "Error 5" in out.stderr and "collected no test (exit 5)" in out.stderr, out.stderr


def test_make_test_passes_when_pytest_collects_and_passes(tmp_path):
    """The other side: the same run collecting this file's tests (not running them: no recursion) passes."""
    out = _make_test(tmp_path, "--collect-only -q")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "test_make_test_fails_and_says_so" in out.stdout and "exit 5" not in out.stderr, out.stdout
