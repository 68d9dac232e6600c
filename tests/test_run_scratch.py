"""The test run keeps every process's temporary files in a folder of its own (tests/conftest.py): a run in the
machine's /tmp met the claims and rank records of the run before it, and left hundreds of folders behind."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

GETTEMPDIR = [sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"]


def test_this_process_and_a_child_with_the_inherited_environment_write_in_the_runs_folder():
    root = os.environ["NW_TESTS_TMPROOT"]
    assert tempfile.gettempdir().startswith(root + os.sep)
    out = subprocess.run(GETTEMPDIR, capture_output=True, text=True, check=True).stdout.strip()
    assert out == os.environ["TMPDIR"] and out.startswith(root + os.sep)


def test_a_child_with_an_environment_written_from_scratch_keeps_the_runs_tmpdir():
    """Stop 55: `env={"PATH": ...}` left TMPDIR out, and the entrypoints and torchrun of such tests wrote
    /tmp/nodeweave and /tmp/torchelastic_* again."""
    out = subprocess.run(GETTEMPDIR, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == os.environ["TMPDIR"]


def test_a_child_that_names_its_own_tmpdir_keeps_it(tmp_path):
    out = subprocess.run(GETTEMPDIR, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == str(tmp_path)
