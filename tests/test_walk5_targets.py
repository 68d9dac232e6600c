"""walk5's findings on the targets' dry runs, the examples and the hints in rendered files (issue 43,
/work/wt/walk5-report.md rows W2, W13, W28, W59, W71, ...), each fixed as a class. Each test fails on the code
before these fixes. No container, pod or allocation is started: kustomize is the real one inside ``kubectl``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import cli_run
from cli_run import in_process as run_cli, one_line

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

SPEC = """\
name: team
image:
  variant: cpu
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: train.py
"""


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("print('hello')\n")
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    for name in ("NODEWEAVE_RUNTIME", "NODEWEAVE_IMAGE", "NODEWEAVE_SPEC", "KUBECONFIG", "NODEWEAVE_TARGET"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# --- W71: down deletes only what it says: the job's objects, never a Namespace or cluster-scoped object --------
def kustomize(folder: Path) -> list:
    out = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


OWN_OVERLAY_EXTRA = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: team-reader
rules: []
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with its built-in kustomize) is not installed")
@pytest.mark.parametrize("folder", ["base", "openshift", "rocm", "myov"])
def test_down_deletes_only_the_jobs_objects_of_every_folder(team, folder):
    """Every folder ``--overlay`` takes (the rendered ones and a team's own that holds the Namespace and a
    ClusterRole, as cluster.md invites): what ``down``'s ``delete -k`` reads is exactly the job's objects up
    applied, less the kept claim, and never a Namespace or a cluster-scoped object (walk5, W71)."""
    from nodeweave import overlay
    from nodeweave.cluster.backends.kube import FOLDERS
    from nodeweave.spec import load_spec
    from nodeweave.targets.kubernetes.common import workspace_claim
    from nodeweave.resolve import resolve

    spec = load_spec(team / "nodeweave.yaml")
    tree = team / "kept"
    resource = FOLDERS.get(folder, "../../" + folder)
    if folder == "myov":  # the walk's overlay: the base plus the base's namespace.yaml and a ClusterRole of its own
        own = tree / folder
        own.mkdir(parents=True)
        rendered = overlay.kube_tree(spec, "ml-training", "../base", {}, keep_claims=True)
        (own / "namespace.yaml").write_text(rendered["manifests/base/namespace.yaml"])
        (own / "clusterrole.yaml").write_text(OWN_OVERLAY_EXTRA)
        (own / "kustomization.yaml").write_text("resources:\n- ../manifests/base\n- namespace.yaml\n"
                                                "- clusterrole.yaml\n")
    for name, keep_claims in (("up", False), ("down", True)):
        files = overlay.kube_tree(spec, "ml-training", resource, {"io.nodeweave.job": "team"},
                                  mode="hold" if name == "up" else None, keep_claims=keep_claims)
        root = tree if name == "down" else team / "kept-up"
        if name == "up" and folder == "myov":
            shutil.copytree(tree / folder, root / folder)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        if name == "up":
            (root / overlay.kube_token_file()).write_text("secret\n")
            applied = kustomize(root / overlay.KUBE_OVERLAY)
    deleted = kustomize(tree / overlay.KUBE_OVERLAY)
    label = overlay.JOB_LABEL
    assert deleted and all((d["metadata"].get("labels") or {}).get(label) == "team" for d in deleted), \
        [(d["kind"], d["metadata"]["name"]) for d in deleted]
    assert not any(d["kind"] in ("Namespace", "ClusterRole") for d in deleted)
    claim = workspace_claim(resolve(spec))
    theirs = {(d["kind"], d["metadata"]["name"]) for d in applied
              if (d["metadata"].get("labels") or {}).get(label) == "team" and d["kind"] != "Secret"}
    assert {(d["kind"], d["metadata"]["name"]) for d in deleted} == theirs - {("PersistentVolumeClaim", claim)}
    if folder == "myov":
        assert {"Namespace", "ClusterRole"} <= {d["kind"] for d in applied}  # up did apply them: down keeps them


def test_down_plan_says_what_it_keeps(team, capsys):
    (team / "myov").mkdir()
    (team / "myov" / "kustomization.yaml").write_text("resources:\n- ../manifests/base\n")
    code, out, err = run_cli(capsys, "down", "-t", "kubernetes", "--overlay", "myov", "--dry-run")
    assert code == 0, err
    assert "keeping the workspace claim" not in out
    assert "labelled app.kubernetes.io/instance=team" in out and "a Namespace" in out
