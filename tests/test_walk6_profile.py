"""Walk 6, W47: ``run --profile`` judged against the image the target's nodes run.

The local target runs the cpu variant whatever the spec builds, so with a rocm70 spec ``--profile rocprofv3`` got
no note (every node would exit 127) and ``--profile nsys`` was judged against rocm70. The backend names the variant
its nodes run (``Backend.image_variant``); the note says which and, on local, the remedy it has. Fails before.
"""

from __future__ import annotations

import pytest

from cli_run import in_process as run_cli

SPEC = "name: team\nimage: {variant: rocm70}\nnodes: 2\ngpus_per_node: 8\nlauncher: {script: train.py}\n"


@pytest.fixture
def amd(tmp_path, monkeypatch):
    (tmp_path / "nodeweave.yaml").write_text(SPEC)
    (tmp_path / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("profiler", ["rocprofv3", "nsys"])
def test_the_local_target_judges_the_cpu_image_it_runs(amd, capsys, profiler):
    code, out, err = run_cli(capsys, "run", "--dry-run", "--profile", profiler)
    notes = [line for line in (out + err).splitlines() if f"--profile {profiler} traces" in line]
    assert code == 0 and len(notes) == 1, out + err
    assert "local target's nodes run image variant cpu" in notes[0] and "up --image" in notes[0], notes[0]


def test_kubernetes_judges_the_specs_variant(amd, capsys):
    code, out, err = run_cli(capsys, "run", "-t", "kubernetes", "--dry-run", "--profile", "rocprofv3")
    assert code == 0 and "--profile rocprofv3 traces" not in out + err, out + err
