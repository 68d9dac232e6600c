"""The Kubernetes path of the cluster verbs, driven through a ``kubectl`` stand-in over podman.

No API server runs here. ``kubectl_standin.py`` (on PATH as ``kubectl``)
answers the calls nodeweave makes: ``apply -k`` builds the tree with the
real kubectl's kustomize and plays the StatefulSet's pods with ``podman kube
play``; ``get``, ``exec``, ``logs``, ``delete`` map onto podman. So the
rendered manifests plus nodeweave's hold overlay, the pods' entrypoints, the
exec path of ``run``/``status``/``stop`` and the readiness wait are real; the
scheduler and the API are the stand-in's (docs/cluster.md says so).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cluster_harness import nodeweave, run_folders, workdir

pytestmark = [pytest.mark.engine, pytest.mark.slow]
HERE = Path(__file__).parent
SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{script: train.py, args: ["--steps", "10"], wait_timeout: 180}}
env: {{OMP_NUM_THREADS: "1"}}
kubernetes: {{namespace: e2e, anti_affinity: none, grace_period: 10}}
"""


def _free_subnet() -> str:
    used = subprocess.run(["podman", "network", "ls", "--format", "{{range .Subnets}}{{.Subnet}} {{end}}"],
                          capture_output=True, text=True).stdout
    for _ in range(50):
        candidate = f"10.214.{random.randint(1, 254)}"
        if f"{candidate}.0/" not in used:
            return candidate
    raise AssertionError(f"no free 10.214.x.0/24 subnet among: {used}")


@pytest.fixture
def standin(engine, cpu_image, tmp_path):
    """PATH with the stand-in as kubectl, a network for the pods, and cleanup of what it played."""
    if engine.kind != "podman":
        pytest.skip("podman kube play is podman's")
    real = shutil.which("kubectl")
    if real is None:
        pytest.skip("the stand-in builds the tree with kubectl's own kustomize, and kubectl is not installed "
                    "(`bash .ci/setup-tools.sh` installs it, as CI does)")
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "kubectl").write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'kubectl_standin.py'} \"$@\"\n")
    (folder / "kubectl").chmod(0o755)
    state = tmp_path / "standin"
    state.mkdir()
    prefix = _free_subnet()
    network = f"nwk-net-{prefix.rsplit('.', 1)[1]}"
    subprocess.run(["podman", "network", "create", "--subnet", f"{prefix}.0/24", network], check=True,
                   capture_output=True)
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "STANDIN_REAL_KUBECTL": real,
           "STANDIN_NETWORK": network, "STANDIN_IMAGE": cpu_image, "STANDIN_STATE": str(state),
           "STANDIN_ADDRESSES": ",".join(f"{prefix}.{10 + i}" for i in range(4))}
    names = []
    yield env, names
    for name in names:
        for i in range(4):
            subprocess.run(["podman", "pod", "rm", "-f", "-t", "0", f"{name}-{i}"], capture_output=True)
    subprocess.run(["podman", "network", "rm", "-f", network], capture_output=True)


def test_up_run_status_logs_stop_down_on_the_statefulsets_pods(standin, tmp_path):
    env, names = standin
    spec_path = workdir(tmp_path / "ws", "nwk", 2, SPEC)
    names.append("nwk")
    env = {**env, "STANDIN_WORKSPACE": str(spec_path.parent)}
    out = nodeweave(spec_path, "up", "--target", "kubernetes", "--hold", "--timeout", "180", env=env, check=0)
    assert "2 node(s) up in hold mode" in out.stdout and "plans agree" in out.stdout, out.stdout
    assert "kubectl apply -n e2e -k" in out.stdout
    report = json.loads(nodeweave(spec_path, "status", "--json", env=env, check=0).stdout)
    assert [(n["reached_as"], n["mode"], n["rank"]) for n in report["nodes"]] == [
        ("pod:e2e/nwk-0[trainer]", "hold", 0), ("pod:e2e/nwk-1[trainer]", "hold", 1)]
    assert report["nodes"][0]["platform"] == "Running, ready"
    out = nodeweave(spec_path, "run", "--", "train.py", "--steps", "10", env=env, check=0)
    assert out.stdout.count("done: world_size=2") == 2 and "[node-1]" in out.stdout, out.stdout
    record = json.loads((run_folders(spec_path)[-1] / "run.json").read_text())
    assert record["nodes"][1]["exported"]["MASTER_ADDR"] == "nwk-0.nwk.e2e.svc.cluster.local"
    logs = nodeweave(spec_path, "logs", env=env, check=0).stdout
    assert "[node-0]" in logs and "done: world_size=2" in logs
    container = nodeweave(spec_path, "logs", "--container", "--node", "1", env=env, check=0).stdout
    assert "holding: node 1 of 2, master nwk-0.nwk.e2e.svc.cluster.local:29500" in container
    check = nodeweave(spec_path, "check", "--json", "--timeout", "120", env=env, check=0)  # the check's exec path
    report = json.loads(check.stdout)
    assert report["healthy"] and report["check"]["world"] == 2 and report["check"]["backend"] == "gloo", report
    assert [n["facts"]["hostname"] for n in report["check"]["nodes"]] == ["nwk-0", "nwk-1"]
    argv = json.loads((Path(report["folder"]) / "run.json").read_text())["nodes"][1]["argv"]
    assert argv[:7] == ["kubectl", "exec", "-n", "e2e", "-c", "trainer", "nwk-1"], argv
    assert argv[-12:-10] == ["-m", "nodeweave.check.worker"] and "healthy: nothing named" in check.stderr, argv
    # the pods hold (up --hold: NODEWEAVE_MODE=hold in their environment, no flag) and nothing runs now: "no run",
    # exit 0; the holding PID 1 is no job run as the pod's main command (walk16a A3: it was named one)
    stopped = nodeweave(spec_path, "stop", env=env, check=0)
    assert stopped.stdout.count(": no run") == 2 and "main command" not in stopped.stdout, stopped.stdout
    nodeweave(spec_path, "down", env=env, check=0)
    assert subprocess.run(["podman", "pod", "exists", "nwk-0"]).returncode != 0
    space = json.loads((Path(env["STANDIN_STATE"]) / "state.json").read_text())["standin/e2e"]
    assert space["statefulsets"] == {} and list(space["claims"]) == ["nwk-workspace"], space  # down keeps the claim


