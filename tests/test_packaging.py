"""The wheel works outside the repository: templates, catalogue and both commands come with it.

Builds the wheel from this checkout (setuptools, no network), unpacks it into a folder of its
own and runs it from a folder outside the repository, with the folder first on the path, so the
checkout's editable install cannot stand in for anything the wheel forgot.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from wheel_build import build_wheel

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    wheels = tmp_path_factory.mktemp("wheels")
    build = build_wheel(wheels)
    if build.returncode != 0:
        pytest.fail(f"the wheel did not build: {build.stderr[-800:]}")
    return wheels, build


def test_the_wheel_builds_without_a_deprecation_warning(built):
    """walk10 A23: README's `pip wheel --no-deps -w dist .` printed setuptools' BuildBackendWarning three times (the
    license as a TOML table, unsupported after 2027-02-18): the license is an SPDX expression."""
    _, build = built
    said = build.stdout + build.stderr
    assert "Warning" not in said and "deprecated" not in said, said[-1500:]


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    wheels, _ = built
    target = tmp_path_factory.mktemp("site")
    (wheel,) = wheels.glob("nodeweave-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return target


def outside(installed, tmp_path, *code):
    env = {**os.environ, "PYTHONPATH": str(installed)}
    env.pop("NODEWEAVE_SPEC", None)
    return subprocess.run([sys.executable, "-c", *code], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)


def test_the_wheel_renders_a_minimal_spec_outside_the_repository(installed, tmp_path):
    (tmp_path / "nodeweave.yaml").write_text("name: wheel\nimage: {variant: cuda12}\nlauncher: {script: t.py}\n")
    done = outside(installed, tmp_path, "import sys, nodeweave; print(nodeweave.__file__); "
                   "from nodeweave.cli import main; sys.exit(main(['render', 'all']))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(str(installed))
    assert (tmp_path / "images" / "cuda12" / "Dockerfile").is_file()
    assert (tmp_path / "compose" / "local.yaml").is_file()


def test_the_wheels_entrypoint_and_catalogue_work(installed, tmp_path):
    done = outside(installed, tmp_path, "import sys; from nodeweave.entrypoint.__main__ import main; "
                   "sys.argv = ['nodeweave-entrypoint', '--help']; sys.exit(main())")
    assert done.returncode == 0 and "usage: nodeweave-entrypoint" in done.stdout, done.stderr
    done = outside(installed, tmp_path, "import sys; from nodeweave.cli import main; "
                   "sys.exit(main(['image', 'variants', '--json']))")
    assert done.returncode == 0 and '"cuda12"' in done.stdout, done.stderr


def test_the_wheel_carries_the_dashboards_page(installed, tmp_path):
    done = outside(installed, tmp_path, "from nodeweave.cluster.dashboard import PAGE; "
                   "print(PAGE); print(len(PAGE.read_bytes()))")
    assert done.returncode == 0, done.stderr
    where, size = done.stdout.split()
    assert where.startswith(str(installed)) and int(size) > 5000, done.stdout
