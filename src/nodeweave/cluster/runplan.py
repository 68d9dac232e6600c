"""``nodeweave run``'s plan and its execution: one run, or a sweep of runs, each through every node's entrypoint.

The plan (:func:`run_plan`) holds, in order: the check (``--check``), the sweep folder (``--sweep``)
and one ``run`` phase per point, each with its variables, its folder and every node's argv
(the placeholder ``RUN_ID`` where the run's id goes). :class:`RunSession` is the run's session those phases
run with (``nodeweave.plan.RunsPoints``): it opens the run
folder, runs the point (``job.run_job``), and for a sweep reads the metric from each point's logs,
keeps ``sweep.json`` current and writes the table when the last point ended (``finish``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Dict, List, Optional

from nodeweave.cluster.base import Node
from nodeweave.cluster.job import JobContext
from nodeweave.plan import RUN_ID, NodeCommand, Phase, Plan, RunPhase, SweepPhase
from nodeweave.cluster.runner import RunRequest, launch_argv
from nodeweave.cluster.sweep import point_label, point_metric, point_words, sweep_table
from nodeweave.cluster.verbs import node_commands
from nodeweave.hidden import hide
from nodeweave.entrypoint.quoting import as_typed
from nodeweave.entrypoint.nodelists import ranges
from nodeweave.usertext import styled


@dataclass(frozen=True)
class SweepRequest:
    """What a sweep compares: the metric's regular expression (None: none) and which way is better."""

    metric: Optional[str]
    lower_is_better: bool = False


def run_plan(where: str, nodes: List[Node], command: List[str], points: List[Dict[str, str]], env: Dict[str, str],
             profile: Optional[str], grace: float, recovery: bool, parent: Path, job: str,
             sweep: Optional[SweepRequest] = None, check: Optional[Phase] = None,
             nnodes: Optional[int] = None) -> Plan:
    """One run phase per point (one point and no sweep: one run), after the check and the sweep's folder;
    ``nnodes``: run --nodes N, the entrypoint's --nnodes on every node."""
    phases = [check] if check is not None else []
    if sweep is not None:
        phases.append(SweepPhase(f"{len(points)} run(s), one per point" + (
            f", compared by {as_typed(sweep.metric)}" if sweep.metric else ""),
            folder=f"{parent}/<UTC time>-{job}-sweep/", sweep=sweep))
    for number, point in enumerate(points, start=1):
        folder = (f"{parent}/<UTC time>-{job}-sweep/<UTC time>-{job}-{number:02d}-{point_label(point, job)}/"
                  if sweep is not None else f"{parent}/<UTC time>-{job}/")
        request = RunRequest(run_id=RUN_ID, command=list(command), env={**env, **point}, profile=profile,
                             grace=grace, recovery=recovery, nnodes=nnodes)
        what = f"point {number} of {len(points)}: {point_words(point)}" if sweep is not None else "one run"
        phases.append(RunPhase(what, nodes=launch_commands(nodes, request), folder=folder, request=request,
                               point=tuple(point.items())))
    return Plan("run", where, tuple(phases))


def launch_commands(nodes: List[Node], request: RunRequest) -> tuple:
    """A run's or a check's launches as a plan records them: every node's exec, or the one launch that starts
    them all (a Slurm step)."""
    argv = launch_argv(nodes, request)
    if nodes and nodes[0].group is not None:
        return (NodeCommand("every node at once", ranges(n.remote.label for n in nodes), tuple(argv[0])),)
    return node_commands(nodes, argv)


