"""The ninth walk's rows fixed on main (issue 43), one test per class."""

import shutil
import subprocess

import pytest

from cli_run import REPO

FOREIGN_PIP = """#!/bin/sh
echo "$@" >> "{log}"
if [ "$1 $2" = "show nodeweave" ]; then
  echo "Name: nodeweave"
  {where}
  exit 0
fi
exit 0
"""


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
@pytest.mark.parametrize("target", ["install", "cli", "render", "status", "up"])
@pytest.mark.parametrize("where, said", [("echo 'Editable project location: /srv/other-checkout'", "/srv/other-checkout"),
                                         ("echo 'Location: /opt/venv/lib/python3.11/site-packages'", "a wheel")])
def test_a_venv_holding_another_checkouts_nodeweave_is_never_installed_into(tmp_path, target, where, said):
    """A14: `make render VENV=<a venv of another checkout>` ran `pip install -e .` there and re-pointed it at this
    clone. Every target that installs refuses first, naming where that venv's nodeweave is from."""
    venv, log = tmp_path / "venv", tmp_path / "pip.log"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "pip").write_text(FOREIGN_PIP.format(log=log, where=where))
    (venv / "bin" / "pip").chmod(0o755)
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
    (venv / "bin" / "python").chmod(0o755)
    done = subprocess.run(["make", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"holds nodeweave installed from {said}" in done.stderr and "not from this checkout" in done.stderr
    assert [line for line in log.read_text().splitlines() if line.startswith("install")] == [], log.read_text()


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_a_venv_of_this_checkout_is_installed_into_as_before(tmp_path):
    """A14's other side: this checkout's own venv (editable from here) is not refused."""
    venv, log = tmp_path / "venv", tmp_path / "pip.log"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "pip").write_text(FOREIGN_PIP.format(log=log, where=f"echo 'Editable project location: {REPO}'"))
    (venv / "bin" / "pip").chmod(0o755)
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
    (venv / "bin" / "python").chmod(0o755)
    done = subprocess.run(["make", "cli", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "install -q -e ." in log.read_text()
