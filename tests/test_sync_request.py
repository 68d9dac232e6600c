"""What to sync where: spec defaults, shared storage, and that input is judged before any tool runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeweave.errors import UsageError
from nodeweave.sync.request import FilterArgs, SyncOptions, TargetArgs, build_request

SPEC = ("name: llama\nimage: {variant: cpu}\nnodes: 3\nlauncher: {script: train.py}\n"
        "workspace: {path: /workspace/llama, host_path: proj}\nkubernetes: {namespace: ml%s}\n")


@pytest.fixture()
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text("print(1)\n")
    (tmp_path / "proj" / ".env").write_text("SECRET=1\n")
    return tmp_path


# The spec's own pods, named (with no target, sync goes to the cluster `up` made, as every verb: test_sync_cli.py)
SPEC_PODS = TargetArgs(statefulset="llama", replicas=3)


def build(project: Path, *, src=None, dest=None, targets=SPEC_PODS, filters=FilterArgs(), shared=None,
          extra="", options=SyncOptions()):
    spec = project / "nodeweave.yaml"
    spec.write_text(SPEC % extra)
    return build_request(src, dest, targets, filters, options, spec, shared)


def test_sent_credentials_are_never_relayed_unless_asked(project):
    assert build(project).options.relay == "auto"
    with_secrets = FilterArgs(include_secrets=True)
    req = build(project, filters=with_secrets)
    assert ".env" in req.fileset.files and req.options.relay == "off"
    assert build(project, filters=with_secrets, options=SyncOptions(relay="on")).options.relay == "on"


def test_the_spec_gives_src_dest_and_its_pods_sharing_one_claim(project):
    req = build(project)
    assert req.src == project / "proj" and req.dest == "/workspace/llama"
    assert [t.label for t in req.targets] == [f"pod:ml/llama-{i}[trainer]" for i in range(3)]
    assert {t.kind for t in req.targets} == {"kubectl"} and req.options.shared
    assert set(req.fileset.files) == {"train.py"} and req.fileset.held_back_secrets == [".env"]


def test_openshift_pods_per_pod_claims_and_explicit_targets(project):
    req = build(project, extra=", openshift: true, claim: per-pod")
    assert {t.kind for t in req.targets} == {"oc"} and not req.options.shared
    req = build(project, targets=TargetArgs(to=("podman:a", "pod:b")))
    assert [t.label for t in req.targets] == ["podman:a", "pod:ml/b"]  # the spec's namespace for pods
    assert not req.options.shared  # named targets are not assumed to share storage
    assert build(project, targets=TargetArgs(to=("podman:a",)), shared=True).options.shared


def test_a_statefulset_with_replicas_needs_no_cluster(project):
    req = build(project, targets=TargetArgs(statefulset="other", replicas=2, container="main"))
    assert [t.label for t in req.targets] == ["pod:ml/other-0[main]", "pod:ml/other-1[main]"]
    with pytest.raises(UsageError, match="StatefulSet name 'Other'"):
        build(project, targets=TargetArgs(statefulset="Other"))  # judged before kubectl is asked


def test_bad_filters_are_judged_before_targets_and_tools(project):
    with pytest.raises(UsageError, match="--exclude: pattern '/'"):
        build(project, targets=TargetArgs(to=("ftp:nowhere",)), filters=FilterArgs(excludes=("/",)))
    with pytest.raises(UsageError, match="target kind 'ftp'"):
        build(project, targets=TargetArgs(to=("ftp:nowhere",)))
    with pytest.raises(UsageError, match="DEST '/etc' is not accepted"):
        build(project, dest="/etc", filters=FilterArgs(excludes=("/",)))
