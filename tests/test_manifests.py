"""Kubernetes/OpenShift manifests: golden files, real validators, the properties the issue names.

Every object (base, Job, each overlay as kustomize builds it) is checked by
kubernetes-validate in strict mode against Kubernetes 1.29 to 1.33. Overlays
are built by the real kustomize inside ``kubectl kustomize`` (kubectl ships
with the project's machine image); where kubectl is absent those tests skip
and say so. Golden files: ``NODEWEAVE_UPDATE_GOLDEN=1 pytest tests/test_manifests.py``
rewrites them after an intended change.
"""

from __future__ import annotations

import functools
import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from nodeweave.errors import UsageError
from nodeweave.targets.kubernetes import render_files
from nodeweave.spec import load_spec, parse_spec

GOLDEN = Path(__file__).parent / "golden" / "manifests"
SPECS = GOLDEN / "specs"
CASES = sorted(p.stem for p in SPECS.glob("*.yaml"))
VERSIONS = ("1.29", "1.30", "1.31", "1.32", "1.33")
KUSTOMIZE_DIRS = ("manifests/base", "manifests/job", "manifests/overlays/openshift", "manifests/overlays/rocm")
ADMIN_ONLY = ("scc-ipc-lock.yaml", "scc.yaml")  # an OpenShift CRD kubernetes-validate has no schema for; checked below


@functools.lru_cache(maxsize=None)
def spec_of(case: str):
    return load_spec(SPECS / f"{case}.yaml")


@functools.lru_cache(maxsize=None)
def files_of(case: str):
    return render_files(spec_of(case))


def load(text: str):
    return yaml.safe_load(text)


def load_all(text: str):
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def kubectl_problem():
    return None if shutil.which("kubectl") else "kubectl (with its built-in kustomize) is not installed"


needs_kustomize = pytest.mark.skipif(kubectl_problem() is not None, reason=str(kubectl_problem()))


