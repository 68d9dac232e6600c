"""recovery.spares on every target: each platform runs nodes + spares, tells the training count, and keeps a lost
node's failure from ending the whole job while node 0 recovers in place (docs/recovery.md, "On each platform").

The counts and policies are read from the rendered files; each platform's environment for its *last* task (a
spare) is then fed to the entrypoint's own recovery set-up, with the values the platform adds (the StatefulSet's
pod index, JOB_COMPLETION_INDEX, Trainer's PET_*, Slurm's SLURM_*), on a captured node: every one must find
itself node 2 of 3 containers, 2 of them training, so a spare. The real validators (kubernetes-validate, the
JobSet and Trainer schemas) judge the same files in tests/test_manifests.py and tests/test_cluster_targets.py
(spec ``recovery``).
"""

from __future__ import annotations

import functools
import shlex
from pathlib import Path

import pytest
import yaml

from nodeweave.entrypoint.core import build_plan
from nodeweave.entrypoint.planning.settings import parse
from nodeweave.entrypoint.recovery.setup import Config, identity_settings
from nodeweave.rendering import render_targets
from nodeweave.spec import load_spec, parse_spec
from test_entrypoint_contract import pod_env, with_hostname

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "tests" / "golden" / "manifests" / "specs" / "recovery.yaml"
TARGETS = ("manifests", "jobset", "trainjob", "slurm")
NODE = "sts-h100-roce"  # a captured node with 4 usable GPUs: the spec's gpus_per_node


@functools.lru_cache(maxsize=None)
def files(text: str = None):
    spec = parse_spec(text, "nodeweave.yaml") if text else load_spec(SPEC)
    return render_targets(spec, TARGETS)


def doc(rel: str, text: str = None):
    return yaml.safe_load(files(text)[rel])


def without_recovery() -> str:
    """The spec with recovery off: no recovery block (its fields set with recovery off are refused at validate)."""
    return "".join(line for line in SPEC.read_text().splitlines(keepends=True) if not line.startswith("recovery:"))


def job_spec(jobset: dict) -> dict:
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]


def slurm_exports(script: str) -> dict:
    pairs = [shlex.split(line[len("export "):])[0] for line in script.splitlines() if line.startswith("export ")]
    return dict(pair.split("=", 1) for pair in pairs)


def directives(script: str) -> list:
    return [line.split(" ", 1)[1] for line in script.splitlines() if line.startswith("#SBATCH ")]


# -- the counts ---------------------------------------------------------------------------------------


def test_every_target_runs_nodes_plus_spares():
    assert doc("manifests/base/statefulset.yaml")["spec"]["replicas"] == 3
    job = doc("manifests/job/job.yaml")["spec"]
    assert job["completions"] == job["parallelism"] == 3
    inner = job_spec(doc("jobset/jobset.yaml"))
    assert inner["completions"] == inner["parallelism"] == 3
    assert doc("kubeflow/trainjob.yaml")["spec"]["trainer"]["numNodes"] == 3
    assert "--nodes=3" in directives(files()["slurm/job.sbatch"])


def test_without_recovery_no_spare_runs_anywhere():
    off = without_recovery()
    assert doc("manifests/base/statefulset.yaml", off)["spec"]["replicas"] == 2
    assert doc("manifests/job/job.yaml", off)["spec"]["completions"] == 2
    assert job_spec(doc("jobset/jobset.yaml", off))["completions"] == 2
    assert doc("kubeflow/trainjob.yaml", off)["spec"]["trainer"]["numNodes"] == 2
    script = files(off)["slurm/job.sbatch"]
    assert "--nodes=2" in directives(script) and "--no-kill" not in directives(script)
    assert "NODEWEAVE_NNODES" not in slurm_exports(script) and "--kill-on-bad-exit=1" in script


def test_min_nodes_with_spares_asks_slurm_for_every_training_node_and_the_spares():
    """Under recovery every target starts nodes + spares (Spec.containers), Slurm too; min_nodes is the floor."""
    text = SPEC.read_text().replace("nodes: 2", "nodes: 4").replace("spares: 1", "spares: 1, min_nodes: 2")
    script = files(text)["slurm/job.sbatch"]
    assert "--nodes=5" in directives(script) and slurm_exports(script)["NODEWEAVE_NNODES"] == "2:4"
    job = doc("manifests/job/job.yaml", text)["spec"]
    assert job["completions"] == 5 and job["maxFailedIndexes"] == 3  # the spare, and the elastic room of 2


