"""left12a (issue 43): operator-side rows the last walks left open (walk11a A17, A11 with replay11 C11, replay11
C22), one test per class, on real processes: bare hosts through the ssh stand-in (tests/ssh_standin.py: each host
runs its real entrypoint on this machine), as tests/test_plan_record.py reaches them."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from cli_run import home_beside
from one_machine import one_machine_env
from test_cli_not_up import ACTING  # every verb that acts on the nodes, as a new user types it
from test_plan_record import HERE, HOSTS, SPEC, SSH_STANDIN, _port, nodeweave

# --- A17: after `down` on bare hosts the job is not up for any verb -------------------------------------------


def bare_hosts_in(folder: Path, spec: str, hosts=HOSTS) -> "tuple[dict, list]":
    """``folder`` as tests/test_plan_record.py's bare hosts: the spec, examples/train.py, ssh as the stand-in
    (each host its own TMPDIR under folder/hosts); (env, the host flags)."""
    (folder / "nodeweave.yaml").write_text(spec)
    shutil.copy(HERE.parent / "examples" / "train.py", folder / "train.py")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\nexec {sys.executable} {SSH_STANDIN} \"$@\"\n")
    (bin_dir / "ssh").chmod(0o755)
    root = folder / "hosts"
    root.mkdir()
    (root / "hosts.json").write_text(json.dumps({h: one_machine_env({"TMPDIR": str(root / f"tmp-{h}")})
                                                 for h in hosts}))
    for host in hosts:
        (root / f"tmp-{host}").mkdir()
    env = {"PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin", "STANDIN_SSH_ROOT": str(root),
           "COLUMNS": "200", "HOME": home_beside(folder),
           **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}
    return env, ["--target", "hosts", "--engine", "none", "--remote-dir", str(folder), *(f"--host={h}" for h in hosts)]


@pytest.fixture(scope="module")
def downed_hosts(tmp_path_factory):
    """Three bare hosts (--engine none) brought up, one real run of the spec's job, then `nodeweave down`:
    (folder, env, down's result)."""
    folder = tmp_path_factory.mktemp("a17")
    env, flags = bare_hosts_in(folder, SPEC.format(port=_port()))
    up = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    ran = nodeweave(folder, env, "run")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    down = nodeweave(folder, env, "down")
    return folder, env, down


def test_a17_down_on_bare_hosts_ends_the_record_as_every_targets_down(downed_hosts):
    """A17: `down` on bare hosts says the job is down and drops what `up` made from cluster.json (the flags stay,
    as on every target: `up` alone brings the same cluster back); a second `down` has nothing to take down,
    exit 0, as after a local job's down."""
    folder, env, down = downed_hosts
    assert down.returncode == 0, down.stdout + down.stderr
    assert "planrec is down (3 hosts over ssh" in down.stdout + down.stderr
    record = json.loads((folder / ".nodeweave" / "planrec" / "cluster.json").read_text())
    assert record["made"] is None and record["target"] == "hosts" and record["engine"] == "none", record
    again = nodeweave(folder, env, "down")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "planrec is not up on 3 hosts over ssh" in again.stdout and "nothing to take down" in again.stdout, \
        again.stdout + again.stderr
    assert "take this folder's mark back" not in again.stdout + again.stderr


@pytest.mark.parametrize("name", sorted(ACTING))
def test_a17_after_down_on_bare_hosts_every_verb_says_not_up(downed_hosts, name):
    """A17: after `down` on bare hosts every verb that needs the job up says it is not up, exit 3, one line, with a
    hint that works there (`nodeweave up`: --hold is refused on bare hosts), as after any other target's down; no
    command ran on a host and no run folder was added."""
    folder, env, _ = downed_hosts
    before = sorted(p.name for p in (folder / "runs").iterdir())
    got = nodeweave(folder, env, *ACTING[name], timeout=120)
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert got.returncode == 3, f"`nodeweave {name}`: exit {got.returncode}\n{got.stdout}\n{got.stderr}"
    assert len(lines) == 1 and "planrec is not up on 3 hosts over ssh" in lines[0], (name, got.stderr)
    assert "no job mark" in lines[0] and "--hold" not in lines[0] and "`nodeweave up`" in lines[0], lines[0]
    assert sorted(p.name for p in (folder / "runs").iterdir()) == before, name


# --- A11 + C11: a run ended by `nodeweave stop` is one outcome, stopped, for every reader ------------------------

STOP_SPEC = """name: stopme
image: {{variant: cpu}}
nodes: 2
gpus_per_node: 1
metrics: {{port: {metrics}}}
launcher: {{script: train.py, args: [--steps, '100000', --log-every, '5'], master_port: {port}}}
"""


def _trained(log: Path, steps: int, limit: float = 240) -> None:
    """Wait until node 0's log shows ``steps`` training steps."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.is_file() else ""
        done = [int(m) for m in re.findall(r"step (\d+)/", text)]
        if done and max(done) >= steps:
            return
        time.sleep(1)
    raise AssertionError(f"{log} shows no step {steps} in {limit:g} s: {text[-2000:]}")


def _timeline_trained(hosts: Path, since: float, limit: float = 60) -> None:
    """Wait until node 0's saved goodput timeline (what a SIGKILL leaves) shows training: a step logged after its
    generation's first collective. Its log can show step 30 before its next save on a loaded machine. Only a
    timeline launched ``since`` (epoch seconds) counts: the job's folder keeps the earlier run's, which showed
    training from the start (a --grace 0 stop then read "training 0 s" on a loaded machine)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for path in hosts.rglob("goodput.json"):
            try:
                kept = json.loads(path.read_text())
            except ValueError:  # being replaced
                continue
            if not isinstance(kept.get("launched"), (int, float)) or kept["launched"] < since:
                continue
            gens = kept.get("generations") or []
            last = gens[-1] if gens else {}
            times = [t for t, _ in last.get("steps") or []]
            if last.get("first") and times and max(times) > last["first"]:
                return
        time.sleep(0.5)
    raise AssertionError(f"no goodput.json under {hosts} shows training in {limit:g} s")


@pytest.fixture(scope="module")
def stopped_runs(tmp_path_factory):
    """Two hosts (--engine none) up; the spec's long job run detached twice, each stopped by `nodeweave stop` once it
    trained a while: once with the default grace, once with --grace 0 (SIGKILL at once). (folder, env, {grace: run
    id})."""
    folder = tmp_path_factory.mktemp("a11")
    env, flags = bare_hosts_in(folder, STOP_SPEC.format(port=_port(), metrics=_port()), hosts=HOSTS[:2])
    up = nodeweave(folder, env, "up", *flags, "--timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    ids = {}
    for grace in ("10", "0"):
        began = time.time() - 1
        started = nodeweave(folder, env, "run", "--detach")
        assert started.returncode == 0, started.stdout + started.stderr
        run_id = started.stdout.strip().splitlines()[-1]
        _trained(folder / "runs" / run_id / "node-0.log", 30)
        _timeline_trained(folder / "hosts", began)
        stop = nodeweave(folder, env, "stop", "--grace", grace)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        deadline = time.monotonic() + 60  # the detached `nodeweave run` writes the record once every node ended
        while json.loads((folder / "runs" / run_id / "run.json").read_text()).get("ended") is None:
            assert time.monotonic() < deadline, "the stopped run was never recorded as ended"
            time.sleep(1)
        ids[grace] = run_id
    return folder, env, ids


@pytest.mark.parametrize("grace", ["10", "0"])
def test_a11_c11_a_stopped_run_reads_stopped_for_every_reader(stopped_runs, grace):
    """A11, C11: a run `nodeweave stop` ended (with the default grace, or --grace 0) reads "stopped by nodeweave
    stop" with the exit its nodes really gave (never the run's "exit 1", a crash's word) in `runs ls`, `runs show`
    and `runs compare`; every node's shown line is the stop (its own stop line, or the stop and its exit), never a
    peer's echo of it (a reset connection, "node 0 ... failed"), and no cause; its goodput counts the training up to
    the stop as training, no fault and no work redone (not "- of 0 s"); the dashboard's run page says the nodes
    were stopped, not failed, with the same goodput."""
    folder, env, ids = stopped_runs
    run_id = ids[grace]
    record = json.loads((folder / "runs" / run_id / "run.json").read_text())
    codes = sorted({n["exit_code"] for n in record["nodes"]})
    shown = nodeweave(folder, env, "runs", "show", run_id, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    show = json.loads(shown.stdout)
    state = show["state"]
    assert state.startswith("stopped by nodeweave stop at "), state
    assert f"(nodes exit {', '.join(map(str, codes))})" in state and "(exit 1)" not in state, (state, codes)
    for node in show["nodes"]:
        assert node["cause"] is None, node
        line = node["last_line"]
        assert line.startswith("nodeweave-entrypoint: stopped on SIG") or line.startswith("stopped by nodeweave stop"), \
            node
        assert not re.search(r"reset by peer|failed|Traceback|Error", line), node
    goodput = show["goodput"]
    assert goodput and goodput["wall_s"] > 0 and goodput["buckets"]["training"] > 0, goodput
    assert goodput["buckets"]["redone"] == 0 and goodput["buckets"]["recovery"] == 0, goodput
    assert goodput["productive"] and goodput["productive"] > 0, goodput
    listed = nodeweave(folder, env, "runs", "ls", "-o", "json")
    assert [r["state"] for r in json.loads(listed.stdout) if r["run"] == run_id] == [state], listed.stdout
    compared = nodeweave(folder, env, "runs", "compare", *sorted(ids.values()), "-o", "json")
    assert compared.returncode == 0, compared.stderr
    row = next(r for r in json.loads(compared.stdout)["runs"] if r["run"] == run_id)
    assert row["state"] == state and row["goodput"]["buckets"]["redone"] == 0, row
    from nodeweave.cli.dashboard import _finished_run
    from nodeweave.cluster.dashboard import run_state

    found, data, timeline, book, heat = _finished_run(run_id, folder / "runs", folder / "nodeweave.yaml")
    page = run_state(found, data, timeline, book, heat)
    assert all(n["state"].startswith("stopped by nodeweave stop") for n in page["live"]["nodes"]), page["live"]["nodes"]
    assert page["live"]["goodput"]["buckets"] == goodput["buckets"], (page["live"]["goodput"], goodput)


# --- C22: `stop --node N` during a sweep: the point ends, recorded stopped; the sweep goes on, said so ------------

SWEEP_SCRIPT = """import os, runpy, sys
sys.argv = ["train.py", "--steps", os.environ["STEPS"], "--log-every", "5"]
runpy.run_path("train.py", run_name="__main__")
"""


def test_c22_stop_of_one_node_during_a_sweep_ends_its_point_recorded_stopped_and_the_sweep_goes_on(tmp_path):
    """C22: `nodeweave stop --node 1` while a sweep's first point trains stops that node, not the job: the point ends
    and reads "stopped" in the sweep's table, `stopped by nodeweave stop` in `runs show`, and the sweep counts it
    stopped, not failed, in `runs ls`; `stop` says in one line that the sweep goes on, and it does (the next point
    runs to its end, ok)."""
    env, flags = bare_hosts_in(tmp_path, STOP_SPEC.format(port=_port(), metrics=_port()), hosts=HOSTS[:2])
    (tmp_path / "sweep_train.py").write_text(SWEEP_SCRIPT)
    up = nodeweave(tmp_path, env, "up", *flags, "--timeout", "60")
    assert up.returncode == 0, up.stdout + up.stderr
    started = nodeweave(tmp_path, env, "run", "--detach", "--sweep", "STEPS=100000,10", "--", "sweep_train.py")
    assert started.returncode == 0, started.stdout + started.stderr
    sweep = tmp_path / "runs" / started.stdout.strip().splitlines()[-1]
    deadline = time.monotonic() + 60
    while not list(sweep.glob("*-01-*/node-0.log")):
        assert time.monotonic() < deadline, f"no first point in {sweep}: {list(sweep.iterdir())}"
        time.sleep(1)
    (first,) = sweep.glob("*-01-*")
    _trained(first / "node-0.log", 20)
    stop = nodeweave(tmp_path, env, "stop", "--node", "1")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert f"sweep {sweep.name}: goes on to its next point" in stop.stdout, stop.stdout
    deadline = time.monotonic() + 240
    while not (sweep / "sweep.txt").exists():
        assert time.monotonic() < deadline, f"the sweep never ended: {list(sweep.iterdir())}"
        time.sleep(1)
    table = (sweep / "sweep.txt").read_text()
    rows = {line.split()[1]: line for line in table.splitlines() if re.match(r"^\W*\s*(100000|10)\s", line)}
    assert "stopped" in rows["100000"] and "exit" not in rows["100000"], table
    assert " ok " in rows["10"], table
    listed = json.loads(nodeweave(tmp_path, env, "runs", "ls", "-o", "json").stdout)
    assert [r["state"] for r in listed if r["run"] == sweep.name] == ["2 point(s), 1 stopped"], listed
    shown = json.loads(nodeweave(tmp_path, env, "runs", "show", first.name, "-o", "json").stdout)
    assert shown["state"].startswith("stopped by nodeweave stop at "), shown["state"]
    points = json.loads((sweep / "sweep.json").read_text())["points"]
    assert [p.get("stopped") for p in points] == ["by nodeweave stop", None], points
