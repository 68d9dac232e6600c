"""Compose files from the spec: one per real host (host network) and one local simulation.

``render_files(spec)`` returns ``compose/node.yaml``, ``compose/.env.example``
and ``compose/local.yaml``; pure and byte-stable, like every renderer.
"""

from __future__ import annotations

from typing import Dict

from nodeweave.compose.local import render_local
from nodeweave.compose.node import render_env_example, render_node
from nodeweave.spec import Spec


def render_files(spec: Spec) -> Dict[str, str]:
    return {
        "compose/.env.example": render_env_example(spec),
        "compose/local.yaml": render_local(spec),
        "compose/node.yaml": render_node(spec),
    }


__all__ = ["render_files"]
