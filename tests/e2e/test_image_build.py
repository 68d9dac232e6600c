"""The cpu image, built by ``nodeweave image build`` with a real engine, is what the contract says."""

from __future__ import annotations

import re
import subprocess

import pytest

from e2e_harness import REGISTRY, REPO, edit_entrypoint, snapshot_context

pytestmark = pytest.mark.engine


def test_build_tags_sha_and_moving_tag(engine, image_build, cpu_image):
    image = engine.client.image.inspect(cpu_image)
    tags = set(image.repo_tags)
    assert cpu_image in tags
    labels = image.config.labels
    revision = labels["org.opencontainers.image.revision"]
    assert f"{REGISTRY}/e2e:cpu-{revision}" in tags, (tags, revision)
    sha = revision.removesuffix("-dirty")
    assert re.fullmatch(r"[0-9a-f]{12}", sha), revision
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True)
    assert known.returncode == 0, f"{sha} is not a commit of this checkout"
    assert labels["io.nodeweave.variant"] == "cpu"
    assert labels["org.opencontainers.image.base.name"] == "localhost/nodeweave-base:bookworm"


def test_image_runs_tini_then_the_entrypoint_as_uid_1000(engine, cpu_image):
    config = engine.client.image.inspect(cpu_image).config
    assert list(config.entrypoint) == ["tini", "-g", "--", "nodeweave-entrypoint"]
    assert config.user == "1000:0"
    out = engine.client.container.run(
        cpu_image, ["-c", "id -u; id -g; command -v nodeweave-entrypoint; command -v nodeweave || echo no-cli; "
                    "python -c 'import nodeweave.check.worker as w; print(w.__file__)'; "
                    "find /opt/nodeweave/lib -name '*.py' | wc -l; find /opt/nodeweave/lib -name '*.pyc' | wc -l; "
                    "python -c 'import torch, deepspeed, accelerate; print(torch.__version__)'"],
        entrypoint="bash", remove=True)
    lines = out.splitlines()
    assert lines[0] == "1000" and lines[1] == "0"
    assert lines[2] == "/usr/local/bin/nodeweave-entrypoint", "the rendered zipapp's, not nodeweave's sources"
    assert lines[3] == "no-cli", "the CLI runs on the workstation; the image holds only the entrypoint"
    assert lines[4] == "/opt/nodeweave/lib/nodeweave/check/worker.py", "the check worker, from the zipapp"
    assert int(lines[6]) >= int(lines[5]) > 50, "every module of the unpacked zipapp compiled in the image"
    assert lines[-1].startswith("2.13.0")


REBUILD_SPEC = f"""name: e2e-rebuild
image: {{variant: cpu, registry: {REGISTRY}}}
nodes: 2
gpus_per_node: 2
launcher: {{script: allreduce.py}}
"""


def _build(base_image, engine, context, tag, tmp_path):
    """Build through the Python API the CLI uses, to read the BuildResult (own job name: own tags)."""
    from nodeweave.build import prepare_build, run_build
    from nodeweave.spec import parse_spec

    prepared = prepare_build(parse_spec(REBUILD_SPEC, "rebuild.yaml"), "cpu", context, tmp_path / "scratch",
                             base=base_image, offline=True, network="host", tag=tag)
    result = run_build(engine, prepared.plan)
    return result.steps, result.cached_steps, list(result.rebuilt_steps)


def test_rebuild_is_cached_and_a_code_edit_reruns_only_the_code_layers(engine, image_build, base_image, tmp_path):
    """Unchanged tree: every step but FROM comes from the cache. An edit of the entrypoint: only the
    steps from its ``COPY`` on run again (the COPY and the RUN that unpacks and compiles it); the apt,
    torch and DeepSpeed layers stay cached."""
    context = snapshot_context(REPO, tmp_path / "context")
    tag = "rebuild-test"
    try:
        _build(base_image, engine, context, tag, tmp_path)
        total, cached, ran = _build(base_image, engine, context, tag, tmp_path)
        assert cached == total - 1 and not ran, f"only FROM may be outside the cache; ran: {ran}"

        edit_entrypoint(context, "_rebuild_marker", "MARKER = 1\n")
        total, cached, ran = _build(base_image, engine, context, tag, tmp_path)
        unpack = "RUN python3 -m zipfile -e /opt/nodeweave/nodeweave-entrypoint.pyz"
        heavy = [step for step in ran if step.startswith("RUN") and not step.startswith(unpack)]
        assert not heavy, f"dependency layers ran again after a code-only edit: {heavy}"
        assert any(step.startswith("COPY entrypoint/nodeweave-entrypoint.pyz") for step in ran), ran
        shown = engine.client.container.run(
            f"{REGISTRY}/e2e-rebuild:{tag}", ["-c", "from nodeweave import _rebuild_marker; print(_rebuild_marker.MARKER)"],
            entrypoint="python", remove=True)
        assert shown.strip() == "1", "the rebuilt image must carry the edited code"
    finally:
        for name in (f"{REGISTRY}/e2e-rebuild:{tag}", f"{REGISTRY}/e2e-rebuild:cpu"):
            if engine.client.image.exists(name):
                engine.client.image.remove([name], force=True)
