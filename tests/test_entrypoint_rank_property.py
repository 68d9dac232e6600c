"""Property: random rank sources over N simulated nodes never give two nodes one rank.

Each example simulates a job of N nodes. Every node gets the truth from its
scheduler (a StatefulSet pod name, the pod-index label, an Indexed Job,
compose hostnames, Slurm, SkyPilot, LWS, a hostfile, per-host NODE_RANK, or a
platform: dstack, AWS Batch, Google Cloud Batch, SageMaker, Azure ML, MPI),
then the same template adds variables a user may have baked in: a rank, a
node count, WORLD_SIZE, RANK, processes per node, each right, wrong for every
node alike, or wrong per node. Whatever the mix, the nodes that plan agree on
the node count and the world size (nodes x processes), and no two of them get
the same rank; a node with a contradiction refuses instead. With nothing
wrong, every node plans and the ranks are 0..N-1.
"""

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nodeweave.entrypoint import EntrypointError, make_plan

FIX = Path(__file__).parent / "fixtures" / "synthetic"
MAX_NODES = 4
K8S = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "POD_NAMESPACE": "ml"}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """Per node i: a pod named job-i (cpu-only), a compose container llama-i, the bare CPU host, and a host with two
    GPUs (a platform that states its GPU count runs on GPUs: on a node that sees none that count is refused, walk15b
    B17)."""
    base = tmp_path_factory.mktemp("nodes")
    out = {"pod": [], "compose": [], "host": [str(FIX / "cpu-only")] * MAX_NODES,
           "gpu_host": [str(FIX / "desktop-2x3090")] * MAX_NODES}
    for i in range(MAX_NODES):
        for kind, fixture, name in (("pod", "cpu-only", f"job-{i}"), ("compose", "compose-sim", f"llama-{i}")):
            root = base / f"{kind}-{i}"
            shutil.copytree(FIX / fixture, root, symlinks=True)
            (root / "etc/hostname").write_text(name + "\n")
            out[kind].append(str(root))
    out["hostfile"] = str(base / "hostfile")  # written per example (node count, slots)
    return out


def truth(kind, i, n, nproc, roots):
    """(root, env) of node i of n (nproc processes each) as its scheduler starts it."""
    if kind == "statefulset":
        return roots["pod"][i], {**K8S, "POD_NAME": f"job-{i}", "NODEWEAVE_SERVICE": "job", "NODEWEAVE_NNODES": str(n)}
    if kind == "pod-index":
        return roots["pod"][i], {**K8S, "NODEWEAVE_POD_INDEX": str(i), "NODEWEAVE_SERVICE": "job",
                                 "NODEWEAVE_NNODES": str(n)}
    if kind == "indexed-job":
        return roots["pod"][i], {**K8S, "JOB_COMPLETION_INDEX": str(i), "NODEWEAVE_NNODES": str(n),
                                 "MASTER_ADDR": "job-0.job"}
    if kind == "compose":
        return roots["compose"][i], {"NODEWEAVE_NNODES": str(n)}
    if kind == "slurm":
        return roots["host"][i], {"SLURM_NODEID": str(i), "SLURM_NNODES": str(n), "SLURM_JOB_NODELIST": f"n[1-{n}]"}
    if kind == "slurm-nodename":
        return roots["host"][i], {"SLURMD_NODENAME": f"n{i + 1}", "SLURM_JOB_NODELIST": f"n[1-{n}]"}
    if kind == "skypilot":
        return roots["host"][i], {"SKYPILOT_NODE_RANK": str(i), "SKYPILOT_NUM_NODES": str(n),
                                  "SKYPILOT_NODE_IPS": "\n".join(f"10.1.0.{k + 1}" for k in range(n))}
    if kind == "lws":
        return roots["host"][i], {"LWS_WORKER_INDEX": str(i), "LWS_GROUP_SIZE": str(n), "LWS_LEADER_ADDRESS": "lws-0"}
    if kind == "hostfile":
        path = Path(roots["hostfile"]).with_name(f"hostfile-{n}-{nproc}")
        path.write_text("".join(f"job-{k} slots={nproc}\n" for k in range(n)))
        return roots["pod"][i], {"NODEWEAVE_HOSTFILE": str(path)}
    if kind in PLATFORMS:
        return PLATFORMS[kind](i, n, nproc, roots)
    assert kind == "per-host"
    return roots["host"][i], {"NODE_RANK": str(i), "NNODES": str(n), "MASTER_ADDR": "10.1.0.1"}


