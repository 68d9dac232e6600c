"""The ``nodeweave`` command starts and answers --help."""

import subprocess
import sys


def test_help_lists_commands():
    out = subprocess.run(
        [sys.executable, "-m", "nodeweave.cli", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout
