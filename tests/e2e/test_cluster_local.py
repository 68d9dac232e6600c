"""The operating loop on the local cluster (podman, compose/local.yaml in hold mode), for real.

``nodeweave up --hold`` brings up 2 (and 3) node containers that plan and
hold; ``nodeweave run`` starts examples/train.py (a real 2-node gloo DDP job)
in all of them through each node's entrypoint; ``status``, ``logs``, ``stop``
and ``down`` do what they say; and the faults: a node killed mid-run, SIGINT
to ``run``, a node that never comes up. Every bound is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from cluster_harness import (LONG, NODEWEAVE, finish, interrupt, nodeweave, processes, ranks, run_folders, start,
                             status, wait_until, workdir)

pytestmark = [pytest.mark.engine, pytest.mark.slow]
GRACE = 5  # nodeweave run/stop --grace in these tests


def _up(spec_path, image, nodes):
    out = nodeweave(spec_path, "up", "--hold", "--image", image, "--timeout", "180", check=0, timeout=400)
    assert f"{nodes} node(s) up in hold mode" in out.stdout and "plans agree" in out.stdout, out.stdout
    return out


@pytest.fixture(scope="module")
def two(engine, cpu_image, tmp_path_factory):
    if engine.kind != "podman":
        pytest.skip("the local cluster tests drive podman-compose")
    spec_path = workdir(tmp_path_factory.mktemp("two"), "nwt-two", 2)
    nodeweave(spec_path, "down", timeout=300)  # leftovers of an interrupted run
    try:
        _up(spec_path, cpu_image, 2)
        yield spec_path
    finally:
        nodeweave(spec_path, "down", timeout=300)


def test_up_holds_every_node_with_its_plan_printed(two, engine):
    for index in (0, 1):
        log = engine.client.container.logs(f"nwt-two-{index}")
        assert f"holding: node {index} of 2, master nwt-two-0:29500" in log and "Topology" in log, log
    report = status(two)
    assert report["plans_agree"] is True
    assert [(n["node"], n["up"], n["mode"], n["rank"], n["run"]) for n in report["nodes"]] == [
        ("node-0", True, "hold", 0, None), ("node-1", True, "hold", 1, None)]
    table = nodeweave(two, "status", check=0).stdout
    assert "plans agree" in table and "hold" in table
    # Holding, no exchange runs yet: each node's own --explain gives its fingerprint.
    held = json.loads(nodeweave(two, "status", "--fingerprints", "--json", check=0).stdout)["fingerprints"]
    assert [n["fp"]["rank"] for n in held["nodes"]] == [0, 1], held
    codes = [f["code"] for f in held["findings"]]
    assert "cluster-not-running" in codes and not [f for f in held["findings"] if f["severity"] == "error"], held


def test_up_hands_every_node_a_random_token_that_no_output_holds(two):
    """``up`` wrote a fresh 0600 token beside the spec; each node reads it from the mount; it is in no rendered
    or committed file, no container's configuration and no log."""
    from e2e_harness import REPO

    token_file = two.parent / ".nodeweave" / "nwt-two" / "job-token"
    secret = token_file.read_text().strip()
    status = token_file.stat()  # as root: root:0 0440, read by the images' user 1000:0 through group 0, never
    mode = (0o440, 0, 0) if os.geteuid() == 0 else (0o600, os.geteuid(), status.st_gid)  # a host UID's (walk15a A15)
    assert (status.st_mode & 0o777, status.st_uid, status.st_gid) == mode and len(secret) >= 40, status
    for index in (0, 1):
        name = f"nwt-two-{index}"
        read = subprocess.run(["podman", "exec", name, "cat", "/run/nodeweave/job-token"], capture_output=True, text=True)
        assert read.stdout.strip() == secret, read.stderr  # the container's user reads it
        explain = subprocess.run(["podman", "exec", name, "nodeweave-entrypoint", "--explain", "--json", "--", "t.py"],
                                 capture_output=True, text=True)
        assert "NODEWEAVE_JOB_TOKEN_FILE (/run/nodeweave/job-token)" in explain.stdout, explain.stdout[-2000:]
        assert "derived-job-token" not in explain.stdout
        seen = subprocess.run(["podman", "inspect", name], capture_output=True, text=True).stdout
        seen += subprocess.run(["podman", "logs", name], capture_output=True, text=True).stdout
        assert secret not in seen
    outputs = [p for p in two.parent.rglob("*") if p.is_file() and p != token_file]
    outputs += [p for folder in ("compose", "manifests", "images") for p in (REPO / folder).rglob("*") if p.is_file()]
    assert [p for p in outputs if secret.encode() in p.read_bytes()] == []


