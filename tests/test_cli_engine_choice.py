"""One engine choice across verbs: --engine, else $NODEWEAVE_ENGINE, else podman then docker, for every verb.

image build once read NODEWEAVE_ENGINE and asked docker first while up, status and sync ignored it and took
podman first: on a machine with both the image went into docker and `up` ran podman without it. A value
that is no engine is exit 2 on every verb; a dry run plans the engine the real run would use and notes that
it does not answer (exit 3 for the real run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodeweave.cli import main

REPO = Path(__file__).resolve().parents[1]
SPEC = "name: demo\nnodes: 2\ngpus_per_node: 1\nimage: {variant: cpu}\nlauncher: {type: torchrun, script: train.py}\n"

# every verb that uses the local engine, as a dry run (status and logs only read)
VERBS = {
    "up": ["up", "--dry-run"], "down": ["down", "--dry-run"], "run": ["run", "--dry-run", "-o", "json", "--", "x.py"],
    "exec": ["exec", "--dry-run", "-o", "json", "--", "hostname"], "stop": ["stop", "--dry-run"],
    "shell": ["shell", "--dry-run"], "check": ["check", "--dry-run"], "status": ["status"], "logs": ["logs"],
    "sync": ["sync", ".", "/workspace", "--compose-project", "demo", "--dry-run"],
    "image build": ["image", "build", "cpu", "--dry-run", "-o", "json", "--spec", str(REPO / "nodeweave.yaml"),
                    "--context", str(REPO)],
}


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    """A spec, and a PATH whose docker and podman both exist and answer nothing (exit 1), as a machine with
    both installed and neither running."""
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print(1)\n")  # up's script there: its dry run is refused on nothing else
    (tmp_path / "x.py").write_text("print(1)\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("docker", "podman"):
        (tools / name).write_text("#!/bin/sh\necho \"$0: does not answer\" >&2\nexit 1\n")
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _call(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_an_unknown_engine_is_refused_by_every_verb(verb, folder, capsys, monkeypatch):
    monkeypatch.setenv("NODEWEAVE_ENGINE", "dockr")
    code, _, err = _call(VERBS[verb], capsys)
    assert code == 2, (verb, err)
    assert "NODEWEAVE_ENGINE 'dockr' is not accepted: podman or docker" in err and err.count("\n") == 1, err


PLANNED = {"up", "down", "run", "exec", "stop", "shell", "check"}


@pytest.mark.parametrize("wanted", ["docker", "podman"])
@pytest.mark.parametrize("verb", sorted(PLANNED | {"image build"}))
def test_every_dry_run_plans_the_engine_named(verb, wanted, folder, capsys, monkeypatch):
    monkeypatch.setenv("NODEWEAVE_ENGINE", wanted)
    code, out, err = _call(VERBS[verb], capsys)
    assert code == 0, err
    other = "podman" if wanted == "docker" else "docker"
    assert wanted in out, out
    for command in (f"{other} exec", f"{other} compose", f"{other}-compose", f"{other} buildx", f"\"{other}\""):
        assert command not in out, out
    if verb == "image build":
        plan = json.loads(out)
        assert plan["where"].startswith(wanted), plan["where"]
        assert any("would end with exit 3" in n and f"names {wanted}, which does not answer" in n
                   for n in plan["notes"]), plan["notes"]
        assert any(n.startswith("wheelhouse") for n in plan["notes"]), plan["notes"]  # what the build writes


@pytest.mark.parametrize("verb", sorted(PLANNED | {"image build"}))
def test_with_both_installed_every_verb_takes_podman_first(verb, folder, capsys, monkeypatch):
    monkeypatch.delenv("NODEWEAVE_ENGINE", raising=False)
    code, out, err = _call(VERBS[verb], capsys)
    assert code == 0, err
    assert "podman" in out and "docker exec" not in out and "docker compose" not in out, out
    if verb == "image build":
        assert json.loads(out)["where"].startswith("podman")
