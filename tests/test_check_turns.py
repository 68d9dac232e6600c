"""Pairs that would share a machine's link take turns (``rounds.turns``): a shared NIC is not a slow node."""

from __future__ import annotations

from hypothesis import given, strategies as st

from nodeweave.check.rounds import machines, pair_rounds, schedule, turns


def test_nodes_on_their_own_machines_keep_each_round_in_one_turn():
    where = machines(["a", "b", "c", "d"], ["", "", "", ""])
    assert schedule(4, where) == [[[(0, 1), (2, 3)]], [[(0, 2), (1, 3)]]]


def test_nodes_all_on_one_machine_share_it_alike_and_keep_whole_rounds():
    where = machines(["boot"] * 4, [""] * 4)  # four containers on one host: one boot id
    assert schedule(4, where) == [[[(0, 1), (2, 3)]], [[(0, 2), (1, 3)]]]
    assert turns([(0, 1), (2, 3)], where) == [[(0, 1)], [(2, 3)]]  # what turns alone would do
    simulated = machines(["boot"] * 4, ["h0", "h1", "h2", "h3"])  # own NCCL_HOSTID, one kernel
    assert schedule(4, simulated) == [[[(0, 1), (2, 3)]], [[(0, 2), (1, 3)]]]


def test_pods_on_one_node_beside_pods_elsewhere_take_turns():
    # nodes 0 and 1 on machine A, 2..7 on machines of their own: (0,4) and (1,5) would share A's NIC
    where = machines(["A", "A", "c", "d", "e", "f", "g", "h"], [""] * 8)
    plan = schedule(8, where)
    assert plan[0] == [[(0, 1), (2, 3), (4, 5), (6, 7)]]
    assert plan[2] == [[(0, 4), (2, 6), (3, 7)], [(1, 5)]]


def test_two_machines_of_two_nodes_split_only_the_rounds_that_cross_them_twice():
    where = machines(["A", "A", "B", "B"], [""] * 4)
    # round 0: (0,1) stays on A, (2,3) on B: at once; round 1: (0,2) and (1,3) both cross A<->B: in turns
    assert schedule(4, where) == [[[(0, 1), (2, 3)]], [[(0, 2)], [(1, 3)]]]


def test_one_nccl_hostid_is_one_host_whatever_the_boot_ids_say():
    where = machines(["a", "b", "c", "d"], ["h1", "h1", "", ""])
    assert turns([(0, 2), (1, 3)], where) == [[(0, 2)], [(1, 3)]]
    assert turns([(0, 1), (2, 3)], where) == [[(0, 1), (2, 3)]]


def test_an_unknown_boot_id_is_a_machine_of_its_own():
    assert machines(["", None, "x"], []) == [frozenset({"rank:0"}), frozenset({"rank:1"}), frozenset({"boot:x"})]


@given(st.integers(min_value=2, max_value=24).flatmap(
    lambda n: st.lists(st.integers(min_value=0, max_value=5), min_size=n, max_size=n)))
def test_turns_cover_each_round_and_never_share_a_machine(hosts):
    where = machines([f"m{h}" for h in hosts], [""] * len(hosts))
    for round_, split in zip(pair_rounds(len(hosts)), schedule(len(hosts), where)):
        assert sorted(p for turn in split for p in turn) == sorted(round_)
        for turn in split if len(set(hosts)) > 1 else []:
            touched = [key for a, b in turn for key in where[a] | where[b]]
            per_pair = [len(where[a] | where[b]) for a, b in turn]
            assert len(touched) == sum(per_pair) and len(set(touched)) == len(touched), (turn, hosts)
    if len(set(hosts)) in (1, len(hosts)):  # one machine for all, or one each: no round is split
        assert all(len(split) == 1 for split in schedule(len(hosts), where))


def test_four_h100s_on_one_machine_took_turns_and_the_report_says_so():
    """The document of a real run: 4 simulated nodes (own GPU, own NCCL_HOSTID) on one 4x H100 machine,
    taken when nodes all on one machine still took turns (now they keep whole rounds: ``schedule``)."""
    import json
    from pathlib import Path

    from nodeweave.check.driver import CheckResult
    from nodeweave.check.report import plain_text
    from nodeweave.check.verdict import findings

    doc = json.loads((Path(__file__).parent / "fixtures/check/h100x4-one-machine-turns.json").read_text())
    where = [frozenset(keys) for keys in doc["machines"]]
    assert len({key for keys in where for key in keys if key.startswith("boot:")}) == 1
    assert doc["turns"] == [[[list(p) for p in turn] for turn in turns(r, where)] for r in pair_rounds(4)]
    assert schedule(4, where) == [[r] for r in pair_rounds(4)]
    result = CheckResult(Path("runs/x"), {"exit_code": 0}, doc, findings(doc, doc["threshold"]))
    text = plain_text(result)
    assert result.exit_code == 0 and "healthy: nothing named" in text
    assert "4 link(s) in 2 round(s) in 4 turns (pairs that share a machine take turns) x 3 pass(es)" in text
    assert "Xid: kernel log read on node-0, node-1, node-2, node-3 (/dev/kmsg)" in text
    assert "DCGM: dcgmi is not installed on node-0, node-1, node-2, node-3: no dcgmi diag -r 1 there" in text
