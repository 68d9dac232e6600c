"""One run's shape given on the command line: processes per node, node count, launcher.

The shape reaches each node as the contract's own variables in front of its
entrypoint (``NODEWEAVE_NPROC_PER_NODE``, ``NODEWEAVE_LAUNCHER``), so the node
plans exactly as it would from a spec that said so, and refuses what its
machine contradicts (more processes than usable GPUs). The node count goes as
the entrypoint's ``--nnodes`` flag (``RunRequest.nnodes``): a Slurm step's or a
StatefulSet's count would contradict a variable alone (exit 3), and the flag
overrides each of them. The same count also goes as NODEWEAVE_NNODES in front
(``RunRequest.variables``), replacing the container's up-time one, so the node
warns of no override nodeweave itself made. What the cluster itself contradicts
(more nodes than it has) is refused here.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from nodeweave.errors import UsageError
from nodeweave.spec.model import LAUNCHERS


def process_count(text: str, flag: str) -> str:
    """``text`` of a processes-per-node flag (``run --nproc-per-node``, ``bench --nproc``), judged as the spec's
    ``gpus_per_node`` and every node's entrypoint judge it: ``auto``, or 1 to ``NPROC_MAX`` in plain ASCII digits
    (``contract.plain_int``). Refused here, before any node or launch is planned (walk13 A25, A24: 100000 was
    planned into every node, and ``٢``, which Python's ``isdigit`` takes, was handed to nodes that refuse it)."""
    from nodeweave.entrypoint.planning.contract import NPROC_MAX, plain_int

    if text == "auto" or (plain_int(text) and 1 <= int(text) <= NPROC_MAX):
        return text
    past = " (more than nodeweave plans for one node)" if plain_int(text) and int(text) > NPROC_MAX else ""
    raise UsageError(f"{flag} {text!r}{past} is not accepted: processes per node, a whole number from 1 to "
                     f"{NPROC_MAX} in plain decimal digits (e.g. 8; the spec's gpus_per_node range), or auto (one "
                     "per usable GPU)")


def run_overrides(cluster: Sequence, nproc: Optional[str] = None, nodes: Optional[int] = None,
                  launcher: Optional[str] = None, grow: str = "scale the cluster first") -> Tuple[List, Dict[str, str]]:
    """(the first ``nodes`` of the cluster, which this run uses, the variables every node's entrypoint gets in
    front); the count itself is the caller's ``--nnodes``; ``grow``: how this target's cluster gets more nodes
    (``Backend.grow_hint``)."""
    env: Dict[str, str] = {}
    if nproc is not None:
        env["NODEWEAVE_NPROC_PER_NODE"] = process_count(nproc, "--nproc-per-node")
    if launcher is not None:
        if launcher not in LAUNCHERS:
            raise UsageError(f"--launcher {launcher!r} is not accepted: {', '.join(LAUNCHERS)}")
        env["NODEWEAVE_LAUNCHER"] = launcher
    chosen = list(cluster)
    if nodes is not None:
        if nodes < 1:  # no cluster grows to 0 nodes: the count itself is the slip (walk8 A7)
            raise UsageError(f"--nodes {nodes} is not accepted: a count of nodes, 1 to {len(chosen)} (the first N of "
                             "this cluster run, node 0 the master)")
        if nodes > len(chosen):
            raise UsageError(f"--nodes {nodes} is not accepted: this cluster has {len(chosen)} node(s); give 1 to "
                             f"{len(chosen)} (the first N run, node 0 the master), or {grow}")
        chosen = chosen[:nodes]
    return chosen, env
