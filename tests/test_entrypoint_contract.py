"""The rendered compose files and manifests, as the entrypoint reads them.

The environment each committed file gives its container (docs/design.md's
contract) is fed to the entrypoint on a captured node, with the downward API
and compose interpolation filled in as the platform would.
"""

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from nodeweave.entrypoint import make_plan

yaml = pytest.importorskip("yaml")
REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "synthetic"


def load(path):
    if not (REPO / path).exists():
        pytest.skip(f"{path} is not rendered in this checkout")
    return list(yaml.safe_load_all((REPO / path).read_text()))


def compose_env(service, values):
    env = {}
    for key, value in service["environment"].items():
        value = str(value)
        if value.startswith("${"):
            name, _, rest = value[2:-1].partition(":")
            value = values.get(name, rest[1:] if rest.startswith("-") else "")
        env[key] = value
    return env


def pod_env(container, downward):
    env = {}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = str(item["value"])
        else:
            env[item["name"]] = downward[item["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def with_hostname(tmp_path, fixture, hostname):
    root = tmp_path / fixture
    shutil.copytree(FIX / fixture, root, symlinks=True)
    (root / "etc/hostname").write_text(hostname + "\n")
    return str(root)


def test_host_network_compose_node(tmp_path):
    (doc,) = load("compose/node.yaml")
    service = doc["services"]["node"]
    env = compose_env(service, {"NODE_RANK": "1", "MASTER_ADDR": "hgx-a00"})
    p = make_plan(["--", *service["command"]], env=env, sysroot=str(FIX / "hgx-h100"))
    t = p.topology
    assert (t.node_rank.value, t.nnodes_max, t.master_addr.value) == (1, int(env["NNODES"]), "hgx-a00")
    assert p.launch.argv[0] == env["NODEWEAVE_LAUNCHER"]
    assert p.launch.argv[-len(service["command"]):] == service["command"]


def test_compose_local_simulation(tmp_path):
    (doc,) = load("compose/local.yaml")
    name, service = sorted(doc["services"].items())[1]
    root = with_hostname(tmp_path, "compose-sim", service["hostname"])
    p = make_plan(["--", *service["command"]], env=compose_env(service, {}), sysroot=root)
    first = sorted(doc["services"])[0]
    assert (p.topology.node_rank.value, p.topology.master_addr.value) == (1, first)


class Api(BaseHTTPRequestHandler):
    replicas = 2

    def do_GET(self):
        body = json.dumps({"spec": {"replicas": Api.replicas}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_statefulset_pod(tmp_path):
    docs = load("manifests/base/statefulset.yaml")
    sts = next(d for d in docs if d and d.get("kind") == "StatefulSet")
    name = sts["metadata"]["name"]
    Api.replicas = sts["spec"]["replicas"]
    container = sts["spec"]["template"]["spec"]["containers"][0]
    env = pod_env(container, {"metadata.name": f"{name}-1", "metadata.namespace": "training",
                              "status.podIP": "10.128.2.15", "metadata.labels['apps.kubernetes.io/pod-index']": "1"})
    server = HTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env["NODEWEAVE_KUBE_API"] = f"http://127.0.0.1:{server.server_address[1]}"
        env["NODEWEAVE_NPROC_PER_NODE"] = "auto"  # the captured node has 4 H100s; more are refused
        p = make_plan(["--", *container["args"]], env=env, sysroot=with_hostname(tmp_path, "sts-h100-roce", f"{name}-1"))
    finally:
        server.shutdown()
    t = p.topology
    service = env["NODEWEAVE_SERVICE"]
    assert (t.node_rank.value, t.nnodes_max) == (1, sts["spec"]["replicas"])
    assert t.master_addr.value == f"{name}-0.{service}.training.svc.cluster.local"


def test_indexed_job_pod(tmp_path):
    docs = load("manifests/job/job.yaml")
    job = next(d for d in docs if d and d.get("kind") == "Job")
    name = job["metadata"]["name"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = pod_env(container, {"metadata.name": f"{name}-1-x7k2p", "metadata.namespace": "training",
                              "status.podIP": "10.128.2.16",
                              "metadata.annotations['batch.kubernetes.io/job-completion-index']": "1"})
    env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1"
    env["NODEWEAVE_NPROC_PER_NODE"] = "auto"  # the captured node has 4 H100s; more are refused
    p = make_plan(["--", *container["args"]], env=env, sysroot=with_hostname(tmp_path, "sts-h100-roce", f"{name}-1"))
    assert p.topology.node_rank.value == 1
    assert p.topology.master_addr.value == env["MASTER_ADDR"]
