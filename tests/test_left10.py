"""The four rows of the ninth walk fixed only in part (issue 43), each as a class; every test fails on the code
before its fix:

- B9: a stop signal this node was sent (Ctrl-C) diverts the launcher's own tracebacks of it to a file the node's
  one stop line names (exit 130), on every watch;
- A3: every relay of a failed launcher's output names the worker's own error line first, picked by one function
  (``symptoms.cause``), not torchrun's ``ChildFailedError`` frames;
- A29: pip's and uv's own index variables exported in this shell are named in the build plan with the way that
  works;
- A27: the real home folder ($HOME, the passwd entry's) is refused as a workspace wherever it is.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

# ---------------------------------------------------------------------------------------------------------- B9


def _wait_for(node, needle, limit=120.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if node.first(needle) is not None or node.proc.poll() is not None:
            return node.first(needle)
        time.sleep(0.2)
    return None


@pytest.mark.parametrize("nodes", [1, 2], ids=["one-node", "two-nodes"])
def test_b9_ctrl_c_on_node_0_is_one_line_and_no_launcher_traceback(tmp_path, nodes):
    """B9: Ctrl-C in node 0's terminal showed torchrun's and the script's tracebacks (`SignalException: Process N
    got signal: 2`, `KeyboardInterrupt`) and no nodeweave line; the node now says in one line it stopped on
    SIGINT (exit 130), the tracebacks kept in the file it names, and a peer hears a stop without any of them."""
    pytest.importorskip("torch")
    from stall_harness import start, stop

    started = start(tmp_path, "torchrun", ["--steps", "100000", "--interval", "0.2"], nodes=nodes)
    try:
        assert _wait_for(started[0], "NODEWEAVE-STEP rank=0") is not None, started[0].text()
        time.sleep(1.0)
        started[0].proc.send_signal(signal.SIGINT)
        codes = [node.wait(90) for node in started]
    finally:
        stop(started)
    err = started[0].text()
    assert codes[0] == 130, err
    said = [line for line in err.splitlines() if "stopped on SIGINT (Ctrl-C)" in line]
    assert len(said) == 1 and "this node exits 130)" in said[0], err
    console = err + "\n" + started[0].text("out")
    assert "SignalException" not in console and "Traceback" not in console, console
    assert "KeyboardInterrupt" not in console, console
    kept = Path(said[0].rsplit(": ", 1)[1])
    assert "SignalException" in kept.read_text(), kept.read_text()
    if nodes == 2:  # node 1's ranks may fail on their own first (gloo: the peer closed), which is theirs to show
        other = started[1].text() + "\n" + started[1].text("out")
        assert codes[1] == 5, other
        assert "node 0 (" in other and ") was stopped (SIGINT, Ctrl-C): " in other and " failed: " not in other, other
        assert "SignalException" not in other and "KeyboardInterrupt" not in other, other


# ---------------------------------------------------------------------------------------------------------- A3

BOOM = '''import os, time
import torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == int(os.environ.get("BOOM_RANK", "1")):
    raise RuntimeError("boom-left10: the worker's own error")
time.sleep(30)
'''
BOOM_LINE = "RuntimeError: boom-left10: the worker's own error"


def test_a3_a_failed_node_and_its_peer_name_the_workers_own_error_first(tmp_path):
    """A3: node 0 relayed `node 1 failed: torchrun exited 1` and 20 lines of torchrun's ChildFailedError frames,
    which never reach the worker's error; node 1 said nothing of its own. Real torchrun on gloo."""
    pytest.importorskip("torch")
    import stall_nodes

    (tmp_path / "boom.py").write_text(BOOM)
    started = stall_nodes.start(tmp_path, "torchrun", ["boom.py"], 2, 1, {})
    try:
        codes = [node.wait(120) for node in started]
    finally:
        stall_nodes.stop(started)
    assert codes == [5, 1], [node.text() for node in started]
    relay = next(line for line in started[0].text().splitlines() if "node 1 (" in line and " failed: " in line)
    assert f"failed: torchrun exited 1: [rank1]: {BOOM_LINE}; stopping this node's launcher" in relay, relay
    own = [line for line in started[1].text().splitlines() if "this node's launcher failed" in line]
    assert own == [f"nodeweave-entrypoint: this node's launcher failed: torchrun exited 1: [rank1]: {BOOM_LINE}"], \
        started[1].text()


@pytest.fixture(scope="module")
def torchrun_output(tmp_path_factory):
    """What real torchrun prints when its one worker raises: the worker's traceback, then its own frames."""
    pytest.importorskip("torch")
    import subprocess

    folder = tmp_path_factory.mktemp("boom")
    (folder / "boom.py").write_text(BOOM)
    torchrun = Path(sys.executable).parent / "torchrun"
    out = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "1", "boom.py"], cwd=folder,
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, BOOM_RANK="0", OMP_NUM_THREADS="1"))
    assert out.returncode == 1 and "ChildFailedError" in out.stderr.split(BOOM_LINE)[1], out.stderr
    return out.stdout + out.stderr


def test_a3_one_pick_of_the_cause_behind_torchruns_frames(torchrun_output):
    """A3: the one function every relay uses picks the worker's line, never ChildFailedError's."""
    from nodeweave.entrypoint.running.symptoms import cause

    assert cause(torchrun_output) == f"[rank0]: {BOOM_LINE}" or cause(torchrun_output) == BOOM_LINE
    # the worker's plain exit, never the launcher's frame (walk16b B15)
    assert cause("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n  exitcode  : 1") == \
        "a worker exited 1"
    killed = "Root Cause (first observed failure):\n  exitcode  : -9 (pid: 12)\n  Signal 9 (SIGKILL) received by PID 12"
    assert cause(killed).startswith("a worker was killed by signal 9 (SIGKILL)")


def test_a3_nodeweave_runs_summary_names_the_cause(torchrun_output):
    """A3: `nodeweave run`'s summary said `(last line: ====...)`, torchrun's frame, of the node that failed first."""
    from collections import deque

    from nodeweave.cluster.runner import TAIL_LINES, failure_line

    tail = deque(torchrun_output.splitlines(), maxlen=TAIL_LINES)
    assert failure_line(tail).startswith("the cause: ") and BOOM_LINE in failure_line(tail)


def test_a3_exec_summary_and_up_log_tail_and_runs_show_name_the_cause(torchrun_output, tmp_path):
    """A3: every other relay of a failed launcher's output: `exec`'s summary, `up`'s readiness failure, `runs
    show`'s table, each names the worker's line."""
    from types import SimpleNamespace

    from nodeweave.cli import runs
    from nodeweave.cluster import logs, ready

    log = tmp_path / "node-0.log"
    log.write_text(torchrun_output)
    node = SimpleNamespace(name="node-0", index=0, remote=SimpleNamespace(label="local"),
                           argv=lambda command, env: ["sh", "-c", f"cat {log}; exit 1"])
    results = logs.exec_everywhere([node], ["x"], None)
    assert BOOM_LINE in results[0].cause and BOOM_LINE in logs.summary(results), logs.summary(results)
    backend = SimpleNamespace(logs=lambda n, follow=False: ["cat", str(log)])
    assert ready._log_tail(backend, node).startswith("the cause: ") and BOOM_LINE in ready._log_tail(backend, node)
    assert BOOM_LINE in runs._cause(log)


def test_a3_bench_and_doctor_name_the_workers_error_first(tmp_path, capsys):
    """A3: bench said `run 'baseline' failed (exit 1); its output ended:` and 40 lines of torchrun's frames;
    the worker's own error (here gloo's: no such interface) now comes first, in bench and `doctor --bench` alike."""
    pytest.importorskip("torch")
    from rich.console import Console

    from nodeweave.bench.runner import BenchConfig, launch
    from nodeweave.cli.bench import _show
    from nodeweave.doctor.bench_check import judge

    run = launch(BenchConfig(ops=("all_reduce",), sizes="1K", iters=1, warmup=0, nproc="1", timeout_s=120),
                 "baseline", {"GLOO_SOCKET_IFNAME": "nope0"})
    assert run.exit_code != 0 and run.cause and "Unable to find address for: nope0" in run.cause, run.log_tail
    err = Console(file=open(tmp_path / "err.txt", "w"), width=400)
    _show([run], [], [], ["all_reduce"], Console(file=open(os.devnull, "w")), err)
    err.file.close()
    first = (tmp_path / "err.txt").read_text().splitlines()[0]
    assert first.startswith("run 'baseline' failed (exit 1): ") and "nope0" in first, first
    [finding] = judge(run, None)
    assert "without results: " in finding.message and "nope0" in finding.message.split("its output ended")[0]


# ---------------------------------------------------------------------------------------------------------- A29


# pip's and uv's variables naming an index or a folder of wheels (the product's table: build.INDEX_VARIABLES)
A29_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "PIP_NO_INDEX",
                 "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX", "UV_FIND_LINKS", "UV_NO_INDEX")


def test_a29_the_tests_table_is_the_products():
    """A29: the names the tests clear and set are the ones the plan names."""
    from nodeweave.build import INDEX_VARIABLES

    assert set(A29_VARIABLES) == set(INDEX_VARIABLES)


@pytest.fixture
def team(tmp_path, monkeypatch):
    from team_folder import make_team

    for name in A29_VARIABLES + ("XDG_CONFIG_HOME", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    folder = tmp_path / "team"
    folder.mkdir()
    return make_team(folder, monkeypatch)


TOKEN_URL = "https://user:s3cret@pypi.corp.example/simple"


@pytest.mark.parametrize("name", ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_FIND_LINKS",
                                  "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX"])
@pytest.mark.parametrize("output", ["text", "json"])
def test_a29_an_index_variable_of_this_shell_is_named_in_the_plan(capsys, team, monkeypatch, name, output):
    """A29: PIP_INDEX_URL (and pip's and uv's other index variables) exported in this shell was neither passed into
    the build nor named: pip in the build went to PyPI. The plan names the variable (never its value: a URL may
    hold a token) with the ways that work."""
    import json

    from cli_run import in_process as run_cli

    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    monkeypatch.setenv(name, TOKEN_URL)
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", *(["-o", "json"] if output == "json" else []))
    assert code == 0, err
    assert "s3cret" not in out + err
    text = out + err
    said = [line for line in text.replace("\\n", "\n").splitlines() if "no build step sees" in line]
    assert len(said) == 1 and name in said[0] and "--index-url URL" in said[0] and "--offline" in said[0], text
    assert "pip download" in said[0] and "docs/images.md" in said[0], said[0]


def test_a29_a_pip_conf_naming_an_index_is_named_and_offline_or_unset_says_nothing(capsys, team, monkeypatch):
    """A29, the same class: a pip.conf (or uv.toml) naming an index reaches no build step either; with --offline pip
    asks no index, and with nothing set the plan has no such line."""
    from cli_run import in_process as run_cli

    assert run_cli(capsys, "render", "entrypoint", "--out", str(team))[0] == 0
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run")
    assert code == 0 and "no build step sees" not in out + err, out + err
    conf = Path(os.environ["HOME"]) / ".config" / "pip" / "pip.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(f"[global]\nindex-url = {TOKEN_URL}\n")
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run")
    assert code == 0 and str(conf) in out + err and "s3cret" not in out + err, out + err
    monkeypatch.setenv("PIP_INDEX_URL", TOKEN_URL)
    (team / "wheelhouse").mkdir()
    code, out, err = run_cli(capsys, "image", "build", "cpu", "--dry-run", "--offline")
    assert "no build step sees" not in out + err, out + err


# ---------------------------------------------------------------------------------------------------------- A27

A27_SPEC = "name: sp\nimage:\n  variant: cpu\nnodes: 2\nlauncher:\n  script: train.py\n"


@pytest.fixture
def home_elsewhere(tmp_path, monkeypatch):
    """A $HOME outside /home, /Users and /var/home (HOME=/tmp/x, a CI runner's, a container's), holding a train.py
    and, for the verbs that read one, a spec directly in it."""
    home = tmp_path / "x"
    home.mkdir()
    (home / "train.py").write_text("print(1)\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    for name in list(os.environ):
        if name.startswith("NODEWEAVE_"):
            monkeypatch.delenv(name)
    return home


@pytest.mark.parametrize("argv", [["init", "--dry-run"], ["init"], ["validate"], ["up", "--dry-run"],
                                  ["run", "--dry-run"], ["render", "all", "--dry-run"],
                                  ["sync", "--dry-run", ".", "/workspace", "--node", "podman:a"],
                                  ["sync", "--dry-run", "~", "/workspace", "--node", "podman:a"]])
def test_a27_home_elsewhere_is_no_workspace(capsys, home_elsewhere, argv):
    """A27: with HOME=/tmp/x, `cd ~ && nodeweave init` wrote ~/nodeweave.yaml and validate, up and sync took the
    whole home as the workspace (only /home/<user>, /Users/<user>, /var/home/<user> were refused)."""
    from cli_run import in_process as run_cli, one_line

    if argv[0] != "init":
        (home_elsewhere / "nodeweave.yaml").write_text(A27_SPEC)
    argv = [str(home_elsewhere) if word == "~" else word for word in argv]
    code, out, err = run_cli(capsys, *argv)
    line = one_line(err)
    assert code == 2, (out, err)
    assert f"{home_elsewhere} is a home itself, your home folder ($HOME)" in line, line
    if argv == ["init"]:
        assert not (home_elsewhere / "nodeweave.yaml").exists()


def test_a27_a_project_folder_in_that_home_is_fine(capsys, home_elsewhere):
    """A27: the rule is about the home itself: ~/proj is the place it points to."""
    from cli_run import in_process as run_cli

    project = home_elsewhere / "proj"
    project.mkdir()
    (project / "train.py").write_text("print(1)\n")
    (project / "nodeweave.yaml").write_text(A27_SPEC)
    os.chdir(project)
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, err


def test_a27_the_passwd_entrys_home_counts_too(tmp_path, monkeypatch):
    """A27: the passwd entry's home is the user's home even when $HOME says another folder (sudo -E, a shell that
    changed HOME): a spec directly in it is refused by the same rule."""
    import pwd

    from nodeweave.remote.names import shared_folder_problem
    from nodeweave.spec import parse_spec
    from nodeweave.errors import UsageError

    real = tmp_path / "passwd-home"
    real.mkdir()
    entry = pwd.getpwuid(os.getuid())
    fake = type(entry)((entry.pw_name, entry.pw_passwd, entry.pw_uid, entry.pw_gid, entry.pw_gecos, str(real),
                        entry.pw_shell))
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: fake)
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    assert "your home folder (the passwd entry's)" in shared_folder_problem(str(real))
    with pytest.raises(UsageError, match="is a home itself"):
        parse_spec(A27_SPEC, f"{real}/nodeweave.yaml", base_dir=real)
