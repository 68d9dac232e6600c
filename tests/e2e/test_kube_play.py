"""The rendered StatefulSet's pods rendezvous under ``podman kube play``.

Pods ``<name>-0`` and ``<name>-1`` come from the manifests renderer's
``manifests/base/statefulset.yaml`` (see kube_play.py for what one machine
changes); each entrypoint finds its rank from the pod name / pod-index label
and its master from the headless Service name, as in a cluster.
"""

from __future__ import annotations

import random
import subprocess

import pytest
import yaml

from e2e_harness import Cluster, prepare_workdir, records
from kube_play import pods_from_statefulset

pytestmark = pytest.mark.engine

SPEC = """name: e2e-sts
image: {variant: cpu, registry: localhost/nodeweave-e2e}
nodes: 2
gpus_per_node: 2
launcher: {script: allreduce.py, wait_timeout: 120}
env: {OMP_NUM_THREADS: "1"}
kubernetes: {namespace: e2e, anti_affinity: none}
"""


def _free_subnet(engine) -> str:
    used = subprocess.run(["podman", "network", "ls", "--format", "{{range .Subnets}}{{.Subnet}} {{end}}"],
                          capture_output=True, text=True).stdout
    for _ in range(50):
        candidate = f"10.213.{random.randint(1, 254)}"
        if f"{candidate}.0/" not in used:
            return candidate
    raise AssertionError(f"no free 10.213.x.0/24 subnet among: {used}")


def test_statefulset_pods_rendezvous_under_kube_play(engine, cpu_image, tmp_path):
    if engine.kind != "podman":
        pytest.skip("podman kube play is podman's")
    from nodeweave.targets import kubernetes as manifests
    from nodeweave.spec import load_spec

    spec_path = prepare_workdir(tmp_path / "ws", SPEC)
    rendered = manifests.render_files(load_spec(spec_path))["manifests/base/statefulset.yaml"]
    prefix = _free_subnet(engine)
    addresses = [f"{prefix}.10", f"{prefix}.11"]
    pods = pods_from_statefulset(rendered, cpu_image, str(spec_path.parent), addresses, scratch=str(tmp_path / "emptydir"))
    assert [pod["metadata"]["name"] for pod in pods] == ["e2e-sts-0", "e2e-sts-1"]
    play = tmp_path / "pods.yaml"
    play.write_text(yaml.safe_dump_all(pods, sort_keys=False))
    network = "e2e-sts-net"
    cluster = Cluster(engine=engine, names=["e2e-sts-0-trainer", "e2e-sts-1-trainer"], networks=[network],
                      pods=["e2e-sts-0", "e2e-sts-1"])
    cluster.remove()
    try:
        subprocess.run(["podman", "network", "create", "--subnet", f"{prefix}.0/24", network],
                       check=True, capture_output=True, timeout=60)
        argv = ["podman", "kube", "play", "--network", network]
        for address in addresses:
            argv += ["--ip", address]
        out = subprocess.run(argv + [str(play)], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        codes = cluster.wait_exit(timeout=300)
        logs = cluster.all_logs()
        assert all(code == 0 for code in codes.values()), f"{codes}\n{logs}"
        found = records(logs)
        assert sorted(r["rank"] for r in found) == [0, 1, 2, 3], logs
        assert all(r["sum"] == 10.0 for r in found), found
        for record in found:
            assert record["host"] == f"e2e-sts-{record['rank'] // 2}", record
        # the master came from the Service name, resolved as cluster DNS would
        master = "e2e-sts-0.e2e-sts.e2e.svc.cluster.local"
        script = tmp_path / "explained" / "allreduce.py"  # --explain of a script the node lacks is exit 2
        script.parent.mkdir()
        script.write_text("")
        explain = engine.client.container.run(
            cpu_image, ["--explain", "--json", "--", "allreduce.py"], remove=True, hostname="e2e-sts-1",
            volumes=[(str(script.parent), "/workspace", "ro")],
            envs={"NODEWEAVE_SERVICE": "e2e-sts", "POD_NAMESPACE": "e2e", "NODEWEAVE_NNODES": "2",
                  "POD_NAME": "e2e-sts-1", "NODEWEAVE_NPROC_PER_NODE": "2"})
        assert master in explain, explain
    finally:
        cluster.remove()


def test_the_standins_pod_view_follows_the_kubelets_words_for_each_container_state(engine, base_image):
    """Created → Pending (waiting), running → Running, ended → Succeeded/Failed with the code: a pod whose
    container is only made is not read as finished, which `up`'s readiness wait would take for a failure."""
    import importlib
    import uuid

    standin = importlib.import_module("kubectl_standin")
    pod = f"nwstandin-{uuid.uuid4().hex[:6]}"
    container = f"{pod}-trainer"

    def podman(*args):
        return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120, check=True)

    def view():
        seen = standin.pod_json(pod)["status"]
        return seen["phase"], seen["containerStatuses"][0]["state"]

    try:
        podman("pod", "create", "--name", pod)
        podman("create", "--pod", pod, "--name", container, base_image, "sleep", "infinity")
        assert view() == ("Pending", {"waiting": {"reason": "ContainerCreating"}})
        podman("start", container)
        assert view() == ("Running", {"running": {}})
        podman("kill", container)
        podman("wait", container)
        assert view() == ("Failed", {"terminated": {"exitCode": 137}})
    finally:
        subprocess.run(["podman", "pod", "rm", "-f", "-t", "0", pod], capture_output=True, timeout=120)
