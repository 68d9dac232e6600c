"""walk15b's recovery rows (fix17e): a script that fails alike without a traceback, a node silent past its
verdict, a node stop in run mode, a frozen DDP rank's stall in goodput. One test per class."""

from nodeweave.entrypoint.news import Cause, Evidence, NodeId
from nodeweave.entrypoint.recovery import decide
from nodeweave.entrypoint.recovery.book import Book

TORCHRUN_TAIL = """E1201 08:57:20.212000 7904 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: {code}) local_rank: 0 (pid: 7957) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 6, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
resilient_train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : {rank} (local_rank: 0)
  exitcode  : {code} (pid: 7957)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================"""
ARGPARSE = ("usage: resilient_train.py [-h] [--steps STEPS]\n"
            "resilient_train.py: error: argument --ckpt-every: '0': must be above 0\n")


def test_a_clean_exit_with_the_same_error_line_on_every_node_is_the_jobs_own_error():
    """walk15b B15: argparse's exit 2 alike on every node (no traceback) was a node fault: nodes left out, the
    spare and the restarts spent. Every clean exit that says its error is the job's own when alike: the script's
    arguments, its file missing, the launcher's own arguments (its start failing alike)."""
    from nodeweave.entrypoint.running.symptoms import cause, script_error

    node = {rank: ARGPARSE + TORCHRUN_TAIL.format(rank=rank, code=2) for rank in (0, 1)}
    found = script_error(node[1])
    assert found["line"] == "resilient_train.py: error: argument --ckpt-every: '0': must be above 0"
    assert found["exit"] == 2 and found["lines"][0].startswith("usage:")
    assert cause(node[1]) == found["line"]  # the node's own failure line names it too, not `torchrun exited 1`
    missing = "/usr/bin/python3: can't open file '/job/train.py': [Errno 2] No such file or directory\n"
    assert script_error(missing + TORCHRUN_TAIL.format(rank=0, code=2))["line"] == missing.strip()
    launcher = "usage: torchrun [-h] [--nnodes NNODES]\ntorchrun: error: unrecognized arguments: --bogus\n"
    assert script_error(launcher)["line"] == "torchrun: error: unrecognized arguments: --bogus"
    assert script_error("step 3\n" + TORCHRUN_TAIL.format(rank=0, code=3))["line"] == "exit 3 with no error printed"
    # never a clean exit: a rank killed by a signal, a peer gone, a collective's error
    assert script_error(ARGPARSE + TORCHRUN_TAIL.format(rank=0, code=-9)) is None
    assert script_error(ARGPARSE + "RuntimeError: Connection reset by peer\n" + TORCHRUN_TAIL.format(rank=0, code=1)) is None
    assert script_error("torch.distributed.DistBackendError: NCCL error\n" + TORCHRUN_TAIL.format(rank=0, code=1)) is None

    def reported(rank, at):
        return Evidence(cause=Cause.CRASH, label=f"node {rank} (h)", how="torchrun exited 1", at=at,
                        node=NodeId(rank), own=True, error=script_error(node[rank]))

    fault = decide.judged([reported(1, 1.0), reported(0, 1.1)], Book(members=(0, 1)), 9.0)
    assert (fault.node, fault.cause, fault.error["nodes"]) == (None, Cause.SCRIPT, [0, 1])
    assert fault.why.startswith("the script exited with resilient_train.py: error: argument --ckpt-every")
    book = decide.job_error(Book(members=(0, 1)), fault.error["nodes"], fault.error)
    assert book.code == 10 and "--ckpt-every" in book.ended


class _Channel:
    """A check-in's channel to node 0 as a node holds it: what it sent, and its last wake before the verdict."""

    peer = "127.0.0.1:29401"

    def __init__(self, awake):
        self.awake, self.sent, self.finished = awake, [], False

    def send(self, message):
        self.sent.append(message)

    def finish(self, _timeout):
        self.finished = True


def test_a_node_silent_past_its_verdict_does_not_launch_and_says_it_was_itself_silent(tmp_path):
    """walk15b B13: a node SIGSTOPped while node 0's verdict came, woken after node 0 had declared it lost and ended
    the job, started torchrun for the old verdict and blamed node 0. Every launch (a generation's, a plain run's)
    asks the watch first; the watch counts this node's silence from its last wake before the verdict."""
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch
    from nodeweave.entrypoint.running.supervise import run_supervised

    now = [1000.0]
    for recovery in (True, False):
        lines, channel = [], _Channel(awake=now[0] - 40)
        watch = LinkWatch(channel, lines.append, clock=lambda: now[0], recovery=recovery, hub_wait_s=60)
        assert 39 < watch.silent_since_verdict() < 41
        marker = tmp_path / f"launched-{recovery}"
        code = run_supervised("/bin/sh", ["/bin/sh", "-c", f"touch {marker}"], dict(PATH="/bin:/usr/bin"), watch=watch)
        assert code == 5 and not marker.exists()  # no launcher for a verdict node 0 went past
        said = "\n".join(lines)
        assert "this node itself was silent for 40s as node 0's verdict came" in said and "declared it lost" in said
        assert "node 0 (" not in said  # node 0 is not blamed
        assert channel.sent[-1]["t"] == "exit" and channel.finished  # node 0 told, if it still listens
    fresh = LinkWatch(_Channel(awake=now[0] - 1), [].append, clock=lambda: now[0])
    assert fresh.silent_since_verdict() is None


def test_node_stop_names_a_job_run_as_the_nodes_main_command_it_does_not_stop(tmp_path):
    """walk15b B16: `--node stop` on a node whose job runs as its main command (run mode: a container's CMD, no
    --run-id) answered `"stopped": []`, exit 0, as for a run that ended, while the job went on; `--node status`
    showed nothing of it. Both name it now; stop says what stops it. Another node's ($TMPDIR) is not named."""
    import os
    import subprocess
    import sys
    import time

    from nodeweave.entrypoint import nodeinfo

    fake = tmp_path / "bin" / "nodeweave-entrypoint"
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(60)\n")
    ours, theirs = tmp_path / "node0", tmp_path / "node1"
    env = dict(os.environ, TMPDIR=str(ours))
    job = subprocess.Popen([sys.executable, str(fake), "--", "train.py"], env=env)
    held = subprocess.Popen([sys.executable, str(fake), "--hold"], env=env)  # a holding node is no main run
    try:
        time.sleep(0.5)
        answer, code = nodeinfo.stop([], {"TMPDIR": str(ours)})
        assert code == 1 and answer["stopped"] == [] and [m["pid"] for m in answer["main"]] == [job.pid]
        assert "runs its job as its main command" in answer["error"] and "nodeweave up --hold" in answer["error"]
        assert job.poll() is None  # nothing stopped
        status, _ = nodeinfo.status([], {"TMPDIR": str(ours)})
        assert [m["pid"] for m in status["main"]] == [job.pid]
        answer, code = nodeinfo.stop([], {"TMPDIR": str(theirs)})
        assert (code, answer["stopped"], answer.get("error")) == (0, [], None)
    finally:
        for process in (job, held):
            process.kill()
            process.wait()
