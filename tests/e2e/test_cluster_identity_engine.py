"""A job is what its own folder started, with real podman containers (issue 41 item 4; first-day s2, s3).

Folders a and b hold the same spec (``name: nwt-twin``), as two clones or a git worktree would. a's
``nodeweave up --hold`` starts nwt-twin-0 and nwt-twin-1 labelled with a's folder; in b every verb refuses
them (exit 3) naming a, and a's job keeps running untouched; b's ``up`` does not take the names either.
Then a's spec is renamed while the job is up: ``status`` names the old job's record, and ``down`` takes
the old containers down.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from cluster_harness import nodeweave, workdir

pytestmark = [pytest.mark.engine, pytest.mark.slow]
NAME = "nwt-twin"
NAMES = [f"{NAME}-0", f"{NAME}-1"]


def _labels(name: str) -> dict:
    out = subprocess.run(["podman", "inspect", "--type", "container", "--format", "{{json .Config.Labels}}", name],
                         capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def _running(name: str) -> bool:
    out = subprocess.run(["podman", "inspect", "--format", "{{.State.Status}}", name], capture_output=True, text=True,
                         timeout=60)
    return out.stdout.strip() == "running"


def test_two_folders_with_one_job_name_and_a_rename_while_up(engine, cpu_image, tmp_path):
    if engine.kind != "podman":
        pytest.skip("the local cluster tests drive podman-compose")
    a, b = workdir(tmp_path / "a", NAME, 2), workdir(tmp_path / "b", NAME, 2)
    subprocess.run(["podman", "rm", "-f", "-t", "0", *NAMES], capture_output=True)  # an interrupted run's
    try:
        nodeweave(a, "up", "--hold", "--image", cpu_image, "--timeout", "180", check=0, timeout=400)
        for verb in (("run", "--", "train.py"), ("exec", "--", "hostname"), ("stop",), ("status",), ("logs",),
                     ("shell",), ("down",), ("check",), ("up", "--hold", "--image", cpu_image, "--no-wait")):
            out = nodeweave(b, *verb, timeout=300)
            assert out.returncode == 3, (verb, out.stdout, out.stderr)
            assert f"was started by `nodeweave up` in {a.parent.resolve()} (job {NAME})" in out.stderr, out.stderr
        assert all(_running(n) for n in NAMES)  # b's down and up left a's job alone
        labels = _labels(NAMES[1])
        assert labels.get("io.nodeweave.folder") == str(a.parent.resolve()) and labels["io.nodeweave.job"] == NAME
        assert nodeweave(a, "exec", "--", "hostname", check=0).stdout.count(NAME) >= 2

        a.write_text(a.read_text().replace(f"name: {NAME}", f"name: {NAME}-renamed"))
        status = nodeweave(a, "status", timeout=120)
        assert f".nodeweave/{NAME}/ records a cluster `nodeweave up` started as job {NAME}" in status.stderr, \
            status.stderr
        down = nodeweave(a, "down", check=0, timeout=300)
        assert f"{NAME} (the job's old name) is down" in down.stdout, down.stdout
        assert all(subprocess.run(["podman", "container", "exists", n]).returncode != 0 for n in NAMES)
        again = nodeweave(a, "status", timeout=120)
        assert "records a cluster" not in again.stderr, again.stderr
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", *NAMES], capture_output=True)