def test_run_trains_on_both_nodes_and_records_the_run(two):
    out = nodeweave(two, "run", "--", "train.py", "--steps", "20", check=0, timeout=600)
    for index in (0, 1):
        done = [line for line in out.stdout.splitlines()
                if line.startswith((f"[node-{index}]", f"[node-{index} r")) and "done: world_size=2" in line]
        assert done and done[0].endswith(" ok"), out.stdout
    folder = run_folders(two)[-1]
    record = json.loads((folder / "run.json").read_text())
    assert record["exit_code"] == 0 and record["command"] == ["train.py", "--steps", "20"]
    assert (folder / "spec.yaml").read_text() == two.read_text()
    for index, node in enumerate(record["nodes"]):
        assert node["exit_code"] == 0 and node["first_output_s"] is not None and node["reached_as"] == f"podman:nwt-two-{index}"
        assert node["exported"]["NODE_RANK"] == str(index) and node["exported"]["MASTER_ADDR"] == "nwt-two-0"
        plan = json.loads((folder / node["plan"]).read_text())
        assert plan["topology"]["node_rank"]["value"] == index
        log = (folder / f"node-{index}.log").read_text()
        assert f"node {index} of 2" in log and "samples/s" in log
    assert record["workspace"]["commit"] is None  # the spec's folder is no git checkout
    assert record["nodes"][0]["sync"] is None  # nothing synced there: no stamp


def test_a_detached_run_returns_at_once_and_is_followed_by_its_id(two):
    started = time.monotonic()
    out = nodeweave(two, "run", "--detach", "--", "train.py", "--steps", "20", check=0, timeout=120)
    run_id = out.stdout.strip()
    assert time.monotonic() - started < 60 and f"run {run_id} detached" in out.stderr, out.stderr
    followed = nodeweave(two, "logs", "-f", "--run", run_id, check=0, timeout=600)  # ends when the run ends
    for index in (0, 1):
        # a rank's line is [node-i rN] where the script marks its rank (its own `[rank N]`: walk11 A5)
        assert any(line.startswith((f"[node-{index}]", f"[node-{index} r")) and "done: world_size=2" in line
                   for line in followed.stdout.splitlines()), followed.stdout
    runs = [*NODEWEAVE, "runs"]
    shown = subprocess.run([*runs, "show", run_id, "-o", "json"], capture_output=True, text=True, cwd=two.parent,
                           check=True, timeout=60)
    record = json.loads(shown.stdout)
    assert record["state"] == "ok" and [n["exit_code"] for n in record["nodes"]] == [0, 0]
    listed = subprocess.run([*runs, "ls", "-o", "json"], capture_output=True, text=True, cwd=two.parent, check=True,
                            timeout=60)
    assert run_id in [r["run"] for r in json.loads(listed.stdout)]


def test_logs_in_hold_mode_are_the_last_runs(two):
    out = nodeweave(two, "logs", check=0)
    assert "[node-0]" in out.stdout and "[node-1]" in out.stdout and "done: world_size=2" in out.stdout
    only = nodeweave(two, "logs", "--node", "1", check=0).stdout
    assert "[node-1]" in only and "[node-0]" not in only
    container = nodeweave(two, "logs", "--container", check=0).stdout
    assert "holding: node 0 of 2" in container and "holding: node 1 of 2" in container


# A stand-in for nsys (the cpu image has no GPU profiler): it writes the report nsys would write, named as
# nodeweave asked (%q{RANK} is the rank's RANK), then runs the rank's command.
NSYS_STAND_IN = """#!/bin/sh
[ "$1" = profile ] || exit 2
shift
while [ $# -gt 0 ]; do
  case "$1" in --output) out=$2; shift 2 ;; --force-overwrite) shift 2 ;; *) break ;; esac
done
echo "stand-in report of rank $RANK: $*" > "$(printf '%s' "$out" | sed "s/%q{RANK}/$RANK/").nsys-rep"
exec "$@"
"""