def _aws_batch(i, n, nproc, roots):
    """The main node (node 0) has the last index, so node i has index i - 1; only children get its address."""
    main = n - 1
    env = {"AWS_BATCH_JOB_NODE_INDEX": str((i + main) % n), "AWS_BATCH_JOB_NUM_NODES": str(n),
           "AWS_BATCH_JOB_MAIN_NODE_INDEX": str(main)}
    if i:
        env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "192.168.1.40"  # the cpu-only tree's own address
    return roots["host"][i], env


def _google_batch(i, n, nproc, roots):
    path = Path(roots["hostfile"]).with_name(f"batch-hosts-{n}")
    path.write_text("".join(f"job-{k}\n" for k in range(n)))
    return roots["pod"][i], {"BATCH_TASK_INDEX": str(i), "BATCH_TASK_COUNT": str(n), "BATCH_HOSTS_FILE": str(path)}


PLATFORMS = {
    "dstack": lambda i, n, nproc, roots: (roots["gpu_host"][i], {
        "DSTACK_NODE_RANK": str(i), "DSTACK_NODES_NUM": str(n), "DSTACK_GPUS_PER_NODE": str(nproc),
        "DSTACK_MASTER_NODE_IP": "10.1.0.1", "DSTACK_NODES_IPS": "\n".join(f"10.1.0.{k + 1}" for k in range(n))}),
    "aws-batch": _aws_batch,
    "google-batch": _google_batch,
    "sagemaker": lambda i, n, nproc, roots: (roots["gpu_host"][i], {
        "SM_CURRENT_HOST": f"algo-{i + 1}", "SM_HOSTS": json.dumps([f"algo-{k + 1}" for k in range(n)]),
        "SM_NUM_GPUS": str(nproc)}),
    "azure-ml": lambda i, n, nproc, roots: (roots["host"][i], {
        "AZ_BATCHAI_TASK_INDEX": str(i), "AZUREML_NODE_COUNT": str(n), "AZ_BATCH_MASTER_NODE": "10.1.0.1:6105",
        "NODE_RANK": str(i), "MASTER_ADDR": "10.1.0.1", "MASTER_PORT": "6105"}),
    "mpi": lambda i, n, nproc, roots: (roots["host"][i], {
        "OMPI_COMM_WORLD_RANK": str(i), "PMIX_RANK": str(i), "OMPI_COMM_WORLD_SIZE": str(n),
        "OMPI_COMM_WORLD_LOCAL_SIZE": "1", "MASTER_ADDR": "10.1.0.1"}),
}


TRUTHS = ["statefulset", "pod-index", "indexed-job", "compose", "slurm", "slurm-nodename", "skypilot", "lws",
          "hostfile", "per-host", *PLATFORMS]
# How a baked-in variable relates to the truth: absent, right, one wrong value for all nodes, wrong per node
# (drawn, so it may happen to be right). Absent and right weigh double, so many examples plan on every node.
MODES = st.sampled_from(["absent", "absent", "right", "right", "same", "per-node"])


@st.composite
def jobs(draw):
    n = draw(st.integers(1, MAX_NODES))
    return {
        "n": n, "truth": draw(st.sampled_from(TRUTHS)),
        "rank_var": draw(st.sampled_from(["NODEWEAVE_NODE_RANK", "NODE_RANK", "PET_NODE_RANK"])),
        "rank": draw(MODES), "count": draw(MODES), "world": draw(MODES), "RANK": draw(MODES),
        "nproc": draw(st.sampled_from([None, 1, 2])),
        "wrong": draw(st.lists(st.integers(0, 9), min_size=MAX_NODES, max_size=MAX_NODES)),
    }


