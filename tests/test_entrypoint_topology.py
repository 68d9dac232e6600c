"""Rank, node count, master and port: every source, conflicts, and bad input."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from nodeweave.entrypoint import EntrypointError, make_plan
from nodeweave.entrypoint.errors import EXIT_TOPOLOGY, EXIT_USAGE
from nodeweave.entrypoint.planning.slurm import expand_nodelist
from nodeweave.entrypoint.planning.sources import ordinal

FIX = Path(__file__).parent / "fixtures" / "synthetic"


def topo(fixture="cpu-only", argv=(), **env):
    plan = make_plan([*argv, "--", "train.py"], env=env, sysroot=str(FIX / fixture))
    return plan.topology


def summary(t):
    return (t.node_rank.value, t.nnodes.value, t.master_addr.value, t.master_port.value)


def fails(code, fixture="cpu-only", argv=(), **env):
    with pytest.raises(EntrypointError) as err:
        make_plan([*argv, "--", "train.py"], env=env, sysroot=str(FIX / fixture))
    assert err.value.exit_code == code, str(err.value)
    return str(err.value)


# --- each source --------------------------------------------------------------


def test_flags():
    t = topo(argv=["--nnodes", "4", "--node-rank", "3", "--master-addr", "10.0.0.1", "--master-port", "1234"])
    assert summary(t) == (3, "4", "10.0.0.1", 1234)
    assert t.node_rank.source == "flag --node-rank"
    assert t.world_size == 4 and not t.is_master


def test_generic_env():
    t = topo(NODE_RANK="1", NNODES="2", MASTER_ADDR="head", MASTER_PORT="23456")
    assert summary(t) == (1, "2", "head", 23456)
    assert t.master_port.source == "MASTER_PORT=23456"


def test_nodeweave_env_and_pet_env():
    t = topo(NODEWEAVE_NNODES="2", NODEWEAVE_MASTER_PORT="29501", PET_NODE_RANK="1", PET_MASTER_ADDR="job-master-0")
    assert summary(t) == (1, "2", "job-master-0", 29501)
    assert t.node_rank.source == "PET_NODE_RANK=1"


def test_job_completion_index():
    t = topo(JOB_COMPLETION_INDEX="2", NODEWEAVE_NNODES="3", MASTER_ADDR="train-0.train")
    assert (t.node_rank.value, t.node_rank.source) == (2, "JOB_COMPLETION_INDEX=2")


def test_pod_index_label_with_statefulset_master():
    t = topo("sts-h100-roce", NODEWEAVE_POD_INDEX="2", NODEWEAVE_NNODES="4", NODEWEAVE_SERVICE="llama")
    assert summary(t) == (2, "4", "llama-0.llama.training.svc.cluster.local", 29500)
    assert t.node_rank.source == "NODEWEAVE_POD_INDEX=2"


def test_pod_index_disagreeing_with_hostname_ordinal_refuses():
    msg = fails(EXIT_TOPOLOGY, "sts-h100-roce", NODEWEAVE_POD_INDEX="1", NODEWEAVE_NNODES="4")
    assert "NODEWEAVE_POD_INDEX=1" in msg and "'llama-2'" in msg and "ordinal 2" in msg


def test_leaderworkerset():
    t = topo(LWS_WORKER_INDEX="3", LWS_GROUP_SIZE="4", LWS_LEADER_ADDRESS="lws-0.lws.default")
    assert summary(t) == (3, "4", "lws-0.lws.default", 29500)
    assert t.nnodes.source == "LWS_GROUP_SIZE=4"


def test_volcano():
    t = topo(VC_TASK_INDEX="1", VC_WORKER_HOSTS="job-worker-0.job,job-worker-1.job")
    assert summary(t) == (1, "2", "job-worker-0.job", 29500)


def test_skypilot():
    t = topo("desktop-rtx3090", SKYPILOT_NODE_RANK="1", SKYPILOT_NODE_IPS="10.1.0.4\n10.1.0.5\n10.1.0.6\n",
             SKYPILOT_NUM_NODES="3", SKYPILOT_NUM_GPUS_PER_NODE="1")
    assert summary(t) == (1, "3", "10.1.0.4", 29500)
    assert t.node_names == ["10.1.0.4", "10.1.0.5", "10.1.0.6"]
    assert t.nproc_per_node.value == 1


def test_slurm_compressed_nodelist():
    t = topo(SLURM_NODEID="4", SLURM_NNODES="5", SLURM_JOB_NODELIST="gpu[01-04,07]", SLURM_JOB_ID="881")
    assert summary(t) == (4, "5", "gpu01", 29500)
    assert t.node_names == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]
    assert t.master_addr.source == "first host of SLURM_JOB_NODELIST=gpu[01-04,07]"


def test_slurm_nodelist_alone_gives_the_count():
    t = topo(SLURM_NODEID="0", SLURM_JOB_NODELIST="a[1-2],b3")
    assert (t.nnodes.value, t.node_names) == ("3", ["a1", "a2", "b3"])


@pytest.mark.parametrize("text,hosts", [
    ("gpu[01-04,07]", ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]),
    ("a[1-2],b3", ["a1", "a2", "b3"]),
    ("node1,node2", ["node1", "node2"]),
    ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
    ("gpu[8-11]", ["gpu8", "gpu9", "gpu10", "gpu11"]),
    ("gpu[098-101]", ["gpu098", "gpu099", "gpu100", "gpu101"]),
    ("solo", ["solo"]),
])
def test_expand_nodelist(text, hosts):
    assert expand_nodelist(text) == hosts


@pytest.mark.parametrize("text", ["gpu[01-", "gpu]1[", "gpu[a-b]", "gpu[4-2]"])
def test_bad_nodelist_is_a_usage_error(text):
    assert "Slurm node list" in fails(EXIT_USAGE, SLURM_NODEID="0", SLURM_JOB_NODELIST=text)


def test_hostfile_position_gives_rank(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# LAN\n192.168.1.10 slots=2\nci-runner slots=2\n192.168.1.12 slots=2\n")  # a line
    # without slots among lines with them is refused (fix13d, tests/test_walk13_fix13d.py)
    t = topo(argv=["--hostfile", str(hostfile)])
    assert summary(t) == (1, "3", "192.168.1.10", 29500)
    assert t.nproc_per_node.value == 2
    assert t.node_names == ["192.168.1.10", "ci-runner", "192.168.1.12"]


def test_hostfile_matches_own_address(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("192.168.1.39 slots=1\n192.168.1.40 slots=1\n")
    assert topo(NODEWEAVE_HOSTFILE=str(hostfile)).node_rank.value == 1


def test_hostfile_without_this_host(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("a slots=1\nb slots=1\n")
    assert "not listed in hostfile" in fails(EXIT_TOPOLOGY, argv=["--hostfile", str(hostfile)])


def test_hostname_ordinal_in_a_statefulset_pod():
    t = topo("sts-h100-roce", NODEWEAVE_NNODES="4")
    assert (t.node_rank.value, t.node_rank.source) == (2, "ordinal of hostname 'llama-2'")
    assert t.master_addr.value == "llama-0"  # no NODEWEAVE_SERVICE: the bare pod name


def test_hostname_ordinal_compose_simulation():
    t = topo("compose-sim", NODEWEAVE_NNODES="2")
    assert summary(t) == (1, "2", "llama-0", 29500)
    assert t.master_addr.source == "pod/host 0 of 'llama' (no Service: compose or local)"


def test_host_name_with_digits_on_host_networking_is_not_a_rank():
    t = topo("mi300x", NODE_RANK="1", NNODES="2", MASTER_ADDR="mi300-00")
    assert (t.node_rank.value, t.node_rank.source) == (1, "NODE_RANK=1")
    assert any("host networking, so that is not a rank" in n for n in t.notes)


def test_pod_name_gives_the_ordinal_when_the_hostname_has_none():
    t = topo(POD_NAME="train-1", NODEWEAVE_NNODES="2")
    assert (t.node_rank.value, t.master_addr.value) == (1, "train-0")


def test_indexed_job_pod_name_suffix_is_not_an_ordinal():
    # Job pods are named <job>-<index>-<random>, and the random part can be all digits;
    # the hostname (<job>-<index>) and the completion index agree.
    t = topo("compose-sim", POD_NAME="llama-1-24567", NODEWEAVE_POD_INDEX="1", NODEWEAVE_NNODES="2",
             MASTER_ADDR="llama-0.llama", KUBERNETES_SERVICE_HOST="10.96.0.1")
    assert (t.node_rank.value, t.node_rank.source, t.master_addr.value) == (1, "NODEWEAVE_POD_INDEX=1", "llama-0.llama")


@pytest.mark.parametrize("name,expected", [
    ("llama-3", ("llama", 3)), ("my-job-12.svc.local", ("my-job", 12)), ("gpu-box", (None, None)),
    ("node7", (None, None)), ("-3", (None, None)),
])
def test_ordinal_parse(name, expected):
    assert ordinal(name) == expected


def test_statefulset_namespace_from_env_without_service_account(tmp_path):
    t = topo("cpu-only", POD_NAME="llama-1", POD_NAMESPACE="research", NODEWEAVE_SERVICE="llama",
             NODEWEAVE_NNODES="2", KUBERNETES_SERVICE_HOST="10.96.0.1")
    assert t.master_addr.value == "llama-0.llama.research.svc.cluster.local"


# --- StatefulSet replicas from the API -----------------------------------------


class Api(BaseHTTPRequestHandler):
    replicas = 4
    status = 200
    seen = []

    def do_GET(self):
        Api.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({"kind": "StatefulSet", "spec": {"replicas": Api.replicas}}).encode()
        self.send_response(Api.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    server = HTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Api.seen, Api.status, Api.replicas = [], 200, 4
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_statefulset_replicas_from_the_api(api):
    t = topo("sts-h100-roce", NODEWEAVE_SERVICE="llama", NODEWEAVE_KUBE_API=api, KUBERNETES_SERVICE_HOST="10.96.0.1")
    assert summary(t) == (2, "4", "llama-0.llama.training.svc.cluster.local", 29500)
    assert t.nnodes.source == "Kubernetes API statefulsets/llama .spec.replicas"
    path, auth = Api.seen[0]
    assert path == "/apis/apps/v1/namespaces/training/statefulsets/llama"
    assert auth == "Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6ImZpeHR1cmUifQ.fixture.token"


def test_scaled_statefulset_needs_no_yaml_edit(api):
    Api.replicas = 6
    t = topo("sts-h100-roce", NODEWEAVE_SERVICE="llama", NODEWEAVE_KUBE_API=api)
    assert (t.nnodes.value, t.world_size) == ("6", 24)


def test_api_forbidden_names_the_role(api):
    Api.status = 403
    msg = fails(EXIT_TOPOLOGY, "sts-h100-roce", NODEWEAVE_SERVICE="llama", NODEWEAVE_KUBE_API=api)
    assert "403" in msg and "get on statefulsets" in msg and "NODEWEAVE_NNODES" in msg


def test_api_unreachable():
    msg = fails(EXIT_TOPOLOGY, "sts-h100-roce", NODEWEAVE_KUBE_API="http://127.0.0.1:9")
    assert "cannot read statefulsets/llama" in msg


# --- elastic ---------------------------------------------------------------------


def test_elastic_range():
    t = topo("sts-h100-roce", NODEWEAVE_NNODES="2:6", NODEWEAVE_SERVICE="llama", NODEWEAVE_MASTER_PORT="29400")
    assert (t.elastic, t.nnodes_min, t.nnodes_max, t.world_size, t.job_id) == (True, 2, 6, None, "llama")


# --- conflicts and bad input ---------------------------------------------------


def test_disagreeing_sources_refuse_naming_both():
    msg = fails(EXIT_TOPOLOGY, NODE_RANK="1", SLURM_NODEID="0", NNODES="2", MASTER_ADDR="x")
    assert "NODE_RANK=1" in msg and "SLURM_NODEID=0" in msg


def test_disagreeing_node_counts_refuse():
    msg = fails(EXIT_TOPOLOGY, NODE_RANK="0", NNODES="2", SLURM_NNODES="4", SLURM_NODEID="0")
    assert "NNODES=2" in msg and "SLURM_NNODES=4" in msg


def test_agreeing_sources_are_noted():
    t = topo(NODE_RANK="1", SLURM_NODEID="1", NNODES="2", MASTER_ADDR="x")
    assert any("SLURM_NODEID=1 agrees with NODE_RANK=1" in n for n in t.notes)


def test_flag_overrides_a_platform_source_with_a_warning():
    plan = make_plan(["--node-rank", "1", "--", "t.py"], env={"SLURM_NODEID": "0", "SLURM_NNODES": "2",
                                                               "SLURM_JOB_NODELIST": "n[1-2]"},
                     sysroot=str(FIX / "cpu-only"))
    assert plan.topology.node_rank.value == 1
    assert any("overrides SLURM_NODEID=0" in w for w in plan.warnings)


def test_host_networking_without_rank_says_set_node_rank():
    msg = fails(EXIT_TOPOLOGY, "mi300x", NNODES="2", MASTER_ADDR="mi300-00")
    assert "'mi300-07' is the host's own name (host networking)" in msg and "set NODE_RANK=0..1" in msg
    msg = fails(EXIT_TOPOLOGY, "hgx-h100", NNODES="2", MASTER_ADDR="hgx-a00")
    assert "'hgx-a01' is the host's own name (host networking)" in msg


def test_nothing_set_is_a_single_node():
    t = topo()
    assert summary(t) == (0, "1", "127.0.0.1", 29500) and t.is_master


@pytest.mark.parametrize("env,needle", [
    ({"NODE_RANK": "one", "NNODES": "2"}, "node rank must be a whole number, got 'one' (from NODE_RANK=one)"),
    ({"NODE_RANK": "2", "NNODES": "2", "MASTER_ADDR": "m"}, "node rank 2 (from NODE_RANK=2) is not below the node count 2"),
    ({"NNODES": "0"}, "node count must be a whole number of 1 or more"),
    ({"NNODES": "4:2"}, "maximum nodes (2) must be >= minimum nodes (4)"),
    ({"NODE_RANK": "-1", "NNODES": "2"}, "node rank must be a whole number of 0 or more"),
    ({"MASTER_PORT": "70000"}, "master port must be 1..65535"),
    ({"NODEWEAVE_NPROC_PER_NODE": "0"}, "processes per node must be 1 or more"),
    ({"NODEWEAVE_LAUNCHER": "mpirun"}, "unknown launcher 'mpirun' (from NODEWEAVE_LAUNCHER); accepted: torchrun, deepspeed, accelerate, command"),
])
def test_bad_input_is_one_clear_usage_error(env, needle):
    assert needle in fails(EXIT_USAGE, **env)


def test_rank_without_count_or_master():
    assert "node count is unknown" in fails(EXIT_TOPOLOGY, NODE_RANK="3")
    assert "no master address" in fails(EXIT_TOPOLOGY, NODE_RANK="0", NNODES="2")


def test_nproc_above_the_usable_gpus_is_refused():
    """8 processes on a 4-GPU subset would put two ranks on a GPU (or fail in the launcher): refused before launch."""
    msg = fails(EXIT_TOPOLOGY, "hgx-h100", ["--nproc-per-node", "16"])
    assert "16 processes per node (from flag --nproc-per-node) but only 8 usable GPU(s)" in msg
    msg = fails(EXIT_TOPOLOGY, "hgx-h100", (), NODEWEAVE_NPROC_PER_NODE="8", CUDA_VISIBLE_DEVICES="0,2,4,6")
    assert "only 4 usable GPU(s)" in msg and "CUDA_VISIBLE_DEVICES" in msg
    plan = make_plan(["--nproc-per-node", "4", "--", "t.py"], env={"CUDA_VISIBLE_DEVICES": "0,2,4,6"},
                     sysroot=str(FIX / "hgx-h100"))
    assert plan.topology.nproc_per_node.value == 4


def test_statefulset_replicas_over_tls_with_the_service_account_ca(tmp_path):
    """The in-cluster path: https://$KUBERNETES_SERVICE_HOST, the token, the CA from the tree."""
    import shutil
    import ssl
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    root = tmp_path / "pod"
    shutil.copytree(FIX / "sts-h100-roce", root, symlinks=True)
    shutil.copy(cert, root / "var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
    server = HTTPServer(("127.0.0.1", 0), Api)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Api.seen, Api.status, Api.replicas = [], 200, 3
    try:
        plan = make_plan(["--", "t.py"], env={"NODEWEAVE_SERVICE": "llama", "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                                             "KUBERNETES_SERVICE_PORT": str(server.server_address[1])},
                         sysroot=str(root))
    finally:
        server.shutdown()
    assert plan.topology.nnodes.value == "3"
    assert Api.seen[0][1].startswith("Bearer ")


# -- what the mutation check (benchmarks/mutation_check.py) showed untested -----------------------------------


@pytest.mark.parametrize("count", ["0", "0:2", "1:0", "2:0"])
def test_a_zero_anywhere_in_the_node_count_is_refused_as_such(count):
    assert f"node count must be a whole number of 1 or more, got {count!r}" in fails(EXIT_USAGE, NODE_RANK="0", NNODES=count,
                                                                     MASTER_ADDR="m")


def test_the_master_port_runs_from_1_to_65535():
    assert topo(NODE_RANK="0", NNODES="1", MASTER_PORT="1").master_port.value == 1
    assert topo(NODE_RANK="0", NNODES="1", MASTER_PORT="65535").master_port.value == 65535
    assert "master port must be 1..65535, got 65536" in fails(EXIT_USAGE, NODE_RANK="0", NNODES="1",
                                                               MASTER_PORT="65536")


def test_auto_processes_on_a_node_without_gpus_is_one():
    assert topo(NODE_RANK="0", NNODES="1", NODEWEAVE_NPROC_PER_NODE="auto").nproc_per_node.value == 1


def test_a_rank_beyond_the_count_names_the_ranks_that_exist():
    assert "ranks run 0..2" in fails(EXIT_USAGE, NODE_RANK="3", NNODES="3", MASTER_ADDR="m")


def test_a_rank_without_a_node_count_is_refused_and_rank_0_runs_alone():
    assert "node rank 1 (from NODE_RANK=1) but the node count is unknown" in fails(EXIT_TOPOLOGY, NODE_RANK="1",
                                                                                   MASTER_ADDR="m")
    assert topo(NODE_RANK="0").nnodes.value == "1"


def test_addresses_contradict_only_when_both_are_literal():
    from nodeweave.entrypoint.planning.topology import _contradicts

    assert _contradicts("master_addr", "10.0.0.1", "10.0.0.2") and _contradicts("master_addr", "fd00::1", "10.0.0.1")
    assert not _contradicts("master_addr", "head", "10.0.0.1") and not _contradicts("master_addr", "10.0.0.1", "head")
    assert not _contradicts("master_addr", "10.0.0.1", "10.0.0.1") and _contradicts("nnodes", "2", "3")


def test_a_hostfile_names_the_bad_line_and_refuses_slots_that_are_no_number(tmp_path):
    """sources.read_hostfile (a separate test: another change adds rank sources beside it)."""
    from nodeweave.entrypoint.errors import UsageError as EntrypointUsage
    from nodeweave.entrypoint.planning.sources import read_hostfile

    good = tmp_path / "hosts"
    good.write_text("# the job\nh0 slots=2 # first # node\nh1 slots=2 max_slots=4\nh2\n")
    assert read_hostfile(str(good)) == [("h0", 2), ("h1", 2), ("h2", None)]  # max_slots alone: walk8 B8
    bad = tmp_path / "bad"
    bad.write_text("h0 slots=x\n")
    with pytest.raises(EntrypointUsage) as err:
        read_hostfile(str(bad))
    assert "line 1: expected '<host> slots=<n>', got 'h0 slots=x'" in str(err.value)
