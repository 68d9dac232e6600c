"""Recovery in real containers: the rendered local compose file with ``recovery: {enabled: true, spares: 1}`` (three
containers: two train, one waits), the workload tests/e2e/workspace/resumable.py saving ``step-N.pt`` into the
shared workspace every 5 steps. A rank crashing on every start, a rank SIGSTOPped, a container killed: each test
asserts the node left out, the generations, the step resumed from and every container's exit code.

A container that *crashes* (its PID 1 killed from the host, as the OOM killer would) comes back through the
``restart: on-failure`` the compose file carries with recovery on: node 0 too, whom the others wait for; a
container removed for good leaves an elastic job smaller. Short stall limits (CI time is a budget); every wait
is bounded, so a hang fails instead of stalling CI. A test that acts on a node itself holds every rank at that
step (resumable.py ``--hold GEN:STEP``) until it has acted (``_release``), so a loaded machine moves no fault
past its step: the resume step is asserted exactly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from cluster_harness import status, up_cluster
from e2e_harness import compose_cluster, container_pid, prepare_workdir

pytestmark = pytest.mark.engine

SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{script: resumable.py, args: [{args}], wait_timeout: 120, stall_warn: 3, stall_timeout: 8}}
env: {{OMP_NUM_THREADS: "1"}}
cache: {{host_path: ./cache}}
recovery: {{enabled: true, spares: {spares}, checkpoint_dir: checkpoints}}
"""
RUN = '"--steps", "30", "--interval", "0.3", "--save-every", "5"'


def _cluster(engine, image, tmp_path, name, fault, run=RUN, nodes="2", spares=1, by_up=False):
    """The rendered compose file started as is (``by_up``: by ``nodeweave up``, whose containers carry this
    folder's mark, for a test that asks ``nodeweave status``: a plain compose's it refuses, walk7 A34)."""
    spec_path = prepare_workdir(tmp_path, SPEC.format(name=name, args=f"{run}, {fault}", nodes=nodes, spares=spares))
    (tmp_path / "checkpoints").mkdir(mode=0o777)
    (tmp_path / "checkpoints").chmod(0o777)  # the image's uid 1000 saves there
    cluster = (up_cluster if by_up else compose_cluster)(engine, spec_path, image)
    cluster.remove()
    return cluster


def _resumed(logs):
    """[(generation, path, step)] of the RECOVERY-RESUME lines rank 0 printed: at a line's start, so not the
    entrypoint's own lines that quote one (the metrics note that no step line was read quotes the first line that
    looks like one, a resume's in the generation a node 0 come back starts)."""
    return [(int(g), from_folder(path), int(step)) for g, path, step in
            re.findall(r"(?m)^RECOVERY-RESUME gen=(\d+) from=(\S+) step=(\d+)", logs)]


def from_folder(path):
    """A resume path from its checkpoint folder on (``checkpoints/step-10.pt``): the ranks are given it absolute
    (walk13 B17: a script that changes folder, as Hydra's does, opens it still), so it is checked absolute here."""
    assert path.startswith("/"), f"NODEWEAVE_RESUME_FROM {path!r} is not absolute"
    return "/".join(path.split("/")[-2:])


def test_a_node_that_crashes_on_every_start_is_left_out_and_the_spare_takes_its_place(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rcrash",
                       '"--fault", "kill", "--fault-node", "e2e-rcrash-1", "--fault-gen", "-1", "--fault-step", "12"')
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
    finally:
        cluster.remove()
    assert codes == {"e2e-rcrash-0": 0, "e2e-rcrash-1": 0, "e2e-rcrash-2": 0}, logs
    node0 = logs["e2e-rcrash-0"]
    assert "recovery: generation 1: training node(s) 0, 2; spare(s) none; resuming from checkpoints/step-10.pt " \
           "(step 10)" in node0, node0
    assert _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0
    assert "this node is LEFT OUT of the job: node 1: its launcher failed" in logs["e2e-rcrash-1"]
    assert logs["e2e-rcrash-1"].count("RECOVERY-FAULT") == 1  # it never trained again
    assert "recovery: the job finished after 1 recovery(ies)" in node0
    # warm start in the image: generation 1 ran on the torchrun node 0 held while generation 0 trained, and on
    # the one the spare held while it waited (imported or still importing, by how soon the fault came)
    held = r"warm start: torchrun held ready for \d+s \((?:its imports done|still importing)\) takes this launch"
    assert [len(re.findall(held, logs[name])) for name in cluster.names] == [1, 0, 1], logs
    assert not any("starting it cold" in text for text in logs.values()), logs


