"""Find and load run folders: ``runs/<UTC time>-<job>/`` (run.json) and ``<...>-sweep/`` (sweep.json)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from nodeweave.entrypoint import bounded
from nodeweave.errors import UsageError


@dataclass
class RunEntry:
    """One run folder or one sweep folder, as ``runs ls`` lists it."""

    path: Path
    kind: str  # "run" | "sweep"
    data: dict = field(default_factory=dict)
    points: List["RunEntry"] = field(default_factory=list)  # a sweep's runs, in point order
    problem: str = ""  # why its record cannot be read ("" when it can): listed so, never hidden as "no runs"

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def state(self) -> str:
        if self.problem:
            return f"unreadable: {self.problem}"
        if self.kind == "sweep":
            from nodeweave.cluster.stop import stopped_by

            stopped = stopped_by(self.path)
            if stopped is not None:  # ended by the user (walk10 C22)
                return (f"stopped by nodeweave stop at {str(stopped.get('at', '?'))[11:19]} UTC after "
                        f"{len(self.points)} point(s)")
            # a point `nodeweave stop` (or `stop --node N`) ended is stopped, not failed (replay11 C22)
            halted = sum(1 for p in self.points if p.stopped is not None)
            failed = sum(1 for p in self.points if p.data.get("exit_code") not in (0, None) and p.stopped is None)
            return f"{len(self.points)} point(s)" + (f", {halted} stopped" if halted else "") + \
                (f", {failed} failed" if failed else "")
        if self.data.get("ended") is None:
            return "running (or cut off)"
        code = self.data.get("exit_code")
        if code != 0 and self.stopped is not None:  # ended by the user, not failed (walk10 C11)
            return stopped_line(self.stopped, self.data)
        summary = self.data.get("summary")
        if code != 0 and isinstance(summary, str) and summary.startswith("interrupted"):
            # ended by Ctrl-C (or SIGTERM, SIGHUP, a closed pipe) of `nodeweave run`: said as its record says it,
            # never as the script's own exit 130 (walk17a A17)
            return summary.split(": ", 1)[0] + _exits_said(self.data)  # "interrupted by CAUSE" (walk18a A2)
        return "ok" if code == 0 else f"exit {code}"

    @property
    def job(self) -> Optional[str]:
        """Its job: a run's own; a sweep's as its sweep.json keeps it, else its points' (an older sweep, walk17a A15)."""
        if self.kind == "sweep":
            return self.data.get("job") or next((p.data.get("job") for p in self.points if p.data.get("job")), None)
        return self.data.get("job")

    @property
    def stopped(self) -> Optional[dict]:
        """What `nodeweave stop` left in this run's folder (``stop.stopped_by``), or None: not stopped so."""
        from nodeweave.cluster.stop import stopped_by

        return stopped_by(self.path) if self.kind == "run" else None

    def summary(self) -> dict:
        """What ``runs ls`` shows of it, as plain data (JSON/YAML output)."""
        data = self.data
        command = data.get("command") or []
        row = {"run": self.run_id, "kind": self.kind, "job": data.get("job"), "started": data.get("started"),
               "state": self.state, "seconds": data.get("seconds"), "nodes": len(data.get("nodes") or []),
               "command": " ".join(command) if isinstance(command, list) else command, "folder": str(self.path)}
        if self.kind == "sweep":
            row.update(job=self.job, started=self.points[0].data.get("started") if self.points else None,
                       seconds=round(sum(p.data.get("seconds") or 0 for p in self.points), 3),
                       nodes=max((len(p.data.get("nodes") or []) for p in self.points), default=0),
                       metric=data.get("metric"))
        return row


def _exits_said(data: dict) -> str:
    """`` (nodes exit 143)``: the exits a run's nodes really gave, each once; "" where none is known."""
    codes = [n.get("exit_code") for n in data.get("nodes") or [] if isinstance(n, dict)]
    known = list(dict.fromkeys(c for c in codes if isinstance(c, int)))
    return "" if not known else f" (nodes exit {', '.join(map(str, known))})"


