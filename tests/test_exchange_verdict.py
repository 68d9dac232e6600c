"""Node 0's verdict on the nodes' fingerprints: each rule, the allow list, the table, and one verdict for all."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from nodeweave.entrypoint.checkin.verdict import ALLOWABLE, Entry, checks, judge, render_table


def fp(rank, **changes):
    base = {
        "version": 1, "rank": rank, "hostname": f"trainer-{rank}", "nnodes": "3", "job": "trainer",
        "launcher": "torchrun", "master_port": 29500, "address": f"10.0.0.{10 + rank}",
        "route_address": f"10.0.0.{10 + rank}", "address_source": "eth0 (GLOO_SOCKET_IFNAME=eth0 (set))",
        "hostname_address": f"10.0.0.{10 + rank}", "gpu_vendor": "nvidia", "gpu_model": "NVIDIA H100 80GB HBM3",
        "gpu_count": 8, "gpu_arch": None, "gpu_driver": "550.90.07", "nproc": 8, "nccl": "2.21.5", "rccl": None,
        "torch": "2.13.0", "launcher_version": "2.13.0", "image_ref": None, "image_variant": "cuda12",
        "image_digest": "0123456789abcdef", "workspace_commit": "a" * 40, "workspace_digest": None,
        "env_hash": "e0", "env": {"NCCL_SOCKET_IFNAME": "=eth0"}, "interface": "eth0", "mtu": 9000,
        "speed_mbps": 100000, "shm_bytes": 64 << 30, "memlock_bytes": None, "cpus": 64,
    }
    base.update(changes)
    return base


def entries(*workers, own=None):
    """Node 0 plus workers; each worker is seen from its route address and answers the connect-back."""
    out = [Entry(own or fp(0), seen="10.0.0.10", own=True)]
    for worker in workers:
        out.append(Entry(worker, seen=worker["route_address"], probe="ok"))
    return out


def verdict_of(*workers, allow=(), nnodes=3, launcher="torchrun", own=None):
    return judge(entries(*workers, own=own), nnodes, nnodes, launcher, allow)


def checks_named(verdict):
    return {(p["check"], p["severity"]) for p in verdict["problems"]}


def test_nodes_that_agree_start_with_the_real_world_size():
    verdict = verdict_of(fp(1), fp(2, nproc=4))
    assert verdict["decision"] == "start" and verdict["problems"] == []
    assert verdict["procs"] == [8, 8, 4] and verdict["world_size"] == 20
    assert render_table(verdict) == []


def test_another_nccl_minor_refuses_and_names_the_node_and_field():
    verdict = verdict_of(fp(1), fp(2, nccl="2.26.2"))
    assert verdict["decision"] == "refuse"
    assert checks_named(verdict) == {("nccl", "refuse")}
    table = render_table(verdict)
    assert table[0].split() == ["node", "nccl"]
    assert "2.26.2 *" in table[3] and "trainer-2" in table[3]
    assert any("refuse nccl" in line and "node 2 (trainer-2)" in line and "NODEWEAVE_EXCHANGE_ALLOW=nccl" in line
               for line in table)


def test_a_patch_release_only_warns():
    verdict = verdict_of(fp(1), fp(2, nccl="2.21.6"))
    assert verdict["decision"] == "start" and checks_named(verdict) == {("versions", "warn")}


def test_allow_turns_a_named_refusal_into_a_warning():
    verdict = verdict_of(fp(1), fp(2, workspace_commit="b" * 40), allow=("workspace",))
    assert verdict["decision"] == "start"
    assert checks_named(verdict) == {("workspace", "warn")}
    assert any("allowed by NODEWEAVE_EXCHANGE_ALLOW" in line for line in render_table(verdict))


def test_structural_refusals_cannot_be_allowed():
    verdict = verdict_of(fp(1), fp(1, hostname="trainer-2"), allow=tuple(ALLOWABLE) + ("rank",))
    assert verdict["decision"] == "refuse"
    assert ("rank", "refuse") in checks_named(verdict)
    dup = next(p for p in verdict["problems"] if p["check"] == "rank")
    assert dup["nodes"] == ["node 1 (trainer-1)", "node 1 (trainer-2)"]


def test_a_missing_node_is_named_with_what_is_known_about_it():
    verdict = judge(entries(fp(1)), 3, 3, "torchrun", (), {2: "pod trainer-2 is Pending: Unschedulable"})
    assert verdict["decision"] == "refuse"
    missing = verdict["problems"][0]
    assert missing["check"] == "missing" and missing["nodes"] == ["node 2 (pod trainer-2 is Pending: Unschedulable)"]


def test_advertised_loopback_and_nat_are_refused_and_explained():
    loop = fp(1, address="127.0.0.1", address_source="lo (GLOO_SOCKET_IFNAME=lo (set))")
    natted = fp(2, route_address="172.17.0.2")
    verdict = judge([Entry(fp(0), seen="10.0.0.10", own=True), Entry(loop, seen="10.0.0.11", probe="ok"),
                     Entry(natted, seen="10.0.0.12", probe="ok")], 3, 3, "torchrun")
    address = next(p for p in verdict["problems"] if p["check"] == "address")
    assert address["severity"] == "refuse"
    assert "advertises loopback 127.0.0.1" in address["details"]["node 1 (trainer-1)"]
    assert "NAT or a bridge" in address["details"]["node 2 (trainer-2)"]


def test_every_node_on_one_machine_may_use_loopback():
    workers = [fp(r, address="127.0.0.1", route_address="127.0.0.1") for r in (1, 2)]
    own = fp(0, address="127.0.0.1", route_address="127.0.0.1")
    verdict = judge([Entry(own, seen="127.0.0.1", own=True)] + [Entry(w, seen="127.0.0.1", probe="ok") for w in workers],
                    3, 3, "torchrun")
    assert verdict["decision"] == "start", verdict["problems"]


def test_a_failed_connect_back_is_refused_with_the_reason():
    verdict = judge([Entry(fp(0), seen="10.0.0.10", own=True), Entry(fp(1), seen="10.0.0.11", probe="ok"),
                     Entry(fp(2), seen="10.0.0.12", probe="connecting to 10.0.0.12:41000 timed out after 3s")],
                    3, 3, "torchrun")
    problem = verdict["problems"][0]
    assert problem["check"] == "connect-back" and "timed out" in problem["details"]["node 2 (trainer-2)"]
    assert "firewall" in problem["says"]


def test_what_works_but_costs_only_warns():
    verdict = verdict_of(fp(1, gpu_model="NVIDIA H100 PCIe", mtu=1500), fp(2, shm_bytes=64 << 20))
    assert verdict["decision"] == "start"
    assert checks_named(verdict) == {("gpu-model", "warn"), ("interface", "warn"), ("shm", "warn")}


def test_accelerate_refuses_uneven_process_counts():
    assert verdict_of(fp(1), fp(2, nproc=4), launcher="accelerate")["decision"] == "refuse"
    assert verdict_of(fp(1), fp(2, nproc=4), launcher="deepspeed")["decision"] == "start"


# --- one verdict whatever the order of arrival -----------------------------------

VALUES = {
    "rank": [1, 2, 2, 3],
    "nccl": ["2.21.5", "2.21.6", "2.26.2", None],
    "torch": ["2.13.0", "2.13.1", "2.12.0"],
    "gpu_vendor": ["nvidia", "amd"],
    "gpu_model": ["NVIDIA H100 80GB HBM3", "NVIDIA H200"],
    "workspace_commit": ["a" * 40, "b" * 40, None],
    "image_digest": ["0123456789abcdef", "fedcba9876543210"],
    "shm_bytes": [64 << 20, 64 << 30],
    "mtu": [1500, 9000],
    "nproc": [8, 4],
    "nnodes": ["3", "4"],
    "address": ["10.0.0.11", "127.0.0.1"],
}
worker = st.fixed_dictionaries({key: st.sampled_from(values) for key, values in VALUES.items()}).map(
    lambda changes: (fp(changes.pop("rank"), **changes)))
arrival = st.tuples(worker, st.sampled_from(["ok", "connecting to x timed out after 3s"]),
                    st.sampled_from(["10.0.0.11", "10.0.0.99"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(arrival, min_size=0, max_size=5), st.randoms(use_true_random=False),
       st.lists(st.sampled_from(ALLOWABLE + ("rank", "nodes")), max_size=3))
def test_any_set_of_fingerprints_gives_one_verdict_whatever_the_order(arrivals, rnd, allow):
    own = Entry(fp(0), seen="10.0.0.10", own=True)
    made = [Entry(w, seen=seen, probe=probe) for w, probe, seen in arrivals]
    first = judge([own] + made, 3, 3, "torchrun", allow)
    shuffled = list(made)
    rnd.shuffle(shuffled)
    again = judge(shuffled + [own], 3, 3, "torchrun", list(reversed(allow)))
    assert again == first
    refusals = [p for p in first["problems"] if p["severity"] == "refuse"]
    assert (first["decision"] == "refuse") == bool(refusals)
    for problem in first["problems"]:
        assert problem["allowed"] == (problem["check"] in allow and problem["check"] in ALLOWABLE)
    table = render_table(first)
    assert render_table(again) == table  # every node prints the same lines, whatever the arrival order
    if not first["problems"]:
        assert table == []
        return
    assert table[0].split()[0] == "node" and len(table[0].split()) == len(first["fields"]) + 1
    for problem in first["problems"]:  # each problem has its line: severity, check, what it says, the nodes
        line = f"  {problem['severity']:<6} {problem['check']}: {problem['says']}: {', '.join(problem['nodes'])}"
        assert any(row.startswith(line) for row in table), (line, table)


def test_duplicate_labels_stay_apart():
    twins = [fp(1), fp(1)]
    made = [Entry(twins[0], seen="10.0.0.11", probe="ok"), Entry(twins[1], seen="10.0.0.21", probe="ok")]
    random.Random(3).shuffle(made)
    verdict = judge([Entry(fp(0), seen="10.0.0.10", own=True)] + made, 2, 2, "torchrun")
    nodes = next(p for p in verdict["problems"] if p["check"] == "rank")["nodes"]
    assert nodes == ["node 1 (trainer-1@10.0.0.11)", "node 1 (trainer-1@10.0.0.21)"]


# -- what the mutation check (benchmarks/mutation_check.py) showed untested -----------------------------------


def test_the_table_every_node_prints_line_by_line():
    own = Entry(fp(0), seen="10.0.0.10", own=True)
    long = Entry(fp(1, hostname="twin", image_digest="d" * 30, env={"NCCL_SOCKET_IFNAME": "=eth1"}, env_hash="e1"),
                 seen="10.0.0.11", probe="ok")
    silent = Entry(fp(2, hostname="twin", address=None, route_address=None), seen="10.0.0.12", probe=None)
    verdict = judge([own, long, silent], 3, 3, "torchrun", ["image"])
    assert verdict["fields"] == ["image_digest", "address", "seen", "connect-back", "env"]
    assert [(r["node"], r["flagged"]) for r in verdict["rows"]] == [
        ("node 0 (trainer-0)", False), ("node 1 (twin)", True), ("node 2 (twin)", True)]
    assert render_table(verdict)[:6] == [
        "  node                image_digest                address      seen         connect-back  env",
        "  node 0 (trainer-0)  0123456789abcdef            10.0.0.10    10.0.0.10    (node 0)      "
        "NCCL_SOCKET_IFNAME==eth0",
        "  node 1 (twin)       ddddddddddddddddddddddd… *  10.0.0.11 *  10.0.0.11 *  ok *          "
        "NCCL_SOCKET_IFNAME==eth1 *",
        "  node 2 (twin)       0123456789abcdef            - *          10.0.0.12 *  not tried *   "
        "NCCL_SOCKET_IFNAME==eth0",
        "  (* differs from node 0)",
        "  warn   image: the installed distributions differ (another image): node 1 (twin) "
        "(allowed by NODEWEAVE_EXCHANGE_ALLOW)",
    ]


def test_a_value_of_exactly_the_cell_width_is_shown_whole():
    verdict = verdict_of(fp(1, image_digest="e" * 24), fp(2, image_digest="f" * 25))
    row1, row2 = render_table(verdict)[2:4]
    assert "e" * 24 + " *" in row1 and "f" * 23 + "… *" in row2


def test_nodes_with_one_name_are_told_apart_by_address_then_by_count():
    own = Entry(fp(0), seen="10.0.0.10", own=True)
    same = [Entry(fp(1), seen="10.0.0.11", probe="ok"), Entry(fp(1), seen="10.0.0.11", probe="ok"),
            Entry(fp(1), seen="10.0.0.21", probe="ok")]
    verdict = judge([own] + same, 2, 2, "torchrun")
    assert [r["node"] for r in verdict["rows"]] == [
        "node 0 (trainer-0)", "node 1 (trainer-1@10.0.0.11)", "node 1 (trainer-1@10.0.0.11 #2)",
        "node 1 (trainer-1@10.0.0.21)"]


def test_shm_of_exactly_one_gib_is_enough():
    assert checks_named(verdict_of(fp(1, shm_bytes=1 << 30), fp(2))) == set()
    assert checks_named(verdict_of(fp(1, shm_bytes=(1 << 30) - 1), fp(2))) == {("shm", "warn")}


def test_a_launcher_version_alone_is_a_version_warning():
    assert checks_named(verdict_of(fp(1, launcher_version="2.13.1"), fp(2))) == {("versions", "warn")}


def test_a_rank_that_is_no_number_is_out_of_range_and_the_range_is_named():
    verdict = verdict_of(fp(1), dict(fp(2), rank=None, hostname="trainer-x"))
    (problem,) = [p for p in verdict["problems"] if p["says"].startswith("node rank outside")]
    assert problem["says"] == "node rank outside 0..2" and problem["nodes"] == ["node None (trainer-x)"]
    line = next(row for row in render_table(verdict) if "node rank outside" in row)
    assert "starts anyway" not in line  # rank is not a check NODEWEAVE_EXCHANGE_ALLOW can let through


def test_a_hostname_on_loopback_matters_only_when_node_0_reaches_the_node_elsewhere():
    far = verdict_of(fp(1, hostname_address="127.0.1.1"), fp(2))
    assert checks_named(far) == {("hostname", "warn")}
    local = [Entry(fp(0, address="127.0.0.1", route_address="127.0.0.1"), seen="127.0.0.1", own=True),
             Entry(fp(1, address="127.0.0.1", route_address="127.0.0.1", hostname_address="127.0.1.1"),
                   seen="127.0.0.1", probe="ok")]
    assert checks_named(judge(local, 2, 2, "torchrun")) == set()


def test_without_node_0s_eyes_the_reachability_rules_are_left_out():
    assert {"address", "connect-back"} <= {c.name for c in checks(3, "torchrun")}
    assert not {"address", "connect-back"} & {c.name for c in checks(3, "torchrun", reachability=False)}
    made = [Entry(fp(0), seen="10.0.0.10", own=True), Entry(fp(1, nccl="2.26.2"), seen="10.0.0.99", probe=None)]
    verdict = judge(made, 2, 2, "torchrun", reachability=False)
    assert checks_named(verdict) == {("nccl", "refuse")}


def test_env_shows_the_differing_variables_or_else_the_hash():
    by_name = verdict_of(fp(1, env={"NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_HCA": "mlx5_0"}, env_hash="e1"), fp(2))
    assert [row["values"]["env"] for row in by_name["rows"]] == ["NCCL_IB_HCA=-", "NCCL_IB_HCA=mlx5_0",
                                                                 "NCCL_IB_HCA=-"]
    by_hash = verdict_of(fp(1, env=None, env_hash="e1"), fp(2))
    assert [row["values"]["env"] for row in by_hash["rows"]] == ["NCCL_SOCKET_IFNAME==eth0", "NCCL_SOCKET_IFNAME=-",
                                                                 "NCCL_SOCKET_IFNAME==eth0"]
    only_hash = verdict_of(fp(1, env_hash="e1"), fp(2))
    assert [row["values"]["env"] for row in only_hash["rows"]] == ["hash e0", "hash e1", "hash e0"]


def test_two_nodes_that_differ_get_the_legend():
    own = Entry(fp(0), seen="10.0.0.10", own=True)
    table = render_table(judge([own, Entry(fp(1, nccl="2.26.2"), seen="10.0.0.11", probe="ok")], 2, 2, "torchrun"))
    assert table[3] == "  (* differs from node 0)"


def test_unreachable_names_the_nodes_node_0_cannot_reach_with_why_and_keeps_to_the_allow_list():
    """Recovery's regather leaves these out (``recovery/hub.py``) rather than refusing the job: one line each saying
    why; a rule the user allowed (NODEWEAVE_EXCHANGE_ALLOW) names none; another rule's finding (a torch differing)
    is no reason to leave a node out here."""
    from nodeweave.entrypoint.checkin.verdict import unreachable

    found = entries(fp(1), fp(2, torch="2.12.0"), fp(3))
    found[1].probe = "connecting to 10.0.0.11:40000 failed: Connection refused"
    found[3] = Entry(fp(3, address="127.0.0.1"), seen="10.0.0.13", probe="ok")
    named = {entry.fp["rank"]: why for entry, why in unreachable(found)}
    assert named == {
        1: "node 0 could not connect back to a port the node opened: connecting to 10.0.0.11:40000 failed: "
           "Connection refused",
        3: "the address the node advertises is not where node 0 reaches it: advertises loopback 127.0.0.1 "
           "(eth0 (GLOO_SOCKET_IFNAME=eth0 (set))) but node 0 sees it from 10.0.0.13"}
    assert [e.fp["rank"] for e, _ in unreachable(found, allow=("connect-back",))] == [3]
    assert unreachable(found, allow=("connect-back", "address")) == []
