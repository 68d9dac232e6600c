"""Recovery on the StatefulSet's pods, through the kubectl stand-in (tests/e2e/kubectl_standin.py) over podman.

The rendered ``manifests/base`` of a spec with ``recovery: {enabled: true, spares: 1}`` is applied as a user
applies it (``kubectl apply -k``): three pods, two training, one spare, each running
tests/e2e/workspace/resumable.py from the shared claim (``step-N.pt`` every 5 steps). Mid-run a training pod
is deleted (``kubectl delete pod``): the stand-in stops it as the kubelet does and makes it again under the
same name, as the StatefulSet's controller does. Node 0 leaves the lost node out, the spare takes its place,
training resumes from the newest complete checkpoint, and the recreated pod checks in again and waits until
the job ends. Asserted: the node left out, the generations, the resumed step, every container's exit code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_cluster_kube import standin  # noqa: F401  (the fixture: the stand-in on PATH, a network, cleanup)

pytestmark = [pytest.mark.engine, pytest.mark.slow]
HERE = Path(__file__).parent
SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: 2
gpus_per_node: 1
launcher:
  script: resumable.py
  args: ["--steps", "30", "--interval", "0.3", "--save-every", "5", "--hold", "0:12"]
  wait_timeout: 120
  stall_warn: 0
env: {{OMP_NUM_THREADS: "1"}}
recovery: {{enabled: true, spares: 1, checkpoint_dir: checkpoints}}
kubernetes: {{namespace: e2e, anti_affinity: none, grace_period: 5}}
"""
NAME = "nwrec"
PODS = [f"{NAME}-{i}" for i in range(3)]


def _kubectl(env, *argv, check=True):
    out = subprocess.run(["kubectl", *argv], capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
    assert not check or out.returncode == 0, f"kubectl {' '.join(argv)}: {out.stdout}{out.stderr}"
    return out


def _state(pod: str) -> dict:
    out = subprocess.run(["podman", "inspect", f"{pod}-trainer", "--format", "{{json .State}}"], capture_output=True,
                         text=True, timeout=60)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def _logs(pod: str) -> str:
    out = subprocess.run(["podman", "logs", f"{pod}-trainer"], capture_output=True, text=True, timeout=60)
    return out.stdout + out.stderr


def _wait(what, limit: float):
    until = time.monotonic() + limit
    while time.monotonic() < until:
        if what():
            return
        time.sleep(0.5)
    raise AssertionError("timed out:\n" + "\n".join(f"--- {pod}\n{_logs(pod)[-3000:]}" for pod in PODS))


def test_a_deleted_statefulset_pod_is_recreated_rejoins_and_the_spare_has_taken_its_place(standin, tmp_path):
    env, names = standin
    names.append(NAME)
    workspace = tmp_path / "claim"
    (workspace / "checkpoints").mkdir(parents=True)
    workspace.chmod(0o777)
    (workspace / "checkpoints").chmod(0o777)  # the image's uid 1000 saves there
    shutil.copy(HERE / "workspace" / "resumable.py", workspace / "resumable.py")
    spec_path = tmp_path / "nodeweave.yaml"
    spec_path.write_text(SPEC.format(name=NAME))
    rendered = subprocess.run([sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main())",
                               "render", "manifests", "--spec", str(spec_path), "--out", str(tmp_path / "out")],
                              capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    env = {**env, "STANDIN_WORKSPACE": str(workspace)}
    applied = _kubectl(env, "apply", "-n", "e2e", "-k", str(tmp_path / "out" / "manifests" / "base"))
    assert "3 pod(s) played" in applied.stdout, applied.stdout  # replicas: nodes + spares

    # every rank holds at step 12 (resumable.py --hold) until the pod is deleted: the fault lands there
    _wait(lambda: "RECOVERY-HOLD gen=0 step=12 " in _logs(PODS[0]), 240)
    first = _state(PODS[1])["StartedAt"]
    deleted = _kubectl(env, "delete", "-n", "e2e", "pod", PODS[1])
    assert f'pod "{PODS[1]}" deleted' in deleted.stdout
    assert _state(PODS[1])["StartedAt"] != first, "the controller's new pod, not the old one"
    (workspace / "release-0-12").touch()
    (workspace / "release-0-12").chmod(0o644)

    _wait(lambda: all(_state(pod).get("Status") == "exited" for pod in PODS), 300)
    codes = {pod: _state(pod)["ExitCode"] for pod in PODS}
    logs = {pod: _logs(pod) for pod in PODS}
    assert codes == {pod: 0 for pod in PODS}, logs
    node0 = logs[PODS[0]]
    assert re.search(r"recovery: generation 0 ended: node 1: ", node0), node0
    assert "recovery: generation 1: training node(s) 0, 2; spare(s) none" in node0, node0
    # at a line's start: the rank's own line, not an entrypoint line quoting it (the metrics step note)
    resumed = re.findall(r"(?m)^RECOVERY-RESUME gen=(\d+) from=(\S+) step=(\d+)", node0)
    # absolute since walk13 B17 (a script that changes folder opens it still): from its folder on
    resumed = [(g, "/".join(path.split("/")[-2:]) if path.startswith("/") else "relative: " + path, s)
               for g, path, s in resumed]
    assert resumed == [("1", "checkpoints/step-10.pt", "10")], node0  # deleted at step 12
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0
    # The recreated pod checked in again, was told it is out of this job, and waited for its end.
    assert "generation 1: this node is LEFT OUT of the job: node 1" in logs[PODS[1]], logs[PODS[1]]
    assert "RECOVERY-STEP" not in logs[PODS[1]], "the recreated pod never trained again"
    [kept] = (Path(env["STANDIN_STATE"]) / "emptydir" / PODS[0] / "tmp" / "nodeweave").glob("jobs/*/recovery.json")
    book = json.loads(kept.read_text())
    assert (book["decision"], book["generation"], book["members"]) == ("done", 1, [0, 2]), book
    # a deleted pod's container is sent SIGTERM, which node 0 is told of: since walk13 B1 a node ended by a stop
    # signal is recorded `stopped` (not waited for; its recreated pod comes back left out, as above)
    assert [h["node"] for h in book["history"]] == [1] and book["history"][0]["cause"] in ("lost", "crash",
                                                                                          "stopped"), book
    _kubectl(env, "delete", "-n", "e2e", "-k", str(tmp_path / "out" / "manifests" / "base"))
