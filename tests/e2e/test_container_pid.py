"""A container's pid, taken to signal or enter it from the host, is never a stopped container's 0.

``kill -9 0`` signals the caller's own process group: under ``make test`` that is pytest, its workers and make.
cleanci12's clean-machine run lost all three that way, 1 % into the suite: the docker recovery test waited for
node 0's step 12 while, on a loaded machine, node 0 finished its 30 steps, and ``_crash`` killed the pid docker
gave for the stopped container. No engine is needed: a stand-in engine and ``kill`` on PATH.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from e2e_harness import container_pid
from test_recovery import _crash

STANDIN = """#!/bin/sh
# inspect -f TEMPLATE NAME: the answers of a container that is {state}
case "$3" in
  *RestartCount*) echo "1 running" ;;
  *Status*) echo "{pid} {state}" ;;
  *) echo "{pid}" ;;
esac
"""


def _engine(tmp_path, monkeypatch, pid: str, state: str) -> SimpleNamespace:
    """A stand-in engine answering ``inspect`` for a container in ``state``, and a ``kill`` that only notes its
    arguments (in ``killed``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "standin-engine").write_text(STANDIN.format(pid=pid, state=state))
    (bin_dir / "kill").write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path / "killed"}"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return SimpleNamespace(kind="standin-engine")


def test_a_crash_of_a_container_that_already_stopped_fails_the_test_and_signals_nothing(tmp_path, monkeypatch):
    engine = _engine(tmp_path, monkeypatch, "0", "exited")
    with pytest.raises(AssertionError, match=r"e2e-dkr0-0 has no running process to signal or enter: "
                                             r"standin-engine inspect says pid 0, status exited"):
        _crash(engine, "e2e-dkr0-0")
    assert not (tmp_path / "killed").exists(), (tmp_path / "killed").read_text()


def test_a_running_containers_pid_is_the_one_signalled(tmp_path, monkeypatch):
    if __import__("os").geteuid() != 0:
        pytest.skip("as root _crash signals with kill; else through podman unshare")
    engine = _engine(tmp_path, monkeypatch, "4242", "running")
    _crash(engine, "e2e-dkr0-0")
    assert (tmp_path / "killed").read_text() == "-9 4242\n"


@pytest.mark.parametrize("answer", ["", "0 created", "0 exited", "abc running", "-1 running"])
def test_no_pid_but_a_positive_one_comes_back(tmp_path, monkeypatch, answer):
    pid, _, state = answer.partition(" ")
    engine = _engine(tmp_path, monkeypatch, pid, state)
    with pytest.raises(AssertionError, match="has no running process to signal or enter"):
        container_pid(engine.kind, "e2e-x-0")
