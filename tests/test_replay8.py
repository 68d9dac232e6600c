"""What the replay of the eighth walk found still open (issue 43, /work/wt/replay8-report.md): one test per class,
each failing on the code before its fix."""

from __future__ import annotations

import subprocess
import time

import cli_run
from test_walk8_b2 import _node0


# N1: a checkpoint folder another job holds was refused on node 0 alone; its other nodes waited out their deadline
# and exited 4 blaming MASTER_ADDR. node 0's own refusal goes through its check-in, as a busy master port's does.
def test_a_claimed_checkpoint_folder_refuses_every_node_of_the_second_job_at_once(tmp_path):
    folder = tmp_path / "shared"
    first = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=_node0(tmp_path, "ja", folder),
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        claim = folder / ".nodeweave-claim"
        deadline = time.monotonic() + 60
        while not claim.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        assert claim.exists(), "the first job's node 0 never claimed the folder"
        env_0 = _node0(tmp_path, "jb", folder)
        env_1 = dict(env_0, NODE_RANK="1")
        started = time.monotonic()
        node_0 = cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=env_0, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        node_1 = cli_run.entrypoint("--", "train.py", env=env_1, cwd=tmp_path, timeout=60)
        _, err_0 = node_0.communicate(timeout=60)
        took = time.monotonic() - started
        assert node_0.returncode == 3 and "in use by another job now: job 'ja'" in err_0, err_0
        assert node_1.returncode == 3, node_1.stderr
        assert "in use by another job now: job 'ja'" in node_1.stderr, node_1.stderr
        assert "MASTER_ADDR" not in node_1.stderr.split("error:")[-1] and took < 30, (took, node_1.stderr)
    finally:
        first.terminate()
        first.communicate(timeout=60)


# B33 (replayed): --explain and validate warned that recovery with no spare and no minimum can only end in exit 8;
# the live start, whose plan's node count is one recovery set itself, said nothing on either node.
def test_the_live_start_warns_that_recovery_can_replace_no_node(tmp_path):
    from free_ports import free_port_pair

    (tmp_path / "train.py").write_text("print('step 1')\n")
    port = free_port_pair()
    nodes = []
    for rank in (0, 1):
        (tmp_path / f"t{rank}").mkdir()
        env = dict(_node0(tmp_path, "b33", tmp_path / "ck"), NODE_RANK=str(rank), NODEWEAVE_SPARES="0",
                   NODEWEAVE_MASTER_PORT=str(port), TMPDIR=str(tmp_path / f"t{rank}"))
        env.pop("NODEWEAVE_METRICS_PORT")
        env["NODEWEAVE_METRICS"] = "off"
        nodes.append(cli_run.popen([*cli_run.ENTRYPOINT, "--", "train.py"], env=env, cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    errs = [node.communicate(timeout=120)[1] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], errs
    for err in errs:
        assert err.count("warning: recovery-cannot-replace: NODEWEAVE_RECOVERY on with 2 nodes, no spares") == 1, err
