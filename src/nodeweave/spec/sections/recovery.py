"""``recovery``: nodeweave restarts the job itself, leaving out or replacing the node at fault (docs/recovery.md)."""

from __future__ import annotations

from nodeweave.spec import rules
from nodeweave.spec.fields import boolean, integer
from nodeweave.spec.model import NodeRange, Recovery
from nodeweave.spec.nodes import Fields, Reader

KEYS = ("enabled", "spares", "max_restarts", "no_progress_restarts", "checkpoint_dir", "straggler_is_fault",
        "warm_start")
CHECKPOINT_DIR = "a folder path, relative to workspace.path or absolute, e.g. checkpoints"


def listed_spares(r: Reader, top: Fields) -> int:
    """The spares a ``hosts`` list names after the training nodes: ``recovery.spares`` with recovery on (read
    before ``nodes``, which a hosts list sets; :func:`recovery` reads and checks the whole section after)."""
    f = r.fields(top.get("recovery"), "recovery", KEYS)
    return integer(r, f, "spares", 0, 0, 1024) if boolean(r, f, "enabled", False) else 0


def recovery(r: Reader, top: Fields, nodes: NodeRange) -> Recovery:
    """(The entrypoint refuses recovery without the check-in exchange: exit 2 on every node.)"""
    f = r.fields(top.get("recovery"), "recovery", KEYS)
    enabled = boolean(r, f, "enabled", False)
    folder_node = f.get("checkpoint_dir")
    folder = None
    if folder_node is not None:
        folder = r.string(folder_node, "recovery.checkpoint_dir", CHECKPOINT_DIR)
        if not rules.single_line(folder):
            raise r.bad_value(folder_node, "recovery.checkpoint_dir", CHECKPOINT_DIR)
    if enabled and nodes.max < 2 and not f.get("spares"):
        raise r.fail(f.get("enabled"), "recovery.enabled", "true on a one-node job without spares: there is no "
                     "other node to watch it or take its place", "nodes of 2 or more, or recovery.spares >= 1")
    return Recovery(
        enabled=enabled,
        spares=integer(r, f, "spares", 0, 0, 1024),
        max_restarts=integer(r, f, "max_restarts", 5, 1, 100000),
        no_progress_restarts=integer(r, f, "no_progress_restarts", 3, 0, 100000),
        checkpoint_dir=folder,
        straggler_is_fault=boolean(r, f, "straggler_is_fault", False),
        warm_start=boolean(r, f, "warm_start", True),
    )
