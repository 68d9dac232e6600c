"""The check's pure parts: the pair rounds, the verdict against the peers' median, slow links and nodes."""

from __future__ import annotations


import pytest
from hypothesis import given, strategies as st

from nodeweave.check.links import link_findings
from nodeweave.check.rounds import pair_rounds, partner, round_count
from nodeweave.check.peers import pass_ratios, to_repeat
from nodeweave.check.verdict import findings, node_findings


@pytest.mark.parametrize("nodes, rounds", [(1, 0), (2, 2), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4), (16, 4), (64, 6)])
def test_round_count_is_ceil_log2(nodes, rounds):
    assert round_count(nodes) == rounds == len(pair_rounds(nodes))


@given(st.integers(min_value=2, max_value=70))
def test_every_round_is_disjoint_pairs_and_every_node_has_a_partner(nodes):
    rounds = pair_rounds(nodes)
    met = {n: set() for n in range(nodes)}
    for round_ in rounds:
        members = [n for pair in round_ for n in pair]
        assert len(members) == len(set(members)), round_
        for a, b in round_:
            assert 0 <= a < b < nodes
            met[a].add(b)
            met[b].add(a)
    assert all(met.values()), met
    if nodes & (nodes - 1) == 0 and nodes > 2:  # a power of two: a full hypercube, log2 N partners each
        assert all(len(partners) == round_count(nodes) for partners in met.values())


def test_two_nodes_get_their_one_link_twice():
    assert pair_rounds(2) == [[(0, 1)], [(0, 1)]]


def test_four_nodes_are_the_hypercube():
    assert pair_rounds(4) == [[(0, 1), (2, 3)], [(0, 2), (1, 3)]]
    assert partner([(0, 2), (1, 3)], 3) == 1 and partner([(0, 1)], 2) is None


def test_repeat_what_is_below_or_close_to_the_line_only():
    series = {0: [100.0], 1: [98.0], 2: [86.0], 3: [70.0], 4: [103.0]}
    # line at 75% of the others' median in the pass (~99); close: below 90%
    assert to_repeat(series, 0.25) == [2, 3]


def test_load_that_comes_and_goes_cancels_pass_by_pass():
    # every node slowed alike in pass 1 (a burst elsewhere): the ratios stay near 1
    series = {0: [100.0, 10.0, 95.0], 1: [97.0, 11.0, 99.0], 2: [103.0, 9.0, 101.0], 3: [25.0, 3.0, 24.0]}
    ratios = pass_ratios(series)
    assert all(0.85 < ratios[n] < 1.15 for n in (0, 1, 2)), ratios
    assert ratios[3] < 0.3, ratios


def _node(index, **facts):
    samples = facts.pop("samples", {})
    return {"node": index, "facts": {"cpus_effective": 2, "shm_bytes": 1 << 30, **facts}, "samples": samples}


