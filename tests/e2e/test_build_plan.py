"""The build planner and the build-log parser, without an engine.

The podman log below was captured from a real `podman build` (4.3) of a
four-step Dockerfile, built twice; the buildx log is docker's plain progress
format; fixtures/buildkit-classic-*.log were captured from Debian's docker
20.10 (`DOCKER_BUILDKIT=1 docker build --progress plain`, no buildx) building
a four-step Dockerfile, then again after its COPY source changed. Engine runs
of the real image are in test_image_build.py and test_docker_path.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nodeweave.build import BuildProgress, Revision, prepare_build
from nodeweave.resolve import resolve
from nodeweave.build.context import link_wheelhouse
from nodeweave.spec import load_spec, parse_spec

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]

PODMAN_COLD = """STEP 1/4: FROM localhost/nodeweave-base:bookworm
STEP 2/4: RUN echo one > /one
--> 0d70c5d8ccb
STEP 3/4: COPY a.txt /a.txt
--> 3daa5d1fe78
STEP 4/4: RUN cat /a.txt
hi
COMMIT localhost/pbt:x
--> c6e327d0cd4
Successfully tagged localhost/pbt:x
"""
PODMAN_WARM = """STEP 1/4: FROM localhost/nodeweave-base:bookworm
STEP 2/4: RUN echo one > /one
--> Using cache 0d70c5d8ccb47dfdcddbbf6557e739c90fea9e02e5591cf4365fa4cc79d19bda
--> 0d70c5d8ccb
STEP 3/4: COPY a.txt /a.txt
--> Using cache 3daa5d1fe786d18b740125ed90df6366fb8b32770800e595f3c2d95dd6212dba
--> 3daa5d1fe78
STEP 4/4: RUN cat /a.txt
hi
COMMIT localhost/pbt:x
"""

SPEC = """name: trainer
image: {variant: cpu, registry: registry.example/team, build_args: {PIP_EXTRA: "x"}}
nodes: 2
gpus_per_node: 2
launcher: {script: allreduce.py}
"""


def _feed(text: str) -> BuildProgress:
    progress = BuildProgress()
    for line in text.splitlines():
        progress.feed(line)
    return progress


def with_entrypoint(context: Path) -> Path:
    """What `nodeweave render` writes into a team's folder and the Dockerfile copies: the zipapp."""
    from nodeweave.targets import zipapp

    target = context / zipapp.PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(zipapp.build(zipapp.package_root()))
    return context


def test_podman_cold_build_counts_steps_and_no_cache():
    progress = _feed(PODMAN_COLD)
    assert len(progress.steps) == 4
    assert progress.cached == []
    assert progress.rebuilt == ["RUN echo one > /one", "COPY a.txt /a.txt", "RUN cat /a.txt"]


def test_podman_warm_build_names_the_steps_that_ran():
    progress = _feed(PODMAN_WARM)
    assert len(progress.cached) == 2
    assert progress.rebuilt == ["RUN cat /a.txt"]


def test_buildx_plain_log_names_cached_and_rebuilt_steps():
    progress = _feed((FIXTURES / "buildx-plain.log").read_text())
    assert len(progress.steps) == 6
    assert len(progress.cached) == 4
    assert progress.rebuilt == ["RUN --mount=type=bind,target=/tmp/nodeweave-context pip install --no-deps /tmp/nodeweave-src"]


def test_classic_buildkit_log_counts_steps_and_the_cache():
    cold = _feed((FIXTURES / "buildkit-classic-cold.log").read_text())
    assert len(cold.steps) == 4
    assert cold.rebuilt == ["RUN --mount=type=cache,target=/root/.cache echo one > /one", "COPY a.txt /a.txt",
                            "RUN cat /a.txt"]
    edited = _feed((FIXTURES / "buildkit-classic-edit.log").read_text())
    assert len(edited.steps) == 4 and len(edited.cached) == 1
    assert edited.rebuilt == ["COPY a.txt /a.txt", "RUN cat /a.txt"]


def test_classic_buildkit_command_line_is_docker_build_with_buildkit_on(tmp_path):
    from nodeweave.build import CLASSIC_BUILDKIT

    plan = prepare_build(parse_spec(SPEC, "test.yaml"), "cpu", REPO, tmp_path / "scratch", network="host",
                         dry_run=True).plan
    command = plan.command("docker", CLASSIC_BUILDKIT)
    assert command.startswith("DOCKER_BUILDKIT=1 docker build --progress plain --file ")
    assert "buildx" not in command and "--network host" in command
    assert plan.command("docker").startswith("docker buildx build --progress plain --load --file ")  # as it runs


