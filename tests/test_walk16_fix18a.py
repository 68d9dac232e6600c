"""fix18a (walk16a A1, A2, A17): a verb that holds work on the nodes, ended from outside by a reader that went away
(``| head``: EPIPE), a SIGTERM (a CI step's timeout, a kill) or a SIGHUP (the terminal closed), ends it as its Ctrl-C
does: the nodes' command stopped everywhere, a run's end recorded, one line on stderr. Real processes: two bare
hosts through the ssh stand-in (tests/ssh_standin.py: each host runs its real entrypoint on this machine), a real
pipe closed by ``head``, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import cli_run
import pytest

from test_left12a import bare_hosts_in
from test_plan_record import HOSTS, _port, nodeweave

SPEC = """name: endings
image: {{variant: cpu}}
nodes: 2
gpus_per_node: 1
launcher: {{script: ticks.py, master_port: {port}}}
"""

# A node's job that prints a line a second for a minute and imports no torch (the machine is shared and small).
TICKS = "import sys, time\nfor i in range(60):\n    print('tick', i, flush=True)\n    time.sleep(1)\n"


@pytest.fixture(scope="module")
def hosts_up(tmp_path_factory):
    folder = tmp_path_factory.mktemp("endings")
    env, flags = bare_hosts_in(folder, SPEC.format(port=_port()), hosts=HOSTS[:2])
    (folder / "ticks.py").write_text(TICKS)
    up = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    yield folder, env
    nodeweave(folder, env, "down")


def alive(marker: str) -> "list[str]":
    """The processes on this machine (every stand-in host's) whose command line holds ``marker``."""
    found = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


def ended_from_outside(folder: Path, env: dict, args: "list[str]", ending: str, after: str) -> "tuple[int, str]":
    """``nodeweave ARGS`` ended by ``ending`` once its stdout showed ``after``: "pipe" (its reader closes the pipe,
    as `| head` does), or a signal's name sent to it; (its exit code, its stderr)."""
    child = cli_run.popen([*cli_run.NODEWEAVE, *args], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    seen = ""
    while after not in seen:
        assert time.monotonic() < deadline, seen
        line = child.stdout.readline()
        assert line, f"{args}: stdout ended before {after!r}: {seen}{child.stderr.read()}"
        seen += line
    if ending == "pipe":
        child.stdout.close()  # `| head -N` exiting: the next write meets EPIPE
    else:
        os.kill(child.pid, getattr(signal, ending))
    try:
        err = child.communicate(timeout=90)[1] if ending != "pipe" else child.stderr.read()
        code = child.wait(timeout=90)
    finally:
        if child.poll() is None:
            child.kill()
    return code, err


def slow_hosts(folder: Path) -> "tuple[dict, list]":
    """Two bare hosts whose every ssh call first waits 30 s in a child of its own (a slow network, a compose pull):
    (env, the host flags)."""
    env, flags = bare_hosts_in(folder, SPEC.format(port=_port()), hosts=HOSTS[:2])
    ssh = folder / "bin" / "ssh"
    first, rest = ssh.read_text().split("\n", 1)
    ssh.write_text(f"{first}\necho ssh >> {folder}/ssh-began\nsleep 30\n{rest}")
    return env, flags


@pytest.mark.parametrize("verb, ending", [("exec", "pipe"), ("exec", "SIGTERM"), ("exec", "SIGHUP"),
                                          ("run", "pipe"), ("run", "SIGTERM"), ("run", "SIGHUP"), ("up", "SIGTERM")])
def test_an_ending_from_outside_does_what_ctrl_c_does(hosts_up, tmp_path, verb, ending):
    if verb == "up":  # a local step below nodeweave (here ssh) gets the SIGINT a terminal's Ctrl-C would give it
        env, flags = slow_hosts(tmp_path)
        child = cli_run.popen([*cli_run.NODEWEAVE, "up", *flags], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 60
        while not (tmp_path / "ssh-began").exists():
            assert time.monotonic() < deadline and child.poll() is None, child.communicate()
            time.sleep(0.2)
        began = time.monotonic()
        child.send_signal(signal.SIGTERM)
        err = child.communicate(timeout=60)[1]  # its pipes close once every process below it has ended
        assert child.returncode == 130 and "interrupted: up stopped" in err, (child.returncode, err)
        assert time.monotonic() - began < 20, "the step's ssh went on after nodeweave ended"
        return
    folder, env = hosts_up
    marker = f"m{uuid.uuid4().hex[:10]}"
    if verb == "exec":
        args = ["exec", "--", "sh", "-c", f"for i in $(seq 1 60); do echo {marker} $i; sleep 1; done"]
        after = f"{marker} 3"
    else:
        args = ["run", "--", "ticks.py", marker]
        after = "tick 3"
    before = {p.name for p in (folder / "runs").iterdir() if p.is_dir()} if (folder / "runs").is_dir() else set()
    code, err = ended_from_outside(folder, env, args, ending, after)
    assert "Traceback" not in err, err
    assert code == 130, (code, err)  # what Ctrl-C gives
    if ending == "pipe":  # said on stderr, the one stream left
        assert "the output's reader went away" in err and f"{verb} is ended as Ctrl-C ends it" in err, err
    if verb == "exec":
        assert "interrupted: stopped on node-0, node-1" in err, err
    deadline = time.monotonic() + 30
    while alive(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not alive(marker), alive(marker)  # nothing left running on any node
    if verb == "run":
        (run_id,) = {p.name for p in (folder / "runs").iterdir() if p.is_dir()} - before
        record = json.loads((folder / "runs" / run_id / "run.json").read_text())
        assert record.get("ended") is not None, record  # the run's end recorded, never "running (or cut off)"