def test_a_pod_the_scheduler_never_places_is_named_after_the_deadline(standin, tmp_path):
    env, names = standin
    spec_path = workdir(tmp_path / "ws", "nwk-late", 3, SPEC)
    names.append("nwk-late")
    env = {**env, "STANDIN_WORKSPACE": str(spec_path.parent), "STANDIN_SKIP": "2"}
    out = nodeweave(spec_path, "up", "--target", "kubernetes", "--hold", "--timeout", "25", env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 of 3 node(s) not up after" in out.stderr and "node-2 (pod:e2e/nwk-late-2[trainer])" in out.stderr
    assert "missing (no pod yet)" in out.stderr
    nodeweave(spec_path, "down", env=env)


OPENSHIFT_SPEC = """name: {name}
image: {{variant: cpu, registry: localhost/nodeweave-e2e}}
nodes: {nodes}
gpus_per_node: 1
launcher: {{type: deepspeed, mode: hold, script: train.py, args: ["--steps", "10"], wait_timeout: 180}}
env: {{OMP_NUM_THREADS: "1"}}
kubernetes: {{namespace: e2e, anti_affinity: none, grace_period: 10, openshift: true, claim: shared}}
"""


def test_the_openshift_deepspeed_seed_loop_through_oc(standin, tmp_path):
    """Seed 000's shape (and 002's verbs): a DeepSpeed StatefulSet on OpenShift, reached with `oc` alone.

    ``oc`` is the kubectl stand-in under that name (no OpenShift runs here); ``kubectl`` on the verbs' PATH
    is a script that leaves a mark and fails, so a call that still went to kubectl fails the test. The pods'
    workspace claim is a folder only ``nodeweave sync`` fills.
    """
    env, names = standin
    folder = Path(env["PATH"].split(os.pathsep)[0])
    (folder / "kubectl").rename(folder / "oc")
    (folder / "kubectl").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/kubectl-asked\nexit 1\n")
    (folder / "kubectl").chmod(0o755)
    claim = tmp_path / "claim"
    claim.mkdir()
    os.chown(claim, 1000, 1000)  # the image's user owns the claim, as fsGroup makes a volume the pod's
    spec_path = workdir(tmp_path / "ws", "nwos", 2, OPENSHIFT_SPEC)
    names.append("nwos")
    env = {**env, "STANDIN_WORKSPACE": str(claim)}
    out = nodeweave(spec_path, "up", "-t", "openshift", "--timeout", "180", env=env, check=0)
    assert "2 node(s) up in hold mode" in out.stdout and "oc apply -n e2e -k" in out.stdout, out.stdout
    try:
        synced = nodeweave(spec_path, "sync", env=env, check=0)
        assert (claim / "train.py").is_file(), synced.stdout + synced.stderr
        out = nodeweave(spec_path, "run", env=env, check=0)  # the spec's script and args, deepspeed --no_ssh per pod
        assert out.stdout.count("done: world_size=2") == 2, out.stdout
        report = json.loads(nodeweave(spec_path, "status", "--json", env=env, check=0).stdout)
        assert report["plans_agree"] is True and [n["reached_as"] for n in report["nodes"]] == [
            "oc:e2e/nwos-0[trainer]", "oc:e2e/nwos-1[trainer]"], report["nodes"]
        logs = nodeweave(spec_path, "logs", env=env, check=0).stdout
        assert "[node-1]" in logs and "done: world_size=2" in logs
        # the test's input is no terminal: the dry run prints the plan and ends with the real shell's exit 2
        # (walk17a A9: a refusal certain before anything starts is the dry run's exit too)
        shell = nodeweave(spec_path, "shell", "--node", "0", "--dry-run", env=env, check=2)
        assert shell.stdout.startswith("oc exec"), shell.stdout
        assert "the real shell would end with exit 2: shell's input is not a terminal" in shell.stdout + shell.stderr
    finally:
        nodeweave(spec_path, "down", env=env, check=0)
    assert (claim / "train.py").is_file()  # down keeps the claim: code and checkpoints stay
    assert not (tmp_path / "kubectl-asked").exists(), (tmp_path / "kubectl-asked").read_text()
