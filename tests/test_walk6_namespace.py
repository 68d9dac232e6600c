"""Walk 6, W78: the cluster's own namespaces (kube-*, openshift-*) as the job's namespace.

The job's objects, claim, token Secret and the Pod Security label of namespace.yaml would land among the cluster's
system pods. One rule (systemdirs.cluster_namespace) judges every way a namespace reaches a verb: the spec's
``kubernetes.namespace``, ``--namespace`` on each verb that takes it, and the record ``up`` keeps. ``default`` stays
accepted (every spec without a namespace has it), and its namespace.yaml says not to apply it there. Fails before
the fix (all were accepted, namespace.yaml a restricted ``Namespace kube-system``).
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE
from nodeweave.rendering import render_targets
from nodeweave.spec import parse_spec

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"
SYSTEM = ["kube-system", "kube-public", "kube-node-lease", "openshift", "openshift-config"]


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('the training script')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("namespace", SYSTEM)
def test_the_spec_refuses_a_cluster_namespace(team, capsys, namespace):
    (team / "nodeweave.yaml").write_text(SPEC + f"kubernetes: {{namespace: {namespace}}}\n")
    for argv in (("validate",), ("render", "manifests", "--out", "ks")):
        code, _, err = run_cli(capsys, *argv)
        line = one_line(err)
        assert code == EXIT_USAGE and "kubernetes.namespace" in line and namespace in line, line
    assert not (team / "ks").exists()


@pytest.mark.parametrize("verb", [("up", "--dry-run"), ("down", "--dry-run"), ("status",), ("logs",),
                                  ("sync", "--dry-run")])
@pytest.mark.parametrize("namespace", ["kube-system", "openshift-monitoring"])
def test_every_verbs_namespace_flag_refuses_it(team, capsys, verb, namespace):
    code, _, err = run_cli(capsys, verb[0], "-t", "kubernetes", "-n", namespace, *verb[1:])
    line = one_line(err)
    assert code == EXIT_USAGE and f"--namespace {namespace!r} is not accepted" in line, line


def test_the_record_up_keeps_refuses_it(team, capsys):
    record = team / ".nodeweave" / "team" / "cluster.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"target": "kubernetes", "namespace": "kube-system"}))
    code, _, err = run_cli(capsys, "status")
    line = one_line(err)
    assert code == EXIT_USAGE and "field namespace 'kube-system' is not accepted" in line, line


def test_a_namespace_of_its_own_and_default_are_accepted():
    for text in (SPEC + "kubernetes: {namespace: kubeflow-team}\n", SPEC):
        files = render_targets(parse_spec(text, "nodeweave.yaml"), ("manifests",))
        assert "manifests/base/namespace.yaml" in files
    note = files["manifests/base/namespace.yaml"]
    assert "namespace is default" in note and "do not" in note, note