def test_a_stalled_rank_is_left_out_at_stall_timeout_and_the_spare_takes_over(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rstall",
                       '"--fault", "stop", "--fault-node", "e2e-rstall-1", "--fault-step", "12"')
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
    finally:
        cluster.remove()
    assert codes == {"e2e-rstall-0": 0, "e2e-rstall-1": 0, "e2e-rstall-2": 0}, logs
    node0 = logs["e2e-rstall-0"]
    assert "recovery: generation 0 ended: node 1: the job stalled" in node0, node0
    assert "training node(s) 0, 2" in node0 and _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0


def test_a_killed_container_is_left_out_and_the_spare_takes_over(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rlost", HOLD_12)
    try:
        cluster.up()
        cluster.wait_log("e2e-rlost-0", "RECOVERY-HOLD gen=0 step=12", timeout=240)
        subprocess.run([engine.kind, "kill", "e2e-rlost-1"], capture_output=True, timeout=60, check=True)
        _release(tmp_path, 0, 12)
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
    finally:
        cluster.remove()
    assert codes["e2e-rlost-0"] == 0 and codes["e2e-rlost-2"] == 0 and codes["e2e-rlost-1"] != 0, logs
    node0 = logs["e2e-rlost-0"]
    assert re.search(r"recovery: generation 0 ended: node 1: it was lost", node0), node0
    assert _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0  # the kill landed at step 12
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0


HOLD_12 = '"--fault-node", "none", "--hold", "0:12"'


def _release(tmp_path, gen, step):
    """Let every rank held at ``--hold GEN:STEP`` go on (resumable.py): the test has acted on the node by now, so
    the fault lands at that step, not at whichever step a loaded machine let the workload reach."""
    release = tmp_path / f"release-{gen}-{step}"
    release.touch()
    release.chmod(0o644)


def _crash(engine, name):
    """Kill the container's PID 1 (tini) from the host, as a crash or the OOM killer would: the engine sees its
    main process die, which ``restart: on-failure`` answers (a ``podman kill`` is the user's own stop: podman
    4.7+ and docker restart nothing after it)."""
    pid = container_pid(engine.kind, name)  # never 0: `kill -9 0` is our own process group
    kill = ["kill", "-9", pid] if os.geteuid() == 0 else ["podman", "unshare", "kill", "-9", pid]
    subprocess.run(kill, capture_output=True, timeout=60, check=True)
    deadline = time.monotonic() + 60
    while _inspect(engine, name, "{{.RestartCount}} {{.State.Status}}") != "1 running":
        assert time.monotonic() < deadline, f"{name} did not come back: {_inspect(engine, name, '{{.State.Status}}')}"
        time.sleep(0.3)


def _inspect(engine, name, template):
    out = subprocess.run([engine.kind, "inspect", "-f", template, name], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def _record(engine, name, tmp_path):
    """The recovery record the node kept (``$TMPDIR/nodeweave/jobs/<job id>-<master port>/recovery.json``), read
    from its stopped container."""
    target = tmp_path / f"{name}-state"
    subprocess.run([engine.kind, "cp", f"{name}:/tmp/nodeweave", str(target)], check=True,
                   capture_output=True, timeout=60)
    [book] = target.glob("jobs/*/recovery.json")
    return json.loads(book.read_text())


def _worlds(logs):
    return {(int(g), int(w)) for g, w in re.findall(r"RECOVERY-STEP gen=(\d+) step=\d+ world=(\d+)", logs)}


def test_node_0s_crashed_container_comes_back_and_the_job_resumes_from_the_newest_checkpoint(engine, cpu_image,
                                                                                              tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rnode0", HOLD_12, spares=0)
    try:
        cluster.up()
        cluster.wait_log("e2e-rnode0-0", "RECOVERY-HOLD gen=0 step=12", timeout=240)
        _crash(engine, "e2e-rnode0-0")
        _release(tmp_path, 0, 12)
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
        restarts = {name: _inspect(engine, name, "{{.RestartCount}}") for name in cluster.names}
        book = _record(engine, "e2e-rnode0-0", tmp_path)
    finally:
        cluster.remove()
    assert codes == {"e2e-rnode0-0": 0, "e2e-rnode0-1": 0}, logs
    assert restarts == {"e2e-rnode0-0": "1", "e2e-rnode0-1": "0"}  # node 0 came back; node 1 never left
    node0 = logs["e2e-rnode0-0"]
    assert "recovery: node 0 came back; the other nodes ask for generation 1" in node0, node0
    assert _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0  # the crash landed at step 12
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0
    assert (book["decision"], book["generation"], book["members"]) == ("done", 1, [0, 1]), book
    assert [(h["cause"], h["why"]) for h in book["history"]] == [("lost", "node 0 was lost and came back")], book


def test_an_elastic_job_that_loses_a_node_for_good_goes_on_with_fewer(engine, cpu_image, tmp_path):
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rshrink", HOLD_12, nodes="3", spares="0, min_nodes: 2")
    assert cluster.names == ["e2e-rshrink-0", "e2e-rshrink-1", "e2e-rshrink-2"]  # with recovery: every slot
    try:
        cluster.up()
        cluster.wait_log("e2e-rshrink-0", "RECOVERY-HOLD gen=0 step=12", timeout=240)
        subprocess.run([engine.kind, "rm", "-f", "-t", "0", "e2e-rshrink-2"], capture_output=True, timeout=60,
                       check=True)
        _release(tmp_path, 0, 12)
        codes = cluster.wait_exit(["e2e-rshrink-0", "e2e-rshrink-1"], timeout=300)
        logs = {name: cluster.logs(name) for name in ("e2e-rshrink-0", "e2e-rshrink-1")}
        book = _record(engine, "e2e-rshrink-0", tmp_path)
    finally:
        cluster.remove()
    assert codes == {"e2e-rshrink-0": 0, "e2e-rshrink-1": 0}, logs
    node0 = logs["e2e-rshrink-0"]
    assert "recovery: generation 0 ended: node 2: it was lost" in node0, node0
    assert "recovery: generation 1: training node(s) 0, 1; spare(s) none; resuming from" in node0, node0
    assert _worlds(node0) == {(0, 3), (1, 2)}, node0  # three ranks, then two
    assert _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0  # removed at step 12
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0
    assert (book["generation"], book["members"], book["left_out"]) == (1, [0, 1], {"2": 1}), book
    assert book["why"]["2"].startswith("node 2: it was lost"), book
    # No wait for the node removed (a node still alive may be slow to check in again on a loaded machine).
    awaited = {int(n) for found in re.findall(r"waiting for node\(s\) ([\d, ]+) to check in again", node0)
               for n in found.split(",")}
    assert 2 not in awaited and "did not check in again" not in node0, node0


def test_a_crashed_node_comes_back_sits_out_the_generation_then_takes_a_place_as_a_spare(engine, cpu_image,
                                                                                           tmp_path):
    run = '"--steps", "80", "--interval", "0.3", "--save-every", "5"'
    cluster = _cluster(engine, cpu_image, tmp_path, "e2e-rback", '"--fault-node", "none", "--hold", "0:12,1:17"',
                       run=run, by_up=True)
    spec_path = tmp_path / "nodeweave.yaml"
    try:
        cluster.up()
        cluster.wait_log("e2e-rback-0", "RECOVERY-HOLD gen=0 step=12", timeout=240)
        _crash(engine, "e2e-rback-1")
        _release(tmp_path, 0, 12)
        cluster.wait_log("e2e-rback-1", "generation 1: this node is LEFT OUT of the job", timeout=120)
        rows = {row["node"]: row["recovery"] for row in status(spec_path)["nodes"]}
        cluster.wait_log("e2e-rback-0", "RECOVERY-HOLD gen=1 step=17", timeout=120)  # past the step-15 save
        _crash(engine, "e2e-rback-2")  # the spare that took node 1's place: node 1 takes its place now
        _release(tmp_path, 1, 17)
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
        book = _record(engine, "e2e-rback-0", tmp_path)
    finally:
        cluster.remove()
    assert codes == {"e2e-rback-0": 0, "e2e-rback-1": 0, "e2e-rback-2": 0}, logs
    assert (rows["node-1"]["role"], rows["node-1"]["generation"]) == ("left out", 1), rows
    assert rows["node-1"]["reason"].startswith("node 1: it was lost"), rows
    assert (rows["node-2"]["role"], rows["node-2"]["reason"]) == ("member", None), rows
    node0, node1 = logs["e2e-rback-0"], logs["e2e-rback-1"]
    assert "recovery: generation 1: training node(s) 0, 2; spare(s) none" in node0, node0
    assert ("recovery: generation 2: training node(s) 0, 1 (1 left out before: a place goes to a spare never left "
            "out first, then to a node left out once); spare(s) none") in node0, node0
    assert "generation 1: this node is LEFT OUT of the job: node 1: it was lost" in node1, node1
    assert "generation 2: " in node1.split("LEFT OUT of the job", 1)[1], node1  # it trained in generation 2
    assert _resumed(node0) == [(1, "checkpoints/step-10.pt", 10), (2, "checkpoints/step-15.pt", 15)], node0
    assert "RECOVERY-DONE gen=2 step=80 state=80" in node0, node0
    assert (book["generation"], book["members"], book["left_out"]) == (2, [0, 1], {"1": 1, "2": 1}), book
    assert [(h["node"], h["cause"]) for h in book["history"]] == [(1, "lost"), (2, "lost")], book
