"""Walk 6, W56: the folder the spec names as ``recovery.checkpoint_dir`` (any name, not only ``checkpoints/``) is
the nodes' saves: a sync never sends a local copy over it and ``--delete`` never removes it, and the plan's first
line says so. No container is started."""

from __future__ import annotations

import json

import pytest

from cli_run import in_process as run_cli
from nodeweave.spec import load_spec
from nodeweave.sync.filters import build_filter
from nodeweave.sync.request import checkpoint_folders
from nodeweave.sync.transport.plan import protected

SPEC = """\
name: team
image:
  variant: cpu
  requirements: requirements.txt
nodes: 2
gpus_per_node: 1
launcher:
  type: torchrun
  script: train.py
recovery:
  enabled: true
  spares: 1
  checkpoint_dir: {folder}
"""


def _project(tmp_path, monkeypatch, folder: str):
    (tmp_path / "nodeweave.yaml").write_text(SPEC.format(folder=folder))
    (tmp_path / "train.py").write_text("print('training')\n")
    (tmp_path / "requirements.txt").write_text("numpy==1.26.4\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NODEWEAVE_ENGINE", "podman")
    return tmp_path


@pytest.mark.parametrize("folder, held", [("ckpt", "ckpt/"), ("out/saves", "out/saves/"),
                                          ("/workspace/dcp", "dcp/")])
def test_the_specs_checkpoint_folder_is_held_back_and_kept(tmp_path, monkeypatch, capsys, folder, held):
    team = _project(tmp_path, monkeypatch, folder)
    stale = team / held / "step-5"
    stale.mkdir(parents=True)
    (stale / ".metadata").write_text("x")
    (stale / "__0_0.distcp").write_text("x")
    code, out, err = run_cli(capsys, "sync", ".", "/workspace", "--node", "podman:foo", "--delete", "--dry-run",
                             "-o", "json")
    assert code in (0, 1), err  # 1: podman answers that it has no foo (the real sync's exit: one dry-run rule)
    phase = json.loads(out)["phases"][0]
    assert phase["request"]["files"] == 3, phase["request"]  # the spec, the script, the requirements
    assert phase["request"]["held_back_checkpoints"] == [held]
    assert f"held back as the job's checkpoints (recovery.checkpoint_dir), neither sent nor deleted on the " \
           f"targets: {held}" in phase["what"]
    code, out, _ = run_cli(capsys, "sync", ".", "/workspace", "--node", "podman:foo", "--delete", "--dry-run")
    first = next(line for line in out.splitlines() if line.startswith("# push"))
    assert f"held back as the job's checkpoints" in first and held in first, out
    # the nodes' newer saves are never among what --delete removes
    filt = build_filter(team, checkpoints=checkpoint_folders(load_spec(team / "nodeweave.yaml")))
    assert protected(filt, f"{held}step-10/__0_0.distcp", False)
    assert protected(filt, f"{held}step-10", True)
    assert not protected(filt, "old_script.py", False)


def test_a_checkpoint_folder_outside_the_workspace_holds_nothing_back(tmp_path, monkeypatch):
    team = _project(tmp_path, monkeypatch, "/data/checkpoints")
    assert checkpoint_folders(load_spec(team / "nodeweave.yaml")) == []


def test_an_explicit_pattern_still_sends_it(tmp_path, monkeypatch):
    team = _project(tmp_path, monkeypatch, "ckpt")
    (team / "ckpt").mkdir()
    (team / "ckpt" / "seed.pt.json").write_text("{}")
    filt = build_filter(team, extra_excludes=["!ckpt/"], checkpoints=["ckpt"])
    assert "ckpt/seed.pt.json" in filt.walk(team).files