def stopped_line(stopped: dict, data: dict) -> str:
    """A stopped run's state, one outcome for every reader: ``stopped by nodeweave stop at 21:12:56 UTC (nodes
    exit 143)`` with the exits its nodes really gave, never the run's own code (walk11 A11: "(exit 1)" while both
    nodes gave 143, which read as a crash); none known: no exit said."""
    at = str(stopped.get("at", "?"))[11:19]
    codes = [n.get("exit_code") for n in data.get("nodes") or [] if isinstance(n, dict)]
    said = _exits_said(data)
    from nodeweave.cluster.stop import stopped_nodes

    names = stopped_nodes(stopped, data)
    if names:  # `stop --node N`: those nodes stopped, the others ended because of it (walk12c C3)
        def exits(pick):
            return sorted({n.get("exit_code") for n in data.get("nodes") or []
                           if isinstance(n, dict) and pick(str(n.get("node"))) and isinstance(n.get("exit_code"), int)})
        mine, theirs = exits(lambda n: n in names), exits(lambda n: n not in names)
        return (f"stopped by nodeweave stop at {at} UTC: {', '.join(names)}"
                + (f" (exit {', '.join(map(str, mine))})" if mine else "") + "; the others ended because of it"
                + (f" (exit {', '.join(map(str, theirs))})" if theirs else ""))
    return f"stopped by nodeweave stop at {at} UTC{said}"


_NUMBER = (int, float)
# The fields the listings read, and the types `nodeweave run` writes them with (None: not known yet).
_TOP_TYPES = {"job": str, "run_id": str, "started": str, "ended": str, "seconds": _NUMBER, "exit_code": int,
              "command": (list, str), "env": dict, "target": str, "metric": str, "nodes": list, "profile": str}
_NODE_TYPES = {"node": (str, int), "exit_code": int, "started_s": _NUMBER, "ended_s": _NUMBER, "log": str,
               "sync": dict}


MOVE_OUT = "move the folder out of"  # a problem that already says its remedy (a link or a pipe for a record)
# a node's own record of a run (entrypoint/running/runstate.py), nodeweave's and undamaged: never "restore it or
# move it out" (walk11b B7), but what reads it
NODE_RECORD = "this is a node's own record of a run"
NODE_RUN_SCHEMA = "nodeweave.run/1"  # runstate.RUN_SCHEMA


class Unreadable(Exception):
    """A run record that is there but cannot be read: its folder is listed with why, not left out."""


def _load(path: Path, name: str, type_problem=None) -> Optional[dict]:
    """``path/name`` as nodeweave wrote it; absent is None, and there but damaged in any way (too large, not JSON,
    a folder, fields of the wrong type) :class:`Unreadable` naming the file and why: one damaged record is one
    row of ``runs ls`` and one refusal when asked for by name, never a block on every other run. ``type_problem``:
    the record's own shape check (run.json's and sweep.json's by default)."""
    try:
        data = json.loads(bounded.read_own(path / name, bounded.RECORD_CAP, "a run record"))
    except bounded.TooLarge as err:
        raise Unreadable(f"{name} {err.strerror}") from None
    except FileNotFoundError:
        return None
    except bounded.NotOwnFile as err:  # a link, a pipe, a device: never read through
        raise Unreadable(f"{name} {err.strerror}; {MOVE_OUT} {path.parent.name}/") from None
    except OSError as err:
        raise Unreadable(f"{name} cannot be read ({err.strerror or err})") from None
    except (ValueError, RecursionError) as err:
        why = "not JSON" if isinstance(err, ValueError) else "nested too deep"
        raise Unreadable(f"{name} {why} (being written, or damaged)") from None
    if name == "run.json" and isinstance(data, dict) and data.get("schema") == NODE_RUN_SCHEMA:
        raise Unreadable(f"{name}: {NODE_RECORD} (schema {NODE_RUN_SCHEMA}, under $TMPDIR/nodeweave/runs/<id>), not a "
                         "run `nodeweave run` keeps beside the spec: `nodeweave-entrypoint --node report "
                         f"{path.name}` on that node shows it; --runs-dir takes the runs folder beside nodeweave.yaml")
    problem = (type_problem or _type_problem)(data)
    if problem:
        raise Unreadable(f"{name}: {problem}, not what `nodeweave run` writes")
    return data


# The records node 0 leaves in a run's folder beside run.json, each with the types of the fields its readers use
# (``runs show``, ``runs compare``, ``dashboard --run``): read by run.json's rule (walk6 W14: a damaged or piped
# goodput.json or heat.json was dropped, or served raw to the page, without a word). A list field's item shape
# is ``[{field: type}]`` and checked too, as every number is for being finite (walk11 A7: a column's cells a list,
# ``began`` text or a ratio NaN went past this check into the page's code as a traceback, or onto it unsaid).
_NUMBERS = (int, float)