def test_a_node_below_its_peers_is_named_with_figure_and_cause():
    nodes = [_node(0), _node(1), _node(2, cpus_effective=0.5), _node(3)]
    found = node_findings(nodes, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-2", "cpus_effective")]
    assert "usable CPUs 0.5 vs 2 on its peers (75% below)" in found[0].text and "cgroup quota" in found[0].text


def test_shm_names_only_the_small_one_and_measured_figures_go_pass_by_pass():
    nodes = [_node(0, samples={"cpu_gflops": [3.0, 40.0, 2.0]}), _node(1, samples={"cpu_gflops": [3.1, 38.0, 2.2]}),
             _node(2, samples={"cpu_gflops": [2.9, 41.0, 1.9]}),
             _node(3, shm_bytes=1 << 20, samples={"cpu_gflops": [3.2, 39.0, 2.0]})]
    found = node_findings(nodes, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-3", "shm_bytes")]
    assert "/dev/shm 1 MiB vs 1 GiB on its peers" in found[0].text


def test_a_slow_cpu_is_named_with_its_passes_and_best_figures():
    nodes = [_node(i, samples={"cpu_gflops": [v, v * 0.5, v * 1.1]}) for i, v in enumerate((100.0, 30.0, 95.0, 105.0))]
    found = node_findings(nodes, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-1", "cpu_gflops")]
    assert found[0].text.startswith("CPU matmul speed 70% below its peers (median of 3 interleaved passes; best 33 "
                                    "GFLOP/CPU-s vs 110 GFLOP/CPU-s): slower CPUs"), found[0].text


def test_within_the_threshold_nothing_is_named():
    nodes = [_node(i, samples={"cpu_gflops": [v]}) for i, v in enumerate((100.0, 80.0, 95.0, 105.0))]
    assert node_findings(nodes, 0.25) == []
    assert [f.subject for f in node_findings(nodes, 0.15)] == ["node-1"]


def _link(a, b, forward, back):
    return {"pair": [a, b], "forward_gbps": forward, "back_gbps": back, "latency_us": [60.0]}


def test_every_link_of_one_node_slow_names_the_node_and_the_direction():
    links = [_link(0, 1, [1.1], [1.0]), _link(2, 3, [0.05, 0.05, 0.06], [1.2]), _link(0, 2, [1.0], [1.1]),
             _link(1, 3, [0.05, 0.04, 0.05], [1.0])]
    found = link_findings(links, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-3", "link_gbps")]
    assert "every link of node-3 is slow, traffic into it: 55 MB/s vs 1 GB/s on the other links (95% below them, pass by pass)" in found[0].text


def test_one_slow_link_between_healthy_nodes_names_the_link():
    links = [_link(0, 1, [1.1], [1.0]), _link(2, 3, [1.0], [1.2]), _link(0, 2, [0.2], [0.3]),
             _link(1, 3, [1.0], [1.0])]
    found = link_findings(links, 0.25)
    assert [(f.subject, f.pair) for f in found] == [("node-0<->node-2", (0, 2))]


def test_a_document_with_faults_on_three_nodes_names_each_once():
    doc = {"nodes": [_node(0), _node(1), _node(2, cpus_effective=0.5), _node(3, shm_bytes=1 << 20)],
           "links": [_link(0, 1, [1.1], [0.04]), _link(2, 3, [1.0], [1.2]), _link(0, 2, [1.0], [1.1]),
                     _link(1, 3, [0.05], [1.0])]}
    found = findings(doc, 0.25)
    assert sorted((f.subject, f.metric) for f in found) == [
        ("node-1", "link_gbps"), ("node-2", "cpus_effective"), ("node-3", "shm_bytes")]


def test_gpu_counters_and_mtu_are_named_absolutely():
    gpu = {"index": 1, "name": "NVIDIA H100 80GB HBM3", "ecc_uncorrected_volatile": 2, "remap_pending": True,
           "throttle": {"hw_slowdown": False, "hw_thermal_slowdown": True}, "sm_clock_mhz": 900,
           "sm_clock_max_mhz": 1980}
    doc = {"nodes": [_node(0, mtu=9000), _node(1, mtu=9000), {**_node(2, mtu=1500), "gpus": [gpu]}], "links": []}
    found = [(f.subject, f.metric) for f in findings(doc, 0.25)]
    assert found == [("node-2", "gpu_ecc"), ("node-2", "gpu_row_remap"), ("node-2", "gpu_throttle"),
                     ("node-2", "mtu")]


def test_a_gpu_far_below_its_datasheet_is_named_even_when_all_match():
    nodes = [_node(i, gpu_model="NVIDIA H100 80GB HBM3", gpu_count=8,
                   samples={"gpu_tflops": [300.0], "gpu_mem_gbps": [2900.0]}) for i in range(2)]
    found = findings({"nodes": nodes, "links": []}, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-0", "gpu_tflops_datasheet"),
                                                     ("node-1", "gpu_tflops_datasheet")]
    assert "30% of the NVIDIA H100 80GB HBM3 datasheet's 989 TFLOP/s" in found[0].text


def test_a_node_that_reached_its_peers_in_some_pass_is_not_named():
    # slowed in most passes by load that came and went, but its best equals the others': no limit caps it
    nodes = [_node(0, samples={"cpu_gflops": [160.0, 20.0, 30.0, 150.0]}),
             _node(1, samples={"cpu_gflops": [2.0, 9.0, 3.0, 161.0]}),
             _node(2, samples={"cpu_gflops": [150.0, 30.0, 25.0, 149.0]}),
             _node(3, samples={"cpu_gflops": [155.0, 25.0, 28.0, 152.0]})]
    assert pass_ratios({n["node"]: n["samples"]["cpu_gflops"] for n in nodes})[1] < 0.75
    assert node_findings(nodes, 0.25) == []
