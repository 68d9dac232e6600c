""".ci/run's own shell, on a machine that never ran it: its disk lines must not end the run.

On a new machine /var/lib/containers does not exist until podman is installed; ``df`` on it exits 1, and
under ``set -euo pipefail`` the first disk line ended the whole run (issue 43). The functions are taken
from the script itself and run under the same shell options.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _functions() -> str:
    """``existing`` and ``disk`` as .ci/run defines them."""
    text = (REPO / ".ci" / "run").read_text()
    found = []
    for name in ("existing", "disk"):
        start = text.index(f"\n{name}() {{") + 1
        found.append(text[start:text.index("\n}\n", start) + 3])
    return "".join(found)


def _bash(body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = "set -euo pipefail\n" + _functions() + body + "\necho reached-the-end\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_a_disk_line_for_a_folder_not_made_yet_names_its_nearest_parent_and_the_run_goes_on(tmp_path):
    missing = tmp_path / "var" / "lib" / "containers"
    out = _bash(f'disk "at the start" / "{missing}" /tmp\nexisting "{missing}"', tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("reached-the-end"), out.stdout
    assert "== disk at the start: " in out.stdout and " free on /" in out.stdout, out.stdout
    assert f"\n{tmp_path}\n" in out.stdout, "the nearest existing parent of the missing folder"


def test_the_disk_lines_default_to_the_folders_the_engines_and_tests_write_even_where_none_exists(tmp_path):
    out = _bash('cd "$(mktemp -d)"; rmdir "$PWD"; disk "before the tests"', tmp_path)
    assert out.returncode == 0, out.stderr
    assert "== disk before the tests: " in out.stdout and out.stdout.rstrip().endswith("reached-the-end")
