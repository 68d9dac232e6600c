"""One run, recorded: the run folder, the runner, then each node's report and profiler files.

After every node's exec client has ended, one more exec per node
(``--node report RUN_ID``) brings back the plan its entrypoint made for the
run, the variables it exported, and the sync stamp of its workspace (digest
and commit of what ``nodeweave sync`` wrote there); with ``--profile`` the
profiler's folder comes back as a tar stream over the same channel.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from rich.console import Console

from nodeweave.cluster.base import Node
from nodeweave.cluster.runfolder import SCHEMA, RunFolder, git_state, iso
from nodeweave.cluster.runner import NodeRun, Runner, RunRequest
from nodeweave.hidden import hide
from nodeweave.steps import fan_out


@dataclass
class JobContext:
    """What a run records about where it ran."""

    job: str
    spec_text: str  # the spec the run was started from: the run folder's spec.yaml
    workspace: Path
    target: str
    recovery: bool = False  # recovery.enabled: node 0 decides the outcome, a node's failure stops no one here
    hidden: Optional[object] = None  # the values of hidden -e variables (nodeweave.hidden.Hidden): never recorded
    made_from: Optional[str] = None  # the spec up made the held nodes from, where they miss a field of spec_text


def _node_report(node: Node, run_id: str) -> dict:
    try:
        out = subprocess.run(node.entrypoint_argv(["--node", "report", run_id]), capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as err:
        return {"error": f"no report: {err}"}


def exported(plan: Optional[dict]) -> Dict[str, str]:
    """The variables the node's entrypoint set or exported for the launcher."""
    return {v["name"]: v["value"] for v in (plan or {}).get("env", []) if v.get("action") in ("set", "export")}


def _safe_extract(stream, dest: Path) -> List[str]:
    """Regular files and folders only, never outside ``dest`` (the stream comes from a node)."""
    names = []
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            rel = Path(member.name)
            if rel.is_absolute() or ".." in rel.parts or not (member.isfile() or member.isdir()):
                continue
            target = dest / rel
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.extractfile(member) as src, open(target, "wb") as out:
                out.write(src.read())
            names.append(rel.as_posix())
    return names


