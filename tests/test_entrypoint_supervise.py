"""torchrun, deepspeed and accelerate run as the entrypoint's child: a stop shows as 128+N.

The launchers here are small shell scripts standing in for torchrun that
behave as torchrun does on SIGTERM (trap it, stop, exit 1); the entrypoint,
its signal forwarding and the exit codes are the real ones.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest

FIX = Path(__file__).parent / "fixtures" / "synthetic"
SRC = Path(__file__).resolve().parents[1] / "src"

# Like torchrun: on SIGTERM it stops (here: records it) and exits 1.
TRAPPING = """#!/bin/sh
trap 'echo term >> "$MARK"; exit 1' TERM
echo "$$" > "$MARK.pid"
while :; do sleep 0.05; done
"""
PLAIN = """#!/bin/sh
echo "$$" > "$MARK.pid"
exec sleep 60
"""


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    """The entrypoint runs where the training script is (it refuses to start one that is not there)."""
    (tmp_path / "train.py").write_text("")
    monkeypatch.chdir(tmp_path)


def start(tmp_path, script, launcher="torchrun"):
    fake = tmp_path / launcher
    fake.write_text(script)
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHONPATH": str(SRC), "MARK": str(tmp_path / "mark"),
           "NODEWEAVE_LAUNCHER": launcher, "NODEWEAVE_WAIT_TIMEOUT": "0"}
    proc = cli_run.popen([*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "cpu-only"),
                             "--", "train.py"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pidfile = tmp_path / "mark.pid"
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the launcher never started"
        time.sleep(0.05)
    return proc, int(pidfile.read_text())


def test_sigterm_is_passed_on_once_and_the_status_says_sigterm(tmp_path):
    proc, child = start(tmp_path, TRAPPING)
    assert child != proc.pid
    assert os.getpgid(child) == child  # its own group: tini's group-wide signal reaches only the parent
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert (tmp_path / "mark").read_text() == "term\n"  # exactly once


def test_a_launcher_killed_by_a_signal_gives_128_plus_n(tmp_path):
    proc, child = start(tmp_path, PLAIN)
    os.kill(child, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGKILL


@pytest.mark.parametrize("launcher", ["torchrun", "deepspeed", "accelerate"])
def test_without_a_signal_the_launchers_own_code_passes_through(tmp_path, launcher):
    fake = tmp_path / launcher
    fake.write_text("#!/bin/sh\nexit 7\n")
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHONPATH": str(SRC), "NODEWEAVE_LAUNCHER": launcher,
           "NODEWEAVE_WAIT_TIMEOUT": "0"}
    out = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "cpu-only"),
                          "--", "train.py"], env=env, timeout=60)
    assert out.returncode == 7, out.stderr


def test_a_missing_launcher_is_127_before_any_fork(tmp_path):
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(SRC), "NODEWEAVE_WAIT_TIMEOUT": "0"}
    out = cli_run.run([*cli_run.ENTRYPOINT, "--sysroot", str(FIX / "cpu-only"),
                          "--", "train.py"], env=env, timeout=60)
    assert out.returncode == 127 and "launcher 'torchrun' not found" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_launcher_stops_when_the_entrypoint_is_killed(tmp_path):
    proc, child = start(tmp_path, TRAPPING)
    proc.kill()  # SIGKILL: no chance to pass anything on
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 30
    while (tmp_path / "mark").exists() is False:
        assert time.monotonic() < deadline, "the launcher outlived a killed entrypoint"
        time.sleep(0.05)
    assert (tmp_path / "mark").read_text() == "term\n"  # it got SIGTERM (PR_SET_PDEATHSIG)
