"""A backend's nodes and steps as plan phases: below both the backends (``base.plan_up``/``plan_down``) and the
verbs' plans (``verbs``), so neither imports the other."""

from __future__ import annotations

from typing import List, Sequence

from nodeweave.plan import CommandsPhase, NodeCommand, Phase

SPARE_ROLE = "a spare: waits for a left-out node's place"  # every plan that lists nodes names a spare so (walk6, W2)


def node_commands(nodes: Sequence, argv: Sequence[Sequence[str]]) -> tuple:
    """Each node's command line, named by the node and where it runs."""
    return tuple(NodeCommand(n.name, n.remote.label, tuple(a), SPARE_ROLE if n.spare else "")
                 for n, a in zip(nodes, argv))


def step_phases(phases) -> List[Phase]:
    """A backend's phases of steps (each phase's steps at once) as plan phases."""
    return [CommandsPhase("; ".join(s.what for s in steps), steps=tuple(steps)) for steps in phases if steps]