class RunSession:
    """What a run plan's ``sweep`` and ``run`` phases run with on ``nodes`` (``Execution.runs``);
    ``results``/``rows`` say how it went."""

    def __init__(self, nodes: List[Node], parent: Path, context: JobContext, out, quiet: bool = False,
                 on_folder: Callable[[Path], None] = lambda folder: None):
        self.nodes, self.parent, self.context, self.out, self.quiet = nodes, parent, context, out, quiet
        self.on_folder = on_folder  # told the first folder this run makes (a detached run names it)
        self.sweep_folder = None
        self.sweep: Optional[SweepRequest] = None
        self.results: List[dict] = []
        self.rows: List[dict] = []
        self.stopped = False  # a point was interrupted: the later points are not started
        self.stopped_by: Optional[dict] = None  # `nodeweave stop` ended the sweep (its mark in the sweep's folder)
        self.planned = 0  # the points the plan holds, counted as their phases come (those not started too)

    def open_sweep(self, phase: SweepPhase) -> None:
        from nodeweave.cluster.runfolder import RunFolder

        self.sweep = phase.sweep
        self.sweep_folder = RunFolder.create(self.parent, self.context.job, self.context.spec_text, suffix="-sweep",
                                             made_from=self.context.made_from)
        from nodeweave.cluster.stop import mark_runner

        mark_runner(self.sweep_folder.path)  # what `nodeweave stop` finds a sweep going by (walk10 C22)
        # what was asked, from the start: `runs show`/`compare` of a sweep still walking its points (a --detach one)
        # rank them by its own --metric and --lower-is-better (walk12 C10: they asked for a --metric it was given)
        self.sweep_folder.write_json("sweep.json", self._asked())
        self.on_folder(self.sweep_folder.path)

    def _asked(self) -> dict:
        """What the sweep was asked to rank its points by, as sweep.json keeps it."""
        # the job too: `runs ls` filters by it, and a sweep is its job's as each of its runs is (walk17a A15)
        return {"job": self.context.job, "metric": self.sweep.metric,
                "lower_is_better": bool(self.sweep.lower_is_better)}

    def _stop_asked(self) -> bool:
        """Whether `nodeweave stop` ended the sweep: its mark in the sweep's folder, read before each point."""
        if self.sweep_folder is not None and self.stopped_by is None:
            from nodeweave.cluster.stop import stopped_by

            self.stopped_by = stopped_by(self.sweep_folder.path)
        if self.stopped_by is not None:
            self.stopped = True
        return self.stopped_by is not None

    def run_point(self, phase: RunPhase) -> None:
        self.planned += 1
        if self.stopped or self._stop_asked():
            return
        point = dict(phase.point)
        number = len(self.results) + 1
        suffix = f"-{number:02d}-{point_label(point, self.context.job)}" if self.sweep_folder else ""
        data = self._one(phase, suffix)
        self.results.append(data)
        self.stopped = data["exit_code"] == 130
        if self.sweep_folder is not None:
            self._stop_asked()
            self._row(point, data, phase.request.command)

    def _one(self, phase: RunPhase, suffix: str) -> dict:
        import shlex

        from nodeweave.cluster.job import run_job
        from nodeweave.cluster.runfolder import RunFolder

        parent = self.sweep_folder.path if self.sweep_folder else self.parent
        folder = RunFolder.create(parent, self.context.job, self.context.spec_text, suffix, self.context.made_from)
        if not suffix:
            self.on_folder(folder.path)
        planned: RunRequest = phase.request
        env = planned.env
        self.out.print(styled(("nodeweave:", "bold"),
                              f" run {folder.run_id} on {len(self.nodes)} node(s) ({self.context.target}): "
                              f"{shlex.join(planned.command)}" + (f" with {' '.join(f'{k}={hide(v)}' for k, v in env.items())}"
                                                                 if env else "")), highlight=False)
        data = run_job(self.nodes, replace(planned, run_id=folder.run_id), phase.launches(folder.run_id), folder,
                       self.context, self.out, quiet=self.quiet)
        recovered = (data.get("recovery") or {}).get("restarts")
        if recovered and data.get("exit_code") == 0:
            data["summary"] += f"; recovered {recovered} time(s) (runs/{folder.run_id}/recovery.json)"
        data["folder"] = str(folder.path)
        return data

    def _row(self, point: dict, data: dict, command: List[str]) -> None:
        from nodeweave.cluster.sweep import compile_metric

        pattern = compile_metric(self.sweep.metric)
        value, per_node = point_metric(pattern, Path(data["folder"]), len(self.nodes)) if pattern else (None, [])
        stopped = self.stopped_by is not None or (data["exit_code"] != 0 and _point_stopped(Path(data["folder"])))
        self.rows.append({"point": point, "exit_code": data["exit_code"], "seconds": data.get("seconds", 0.0),
                          "metric": value, "per_node": per_node, "folder": Path(data["folder"]).name,
                          **({"stopped": "by nodeweave stop"} if stopped else {})})
        self._write_sweep(command)

    def _write_sweep(self, command: List[str]) -> None:
        stopped = {"stopped": self.stopped_by} if self.stopped_by is not None else {}
        self.sweep_folder.write_json("sweep.json", {**self._asked(), "command": command, "points": self.rows,
                                                    **stopped})

    def finish_sweep(self):
        """The sweep's table, printed and kept as sweep.txt; None when the plan had no sweep."""
        if self.sweep_folder is None:
            return None
        table = sweep_table(self.rows, self.sweep.metric, self.sweep.lower_is_better)
        self.out.print(table)
        (self.sweep_folder.path / "sweep.txt").write_text(_plain(table), encoding="utf-8")
        if self.stopped_by is not None:
            left = self.planned - len(self.rows)
            self.out.print(styled(("nodeweave:", "bold"), f" {self.stopped_line(left)}"), highlight=False)
        self.out.print(styled(("nodeweave:", "bold"), f" sweep folder {self.sweep_folder.path}"), highlight=False)
        return table

    def stopped_line(self, left: int) -> str:
        """"sweep stopped by nodeweave stop at HH:MM:SS UTC: 1 point run, 1 not started"."""
        at = str((self.stopped_by or {}).get("at", "?"))[11:19]
        return (f"sweep stopped by nodeweave stop at {at} UTC: {len(self.rows)} point(s) run (the last one stopped), "
                f"{left} not started")


from nodeweave.cluster.stop import STOP_MARK_WAIT_S  # noqa: E402 - the stop's mark, waited for (fix12x: job.py too)


def _point_stopped(folder: Path, wait_s: float = STOP_MARK_WAIT_S) -> bool:
    """Whether `nodeweave stop` (every node or `--node N`) ended this point: its mark in the point's folder, which
    the stop leaves once the nodes reported, so a moment after the point's own end (replay11 C22: a point stopped
    with `stop --node 1` was recorded "exit 1", a failure)."""
    import time

    from nodeweave.cluster.stop import stopped_by

    deadline = time.monotonic() + wait_s
    while stopped_by(folder) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.25)
    return True


def _plain(table) -> str:
    from nodeweave.usertext import console as people_console

    text = people_console(width=200, record=True, file=io.StringIO(), color_system=None)
    text.print(table)
    return text.export_text()
