"""``recovery``: nodeweave restarts the job itself, leaving out or replacing the node at fault (docs/recovery.md)."""

from __future__ import annotations

from nodeweave.entrypoint.planning.shared_rules import CHECKPOINT_DIR_ACCEPTED, RANGES
from nodeweave.spec import rules
from nodeweave.spec.fields import boolean, integer
from nodeweave.spec.model import NodeRange, Recovery
from nodeweave.spec.mounts import check_inside_workspace
from nodeweave.spec.nodes import Fields, Reader

KEYS = ("enabled", "spares", "min_nodes", "max_restarts", "no_progress_restarts", "checkpoint_dir",
        "straggler_is_fault", "warm_start")
CHECKPOINT_DIR = "a folder path, relative to workspace.path or absolute, e.g. checkpoints"


def listed_spares(r: Reader, top: Fields) -> int:
    """The spares a ``hosts`` list names after the training nodes: ``recovery.spares`` with recovery on (read
    before ``nodes``, which a hosts list sets; :func:`recovery` reads and checks the whole section after)."""
    f = r.fields(top.get("recovery"), "recovery", KEYS)
    return integer(r, f, "spares", 0, *RANGES["spares"]) if boolean(r, f, "enabled", False) else 0


def recovery(r: Reader, top: Fields, nodes: "NodeRange | None") -> "tuple[Recovery, NodeRange | None]":
    """The section, and the training nodes it makes of ``nodes``: with recovery on, ``nodes`` is a count, the
    nodes that start, and ``min_nodes`` the fewest the job goes on with (the range node 0 shrinks in). ``nodes``
    None: the count was refused; the section's own fields are read, the checks against the count are not."""
    f = r.fields(top.get("recovery"), "recovery", KEYS)
    before = r.kept
    enabled = boolean(r, f, "enabled", False)
    switch_refused = r.kept != before  # min_nodes' own mistakes are still said beside it (walk16 A10)
    folder_node = f.get("checkpoint_dir")
    folder = None if folder_node is None else r.field(lambda: _checkpoint_dir(r, folder_node), None)
    spares = integer(r, f, "spares", 0, *RANGES["spares"])
    fewest = _min_nodes(r, f, nodes) if enabled or switch_refused else None
    if enabled and nodes is not None:
        nodes = _training(r, top, f, nodes, spares, fewest)
    made = Recovery(
        enabled=enabled,
        spares=spares,
        max_restarts=integer(r, f, "max_restarts", 5, *RANGES["recovery_max_restarts"]),
        no_progress_restarts=integer(r, f, "no_progress_restarts", 3, *RANGES["no_progress_restarts"]),
        checkpoint_dir=folder,
        straggler_is_fault=boolean(r, f, "straggler_is_fault", False),
        warm_start=boolean(r, f, "warm_start", True),
    )
    if not enabled and f.get("min_nodes") is not None:  # the other fields: shared_rules.switched_off (loader.py)
        raise r.fail(f.get("min_nodes"), "recovery.min_nodes", "does nothing with recovery.enabled false (the "
                     "fewest nodes recovery goes on with)", "recovery.enabled: true, or leave recovery.min_nodes out "
                     "(an elastic job without recovery writes nodes: MIN:MAX)")
    return made, nodes


def _checkpoint_dir(r: Reader, node) -> str:
    r.refuse_number(node, "recovery.checkpoint_dir", CHECKPOINT_DIR)
    folder = r.string(node, "recovery.checkpoint_dir", CHECKPOINT_DIR)
    if not rules.single_line(folder):
        raise r.bad_value(node, "recovery.checkpoint_dir", CHECKPOINT_DIR)
    check_inside_workspace(r, node, "recovery.checkpoint_dir", folder, CHECKPOINT_DIR_ACCEPTED)
    return folder


def _min_nodes(r: Reader, f: Fields, nodes: "NodeRange | None") -> "int | None":
    """``min_nodes``, read whatever ``nodes`` is: its own mistakes (a quoted number, a word) are said in the same
    round as a refused ``nodes``; only its range needs the count (walk16 A10: "1" was told after nodes was fixed).
    None: not given, or refused (kept)."""
    node = f.get("min_nodes")
    if node is None:
        return None
    most = None if nodes is None else nodes.max
    accepted = f"an integer from 1 to {most} (nodes)" if most is not None else "an integer from 1 to nodes"
    return r.field(lambda: r.integer(node, "recovery.min_nodes", 1, most, accepted=accepted), None)


def _training(r: Reader, top: Fields, f: Fields, nodes: NodeRange, spares: int, fewest: "int | None") -> NodeRange:
    """With recovery on, every training node starts (node 0 decides who trains each generation), so ``nodes`` must
    say that count: an elastic range, which torchrun reads as "start MIN, admit up to MAX", is refused rather
    than silently starting MAX. ``min_nodes`` keeps the elastic floor: the job goes on with as few."""
    if nodes.elastic:  # kept, not raised: min_nodes' own refusal is said in the same round
        extra = f" + {spares} spare(s)" if spares else ""
        r.keep(r.fail(top.get("nodes"), "nodes", f"the elastic range {nodes} under recovery would start all "
                      f"{nodes.max} nodes{extra}, not {nodes.min} as torchrun starts it: recovery starts every "
                      "training node and shrinks the job as nodes are lost", f"the nodes to start as a count, and "
                      f"the fewest to go on with as recovery.min_nodes: nodes: {nodes.max} with recovery.min_nodes: "
                      f"{nodes.min} (starts {nodes.max}), or nodes: {nodes.min} (starts {nodes.min})"))
        return nodes
    return nodes if fewest is None else NodeRange(fewest, nodes.max)
