"""Third-party judges of every rendered Kubernetes tree: checkov, and the Pod Security Standards.

Every spec the tests know (the manifests goldens, examples/, nodeweave.yaml)
is rendered (the kustomize tree, the JobSet, the TrainJob, the OpenShift
build's deploy folders), every kustomize folder is built with kubectl's own
kustomize, and checkov 3.3 (PyPI, installed by ``make install`` into
``.venv/checkov``: its pins clash with the test tools, so it has a venv of
its own) scans the built objects. A finding must be fixed or skipped on the
workload with a ``checkov.io/skipN`` reason that docs/kubernetes.md repeats.

The Pod Security Standards are checked with tests/pss.py (the published
rules of the ``baseline`` and ``restricted`` levels, and OpenShift's
``restricted-v2`` SCC as its YAML states them): no API server runs here, so
no admission plugin can be asked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nodeweave.targets import jobset, openshift_build
from nodeweave.targets import kubernetes as manifests
from nodeweave.targets import trainjob as kubeflow
from nodeweave.spec import load_spec
from pss import baseline_violations, restricted_v2_violations, restricted_violations

REPO = Path(__file__).resolve().parents[1]
SPECS = sorted((REPO / "tests/golden/manifests/specs").glob("*.yaml")) + sorted(
    p for p in (REPO / "examples").glob("*.yaml")) + [REPO / "nodeweave.yaml"]
DOCS = (REPO / "docs/kubernetes.md").read_text(encoding="utf-8")


def checkov_program():
    given = os.environ.get("NODEWEAVE_CHECKOV")
    for candidate in (given, str(Path(sys.prefix) / "checkov/bin/checkov"), shutil.which("checkov")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def rendered(spec):
    files = {**manifests.render_files(spec), **jobset.render_files(spec), **kubeflow.render_files(spec)}
    if spec.kubernetes.build is not None:
        files.update(openshift_build.render_files(spec))
    return files


def build_all(spec_path: Path, root: Path, out: Path) -> "dict[str, list]":
    """Every kustomize folder of the spec's render, built: {folder: objects}; each build also written to ``out``."""
    spec = load_spec(spec_path)
    for rel, text in rendered(spec).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    result = {}
    for kustomization in sorted(root.rglob("kustomization.yaml")):
        folder = kustomization.parent
        built = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
        assert built.returncode == 0, f"{spec_path.name}: kustomize {folder}: {built.stderr}"
        name = f"{spec_path.stem}--{folder.relative_to(root).as_posix().replace('/', '_')}.yaml"
        (out / name).write_text(built.stdout, encoding="utf-8")
        result[folder.relative_to(root).as_posix()] = [d for d in yaml.safe_load_all(built.stdout) if d]
    return result


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl (its built-in kustomize) is not installed "
                    "(`bash .ci/setup-tools.sh` installs it, as CI does)")
    out = tmp_path_factory.mktemp("built")
    return out, {p.name: build_all(p, tmp_path_factory.mktemp(p.stem), out) for p in SPECS}


def test_checkov_finds_nothing_unexplained_in_any_rendered_tree(trees):
    program = checkov_program()
    if program is None:
        pytest.skip("checkov is not installed (make install puts it in .venv/checkov; or set NODEWEAVE_CHECKOV)")
    out, _ = trees
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"}
    scan = subprocess.run([program, "-d", str(out), "--framework", "kubernetes", "-o", "json", "--skip-download"], capture_output=True, text=True, timeout=600, env=env)
    report = json.loads(scan.stdout)
    report = report[0] if isinstance(report, list) else report
    results = report["results"]
    failed = [(r["check_id"], r["resource"], r["file_path"]) for r in results.get("failed_checks", [])]
    assert not failed, f"checkov findings neither fixed nor skipped with a reason: {failed}"
    assert report["summary"]["passed"] > 100
    reasons = {(r["check_id"], (r.get("check_result") or {}).get("suppress_comment") or "")
               for r in results["skipped_checks"]}
    assert {"CKV_K8S_8", "CKV_K8S_40"} <= {check for check, _ in reasons}
    for check_id, reason in sorted(reasons):
        assert reason, f"{check_id} skipped without a reason"
        assert f"`{check_id}`" in DOCS and reason in DOCS, f"docs/kubernetes.md does not repeat {check_id}: {reason}"


def pods(objects):
    """(kind/name, pod spec) of every workload among ``objects``."""
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj["kind"] in ("StatefulSet", "Job"):
            yield f"{obj['kind']}/{obj['metadata']['name']}", spec["template"]["spec"]


def test_the_default_pod_passes_restricted_without_rdma_and_only_ipc_lock_stands_out_with_it(trees):
    _, built = trees
    cpu = built["cpu.yaml"]
    assert not load_spec(REPO / "tests/golden/manifests/specs/cpu.yaml").network.rdma
    for folder in ("manifests/base", "manifests/job", "manifests/overlays/openshift"):
        for name, pod in pods(cpu[folder]):
            assert restricted_violations(pod) == [], f"cpu {folder} {name}"
    for name, pod in pods(cpu["manifests/overlays/openshift"]):
        assert restricted_v2_violations(pod) == [], name
    cuda = built["cuda.yaml"]  # RDMA on: IPC_LOCK, which baseline and restricted-v2 refuse by name
    for name, pod in pods(cuda["manifests/base"]):
        assert baseline_violations(pod) == ["capabilities.add IPC_LOCK is outside baseline's list"], name
        assert restricted_violations(pod) == ["capabilities.add IPC_LOCK: only NET_BIND_SERVICE may be added"], name


