"""`make demo` (the README's first command) where no container engine runs: it renders, explains, and
names the one command that installs podman, exit 0 (README, "Quick start").

examples/demo.sh runs for real on a copy of what it reads (itself, the spec, examples/train.py), with a PATH
that holds every tool of this machine's but the engines, and a venv folder whose nodeweave commands run
this checkout's sources; the engine path (`make demo` with podman) is CI's to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINES = {"podman", "docker", "dockerd", "nerdctl", "buildah"}


def _path_without_engines(folder: Path) -> str:
    """A PATH of links to every command on this PATH except the container engines."""
    folder.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if name not in ENGINES and not (folder / name).exists() and not (folder / name).is_symlink():
                (folder / name).symlink_to(Path(directory) / name)
    return str(folder)


def _venv(folder: Path) -> Path:
    """bin/nodeweave and bin/nodeweave-entrypoint, as `make install` puts them, running this checkout's sources."""
    (folder / "bin").mkdir(parents=True)
    for command, entry in (("nodeweave", "nodeweave.start"), ("nodeweave-entrypoint", "nodeweave.entrypoint.__main__"),
                           ("python", None)):  # the console scripts of pyproject.toml, and the venv's python
        script = folder / "bin" / command
        call = f" -c 'import sys; from {entry} import main; sys.exit(main())'" if entry else ""
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}"{call} "$@"\n')
        script.chmod(0o755)
    return folder


def test_make_demo_without_an_engine_renders_explains_and_names_the_install(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "examples").mkdir(parents=True)
    for name in ("examples/demo.sh", "examples/train.py", "nodeweave.yaml"):
        shutil.copy2(REPO / name, checkout / name)
    env = {**os.environ, "PATH": _path_without_engines(tmp_path / "path"),
           "NODEWEAVE_VENV": str(_venv(tmp_path / "venv")), "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(["bash", "examples/demo.sh"], cwd=checkout, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr
    demo = checkout / "build" / "demo"
    for rendered in ("compose/local.yaml", "images/cpu/Dockerfile", "manifests/base/statefulset.yaml",
                     "entrypoint/nodeweave-entrypoint.pyz"):
        assert (demo / rendered).is_file(), sorted(str(p.relative_to(demo)) for p in demo.rglob("*"))
    assert "torchrun --nnodes 2" in out.stdout and "examples/train.py" in out.stdout, out.stdout  # the plan
    last = out.stdout.strip().splitlines()[-1].split()
    assert last == ["bash", ".ci/setup-engine.sh"] and (REPO / last[1]).is_file(), out.stdout[-500:]


def test_make_demo_runs_the_script_with_the_venv_make_installed(tmp_path):
    """`make demo VENV=...` installs there, so the script must look there too, not in .venv."""
    planned = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=REPO, capture_output=True,
                             text=True, timeout=60)
    assert planned.returncode == 0, planned.stderr
    assert f"NODEWEAVE_VENV={tmp_path / 'venv'} bash examples/demo.sh" in planned.stdout, planned.stdout
