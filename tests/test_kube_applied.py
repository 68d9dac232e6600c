"""Issue 43, replay N2: ``up -t kubernetes``'s plan names what its ``apply -k`` applies, built by the real kustomize.

A team's own overlay (``--overlay myov``) whose resources include a Namespace and a ClusterRole: the plan said
"apply the StatefulSet, Service, RBAC, claim and a new job token Secret (myov) to ml-training", while ``kubectl
kustomize`` of the tree also applied ``Namespace ml-training`` and the ClusterRole. Now the apply step's words come
from the built tree, every object by kind and name, each cluster-scoped one named as such, before anyone says yes.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from cli_run import in_process as run_cli, one_line
from team_folder import make_team

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (its kustomize) is not installed")

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ml-training\n"
CLUSTER_ROLE = ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: team-reader\n"
                "rules: []\n")


@pytest.fixture
def team(tmp_path, monkeypatch, capsys):
    """The walk's folder: the spec, its rendered manifests (`render manifests`) and an overlay of the team's own
    over them holding the Namespace and a ClusterRole, as docs/cluster.md invites. No cluster is reached."""
    folder = make_team(tmp_path, monkeypatch)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    code, _, err = run_cli(capsys, "render", "manifests")
    assert code == 0, err
    own = folder / "myov"
    own.mkdir()
    (own / "namespace.yaml").write_text(NAMESPACE)
    (own / "clusterrole.yaml").write_text(CLUSTER_ROLE)
    (own / "kustomization.yaml").write_text("resources:\n- ../manifests/base\n- namespace.yaml\n- clusterrole.yaml\n")
    return folder


def apply_step(capsys, *flags) -> str:
    code, out, err = run_cli(capsys, "up", "-t", "kubernetes", *flags, "--dry-run", "-o", "json")
    assert code == 0, err
    steps = [step for phase in json.loads(out)["phases"] for step in phase.get("steps", [])
             if "apply" in step["argv"]]
    assert len(steps) == 1, out
    return steps[0]["what"]


def built(folder) -> list:
    out = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def test_the_plan_names_the_namespace_and_every_object_an_own_overlay_applies(team, capsys):
    what = apply_step(capsys, "--overlay", "myov", "-n", "ml-training")
    assert "and the Namespace ml-training (cluster-scoped)" in what, what
    assert "the ClusterRole team-reader (cluster-scoped)" in what, what
    assert what.startswith("apply (myov) to ml-training: ")
    for doc in built(team / "myov"):  # every object of the team's tree, by kind and name
        assert doc["kind"] in what and doc["metadata"]["name"] in what, (doc["kind"], what)
    assert "a new job token Secret" in what  # the overlay nodeweave adds over it


def test_the_rendered_base_names_its_objects_and_nothing_cluster_scoped(team, capsys):
    what = apply_step(capsys)
    assert what.startswith("apply (base) to default: ")
    assert "StatefulSet team" in what and "PersistentVolumeClaim team-workspace" in what
    assert "cluster-scoped" not in what and "Namespace" not in what


def test_an_overlay_kustomize_refuses_is_exit_2_before_anything(team, capsys):
    """The real ``apply -k`` would fail on it (exit 1, after writing the tree): the dry run and the real up both
    refuse it first, naming the overlay and kustomize's words."""
    (team / "myov" / "kustomization.yaml").write_text("resources:\n- ../no-such-folder\n")
    for dry in (["--dry-run"], []):  # exit 2 first, though no cluster is reachable here (that would be exit 3)
        code, out, err = run_cli(capsys, "up", "-t", "kubernetes", "--overlay", "myov", *dry)
        assert code == 2, out + err
        line = one_line(err)
        assert "--overlay myov" in line and "kustomize" in line and "no-such-folder" in line
    assert not (team / ".nodeweave" / "team").exists()  # the job's folder: no tree, no record of an up


def down_step(capsys, *flags) -> str:
    code, out, err = run_cli(capsys, "down", "-t", "kubernetes", *flags, "--dry-run", "-o", "json")
    assert code == 0, err
    steps = [step for phase in json.loads(out)["phases"] for step in phase.get("steps", []) if "-k" in step["argv"]]
    assert len(steps) == 1, out
    return steps[0]["what"]


def test_down_names_what_it_keeps_from_the_same_build(team, capsys):
    """The W71 fix keeps what is not the job's; its plan now names each kept object as up's plan named it."""
    what = down_step(capsys, "--overlay", "myov", "-n", "ml-training")
    assert what.endswith("kept: the Namespace ml-training (cluster-scoped), the ClusterRole team-reader "
                         "(cluster-scoped), the workspace claim"), what
    assert down_step(capsys).endswith("kept: the workspace claim")
    assert "kept" not in down_step(capsys, "--delete-claims")


def test_down_of_an_overlay_kustomize_refuses_is_exit_2_as_for_up(team, capsys):
    """``delete -k`` reads the same tree: the real down would fail on it after writing it; both refuse it first."""
    (team / "myov" / "kustomization.yaml").write_text("resources:\n- ../no-such-folder\n")
    for dry in (["--dry-run"], []):
        code, out, err = run_cli(capsys, "down", "-t", "kubernetes", "--overlay", "myov", *dry)
        assert code == 2, out + err
        assert "--overlay myov" in one_line(err) and "no-such-folder" in err
    assert not (team / ".nodeweave" / "team").exists()  # the job's folder: no tree, no record of an up
