"""The kubectl stand-in honours namespace, context, selector and names, and refuses what it does not know.

No engine: each check stops before podman would be asked (the pods recorded
here have no podman pod), so a wrong call the cluster verbs could make is
shown to fail. The down tree is the one ``KubeCluster`` renders for ``down``,
built by the real kubectl's kustomize.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plan_parts import down_files, down_steps
from nodeweave.cluster.backends.kube import KubeCluster
from nodeweave.cluster.execute import write_files
from nodeweave.cluster.options import ClusterOptions
from nodeweave.plan import FilesPhase
from nodeweave.spec import parse_spec

STANDIN = Path(__file__).parent / "kubectl_standin.py"
SPEC = """name: nwk
image: {variant: cpu, registry: localhost/nodeweave-e2e}
nodes: 2
launcher: {script: train.py}
kubernetes: {namespace: e2e}
"""
POD = {"labels": {"app.kubernetes.io/instance": "nwk"}, "containers": ["trainer"]}


@pytest.fixture
def standin(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    recorded = {"standin/e2e": {"statefulsets": {"nwk": {"replicas": 2, "pods": {}}},
                                "claims": {"nwk-workspace": {"app.kubernetes.io/instance": "nwk"}}}}
    (state / "state.json").write_text(json.dumps(recorded))
    env = {**os.environ, "STANDIN_STATE": str(state), "STANDIN_CONTEXTS": "standin,other",
           "STANDIN_REAL_KUBECTL": shutil.which("kubectl") or "kubectl-is-missing"}

    def call(*argv):
        return subprocess.run([sys.executable, str(STANDIN), *argv], capture_output=True, text=True, env=env,
                              timeout=120)

    call.state = lambda: json.loads((state / "state.json").read_text())
    call.write = lambda recorded: (state / "state.json").write_text(json.dumps(recorded))
    return call


def test_what_it_recorded_is_found_only_in_its_namespace_and_context(standin):
    assert standin("get", "-n", "e2e", "statefulset", "nwk", "-o", "jsonpath={.spec.replicas}").stdout == "2"
    other_ns = standin("get", "-n", "default", "statefulset", "nwk", "-o", "jsonpath={.spec.replicas}")
    assert other_ns.returncode == 1 and "NotFound" in other_ns.stderr
    other_ctx = standin("--context", "other", "get", "-n", "e2e", "statefulset", "nwk", "-o",
                        "jsonpath={.spec.replicas}")
    assert other_ctx.returncode == 1 and "NotFound" in other_ctx.stderr
    unknown = standin("--context", "prod", "get", "-n", "e2e", "statefulset", "nwk", "-o", "jsonpath={.spec.replicas}")
    assert unknown.returncode == 1 and 'context "prod" does not exist' in unknown.stderr


def test_exec_and_logs_reach_only_a_recorded_pod_and_container(standin):
    state = standin.state()
    state["standin/e2e"]["statefulsets"]["nwk"]["pods"]["nwk-0"] = POD
    standin.write(state)
    wrong_ns = standin("exec", "-i", "-n", "default", "-c", "trainer", "nwk-0", "--", "true")
    assert wrong_ns.returncode == 1 and 'pods "nwk-0" not found in namespace default' in wrong_ns.stderr
    wrong_pod = standin("logs", "-n", "e2e", "-c", "trainer", "nwk-7")
    assert wrong_pod.returncode == 1 and 'pods "nwk-7" not found' in wrong_pod.stderr
    wrong_container = standin("exec", "-n", "e2e", "-c", "sidecar", "nwk-0", "--", "true")
    assert wrong_container.returncode == 1 and "container sidecar is not valid" in wrong_container.stderr


def test_a_selector_selects(standin):
    state = standin.state()
    state["standin/e2e"]["statefulsets"]["nwk"]["pods"]["nwk-0"] = POD  # instance=nwk: not selected below
    standin.write(state)
    got = standin("get", "-n", "e2e", "pods", "-l", "app.kubernetes.io/instance=other",
                  "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
    assert got.returncode == 0 and got.stdout == ""
    bad = standin("get", "-n", "e2e", "pods", "-l", "app in (nwk)", "-o", "json")
    assert bad.returncode == 2 and "key=value" in bad.stderr


@pytest.mark.parametrize("argv, why", [
    (["delete", "pods", "--all"], "flag --all"),
    (["delete", "-n", "e2e", "statefulset", "nwk"], "delete -k DIR"),
    (["rollout", "restart", "statefulset/nwk"], "verb ['rollout']"),
    (["get", "-n", "e2e", "pods", "-l", "a=b", "-o", "yaml"], "get statefulset NAME"),
    (["get", "-n", "e2e", "statefulset", "nwk", "-o", "yaml"], "get statefulset NAME"),
    (["exec", "-n", "e2e", "-c", "trainer", "nwk-0"], "exec without -- COMMAND"),
    (["exec", "-n", "e2e", "nwk-0", "--", "true"], "exec nwk-0"),
    (["logs", "--tail=5", "-n", "e2e", "-c", "trainer", "nwk-0"], "flag --tail=5"),
    (["apply", "-f", "x.yaml"], "flag -f"),
    (["--context"], "--context without a value"),
])
def test_what_it_does_not_understand_is_refused(standin, argv, why):
    out = standin(*argv)
    assert out.returncode == 2 and why in out.stderr, out.stderr


def _write(planned, spec_dir):
    """The planned files, as the executor writes them before the plan's commands run."""
    write_files(FilesPhase("the kept tree", files=tuple(planned)), spec_dir, lambda line: None)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with its built-in kustomize) is not installed "
                    "(`bash .ci/setup-tools.sh` installs it, as CI does)")
def test_down_deletes_the_trees_objects_in_its_namespace_and_keeps_the_claim_it_leaves_out(standin, tmp_path):
    spec = parse_spec(SPEC, "nwk.yaml")
    backend = KubeCluster(spec, tmp_path / "nwk.yaml", ClusterOptions(target="kubernetes"))
    (keep,) = down_steps(backend, False)[0]
    _write(down_files(backend, False), tmp_path)  # the tree `delete -k` reads: the plan's files, written first
    argv = list(keep.argv)
    assert argv[:3] == ["kubectl", "delete", "-n"] and argv[3] == "e2e", argv
    elsewhere = standin(*argv[1:3], "default", *argv[4:])
    assert elsewhere.returncode == 1 and 'does not match the namespace "default"' in elsewhere.stderr
    assert standin.state()["standin/e2e"]["statefulsets"], "a refused delete removed something"
    out = standin(*argv[1:])
    assert out.returncode == 0, out.stderr
    space = standin.state()["standin/e2e"]
    assert space["statefulsets"] == {} and list(space["claims"]) == ["nwk-workspace"]
    claims = [step for (step,) in down_steps(backend, True) if "pvc" in step.argv][0]
    _write(down_files(backend, True), tmp_path)
    assert standin(*claims.argv[1:]).returncode == 0
    assert standin.state()["standin/e2e"]["claims"] == {}