# -- who restarts a lost node --------------------------------------------------------------------------


def test_a_jobs_lost_pod_is_recreated_once_and_the_job_fails_only_when_recovery_gave_up():
    for job in (doc("manifests/job/job.yaml")["spec"], job_spec(doc("jobset/jobset.yaml"))):
        assert "backoffLimit" not in job, "a total limit would count every lost pod against the whole job"
        assert (job["backoffLimitPerIndex"], job["maxFailedIndexes"]) == (1, 1)
        gave_up, evicted = job["podFailurePolicy"]["rules"]
        assert gave_up == {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [8, 9, 10]}}
        assert evicted["action"] == "Ignore" and evicted["onPodConditions"][0]["type"] == "DisruptionTarget"
    assert doc("jobset/jobset.yaml")["spec"]["failurePolicy"] == {"maxRestarts": 0}


def test_without_recovery_the_first_failed_pod_still_fails_the_job():
    job = doc("manifests/job/job.yaml", without_recovery())["spec"]
    assert job["backoffLimit"] == 0 and "backoffLimitPerIndex" not in job
    assert [rule["action"] for rule in job["podFailurePolicy"]["rules"]] == ["Ignore"]


def test_slurm_keeps_the_allocation_and_the_step_when_one_node_or_task_dies():
    script = files()["slurm/job.sbatch"]
    assert "--no-kill" in directives(script)
    assert script.count("--kill-on-bad-exit=0") == 3 and "--kill-on-bad-exit=1" not in script


# -- each platform's last task finds itself a spare -------------------------------------------------------


def as_spare(env: dict, root: str):
    """(node identity, containers, training nodes, spares) the entrypoint's recovery set-up works out."""
    given = parse(["train.py"], {"PATH": "/usr/bin:/bin", **env})
    given.sysroot = root
    plan = build_plan(identity_settings(given))  # as recovery/generations.py: who this container is
    config = Config(given, plan.topology)
    return plan.topology.node_rank.value, config.nodes, config.slots, config.spares


def downward(pod: str, index_field: str) -> dict:
    return {"metadata.name": pod, "metadata.namespace": "ml-training", "status.podIP": "10.128.2.15",
            index_field: "2"}


POD_INDEX = "metadata.labels['apps.kubernetes.io/pod-index']"
JOB_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def statefulset_env():
    container = doc("manifests/base/statefulset.yaml")["spec"]["template"]["spec"]["containers"][0]
    return pod_env(container, downward("resilient-2", POD_INDEX)), "resilient-2"


def job_env():
    container = doc("manifests/job/job.yaml")["spec"]["template"]["spec"]["containers"][0]
    return {**pod_env(container, downward("resilient-2-x7k2p", JOB_INDEX)), "JOB_COMPLETION_INDEX": "2"}, "resilient-2"


def jobset_env():
    container = job_spec(doc("jobset/jobset.yaml"))["template"]["spec"]["containers"][0]
    env = pod_env(container, downward("resilient-node-0-2-x7k2p", JOB_INDEX))
    return {**env, "JOB_COMPLETION_INDEX": "2"}, "resilient-node-0-2"


def trainjob_env():
    trainer = doc("kubeflow/trainjob.yaml")["spec"]["trainer"]
    env = pod_env(trainer, downward("resilient-node-0-2-x7k2p", JOB_INDEX))
    # Trainer's torch plugin: PET_NNODES is numNodes, the spares included.
    env.update({"PET_NNODES": "3", "PET_NPROC_PER_NODE": "4", "PET_NODE_RANK": "2", "JOB_COMPLETION_INDEX": "2",
                "PET_MASTER_ADDR": "resilient-node-0-0.resilient", "PET_MASTER_PORT": "29500"})
    return env, "resilient-node-0-2"


def slurm_env():
    env = slurm_exports(files()["slurm/job.sbatch"])
    env.update({"SLURM_JOB_ID": "41", "SLURM_NODEID": "2", "SLURM_NNODES": "3", "SLURM_JOB_NUM_NODES": "3",
                "SLURM_JOB_NODELIST": "gpu[01-03]", "SLURM_PROCID": "2", "SLURM_NTASKS": "3", "SLURM_LOCALID": "0",
                "SLURMD_NODENAME": "gpu03"})
    return env, "gpu03"


