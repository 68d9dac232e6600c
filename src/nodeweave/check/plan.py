"""The check as a plan's phase: ``nodeweave check`` is one, ``run --check`` and ``up --check`` put one first.

Why here: the worker's argv comes from the check's own options (``driver.CheckRequest``), and
the cluster room stands below this one; the phase is data (``nodeweave.plan``), which
``--dry-run`` prints and the real check runs (``run_check_phase``).
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Mapping

from nodeweave.check.driver import CheckOptions, CheckRequest
from nodeweave.cluster.base import Node
from nodeweave.plan import RUN_ID, CheckPhase, Plan
from nodeweave.cluster.runplan import launch_commands


def check_phase(nodes: List[Node], options: CheckOptions, env: Mapping[str, str], parent: Path,
                job: str) -> CheckPhase:
    """Every node's worker through its entrypoint, into ``<parent>/<UTC time>-<job>-check/``."""
    request = CheckRequest(run_id=RUN_ID, command=options.worker_command(), flags=options.entrypoint_flags(len(nodes)),
                           env=dict(env))
    # the flag is a percent, the worker's own --threshold a fraction: the plan says both, so the worker line's
    # 0.25 is not read as what `check --threshold` takes (walk7 A7)
    threshold = f"threshold {options.threshold * 100:g}%, the worker's --threshold {options.threshold:g} as a fraction"
    return CheckPhase(f"check {len(nodes)} node(s) and every link ({threshold})",
                      nodes=launch_commands(nodes, request), folder=f"{parent}/<UTC time>-{job}-check/",
                      options=options, env=tuple(dict(env).items()))


def check_plan(where: str, nodes: List[Node], options: CheckOptions, env: Mapping[str, str], parent: Path,
               job: str) -> Plan:
    return Plan("check", where, (check_phase(nodes, options, env, parent, job),))
