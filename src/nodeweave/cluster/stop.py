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

    from nodeweave import nodeprogress

    def marked(node):  # where each node's stop stood, for a Ctrl-C's line (walk12c C15)
        nodeprogress.mark(node.node, nodeprogress.PARTIAL)
        report = stop(node.argv)
        nodeprogress.mark(node.node, nodeprogress.FAILED if report.get("error") else nodeprogress.DONE)
        return report

    reports = fan_out(marked, list(phase.nodes))
    for step in phase.steps:  # a Slurm run step the entrypoints' stop did not end (planned when every node is asked)
        out.print(f"{step.what}: {step.text()}", highlight=False, markup=False)
        subprocess.run(list(step.argv), capture_output=True, timeout=step.timeout)
    return reports


STOPPED_MARK = "stopped.json"  # in a run folder: `nodeweave stop` ended this run (walk10 C11)


def mark_stopped(runs_dir, reports, grace: float, nodes=()) -> None:
    """Leave in each stopped run's folder beside the spec (``runs/<id>/``, where it is there) that ``nodeweave stop``
    ended it, and when: the run's record then reads as stopped, not as a failure naming node 0 (walk10 C11: `runs
    ls` said `exit 1` and node 1 blamed node 0 for a run the user ended). ``nodes``: the name of the node each report
    came from, kept in the mark, so a run stopped on some of its nodes (``stop --node N``) reads as those stopped and
    the others ended because of it (walk12c C3: "node-1 failed first"). A folder elsewhere (``--runs-dir``) or
    one that cannot be written is left as it is: the stop itself is done."""
    import time
    from pathlib import Path

    names = list(nodes)
    stopped_on = {}  # run id: the nodes whose report stopped it, in report order
    for at, report in enumerate(reports):
        for stopped in report.get("stopped") or ():
            run_id = str(stopped.get("run_id") or "")
            if run_id and "/" not in run_id and not run_id.startswith("."):
                stopped_on.setdefault(run_id, [])
                if at < len(names) and names[at] not in stopped_on[run_id]:
                    stopped_on[run_id].append(names[at])
    for run_id, on in stopped_on.items():
        # a plain run's folder, or a sweep point's inside its sweep's folder (left11b, walk10 C22)
        found = [f for f in (Path(runs_dir) / run_id, *Path(runs_dir).glob(f"*-sweep*/{run_id}"))
                 if (f / "run.json").is_file() and not f.is_symlink()]
        for folder in found[:1]:
            if (folder / STOPPED_MARK).exists():
                continue
            mark = {"by": "nodeweave stop", "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "grace": grace}
            if on:
                mark["nodes"] = on
            try:
                (folder / STOPPED_MARK).write_text(json.dumps(mark) + "\n")
            except OSError:
                pass


def stopped_nodes(stopped: "dict | None", data: dict) -> list:
    """The nodes ``stop --node N`` stopped in a run some of whose nodes it left (the others ended because of it):
    their names, from the stop's mark, when fewer than the run's nodes; [] for a stop of every node, or none."""
    named = (stopped or {}).get("nodes")
    every = [str(n.get("node")) for n in data.get("nodes") or [] if isinstance(n, dict)]
    if not isinstance(named, list) or not named:
        return []
    named = [str(n) for n in named]
    return named if set(every) - set(named) else []


STOP_MARK_WAIT_S = 5.0  # how long a failed point's folder is watched for the stop's mark, which `stop` leaves after
# the nodes reported (a sweep point's and a plain run's, job.stopped_summary)

# A node's exit that a stop gives (SIGTERM, SIGKILL, as a shell or Python says them): only a run one of whose nodes
# ended so waits for the stop's mark before its record is written.
STOP_EXITS = (143, 137, 247, -15, -9)


RUNNER_MARK = "runner.json"  # in a sweep's folder: the `nodeweave run` process walking its points (pid, host)


def mark_runner(sweep_folder) -> None:
    """Leave in a sweep's folder which process walks its points, so ``nodeweave stop`` finds a sweep still going
    (:func:`stop_sweeps`); a folder that cannot be written is left as it is."""
    import os
    import socket
    from pathlib import Path

    try:
        (Path(sweep_folder) / RUNNER_MARK).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
                                                      + "\n")
    except OSError:
        pass


def stop_sweeps(runs_dir, grace: float) -> "list[str]":
    """Before ``nodeweave stop`` stops the nodes: leave :data:`STOPPED_MARK` in the folder of every sweep beside
    the spec whose `nodeweave run` process still walks its points on this machine (its :data:`RUNNER_MARK` names a
    live pid here, and it wrote no table yet), which that process reads before each point: it starts no further
    point and records the sweep as stopped (walk10 C22: the sweep went on to its next point). Left before the stop,
    so the process sees it once the point in progress ends. The sweeps' names."""
    import time

    marked = []
    for folder in sweeps_going(runs_dir):
        try:
            (folder / STOPPED_MARK).write_text(json.dumps({
                "by": "nodeweave stop", "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "grace": grace})
                + "\n")
        except OSError:
            continue
        marked.append(folder.name)
    return marked


def sweeps_going(runs_dir) -> list:
    """The folders of the sweeps beside the spec whose `nodeweave run` process still walks their points on this
    machine (:data:`RUNNER_MARK` names a live pid here, no table written yet, not stopped yet)."""
    import os
    import socket
    from pathlib import Path

    from nodeweave.entrypoint import bounded

    going = []
    for folder in sorted(Path(runs_dir).glob("*-sweep*")) if Path(runs_dir).is_dir() else ():
        runner = folder / RUNNER_MARK
        if folder.is_symlink() or not runner.is_file() or runner.is_symlink() or (folder / "sweep.txt").exists() \
                or (folder / STOPPED_MARK).exists():
            continue
        try:
            data = json.loads(bounded.read_text(runner, 4096, "a sweep's runner mark"))
            pid = int(data["pid"])
            if data.get("host") != socket.gethostname() or pid <= 0:
                continue
            os.kill(pid, 0)
        except (OSError, ValueError, KeyError, TypeError):  # gone, unreadable or another machine's
            continue
        going.append(folder)
    return going


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
