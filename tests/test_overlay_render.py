"""The overlays ``up`` and ``down`` apply (nodeweave/overlay.py) are pure renderers: the spec and the options in,
``{path: text}`` out, the same bytes every time, nothing run or read, and the bytes pinned by goldens.

Regenerate the goldens after an intended change with
``NODEWEAVE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_overlay_render.py`` and review the diff.
"""

from __future__ import annotations

import builtins
import functools
import os
import subprocess
from pathlib import Path

import pytest

from nodeweave.spec import load_spec
from nodeweave import overlay

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "tests" / "golden" / "compose"  # the compose goldens' specs: cpu (no hosts) and hosts
GOLDEN = REPO / "tests" / "golden" / "overlay"
PROJECT = "job-0123abcd"
LABELS = {"io.nodeweave.job": "job", "io.nodeweave.folder": "/srv/team", "io.nodeweave.owner": "0123abcd4567"}
PINNED = {"name": "registry.example/team/job", "digest": "sha256:" + "ab" * 32}


@functools.lru_cache(maxsize=None)
def spec_of(case: str):
    """Loaded once: the purity test renders again with file reads refused."""
    return load_spec(SPECS / case / "nodeweave.yaml")


def rendered(case: str) -> dict:
    """Each case's files, as the backends ask for them."""
    if case == "local":
        return {"compose.yaml": overlay.local_compose(spec_of("cpu"), "/srv/team",
                                                      PROJECT, LABELS)}
    if case == "hosts":
        return overlay.host_files(spec_of("hosts"), PROJECT, LABELS)
    spec = spec_of("cpu")
    if case == "kube-up":
        return overlay.kube_tree(spec, "team", "../base", LABELS, mode="hold", pinned=PINNED)
    return overlay.kube_tree(spec, "team", "../overlays/openshift", LABELS, keep_claims=True)  # kube-down


CASES = ("local", "hosts", "kube-up", "kube-down")


@pytest.mark.parametrize("case", CASES)
def test_overlays_match_the_goldens(case):
    files = rendered(case)
    if case.startswith("kube"):  # the spec's own tree is the manifests goldens' (test_manifests.py): here, the overlay
        from nodeweave.targets import kubernetes

        tree = {rel: text for rel, text in files.items() if not rel.startswith(overlay.KUBE_OVERLAY + "/")}
        assert tree == kubernetes.render_files(spec_of("cpu"))
        files = {rel: text for rel, text in files.items() if rel not in tree}
    for rel, text in files.items():
        golden = GOLDEN / case / rel
        if os.environ.get("NODEWEAVE_UPDATE_GOLDEN") == "1":
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        assert golden.is_file(), f"missing golden {golden}; run with NODEWEAVE_UPDATE_GOLDEN=1"
        assert text == golden.read_text(encoding="utf-8"), f"{rel} of {case} differs from {golden}"


@pytest.mark.parametrize("case", CASES)
def test_overlays_are_pure(case, monkeypatch):
    """Rendered again with every way to run a program or open a file refusing: the same bytes."""
    first = rendered(case)  # the modules it imports are loaded now; what follows may neither run nor read

    def refuse(*args, **kwargs):
        raise AssertionError(f"an overlay renderer ran or read something: {args[:1]}")

    with monkeypatch.context() as patched:  # undone before pytest itself reads or writes again
        for name in ("run", "Popen", "check_output", "call"):
            patched.setattr(subprocess, name, refuse)
        patched.setattr(os, "system", refuse)
        patched.setattr(builtins, "open", refuse)
        for name in ("resolve", "exists", "is_file", "read_text", "read_bytes", "stat"):
            patched.setattr(Path, name, refuse)
        again = rendered(case)
    assert again == first


def test_the_local_compose_makes_relative_host_paths_absolute_from_the_given_folder():
    text = overlay.local_compose(spec_of("cpu"), "/srv/team", PROJECT, LABELS)
    assert "- /srv/project:/workspace" in text and f"name: {PROJECT}" in text  # the spec's host_path: ../project
    assert all(f"{k}: {v}" in text for k, v in LABELS.items())


def test_the_kube_overlay_says_the_mode_the_token_and_the_kept_claim():
    spec = spec_of("cpu")
    up = overlay.kube_tree(spec, "team", "../base", LABELS, mode="hold")
    down = overlay.kube_tree(spec, "team", "../base", LABELS, keep_claims=True)
    kustomization = f"{overlay.KUBE_OVERLAY}/kustomization.yaml"
    assert "NODEWEAVE_MODE" in up[f"{overlay.KUBE_OVERLAY}/patch-0.yaml"] and "secretGenerator" in up[kustomization]
    assert "secretGenerator" not in down[kustomization]
    assert "$patch: delete" in down[f"{overlay.KUBE_OVERLAY}/patch-0.yaml"]
    assert overlay.kube_token_file() not in up  # a secret is the caller's to make, never rendered


@pytest.mark.parametrize("owner", ["8e123456", "12345678", "0x1f2e3d", "1_000"])
def test_an_owner_id_that_reads_as_a_number_in_yaml_1_2_stays_a_string_for_kustomize(tmp_path, owner):
    """The owner id is hex: some ids (8e123456, all digits) are numbers to kustomize's YAML 1.2 reader, which then
    refused the tree ("cannot unmarshal number into ... commonAnnotations", once in a full suite run). The
    overlay is dumped as every renderer dumps: such strings quoted. Real kubectl kustomize builds it."""
    import shutil

    import yaml

    spec = spec_of("cpu")
    files = overlay.kube_tree(spec, "team", "../base", {**LABELS, "io.nodeweave.owner": owner}, mode="hold")
    text = files[f"{overlay.KUBE_OVERLAY}/kustomization.yaml"]
    assert f"'{owner}'" in text or f'"{owner}"' in text, text
    assert yaml.safe_load(text)["commonAnnotations"]["io.nodeweave.owner"] == owner
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH: the quoting is checked, kustomize's build is not")
    for rel, content in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    (tmp_path / overlay.kube_token_file()).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / overlay.kube_token_file()).write_text("token\n")
    built = subprocess.run(["kubectl", "kustomize", str(tmp_path / overlay.KUBE_OVERLAY)], capture_output=True,
                           text=True, timeout=120)
    assert built.returncode == 0, built.stderr  # before: "cannot unmarshal number into ... commonAnnotations"
    assert owner in built.stdout
