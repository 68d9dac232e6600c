"""Compose files from the spec: one per real host (host network) and one local simulation.

``render_files(spec)`` returns ``compose/node.yaml``, ``compose/.env.example``,
``compose/local.yaml`` and, when the spec lists ``hosts``, ``compose/hosts``;
pure and byte-stable, like every renderer.
"""

from __future__ import annotations

from typing import Dict

from nodeweave.targets.compose.local import render_local
from nodeweave.targets.compose.node import render_env_example, render_hosts, render_node
from nodeweave.resolve import resolve
from nodeweave.spec import Spec


def render_files(spec: Spec) -> Dict[str, str]:
    r = resolve(spec)  # the one derivation of this render: every part below reads it
    files = {
        "compose/.env.example": render_env_example(r),
        "compose/local.yaml": render_local(r),
        "compose/node.yaml": render_node(r),
    }
    if spec.hosts:
        files["compose/hosts"] = render_hosts(r)
    return files


__all__ = ["render_files"]
