"""Session fixtures of the end-to-end tests: the engine, the offline base, the wheelhouse, the cpu image.

The cpu image is built once per test run (by the first xdist worker that needs
it: once_per_run) by ``nodeweave image build`` itself
(the command users run), from the Dockerfile the images renderer makes, on
the locally made Debian base and the host's wheelhouse: no registry is
reachable here. Tests marked ``engine`` are skipped by tests/conftest.py with
the reason when no engine can start.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_harness import BASE_IMAGE, REGISTRY, REPO, checkout_context, prepare_workdir
# The spec the session's image is built from; clusters reuse the image (compose sets each command).
IMAGE_SPEC = f"""name: e2e
image: {{variant: cpu, registry: {REGISTRY}}}
nodes: 2
gpus_per_node: 2
launcher: {{script: allreduce.py}}
"""


def _run(argv, timeout):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if out.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


def once_per_run(name: str, make, tmp_path_factory):
    """``make()``'s JSON result, made once per test run whichever xdist worker asks first.

    The groups of tests/conftest.py run in several workers, each its own session, and the session
    fixtures below write what they all share (the engine's base and cpu image tags, wheelhouse/): the first
    worker makes it under a file lock in the run's temporary folder (the workers' basetemp's parent, which
    pytest rotates away), the others wait on the lock and take its result. Without xdist (one process)
    ``make()`` just runs; a ``make()`` that fails leaves nothing, so the next worker tries again and fails
    with its own reason.
    """
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return make()
    folder = tmp_path_factory.getbasetemp().parent
    with open(folder / f"nodeweave-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = folder / f"nodeweave-{name}.json"
        if made.exists():
            return json.loads(made.read_text())
        result = make()
        made.write_text(json.dumps(result))
        return result


@pytest.fixture(scope="session")
def engine():
    """podman, which tests/conftest.py gates these tests on; the docker path has its own
    tests (test_docker_path.py), so a dockerd that answers here changes nothing else."""
    from nodeweave.build import detect_engine

    return detect_engine("podman")


@pytest.fixture(scope="session")
def base_image(engine, tmp_path_factory):
    if engine.kind != "podman":
        pytest.skip("the offline Debian base is made with podman import (.ci/make-base-image.sh)")

    def make():
        if not engine.client.image.exists(BASE_IMAGE):
            _run(["bash", ".ci/make-base-image.sh", BASE_IMAGE], timeout=900)
        return BASE_IMAGE

    return once_per_run("base-image", make, tmp_path_factory)


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory):
    once_per_run("wheelhouse", lambda: _run(["bash", ".ci/wheelhouse.sh", "cpu"], timeout=900).returncode,
                 tmp_path_factory)
    return REPO / "wheelhouse"


@pytest.fixture(scope="session")
def image_build(engine, base_image, wheelhouse, tmp_path_factory):
    """The cpu variant built by ``nodeweave image build`` (once per run: once_per_run); its output and the spec used."""

    def make():
        spec_path = prepare_workdir(tmp_path_factory.mktemp("image-spec"), IMAGE_SPEC)
        context = checkout_context(REPO, tmp_path_factory.mktemp("image-context") / "checkout")
        argv = [sys.executable, "-c", "import sys; from nodeweave.cli import main; sys.exit(main(sys.argv[1:]))",
                "image", "build", "cpu", "--spec", str(spec_path), "--context", str(context),
                "--base", base_image, "--offline", "--network", "host", "--quiet", "--engine", engine.kind,
                "--force"]  # the run's own tag (REGISTRY: this checkout's): an earlier run's build from another folder
        out = _run(argv, timeout=1800)
        return {"spec": str(spec_path), "stdout": out.stdout, "stderr": out.stderr}

    built = once_per_run("cpu-image", make, tmp_path_factory)
    return {**built, "spec": Path(built["spec"])}


@pytest.fixture(scope="session")
def cpu_image(image_build):
    """The moving tag of the session's cpu image."""
    return f"{REGISTRY}/e2e:cpu"


# The first engine test builds the session's image; a cold build on a 2-core CI runner
# (apt downloads, torch and DeepSpeed from the wheelhouse) can pass the suite's 600 s default.
ENGINE_TEST_TIMEOUT = 1800


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if "engine" in item.keywords and here in Path(str(item.fspath)).parents and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(ENGINE_TEST_TIMEOUT))