def test_the_scanner_helpers_do_catch_what_they_are_for():
    """tests/pss.py must fail the pods the standards refuse, or its passes above mean nothing."""
    pod = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": False,
                                                           "capabilities": {"drop": ["ALL"]}}}]}
    assert restricted_violations(pod) == []
    loose = json.loads(json.dumps(pod))
    loose["containers"][0]["securityContext"] = {"capabilities": {"add": ["NET_RAW"]}}
    loose["securityContext"]["seccompProfile"] = {"type": "Unconfined"}
    loose["volumes"] = [{"name": "h", "hostPath": {"path": "/"}}]
    assert len(baseline_violations(loose)) == 3
    assert len(restricted_violations(loose)) >= 5
    assert restricted_v2_violations({**pod, "securityContext": {"runAsUser": 1000, "runAsNonRoot": True}})


def test_a_digest_pins_the_image_and_read_only_root_false_drops_the_scratch_volumes():
    from nodeweave.resolve import resolve
    from nodeweave.targets.kubernetes.workloads import statefulset
    from nodeweave.spec import parse_spec

    digest = "sha256:" + "ab" * 32
    spec = parse_spec(f"name: j\nimage: {{variant: cpu, registry: r.example, digest: '{digest}'}}\n"
                      "launcher: {script: t.py}\nsecurity: {read_only_root: false}\n", "j.yaml")
    sts = statefulset(resolve(spec))
    pod = sts["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == f"r.example/j:cpu@{digest}"
    assert "readOnlyRootFilesystem" not in container["securityContext"]
    assert not {"tmp", "home"} & {v["name"] for v in pod["volumes"]}
    skipped = " ".join(sts["metadata"]["annotations"].values())
    assert "CKV_K8S_22=" in skipped and "CKV_K8S_43=" not in skipped
    assert container["readinessProbe"]["exec"]["command"] == ["nodeweave-entrypoint", "--node", "ready"]


def strictest_level(pod) -> str:
    """The level tests/pss.py admits the pod at: what the namespace label must say."""
    if not restricted_violations(pod):
        return "restricted"
    return "baseline" if not baseline_violations(pod) else "privileged"


def test_the_rendered_namespace_label_is_the_strictest_level_every_pod_passes(trees):
    _, built = trees
    seen = set()
    for path in SPECS:
        spec = load_spec(path)
        namespace = yaml.safe_load(manifests.render_files(spec)["manifests/base/namespace.yaml"])
        label = namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        assert namespace["metadata"]["name"] == spec.kubernetes.namespace
        levels = {strictest_level(pod) for folder in ("manifests/base", "manifests/job")
                  for _, pod in pods(built[path.name][folder])}
        assert levels == {label}, f"{path.name}: pods pass {levels}, the namespace says {label}"
        seen.add(label)
    assert {"restricted", "privileged"} <= seen  # the specs cover both sides


RDMA_SPEC = """name: rdma
image: {{variant: cuda12, registry: r.example}}
nodes: 2
gpus_per_node: 8
launcher: {{script: t.py}}
network: {{rdma_resources: {{rdma/ib: 1}}}}
security: {{ipc_lock: false{extra}}}
"""


@pytest.mark.parametrize("extra, level", [("", "restricted"), (", cap_add: [CHOWN]", "baseline")])
def test_rdma_without_ipc_lock_passes_restricted_or_baseline(tmp_path, extra, level):
    """security.ipc_lock: false (the runtime's memlock is unlimited): RDMA pods add nothing, so PSS admits them."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl (its built-in kustomize) is not installed "
                    "(`bash .ci/setup-tools.sh` installs it, as CI does)")
    spec_path = tmp_path / "rdma.yaml"
    spec_path.write_text(RDMA_SPEC.format(extra=extra))
    spec = load_spec(spec_path)
    assert spec.network.rdma and not spec.security.ipc_lock
    built = build_all(spec_path, tmp_path / "tree", tmp_path)
    files = manifests.render_files(spec)
    assert yaml.safe_load(files["manifests/base/namespace.yaml"])["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"] == level
    for folder in ("manifests/base", "manifests/job"):
        for name, pod in pods(built[folder]):
            assert strictest_level(pod) == level, (folder, name, restricted_violations(pod))
            (container,) = pod["containers"]
            assert "IPC_LOCK" not in (container["securityContext"]["capabilities"].get("add") or [])
            assert container["resources"]["limits"]["rdma/ib"] == 1  # RDMA is still asked for
    if level == "restricted":
        assert not any(name.startswith("manifests/overlays/openshift/scc") for name in files)
        for name, pod in pods(built["manifests/overlays/openshift"]):
            assert restricted_v2_violations(pod) == [], name