class _PairsOf:
    """A list of [number, number] pairs (a step line's [time, step]); ``open_end``: the second may be null (a
    stall not yet over)."""

    def __init__(self, open_end: bool = False):
        self.open_end = open_end

    def problem(self, value) -> Optional[str]:
        if not isinstance(value, list):
            return "is not a list"
        for pair in value:
            if not (isinstance(pair, list) and len(pair) == 2 and _number(pair[0])
                    and (_number(pair[1]) or (self.open_end and pair[1] is None))):
                return f"holds {pair!r:.40}, not a pair of numbers"
        return None


class _RatiosOf:
    """A mapping of ``node/rank`` (``0/3``) to a number: a heat map column's cells."""

    @staticmethod
    def problem(value) -> Optional[str]:
        if not isinstance(value, dict):
            return "is not a mapping"
        for key, ratio in value.items():
            node, slash, rank = key.partition("/")
            if not (slash and node.lstrip("-").isdigit() and rank.isdigit()):
                return f"holds the key {key!r:.40}, not node/rank such as 0/3"
            if not _number(ratio):
                return f"holds {key}: {ratio!r:.40}, not a number"
        return None


def _number(value) -> bool:
    return isinstance(value, _NUMBERS) and not isinstance(value, bool) and math.isfinite(value)


_GENERATION = {"generation": int, "began": _NUMBERS, "ended": _NUMBERS, "first": _NUMBERS, "last": _NUMBERS,
               "fault": {"at": _NUMBERS, "work_lost_s": _NUMBERS, "resumed_step": int}, "resumed_step": int, "stalls": _PairsOf(open_end=True), "steps": _PairsOf()}
_COLUMN = {"began": _NUMBERS, "ended": _NUMBERS, "generation": int, "median_ms": _NUMBERS, "ranks": int,
           "ranks_seen": int, "cells": _RatiosOf(), "floor": _NUMBERS}
RUN_RECORDS = {
    "goodput.json": {"generations": [_GENERATION], "launched": _NUMBERS, "ended": _NUMBERS, "saved": _NUMBERS},
    "heat.json": {"columns": [_COLUMN], "span_s": _NUMBERS, "max_cells": int},
    "recovery.json": {"history": [{}], "generations": int, "restarts": int},
}


def _field_problem(name: str, value, kind) -> Optional[str]:
    """Why ``value`` of the field ``name`` is not of ``kind`` (a type or tuple of types, ``{fields}`` of a
    mapping, ``[{item fields}]`` of a list, or a checker with ``problem``), or None; null is always allowed (a
    field not yet known)."""
    if value is None:
        return None
    if isinstance(kind, dict):
        if not isinstance(value, dict):
            return f"field {name} is {value!r:.60}"
        for key, inner in kind.items():
            why = _field_problem(f"{name}.{key}", value.get(key), inner)
            if why:
                return why
        return None
    if hasattr(kind, "problem"):
        why = kind.problem(value)
        return f"field {name} {why}" if why else None
    if isinstance(kind, list):
        if not isinstance(value, list):
            return f"field {name} is {value!r:.60}"
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                return f"field {name} holds an item that is not a mapping"
            why = _field_problem(f"{name}[{index}]", item, kind[0])
            if why:
                return why
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        return f"field {name} is {value!r:.60}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"field {name} is {value!r}, not a finite number"
    return None


def _shape_problem(fields: dict):
    def problem(data) -> Optional[str]:
        if not isinstance(data, dict):
            return "the top level is not a mapping"
        for key, kind in fields.items():
            why = _field_problem(key, data.get(key), kind)
            if why:
                return why
        return None
    return problem


def load_record(folder: Path, name: str) -> "tuple[Optional[dict], str]":
    """(``folder/name``, "") for one of a run's records beside run.json (``RUN_RECORDS``); (None, "") when the run
    kept none; (None, why) when it is there but damaged, a link, a pipe or a folder: its readers show nothing of
    it and say why, in one line naming the file."""
    try:
        return _load(folder, name, _shape_problem(RUN_RECORDS[name])), ""
    except Unreadable as err:
        return None, str(err)


def record_problems(folder: Path) -> List[str]:
    """Why each of a run's records beside run.json cannot be read, one line each ([] when all can)."""
    return [problem for problem in (load_record(folder, name)[1] for name in RUN_RECORDS) if problem]