def test_offline_docker_build_drops_only_the_frontend_pin(tmp_path):
    """BuildKit would fetch docker/dockerfile:1 from Docker Hub; podman ignores the line, so only docker loses it."""
    from nodeweave.build.context import without_frontend_pin
    from nodeweave.targets.images import render_files

    spec = parse_spec(SPEC, "test.yaml")
    rendered = render_files(spec)["images/cpu/Dockerfile"]
    assert rendered.startswith("# syntax=docker/dockerfile:1\n")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("torch-2.13.0-cp311-cp311-linux_x86_64.whl", "setuptools-84.2.1-py3-none-any.whl",
                 "deepspeed-0.19.8.tar.gz", "accelerate-1.15.0-py3-none-any.whl"):  # what the image installs by name
        (wheels / name).write_bytes(b"")  # (walk9 A5: an offline wheelhouse lacking one is refused before any layer)
    for kind, offline, pinned in [("docker", True, False), ("docker", False, True), ("podman", True, True)]:
        context = with_entrypoint(tmp_path / f"{kind}-{offline}")
        prepared = prepare_build(spec, "cpu", context, context / "scratch", offline=offline, wheelhouse=wheels,
                                 engine_kind=kind)
        text = prepared.plan.dockerfile.read_text()
        assert text == (rendered if pinned else rendered.split("\n", 1)[1]), (kind, offline)
        assert ("without its `# syntax=docker/dockerfile:1` line" in prepared.notes[0]) is not pinned
    assert without_frontend_pin("# escape=`\n# Syntax = a/b:1\nFROM x\n") == ("# escape=`\nFROM x\n", "a/b:1")
    assert without_frontend_pin("FROM x\n# syntax=a/b:1\n") == ("FROM x\n# syntax=a/b:1\n", None)


def _view(variant="cpu", tag=None):
    tag_field = f", tag: {tag}" if tag else ""
    return resolve(parse_spec(f"name: job\nimage: {{variant: {variant}, registry: reg.io/t{tag_field}}}\n"
                              "launcher: {script: t.py}\n"))


def test_tags_immutable_first_then_moving():
    assert _view().build_tags(Revision("abc123def456").tag_suffix) == ("reg.io/t/job:cpu-abc123def456", "reg.io/t/job:cpu")
    assert _view().build_tags(Revision("abc", dirty=True).tag_suffix)[0] == "reg.io/t/job:cpu-abc-dirty"
    assert _view("cuda12").build_tags("abc", fixed="v1.2") == ("reg.io/t/job:v1.2", "reg.io/t/job:cuda12")
    assert _view("cuda12", tag="v1.2").build_tags("abc") == ("reg.io/t/job:v1.2", "reg.io/t/job:cuda12")
    assert _view().build_tags(None) == ("reg.io/t/job:cpu",)


def test_plan_carries_spec_args_base_override_and_offline(tmp_path):
    spec = parse_spec(SPEC, "test.yaml")
    prepared = prepare_build(spec, "cpu", REPO, tmp_path / "scratch", base="localhost/base:1", offline=False,
                             network="host", build_args={"PIP_EXTRA": "y"}, dry_run=True)
    plan = prepared.plan
    assert plan.build_args["BASE_IMAGE"] == "localhost/base:1"
    assert plan.build_args["PIP_EXTRA"] == "y"  # --build-arg wins over image.build_args
    assert "PIP_NO_INDEX" not in plan.build_args
    assert plan.tags[0].startswith("registry.example/team/trainer:cpu-")
    assert plan.tags[1] == "registry.example/team/trainer:cpu"
    assert "--network host" in plan.command("podman")
    assert not (tmp_path / "scratch").exists(), "a dry run writes nothing"


