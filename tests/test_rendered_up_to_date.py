"""The committed images/, compose/, manifests/ and entrypoint/ are what nodeweave.yaml renders today.

A clone works without the tool only if those files are current; this test is
the tripwire. It runs the real command (``nodeweave render <target> --check``,
exit 4 when stale) once per renderer, so a failure names the stale part.
The fix is always ``make render`` and a commit. ``entrypoint`` is the zipapp
(bytes, compared as they are): an edit to the entrypoint's sources without
``make render`` fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nodeweave.errors import EXIT_OK
from nodeweave.rendering import wanted_targets
from nodeweave.spec import load_spec

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("target", wanted_targets(load_spec(REPO / "nodeweave.yaml")))
def test_committed_rendered_files_are_up_to_date(target):
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())", "render", target, "--spec", str(REPO / "nodeweave.yaml"), "--check"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert out.returncode == EXIT_OK, (
        f"committed {target} output is stale for nodeweave.yaml (exit {out.returncode}); run `make render` and commit:\n"
        + out.stderr[-3000:]
    )
