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


STOPPED_MARK = "stopped.json"  # in a run folder: `nodeweave stop` ended this run (walk10 C11)


def mark_stopped(runs_dir, reports, grace: float) -> None:
    """Leave in each stopped run's folder beside the spec (``runs/<id>/``, where it is there) that ``nodeweave stop``
    ended it, and when: the run's record then reads as stopped, not as a failure naming node 0 (walk10 C11: `runs
    ls` said `exit 1` and node 1 blamed node 0 for a run the user ended). A folder elsewhere (``--runs-dir``) or
    one that cannot be written is left as it is: the stop itself is done."""
    import time
    from pathlib import Path

    for report in reports:
        for stopped in report.get("stopped") or ():
            folder = Path(runs_dir) / str(stopped.get("run_id") or "")
            if not stopped.get("run_id") or not (folder / "run.json").is_file() or (folder / STOPPED_MARK).exists():
                continue
            try:
                (folder / STOPPED_MARK).write_text(json.dumps({
                    "by": "nodeweave stop", "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "grace": grace}) + "\n")
            except OSError:
                pass


def stopped_by(folder) -> "dict | None":
    """What :func:`mark_stopped` left in a run folder, or None."""
    from pathlib import Path

    mark = Path(folder) / STOPPED_MARK
    if not mark.is_file() or mark.is_symlink():
        return None
    from nodeweave.entrypoint import bounded

    try:
        found = json.loads(bounded.read_text(mark, 4096, "a stop mark"))
    except (OSError, ValueError):  # unreadable, too long, not text or not JSON (bounded.NotText is a ValueError): no mark
        return None
    return found if isinstance(found, dict) else None


def report_line(report: dict) -> str:
    stopped = report.get("stopped") or []
    return report.get("error") or (", ".join(
        f"{s['run_id']}: {s['processes']} process(es) stopped" + (" (SIGKILL after the grace)" if s["killed"] else "")
        for s in stopped) or "no run")
