"""The entrypoint's rank-0 self-check, without an engine (test_faults.py has the two-container case)."""

import subprocess
import sys


def test_entrypoint_refuses_rank_0_when_master_is_another_host(tmp_path):
    """Two nodes claiming rank 0: the one MASTER_ADDR does not name stops before the launcher hangs.
    192.0.2.1 (TEST-NET-1) is not on this machine; nothing is sent to it. The training script is
    there (the entrypoint checks that first)."""
    (tmp_path / "train.py").write_text("")
    entry = [sys.executable, "-m", "nodeweave.entrypoint"]
    out = subprocess.run(entry + ["--launcher", "torchrun", "--nnodes", "2", "--node-rank", "0",
                                  "--master-addr", "192.0.2.1", "--", "train.py"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 3, out.stderr
    assert "rank 0" in out.stderr and "192.0.2.1" in out.stderr and "not an address of this node" in out.stderr
    assert "Traceback" not in out.stderr