def _type_problem(data) -> Optional[str]:
    if not isinstance(data, dict):
        return "the top level is not a mapping"
    for key, kind in _TOP_TYPES.items():
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f"field {key} is {data[key]!r:.60}"
    for index, node in enumerate(data.get("nodes") or []):
        if not isinstance(node, dict):
            return f"nodes[{index}] is not a mapping"
        for key, kind in _NODE_TYPES.items():
            if node.get(key) is not None and not isinstance(node[key], kind):
                return f"field nodes[{index}].{key} is {node[key]!r:.60}"
    command = data.get("command")
    if isinstance(command, list) and not all(isinstance(word, str) for word in command):
        return "field command holds a word that is not text"
    return None


def load_entry(path: Path) -> Optional[RunEntry]:
    """The run or sweep in ``path``, or None when it is neither; a folder that is a symbolic link is listed with why
    and never read through (README's rule for nodeweave's own files; walk18a A16: `runs ls` listed a link to a copy
    of a run as any run, under the link's name)."""
    if path.is_symlink():
        import os

        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return RunEntry(path, "run", {}, problem=f"the folder is a symbolic link (to {target}), and nodeweave never "
                                                 f"reads a run's records through a link; {MOVE_OUT} "
                                                 f"{path.parent.name}/, or give the folder it leads to by its own "
                                                 "path")
    try:
        sweep = _load(path, "sweep.json")
    except Unreadable as err:
        sweep, problem = None, str(err)
    else:
        problem = ""
    if sweep is not None or problem or path.name.endswith("-sweep"):
        points = [e for e in (load_entry(p) for p in sorted(path.iterdir()) if p.is_dir()) if e is not None]
        return RunEntry(path, "sweep", sweep or {}, points, problem)
    try:
        run = _load(path, "run.json")
    except Unreadable as err:
        return RunEntry(path, "run", {}, problem=str(err))
    return RunEntry(path, "run", run) if run is not None else None


def list_runs(parent: Path, job: Optional[str] = None) -> List[RunEntry]:
    """Every run and sweep under ``parent``, oldest first (their names start with the UTC time)."""
    if not parent.is_dir():
        return []
    entries = [e for e in (load_entry(p) for p in sorted(parent.iterdir()) if p.is_dir()) if e is not None]
    return [e for e in entries if job is None or e.job == job]


def sweep_not_started(entry: RunEntry) -> "str | None":
    """The note for a sweep none of whose points has started (its sweep.json lists none yet): what every reader of
    run folders (``logs --run``, ``runs show``/``compare``) says instead of an empty answer (walk6 W63)."""
    if entry.kind != "sweep" or entry.points:
        return None
    return (f"{entry.path.name} is a sweep and none of its points has started yet (nothing under {entry.path}): "
            f"each point is a run of its own; `nodeweave runs show {entry.path.name}` lists them once they start")


def find_run(parent: Path, wanted: str, job: Optional[str] = None) -> RunEntry:
    """A run by id (its folder name, a sweep's point too), by path, or ``last``; a usage error names what exists,
    or why the run found cannot be read. ``job`` (the spec's name): ``last`` is that job's last run, never another
    job's newer one sharing the folder (walk6 W75); an id or a path names its run whatever its job."""
    entry = _found(parent, wanted, job)
    if entry.problem:
        starting = "a run still starting writes it within seconds, else " if "being written" in entry.problem else ""
        remedy = "" if MOVE_OUT in entry.problem or NODE_RECORD in entry.problem else \
            f"; {starting}restore it or move {entry.path} out of the runs folder"
        where = f"{entry.path}: " if entry.path.is_symlink() else f"{entry.path}/"  # the folder itself, or a record
        raise UsageError(f"run {entry.run_id} ({wanted}): {where}{entry.problem}{remedy}")
    return entry


def _warn(text: str) -> None:
    import sys

    print(f"nodeweave: warning: {text}", file=sys.stderr)


def _note(text: str) -> None:
    import sys

    print(f"nodeweave: note: {text}", file=sys.stderr)


def one_run(entry: RunEntry) -> RunEntry:
    """The run a reader of one run (``logs --run``, ``dashboard --run``) shows for ``entry``: itself, or a started
    sweep's point running now (its last one), the same for each reader (replay6 N9)."""
    return entry.points[-1] if entry.kind == "sweep" and entry.points else entry