def _value(mode, right, wrong_same, wrong_i):
    return {"absent": None, "right": right, "same": wrong_same, "per-node": wrong_i}[mode]


def node_env(job, i, roots):
    n, nproc = job["n"], job["nproc"] or 1
    root, env = truth(job["truth"], i, n, nproc, roots)
    wrong = job["wrong"][i]
    baked = {
        job["rank_var"]: _value(job["rank"], i, job["wrong"][0], wrong),
        "NNODES": _value(job["count"], n, n + 1 + job["wrong"][0] % 2, max(1, wrong)),
        "WORLD_SIZE": _value(job["world"], n * nproc, n * nproc + 3, wrong + 1),
        "RANK": _value(job["RANK"], i * nproc, n * nproc + 5, wrong + n * nproc),
        "NODEWEAVE_NPROC_PER_NODE": job["nproc"],
    }
    for name, value in baked.items():
        if value is not None and name not in env:
            env[name] = str(value)
    return root, env


def _nothing_wrong(job):
    return all(job[k] in ("absent", "right") for k in ("rank", "count", "world", "RANK"))


def _job(truth, n=3, **modes):
    job = {"n": n, "truth": truth, "rank_var": "NODE_RANK", "rank": "absent", "count": "absent", "world": "absent",
           "RANK": "absent", "nproc": None, "wrong": [0, 1, 1, 2]}
    job.update(modes)
    return job


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(job=jobs())
# The cases that hung jobs before: a rank baked into a template every pod shares, beside the pod's own identity.
@example(job=_job("statefulset", rank="same"))
@example(job=_job("statefulset", rank="same", rank_var="PET_NODE_RANK"))
@example(job=_job("compose", rank="same", rank_var="NODEWEAVE_NODE_RANK"))
@example(job=_job("indexed-job", n=2, rank="same"))
@example(job=_job("statefulset", n=4, rank="same", count="per-node"))
@example(job=_job("per-host", RANK="same"))
# The platforms: a baked rank beside AWS Batch's shifted main node, a wrong count beside SageMaker's hosts.
@example(job=_job("aws-batch", n=3))
@example(job=_job("aws-batch", n=3, rank="same"))
@example(job=_job("sagemaker", n=4, count="same"))
@example(job=_job("mpi", n=2, rank="per-node", rank_var="PET_NODE_RANK"))
def test_nodes_that_plan_never_share_a_rank_and_agree_on_the_world(roots, job):
    plans, refusals = [], []
    for i in range(job["n"]):
        root, env = node_env(job, i, roots)
        try:
            plans.append((i, make_plan(["--no-wait", "--", "train.py"], env=env, sysroot=root)))
        except EntrypointError as err:
            assert err.exit_code in (2, 3) and "\n" not in str(err)
            refusals.append((i, str(err)))
    ranks = [p.topology.node_rank.value for _, p in plans]
    assert len(ranks) == len(set(ranks)), (job, ranks, refusals)
    for _, p in plans:
        t = p.topology
        assert 0 <= t.node_rank.value < t.nnodes_max
        assert t.world_size == t.nnodes_max * t.nproc_per_node.value
        exported = {v.name: v.value for v in p.env if v.action == "export"}
        assert exported["WORLD_SIZE"] == str(t.world_size) and exported["NODE_RANK"] == str(t.node_rank.value)
    assert len({(p.topology.nnodes.value, p.topology.world_size) for _, p in plans}) <= 1, (job, refusals)
    if _nothing_wrong(job):
        assert not refusals, (job, refusals)
        assert sorted(ranks) == list(range(job["n"])) and all(i == p.topology.node_rank.value for i, p in plans)
