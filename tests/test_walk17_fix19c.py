"""walk17b B15, B7, B17, B1, B13: the job's kept book (recovery.json) is read at every start and closed at every
end, on every node; node 0's own loss is a fault like any other; a generation from scratch says why."""

import json
import types

import pytest

from nodeweave.entrypoint.errors import EXIT_UNREACHABLE, EntrypointError
from nodeweave.entrypoint.news import NodeId
from nodeweave.entrypoint.recovery import decide
from nodeweave.entrypoint.recovery.book import Book, Decision
from nodeweave.entrypoint.recovery.decide import Limits


def _settings(tmp_path, rank="1", **env):
    from nodeweave.entrypoint.planning.settings import parse

    base = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "NODEWEAVE_NNODES": "2", "NODEWEAVE_RECOVERY": "on"}
    return parse(["--node-rank", rank, "--master-addr", "127.0.0.1", "--", "train.py"], dict(base, **env))


def _keep(tmp_path, book):
    folder = tmp_path / "nodeweave" / "jobs" / "nodeweave-29500"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "recovery.json").write_text(json.dumps(book.to_json()))


def _in_a_container(settings, tmp_path):
    """``settings`` as read in a container (its /etc/hostname bind-mounted from the engine's folder): a restart of
    it, with the same command, finds its book (walk18b B10: on a bare host a start is a new launch)."""
    tree = tmp_path / "root"
    (tree / "proc" / "self").mkdir(parents=True, exist_ok=True)
    (tree / "proc" / "self" / "mountinfo").write_text(
        "1012 1000 259:1 /var/lib/docker/containers/c1/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n")
    settings.sysroot = str(tree)
    return settings


def _running():
    return decide.kept_by(decide.first({0, 1}, Limits(2, 2, 5, 3)), NodeId(1))


def test_a_restart_after_the_job_ended_well_or_on_purpose_does_not_start_it_again(tmp_path, monkeypatch):
    """B15: a container restarted (the StatefulSet's Always) after its job finished or was stopped on purpose
    found its book closed and trained over the finished run's saves; an end of its own (an eviction) rejoins."""
    from nodeweave.entrypoint.recovery.generations import Generations
    from nodeweave.entrypoint.recovery.roles import plan_node

    settings = _settings(tmp_path)
    plan = plan_node(settings, partial=True)
    _in_a_container(settings, tmp_path)
    ends = [(decide.closed(_running(), 0, 1.0), 0),
            (decide.closed(_running(), 5, 1.0, "node 0 (vm) was stopped (SIGINT, Ctrl-C) on purpose"), 5)]
    for book, code in ends:
        _keep(tmp_path, book)
        said = []
        assert Generations(settings, said.append).ended_before(plan) == code, book
        assert "this container's job already ended" in said[0] and "recovery.json" in said[0]
    from nodeweave.entrypoint.recovery import generations

    waited = []
    monkeypatch.setattr(generations, "wait_for_stop", lambda: waited.append(1))
    pod = _in_a_container(_settings(tmp_path, KUBERNETES_SERVICE_HOST="10.0.0.1"), tmp_path)
    said = []
    assert Generations(pod, said.append).ended_before(plan) == 5 and waited == [1]  # Always: idle, not a loop
    assert "waiting idle for this pod's stop" in said[0]
    _keep(tmp_path, decide.closed(_running(), 143, 1.0, "stopped by SIGTERM on node 1", rejoin=True))
    assert Generations(settings, [].append).ended_before(plan) is None  # its own eviction: it checks in again
    assert Generations(_settings(tmp_path, NODEWEAVE_RUN_ID="r2"), [].append).ended_before(plan) is None