def test_per_build_labels_are_passed_as_label_flags(tmp_path):
    # buildah leaves ARG values out of its cache key: a cached LABEL step kept the
    # previous build's revision on CI, so the values that change per build go as --label.
    spec = parse_spec(SPEC, "test.yaml")
    plan = prepare_build(spec, "cpu", REPO, tmp_path / "scratch", base="localhost/base:1", offline=False,
                         dry_run=True).plan
    revision = plan.build_args["REVISION"]
    assert plan.labels["org.opencontainers.image.revision"] == revision
    assert plan.labels["org.opencontainers.image.base.name"] == "localhost/base:1"
    assert f"--label org.opencontainers.image.revision={revision}" in plan.command("podman")


def test_wheelhouse_links_new_wheels_and_keeps_existing(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "a-1.0-py3-none-any.whl").write_text("new")
    (source / "b-1.0-py3-none-any.whl").write_text("new")
    (source / "notes.txt").write_text("not a wheel")
    context = tmp_path / "ctx"
    (context / "wheelhouse").mkdir(parents=True)
    (context / "wheelhouse" / "a-1.0-py3-none-any.whl").write_text("mine")
    house, count = link_wheelhouse(context, source)
    assert count == 2
    assert (house / "a-1.0-py3-none-any.whl").read_text() == "mine"
    assert (house / "b-1.0-py3-none-any.whl").read_text() == "new"
    assert not (house / "notes.txt").exists()


def _cli(*args, env=None, cwd=None):
    runner = "import sys; from nodeweave.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", runner, *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_cli_dry_run_prints_the_command(tmp_path):
    """Independent of the repository's wheelhouse/ (empty on a fresh clone): --offline needs wheels offered."""
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    from nodeweave.resolve import resolve
    from nodeweave.spec import load_spec

    for pin in resolve(load_spec(spec), "cpu").variant.pip_requirements:  # every pin the image installs by name
        name, _, version = pin.partition("==")
        (wheels / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(b"")
    out = _cli("image", "build", "cpu", "--spec", str(spec), "--context", str(REPO),
               "--base", "registry.example/team/base:1", "--offline", "--wheelhouse", str(wheels), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "--build-arg BASE_IMAGE=registry.example/team/base:1" in out.stdout
    assert "--build-arg PIP_NO_INDEX=1" in out.stdout
    assert "registry.example/team/trainer:cpu" in out.stdout


def test_cli_unknown_variant_is_a_usage_error(tmp_path):
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC)
    out = _cli("image", "build", "rocm99", "--spec", str(spec), "--dry-run")
    assert out.returncode == 2
    assert "rocm99" in out.stderr and "cpu" in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_without_any_engine_exits_3_naming_both(tmp_path):
    """PATH holds only python: neither docker nor podman can answer."""
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(sys.executable)
    (bindir / "git").symlink_to(subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip())
    env = {"PATH": str(bindir), "HOME": str(tmp_path / "home")}  # never the project folder: a spec in a home is refused
    out = _cli("image", "build", "cpu", "--spec", str(spec), "--context", str(with_entrypoint(tmp_path)), env=env)
    assert out.returncode == 3, out.stderr
    assert "no container engine" in out.stderr and "docker" in out.stderr and "podman" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("value", ["containerd", "DOCKER"])
def test_engine_override_must_name_a_known_engine(value, tmp_path):
    import os

    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC)
    out = _cli("image", "build", "cpu", "--spec", str(spec), "--context", str(with_entrypoint(tmp_path)),
               env={**os.environ, "NODEWEAVE_ENGINE": value})
    assert out.returncode == 2
    assert "NODEWEAVE_ENGINE" in out.stderr and value in out.stderr



def test_cli_offline_with_an_empty_wheelhouse_is_a_usage_error(tmp_path):
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC)
    with_entrypoint(tmp_path)
    out = _cli("image", "build", "cpu", "--spec", str(spec), "--offline", "--dry-run")
    assert out.returncode == 2, out.stderr
    assert "--offline needs wheels" in out.stderr and str(tmp_path / "wheelhouse") in out.stderr


def test_cli_bad_build_arg_names_the_flag(tmp_path):
    spec = tmp_path / "nodeweave.yaml"
    spec.write_text(SPEC)
    out = _cli("image", "build", "cpu", "--spec", str(spec), "--build-arg", "NOEQUALS", "--dry-run")
    assert out.returncode == 2 and "--build-arg 'NOEQUALS'" in out.stderr and "KEY=VALUE" in out.stderr


# -- a spec's tag and base belong to its own variant (issue 10's two image-reference bugs) --------

