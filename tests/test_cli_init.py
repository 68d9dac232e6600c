"""``nodeweave init`` on captured sysfs trees (the kernel's own formats): the spec it writes is the machine's."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.errors import EXIT_OK, EXIT_USAGE
from nodeweave.spec import load_spec

SYSROOTS = Path(__file__).resolve().parent / "fixtures" / "sysroots"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    here = tmp_path / "Llama_Pretrain"
    here.mkdir()
    monkeypatch.chdir(here)
    return here


@pytest.mark.parametrize("tree, variant, gpus, rdma", [
    ("hgx-h100", "cuda12", 8, True), ("mi300x", "rocm70", 8, True), ("cpu-only", "cpu", 1, False),
])
def test_the_spec_follows_the_machine_and_validates(folder, capsys, tree, variant, gpus, rdma):
    assert main(["init", "--sysroot", str(SYSROOTS / tree), "--nodes", "4"]) == EXIT_OK
    spec = load_spec(folder / "nodeweave.yaml")
    assert (spec.name, spec.image.variant, spec.gpus_per_node, spec.nodes.min) == ("llama-pretrain", variant, gpus, 4)
    assert spec.network.rdma is rdma and spec.launcher.script == "train.py"
    assert "wrote nodeweave.yaml" in capsys.readouterr().err
    assert main(["render", "all", "--dry-run"]) == EXIT_OK


def test_an_existing_spec_is_never_overwritten(folder, capsys):
    (folder / "nodeweave.yaml").write_text("mine\n")
    assert main(["init", "--sysroot", str(SYSROOTS / "cpu-only")]) == EXIT_USAGE
    assert (folder / "nodeweave.yaml").read_text() == "mine\n"
    assert "never overwrites" in capsys.readouterr().err
    assert main(["init", "--sysroot", str(SYSROOTS / "cpu-only"), "--dry-run"]) == EXIT_OK
    assert "variant: cpu" in capsys.readouterr().out and (folder / "nodeweave.yaml").read_text() == "mine\n"


def test_a_bad_choice_is_refused_by_the_validator(folder, capsys):
    assert main(["init", "--sysroot", str(SYSROOTS / "cpu-only"), "--launcher", "mpirun"]) == EXIT_USAGE
    assert "launcher.type" in capsys.readouterr().err and not (folder / "nodeweave.yaml").exists()