def test_profile_wraps_every_rank_and_brings_the_reports_home(two):
    tools = two.parent / "bin"
    tools.mkdir(exist_ok=True)
    (tools / "nsys").write_text(NSYS_STAND_IN)
    (tools / "nsys").chmod(0o755)
    path = "/workspace/bin:/opt/venv/bin:/usr/local/bin:/usr/bin:/bin"
    nodeweave(two, "run", "--profile", "nsys", "-e", f"PATH={path}", "--", "train.py", "--steps", "5", check=0)
    folder = run_folders(two)[-1]
    record = json.loads((folder / "run.json").read_text())
    assert record["profile"] == "nsys" and record["env"] == {"PATH": path}
    for index in (0, 1):
        report = folder / "profile" / f"node-{index}" / f"node{index}-rank{index}.nsys-rep"
        assert report.read_text().startswith(f"stand-in report of rank {index}: {'/opt/venv/bin/python'}"), report
        assert record["nodes"][index]["profile"] == [report.name]


def test_status_shows_the_run_and_stop_ends_it_on_every_node(two, engine):
    job = start(two, "run", "--grace", str(GRACE), "--", *LONG)
    try:
        wait_until(lambda: all(ranks("podman", f"nwt-two-{i}") for i in (0, 1)), "ranks on both nodes")
        report = status(two)
        runs = [n["run"] for n in report["nodes"]]
        assert all(runs) and runs[0]["run_id"] == runs[1]["run_id"], report
        # The run checked in: node 0's exchange answers with both fingerprints and what it saw of each node.
        live = nodeweave(two, "status", "--fingerprints", check=0).stdout
        assert "fingerprints from node 0's check-in exchange" in live and "no errors" in live, live
        started = time.monotonic()
        out = nodeweave(two, "stop", "--grace", str(GRACE), check=0)
        assert "process(es) stopped" in out.stdout, out.stdout
        assert job.wait(timeout=GRACE + 30) == 1  # the nodes ended with 143: a stopped run is not a success
        assert time.monotonic() - started < GRACE + 20
        # ... but its record says it was stopped, not failed (walk10 C11)
        # The module's folder holds the runs of the tests before this one: pick this run's record by its id.
        listed = json.loads(nodeweave(two, "runs", "ls", "-o", "json", check=0).stdout)
        mine = [entry for entry in listed if entry["run"] == runs[0]["run_id"]]
        assert len(mine) == 1 and mine[0]["state"].startswith("stopped by nodeweave stop"), (runs[0], listed)
        assert processes("podman", "nwt-two-0") == [] and processes("podman", "nwt-two-1") == []
        assert status(two)["nodes"][0]["run"] is None
    finally:
        finish(job, two)


def test_a_run_stopped_before_the_workers_launch_leaves_nothing(two):
    """Stop as soon as the run starts: a worker still waiting for the master is stopped too."""
    job = start(two, "run", "--grace", str(GRACE), "--", *LONG)
    try:
        wait_until(lambda: all(processes("podman", f"nwt-two-{i}") for i in (0, 1)), "the entrypoints")
        nodeweave(two, "stop", "--grace", str(GRACE), check=0)
        assert job.wait(timeout=GRACE + 30) == 1
        assert processes("podman", "nwt-two-0") == [] and processes("podman", "nwt-two-1") == []
    finally:
        finish(job, two)


def test_sigint_to_run_stops_every_rank_within_the_grace(two):
    job = start(two, "run", "--grace", str(GRACE), "--", *LONG)
    try:
        wait_until(lambda: all(ranks("podman", f"nwt-two-{i}") for i in (0, 1)), "ranks on both nodes")
        started = time.monotonic()
        interrupt(job)
        output, _ = job.communicate(timeout=GRACE + 40)
        took = time.monotonic() - started
        assert job.returncode == 130, output
        assert "interrupted: stopping every node" in output
        assert took < GRACE + 20, f"took {took:.1f} s"
        assert processes("podman", "nwt-two-0") == [] and processes("podman", "nwt-two-1") == []
        record = json.loads((run_folders(two)[-1] / "run.json").read_text())
        assert record["exit_code"] == 130 and all(n["stop"] for n in record["nodes"])
    finally:
        finish(job, two)