OTHER_VARIANT_SPEC = """name: trainer
image: {variant: cuda12, registry: registry.example/team, tag: v1, base: localhost/my-cuda:1}
nodes: 2
gpus_per_node: 2
launcher: {script: allreduce.py}
"""


def test_building_another_variant_does_not_take_the_specs_fixed_tag(tmp_path):
    """`image build cpu --push` for a cuda12 spec tagged v1 must not push :v1, the tag its manifests deploy."""
    spec = parse_spec(OTHER_VARIANT_SPEC)
    plan = prepare_build(spec, "cpu", REPO, tmp_path / "scratch", push=True, dry_run=True).plan
    assert not any(tag.endswith(":v1") for tag in plan.tags), plan.tags
    assert plan.tags[-1] == "registry.example/team/trainer:cpu"
    own = prepare_build(spec, "cuda12", REPO, tmp_path / "scratch", push=True, dry_run=True).plan
    assert own.tags == ("registry.example/team/trainer:v1", "registry.example/team/trainer:cuda12")


def test_building_another_variant_keeps_its_catalogue_base(tmp_path):
    """A spec's image.base is made for its own stack: it must not become BASE_IMAGE of another variant."""
    spec = parse_spec(OTHER_VARIANT_SPEC)
    plan = prepare_build(spec, "cpu", REPO, tmp_path / "scratch", dry_run=True).plan
    assert "BASE_IMAGE" not in plan.build_args, plan.build_args
    own = prepare_build(spec, "cuda12", REPO, tmp_path / "scratch", dry_run=True).plan
    assert own.build_args["BASE_IMAGE"] == "localhost/my-cuda:1"


def test_the_built_dockerfile_is_the_one_render_commits_for_that_variant(tmp_path):
    """The Dockerfile a build of another variant uses is byte-identical to the rendered images/<variant>/Dockerfile."""
    from nodeweave.targets.images import render_files

    spec = parse_spec(OTHER_VARIANT_SPEC)
    files = render_files(spec)
    scratch = tmp_path / "scratch"
    prepare_build(spec, "cpu", with_entrypoint(tmp_path), scratch)
    assert (scratch / "Dockerfile").read_text() == files["images/cpu/Dockerfile"]
    assert "localhost/my-cuda:1" not in files["images/cpu/Dockerfile"]


CONTENTS_SPEC = """name: contents
image: {variant: cpu, requirements: req.txt, project: {source: demo, run: ["pip install --no-deps ."]}}
launcher: {script: train.py}
"""


def test_a_build_refuses_a_context_that_lacks_or_ignores_what_the_image_reads(tmp_path):
    from nodeweave.errors import UsageError
    from nodeweave.targets.images import render_files

    (tmp_path / "req.txt").write_text("einops==0.8.2\n")
    (tmp_path / "nodeweave.yaml").write_text(CONTENTS_SPEC)
    with_entrypoint(tmp_path)
    with pytest.raises(UsageError, match=r"image.project.source"):  # the spec itself refuses it now (walk5 W78)
        load_spec(tmp_path / "nodeweave.yaml")
    (tmp_path / "demo").mkdir()
    spec = load_spec(tmp_path / "nodeweave.yaml")
    (tmp_path / "demo").rmdir()  # gone between validate and the build: the build still names it
    with pytest.raises(UsageError, match=r"image.project.source: 'demo' is not in the build context"):
        prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True)
    (tmp_path / "demo").mkdir()
    # an old rendering, from before image.project: rendering again mends it
    (tmp_path / ".dockerignore").write_text("# Rendered by nodeweave: the image build context\n*\n!src/\n")
    with pytest.raises(UsageError, match=r"image.requirements: .*\.dockerignore keeps 'req.txt' out of the build; "
                                         r"run `nodeweave render images`"):
        prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True)
    # a team's own file: rendering leaves it alone, so the hint is the line to add
    (tmp_path / ".dockerignore").write_text("node_modules/\n*.txt\n")
    with pytest.raises(UsageError, match=r"image.requirements: .*\.dockerignore keeps 'req.txt' out of the build; "
                                         r"add the line '!req.txt' at its end"):
        prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True)
    (tmp_path / ".dockerignore").write_text(render_files(spec)[".dockerignore"])
    assert prepare_build(spec, "cpu", tmp_path, tmp_path / "scratch", dry_run=True).plan.variant == "cpu"
