"""Walk 6, W77: ``image build -t openshift`` with a plain spec (image.registry left at localhost/nodeweave).

The plan says what its real run would meet, as ``up --dry-run`` does: no ``oc`` (exit 3, with the remedy this verb
has: no --kube-cli, as ``oc start-build`` has no kubectl form), and a build landing in the cluster's registry while
the spec's pods pull another image. ``up``'s own hint to build on OpenShift names the same registry setting, so
following it leads to pods that run the build. Fails before the fix (neither note; up's hint skipped the registry).
"""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli

SPEC = "name: team\nimage: {variant: cpu%s}\nnodes: 2\nlauncher: {script: train.py}\n"
CLUSTER = "image-registry.openshift-image-registry.svc:5000/default"


@pytest.fixture
def team(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC % "")
    (tmp_path / "train.py").write_text("print('the training script')\n")
    (tmp_path / "entrypoint").mkdir()  # what the Dockerfile copies; the plan checks it is there (render writes it)
    (tmp_path / "entrypoint" / "nodeweave-entrypoint.pyz").write_bytes(b"PK")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no oc here, as on the walk's machine
    monkeypatch.chdir(tmp_path)
    return tmp_path


def notes(capsys):
    code, out, err = run_cli(capsys, "image", "build", "cpu", "-t", "openshift", "--dry-run", "-o", "json")
    assert code == 0, err
    return json.loads(out)["notes"]


def test_a_plain_specs_cluster_build_names_the_registry_its_pods_need_and_the_missing_oc(team, capsys):
    said = notes(capsys)
    assert any(f"set image.registry: {CLUSTER}" in note and "localhost/nodeweave/team:cpu" in note
               for note in said), said
    missing = [note for note in said if note.startswith("the real build would end with exit 3: oc is not on PATH")]
    assert len(missing) == 1 and "--kube-cli" not in missing[0], said


def test_a_spec_pulling_from_the_cluster_registry_gets_no_registry_note(team, capsys):
    (team / "nodeweave.yaml").write_text(SPEC % f", registry: {CLUSTER}")
    assert not any("set image.registry" in note for note in notes(capsys))


def test_ups_openshift_hint_names_the_registry_setting(team, capsys):
    code, out, err = run_cli(capsys, "up", "-t", "openshift", "--dry-run")
    warning = [line for line in (out + err).splitlines() if "-t openshift` builds" in line]
    assert warning and "image.registry: image-registry.openshift-image-registry.svc:5000/<namespace>" in warning[0], \
        out + err
