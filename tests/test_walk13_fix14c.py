"""fix14c: rows B10, B15, B16 of the thirteenth walk (issue 43), in recovery's check-in: real entrypoint processes on
loopback (tests/recovery_harness.py) where the row is a running job, the product's own rule tables otherwise."""

import json
import signal
import time

import pytest

from recovery_harness import _spawn, finish, start, wait_for_step

RUN = ["--steps", "40", "--interval", "0.2", "--save-every", "5"]


def _fp(rank, **changed):
    fp = {"rank": rank, "hostname": f"vm{rank}", "nnodes": 3, "launcher": "torchrun", "gpu_vendor": "nvidia",
          "nccl": "2.21.5", "rccl": None, "torch": "2.4.1", "image_digest": "sha256:aa", "workspace_commit": "c1",
          "workspace_digest": "d1", "nproc": 1, "address": f"10.0.0.{rank + 1}",
          "faults": {"recovery": True, "spares": 1, "stall_timeout": 600}}
    fp.update(changed)
    return fp


# each APART rule and a value of node 1's that is apart from node 0's for it
APART_VALUES = {"nodes": {"nnodes": 4}, "launcher": {"launcher": "deepspeed"},
                "faults": {"faults": {"recovery": True, "spares": 1, "stall_timeout": 900}},
                "vendor": {"gpu_vendor": "amd"}, "nccl": {"nccl": "2.18.1"}, "rccl": {"rccl": "2.18.1"},
                "torch": {"torch": "2.3.0"}, "image": {"image_digest": "sha256:bb"},
                "workspace": {"workspace_commit": "c2"}, "processes": {"nproc": 2},
                "command": {"command_digest": "c0ffee", "command": "train.py --lr 9"}}  # fix15d B6


def test_apart_values_cover_every_apart_rule():
    """B10: the table below is the product's own (``verdict.APART``), so a rule added there is tested here."""
    from nodeweave.entrypoint.checkin.verdict import APART

    assert sorted(APART) == sorted(APART_VALUES)


@pytest.mark.parametrize("check", sorted(APART_VALUES))
def test_10_a_node_apart_from_node_0_is_set_aside_alone_at_a_regather(check):
    """B10: at recovery's regather a node whose settings are apart from node 0's (a node restarted from an edited
    environment) refused the whole running job (every node exit 3). ``verdict.set_aside`` (the rule that already
    left out a node node 0 cannot reach) names that node alone, with the setting and node 0's value, and
    ``Hub.decide`` judges the rest without it: the job starts."""
    from nodeweave.entrypoint.checkin.verdict import Entry, judge, set_aside

    own = Entry(_fp(0), seen="10.0.0.1", own=True)
    odd = Entry(_fp(1, **APART_VALUES[check]), seen="10.0.0.2", probe="ok")
    fine = Entry(_fp(2), seen="10.0.0.3", probe="ok")
    found = set_aside([own, odd, fine], nnodes_max=4, launcher="accelerate")
    assert [(e.fp["rank"], name) for e, _, name in found] == [(1, check)], found
    [(_, why, _)] = found
    assert "node 0" in why or check == "faults", why
    if check == "faults":
        assert "stall_timeout 900 (node 0: 600)" in why, why
    assert judge([own, fine], 0, 4, "accelerate")["decision"] == "start"
    # node 0 come back to a running job is the newcomer: its settings are not the job's, nothing is set aside
    assert set_aside([own, odd, fine], nnodes_max=4, launcher="accelerate", apart=False) == []


def test_10_reachability_keeps_its_own_log_words_and_allow_list():
    """B10: the rule extended, not a second one: the unreachable nodes are still named so (and allowed so)."""
    from nodeweave.entrypoint.checkin.verdict import Entry, set_aside, unreachable

    own = Entry(_fp(0), seen="10.0.0.1", own=True)
    deaf = Entry(_fp(1), seen="10.0.0.2", probe="connecting to 10.0.0.2:4000 failed")
    assert [name for _, _, name in set_aside([own, deaf])] == ["connect-back"]
    assert [e.fp["rank"] for e, _ in unreachable([own, deaf])] == [1]
    assert set_aside([own, deaf], allow=("connect-back",)) == []


def test_10_a_node_back_from_an_edited_environment_is_turned_away_alone_the_job_goes_on(tmp_path):
    """B10: recovery on, 2 nodes + a spare; node 1's entrypoint killed, the spare takes its place; node 1 started
    again (its restart policy) with NODEWEAVE_STALL_TIMEOUT=900. It was let in "left out ... may take a place in
    a later one", and the next regather refused the whole job for it (exit 3 on every node). Now node 0 judges it
    when it comes back: turned away alone (exit 3), naming the setting and node 0's value; the job trains on."""
    nodes = start(tmp_path, RUN, spares=1)
    wait_for_step(nodes[0], 8)
    nodes[1].proc.send_signal(signal.SIGKILL)
    assert nodes[1].wait(30) == -9
    until = time.monotonic() + 120
    while time.monotonic() < until and "recovery: starting generation 1" not in nodes[0].text():
        time.sleep(0.2)
    argv, env, cwd = nodes[1].how
    back = _spawn(argv, dict(env, NODEWEAVE_STALL_WARN="60", NODEWEAVE_STALL_TIMEOUT="900"), cwd)
    try:
        assert back.wait(90) == 3, back.text()
    finally:
        finish([back], 5)
    said = back.text()
    assert "stall_timeout 900 (node 0: " in said and "Traceback" not in said, said
    assert "turned away" in nodes[0].text() and "stall_timeout 900 (node 0: " in nodes[0].text(), nodes[0].text()
    codes = finish([nodes[0], nodes[2]])
    assert codes == [0, 0], (nodes[0].text(), nodes[2].text())
    assert "is back, left out" not in nodes[0].text(), nodes[0].text()
    book = json.loads(next(tmp_path.glob("n0/**/recovery.json")).read_text())
    assert book["members"] == [0, 2], book


def _tree(pid):
    """``pid`` and every process under it (its launcher, the ranks, a warm-start process), read from /proc."""
    import os

    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return found


@pytest.mark.parametrize("freeze_s", [15, 35])
def test_15_16_node_0_frozen_past_the_heartbeat_recovery_goes_on_with_every_node(tmp_path, freeze_s):
    """B15 (a 35 s freeze), B16 (15 s: a swap storm, a live migration, a long GC): node 0's entrypoint, launcher
    and rank stopped (SIGSTOP) past the 10 s heartbeat, then continued. The others declared node 0 lost and waited
    to check in with it again; node 0 thawed, called them lost, ended the job "(every node exits 8)" and exited 8
    while node 1 and the spare waited wait_timeout for it. Now node 0 sees it was the one silent: the generation
    ends as node 0's own fault, the others check in again with the same node 0 process, the spare takes node 0's
    training slot, and every node finishes the job (exit 0)."""
    import os

    nodes = start(tmp_path, RUN, spares=1)
    wait_for_step(nodes[0], 8)
    frozen = _tree(nodes[0].proc.pid)
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(freeze_s)
    for pid in frozen:
        os.kill(pid, signal.SIGCONT)
    codes = finish(nodes, 240)
    said = [node.text() for node in nodes]
    assert codes == [0, 0, 0], said
    assert "node 0 itself was silent for" in said[0] and "every node exits 8" not in said[0], said[0]
    book = json.loads(next(tmp_path.glob("n0/**/recovery.json")).read_text())
    assert [(h["node"], h["cause"]) for h in book["history"]] == [(0, "lost")], book["history"]
    assert sorted(book["members"]) == [1, 2], book
