"""left11b (issue 43): rows of the tenth walk and its replay left in part (walk10c C4, C5, C22; replay10 A7, A25),
one test per class."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest

from test_plan_record import bare_hosts, nodeweave  # noqa: F401 - the fixture: three bare hosts, the ssh stand-in

# --- C4, C5: exec's --timeout and Ctrl-C end the command on every node still running it ------------------------

# The user's words, each one argument, that a shell would split or fill: they must reach the command as typed.
AWKWARD = ["a b", "it's \"q\"", "$HOME;x", "*", ""]
SHOW = 'printf "<%s>" "$@"; echo'
SHOWN = "".join(f"<{w}>" for w in AWKWARD)


def _still_running(marker: str) -> "list[str]":
    """This machine's processes whose command line holds ``marker`` (the stand-in hosts run here)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if proc.name.isdigit() and marker in line and "pytest" not in line:
            found.append(f"{proc.name} {line}")
    return found


def _slow(marker: str) -> "list[str]":
    """A command that prints its awkward words and then runs a child (a sleep of its own length) and waits."""
    return ["sh", "-c", f'{SHOW}; sleep {marker} & wait', "sh", *AWKWARD]


def test_c4_exec_timeout_ends_the_command_on_every_node_and_says_so(bare_hosts):  # noqa: F811
    """C4: `exec --timeout` ends the command and its children on every node still running it (not only the ssh
    client here), exit 124, one line "timed out: ended on node-0 .. node-2", every node alike in --json; the user's
    words reach the command as typed; the dry run's argv shows the wrapper, the user's words after it untouched."""
    folder, env, flags = bare_hosts
    assert nodeweave(folder, env, "up", *flags, "--timeout", "60").returncode == 0
    marker = f"97.{random.randrange(10**6):06d}"
    dry = nodeweave(folder, env, "exec", "--dry-run", "-o", "json", "--", *_slow(marker))
    assert dry.returncode == 0, dry.stderr
    (phase,) = json.loads(dry.stdout)["phases"]
    assert "wrapper that records its pid" in phase["what"], phase["what"]
    done = nodeweave(folder, env, "exec", "--timeout", "4", "-o", "json", "--", *_slow(marker))
    time.sleep(1)
    left = _still_running(marker)
    assert not left, left
    assert done.returncode == 124, done.stdout + done.stderr
    assert "timed out: ended on node-0 .. node-2" in done.stderr, done.stderr
    nodes = json.loads(done.stdout)["nodes"]
    assert [(n["exit_code"], n["ended"]) for n in nodes] == [(None, "ended")] * 3, nodes
    assert [n["last_line"] for n in nodes] == [SHOWN] * 3, nodes


def test_c5_exec_ctrl_c_stops_the_command_on_every_node(bare_hosts):  # noqa: F811
    """C5: Ctrl-C (SIGINT) stops the command on every node (as `run` does), exit 130, "stopped on node-0 ..
    node-2"; nothing of it is left running."""
    folder, env, flags = bare_hosts
    assert nodeweave(folder, env, "up", *flags, "--timeout", "60").returncode == 0
    marker = f"98.{random.randrange(10**6):06d}"
    proc = cli_run.popen([*cli_run.NODEWEAVE, "exec", "--", *_slow(marker)], cwd=folder, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(_still_running(f"sleep {marker}")) < 3 and time.monotonic() < deadline:
        time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    time.sleep(1)
    left = _still_running(marker)
    assert not left, left
    assert proc.returncode == 130, out + err
    assert "interrupted: stopped on node-0 .. node-2" in err, err


def test_c4_the_stopper_kills_what_ignores_sigterm_and_leaves_a_reused_pid_alone(tmp_path):
    """C4: the stop exec's own cases, on this machine's sh: a command that ignores SIGTERM is killed after the
    grace ("killed"); a pid record whose process has gone (its pid perhaps reused) is left alone ("gone"); no
    record, "none"."""
    from nodeweave.cluster.execstop import EXEC_ID, stop_command, wrapped

    token = f"t{random.randrange(10**9)}"
    stubborn = subprocess.Popen([w.replace(EXEC_ID, token) for w in
                                 wrapped(["sh", "-c", "trap '' TERM; sleep 99 & wait"], 7)])
    time.sleep(0.5)
    done = subprocess.run(stop_command(token, 7, grace=1), capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["killed"] and stubborn.wait(5) == -signal.SIGKILL, done
    record = Path(f"/tmp/nodeweave-exec-{token}-node-8.pid")
    record.write_text(f"{stubborn.pid} 1\n")  # a pid that has gone, or another process's start time
    done = subprocess.run(stop_command(token, 8), capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["gone"] and not record.exists(), done
    done = subprocess.run(stop_command(token, 9, grace=1), capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["none"], done


IMAGE = "localhost/nodeweave-base:bookworm"
SPEC = "name: nwl11b\nimage: {variant: cpu}\nnodes: 2\ngpus_per_node: 1\nlauncher: {script: train.py}\n"


@pytest.fixture(scope="module")
def podman_nodes(tmp_path_factory):
    """Two real podman containers named as the spec's local nodes, carrying this folder's mark; removed after."""
    from nodeweave.cluster.identity import JobMark

    names = ["nwl11b-0", "nwl11b-1"]
    folder = tmp_path_factory.mktemp("l11b")
    (folder / "nodeweave.yaml").write_text(SPEC)
    labels = [f"--label={key}={value}" for key, value in JobMark.of(folder, "nwl11b").labels().items()]
    subprocess.run(["podman", "rm", "-f", *names], capture_output=True)
    for name in names:
        subprocess.run(["podman", "run", "-d", "--name", name, "--hostname", name, *labels, IMAGE, "sleep", "600"],
                       check=True, capture_output=True)
    yield folder, names
    subprocess.run(["podman", "rm", "-f", "-t", "0", *names], capture_output=True)


def _in_container(name: str, marker: str) -> "list[str]":
    listed = subprocess.run(["podman", "exec", name, "sh", "-c", 'for d in /proc/[0-9]*; do tr "\\0" " " '
                             '<"$d/cmdline"; echo; done'], capture_output=True, text=True, timeout=60).stdout
    return [line for line in listed.splitlines() if marker in line and "/proc" not in line]


@pytest.mark.engine
def test_c4_c5_on_real_podman_the_timeout_and_ctrl_c_end_the_command_in_every_container(podman_nodes):
    """C4 C5 on real podman: past --timeout the command and its child are gone from both containers, exit 124;
    Ctrl-C likewise, exit 130; the awkward words arrive as typed."""
    folder, names = podman_nodes
    marker = f"96.{random.randrange(10**6):06d}"
    done = cli_run.run([*cli_run.NODEWEAVE, "exec", "--engine", "podman", "--timeout", "5", "--", *_slow(marker)],
                       cwd=folder, timeout=120)
    assert done.returncode == 124, done.stdout + done.stderr
    assert "timed out: ended on node-0, node-1" in done.stderr, done.stderr
    assert done.stdout.count(SHOWN) == 2, done.stdout
    assert [_in_container(n, marker) for n in names] == [[], []]
    marker = f"95.{random.randrange(10**6):06d}"
    proc = cli_run.popen([*cli_run.NODEWEAVE, "exec", "--engine", "podman", "--", *_slow(marker)], cwd=folder,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while not all(_in_container(n, f"sleep {marker}") for n in names) and time.monotonic() < deadline:
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, out + err
    assert "interrupted: stopped on node-0, node-1" in err, err
    assert [_in_container(n, marker) for n in names] == [[], []]
