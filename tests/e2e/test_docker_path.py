"""The docker path, for real: Debian's dockerd 20.10 (docker.io, no buildx plugin) beside podman.

``nodeweave image build --engine docker`` builds the rendered cpu Dockerfile
through BuildKit with the classic ``docker build`` (the client has no buildx),
offline on the local base, and a code-only rebuild reports that only the code
layers ran; the rendered ``compose/local.yaml`` runs a 2-node gloo job under
Docker Compose v2; ``nodeweave sync`` pushes a workspace over ``docker exec``
and its digest check catches a file changed behind its back. Skipped, with
the reason, where dockerd cannot start (docker_harness.py finds it).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import urllib.request
import uuid

import pytest

from docker_harness import builds_with_buildkit, candidate_clients, find_docker, table_rows
from e2e_harness import BASE_IMAGE, REGISTRY, REPO, compose_cluster, edit_entrypoint, prepare_workdir, snapshot_context
from test_compose_cluster import SPEC as COMPOSE_SPEC, check_allreduce
from test_push import registry  # noqa: F401 - the loopback registry fixture

pytestmark = [pytest.mark.engine, pytest.mark.docker]

NODEWEAVE = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main(sys.argv[1:]))"]
IMAGE_SPEC = f"""name: e2e-docker
image: {{variant: cpu, registry: {REGISTRY}}}
nodes: 2
gpus_per_node: 2
launcher: {{script: allreduce.py}}
"""
IMAGE = f"{REGISTRY}/e2e-docker:cpu"  # the context is a snapshot, not a git checkout: only the moving tag


@pytest.fixture(scope="module")
def docker(tmp_path_factory):
    setup, problem = find_docker(tmp_path_factory.mktemp("docker"))
    if setup is None:
        pytest.skip(problem)
    return setup


@pytest.fixture
def docker_env(docker, monkeypatch):
    """This test's subprocesses and nodeweave itself talk to the docker of ``docker``."""
    for key, value in docker.env.items():
        monkeypatch.setenv(key, value)
    return docker


def _docker(setup, *args, check=True, timeout=300):
    out = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, **setup.env})
    if check and out.returncode != 0:
        pytest.fail(f"docker {' '.join(args)} failed ({out.returncode}): {out.stderr[-2000:]}")
    return out


