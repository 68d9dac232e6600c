"""Walk 6, W50: ``sync -t slurm`` with no --remote-dir, the nodes working in this machine's folder.

``up`` warned that a /tmp workspace is each machine's own (the nodes never find it) while ``sync`` said the nodes
share it and refused with exit 2. One rule (``cluster.options.machine_own``) now speaks for both: a machine-own
folder is refused naming it, as up warns; a folder on shared storage is "nothing to send", exit 0, as the local
target's mount is. Fails before the fix.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from cli_run import in_process as run_cli, one_line
from nodeweave.errors import EXIT_USAGE

SPEC = "name: team\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: train.py}\n"


def project(folder: Path) -> Path:
    (folder / "nodeweave.yaml").write_text(SPEC)
    (folder / "train.py").write_text("print('training')\n")
    return folder


def test_a_tmp_workspace_is_refused_as_up_warns_of_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(project(tmp_path))
    assert str(tmp_path).startswith("/tmp/")
    code, out, err = run_cli(capsys, "up", "-t", "slurm", "--dry-run")
    assert "/tmp is each machine's own" in out + err, out + err
    code, out, err = run_cli(capsys, "sync", "-t", "slurm", "--dry-run")
    line = one_line(err)
    assert code == EXIT_USAGE and "/tmp is each machine's own" in line and "--remote-dir" in line, line
    assert "storage they share" not in line


def test_a_shared_workspace_is_nothing_to_send_exit_0(monkeypatch, capsys):
    home = Path.home()
    if str(home.resolve()).startswith(("/tmp", "/var/tmp", "/dev/shm", "/run")):
        pytest.skip("the home is a machine-own folder here")
    folder = Path(tempfile.mkdtemp(prefix="nodeweave-w50-", dir=home))
    try:
        monkeypatch.chdir(project(folder))
        code, out, err = run_cli(capsys, "sync", "-t", "slurm", "--dry-run")
        assert code == 0 and "nothing to send: target slurm" in out + err, out + err
    finally:
        shutil.rmtree(folder)
