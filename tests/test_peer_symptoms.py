"""symptoms.secondary: a node whose ranks failed only because a peer went away, told from the node that failed.

The live test runs two real torchrun "nodes" on gloo and kills a rank; the others quote the backends' own words
(NCCL's as its users posted them in NVIDIA/nccl issues 2076 and 934; the c10d agent's from torch's source).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from free_ports import free_port as _free_port

from nodeweave.entrypoint.running.symptoms import secondary

TORCHRUN_SUMMARY = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : {rank} (local_rank: 0)
  exitcode  : {code} (pid: 5672){signal}
  error_file: <N/A>
  traceback : {traceback}
============================================================"""


def summary(rank, code, signal_name=None):
    return TORCHRUN_SUMMARY.format(
        rank=rank, code=code, signal=f"  ({signal_name})" if signal_name else "",
        traceback=f"Signal {-code} ({signal_name}) received by PID 5672" if signal_name else "To enable traceback")


NCCL_REMOTE = ("[rank3]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
               "NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5\n"
               "[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
               "prematurely.\n[rank3]: Last error:\n[rank3]: socketProgressOpt: Call to recv from 172.16.0.3<33759> "
               "failed : Connection reset by peer\n")
NCCL_WATCHDOG = ("terminate called after throwing an instance of 'std::runtime_error'\n  what():  NCCL error: remote "
                 "process exited or there was a network error, NCCL version 2.14.3\nncclRemoteError: A call failed "
                 "possibly due to a network error or a remote process exiting prematurely.\n")
GLOO_RESET = ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] "
              "Read error [127.0.0.1]:25998: Connection reset by peer. This is typically caused by a remote worker "
              "hanging\n")
STORE_GONE = ("torch.distributed.DistNetworkError: The connection to the C10d store has failed. See inner exception "
              "for details.\n")


@pytest.mark.parametrize("text", [GLOO_RESET + summary(0, 1), NCCL_REMOTE + summary(3, 1),
                                  NCCL_WATCHDOG + summary(3, -6, "SIGABRT"), STORE_GONE])
def test_a_peer_gone_and_no_signal_of_its_own_is_secondary(text):
    line = secondary(text)
    assert line and line in text and "\n" not in line


@pytest.mark.parametrize("text", [
    summary(1, -9, "SIGKILL"),                                         # its own rank killed
    GLOO_RESET + summary(1, -11, "SIGSEGV"),                           # a sibling saw it go; its rank crashed
    "[rank1]: RuntimeError: CUDA error: an illegal memory access\n" + summary(1, 1),
    "",
])
def test_a_failure_of_its_own_is_not_secondary(text):
    assert secondary(text) is None


VICTIM = """
import os, signal, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
x = torch.ones(1000)
for step in range(400):
    dist.all_reduce(x)
    time.sleep(0.02)
    if step == 20 and dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_two_real_torchrun_nodes_the_killed_ranks_node_is_primary_the_other_secondary(tmp_path):
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if torchrun is None:
        pytest.skip("torchrun is not installed in this environment (torch is a test dependency: make install)")
    (tmp_path / "victim.py").write_text(VICTIM)
    port = str(_free_port())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    nodes = [subprocess.Popen([torchrun, "--nnodes", "2", "--node-rank", str(rank), "--nproc-per-node", "1",
                               "--master-addr", "127.0.0.1", "--master-port", port, "victim.py"], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in (0, 1)]
    out = [node.communicate(timeout=240)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [1, 1], out
    assert secondary(out[1]) is None, out[1]  # rank 1 was killed: its node failed of its own accord
    line = secondary(out[0])
    assert line and "by peer" in line, out[0]  # rank 0 only saw it go


def test_the_scripts_own_exception_is_found_under_torchruns_summary():
    from nodeweave.entrypoint.running.symptoms import script_error

    text = "\n".join([
        "RECOVERY-STEP gen=0 step=5 world=2",
        "Traceback (most recent call last):",
        '  File "resumable.py", line 80, in save',
        "    raise PermissionError(13, 'Permission denied', path)",
        "[rank0]: PermissionError: [Errno 13] Permission denied: '/ckpt/step-6.pt.tmp'",
        "Traceback (most recent call last):",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "resumable.py FAILED",
        "  exitcode  : 1 (pid: 12)",
    ])
    found = script_error(text)
    assert found["line"] == "PermissionError: [Errno 13] Permission denied: '/ckpt/step-6.pt.tmp'"
    assert found["lines"][-1].endswith("step-6.pt.tmp'") and len(found["lines"]) <= 6
    # not the script's: a peer gone, a collective's timeout, a rank killed by a signal, a plain exit
    assert script_error("RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer") is None
    assert script_error("torch.distributed.DistBackendError: [Rank 1] Watchdog caught collective timeout") is None
    assert script_error("ValueError: x\n  exitcode  : -9 (pid: 3)") is None
    assert script_error("sys.exit(1)\nexiting") is None
