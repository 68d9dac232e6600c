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
from marked_nodes import marked_nodes, two_node_spec

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


def _gone(marker: str, limit: float = 30) -> "list[str]":
    """What still runs with ``marker`` once nothing does, or ``limit`` s passed: the stop's last kill lands as the
    ssh stand-in's hosts (this machine's processes) get CPU, a moment after the command here has returned."""
    deadline = time.monotonic() + limit
    while _still_running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _still_running(marker)


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
    left = _gone(marker)
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
    # The commands' own sleeps, not the ssh clients here whose argv holds the same words: Ctrl-C before a node's
    # wrapper has started is another case (the client ended, nothing recorded on that node).
    while sum(line.split(" ", 1)[1].strip() == f"sleep {marker}" for line in _still_running(marker)) < 3 \
            and time.monotonic() < deadline:
        time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    left = _gone(marker)
    assert not left, left
    assert proc.returncode == 130, out + err
    assert "interrupted: stopped on node-0 .. node-2" in err, err


def test_c4_the_stopper_kills_what_ignores_sigterm_and_leaves_a_reused_pid_alone(tmp_path):
    """C4: the stop exec's own cases, on this machine's sh: a command that ignores SIGTERM is killed after the
    grace ("killed"); a pid record whose process has gone (its pid perhaps reused) is left alone ("gone"); no
    record, "none"."""
    from nodeweave.cluster.execstop import EXEC_ID, pid_file, stop_command, wrapped

    token = f"t{random.randrange(10**9)}"
    child = f"99.{random.randrange(10**6):06d}"
    stubborn = subprocess.Popen([w.replace(EXEC_ID, token) for w in
                                 wrapped(["sh", "-c", f"trap '' TERM; sleep {child} & wait"], 7)])
    deadline = time.monotonic() + 30  # its pid recorded and its trap set (the sleep runs after it)
    while not (Path(pid_file(7, token)).exists()
               and any(line.split(" ", 1)[1].strip() == f"sleep {child}" for line in _still_running(child))):
        assert time.monotonic() < deadline and stubborn.poll() is None, "the stubborn command never started"
        time.sleep(0.05)
    done = subprocess.run(stop_command(token, 7, grace=1), capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["killed"] and stubborn.wait(5) == -signal.SIGKILL, done
    record = Path(f"/tmp/nodeweave-exec-{token}-node-8.pid")
    record.write_text(f"{stubborn.pid} 1\n")  # a pid that has gone, or another process's start time
    done = subprocess.run(stop_command(token, 8), capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["gone"] and not record.exists(), done
    done = subprocess.run(stop_command(token, 9, grace=1), capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["none"], done
    record.write_text(f"{stubborn.pid} 1\n")  # a call whose command ended: the next wrapped command removes it
    ran = subprocess.run([w.replace(EXEC_ID, token + "n") for w in wrapped(["echo", "$1 'x'"], 0)],
                         capture_output=True, text=True, timeout=30)
    assert ran.stdout == "$1 'x'\n" and not record.exists(), ran
    Path(f"/tmp/nodeweave-exec-{token}n-node-0.pid").unlink()  # its own, left for the next call to remove


SPEC = two_node_spec("nwl11b")


@pytest.fixture(scope="module")
def podman_nodes(tmp_path_factory):
    """Two real podman containers named as the spec's local nodes, carrying this folder's mark; removed after."""
    folder = tmp_path_factory.mktemp("l11b")
    (folder / "nodeweave.yaml").write_text(SPEC)
    with marked_nodes(folder, "nwl11b") as names:
        yield folder, names


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


# --- C22: `nodeweave stop` ends a sweep, not only its point in progress ---------------------------------------------


def test_c22_stop_ends_the_sweep_its_point_recorded_stopped_and_no_further_point_started(tmp_path, monkeypatch,
                                                                                         capsys):
    """C22: `nodeweave stop` (every node) leaves its mark in the folder of a sweep whose process still runs here
    before it stops the nodes; the sweep's process reads it when the point ends: no further point starts, the
    point is recorded stopped (its own stopped.json, found inside the sweep's folder, and its sweep.json row), the
    sweep too (sweep.json, `runs ls`'s state), and the run ends saying how many points were not started. A sweep
    whose process has gone, or that finished, gets no mark."""
    import io
    import os
    import socket

    from rich.console import Console

    from nodeweave.cluster import job as job_module
    from nodeweave.cluster.job import JobContext
    from nodeweave.cluster.runner import RunRequest
    from nodeweave.cluster.runplan import RunSession
    from nodeweave.cluster.stop import mark_stopped, stop_sweeps
    from nodeweave.plan import RunPhase, SweepPhase
    from nodeweave.runs.history import list_runs

    runs = tmp_path / "runs"
    out = Console(file=io.StringIO(), width=200)
    session = RunSession([], runs, JobContext("team", "name: team\n", tmp_path, "local"), out)
    started = []

    def run_job(nodes, request, launches, folder, context, console, quiet=False):
        started.append(request.run_id)
        (folder.path / "run.json").write_text(json.dumps({"run_id": request.run_id, "exit_code": None}))
        if len(started) == 1:  # `nodeweave stop` while this point runs: the sweep's mark first, then the nodes'
            assert stop_sweeps(runs, 2.0) == [session.sweep_folder.path.name]
            mark_stopped(runs, [{"stopped": [{"run_id": request.run_id, "processes": 2, "killed": False}]}], 2.0)
        data = {"run_id": request.run_id, "exit_code": 1, "seconds": 3.0, "summary": "node-0 exit 137"}
        (folder.path / "run.json").write_text(json.dumps({**data, "ended": "2026-11-30T18:00:00Z", "job": "team"}))
        return data

    monkeypatch.setattr(job_module, "run_job", run_job)

    class Sweep:
        metric, lower_is_better = None, False

    session.open_sweep(SweepPhase("sweep", folder="runs/x", sweep=Sweep()))
    for value in ("1", "2", "3"):
        session.run_point(RunPhase(f"X={value}", request=RunRequest("", ["train.py"], {"X": value}),
                                   point=(("X", value),)))
    session.finish_sweep()
    assert len(started) == 1, started
    record = json.loads((session.sweep_folder.path / "sweep.json").read_text())
    assert record["stopped"]["by"] == "nodeweave stop" and record["points"][0]["stopped"] == "by nodeweave stop"
    point = session.sweep_folder.path / started[0]
    assert json.loads((point / "stopped.json").read_text())["by"] == "nodeweave stop"
    assert "1 point(s) run (the last one stopped), 2 not started" in out.file.getvalue(), out.file.getvalue()
    (entry,) = [e for e in list_runs(runs, None) if e.kind == "sweep"]
    assert entry.state.startswith("stopped by nodeweave stop at ") and entry.state.endswith("after 1 point(s)")
    assert entry.points[0].state.startswith("stopped by nodeweave stop"), entry.points[0].state

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for name, pid, table in (("a-sweep", gone.pid, False), ("b-sweep", os.getpid(), True)):
        (runs / name).mkdir()
        (runs / name / "runner.json").write_text(json.dumps({"pid": pid, "host": socket.gethostname()}))
        if table:
            (runs / name / "sweep.txt").write_text("done\n")
    assert stop_sweeps(runs, 2.0) == []


def test_c22_the_detach_line_names_nodeweave_stop_for_a_sweep():
    """C22: the detach line names `nodeweave stop` again as what ends a run or a sweep (and `kill PID`)."""
    from nodeweave.cli.habits.detach import detached_line

    line = detached_line("20261130T141902Z-team-sweep", 4242)
    assert "end it: nodeweave stop (recorded as stopped; a sweep starts no further point), or kill 4242" in line


# --- A7: a file the build reads, linked out of the context: one rule for init, validate and image build -------------


@pytest.mark.parametrize("linked", ["requirements.txt", "wheelhouse", "wheelhouse/x-1.0-py3-none-any.whl"])
def test_a7_a_file_the_build_reads_linked_out_is_named_by_init_validate_and_image_build(tmp_path, linked):
    """A7: requirements.txt, wheelhouse/ (which the Dockerfile bind-mounts) or a wheel in it, a symbolic link out of
    the project: `init` and `validate` note it (as they note the script linked out), and `image build --dry-run`
    refuses it (exit 2), each in the same words of the one rule (build.context.linked_out)."""
    home, project = tmp_path / "elsewhere", tmp_path / "project"
    (home / "wheelhouse").mkdir(parents=True)
    (home / "requirements.txt").write_text("numpy==1.26.4\n")
    (home / "wheelhouse" / "x-1.0-py3-none-any.whl").write_bytes(b"PK")
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    if "/" in linked:
        (project / "wheelhouse").mkdir()
    (project / linked).symlink_to(home / linked)
    env = {**cli_run.CLEAN, "HOME": cli_run.home_beside(project)}
    said = f"{linked!r} in the build context {project} is a symbolic link out of it (to {home / linked})"
    init = cli_run.run([*cli_run.NODEWEAVE, "init"], cwd=project, env=env)
    assert init.returncode == 0 and said in init.stderr, init.stderr
    if linked == "requirements.txt":  # walk13 A3: init leaves the field out, saying so; a spec written by hand has it
        assert "requirements.txt left out of image.requirements" in init.stderr, init.stderr
        spec = project / "nodeweave.yaml"
        spec.write_text(spec.read_text().replace("image:\n", "image:\n  requirements: requirements.txt\n", 1))
    valid = cli_run.run([*cli_run.NODEWEAVE, "validate"], cwd=project, env=env)
    assert valid.returncode == 0 and f"note: the image build would refuse it: " in valid.stderr, valid.stderr
    assert said in valid.stderr, valid.stderr
    build = cli_run.run([*cli_run.NODEWEAVE, "image", "build", "cpu", "--dry-run"], cwd=project, env=env)
    assert build.returncode == 2 and said in build.stderr and "Traceback" not in build.stderr, build.stderr


# --- A25: a spec filling a target's section the default target does not read: one note, every verb that plans ------

K8S_ONLY = ("name: kj\nimage: {variant: cpu, registry: ghcr.io/acme}\nnodes: 2\ngpus_per_node: 1\n"
            "launcher: {script: train.py}\nkubernetes: {namespace: ml}\n")
NOTE = ("this plans target local (the default: no -t given, none remembered by `nodeweave up`); the spec's "
        "kubernetes: section (namespace) does nothing here: `-t kubernetes` uses it")


@pytest.fixture
def k8s_only(tmp_path):
    (tmp_path / "nodeweave.yaml").write_text(K8S_ONLY)
    (tmp_path / "train.py").write_text("print('hi')\n")
    return tmp_path, {**cli_run.CLEAN, "HOME": cli_run.home_beside(tmp_path)}


@pytest.mark.parametrize("verb", [["up"], ["run"], ["check"], ["exec", "--", "true"], ["stop"], ["shell"], ["down"],
                                  ["sync"]])
def test_a25_a_kubernetes_section_the_default_local_target_does_not_read_is_noted_by_every_verb_that_plans(
        k8s_only, verb):
    """A25: a spec filling only `kubernetes:` plans the local target (documented), and every verb's plan says so in
    one note naming the section and `-t kubernetes` (it said not a word)."""
    folder, env = k8s_only
    cut = verb.index("--") if "--" in verb else len(verb)
    done = cli_run.run([*cli_run.NODEWEAVE, *verb[:cut], "--dry-run", *verb[cut:]], cwd=folder, env=env)
    assert NOTE in done.stdout, done.stdout + done.stderr


def test_a25_the_note_comes_from_the_rule_that_picks_the_target(k8s_only):
    """A25: one rule beside spec_default: a target said (-t local) or a spec with no other section gets no note; a
    slurm: section picks slurm, and the kubernetes: section beside it is noted; an OpenShift spec picks kubernetes
    itself, no note."""
    from nodeweave.cluster.options import ClusterOptions, default_target_note, spec_default
    from nodeweave.spec import load_spec

    folder, env = k8s_only
    said = cli_run.run([*cli_run.NODEWEAVE, "up", "-t", "local", "--dry-run"], cwd=folder, env=env)
    assert "this plans target" not in said.stdout + said.stderr
    cases = {"": "", "slurm: {partition: gpu}\n": "this plans target slurm (picked by the spec",
             "kubernetes: {openshift: true}\n": ""}
    for extra, expected in cases.items():
        text = K8S_ONLY.replace("kubernetes: {namespace: ml}\n", extra) if "openshift" in extra or not extra else \
            K8S_ONLY + extra
        (folder / "nodeweave.yaml").write_text(text)
        spec = load_spec(folder / "nodeweave.yaml")
        target = spec_default(ClusterOptions(), spec).checked().target
        note = default_target_note(ClusterOptions(), spec, target)
        assert note.startswith(expected) and (not expected or "`-t kubernetes` uses it" in note), (extra, note)
        assert bool(note) is bool(expected), (extra, note)