NODE_RECORDS = ("goodput.json", "recovery.json", "heat.json", "checkin.json")  # $TMPDIR/nodeweave/jobs/<job>-<port>/


def is_job_folder(folder: Path) -> bool:
    """``folder`` is a job's folder of a node's own (``$TMPDIR/nodeweave/jobs/<job id>-<master port>``): node 0's
    goodput.json or recovery.json there, and no run.json. A job started without `nodeweave run` (sbatch, a
    StatefulSet, nodes started by hand) keeps its only record so; ``runs show`` reads it (walk18b B1)."""
    return folder.is_dir() and not (folder / "run.json").exists() and \
        any((folder / name).is_file() for name in ("goodput.json", "recovery.json"))


def _no_run_folder(folder: Path, wanted: str) -> str:
    """Why the folder ``wanted`` names is no run folder, said about that folder (walk10 B7: an existing folder was
    answered about runs/, "no runs under ... so there is no run '/abs/folder'")."""
    runs = list_runs(folder)
    if runs:
        return (f"{wanted} is a folder of {len(runs)} run(s), not one run: give one of them, e.g. "
                f"{folder / runs[-1].run_id}, or its id with --runs-dir {wanted}")
    kept = [name for name in NODE_RECORDS if (folder / name).is_file()]
    jobs = folder / "jobs"  # each job's records in a folder of its own (walk10 B8)
    held = sorted(f"jobs/{p.name}" for p in jobs.iterdir() if p.is_dir() and any((p / n).is_file()
                                                                                 for n in NODE_RECORDS)) \
        if jobs.is_dir() else []
    then = ("not a run folder (no run.json): only a run `nodeweave run` started has one, which it fills from these "
            "when the run ends; a job started without it keeps them there as they are (JSON, docs/observability.md)")
    if kept:
        return (f"{wanted} is a job's folder of a node's own ($TMPDIR/nodeweave/jobs/<job id>-<master port>: "
                f"{', '.join(kept)}), {then}; `nodeweave runs show {wanted}` shows what it holds")
    if held:
        return (f"{wanted} is a node's own folder ($TMPDIR/nodeweave: the records of {', '.join(held[-5:])}), "
                f"{then}; `nodeweave runs show {folder / held[-1]}` shows what one holds")
    return (f"{wanted} is a folder but not a run folder (no run.json, no sweep.json); accepted: a run id "
            "(`nodeweave runs ls`), a unique prefix, a run folder's path, or last")


def _no_run_path(path: Path, wanted: str) -> str:
    """Why ``wanted``, spelled as a path that is no folder, names no run, said about that path: a file (of a run:
    its folder named), something else, or nothing there (replay11 B7: `runs show /tmp/x/n0.log` was answered "no
    runs under runs/ yet, so there is no run '/tmp/x/n0.log'")."""
    import os

    accepted = "accepted: a run id (`nodeweave runs ls`), a unique prefix, a run folder's path, or last"
    if not os.path.lexists(path):
        return f"{wanted} does not exist (a path, so no run id: none holds a /); {accepted}"
    owner = load_entry(path.parent) if path.parent.is_dir() else None
    from nodeweave.entrypoint.bounded import what_is_there

    what = what_is_there(path)
    if owner is not None:
        return f"{wanted} is {what} of run {owner.run_id}, not a run folder; give the run's folder, {path.parent}"
    return f"{wanted} is {what}, not a run folder; {accepted}"


# Where a run id the runs verbs do not know may still be recorded: by the node alone, when its entrypoint was
# started by hand with --run-id (walk13 B5); said in every "no run" answer, and named when it is on this machine.
BY_HAND_RECORD = ("a `nodeweave-entrypoint --run-id ID` started by hand records its run only on its node, under that "
                "node's $TMPDIR/nodeweave/runs/ID, which `nodeweave-entrypoint --node report ID` (with that TMPDIR) "
                "reads")


