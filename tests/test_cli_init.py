"""``nodeweave init`` on the sysfs fixture trees (synthetic ones in the kernel's formats, and a real capture of a
2x H100 machine): the spec it writes is the machine's."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeweave.cli import main
from nodeweave.errors import EXIT_OK, EXIT_USAGE
from nodeweave.spec import load_spec

SYSROOTS = Path(__file__).resolve().parent / "fixtures" / "synthetic"
CAPTURED = Path(__file__).resolve().parent / "fixtures" / "captured"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    here = tmp_path / "Llama_Pretrain"
    here.mkdir()
    monkeypatch.chdir(here)
    return here


@pytest.mark.parametrize("tree, variant, gpus, rdma", [
    (SYSROOTS / "hgx-h100", "cuda12", 8, True), (SYSROOTS / "mi300x", "rocm70", 8, True),
    (SYSROOTS / "cpu-only", "cpu", 1, False), (CAPTURED / "h100x2-vm", "cuda12", 2, False),
], ids=["hgx-h100", "mi300x", "cpu-only", "captured-h100x2-vm"])
def test_the_spec_follows_the_machine_and_validates(folder, capsys, tree, variant, gpus, rdma):
    assert main(["init", "--sysroot", str(tree), "--nodes", "4"]) == EXIT_OK
    spec = load_spec(folder / "nodeweave.yaml")
    assert (spec.name, spec.image.variant, spec.gpus_per_node, spec.nodes.min) == ("llama-pretrain", variant, gpus, 4)
    assert spec.network.rdma is rdma and spec.launcher.script == "train.py"
    assert "wrote nodeweave.yaml" in capsys.readouterr().err
    assert main(["render", "all", "--dry-run"]) == EXIT_OK


def test_an_existing_spec_is_never_overwritten(folder, capsys):
    (folder / "nodeweave.yaml").write_text("mine\n")
    assert main(["init", "--sysroot", str(SYSROOTS / "cpu-only")]) == EXIT_USAGE
    assert (folder / "nodeweave.yaml").read_text() == "mine\n"
    assert "not a nodeweave spec" in capsys.readouterr().err  # "mine" is no spec: --force would not replace it
    # the dry run refuses it as the real run does (walk5 W81: it printed a spec the real run would not write)
    assert main(["init", "--sysroot", str(SYSROOTS / "cpu-only"), "--dry-run"]) == EXIT_USAGE
    said = capsys.readouterr()
    assert "not a nodeweave spec" in said.err and not said.out and (folder / "nodeweave.yaml").read_text() == "mine\n"


def test_a_bad_choice_is_refused_by_the_validator(folder, capsys):
    assert main(["init", "--sysroot", str(SYSROOTS / "cpu-only"), "--launcher", "mpirun"]) == EXIT_USAGE
    # the flag the user typed, not the spec field of a file never written (issue 43, row 26)
    assert "--launcher 'mpirun'" in capsys.readouterr().err and not (folder / "nodeweave.yaml").exists()


@pytest.mark.engine
def test_init_from_hosts_probes_each_and_lists_them_node_0_first(folder, capsys):
    import subprocess
    import uuid

    image = "localhost/nodeweave-base:bookworm"
    names = [f"nwinit-{uuid.uuid4().hex[:6]}-{i}" for i in range(2)]
    try:
        for name in names:
            subprocess.run(["podman", "run", "-d", "--name", name, "-v", f"{SYSROOTS / 'hgx-h100'}:/sysroot:ro",
                            "-e", "NODEWEAVE_SYSROOT=/sysroot", image, "sleep", "600"],
                           check=True, capture_output=True, timeout=300)
        assert main(["init", "--host", f"podman:{names[0]}", "--host", f"podman:{names[1]}"]) == EXIT_OK, \
            capsys.readouterr().err
        spec = load_spec(folder / "nodeweave.yaml")
        assert spec.hosts == tuple(names) and spec.nodes.min == 2 and spec.gpus_per_node == 8
        assert spec.image.variant == "cuda12" and spec.network.rdma is True
        subprocess.run(["podman", "stop", "-t", "0", names[1]], capture_output=True, timeout=120)
        assert main(["init", "--force", "--host", f"podman:{names[0]}", "--host", f"podman:{names[1]}"]) == 1
        assert f"podman:{names[1]}" in capsys.readouterr().err
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", *names], capture_output=True, timeout=120)
