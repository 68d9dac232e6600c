"""A held StatefulSet with a spare, through the kubectl stand-in (issue 41, "Why": the first bullet, on Kubernetes).

``recovery: {enabled: true, spares: 1}``, ``nodes: 2``, ``nodeweave up -t kubernetes --hold``: the spare's plan
failed with "node rank 2 ... is not below the node count 2" (exit 2), so its container ended (a cluster's
``restartPolicy: Always`` restarts it again and again; the stand-in plays ``Never``, so its pod ends Failed)
and ``up`` never saw three nodes hold; ``--explain`` in the spare's pod failed the same way. Now the StatefulSet's three pods hold, the spare says it holds as a spare,
``status`` shows its role where a rank would be with no plan error, ``exec`` of the entrypoint's ``--explain``
in the spare's pod names its role, and ``down`` removes the pods. The stand-in (tests/e2e/kubectl_standin.py)
plays the pods with podman, as tests/e2e/test_cluster_kube.py and test_kube_recovery.py do.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cluster_harness import nodeweave, workdir
from test_cluster_kube import SPEC as KUBE_SPEC
from test_cluster_kube import standin  # noqa: F401  (the fixture: the stand-in on PATH, a network, cleanup)

pytestmark = [pytest.mark.engine, pytest.mark.slow]
NAME = "nwkspare"
SPEC = KUBE_SPEC + "recovery: {{enabled: true, spares: 1}}\n"
PLAN_BUG = "not below the node count"  # the old spare's plan error, in whichever output it surfaced


def _trainer(pod: str, what: str) -> str:
    out = subprocess.run(["podman", "inspect", "--format", what, f"{pod}-trainer"], capture_output=True, text=True,
                         timeout=60)
    return out.stdout.strip() + out.stderr.strip()


def _logs(pod: str) -> str:
    out = subprocess.run(["podman", "logs", f"{pod}-trainer"], capture_output=True, text=True, timeout=60)
    return out.stdout + out.stderr


def test_up_hold_on_kubernetes_with_a_spare_holds_three_pods_and_the_spare_as_a_spare(standin, tmp_path):
    env, names = standin
    names.append(NAME)
    spec_path = workdir(tmp_path / "ws", NAME, 2, SPEC)
    env = {**env, "STANDIN_WORKSPACE": str(spec_path.parent)}
    pods = [f"{NAME}-{i}" for i in range(3)]
    try:
        up = nodeweave(spec_path, "up", "--target", "kubernetes", "--hold", "--timeout", "180", env=env, timeout=400)
        said = up.stdout + up.stderr
        assert up.returncode == 0 and PLAN_BUG not in said, said
        assert "3 node(s) up in hold mode" in up.stdout and "plans agree" in up.stdout, said
        assert all(subprocess.run(["podman", "pod", "exists", pod]).returncode == 0 for pod in pods), said

        spare = _logs(pods[2])
        assert "holding: as a spare" in spare and PLAN_BUG not in spare, spare
        for index in (0, 1):
            log = _logs(pods[index])
            assert f"holding: node {index} of 2 training node(s) (+1 spare(s))" in log, log
        for pod in pods:  # every pod's one container still holding, never restarted
            assert _trainer(pod, "{{.State.Status}} {{.RestartCount}}") == "running 0", (pod, _logs(pod))

        report = json.loads(nodeweave(spec_path, "status", "-t", "kubernetes", "--json", env=env, check=0).stdout)
        rows = report["nodes"]
        assert report["plans_agree"] is True, report
        assert [(n["reached_as"], n["up"], n["mode"], n["plan_errors"]) for n in rows] == [
            (f"pod:e2e/{pod}[trainer]", True, "hold", []) for pod in pods], report
        assert [(n["role"]["kind"], n["role"]["rank"], n["role"]["identity"]) for n in rows] == [
            ("training node", 0, 0), ("training node", 1, 1), ("spare", None, 2)], report
        table = nodeweave(spec_path, "status", "-t", "kubernetes", env=env, check=0).stdout
        assert "spare (2)" in table and PLAN_BUG not in table, table

        explain = nodeweave(spec_path, "exec", "-t", "kubernetes", "--node", "2", "--", "nodeweave-entrypoint",
                            "--explain", "--", "train.py", env=env)  # in the spare's pod, with the job's script
        said = explain.stdout + explain.stderr
        assert explain.returncode == 0 and PLAN_BUG not in said and "Errors" not in said, said
        assert "this node    spare (container identity 2)" in explain.stdout, said
        assert "wait to take a left-out node's place" in explain.stdout, said
    finally:
        down = nodeweave(spec_path, "down", "-t", "kubernetes", env=env, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert all(subprocess.run(["podman", "pod", "exists", pod]).returncode != 0 for pod in pods)
    space = json.loads((Path(env["STANDIN_STATE"]) / "state.json").read_text())["standin/e2e"]
    assert space["statefulsets"] == {}, space
