"""The spec's own image contents, built for real: apt packages, a pinned requirements file, project code.

The cpu variant is built by the same Python API ``nodeweave image build`` uses,
offline from the local base and the host's wheelhouse (apt over --network host),
from a spec whose ``image`` adds ``jq`` (apt), a requirements file pinning a
wheel the wheelhouse holds, and a small project built by ``pip install .`` in
its own layer. Then an edit of the entrypoint must rerun only its COPY:
the spec's layers come from the cache like the others.
"""

from __future__ import annotations

import re
import shutil

import pytest

from e2e_harness import REGISTRY, REPO, edit_entrypoint, snapshot_context

pytestmark = pytest.mark.engine

SPEC = f"""name: e2e-contents
image:
  variant: cpu
  registry: {REGISTRY}
  apt: [jq]
  requirements: requirements.txt
  project:
    source: demo
    path: /opt/demo
    run: ["pip install --no-deps --no-build-isolation .", "python -c 'import nwdemo'"]
launcher: {{script: train.py}}
"""
PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "nwdemo"
version = "0.0.1"
"""


def _pinned_wheel():
    """A pure-Python wheel the wheelhouse holds, as ``name==version``."""
    for wheel in sorted((REPO / "wheelhouse").glob("einops-*-py3-none-any.whl")):
        name, version = wheel.name.split("-")[:2]
        return f"{name}=={version}"
    return None


def _build(engine, base_image, spec, context, tmp_path):
    from nodeweave.build import prepare_build, run_build

    prepared = prepare_build(spec, "cpu", context, tmp_path / "scratch", base=base_image, offline=True, network="host",
                             tag="contents-test")
    return run_build(engine, prepared.plan)


def test_apt_requirements_and_project_layers_build_and_stay_cached(engine, base_image, wheelhouse, tmp_path):
    from nodeweave.targets.images import render_files
    from nodeweave.spec import load_spec

    requirement = _pinned_wheel()
    if requirement is None:
        pytest.skip("the wheelhouse holds no einops wheel (bash .ci/wheelhouse.sh cpu fills it)")
    spec_dir = tmp_path / "spec"
    (spec_dir / "demo" / "nwdemo").mkdir(parents=True)
    (spec_dir / "demo" / "pyproject.toml").write_text(PYPROJECT)
    (spec_dir / "demo" / "nwdemo" / "__init__.py").write_text("VALUE = 'built into the image'\n")
    (spec_dir / "requirements.txt").write_text(f"# pinned\n{requirement}\n")
    (spec_dir / "nodeweave.yaml").write_text(SPEC)
    spec = load_spec(spec_dir / "nodeweave.yaml")
    context = snapshot_context(REPO, tmp_path / "context")
    shutil.copytree(spec_dir / "demo", context / "demo")
    shutil.copy(spec_dir / "requirements.txt", context / "requirements.txt")
    (context / ".dockerignore").write_text(render_files(spec)[".dockerignore"])  # what `nodeweave render` writes
    image = f"{REGISTRY}/e2e-contents:contents-test"
    try:
        first = _build(engine, base_image, spec, context, tmp_path)
        out = engine.client.container.run(
            image, ["-c", "jq --version && python -c 'import nwdemo, einops; print(nwdemo.VALUE)'"],
            entrypoint="bash", remove=True)
        assert re.search(r"^jq-\d", out, re.M) and "built into the image" in out, out

        edit_entrypoint(context, "_contents_marker", "MARKER = 1\n")
        second = _build(engine, base_image, spec, context, tmp_path)
        own = [step for step in second.rebuilt_steps if any(mark in step for mark in ("jq", "requirements", "demo"))]
        assert not own, f"the spec's layers ran again after a code-only edit: {own}"
        assert any(step.startswith("COPY entrypoint/") for step in second.rebuilt_steps), second.rebuilt_steps
        assert first.steps == second.steps
    finally:
        for name in (image, f"{REGISTRY}/e2e-contents:cpu"):
            if engine.client.image.exists(name):
                engine.client.image.remove([name], force=True)