def test_an_end_by_node_0_gone_closes_the_book_and_names_the_exit(tmp_path, monkeypatch):
    """B17, B7: node 0 never coming back (exit 4) left every other node's book at `start`, the last line naming no
    exit; a member woken after node 0 ended the job did not say it was the silent one."""
    from nodeweave.entrypoint.checkin.heartbeat import LinkWatch
    from nodeweave.entrypoint.recovery import node
    from nodeweave.entrypoint.recovery.generations import Generations
    from nodeweave.entrypoint.recovery.roles import plan_node
    from nodeweave.entrypoint.recovery.setup import last_book

    settings = _settings(tmp_path)
    plan = plan_node(settings, partial=True)
    gens = Generations(settings, [].append, types.SimpleNamespace(
        plan=plan, checkin=types.SimpleNamespace(hub=None), checkin_settings=settings))

    def gone(g):
        g.keep(_running())
        raise EntrypointError("check-in with node 0 at 127.0.0.1:29501 for generation 1 failed: node 0 is gone",
                              EXIT_UNREACHABLE)

    monkeypatch.setattr(node, "node_loop", gone)
    with pytest.raises(EntrypointError) as err:
        gens.run()
    assert str(err.value).endswith("; this node exits 4")
    kept = last_book(settings, plan.topology)
    assert kept.decision is Decision.STOPPED and kept.code == 4 and "node 0 is gone" in kept.ended and kept.rejoin
    assert gens.ended_before(plan) is None  # a restart waits for node 0 again

    watch = LinkWatch.__new__(LinkWatch)
    watch._lost_silent, watch.silent = None, (71.0, 0.0)  # measured by its beats' loop; its ranks failed first
    assert watch.lost_for() == 71.0 and watch.silence_unsaid() == 71.0  # said before the wait to check in


def test_node_0_lost_is_dated_and_costed_as_every_fault():
    """B1: node 0's own loss was dated at its return, recover_s 0, no resume nor work lost."""
    from nodeweave.entrypoint.recovery.hub import hub_lost_at

    kept = decide.announced(decide.first({0, 1}, Limits(2, 2, 5, 3)), {0, 1}, (None, None), {}, 10.0).to_json()
    peers = [types.SimpleNamespace(fp={"generation": 1, "book": dict(kept, hub_lost_at=100.0)}),
             types.SimpleNamespace(fp={"generation": 1, "book": dict(kept, hub_lost_at=101.0)})]
    at = hub_lost_at(types.SimpleNamespace(peers=peers))
    fault = decide.hub_lost(0, at)
    book = decide.came_back(kept, 1, {0, 1}, 20, Limits(2, 2, 5, 3))
    book = decide.announced(book, {0, 1}, ("ck/step-20.pt", 20), {}, 116.0, fault=fault, work_lost_s=3.0)
    last = book.history[-1]
    assert (last.at, last.recover_s, last.resume_from, last.resumed_step, last.work_lost_s) == \
        (100.0, 16.0, "ck/step-20.pt", 20, 3.0)
    assert len(book.history) == 1 and book.generation == 1 and book.restarts == 1


def test_a_generation_from_scratch_under_recovery_says_why(tmp_path):
    """B13: the checkpoint folder gone (or empty, or only older saves): the generation's line just lacked
    `resuming from`; the ranks began at step 1 again, unsaid."""
    from nodeweave.entrypoint.recovery.hub import HubSide

    said = []
    side = HubSide.__new__(HubSide)
    side.log, side.checkin = said.append, types.SimpleNamespace(fingerprint={"nproc": 1})
    hub = types.SimpleNamespace(peers=[], announce=lambda verdict: None)
    book = Book(generation=1, members=(NodeId(0), NodeId(1)))
    for folder, why in ((tmp_path / "ckx", "does not exist any more"), (tmp_path, "is empty")):
        side.config = types.SimpleNamespace(folder=str(folder))
        side._announce(hub, {}, book)
        assert said[-1].endswith(f"; nothing to resume from: checkpoint_dir {folder} {why}: starting from scratch")
    (tmp_path / "step-5.pt").write_text("x")
    side._announce(hub, {}, Book(generation=1, members=(NodeId(0),), saves_before=4e9))
    assert "holds only saves from before this job" in said[-1]