def collect_profile(node: Node, directory: str, dest: Path) -> List[str]:
    """The node's profiler folder, as a tar stream over its exec channel, unpacked into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(node.argv(["tar", "-C", directory, "-cf", "-", "."]), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        return [n for n in _safe_extract(proc.stdout, dest) if n != "README"]
    except tarfile.TarError:
        return []
    finally:
        proc.wait(timeout=120)


def _node_record(run: NodeRun, report: dict, folder: RunFolder, profile_files: List[str]) -> dict:
    plan = report.get("plan")
    if plan:
        folder.write_json(f"{run.node.name}.plan.json", plan)
    stamp = report.get("stamp") or None
    return {
        "node": run.node.name, "index": run.node.index, "reached_as": run.node.remote.label,
        "argv": [hide(word) for word in run.argv],  # as planned: a hidden -e value as $NAME or *** (walk8 A31)
        "exit_code": run.code, "started_s": round(run.started, 3), "ended_s": run.ended and round(run.ended, 3),
        "first_output_s": run.first_output and round(run.first_output, 3), "log": f"{run.node.name}.log",
        "plan": f"{run.node.name}.plan.json" if plan else None, "exported": exported(plan),
        "sync": {k: stamp.get(k) for k in ("digest", "commit", "branch", "dirty", "files", "time")} if stamp else None,
        "stop": run.stop_report, "exec_client_killed": run.killed_here, "profile": profile_files,
        "report_error": report.get("error"),
    }


# what each ended generation keeps in run.json; the checkpoint it resumed from only where node 0 recorded one
_HISTORY = ("generation", "node", "cause", "why", "recover_s")
_RESUMED = ("resume_from", "resumed_step", "work_lost_s")


def recovery_summary(book: dict) -> dict:
    """What run.json keeps of node 0's recovery record (recovery.json beside it holds all of it): the
    generations, the checkpoint each restart resumed from, and the folders the checkpoint finder could not
    judge (``checkpoint_unjudged``: never handed out), which `nodeweave runs show` prints."""
    summary = {"generations": book.get("generation", 0) + 1, "restarts": book.get("restarts", 0),
               "decision": book.get("decision"), "members": book.get("members"), "spares": book.get("spares"),
               "left_out": book.get("left_out"), "history": [
                   dict({k: h.get(k) for k in _HISTORY}, **{k: h[k] for k in _RESUMED if k in h})
                   for h in book.get("history") or []]}
    if book.get("checkpoint_unjudged"):
        summary["checkpoint_unjudged"] = list(book["checkpoint_unjudged"])
    return summary


def keep_after_stop(folder: RunFolder, files) -> None:
    """A node's ``launcher-after-stop-node-N.log`` (its launcher's output once it was stopped, which its stop line
    names by its path on the node) copied into the run folder here under the same name, so it is read after
    ``down`` too (walk12c C3: the file named was inside the container, gone at ``down``). Only names of that form."""
    import re

    from nodeweave.cluster.runfolder import KEPT_NAME

    for name, text in (files or {}).items() if isinstance(files, dict) else ():
        if isinstance(name, str) and isinstance(text, str) and re.fullmatch(KEPT_NAME, name):
            try:
                (folder.path / name).write_text(text)
            except OSError:
                pass


def stopped_summary(runner: Runner, folder: RunFolder, wait_s: Optional[float] = None) -> Optional[str]:
    """The run's outcome when `nodeweave stop` ended it (its mark in the run folder, which the stop leaves once the
    nodes reported, so it is waited for a moment when a node ended by a signal): the nodes stopped, and with
    ``stop --node N`` the others ended because of it, never "node-1 failed first" for a stop the user asked for
    (walk12c C3). None: not stopped so."""
    from nodeweave.cluster.runner import noted
    from nodeweave.cluster.stop import STOP_EXITS, STOP_MARK_WAIT_S, stopped_by, stopped_nodes

    if runner.interrupted or runner.exit_code == 0 or not any(r.code in STOP_EXITS for r in runner.runs):
        return None
    deadline = time.monotonic() + (STOP_MARK_WAIT_S if wait_s is None else wait_s)
    while (stop := stopped_by(folder.path)) is None:
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.25)
    at = str(stop.get("at", "?"))[11:19]
    names = stopped_nodes(stop, {"nodes": [{"node": r.node.name} for r in runner.runs]})
    if not names:
        return f"stopped by nodeweave stop at {at} UTC: {noted(runner.runs)}"
    stopped = [r for r in runner.runs if r.node.name in names]
    others = [r for r in runner.runs if r.node.name not in names]
    return (f"{noted(stopped)}: stopped by nodeweave stop --node at {at} UTC; the others ended because of it: "
            f"{noted(others)}")


def record(folder: RunFolder, runner: Optional[Runner], request: RunRequest, context: JobContext,
           nodes: List[Node]) -> dict:
    """run.json: written when the run starts (no runner yet) and again, complete, when it ends."""
    data = {"schema": SCHEMA, "run_id": request.run_id, "job": context.job, "command": request.command,
            "env": {name: hide(value) for name, value in request.env.items()}, "profile": request.profile, "target": context.target,
            "workspace": git_state(context.workspace), "started": iso(runner.started_at if runner else time.time()),
            "ended": None, "nodes": [{"node": n.name, "reached_as": n.remote.label} for n in nodes]}
    if runner is not None:
        reports = fan_out(lambda r: _node_report(r.node, request.run_id), runner.runs)
        profiles = fan_out(lambda pair: collect_profile(pair[0].node, pair[1]["profile_dir"],
                                                        folder.path / "profile" / pair[0].node.name)
                           if request.profile and pair[1].get("profile_dir") else [], zip(runner.runs, reports))
        data.update(ended=iso(time.time()), seconds=round(time.monotonic() - runner.t0, 3),
                    exit_code=runner.exit_code, summary=stopped_summary(runner, folder) or runner.summary(),
                    nodes=[_node_record(r, rep, folder, prof) for r, rep, prof in zip(runner.runs, reports, profiles)])
        recovery = next((rep["recovery"] for rep in reports if rep.get("recovery")), None)  # node 0's book first
        if recovery:
            folder.write_json("recovery.json", recovery)
            data["recovery"] = recovery_summary(recovery)
        timeline = next((rep["goodput"] for rep in reports if rep.get("goodput")), None)  # node 0's alone
        if timeline:
            folder.write_json("goodput.json", timeline)  # `nodeweave runs show` accounts it (docs/observability.md)
        heat = next((rep["heat"] for rep in reports if rep.get("heat")), None)  # node 0's alone
        if heat:
            folder.write_json("heat.json", heat)  # `nodeweave dashboard --run` draws its heat map
        for rep in reports:  # the launcher's output after a stop, named by the node's stop line (walk12c C3)
            keep_after_stop(folder, rep.get("after_stop"))
        stalls = next((rep["stalls"] for rep in reports if rep.get("stalls")), None)  # every node keeps the same
        if stalls:
            (folder.path / "stalls.txt").write_text(stalls)
        commits = {n["sync"]["commit"] for n in data["nodes"] if n["sync"]}
        data["sync_agrees_with_workspace"] = (None if not commits else commits == {data["workspace"]["commit"]})
    folder.write_json("run.json", data)
    return data


def run_job(nodes: List[Node], request: RunRequest, argv: List[List[str]], folder: RunFolder, context: JobContext,
            console: Console, quiet: bool = False) -> dict:
    """Run ``request`` on ``nodes`` into ``folder``, spawning the planned ``argv`` (``Phase.launches``); the final
    run.json data."""
    record(folder, None, request, context, nodes)
    runner_class = Runner
    if nodes and nodes[0].group is not None:  # one launch for every node: a Slurm step
        from nodeweave.cluster.backends.slurm.step import StepRunner as runner_class
    runner = runner_class(nodes, request, argv, folder, console, quiet=quiet, hidden=context.hidden)
    runner.kept_here = folder.path  # the node paths of the files its record copies here, shown as the copies' (A1)
    runner.run()
    return record(folder, runner, request, context, nodes)