def _refuse_what_else_it_names(parent: Path, wanted: str) -> None:
    """What ``wanted`` names that is no run folder, said before any "no run" answer, whatever else the runs folder
    holds (walk13 A16: with no run folder yet, a bench result there was "no runs ... yet"): a file in the runs
    folder (``X`` or ``X.json``; walk11 A12: `runs show <time>-bench.json`, the file `bench` wrote there), or a
    node's own record of that run id on this machine, ``$TMPDIR/nodeweave/runs/<id>`` (walk13 B5)."""
    import os

    from nodeweave.entrypoint.running.runstate import state_root

    record = Path(state_root(os.environ)) / "runs" / wanted
    if wanted not in ("last", "latest", ".", "..") and "/" not in wanted and record.is_dir():
        raise UsageError(f"{wanted!r} is no run folder under {parent}: {record} is a node's own record of that run id "
                         f"(an entrypoint started with --run-id {wanted}), which the runs verbs do not read; "
                         f"`nodeweave-entrypoint --node report {wanted}` prints it, and `nodeweave run` makes the run "
                         "folders they read")
    for name in (wanted, f"{wanted}.json"):
        path = parent / name
        if "/" in name or not path.is_file():
            continue
        what = "a `nodeweave bench` result (its own JSON: every number, read with `python -m json.tool`)" \
            if name.endswith("-bench.json") else "a file, not a run folder"
        raise UsageError(f"{path} is {what}, not a run: `nodeweave runs ls` lists the run folders beside it (one per "
                         "`nodeweave run`), which the runs verbs read")


def _found(parent: Path, wanted: str, job: Optional[str] = None) -> RunEntry:
    candidate = Path(wanted)
    if candidate.is_dir():
        entry = load_entry(candidate)
        if entry is not None:
            return entry
        if "/" in wanted or wanted in (".", ".."):  # spelled as a path: the answer is about that folder
            raise UsageError(_no_run_folder(candidate, wanted))
    elif "/" in wanted:  # spelled as a path (no run id holds a /): the answer is about that path (replay11 B7)
        raise UsageError(_no_run_path(candidate, wanted))
    everything = list_runs(parent)
    if not everything:
        _refuse_what_else_it_names(parent, wanted)
        raise UsageError(f"no runs under {parent} yet (`nodeweave run` makes them), so there is no run {wanted!r}"
                         f"{'' if wanted in ('last', 'latest') else f' ({BY_HAND_RECORD})'}")
    if wanted in ("last", "latest") and job is not None:
        mine = [e for e in everything if e.job in (job, None)]  # a damaged one's job is unknown: kept, warned of
        if not mine:
            newest = everything[-1]
            raise UsageError(f"no run of job {job!r} (the spec's) under {parent} yet, so there is no {wanted}: the "
                             f"newest there, {newest.run_id}, is a run of job {newest.job!r}; give its id to "
                             "read it")
        everything = mine
    if wanted in ("last", "latest"):  # the newest run with something to show; each newer one passed over is said
        readable = [i for i, e in enumerate(everything) if not e.problem]
        if not readable:
            return everything[-1]  # refused by find_run, naming its file
        # a sweep none of whose points has started shows nothing to any reader (the dashboard refused it, logs had
        # no log): last is the run before it, the same for every verb (replay6 N9); alone, it is said as such
        showable = [i for i in readable if sweep_not_started(everything[i]) is None] or readable
        for skipped in everything[showable[-1] + 1:]:
            if skipped.problem:
                remedy = "" if MOVE_OUT in skipped.problem or NODE_RECORD in skipped.problem else \
                    "; restore it or move the folder out"
                _warn(f"{wanted} passes over {skipped.path}: {skipped.problem}{remedy}")
            else:
                _note(f"{wanted} passes over {skipped.run_id}: a sweep none of whose points has started yet; "
                      f"`nodeweave runs show {skipped.run_id}` lists them once they start")
        return everything[showable[-1]]
    for entry in everything:
        if entry.run_id == wanted:
            return entry
        for point in entry.points:
            if point.run_id == wanted:
                return point
    # a sweep's point by a prefix of its own id too, as by its whole id (walk18a A19), unless its sweep matches
    matches = [e for e in everything if e.run_id.startswith(wanted)]
    matches += [p for e in everything if not e.run_id.startswith(wanted) for p in e.points
                if p.run_id.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        shown = ", ".join(e.run_id for e in matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise UsageError(f"run prefix {wanted!r} matches {len(matches)} runs under {parent} ({shown}); give more of "
                         "the id")
    known = ", ".join(e.run_id for e in everything[-5:]) or "none yet"
    _refuse_what_else_it_names(parent, wanted)
    raise UsageError(f"no run {wanted!r} under {parent}; accepted: a run id (`nodeweave runs ls`; the last few: "
                     f"{known}), a unique prefix, a run folder's path, or last ({BY_HAND_RECORD})")
