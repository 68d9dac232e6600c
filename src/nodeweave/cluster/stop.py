"""Stopping the current run on nodes: each node's entrypoint ends its own processes, then what is left.

Why here and not in the command line: ``stop`` and ``down`` (bare hosts) both end runs, and the
work is the cluster's: one ``nodeweave-entrypoint --node stop`` per node at once (SIGTERM, SIGKILL
after the grace, a JSON report back), then the backend's leftovers (a Slurm run step) when every
node was asked. The verbs print the reports.
"""

from __future__ import annotations

import json
import subprocess
from typing import List


def stop_argv(nodes, grace: float) -> List[List[str]]:
    """The local argv that stops the run on each node (what a dry run prints)."""
    return [n.entrypoint_argv(["--node", "stop", "--grace", f"{grace:g}"]) for n in nodes]


def stop_runs(phase, out) -> List[dict]:
    """A plan's stop phase: every node's argv at once, then its leftover steps; each node's report
    (``stopped``, ``left``, or ``error``), in node order."""
    from nodeweave.steps import fan_out

    grace = phase.timeout or 0.0

    def stop(line):
        done = subprocess.run(list(line), capture_output=True, text=True, timeout=grace + 60,
                              stdin=subprocess.DEVNULL)
        try:
            return json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1], "left": None}

    reports = fan_out(stop, [n.argv for n in phase.nodes])
    for step in phase.steps:  # a Slurm run step the entrypoints' stop did not end (planned when every node is asked)
        out.print(f"{step.what}: {step.text()}", highlight=False, markup=False)
        subprocess.run(list(step.argv), capture_output=True, timeout=step.timeout)
    return reports


def report_line(report: dict) -> str:
    stopped = report.get("stopped") or []
    return report.get("error") or (", ".join(
        f"{s['run_id']}: {s['processes']} process(es) stopped" + (" (SIGKILL after the grace)" if s["killed"] else "")
        for s in stopped) or "no run")
