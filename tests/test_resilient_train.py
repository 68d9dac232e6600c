"""examples/resilient_train.py under real torchrun (two gloo ranks): saves, half-written saves, exact resumes.

The finder skips the half-written saves the script leaves on purpose.
"Exactly" is checked by the loss: a run resumed from step N prints, at every
later step, the loss an uninterrupted run printed (model, momentum and the
step-keyed data all restored).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nodeweave.entrypoint.recovery.checkpoints import incomplete, newest_complete

pytest.importorskip("torch")
SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "resilient_train.py"
STEP = re.compile(r"^\[rank 0/2 gen \d+\] step (\d+) loss ([0-9.]+) t=", re.M)


def torchrun(workdir, *args, env=None):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               str(SCRIPT), *args]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NODEWEAVE_")}
    environment.update(OMP_NUM_THREADS="1", **(env or {}))
    done = subprocess.run(command, cwd=workdir, env=environment, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def losses(output):
    return {int(step): loss for step, loss in STEP.findall(output)}


def test_dcp_saves_skip_the_half_written_and_a_resume_continues_exactly(tmp_path):
    whole = torchrun(tmp_path, "--steps", "8", "--ckpt-every", "4", "--half-written")
    found = newest_complete(tmp_path / "checkpoints")
    assert (found.path, found.step) == (str(tmp_path / "checkpoints" / "step-8"), 8)
    cut = {Path(path).name: reason for path, reason in incomplete(tmp_path / "checkpoints")}
    assert set(cut) == {"step-1004", "step-1008"} and "no .metadata (torch.distributed.checkpoint writes it last)" in cut["step-1008"]

    start = str(tmp_path / "checkpoints" / "step-4")
    resumed = torchrun(tmp_path, "--steps", "8", "--ckpt-every", "4", "--ckpt-dir", "again",
                       env={"NODEWEAVE_RESUME_FROM": start})
    assert f"[rank 0/2 gen 0] resumed from step 4 ({start})" in resumed
    assert min(losses(resumed)) == 5
    assert {s: v for s, v in losses(whole).items() if s > 4} == losses(resumed)


def test_torch_save_with_atomic_rename_and_resume_from_its_own_latest(tmp_path):
    whole = torchrun(tmp_path, "--steps", "6", "--ckpt-every", "3", "--format", "torch", "--half-written")
    ckpt = tmp_path / "checkpoints"
    assert sorted(p.name for p in ckpt.iterdir()) == ["latest", "step-1003.pt", "step-1006.pt", "step-3.pt",
                                                        "step-6.pt"]
    assert newest_complete(ckpt).path == str(ckpt / "step-6.pt")
    assert "cut off mid-write" in dict(incomplete(ckpt))[str(ckpt / "step-1006.pt")]

    (ckpt / "latest").write_text("step-3.pt")  # as if the job had died before its save at step 6
    resumed = torchrun(tmp_path, "--steps", "6", "--ckpt-every", "3", "--format", "torch", "--resume-latest")
    assert "[rank 0/2 gen 0] resumed from step 3 (checkpoints/step-3.pt)" in resumed
    assert {s: v for s, v in losses(whole).items() if s > 3} == losses(resumed)


def test_a_bad_node_fails_at_every_start_and_bad_flags_name_themselves(tmp_path):
    marker = tmp_path / "broken-gpu"
    marker.touch()
    done = subprocess.run([sys.executable, str(SCRIPT), "--bad-node-marker", str(marker)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and f"{marker} exists, failing at start" in done.stdout
    done = subprocess.run([sys.executable, str(SCRIPT), "--ckpt-every", "soon"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "'soon': give steps (50) or seconds (30s)" in done.stderr
