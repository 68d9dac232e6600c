"""What a target IS, pinned: the five it implements, the optional reads, and each backend's own public methods.

Issue 41 item 5 asks for a narrow backend interface (plan up, plan down, nodes, one state enum, logs). What only
combines those (require_up, live_nodes, down_line, refuse_foreign, made, ...) lives in
``nodeweave.cluster.onbackend``; a target-specific part a verb needs rides on the data it plans (the allocation on
its ``AllocatePhase``, a Slurm step's leftovers on the nodes' launch group). A public method added to a backend
fails here: put it in onbackend, make it private, or say here why the interface grows.
"""

from __future__ import annotations

import inspect

import pytest

from nodeweave.cluster.backends.hosts import HostsCluster
from nodeweave.cluster.backends.kube import KubeCluster
from nodeweave.cluster.backends.local import LocalCluster
from nodeweave.cluster.backends.slurm import SlurmCluster
from nodeweave.cluster.base import Backend, Node, NodeState, PlatformState
from nodeweave.cluster.options import ClusterOptions
from nodeweave.remote import make_target
from nodeweave.spec import parse_spec

SPEC = "name: lab\nimage: {variant: cpu}\nnodes: 2\nlauncher: {script: t.py}\n"
FIVE = {"nodes", "states", "plan_up", "plan_down", "logs"}  # what the issue names, and all a target must give
OPTIONAL_READS = {"marks", "nothing_up_line", "reach_problem", "check_folders", "check_tools", "sync_targets",
                  # walk5: what a target's nodes mount from here (sync's W36), whether nothing is recorded (W55),
                  # the command that grows it (W44): each asks nothing by default
                  "host_mounts", "recorded_nothing", "grow_hint",
                  # replay5 N2: the user's files up and down apply, judged before any tool (exit 2); none by default
                  "judge_tree",
                  # walk7 A35: a local image this machine's store lacks, judged before `up` starts anything
                  "image_problem",
                  # walk12c C12: node 0's published /metrics URL; C7: whether the nodes up run as `up` would start them
                  "metrics_url", "up_unchanged",
                  # walk14 A14: how many nodes the cluster up here was made with, against the spec's count
                  "made_count",
                  # walk18a A13: the nodes up made where the spec now asks for fewer (the verbs reach every one)
                  "made_nodes",
                  # walk15 A17: whether what the nodes were made from is no longer what the spec renders
                  "made_stale"}
OWN = {  # each backend's public methods, overrides included (before issue 41's item 5: 11, 8, 14, 15; base 24)
    LocalCluster: {"nodes", "states", "marks", "nothing_up_line", "check_folders", "check_tools", "sync_targets",
                   "host_mounts", "reach_problem", "image_problem",  # walk7 A3: the engine answers; A35: the image
                   "metrics_url", "up_unchanged", "made_count", "made_stale",  # walk12c C12, C7; walk14 A14, 15 A17
                   "made_nodes"},  # walk18a A13
    HostsCluster: {"nodes", "states", "logs", "marks", "plan_down", "sync_targets", "grow_hint",
                   "nothing_up_line"},  # walk11 A17: bare hosts none of which holds the job's mark
    KubeCluster: {"nodes", "states", "marks", "nothing_up_line", "reach_problem", "sync_targets", "grow_hint",
                  "judge_tree"},
    SlurmCluster: {"nodes", "states", "marks", "nothing_up_line", "check_folders", "check_tools", "sync_targets",
                   "recorded_nothing", "grow_hint"},
}


def public_methods(cls) -> set:
    """The public functions a class itself defines (a property is data: ``where``)."""
    return {name for name, value in vars(cls).items() if not name.startswith("_") and inspect.isfunction(value)}


def test_the_base_is_the_five_and_the_optional_reads_and_nothing_else():
    assert public_methods(Backend) == FIVE | OPTIONAL_READS


def test_a_target_must_implement_only_nodes_and_states_and_the_parts_of_its_plans():
    assert Backend.__abstractmethods__ == {"nodes", "states"}
    with pytest.raises(TypeError, match="abstract"):
        Backend(parse_spec(SPEC, "j.yaml"), None, ClusterOptions())


@pytest.mark.parametrize("cls", list(OWN), ids=lambda cls: cls.__name__)
def test_each_backend_defines_no_public_method_beyond_the_interface(cls):
    assert public_methods(cls) == OWN[cls]
    assert public_methods(cls) <= FIVE | OPTIONAL_READS


def test_where_and_tool_are_data_a_target_declares():
    for cls in OWN:
        assert not inspect.isfunction(vars(cls).get("where")) and not inspect.isfunction(vars(cls).get("tool"))


class Lab(Backend):
    """A new target, written against the interface only: two nodes in the local engine, no platform view but the
    one it is given, each up and down one step."""

    target = "lab"
    tool = "true"

    def __init__(self, spec, spec_path, options, seen):
        super().__init__(spec, spec_path, options)
        self.seen = seen

    def nodes(self, for_up=False, dry_run=False):
        return [Node(i, make_target("podman", f"lab-{i}")) for i in range(2)]

    def states(self, nodes):
        return {n.index: self.seen[n.index] for n in nodes if n.index in self.seen}

    def _up_steps(self, mode, image):
        from nodeweave.steps import Step

        return [[Step("start the lab", ("true", mode))]]

    def _down_steps(self, delete_claims):
        from nodeweave.steps import Step

        return [[Step("stop the lab", ("true",))]]


def test_a_new_target_gets_every_verbs_refusal_and_record_from_the_five(tmp_path):
    """The generic verbs (onbackend) work for a target that implements only the interface."""
    from nodeweave.cluster import onbackend
    from nodeweave.errors import EnvironmentProblem

    spec_path = tmp_path / "nodeweave.yaml"
    spec_path.write_text(SPEC)
    spec = parse_spec(SPEC, str(spec_path))
    seen = {0: PlatformState(NodeState.RUNNING, "running"), 1: PlatformState(NodeState.ENDED, "exited (1)")}
    lab = Lab(spec, spec_path, ClusterOptions(), seen)
    nodes = lab.nodes()
    assert onbackend.not_up(lab, nodes) == {1: "exited (1)"}
    with pytest.raises(EnvironmentProblem, match=r"lab is not up on lab: node-1 \(exited \(1\)\); nothing to stop; "
                                                 r"`nodeweave up` starts it"):
        onbackend.require_up(lab, nodes, "stop")
    assert onbackend.live_nodes(lab, "exec") == nodes
    assert onbackend.made(lab)["target"] == "lab" and onbackend.made(lab)["where"] == "lab"
    onbackend.refuse_foreign(lab)  # no marks read: nothing to refuse
    assert onbackend.leftover_steps(nodes) == []
    up = lab.plan_up("hold", None, 10, wait=True)
    assert [p.kind for p in up.phases] == ["commands", "wait"] and up.where == "lab"
    assert [p.kind for p in lab.plan_down(False).phases] == ["commands"]
    assert lab.logs(nodes[0], follow=False) == ["podman", "logs", "lab-0"]
