"""The ninth walk's rows fixed on main (issue 43), one test per class."""

import re
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


def test_a_node_that_was_itself_stopped_says_so_and_does_not_blame_node_0():
    """B12: a node woken from SIGSTOP (20 s) said node 0's "exchange closed without a word: node 0's entrypoint was
    killed" of a node 0 that was alive and had declared this node lost. Its own pause is now named."""
    import time

    from loopback_hub import Cluster, Launcher
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    log, launcher, jump = [], Launcher(), [0.0]
    link = LinkWatch(cluster.channels[1], log.append, clock=lambda: time.monotonic() + jump[0])
    link.start(launcher.stop)
    try:
        time.sleep(1.0)
        jump[0] = 20.0  # the process was stopped for 20 s: its clock jumps at its next wake
        cluster.hub.close()  # and node 0, which declared it lost, has closed its channel
        assert launcher.stopped.wait(20), log
        time.sleep(0.2)
    finally:
        link.close()
        cluster.close()
    said = next(line for line in log if line.startswith("this node was declared lost by node 0 ("))  # walk10 B10
    assert re.search(r"this node itself was silent for 2[01]s", said) and "entrypoint was killed" not in said, said


def test_a_node_that_was_not_stopped_still_names_node_0():
    """B12's other side: node 0's exchange closing while this node ran on is still said of node 0."""
    import time

    from loopback_hub import Cluster, Launcher
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch

    cluster = Cluster(1)
    assert cluster.decide()["decision"] == "start"
    log, launcher = [], Launcher()
    link = LinkWatch(cluster.channels[1], log.append)
    link.start(launcher.stop)
    try:
        time.sleep(1.0)
        cluster.hub.close()
        assert launcher.stopped.wait(20), log
        time.sleep(0.2)
    finally:
        link.close()
        cluster.close()
    said = next(line for line in log if line.startswith("node 0 (") and " failed: " in line)
    assert "entrypoint was killed" in said and "silent" not in said, said