@pytest.mark.parametrize("platform", [statefulset_env, job_env, jobset_env, trainjob_env, slurm_env],
                         ids=lambda f: f.__name__[:-4])
def test_the_last_task_of_every_platform_is_a_spare(platform, tmp_path):
    env, hostname = platform()
    root = with_hostname(tmp_path, NODE, hostname)
    assert as_spare(env, root) == (2, 3, 2, 1)


def test_up_on_slurm_takes_the_spares_and_its_run_step_tells_the_training_count(tmp_path):
    """`nodeweave up --target slurm` asks salloc for what the script asks sbatch; each run step's node is told
    NODEWEAVE_NNODES, as the script exports it."""
    from nodeweave.cluster import ClusterOptions, open_backend

    path = tmp_path / "nodeweave.yaml"
    path.write_text(SPEC.read_text() + 'slurm: {runtime: host, partition: debug, time: "10:00"}\n')
    spec = load_spec(path)
    backend = open_backend(spec, path, ClusterOptions(target="slurm", slurm_job="42").checked())
    argv = backend._allocation_argv()
    assert "--nodes=3" in argv and "--no-kill" in argv, argv
    script = render_targets(spec, ["slurm"])["slurm/job.sbatch"]
    assert argv[2:-1] == directives(script), "salloc and sbatch ask for the same allocation"
    assert argv[-1].startswith("--comment=nodeweave-job "), argv  # and up's mark: the job and its folder
    nodes = backend._nodes(["gpu01", "gpu02", "gpu03"], "42")
    assert dict(nodes[2].env)["NODEWEAVE_NNODES"] == "2" and dict(nodes[2].env)["NODEWEAVE_SPARES"] == "1"


# -- compose over ssh and bare hosts: the hosts list names the spares last ------------------------------

HOSTS_SPEC = """name: lan
image: {variant: cpu}
hosts: [desk1, desk2, desk3]
launcher: {script: train.py}
recovery: {enabled: true, spares: 1}
"""


def test_a_spec_hosts_list_names_the_training_nodes_then_the_spares():
    spec = parse_spec(HOSTS_SPEC, "nodeweave.yaml")
    assert (spec.nodes.min, spec.nodes.max, spec.recovery.spare_nodes) == (2, 2, 1)
    assert parse_spec(HOSTS_SPEC.replace("name: lan", "name: lan\nnodes: 2"), "nodeweave.yaml").nodes.min == 2
    from nodeweave.targets.compose import render_files

    rendered = render_files(spec)
    assert rendered["compose/hosts"].split()[-3:] == ["desk1", "desk2", "desk3"]
    node = yaml.safe_load(rendered["compose/node.yaml"])["services"]["node"]["environment"]
    assert node["NODEWEAVE_NNODES"].endswith("2}") and node["NODEWEAVE_SPARES"] == "1"


@pytest.mark.parametrize("text, says", [
    (HOSTS_SPEC.replace("name: lan", "name: lan\nnodes: 3"),
     "nodes: 3 does not match the 3 hosts listed in hosts, less recovery.spares 1 (the last hosts)"),
    (HOSTS_SPEC.replace("spares: 1", "spares: 3"), "3 host(s) leave no training node beside recovery.spares 3"),
])
def test_a_hosts_list_without_room_for_the_spares_is_one_line_naming_both(text, says):
    from nodeweave.errors import UsageError

    with pytest.raises(UsageError) as err:
        parse_spec(text, "nodeweave.yaml")
    assert says in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_up_on_hosts_takes_the_spares_last_and_refuses_a_list_without_them():
    from nodeweave.cluster.options import check_host_count
    from nodeweave.errors import UsageError
    from nodeweave.spec.model import NodeRange

    check_host_count(("a", "b", "c"), NodeRange(2, 2), spares=1)
    with pytest.raises(UsageError, match=r"2 host\(s\) for a spec of nodes: 2 and recovery.spares: 1 \(a, b\); give 3"):
        check_host_count(("a", "b"), NodeRange(2, 2), spares=1)