def _nodeweave(setup, *args, timeout=1800):
    return subprocess.run([*NODEWEAVE, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, **setup.env, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def docker_base(docker):
    if _docker(docker, "image", "inspect", BASE_IMAGE, check=False).returncode != 0:
        made = subprocess.run(["bash", str(REPO / ".ci" / "make-base-image.sh"), BASE_IMAGE, "docker"],
                              capture_output=True, text=True, timeout=900,
                              env={**os.environ, **docker.env, "NODEWEAVE_DOCKER_HOST": docker.host})
        if made.returncode != 0:
            pytest.fail(f"cannot make {BASE_IMAGE} in docker: {made.stderr[-2000:]}")
    return BASE_IMAGE


def _build(setup, spec, context, base):
    return _nodeweave(setup, "image", "build", "cpu", "--spec", str(spec), "--context", str(context),
                      "--base", base, "--offline", "--network", "host", "--engine", "docker", "--quiet",
                      "--force")  # the checkout's own tag, which an earlier run built from another temporary folder


def _image_id(out) -> str:
    return table_rows(out.stdout)["id"][0].removeprefix("sha256:")


@pytest.fixture(scope="module")
def docker_image(docker, docker_base, request, tmp_path_factory):
    """The cpu image, built cold by `nodeweave image build --engine docker` from a still copy of the checkout.

    The session's wheelhouse is asked for here, once ``docker`` has answered: as a parameter, pytest would
    set it up first (a session fixture before this module's ``docker``), filling wheelhouse/ on a machine
    without docker, or failing there offline, where these tests must skip."""
    request.getfixturevalue("wheelhouse")
    work = tmp_path_factory.mktemp("docker-build")
    spec = prepare_workdir(work / "spec", IMAGE_SPEC)
    context = snapshot_context(REPO, work / "context")
    out = _build(docker, spec, context, docker_base)
    if out.returncode != 0:
        pytest.fail(f"docker build failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}")
    built = {"spec": spec, "context": context, "out": out, "ids": [_image_id(out)]}
    yield built
    # the tag, then each build's image: a rebuild leaves the one before it untagged
    _docker(docker, "image", "rm", "-f", IMAGE, check=False)
    _docker(docker, "image", "rm", *built["ids"], check=False)


def test_build_runs_buildkit_through_the_client_that_has_no_buildx(docker, docker_env, docker_image):
    """The engine nodeweave finds is this dockerd; without buildx it builds through `docker build` +
    BuildKit, offline: the rendered Dockerfile's frontend pin is left out, the rest builds as rendered."""
    from nodeweave.build import CLASSIC_BUILDKIT, detect_engine

    engine = detect_engine("docker")
    has_buildx = _docker(docker, "buildx", "version", check=False).returncode == 0
    assert (engine.builder == CLASSIC_BUILDKIT) == (not has_buildx), (engine, docker.client_version)
    out = docker_image["out"]
    if not has_buildx:
        assert "BuildKit through `docker build`" in out.stderr, out.stderr[-3000:]
    assert "without its `# syntax=docker/dockerfile:1` line" in out.stderr
    # BuildKit starts independent steps at once and reports each as it starts: a COPY from the context may
    # come before the RUN above it, so the order checked is the steps' own numbers
    steps = sorted((int(n), int(total), word) for n, total, word in
                   re.findall(r"^step (\d+)/(\d+): (\S+)", out.stderr, re.M))
    assert [n for n, _, _ in steps] == list(range(1, steps[0][1] + 1)), steps  # every step, each once
    assert [word for _, _, word in steps][:2] == ["FROM", "RUN"], steps
    assert table_rows(out.stdout)["image"] == [IMAGE]

    image = engine.client.image.inspect(IMAGE)
    assert list(image.config.entrypoint) == ["tini", "-g", "--", "nodeweave-entrypoint"]
    assert image.config.labels["io.nodeweave.variant"] == "cpu"
    assert image.config.labels["org.opencontainers.image.base.name"] == BASE_IMAGE
    shown = _docker(docker, "run", "--rm", "--entrypoint", "bash", IMAGE, "-c",
                    "id -u; python -c 'import torch, deepspeed, accelerate, nodeweave; print(torch.__version__)'")
    lines = shown.stdout.splitlines()  # DeepSpeed logs to stdout in between
    assert lines[0] == "1000" and lines[-1].startswith("2.13.0"), shown.stdout


def test_code_only_rebuild_reports_only_the_code_layers(docker, docker_env, docker_image, docker_base):
    """An edit of the entrypoint (new content every run, so no earlier run's cache answers it): the
    summary's cache report lists its COPY and the RUN that unpacks and compiles it as the steps that ran,
    nothing heavier."""
    marker = uuid.uuid4().hex
    edit_entrypoint(docker_image["context"], "_docker_marker", f"MARKER = {marker!r}\n")
    out = _build(docker, docker_image["spec"], docker_image["context"], docker_base)
    assert out.returncode == 0, out.stderr[-5000:]
    rows = table_rows(out.stdout)
    docker_image["ids"].append(_image_id(out))
    total, cached = map(int, re.fullmatch(r"(\d+) \((\d+) from cache\)", rows["steps"][0]).groups())
    ran = [step for step in rows.get("ran", []) if not step.startswith("WORKDIR")]
    assert len(ran) == 2 and ran[0].startswith("COPY entrypoint/nodeweave-entrypoint.pyz "), rows
    assert ran[1].startswith("RUN python3 -m zipfile -e /opt/nodeweave/nodeweave-entrypoint.pyz"), rows
    assert cached >= total - 4, rows  # FROM, the entrypoint's COPY, its RUN and the WORKDIR after it may run
    cold, warm = (float(table_rows(o.stdout)["time"][0].split()[0]) for o in (docker_image["out"], out))
    print(f"docker cold build {cold:.1f} s, code-only rebuild {warm:.1f} s")
    shown = _docker(docker, "run", "--rm", "--entrypoint", "python", IMAGE, "-c",
                    "from nodeweave import _docker_marker; print(_docker_marker.MARKER)")
    assert shown.stdout.strip() == marker, "the rebuilt image must carry the edited code"


def test_compose_local_runs_a_two_node_gloo_job(docker, docker_env, docker_image, tmp_path):
    """The rendered compose/local.yaml under Docker Compose v2 (`docker compose`): 2 nodes × 2 ranks."""
    if docker.compose_problem:
        pytest.skip(docker.compose_problem)
    from nodeweave.build import detect_engine

    spec_path = prepare_workdir(tmp_path, COMPOSE_SPEC.format(name="e2e-dk", launcher="torchrun"))
    cluster = compose_cluster(detect_engine("docker"), spec_path, IMAGE)
    cluster.remove()  # leftovers of an interrupted run
    try:
        cluster.up()
        codes = cluster.wait_exit(timeout=300)
        check_allreduce(cluster, nodes=2, nproc=2, codes=codes)
        for index, node in enumerate(cluster.names):
            log = cluster.logs(node)
            assert f"node {index} of 2" in log and "run torchrun" in log, log
    finally:
        cluster.remove()
    assert not _docker(docker, "ps", "-aq", "--filter", "name=e2e-dk-").stdout.strip()


def test_a_client_from_23_on_without_buildx_is_refused_with_the_reason(docker, tmp_path):
    """Such a client can only run the legacy builder, which lacks RUN --mount: exit 3, naming client and cure."""
    newer = [client for client in candidate_clients() if not builds_with_buildkit(client)[0]]
    if not newer:
        pytest.skip("every docker client here can build with BuildKit (buildx, or one older than 23.0)")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "docker").symlink_to(newer[0])
    spec = prepare_workdir(tmp_path / "spec", IMAGE_SPEC)
    out = subprocess.run([*NODEWEAVE, "image", "build", "cpu", "--spec", str(spec), "--engine", "docker",
                          # a complete context: the refusal is the client's, not the folder's
                          "--context", str(snapshot_context(REPO, tmp_path / "context"))],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "DOCKER_HOST": docker.host, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"})
    version = builds_with_buildkit(newer[0])[1]
    assert out.returncode == 3, out.stdout + out.stderr
    assert f"client {version}" in out.stderr and "has no buildx plugin" in out.stderr and "Traceback" not in out.stderr


def _tree_digest(files: dict) -> dict:
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


@pytest.mark.usefixtures("own_digest_cache")
def test_sync_over_docker_exec_and_its_digest_check(docker, docker_env, docker_base, tmp_path):
    """`nodeweave sync --node docker:NAME` into a running container; the files are read back with the
    container's own sha256sum, and `--check` fails once a file is changed inside the container."""
    files = {"train.py": b"print('hi')\n", "conf/a b.yaml": b"lr: 3e-4\n", "data/blob.bin": bytes(range(256)) * 64}
    src = tmp_path / "ws"
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    name = f"nwdsync-{uuid.uuid4().hex[:6]}"
    dest = "/workspace/proj"
    _docker(docker, "run", "-d", "--name", name, docker_base, "sleep", "infinity")
    try:
        synced = _nodeweave(docker, "sync", str(src), dest, "--node", f"docker:{name}", timeout=300)
        assert synced.returncode == 0, synced.stdout[-3000:] + synced.stderr[-3000:]
        listed = _docker(docker, "exec", "-w", dest, name, "sh", "-c", "find . -type f -print0 | xargs -0 sha256sum")
        inside = {line.split(None, 1)[1].removeprefix("./"): line.split()[0] for line in listed.stdout.splitlines()}
        assert {k: v for k, v in inside.items() if not k.startswith(".")} == _tree_digest(files), inside
        assert _nodeweave(docker, "sync", str(src), dest, "--node", f"docker:{name}", "--check").returncode == 0

        _docker(docker, "exec", name, "sh", "-c", f"echo changed >> '{dest}/conf/a b.yaml'")
        checked = _nodeweave(docker, "sync", str(src), dest, "--node", f"docker:{name}", "--check")
        assert checked.returncode == 1 and f"docker:{name}" in checked.stderr, checked.stdout + checked.stderr
        resynced = _nodeweave(docker, "sync", str(src), dest, "--node", f"docker:{name}", timeout=300)
        assert resynced.returncode == 0, resynced.stderr[-3000:]
        assert _nodeweave(docker, "sync", str(src), dest, "--node", f"docker:{name}", "--check").returncode == 0
    finally:
        _docker(docker, "rm", "-f", name, check=False)


def test_a_docker_push_records_the_digest_the_registry_serves(docker, docker_env, docker_base, registry):
    """docker says a pushed image's digest only in RepoDigests after the push (podman's --digestfile is
    test_push.py's): nodeweave's push reads it there, and it is the registry's own for that tag."""
    from nodeweave.build import detect_engine
    from nodeweave.build.pushed import push_tags

    tag = f"{registry}/team/docker-pushed:base"
    _docker(docker, "tag", docker_base, tag)
    try:
        digests = push_tags(detect_engine("docker"), [tag])
        head = urllib.request.Request(f"http://{registry}/v2/team/docker-pushed/manifests/base", method="HEAD",
                                      headers={"Accept": "application/vnd.oci.image.manifest.v1+json, "
                                                         "application/vnd.docker.distribution.manifest.v2+json"})
        with urllib.request.urlopen(head, timeout=10) as answer:
            assert digests == {tag: answer.headers["Docker-Content-Digest"]}, digests
    finally:
        _docker(docker, "image", "rm", tag, check=False)


def test_node_0s_crashed_container_comes_back_through_dockers_restart_policy(docker, docker_env, docker_image,
                                                                            tmp_path):
    """Recovery's ``restart: on-failure`` under dockerd: node 0's PID 1 killed from the host, docker starts the
    container again, node 0 takes the book the other node kept and training resumes from the newest checkpoint
    (the podman twin: test_recovery.py)."""
    if docker.compose_problem:
        pytest.skip(docker.compose_problem)
    from nodeweave.build import detect_engine
    from test_recovery import HOLD_12, RUN, SPEC as RECOVERY_SPEC, _crash, _inspect, _release, _resumed

    engine = detect_engine("docker")
    spec_path = prepare_workdir(tmp_path, RECOVERY_SPEC.format(name="e2e-dkr0", args=f'{RUN}, {HOLD_12}', nodes="2",
                                                               spares=0))
    (tmp_path / "checkpoints").mkdir(mode=0o777)
    (tmp_path / "checkpoints").chmod(0o777)  # the image's uid 1000 saves there
    cluster = compose_cluster(engine, spec_path, IMAGE)
    cluster.remove()
    try:
        cluster.up()
        cluster.wait_log("e2e-dkr0-0", "RECOVERY-HOLD gen=0 step=12", timeout=240)
        _crash(engine, "e2e-dkr0-0")
        _release(tmp_path, 0, 12)
        codes = cluster.wait_exit(timeout=300)
        logs = {name: cluster.logs(name) for name in cluster.names}
        restarts = {name: _inspect(engine, name, "{{.RestartCount}}") for name in cluster.names}
    finally:
        cluster.remove()
    assert codes == {"e2e-dkr0-0": 0, "e2e-dkr0-1": 0}, logs
    assert restarts == {"e2e-dkr0-0": "1", "e2e-dkr0-1": "0"}, restarts  # docker restarted node 0 only
    node0 = logs["e2e-dkr0-0"]
    assert "recovery: node 0 came back; the other nodes ask for generation 1" in node0, node0
    assert _resumed(node0) == [(1, "checkpoints/step-10.pt", 10)], node0  # the crash landed at step 12
    assert "RECOVERY-DONE gen=1 step=30 state=30" in node0, node0