def test_down_removes_the_nodes(two, engine):
    nodeweave(two, "down", check=0, timeout=300)
    exists = subprocess.run(["podman", "container", "exists", "nwt-two-0"]).returncode
    assert exists != 0
    out = nodeweave(two, "status", timeout=120)
    # status prepares a run in held nodes: its hint is the README's loop, up --hold (walk5 W46)
    assert out.returncode == 3 and "nwt-two is not up" in out.stderr and "`nodeweave up --hold` starts it" in \
        out.stderr, out.stderr
    # every node down: no table, one line naming them as ranges (walk6 W4/W5)
    assert out.stdout == "" and "node-0 (missing), node-1 (missing)" in out.stderr, out.stdout + out.stderr
    assert "no such container" not in out.stderr, out.stderr


def test_three_nodes_a_node_killed_mid_run_fails_the_run_and_stops_the_others(engine, cpu_image, tmp_path):
    if engine.kind != "podman":
        pytest.skip("the local cluster tests drive podman-compose")
    spec_path = workdir(tmp_path, "nwt-three", 3)
    nodeweave(spec_path, "down", timeout=300)
    job = None
    try:
        _up(spec_path, cpu_image, 3)
        out = nodeweave(spec_path, "run", "--", "train.py", "--steps", "10", check=0)
        assert out.stdout.count("done: world_size=3") == 3 and "[node-2]" in out.stdout
        job = start(spec_path, "run", "--grace", str(GRACE), "--", *LONG)
        wait_until(lambda: all(ranks("podman", f"nwt-three-{i}") for i in range(3)), "ranks on three nodes")
        killed = time.monotonic()
        subprocess.run(["podman", "kill", "nwt-three-2"], check=True, capture_output=True)
        output, _ = job.communicate(timeout=60)
        took = time.monotonic() - killed
        assert job.returncode == 1 and "node-2 (podman:nwt-three-2) failed first" in output, output
        assert "exit 137 (SIGKILL: killed)" in output and "stopped waiting" not in output, output
        assert took < 30, f"run took {took:.1f} s to end after the kill"
        assert processes("podman", "nwt-three-0") == [] and processes("podman", "nwt-three-1") == []
    finally:
        finish(job, spec_path)
        nodeweave(spec_path, "down", timeout=300)


def test_a_node_whose_name_another_container_holds_is_named_at_once(engine, cpu_image, tmp_path):
    """Node 1's name is taken by someone else's container (no nodeweave mark) that holds nothing: `up` used to wait
    out its deadline for a node that never came up; now the container is not this folder's (walk7 A34), and `up`
    refuses at once, naming it and how to remove it, touching nothing."""
    if engine.kind != "podman":
        pytest.skip("the local cluster tests drive podman-compose")
    spec_path = workdir(tmp_path, "nwt-late", 2)
    nodeweave(spec_path, "down", timeout=300)
    subprocess.run(["podman", "rm", "-f", "-t", "0", "nwt-late-1"], capture_output=True)
    subprocess.run(["podman", "run", "-d", "--name", "nwt-late-1", "--entrypoint", "sleep", cpu_image, "600"],
                   check=True, capture_output=True)
    try:
        started = time.monotonic()
        out = nodeweave(spec_path, "up", "--hold", "--image", cpu_image, "--timeout", "20", timeout=300)
        took = time.monotonic() - started
        assert out.returncode == 3, out.stdout + out.stderr
        assert "container nwt-late-1 carries no nodeweave mark" in out.stderr, out.stderr
        assert "podman rm -f nwt-late-1" in out.stderr, out.stderr
        assert took < 20, f"took {took:.1f} s"
        assert subprocess.run(["podman", "container", "exists", "nwt-late-0"]).returncode != 0  # nothing started
        running = subprocess.run(["podman", "inspect", "--format", "{{.State.Running}}", "nwt-late-1"],
                                 capture_output=True, text=True)
        assert running.stdout.strip() == "true"  # theirs, left as it was
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", "nwt-late-1"], capture_output=True)
        nodeweave(spec_path, "down", timeout=300)


def test_shell_dry_run_names_the_exec(tmp_path):
    spec_path = workdir(tmp_path, "nwt-shell", 2)
    out = nodeweave(spec_path, "shell", "--node", "1", "--dry-run", check=0)
    assert "\npodman exec -i -t nwt-shell-1 sh -c" in out.stdout  # after the note that nothing is up yet
