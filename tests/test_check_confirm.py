"""A link slow pass by pass is measured again alone beside a reference link before it is named."""

from __future__ import annotations

from nodeweave.check.links import cleared, link_findings, link_values, references, step_ratios, suspects
from nodeweave.check.verdict import findings


def _link(a, b, passes):
    """A link whose both directions gave ``passes`` (GB/s) pass by pass."""
    return {"pair": [a, b], "forward_gbps": list(passes), "back_gbps": list(passes), "latency_us": [60.0]}


# A healthy 4-node run recorded on the project's 2-core machine at a load average of about 7
# (/tmp/nw-check-bench-runs/n4/20261126T212115Z, docs/benchmarks.md): link 1-3 came out slow in every one
# of its three passes and was named by the pass-by-pass rule alone.
LOADED_HEALTHY = [_link(0, 1, [1.026, 0.367, 0.52]), _link(0, 2, [0.861, 0.558, 0.872]),
                  _link(1, 3, [0.402, 0.316, 0.369]), _link(2, 3, [0.345, 0.307, 0.495])]
# A 400 Mb/s token bucket on node-1's veth (tests/e2e/test_check.py, recorded the same day).
SHAPED_NODE_1 = [_link(0, 1, [0.046, 0.048, 0.048]), _link(0, 2, [0.879, 1.071, 1.037]),
                 _link(1, 3, [0.048, 0.048, 0.048]), _link(2, 3, [0.627, 1.036, 0.996])]


def _confirm(pair, reference, pair_gbps, reference_gbps):
    return {"pair": list(pair), "reference": list(reference), "pair_gbps": pair_gbps, "reference_gbps": reference_gbps}


def test_the_loaded_healthy_run_is_a_suspect_pass_by_pass():
    assert list(suspects(link_values(LOADED_HEALTHY), 0.25)) == [(1, 3)]
    assert [f.subject for f in link_findings(LOADED_HEALTHY, 0.25)] == ["node-1<->node-3"]  # no confirmation ran


def test_a_suspect_that_reaches_the_line_in_one_alone_step_is_not_named():
    noisy = _confirm((1, 3), (0, 2), [0.40, 0.81, 0.35], [0.90, 0.85, 0.88])  # one step at 95% of its reference
    assert not cleared(_confirm((1, 3), (0, 2), [0.40, 0.35, 0.30], [0.9, 0.9, 0.9]), 0.25)
    assert cleared(noisy, 0.25)
    assert link_findings(LOADED_HEALTHY, 0.25, [noisy]) == []


def test_a_link_slow_in_every_alone_step_is_still_named():
    slow = _confirm((1, 3), (0, 2), [0.40, 0.50, 0.45], [0.9, 0.8, 1.0])  # 0.44, 0.63, 0.45: below 0.75 each time
    found = link_findings(LOADED_HEALTHY, 0.25, [slow])
    assert [f.subject for f in found] == ["node-1<->node-3"]
    assert "measured alone beside a normal link, 38% below it or more in 3 of 3 steps" in found[0].text


def test_a_shaped_node_stays_named_through_its_confirmations():
    plan = references(sorted(suspects(link_values(SHAPED_NODE_1), 0.25)), [tuple(l["pair"]) for l in SHAPED_NODE_1])
    assert plan == {(0, 1): (2, 3), (1, 3): (0, 2)}  # each beside a normal link that shares no node with it
    checks = [_confirm((0, 1), (2, 3), [0.047, 0.048, 0.047], [0.9, 1.1, 0.7]),
              _confirm((1, 3), (0, 2), [0.048, 0.046, 0.048], [1.0, 0.6, 1.2])]
    doc = {"nodes": [], "links": SHAPED_NODE_1, "confirmations": checks}
    found = findings(doc, 0.25)
    assert [(f.subject, f.metric) for f in found] == [("node-1", "link_gbps")]
    assert "every link of node-1 is slow" in found[0].text and "in 6 of 6 steps" in found[0].text


def test_one_confirmed_link_of_a_node_alone_is_named_as_a_link():
    """node-1's link to node-3 cleared alone: only 0-1 is left, a link, not the node."""
    checks = [_confirm((0, 1), (2, 3), [0.047, 0.048, 0.047], [0.9, 1.1, 0.7]),
              _confirm((1, 3), (0, 2), [0.048, 0.9, 0.048], [1.0, 1.0, 1.2])]
    assert [f.subject for f in link_findings(SHAPED_NODE_1, 0.25, checks)] == ["node-0<->node-1"]


def test_references_fall_back_to_a_link_that_shares_a_node_then_to_none():
    assert references([(0, 1)], [(0, 1), (0, 2)]) == {(0, 1): (0, 2)}
    assert references([(0, 1), (0, 2)], [(0, 1), (0, 2)]) == {(0, 1): None, (0, 2): None}


def test_step_ratios_skip_steps_without_a_figure():
    assert step_ratios(_confirm((0, 1), (2, 3), [0.5, None, 0.4], [1.0, 1.0, 0.0])) == [0.5]
    assert not cleared({"pair": [0, 1]}, 0.25)  # no steps: nothing clears it


def test_the_report_says_what_was_measured_again_and_how_it_came_out():
    from types import SimpleNamespace

    from nodeweave.check.report import summary_lines

    checks = [_confirm((1, 3), (0, 2), [0.40, 0.81, 0.35], [0.90, 0.85, 0.88])]
    document = {"links": LOADED_HEALTHY, "rounds": [[[0, 1], [2, 3]], [[0, 2], [1, 3]]], "threshold": 0.25,
                "repeated": {"link_passes": 3}, "confirmations": checks}
    result = SimpleNamespace(document=document, findings=findings(document, 0.25), exit_code=0)
    lines = summary_lines(result)
    assert "measured again alone: link 1-3 beside link 0-2, step by step 44%, 95%, 40% of it (cleared)" in lines
    assert lines[-1] == "healthy: nothing named"
