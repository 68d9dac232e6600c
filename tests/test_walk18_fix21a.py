"""walk18b rows 10, 11, 20 (a new launch taken for a restart), 14 (which waiting node trains next), 17 (a missing
spare held generation 0 for the whole wait_timeout): one test per class."""

import json

from nodeweave.entrypoint.news import NodeId
from nodeweave.entrypoint.recovery import decide
from nodeweave.entrypoint.recovery.decide import Limits

HOSTNAME_MOUNT = ("1012 1000 259:1 /var/lib/containers/storage/overlay-containers/{}/userdata/hostname /etc/hostname "
                  "rw,nosuid,nodev,relatime - ext4 /dev/nvme0n1p1 rw\n")


def _settings(tmp_path, *command, **env):
    from nodeweave.entrypoint.planning.settings import parse

    base = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on"}
    return parse(["--node-rank", "1", "--master-addr", "127.0.0.1", "--", *(command or ("train.py",))],
                 dict(base, **env))


def _container(settings, tmp_path, name):
    """``settings`` as read in container ``name``: its /etc/hostname bind-mounted from the engine's folder."""
    tree = tmp_path / f"root-{name}"
    (tree / "proc" / "self").mkdir(parents=True, exist_ok=True)
    (tree / "proc" / "self" / "mountinfo").write_text(HOSTNAME_MOUNT.format(name))
    settings.sysroot = str(tree)
    return settings


def _ended(settings, plan, code, why):
    from nodeweave.entrypoint.recovery.generations import Generations

    gens = Generations(settings, [].append)
    gens.plan = plan
    running = decide.kept_by(decide.first({0, 1}, Limits(2, 2, 5, 3)), NodeId(1))
    gens.keep(decide.closed(running, code, 1.0, why))


def _again(settings, plan):
    from nodeweave.entrypoint.recovery.generations import Generations

    said = []
    return Generations(settings, said.append).ended_before(plan), " ".join(said)


def test_a_new_launch_after_a_job_ended_starts_anew_and_only_a_restart_of_its_container_is_refused(tmp_path,
                                                                                                  monkeypatch):
    """B10, B11, B20: the book kept in a TMPDIR that outlives the job (a bare host's /tmp, Slurm's runtime host)
    refused every later job of the same id and port as "a restart" (exit 0, nothing trained; exit 10 after the
    exit-10 line's own advice was followed), with a hint for containers. Only the same container started again
    with the same command is a restart; its refusal names what applies where it runs."""
    from nodeweave.entrypoint.recovery import generations
    from nodeweave.entrypoint.recovery.roles import plan_node

    waited = []
    monkeypatch.setattr(generations, "wait_for_stop", lambda: waited.append(1))
    bare = _settings(tmp_path, "train.py", "--steps", "5")
    plan = plan_node(bare, partial=True)
    _ended(bare, plan, 0, "the job finished")
    code, said = _again(_settings(tmp_path, "train.py", "--steps", "5"), plan)  # the same command, run again
    assert code is None and "this start is a new launch, not a restart (no container" in said, said
    _ended(bare, plan, 10, "the job's own error")
    code, said = _again(_settings(tmp_path, "train.py", "--steps", "5", SLURM_JOB_ID="555"), plan)  # a requeue
    assert code is None and "a Slurm task" in said, said

    box = _container(_settings(tmp_path, "train.py", "--stepz", "5"), tmp_path, "c1")
    _ended(box, plan, 10, "the job's own error")
    code, said = _again(_container(_settings(tmp_path, "train.py", "--stepz", "5"), tmp_path, "c1"), plan)
    assert code == 10 and "a restart brought it back" in said and "nodeweave up" in said, said
    assert "recovery.json" in said and "nodeweave run" in said, said
    code, said = _again(_container(_settings(tmp_path, "train.py", "--steps", "5"), tmp_path, "c1"), plan)
    assert code is None and "the command differs: train.py --stepz 5 then, train.py --steps 5 now" in said, said
    code, said = _again(_container(_settings(tmp_path, "train.py", "--stepz", "5"), tmp_path, "c2"), plan)
    assert code is None and "another container" in said, said
    pod = _container(_settings(tmp_path, "train.py", "--stepz", "5", KUBERNETES_SERVICE_HOST="10.0.0.1"),
                     tmp_path, "c1")
    code, said = _again(pod, plan)
    assert code == 10 and "delete the pod" in said and "nodeweave up" not in said, said
    record = json.loads((tmp_path / "nodeweave" / "jobs" / "nodeweave-29500" / "recovery.json").read_text())
    assert record["launch"]["command"] == ["train.py", "--stepz", "5"], record


def test_a_spare_never_left_out_takes_a_place_before_a_node_left_out_once_and_the_line_says_so():
    """B14: generation 1 trained on nodes 0, 2 with spare 3 (node 1 left out once); node 2 failed, and node 1 was
    taken back ahead of spare 3, which never failed, with no word of the order."""
    limits = Limits(2, 2, 5, 0)
    book = decide.after_fault(decide.first({0, 1, 2, 3}, limits), NodeId(1), "node 1: its launcher failed",
                              {0, 1, 2, 3}, None, limits)
    assert (book.members, book.spares) == ((0, 2), (3,)), book
    book = decide.after_fault(book, NodeId(2), "node 2: its launcher failed", {0, 1, 3}, None, limits)
    assert (book.members, book.spares) == ((0, 3), (1,)), book
    from nodeweave.entrypoint.recovery.hub import once_out

    assert once_out(book, book.spares) == (" (1 left out before: a place goes to a spare never left out first, then "
                                           "to a node left out once)")
    assert once_out(book, book.members) == ""
    book = decide.after_fault(book, NodeId(3), "node 3: its launcher failed", {0, 1}, None, limits)
    assert (book.members, book.spares) == ((0, 1), ()), book  # no spare never left out waits: node 1 trains


def test_generation_0_starts_once_its_training_nodes_are_in_and_a_missing_spare_costs_seconds(tmp_path):
    """B17: with 2 training nodes in and the spare never started, node 0 waited the whole wait_timeout (600 s by
    default) before generation 0 started, every GPU idle, and /metrics had no nodeweave_node_up row for the nodes
    in meanwhile."""
    import time

    from test_walk13_fix13a import _end, _get, _job, _series, _until

    start, metrics = _job(tmp_path, 2, spares=1)  # wait_timeout 120 s
    began = time.monotonic()
    procs = [start(0), start(1)]
    try:
        _until(metrics, lambda doc: doc.get("phase") == "gathering" and doc["waiting"]["checked_in"] == 2,
               what="node 0's picture with node 1 in")
        up = {labels: value for labels, value in _series(_get(metrics, "/metrics"), "nodeweave_node_up").items()}
        rows = sorted((label.split('node="')[1].split('"')[0], label.split('state="')[1].split('"')[0], value)
                      for label, value in up.items())
        assert rows == [("0", "gathering", 1.0), ("1", "checked in", 1.0), ("2", "missing", 0.0)], up
        _until(metrics, lambda doc: doc.get("phase") == "running", limit=60, what="generation 0 without the spare")
        assert time.monotonic() - began < 60
    finally:
        ended = _end(tmp_path, procs)
    assert [code for code, _ in ended] == [0, 0], ended
    assert "spare(s) 2 have not checked in within" in ended[0][1] and "after the training nodes were in: the job " \
        "starts without them" in ended[0][1], ended[0][1]