def write_tree(files, root: Path) -> Path:
    for rel, content in files.items():  # text, or a binary target's bytes (the entrypoint zipapp)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def kustomize_build(root: Path, folder: str):
    out = subprocess.run(["kubectl", "kustomize", str(root / folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"kustomize build {folder} failed:\n{out.stderr}"
    return load_all(out.stdout)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """case -> folder -> the objects ``kubectl kustomize`` builds from the rendered tree."""
    problem = kubectl_problem()
    if problem:
        pytest.skip(problem)
    result = {}
    for case in CASES:
        root = write_tree(files_of(case), tmp_path_factory.mktemp(case))
        result[case] = {folder: kustomize_build(root, folder) for folder in KUSTOMIZE_DIRS}
    return result


def kind(objects, wanted):
    found = [o for o in objects if o["kind"] == wanted]
    assert len(found) == 1, f"expected one {wanted}, got {[o['kind'] for o in objects]}"
    return found[0]


def pod_spec(workload):
    return workload["spec"]["template"]["spec"]


def trainer(workload):
    return pod_spec(workload)["containers"][0]


def env_of(workload):
    return {e["name"]: e for e in trainer(workload)["env"]}


def statefulset(case):
    return load(files_of(case)["manifests/base/statefulset.yaml"])


def job(case):
    return load(files_of(case)["manifests/job/job.yaml"])


# -- golden files and determinism ---------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_golden_files(case):
    files = files_of(case)
    folder = GOLDEN / case
    if os.environ.get("NODEWEAVE_UPDATE_GOLDEN") == "1":
        shutil.rmtree(folder, ignore_errors=True)
        write_tree(files, folder)
    on_disk = {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file()}
    assert sorted(on_disk) == sorted(files), "rendered file set differs from the golden one"
    for rel, text in files.items():
        assert text == on_disk[rel], f"{case}: {rel} differs from tests/golden/manifests/{case}/{rel}"


def test_rendering_is_byte_stable():
    spec = spec_of("cuda")
    assert render_files(spec) == render_files(load_spec(SPECS / "cuda.yaml"))


def test_rendering_does_not_depend_on_the_hash_seed():
    """Every spec case rendered in three interpreters with different PYTHONHASHSEED: the same bytes."""
    from hashseed import assert_same_under_every_seed

    assert_same_under_every_seed([{"name": case, "path": str(SPECS / f"{case}.yaml")} for case in CASES],
                                 ["nodeweave.targets.kubernetes", "nodeweave.targets.jobset", "nodeweave.targets.trainjob",
                                  "nodeweave.targets.openshift_build"])


def test_committed_manifests_match_the_example_spec(repo_root):
    """The top-level manifests/ is what nodeweave.yaml renders (`make render` regenerates it)."""
    files = render_files(load_spec(repo_root / "nodeweave.yaml"))
    stale = [rel for rel, text in files.items() if not (repo_root / rel).is_file() or (repo_root / rel).read_text() != text]
    assert not stale, f"stale or missing: {stale}; run `make render`"


# -- real validators ------------------------------------------------------------------


def validate_strict(obj, where):
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as err:
            path = ".".join(str(p) for p in err.path)
            pytest.fail(f"{where}: {obj['kind']} invalid for Kubernetes {version} at {path}: {err.message}")


@pytest.mark.parametrize("case", CASES)
def test_rendered_objects_validate_strict(case):
    for rel, text in files_of(case).items():
        name = rel.rsplit("/", 1)[-1]
        if name == "kustomization.yaml" or name in ADMIN_ONLY or name in OPERATOR_ONLY:
            continue
        obj = load(text)
        if "/overlays/" in rel:
            continue  # patches are partial objects; their built result is validated below
        validate_strict(obj, f"{case}: {rel}")


@needs_kustomize
@pytest.mark.parametrize("case", CASES)
def test_every_kustomization_builds_to_valid_objects(case, built):
    raw = [load(text) for rel, text in files_of(case).items() if rel.startswith(("manifests/base/", "manifests/job/"))]
    for folder, objects in built[case].items():
        assert objects, f"{case}: {folder} built nothing"
        for obj in objects:
            if obj in raw:
                continue  # kustomize changed nothing: validated as rendered above
            validate_strict(obj, f"{case}: kustomize build {folder}")


@pytest.mark.parametrize("case", CASES)
def test_sccs_validate_against_openshifts_published_schema(case):
    """The SCC is an OpenShift kind kubernetes-validate has no schema for: openshift/api's own (tests/schemas.py)."""
    import schemas

    for rel, text in files_of(case).items():
        if rel.rsplit("/", 1)[-1] in ADMIN_ONLY:
            assert schemas.errors(load(text)) == [], f"{case}: {rel}"


def test_strict_validation_catches_a_misspelt_field():
    """The validator in use rejects what a cluster would reject (guards against a no-op check)."""
    bad = statefulset("cuda")
    trainer(bad)["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.33", strict=True)


# -- properties the issue names --------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_headless_service_publishes_not_ready_addresses(case):
    service = load(files_of(case)["manifests/base/service.yaml"])
    spec = spec_of(case)
    assert service["metadata"]["name"] == spec.kubernetes.service
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["ports"] == [
        {"name": "rendezvous", "port": spec.launcher.master_port, "targetPort": spec.launcher.master_port, "protocol": "TCP"},
        *([{"name": "metrics", "port": spec.metrics.port, "targetPort": spec.metrics.port, "protocol": "TCP"}]
          if spec.metrics.enabled else []),
    ]
    assert service["spec"]["selector"].items() <= pod_spec_labels(statefulset(case)).items()
    assert load(files_of(case)["manifests/job/service.yaml"]) == service


# The Prometheus Operator's PodMonitor: a CRD kubernetes-validate has no schema for; its own test checks it.
OPERATOR_ONLY = ("podmonitor.yaml",)


@pytest.mark.parametrize("case", CASES)
def test_the_podmonitor_scrapes_node_0s_metrics_port_and_no_other_pod(case):
    import re

    spec = spec_of(case)
    files = files_of(case)
    if not spec.metrics.enabled:
        assert "manifests/base/podmonitor.yaml" not in files
        return
    monitor = load(files["manifests/base/podmonitor.yaml"])
    assert monitor == load(files["manifests/job/podmonitor.yaml"])
    assert (monitor["apiVersion"], monitor["kind"]) == ("monitoring.coreos.com/v1", "PodMonitor")
    assert "podmonitor.yaml" not in load(files["manifests/base/kustomization.yaml"])["resources"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_spec_labels(statefulset(case)).items()
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("metrics", "/metrics")
    for workload in (statefulset(case), load(files["manifests/job/job.yaml"])):
        [trainer] = workload["spec"]["template"]["spec"]["containers"]
        assert {"name": "metrics", "containerPort": spec.metrics.port, "protocol": "TCP"} in trainer["ports"]
    [keep] = endpoint["relabelings"]
    assert keep["action"] == "keep"
    regex = re.compile(f"^(?:{keep['regex']})$")  # Prometheus anchors a relabel regex

    def kept(pod_index="", completion_index=""):
        labels = {keep["sourceLabels"][0]: pod_index, keep["sourceLabels"][1]: completion_index}
        return bool(regex.match(keep["separator"].join(labels[name] for name in keep["sourceLabels"])))

    assert kept(pod_index="0") and kept(completion_index="0")
    assert not kept(pod_index="1") and not kept(pod_index="10") and not kept(completion_index="20")


def pod_spec_labels(workload):
    return workload["spec"]["template"]["metadata"]["labels"]


@pytest.mark.parametrize("case", CASES)
def test_statefulset_shape(case):
    spec, sts = spec_of(case), statefulset(case)
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert sts["spec"]["serviceName"] == spec.kubernetes.service
    assert sts["spec"]["replicas"] == spec.nodes.min + spec.recovery.spare_nodes
    assert pod_spec(sts)["terminationGracePeriodSeconds"] == spec.kubernetes.grace_period
    assert pod_spec(sts)["serviceAccountName"] == spec.name
    assert pod_spec(sts)["enableServiceLinks"] is False
    assert trainer(sts)["args"] == [spec.launcher.script, *spec.launcher.args]


def test_with_recovery_the_statefulset_runs_every_slot_and_the_spares():
    """A job under recovery starts every training node + the spares: node 0 decides who trains, and shrinks the
    job to recovery.min_nodes."""
    text = ('name: rj\nimage: {variant: cpu}\nnodes: 3\nlauncher: {script: t.py}\n'
            'recovery: {enabled: true, spares: 1, min_nodes: 2}\n')
    sts = load(render_files(parse_spec(text, "r.yaml"))["manifests/base/statefulset.yaml"])
    assert sts["spec"]["replicas"] == 4
    off = load(render_files(parse_spec(text.replace("recovery: {enabled: true, spares: 1, min_nodes: 2}\n", ""), "r.yaml"))["manifests/base/statefulset.yaml"])
    assert off["spec"]["replicas"] == 3


@pytest.mark.parametrize("case", CASES)
def test_anti_affinity_follows_the_spec(case):
    spec, sts = spec_of(case), statefulset(case)
    affinity = pod_spec(sts).get("affinity", {}).get("podAntiAffinity")
    mode = spec.kubernetes.anti_affinity
    if mode == "none":
        assert affinity is None
        return
    if mode == "required":
        (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    else:
        (weighted,) = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
        term = weighted["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= pod_spec_labels(sts).items()


@pytest.mark.parametrize("case", CASES)
def test_gpu_rdma_and_resource_limits(case):
    spec = spec_of(case)
    resources = trainer(statefulset(case)).get("resources", {})
    gpu = {"cuda12": "nvidia.com/gpu", "cuda13": "nvidia.com/gpu", "rocm70": "amd.com/gpu"}.get(spec.image.variant)
    expected = {**spec.network.rdma_resources, **spec.resources.limits, **spec.resources.devices}
    expected.update({f"hugepages-{size}": amount for size, amount in spec.resources.hugepages.items()})
    if gpu:
        expected[gpu] = spec.gpus_per_node
    assert resources.get("limits", {}) == expected
    assert resources.get("requests", {}) == dict(spec.resources.requests)


@pytest.mark.parametrize("case", CASES)
def test_shm_is_a_memory_emptydir_and_volumes_mount(case):
    sts = statefulset(case)
    volumes = {v["name"]: v for v in pod_spec(sts)["volumes"]}
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    assert volumes["dshm"]["emptyDir"]["sizeLimit"]
    mounts = {m["mountPath"]: m["name"] for m in trainer(sts)["volumeMounts"]}
    spec = spec_of(case)
    extra = {v.path: v.name for v in spec.volumes}
    extra.update({path: name for name, _, path in spec.resources.hugepage_mounts})
    scratch = {"/tmp": "tmp", "/home/nodeweave": "home"} if spec.security.read_only_root else {}
    assert mounts == {"/dev/shm": "dshm", spec.workspace.path: "workspace", spec.cache.path: "cache", **extra,
                      **scratch}
    templated = {"workspace"} if spec.kubernetes.claim == "per-pod" else set()  # from volumeClaimTemplates
    assert set(mounts.values()) - templated <= set(volumes), "every mount has its volume"
    if spec.kubernetes.claim == "shared":
        assert volumes["workspace"]["persistentVolumeClaim"]["claimName"] == f"{spec.name}-workspace"
        pvc = load(files_of(case)["manifests/base/workspace-pvc.yaml"])
        assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
        assert pvc["spec"]["resources"]["requests"]["storage"] == spec.kubernetes.storage_size
    else:
        assert "workspace" not in volumes
        (template,) = sts["spec"]["volumeClaimTemplates"]
        assert template["metadata"]["name"] == "workspace"
        assert "manifests/base/workspace-pvc.yaml" not in files_of(case)
        assert "ephemeral" in {v["name"]: v for v in pod_spec(job(case))["volumes"]}["workspace"]


@pytest.mark.parametrize("case", CASES)
def test_downward_api_env(case):
    env = env_of(statefulset(case))
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert env["NODEWEAVE_POD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['apps.kubernetes.io/pod-index']"


@pytest.mark.parametrize("case", CASES)
def test_entrypoint_settings_and_spec_env(case):
    spec, env = spec_of(case), env_of(statefulset(case))
    values = {name: e.get("value") for name, e in env.items()}
    assert values["NODEWEAVE_SERVICE"] == spec.kubernetes.service
    assert values["NODEWEAVE_LAUNCHER"] == spec.launcher.type
    assert values["NODEWEAVE_NPROC_PER_NODE"] == str(spec.gpus_per_node)
    assert values["NODEWEAVE_MASTER_PORT"] == str(spec.launcher.master_port)
    assert values["NODEWEAVE_MAX_RESTARTS"] == str(spec.launcher.max_restarts)
    assert values["NODEWEAVE_WAIT_TIMEOUT"] == str(spec.launcher.wait_timeout)
    assert values.get("NODEWEAVE_INTERFACES") == (",".join(spec.network.interfaces) or None)
    assert values.get("NODEWEAVE_EXCLUDE_HCAS") == (",".join(spec.network.exclude_hcas) or None)
    for key, value in spec.env.items():
        assert values[key] == value
    assert len(trainer(statefulset(case))["env"]) == len(env), "an env name appears twice"


@pytest.mark.parametrize("case", CASES)
def test_nnodes_only_where_the_api_cannot_tell(case):
    """Fixed StatefulSet: no NNODES (the entrypoint reads replicas, so `oc scale` needs no edit); with spares the
    replicas count them too, so the training count is told."""
    spec = spec_of(case)
    nnodes = env_of(statefulset(case)).get("NODEWEAVE_NNODES")
    if spec.nodes.elastic or spec.recovery.spare_nodes:
        assert nnodes == {"name": "NODEWEAVE_NNODES", "value": str(spec.nodes)}
    else:
        assert nnodes is None
    assert env_of(job(case))["NODEWEAVE_NNODES"]["value"] == str(spec.nodes)


@pytest.mark.parametrize("case", CASES)
def test_indexed_job(case):
    spec, jb = spec_of(case), job(case)
    assert jb["spec"]["completionMode"] == "Indexed"
    assert jb["spec"]["completions"] == jb["spec"]["parallelism"] == spec.nodes.max + spec.recovery.spare_nodes
    assert pod_spec(jb)["subdomain"] == spec.kubernetes.service
    assert pod_spec(jb)["restartPolicy"] == "Never"
    index = env_of(jb)["NODEWEAVE_POD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert index == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert env_of(jb)["MASTER_ADDR"]["value"] == f"{spec.name}-0.{spec.kubernetes.service}"
    assert pod_spec(jb)["serviceAccountName"] == spec.name, "the SA an OpenShift SCC for IPC_LOCK names"
    assert pod_spec(jb)["automountServiceAccountToken"] is False
    assert "serviceaccount.yaml" in load(files_of(case)["manifests/job/kustomization.yaml"])["resources"]


@pytest.mark.parametrize("case", CASES)
def test_rbac_grants_the_replica_lookup(case):
    spec, files = spec_of(case), files_of(case)
    rules = load(files["manifests/base/role.yaml"])["rules"]
    replicas = {"apiGroups": ["apps"], "resources": ["statefulsets"], "resourceNames": [spec.name], "verbs": ["get"]}
    # only where the entrypoint reads .spec.replicas: not told NODEWEAVE_NNODES (walk15b B8)
    assert (replicas in rules) == (not (spec.nodes.elastic or spec.recovery.spare_nodes)), (case, rules)
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]} in rules
    binding = load(files["manifests/base/rolebinding.yaml"])
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": spec.name}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": spec.name, "namespace": spec.kubernetes.namespace}]


@pytest.mark.parametrize("case", CASES)
def test_sriov_annotation_only_with_attachments(case):
    spec = spec_of(case)
    for workload in (statefulset(case), job(case)):
        annotations = workload["spec"]["template"]["metadata"].get("annotations", {})
        if spec.network.attachments:
            assert annotations["k8s.v1.cni.cncf.io/networks"] == ",".join(spec.network.attachments)
        else:
            assert "k8s.v1.cni.cncf.io/networks" not in annotations


def test_image_uses_the_moving_variant_tag_or_the_fixed_tag():
    assert trainer(statefulset("cuda"))["image"] == "ghcr.io/example/llama-pretrain:cuda12"
    assert trainer(statefulset("rocm"))["image"] == "registry.local:5000/team/mi300-sft:v1.4.2"


def test_node_selector_and_tolerations_pass_through():
    sts = statefulset("cuda")
    assert pod_spec(sts)["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert pod_spec(sts)["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


# -- placement, scheduling, metadata, volumes (spec fields of issue 12) -------------------


def test_node_names_and_affinity_are_one_required_term():
    (term,) = pod_spec(statefulset("full"))["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    spec = spec_of("full")
    assert term["matchExpressions"][-1] == {"key": "kubernetes.io/hostname", "operator": "In",
                                            "values": list(spec.kubernetes.node_names)}
    assert term["matchExpressions"][1] == {"key": "node-role.kubernetes.io/worker", "operator": "Exists"}
    assert "nodeAffinity" not in pod_spec(statefulset("cuda")).get("affinity", {})


def test_topology_spread_selects_this_jobs_pods():
    (spread,) = pod_spec(statefulset("full"))["topologySpreadConstraints"]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone" and spread["whenUnsatisfiable"] == "ScheduleAnyway"
    assert spread["labelSelector"]["matchLabels"].items() <= pod_spec_labels(statefulset("full")).items()


def test_kueue_queue_is_a_workload_label_and_volcano_an_annotation():
    for workload in (statefulset("full"), job("full")):
        assert workload["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
        assert "schedulerName" not in pod_spec(workload)
    for workload in (statefulset("volcano"), job("volcano")):
        assert pod_spec(workload)["schedulerName"] == "volcano"
        assert workload["spec"]["template"]["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "research"
        assert "kueue.x-k8s.io/queue-name" not in workload["metadata"]["labels"]


def test_labels_and_annotations_land_on_workload_and_pods():
    spec = spec_of("full")
    for workload in (statefulset("full"), job("full")):
        assert spec.kubernetes.labels.items() <= workload["metadata"]["labels"].items()
        annotations = workload["metadata"]["annotations"]
        assert {k: v for k, v in annotations.items() if not k.startswith("checkov.io/")} == dict(
            spec.kubernetes.annotations)
        template = workload["spec"]["template"]["metadata"]
        assert spec.kubernetes.pod_labels.items() <= template["labels"].items()
        assert spec.kubernetes.pod_annotations.items() <= template["annotations"].items()
    assert workload["spec"]["template"]["metadata"]["annotations"]["example.com/cost-center"] == "4711"


def test_structured_attachments_request_their_vf_resource():
    spec = spec_of("full")
    annotation = statefulset("full")["spec"]["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
    assert annotation == "sriov-eno5@net1,sriov-eno6@net2,infra/sriov-eno7@net3,infra/sriov-eno8@net4"
    limits = trainer(statefulset("full"))["resources"]["limits"]
    for nic in ("eno5", "eno6", "eno7", "eno8"):
        assert limits[f"openshift.io/{nic}np0rdma"] == 1
    assert spec.network.rdma is True


def test_extra_volumes_use_their_kubernetes_source():
    volumes = {v["name"]: v for v in pod_spec(statefulset("full"))["volumes"]}
    assert volumes["datasets"]["persistentVolumeClaim"] == {"claimName": "imagenet"}, "a claim wins over host_path"
    assert volumes["ds-config"]["configMap"] == {"name": "deepspeed-config"}
    assert volumes["hf-token"]["secret"] == {"secretName": "hf-token"}
    assert volumes["hf-datasets"]["emptyDir"] == {"sizeLimit": "500Gi"}
    assert volumes["models"]["hostPath"] == {"path": "/mnt/models"}
    assert volumes["hugepages"]["emptyDir"] == {"medium": "HugePages"}
    mounts = {m["name"]: m for m in trainer(statefulset("full"))["volumeMounts"]}
    assert mounts["hf-token"]["readOnly"] is True and mounts["ds-config"]["readOnly"] is True
    assert "readOnly" not in mounts["hf-datasets"]
    env_names = {e["name"] for e in trainer(statefulset("full"))["env"]}
    assert not any("TOKEN" in name for name in env_names), "secrets are files, never environment"


def test_seccomp_unconfined_and_extra_capabilities_in_the_base():
    sts = statefulset("volcano")
    assert pod_spec(sts)["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    full = trainer(statefulset("full"))["securityContext"]["capabilities"]
    assert full == {"drop": ["ALL"], "add": ["IPC_LOCK", "SYS_PTRACE", "SYS_NICE"]}


# -- security: vanilla base vs OpenShift ------------------------------------------------


def test_vanilla_base_runs_as_the_image_user_with_ipc_lock_only_for_rdma():
    sts = statefulset("cuda")
    assert pod_spec(sts)["securityContext"]["runAsUser"] == 1000
    assert pod_spec(sts)["securityContext"]["fsGroup"] == 0
    assert pod_spec(sts)["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec_of("cuda").network.rdma
    assert trainer(sts)["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert not spec_of("cpu").network.rdma
    assert trainer(statefulset("cpu"))["securityContext"] == {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}


@needs_kustomize
@pytest.mark.parametrize("case", CASES)
def test_openshift_overlay_has_no_fixed_ids(case, built):
    sts = kind(built[case]["manifests/overlays/openshift"], "StatefulSet")
    spec = spec_of(case)
    pod_security = pod_spec(sts)["securityContext"]
    for field in ("runAsUser", "runAsGroup", "fsGroup", "fsGroupChangePolicy"):
        assert field not in pod_security
    unconfined = spec.security.seccomp == "unconfined"
    assert pod_security["seccompProfile"] == {"type": "Unconfined" if unconfined else "RuntimeDefault"}
    assert trainer(sts)["securityContext"]["allowPrivilegeEscalation"] is False
    capabilities = trainer(sts)["securityContext"]["capabilities"]
    assert capabilities["drop"] == ["ALL"]
    rdma = bool(spec.network.rdma_resources or spec.network.attachments)
    added = (["IPC_LOCK"] if rdma else []) + list(spec.security.cap_add)
    assert capabilities.get("add") == (added or None)
    host_dirs = any(v.kubernetes_source == "host_path" for v in spec.volumes)
    scc = [rel for rel in files_of(case) if rel.startswith("manifests/overlays/openshift/scc")]
    assert bool(scc) == bool(added or unconfined or host_dirs)
    if scc:
        granted = load(files_of(case)[scc[0]])
        assert granted["allowedCapabilities"] == added, "the SCC grants exactly what the pods add"
        assert ("unconfined" in granted["seccompProfiles"]) == unconfined
        assert granted["allowHostDirVolumePlugin"] is host_dirs and ("hostPath" in granted["volumes"]) == host_dirs
        assert scc[0].endswith("scc-ipc-lock.yaml" if added == ["IPC_LOCK"] and not unconfined and not host_dirs
                               else "scc.yaml")


def test_the_capability_rule_is_worked_out_once_per_render(monkeypatch):
    """The pods, the SCC, the Pod Security level and checkov's skips all read one answer (Resolved.capabilities)."""
    import nodeweave.resolve

    calls = []
    rule = nodeweave.resolve.pod_capabilities
    monkeypatch.setattr(nodeweave.resolve, "pod_capabilities", lambda spec: calls.append(spec) or rule(spec))
    files = render_files(spec_of("full"))
    assert len(calls) == 1
    assert "manifests/overlays/openshift/scc.yaml" in files


def test_openshift_spec_renders_a_restricted_v2_base():
    sts = statefulset("openshift")
    assert "runAsUser" not in pod_spec(sts)["securityContext"]
    assert trainer(sts)["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_scc_for_rdma_is_restricted_v2_plus_ipc_lock_for_one_service_account():
    scc = load(files_of("cuda")["manifests/overlays/openshift/scc-ipc-lock.yaml"])
    assert scc["kind"] == "SecurityContextConstraints"
    assert scc["allowedCapabilities"] == ["IPC_LOCK"]
    assert scc["requiredDropCapabilities"] == ["ALL"]
    assert scc["allowPrivilegedContainer"] is False and scc["allowHostNetwork"] is False
    assert scc["runAsUser"] == {"type": "MustRunAsRange"}
    assert scc["users"] == ["system:serviceaccount:ml-training:llama-pretrain"]
    for workload in (statefulset("cuda"), job("cuda")):  # both run as the SA the SCC names
        assert pod_spec(workload)["serviceAccountName"] == "llama-pretrain"
    kustomization = load(files_of("cuda")["manifests/overlays/openshift/kustomization.yaml"])
    assert "scc-ipc-lock.yaml" not in kustomization["resources"], "an SCC needs a cluster admin; -k must work without one"


# -- ROCm ------------------------------------------------------------------------------


@needs_kustomize
def test_rocm_overlay_turns_a_cuda_base_into_amd(built):
    sts = kind(built["cuda"]["manifests/overlays/rocm"], "StatefulSet")
    assert trainer(sts)["image"] == "ghcr.io/example/llama-pretrain:rocm70"
    assert trainer(sts)["resources"]["limits"] == {"amd.com/gpu": 8, "rdma/rdma_shared_device_a": 1}
    assert pod_spec(sts)["securityContext"]["supplementalGroups"] == [44, 109]
    assert "nodeSelector" not in pod_spec(sts) or not any(k.startswith("nvidia.com/") for k in pod_spec(sts)["nodeSelector"])
    assert pod_spec(sts)["tolerations"] == [{"effect": "NoSchedule", "key": "amd.com/gpu", "operator": "Exists"}]


@needs_kustomize
def test_rocm_overlay_keeps_a_rocm_base_image(built):
    sts = kind(built["rocm"]["manifests/overlays/rocm"], "StatefulSet")
    assert trainer(sts)["image"] == "registry.local:5000/team/mi300-sft:v1.4.2"
    assert trainer(sts)["resources"]["limits"]["amd.com/gpu"] == 8


def test_rocm_base_has_device_groups():
    assert pod_spec(statefulset("rocm"))["securityContext"]["supplementalGroups"] == [44, 109]
    assert "supplementalGroups" not in pod_spec(statefulset("cuda"))["securityContext"]


# -- bad input ----------------------------------------------------------------------------


def test_auto_gpus_cannot_be_scheduled_and_says_so():
    text = (SPECS / "cuda.yaml").read_text().replace("gpus_per_node: 8", "gpus_per_node: auto")
    with pytest.raises(UsageError) as err:
        render_files(parse_spec(text, "auto.yaml"))
    message = str(err.value)
    assert "gpus_per_node" in message and "'auto'" in message and "accepted: an integer" in message


# -- hostile values reach YAML safely ------------------------------------------------------

HOSTILE = [
    'say "hi"', "it's", "key: value", "- item", "# not a comment", "line1\nline2", "trailing\n", "${HOME}",
    "$(POD_NAME)", "{a: 1}", "[1, 2]", "3e-4", "1e3", "09", "0o17", "0x1F", "on", "no", "null", "~", "true",
    "", " leading space", "tab\there", "back\\slash", "unicode ✓ ünï", "*anchor", "&anchor", "!tag", "%directive",
    "@at", "`tick`", "| block", "> folded", "---", "...", "a\r\nb", "nel\x85", "ls\u2028ps\u2029", "\ufeffbom",
]  # fmt: skip


def yaml12(text: str):
    """How kubectl/kustomize (Go YAML, 1.2 numbers) read it: ruamel's YAML 1.2 safe loader."""
    return YAML(typ="safe", pure=True).load(io.StringIO(text))


def hostile_spec(values):
    doc = yaml.safe_load((SPECS / "cuda.yaml").read_text())
    doc["env"] = {f"V{i}": v for i, v in enumerate(values)}
    doc["launcher"]["args"] = list(values)
    return parse_spec(yaml.safe_dump(doc), "hostile.yaml")


def check_round_trip(values, text):
    for reader in (yaml.safe_load, yaml12):
        sts = reader(text)
        env = {e["name"]: e.get("value") for e in trainer(sts)["env"]}
        assert [env[f"V{i}"] for i in range(len(values))] == list(values)
        assert trainer(sts)["args"][1:] == list(values)


def test_hostile_values_round_trip_exactly():
    text = render_files(hostile_spec(HOSTILE))["manifests/base/statefulset.yaml"]
    check_round_trip(HOSTILE, text)
    validate_strict(load(text), "hostile values")


# kustomize's YAML writer (go-yaml v3) itself turns U+0085 into a space and writes
# U+2028/U+2029 raw into single quotes, whatever its input; plain `kubectl apply -f`
# reads our escaped form correctly. Those three are left out of the kustomize check.
GO_YAML_UNSAFE = ("\x85", "\u2028", "\u2029")
HOSTILE_FOR_KUSTOMIZE = [v for v in HOSTILE if not any(c in v for c in GO_YAML_UNSAFE)]


@needs_kustomize
def test_hostile_values_survive_kustomize(tmp_path):
    files = render_files(hostile_spec(HOSTILE_FOR_KUSTOMIZE))
    write_tree(files, tmp_path)
    for folder in ("manifests/base", "manifests/overlays/openshift"):
        out = subprocess.run(["kubectl", "kustomize", str(tmp_path / folder)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        # Read kustomize's own text (not a re-dump) with both YAML readers.
        (sts_text,) = [doc for doc in re.split(r"^---$", out.stdout, flags=re.M) if re.search(r"^kind: StatefulSet$", doc, re.M)]
        check_round_trip(HOSTILE_FOR_KUSTOMIZE, sts_text)


def test_number_like_labels_stay_strings_for_go_yaml():
    doc = yaml.safe_load((SPECS / "cuda.yaml").read_text())
    doc["kubernetes"]["node_selector"] = {"a": "123", "b": "1e3", "c": "true", "d": "0o17", "e": "1.5"}
    text = render_files(parse_spec(yaml.safe_dump(doc), "labels.yaml"))["manifests/base/statefulset.yaml"]
    assert pod_spec(yaml12(text))["nodeSelector"] == doc["kubernetes"]["node_selector"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30), min_size=1, max_size=5))
def test_any_env_and_args_round_trip(values):
    try:
        spec = hostile_spec(values)
    except UsageError:
        return  # the spec refused it, with a message; nothing reaches a manifest
    text = render_files(spec)["manifests/base/statefulset.yaml"]
    check_round_trip(values, text)
    kubernetes_validate.validate(load(text), "1.33", strict=True)
