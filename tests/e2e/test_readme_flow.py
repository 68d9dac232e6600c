"""The README's "A multi-node job on this machine", run exactly as written.

The commands are read out of README.md's code block (not copied here), run
from the repository root with ``.venv/bin`` on PATH as a user who ran
``make demo`` has it, and the job must finish on every node: each container
exits 0 and every rank of examples/train.py prints its ``done: ... ok`` line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from e2e_harness import REPO

pytestmark = [pytest.mark.engine, pytest.mark.slow]
SECTION = "### A multi-node job on this machine"


def readme_commands() -> "list[str]":
    """The shell lines of the section's first ``sh`` block, comments stripped."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    block = re.search(r"```sh\n(.*?)```", text.split(SECTION, 1)[1], re.S)
    assert block, f"no sh block under {SECTION!r}"
    lines = [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _containers() -> "list[str]":
    document = yaml.safe_load((REPO / "compose" / "local.yaml").read_text())
    return [service["container_name"] for service in document["services"].values()]


def _free_the_checkouts_tags() -> None:
    """The README's build takes the tags of this checkout's spec; where another folder (another clone, `make demo`
    run from a copy) built a job of the same name, nodeweave refuses to replace its image (walk16 A4: exit 2, the
    hint --force). That refusal is right for a user and is tested on its own (tests/test_walk16_fix18b.py); here it
    would make the README's flow depend on what ran on this machine before (stop 54: /tmp/demo17's build of the same
    commit). The other folder's image keeps its id and loses only the names this build takes (podman untag)."""
    job = yaml.safe_load((REPO / "nodeweave.yaml").read_text())["name"]
    listed = subprocess.run(["podman", "images", "--format", "json", "--filter", f"label=io.nodeweave.image.job={job}"],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    for image in json.loads(listed.stdout or "[]"):
        folder = (image.get("Labels") or {}).get("io.nodeweave.image.folder")
        if folder and Path(folder).resolve() != REPO.resolve():
            for name in image.get("Names") or []:
                subprocess.run(["podman", "untag", image["Id"], name], capture_output=True, timeout=120)


def _down(env) -> None:
    subprocess.run(["podman-compose", "-f", "compose/local.yaml", "down", "-t", "0"], cwd=REPO, env=env,
                   capture_output=True, timeout=300)


def test_the_readme_local_flow_finishes_on_every_node(engine):
    if engine.kind != "podman":
        pytest.skip("the README's local flow is written for podman")
    commands = readme_commands()
    assert any("compose/local.yaml up" in command for command in commands), commands
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    _down(env)
    _free_the_checkouts_tags()
    try:
        for command in commands:
            out = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True,
                                 timeout=1800)
            assert out.returncode == 0, f"{command!r} exited {out.returncode}:\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
        names = _containers()
        assert len(names) >= 2
        logs = {}
        for name in names:
            state = subprocess.run(["podman", "inspect", "--format", "{{.State.ExitCode}}", name],
                                   capture_output=True, text=True, timeout=60)
            logs[name] = subprocess.run(["podman", "logs", name], capture_output=True, text=True, timeout=60)
            assert state.stdout.strip() == "0", f"{name} exited {state.stdout.strip()}:\n{logs[name].stdout[-3000:]}"
        done = [line for out in logs.values() for line in (out.stdout + out.stderr).splitlines() if " done: " in line]
        world = int(re.search(r"world_size=(\d+)", done[0]).group(1)) if done else 0
        assert world >= len(names), done
        assert len(done) == world and all(line.endswith(" ok") for line in done), done
    finally:
        _down(env)
