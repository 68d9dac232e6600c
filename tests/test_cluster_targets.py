"""The optional cluster targets: OpenShift builds, a Kubeflow Trainer TrainJob, a JobSet.

Every object is validated strictly: Kubernetes kinds by kubernetes-validate
(1.29-1.33), OpenShift's BuildConfig/ImageStream and the Trainer and JobSet
CRDs by the schemas their projects publish (tests/schemas.py). The overlays
are built by kubectl's kustomize against the rendered manifests/ tree, and the
environment each target gives its pods is fed to the entrypoint on a captured
node with the values the platform adds (JOB_COMPLETION_INDEX, Trainer's PET_*).
Goldens: ``NODEWEAVE_UPDATE_GOLDEN=1 pytest tests/test_cluster_targets.py``.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import schemas
from nodeweave.entrypoint import make_plan
from nodeweave.rendering import render_targets
from nodeweave.spec import load_spec
from test_entrypoint_contract import pod_env, with_hostname
from test_manifests import kubectl_problem, needs_kustomize, validate_strict, write_tree

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "targets"
SPECS = {"cuda": REPO / "tests/golden/manifests/specs/cuda.yaml", "full": REPO / "tests/golden/manifests/specs/full.yaml",
         "elastic": REPO / "tests/golden/manifests/specs/elastic.yaml", "git-build": GOLDEN / "specs/git-build.yaml",
         "recovery": REPO / "tests/golden/manifests/specs/recovery.yaml"}
TARGETS = ("openshift-build", "trainjob", "jobset")


@functools.lru_cache(maxsize=None)
def files_of(case: str):
    return render_targets(load_spec(SPECS[case]), TARGETS)


def objects_of(case: str, prefix: str):
    return [yaml.safe_load(text) for rel, text in files_of(case).items()
            if rel.startswith(prefix) and not rel.endswith("kustomization.yaml")]


def one(case: str, rel: str):
    return yaml.safe_load(files_of(case)[rel])


@pytest.mark.parametrize("case", sorted(SPECS))
def test_golden_files(case):
    folder = GOLDEN / case
    if os.environ.get("NODEWEAVE_UPDATE_GOLDEN") == "1":
        shutil.rmtree(folder, ignore_errors=True)
        write_tree(files_of(case), folder)
    on_disk = {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert sorted(on_disk) == sorted(files_of(case))
    for rel, text in files_of(case).items():
        assert text == on_disk[rel], f"{case}: {rel} differs from its golden file"


@pytest.mark.parametrize("case", sorted(SPECS))
def test_every_object_validates_against_its_published_schema(case):
    for rel, text in files_of(case).items():
        if rel.endswith("kustomization.yaml") or "-trigger.yaml" in rel:
            continue  # kustomize inputs; their built result is validated below
        obj = yaml.safe_load(text)
        if schemas.has_schema(obj):
            assert schemas.errors(obj) == [], f"{case}: {rel}"
        else:
            validate_strict(obj, f"{case}: {rel}")


def test_the_schemas_are_live():
    trainjob = one("full", "kubeflow/trainjob.yaml")
    trainjob["spec"]["trainer"]["numNode"] = 2
    assert any("numNode" in e for e in schemas.errors(trainjob))
    jobset = one("full", "jobset/jobset.yaml")
    jobset["spec"]["replicatedJobs"][0]["replicas"] = "one"
    assert schemas.errors(jobset)
    build = one("full", "openshift/build/buildconfig.yaml")
    build["spec"]["strategy"]["dockerStrategy"]["dockerfile_path"] = "x"
    assert schemas.errors(build)


# -- OpenShift builds ----------------------------------------------------------------------------------


def test_buildconfig_builds_the_rendered_dockerfile_into_the_imagestream():
    build, stream = one("full", "openshift/build/buildconfig.yaml"), one("full", "openshift/build/imagestream.yaml")
    assert build["spec"]["strategy"] == {"type": "Docker", "dockerStrategy": {"dockerfilePath": "images/cuda12/Dockerfile"}}
    assert build["spec"]["source"] == {"type": "Binary", "binary": {}} and "triggers" not in build["spec"]
    assert build["spec"]["output"]["to"] == {"kind": "ImageStreamTag", "name": "full-job:cuda12"}
    assert stream["metadata"]["name"] == "full-job" and stream["spec"]["lookupPolicy"] == {"local": True}
    git = one("git-build", "openshift/build/buildconfig.yaml")
    assert git["spec"]["source"] == {"type": "Git", "git": {"uri": "https://github.com/example/titan-train.git", "ref": "main"}}
    assert git["spec"]["triggers"] == [{"type": "ConfigChange"}]
    assert git["spec"]["output"]["to"]["name"] == "titan-elastic:v2", "a fixed image.tag names the stream tag"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if kubectl_problem():
        pytest.skip(kubectl_problem())
    out = {}
    for case in ("full", "git-build"):
        root = write_tree({**render_targets(load_spec(SPECS[case]), ["manifests"]), **files_of(case)},
                          tmp_path_factory.mktemp(case))
        for folder in ("openshift/build", "openshift/deploy", "openshift/job", "kubeflow", "jobset"):
            run = subprocess.run(["kubectl", "kustomize", str(root / folder)], capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, f"kustomize build {folder} failed:\n{run.stderr}"
            out[case, folder] = [d for d in yaml.safe_load_all(run.stdout) if d]
    return out


@needs_kustomize
@pytest.mark.parametrize("folder, kind", [("openshift/deploy", "StatefulSet"), ("openshift/job", "Job")])
def test_workloads_follow_the_imagestream_tag(built, folder, kind):
    for case in ("full", "git-build"):
        objects = built[case, folder]
        for obj in objects:
            if schemas.has_schema(obj):
                assert schemas.errors(obj) == []
            else:
                validate_strict(obj, f"{case}: kustomize build {folder}")
        (workload,) = [o for o in objects if o["kind"] == kind]
        stream_tag = one(case, "openshift/build/buildconfig.yaml")["spec"]["output"]["to"]["name"]
        (trigger,) = json.loads(workload["metadata"]["annotations"]["image.openshift.io/triggers"])
        assert trigger == {"from": {"kind": "ImageStreamTag", "name": stream_tag},
                           "fieldPath": 'spec.template.spec.containers[?(@.name=="trainer")].image'}
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        assert container["image"] == stream_tag, "before the first build, the local lookup names the tag"
        if kind == "StatefulSet":  # the openshift overlay underneath: restricted-v2 shape
            assert "runAsUser" not in workload["spec"]["template"]["spec"]["securityContext"]


# -- TrainJob and JobSet --------------------------------------------------------------------------------


def test_trainjob_uses_the_torch_runtime_and_the_images_entrypoint():
    spec = load_spec(SPECS["full"])
    job = one("full", "kubeflow/trainjob.yaml")["spec"]
    assert job["runtimeRef"] == {"name": "torch-distributed"}
    trainer = job["trainer"]
    assert trainer["command"] == ["tini", "-g", "--", "nodeweave-entrypoint"]
    assert trainer["args"] == [spec.launcher.script, *spec.launcher.args]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (4, 4)
    assert not any(e["name"].startswith("PET_") for e in trainer["env"]), "Trainer refuses its reserved PET_* names"
    (patch,) = job["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = patch["template"]["spec"]["template"]
    assert patch["name"] == "node" and pod["spec"]["containers"][0]["name"] == "node"
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].startswith("sriov-eno5@net1")
    assert {v["name"] for v in pod["spec"]["volumes"]} >= {"workspace", "dshm", "datasets", "hf-token", "hugepages"}


def test_jobset_is_one_replicated_indexed_job_behind_its_own_service():
    spec = load_spec(SPECS["full"])
    js = one("full", "jobset/jobset.yaml")["spec"]
    assert js["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True, "subdomain": "full-job"}
    (rjob,) = js["replicatedJobs"]
    job = rjob["template"]["spec"]
    assert rjob["name"] == "node" and rjob["replicas"] == 1
    assert job["completionMode"] == "Indexed" and job["completions"] == job["parallelism"] == spec.nodes.max
    assert "subdomain" not in job["template"]["spec"], "JobSet sets its pods' subdomain itself"
    env = {e["name"]: e.get("value") for e in job["template"]["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == "full-job-node-0-0.full-job" and env["NODEWEAVE_NNODES"] == "4"


DOWNWARD = {"metadata.name": "full-job-node-0-2-x7k2p", "metadata.namespace": "nccl-test", "status.podIP": "10.128.2.15",
            "metadata.annotations['batch.kubernetes.io/job-completion-index']": "2"}


def test_a_jobset_pod_plans_its_rank_and_master(tmp_path):
    container = one("full", "jobset/jobset.yaml")["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]
    env = {**pod_env(container, DOWNWARD), "JOB_COMPLETION_INDEX": "2"}  # the Job controller adds it
    root = with_hostname(tmp_path, "sts-h100-roce", "full-job-node-0-2")
    t = make_plan(["--no-wait", "--", *container["args"]], env=env, sysroot=root).topology
    assert (t.node_rank.value, t.nnodes.value, t.master_addr.value) == (2, "4", "full-job-node-0-0.full-job")


def test_a_trainjob_pod_plans_from_trainers_variables(tmp_path):
    trainer = one("full", "kubeflow/trainjob.yaml")["spec"]["trainer"]
    env = pod_env(trainer, DOWNWARD)
    # What Trainer v2.3.0's torch plugin adds (pkg/runtime/framework/plugins/torch/torch.go).
    env.update({"PET_NNODES": "4", "PET_NPROC_PER_NODE": "4", "PET_NODE_RANK": "2", "JOB_COMPLETION_INDEX": "2",
                "PET_MASTER_ADDR": "full-job-node-0-0.full-job", "PET_MASTER_PORT": "29500"})
    root = with_hostname(tmp_path, "sts-h100-roce", "full-job-node-0-2")
    plan = make_plan(["--no-wait", "--", *trainer["args"]], env=env, sysroot=root)
    t = plan.topology
    assert (t.node_rank.value, t.nnodes.value, t.master_addr.value, t.master_port.value) == (
        2, "4", "full-job-node-0-0.full-job", 29500)
    assert t.nproc_per_node.value == 4 and plan.launch.argv[0] == "deepspeed"
