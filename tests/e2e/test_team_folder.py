"""A team's own project, not ours: from the built wheel in a fresh venv to a 2-node run, outside the repository.

README.md's "Your own project" block is read out of README.md (not copied here) and run as one
bash script with ``set -e``, as written, in a temporary ``HOME``: a fresh venv gets the nodeweave
wheel built from this checkout (pip offline: ``PIP_NO_INDEX=1``, ``PIP_FIND_LINKS`` naming that
wheel and the wheelhouse .ci/wheelhouse.sh fills with nodeweave's dependencies), ``~/my-project``
holds only ``train.py`` and a ``requirements.txt`` that pins ``teamlib``, a package of the team's
own built here into ``~/wheelhouse`` beside the image's wheels, and nothing of nodeweave's
sources is on any path: no PYTHONPATH, the shared venv not on PATH. ``init``, ``render all``,
``image build`` (podman, the offline base), ``up --hold``, ``run -- train.py`` (both nodes'
ranks import teamlib and all-reduce over gloo) and ``down`` must each succeed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_harness import REPO
from wheel_build import build_wheel

pytestmark = [pytest.mark.engine, pytest.mark.slow]
SECTION = "### Your own project"
TEAMLIB_PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "teamlib"
version = "0.3.1"
"""
TEAMLIB = '''"""The team's own library: only requirements.txt names it, so only the image can hold it."""


def greeting(rank):
    return "teamlib 0.3.1 says hello to rank %d" % rank
'''
TRAIN = '''"""The team's training script: its own package, two nodes, one gloo all-reduce."""
import torch
import torch.distributed as dist

import teamlib

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print("team-train rank %d of %d: %s; sum %d" % (rank, world, teamlib.greeting(rank), int(total.item())), flush=True)
dist.destroy_process_group()
'''


def readme_script() -> str:
    """The section's first ``sh`` block, comments stripped, as one ``set -e`` script."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    block = re.search(r"```sh\n(.*?)```", text.split(SECTION, 1)[1], re.S)
    assert block, f"no sh block under {SECTION!r}"
    lines = [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()]
    return "set -ex\n" + "\n".join(line for line in lines if line and not line.startswith("#")) + "\n"


def _wheel(source: Path, into: Path) -> Path:
    """``pip wheel`` of ``source`` (setuptools from this venv: no network); nodeweave's own from a private copy
    of the checkout (tests/wheel_build.py: in-place builds of one checkout collide)."""
    if source == REPO:
        built = build_wheel(into, timeout=600)
    else:
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                                "-w", str(into), str(source)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    name = source.name if source != REPO else "nodeweave"
    (wheel,) = into.glob(f"{name}-*.whl")
    return wheel


def _team_home(tmp_path: Path, wheelhouse: Path) -> Path:
    """HOME with ~/my-project (train.py, requirements.txt), ~/wheelhouse (the image's wheels + teamlib's), ~/dist."""
    home = tmp_path / "home"
    project = home / "my-project"
    project.mkdir(parents=True)
    home.chmod(0o755)
    (project / "train.py").write_text(TRAIN)
    (project / "requirements.txt").write_text("# the team's own dependencies, pinned\nteamlib==0.3.1\n")
    house = home / "wheelhouse"
    house.mkdir()
    for wheel in wheelhouse.iterdir():
        if wheel.is_file() and wheel.suffix in (".whl", ".gz", ".zip"):
            os.link(wheel, house / wheel.name)
    source = tmp_path / "teamlib"
    (source / "teamlib").mkdir(parents=True)
    (source / "pyproject.toml").write_text(TEAMLIB_PYPROJECT)
    (source / "teamlib" / "__init__.py").write_text(TEAMLIB)
    _wheel(source, house)
    _wheel(REPO, home / "dist")
    return home


def _env(home: Path) -> dict:
    """A user's shell: HOME, the system PATH (no repository venv), pip offline; nothing of this checkout."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "NODEWEAVE_SPEC", "PIP_FIND_LINKS", "PIP_NO_INDEX")}
    env.update(HOME=str(home), PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", COLUMNS="200",
               PIP_NO_INDEX="1", PIP_FIND_LINKS=f"{home / 'dist'} {home / 'wheelhouse'}",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def test_a_teams_folder_builds_and_trains_from_the_installed_wheel(engine, base_image, wheelhouse, tmp_path):
    if engine.kind != "podman":
        pytest.skip("the README's own-project flow is written for podman")
    script = readme_script()
    assert "nodeweave image build" in script and "nodeweave run -- train.py" in script, script
    assert str(REPO) not in str(tmp_path), "the team's folder must lie outside the repository"
    home = _team_home(tmp_path, wheelhouse)
    env = _env(home)
    down = f". {home}/nodeweave-venv/bin/activate && cd {home}/my-project && nodeweave down"
    image = "localhost/nodeweave/my-project"
    try:
        out = subprocess.run(["bash", "-c", script], cwd=home, env=env, capture_output=True, text=True, timeout=2400)
        assert out.returncode == 0, f"exit {out.returncode}:\n{out.stdout[-6000:]}\n{out.stderr[-6000:]}"
        venv = home / "nodeweave-venv"
        shown = subprocess.run([str(venv / "bin" / "python"), "-c", "import nodeweave; print(nodeweave.__file__)"],
                               capture_output=True, text=True, env=env)
        assert shown.stdout.startswith(str(venv)), "the CLI that ran is the wheel in the fresh venv"
        project = home / "my-project"
        # No wheelhouse/: the build links the wheels into the context for itself and takes them out after (walk10 C12).
        assert sorted(p.name for p in project.iterdir() if not p.name.startswith(".")) == [
            "compose", "entrypoint", "images", "manifests", "nodeweave.yaml", "requirements.txt", "runs", "train.py"]
        assert "requirements: requirements.txt" in (project / "nodeweave.yaml").read_text()
        done = sorted(line.split("team-train ", 1)[1] for line in out.stdout.splitlines() if "team-train rank" in line)
        assert done == ["rank 0 of 2: teamlib 0.3.1 says hello to rank 0; sum 3",
                        "rank 1 of 2: teamlib 0.3.1 says hello to rank 1; sum 3"], out.stdout[-4000:]
        assert "up in hold mode" in out.stdout + out.stderr and "plans agree" in out.stdout + out.stderr
    finally:
        subprocess.run(["bash", "-c", down], env=env, capture_output=True, timeout=300)
        tags = subprocess.run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", image],
                              capture_output=True, text=True, timeout=120).stdout.split()
        if tags:
            subprocess.run(["podman", "rmi", "-f", *tags], capture_output=True, timeout=120)
        shutil.rmtree(home / "wheelhouse", ignore_errors=True)
